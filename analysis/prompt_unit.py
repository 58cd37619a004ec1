"""The prompt unit as an editable part of the design (issue 42; ``docs/compare.md``).

A *prompt* is what every model (or setting) of a benchmark answers: one combination of
the prompt unit's columns (``Design.prompt_unit``; empty means the domain and prompt
factors). Pairing (``analysis.compare``) and the prompt counts of the Data and Design
pages read it. This module checks a unit against a table and finds a unit that pairs:

- :func:`check_prompt_unit` counts the prompts a unit gives and refuses, each with its
  own message (:class:`~analysis.errors.PromptUnitError`): a column the table lacks (with
  "did you mean"), a unit that makes every row its own prompt (a row id: nothing can
  repeat under two models), a unit that does not identify prompts (a prompt or domain
  factor of the design takes several values within one of its prompts).
- :func:`pairing_unit` searches the columns for a unit under which each value of the
  compared factor answers each prompt once and the prompts recur across its values:
  the design's prompt and domain factors first, then the other columns that repeat
  across the values (a replicate index ``sample``, a template text), the fewest needed.
  A failed pairing names it ("the rows pair on template x race x gender: use it").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.columns import DEVIATION
from analysis.errors import PromptUnitError, did_you_mean

__all__ = ["UnitSummary", "check_prompt_unit", "did_you_mean", "pairing_unit", "unit_text",
           "use_unit_hint"]


def unit_text(unit: Sequence[str]) -> str:
    """``template x race x gender``: a unit as the messages write it."""
    return " x ".join(str(c) for c in unit)


def use_unit_hint(unit: Sequence[str]) -> str:
    """How to use a unit in the API, the CLI and the app (one sentence)."""
    return (f"the rows pair on {unit_text(unit)}: use it (unit={list(unit)!r} in the API, "
            f"--unit {','.join(unit)} in the CLI, 'Pair on' on the Compare page).")


@dataclass(frozen=True)
class UnitSummary:
    """What a prompt unit gives on a table.

    Attributes
    ----------
    unit
        The columns (the design's domain/prompt factors when none is declared).
    n_prompts
        Distinct combinations of the unit's values (rows with a missing value in none).
    n_rows
        Rows of the table.
    missing
        Rows with a missing value in a unit column (no prompt).
    """

    unit: tuple[str, ...]
    n_prompts: int
    n_rows: int
    missing: int

    @property
    def rows_per_prompt(self) -> float:
        """Rows with a prompt per prompt."""
        return (self.n_rows - self.missing) / max(self.n_prompts, 1)

    def describe(self) -> str:
        """``12 prompts in 240 rows (20.0 rows each)``."""
        text = (f"{self.n_prompts:,} prompts in {self.n_rows:,} rows "
                f"({self.rows_per_prompt:,.1f} rows each)")
        if self.missing:
            text += f"; {self.missing:,} rows have no value in the unit (no prompt)"
        return text


def _codes(frame: pd.DataFrame, cols: Sequence[str]) -> tuple[np.ndarray, int, np.ndarray]:
    """Integer codes of the combinations of ``cols`` (rows with a missing value: -1), their
    number, and the rows without a missing value."""
    if not cols:
        return np.zeros(len(frame), dtype=np.int64), int(len(frame) > 0), \
            np.ones(len(frame), dtype=bool)
    codes = np.zeros(len(frame), dtype=np.int64)
    ok = np.ones(len(frame), dtype=bool)
    for col in cols:
        c, uniques = pd.factorize(frame[col])
        ok &= c >= 0
        codes = codes * (len(uniques) + 1) + (c + 1)
        codes = pd.factorize(codes)[0].astype(np.int64)  # keep the codes small
    codes = np.where(ok, codes, -1)
    if ok.any():
        codes[ok] = pd.factorize(codes[ok])[0]
    return codes, int(codes.max() + 1) if ok.any() else 0, ok


def check_prompt_unit(table: pd.DataFrame, unit: Sequence[str], design=None,
                      by: str | None = None) -> UnitSummary:
    """Count the prompts of ``unit`` on ``table``; refuse a unit that cannot be one.

    Parameters
    ----------
    table
        The results table.
    unit
        Columns identifying a prompt.
    design
        The :class:`~analysis.design.Design` whose domain and prompt factors a prompt must
        fix (None: not checked).
    by
        The compared factor, if any (it is never part of the unit; named in messages).

    Returns
    -------
    UnitSummary

    Raises
    ------
    PromptUnitError
        A unit column missing (with the closest column), a unit that makes every row its
        own prompt, a unit within whose prompts a domain or prompt factor varies. Its
        ``suggested_unit`` is :func:`pairing_unit`'s answer when ``by`` is given, else
        the design's domain and prompt factors when they identify the rows better.
    """
    unit = [str(c) for c in unit]
    if not unit:
        raise PromptUnitError("Name at least one column for the prompt unit.")
    absent = [c for c in unit if c not in table.columns]
    if absent:
        raise PromptUnitError("The prompt unit names columns the table lacks: " + ", ".join(
            f"{c!r}{did_you_mean(c, list(table.columns))}" for c in absent) + ".")
    codes, n_prompts, ok = _codes(table, unit)
    summary = UnitSummary(tuple(unit), n_prompts, len(table), int((~ok).sum()))

    def hint() -> tuple[str, list[str] | None]:
        if by is None:
            return "", None
        found = pairing_unit(table, design, by, exclude=())
        return ((" Instead, " + use_unit_hint(found)) if found else ""), found

    models = [by] if by is not None else (design.of_kind("model") if design is not None else [])
    repeats = any(m in table.columns and table[m].nunique() > 1 for m in models)
    if repeats and len(table) > 1 and n_prompts == int(ok.sum()):
        text, found = hint()
        raise PromptUnitError(
            f"The prompt unit {unit_text(unit)} makes every row its own prompt "
            f"({n_prompts:,} prompts in {int(ok.sum()):,} rows): a prompt is what several "
            "models or settings answer, so it must repeat; a row id is not a prompt. Name the "
            "columns varied to build the prompts (template, group, style ...)." + text,
            suggested_unit=found)
    if design is not None and n_prompts:
        # one model's answers to one prompt: a prompt factor varying there mixes prompts
        # (across models a model-side column may differ: the design may hold one)
        side = [m for m in models if m in table.columns and m not in unit]
        cells, n_cells, cell_ok = _codes(table, [*unit, *side])
        for name in design.of_kind("domain", "prompt"):
            if name in unit or name == by or name not in table.columns:
                continue
            values, uniques = pd.factorize(table[name])
            rows = cell_ok & (values >= 0)
            pairs = pd.unique(cells[rows] * (len(uniques) + 1) + values[rows])
            per_cell = np.bincount(pairs // (len(uniques) + 1), minlength=n_cells)
            if (per_cell > 1).any():
                c = int(np.flatnonzero(per_cell > 1)[0])
                first = int(np.flatnonzero(cells == c)[0])
                where = ", ".join(f"{c} = {table[c].iloc[first]}" for c in unit)
                seen = sorted({str(v) for v in table.loc[cells == c, name].dropna()})[:4]
                text, found = hint()
                raise PromptUnitError(
                    f"The prompt unit {unit_text(unit)} does not identify prompts: the "
                    f"{design.factor(name).kind} factor {name!r} takes several values within "
                    f"one of them ({where}: {', '.join(seen)}), so different prompts would "
                    f"count as one. Add {name!r} to the unit." + text,
                    suggested_unit=found)
    return summary


def _repeats_across(table: pd.DataFrame, col: str, by_codes: np.ndarray, n_by: int) -> bool:
    """Whether most values of ``col`` occur under two or more values of the compared
    factor (a prompt-side column; a response text or a row id does not)."""
    codes, uniques = pd.factorize(table[col])
    ok = (codes >= 0) & (by_codes >= 0)
    if not ok.any() or len(uniques) < 2:
        return False
    pairs = pd.unique(codes[ok].astype(np.int64) * n_by + by_codes[ok])
    spread = np.bincount(pairs // n_by, minlength=len(uniques))
    return bool((spread[spread > 0] >= 2).mean() >= 0.9)


def pairing_unit(table: pd.DataFrame, design, by: str, exclude: Sequence[str] = (),
                 max_columns: int = 8) -> list[str] | None:
    """A prompt unit under which every value of ``by`` answers each prompt once and the
    prompts recur across the values, or None.

    Candidates are columns other than ``by``, the outcome and ``exclude`` whose values
    mostly recur under two or more values of ``by`` (so not a row id, a response text or
    a model-side column): the design's domain and prompt factors first, then the others
    in table order. Starting from the design's domain and prompt factors, forward
    selection adds the candidate that removes most duplicate answers (ties: the one with
    fewer distinct values, so ``style`` before a prompt text), until none is left;
    columns that turn out unneeded are then dropped (last added first). A unit that
    still leaves duplicates, or under which no prompt is answered by two values, is not
    a pairing unit: None.

    Returns
    -------
    list of str or None
        The columns, in table order.
    """
    if by not in table.columns or len(table) < 2:
        return None
    by_codes, by_values = pd.factorize(table[by])
    n_by = len(by_values)
    if n_by < 2:
        return None
    skip = {by, DEVIATION, *exclude}
    outcome = getattr(getattr(design, "outcome", None), "column", None)
    if outcome:
        skip.add(outcome)
    firsts = list(design.of_kind("domain", "prompt")) if design is not None else []
    ordered = [c for c in [*firsts, *table.columns] if c in table.columns]
    candidates = [c for c in dict.fromkeys(ordered) if c not in skip
                  and _repeats_across(table, c, by_codes, n_by)]
    rows = by_codes >= 0

    def duplicates(cols: Sequence[str]) -> int:
        codes, n, ok = _codes(table, cols)
        ok = ok & rows
        cell = codes[ok] * n_by + by_codes[ok]
        return int(ok.sum() - len(pd.unique(cell)))

    chosen = [c for c in firsts if c in candidates]  # the design's own prompt factors
    current = duplicates(chosen)
    if not chosen or current >= duplicates([]):
        chosen, current = [], duplicates([])
    distinct = {c: table[c].nunique() for c in candidates}
    while current and len(chosen) < max_columns:
        scored = [(duplicates([*chosen, c]), distinct[c], i, c)
                  for i, c in enumerate(candidates) if c not in chosen]
        if not scored:
            break
        best, _, _, col = min(scored)
        if best >= current:
            break
        chosen.append(col)
        current = best
    if current or not chosen:
        return None
    for col in reversed(list(chosen)):
        trial = [c for c in chosen if c != col]
        if trial and duplicates(trial) == 0:
            chosen = trial
    codes, n, ok = _codes(table, chosen)
    ok = ok & rows
    spread = np.bincount(pd.unique(codes[ok] * n_by + by_codes[ok]) // n_by, minlength=n)
    if not (spread >= 2).any():
        return None
    order = {c: i for i, c in enumerate(table.columns)}
    return sorted(chosen, key=order.__getitem__)
