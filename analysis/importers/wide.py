"""A wide table (one column per model or setting) -> one row per (row, column), a factor.

``pred_gpt4, pred_llama`` (or ``score_seed1, score_seed2`` ...) become a factor
(default ``model``) whose values are the column names without their common prefix
(``gpt4``, ``llama``), and one value column (default ``answer``). The other columns
repeat. The melt is the Prepare step ``melt`` (``analysis.prepare``), run with the columns'
common prefix stripped. See ``docs/import_wide.md``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from analysis.design import Outcome, design_from_structure, make_factor, suggest_outcome
from analysis.errors import LoadError
from analysis.importers import ImportFormatError, ImportResult, PathArg
from analysis.io import load_results
from analysis.limits import check_decoded, check_rows
from analysis.prepare import Step, apply_step

__all__ = ["DEFAULT_PATTERN", "SOURCE_FILE", "read"]


#: Columns melted when none are named: a prefix pred/prediction/answer/output/score + "_".
DEFAULT_PATTERN = r"^(?:pred|preds|prediction|answer|output|response|score)_.+$"
SOURCE_FILE = "source_file"


def _common_prefix(names: list[str]) -> str | None:
    """The shared start of ``names`` up to and including its last ``_``/``-``/``.``."""
    if len(names) < 2:
        m = re.match(r"^(?:pred|preds|prediction|answer|output|response|score)[_.-]", names[0])
        return m.group(0) if m else None
    prefix = os.path.commonprefix(names)
    cut = max(prefix.rfind(c) for c in "_-.")
    return prefix[: cut + 1] if cut >= 0 else None


def _common_suffix(names: list[str]) -> str | None:
    """The shared end of ``names`` from and including its first ``_``/``-``/``.``
    (``gpt4omini_biased``, ``llama31_biased`` -> ``_biased``)."""
    if len(names) < 2:
        return None
    suffix = os.path.commonprefix([n[::-1] for n in names])[::-1]
    cut = min((i for i in (suffix.find(c) for c in "_-.") if i >= 0), default=-1)
    return suffix[cut:] if cut >= 0 else None


def melted_outcome(frame: pd.DataFrame, columns: Sequence[str], value: str
                   ) -> tuple[Outcome | None, str]:
    """The outcome of a wide import: the melted answers when they are 0/1 (or booleans),
    read by the melted columns' names (``..._biased``: 1 = deviation; ``..._correct``:
    deviation = 0), and a note saying so; else None and no note."""
    from analysis.values import outcome_meaning

    picked = suggest_outcome(frame[[value]])
    if picked is None:
        return None, ""
    meanings = {outcome_meaning(str(c)) for c in columns} - {None}
    if meanings == {"success"} and picked.mapping == "binary":
        picked = Outcome(column=value, mapping="values",
                         values=("false" if pd.api.types.is_bool_dtype(frame[value]) else "0",))
    reading = ("1 = deviation" if picked.mapping == "binary" else
               "deviation = not correct")
    named = ", as the melted columns' names say" if len(meanings) == 1 else ""
    return picked, (f"outcome: {value!r}, the melted 0/1 answers ({reading}{named}); change "
                    "it on the Design page if that reading is wrong.")


def _check_melted_size(raw: pd.DataFrame, cols: list[str], label: str) -> None:
    """Refuse a melt whose result passes the row or decoded-size limit before it is built:
    every other column is repeated once per melted column (a 1 MB file of 5,000 rows and
    100 such columns becomes 500,000 rows)."""
    rows = len(raw) * len(cols)
    check_rows(rows, label, found=f"{len(raw):,} rows x {len(cols):,} melted columns = "
                                  f"{rows:,} rows once melted")
    usage = raw.memory_usage(deep=True, index=False)
    melted = set(cols)
    other = float(sum(v for c, v in usage.items() if c not in melted))
    check_decoded(int(other * len(cols) + usage[cols].sum() + 16 * rows), label)


def read(paths: Sequence[PathArg], *, prediction_cols: Sequence[str] | None = None,
         pattern: str | None = None, factor: str = "model", value: str = "answer"
         ) -> ImportResult:
    """Melt the per-model (per-setting) columns of a wide table into a factor.

    Parameters
    ----------
    paths
        Results tables in any format :func:`analysis.io.load_results` reads; several
        files (same columns) are stacked with a ``source_file`` column.
    prediction_cols
        The columns to melt (default: those matching ``pattern``).
    pattern
        Regular expression selecting the columns to melt (default :data:`DEFAULT_PATTERN`).
    factor, value
        Names of the new factor column and value column.

    Returns
    -------
    ImportResult
        ``frame``: the other columns, then ``factor`` (column names without their common
        prefix) and ``value``. ``counts``: ``rows_read``, ``columns_melted``,
        ``rows_out`` (= rows_read x columns_melted), ``empty_values``.

    Raises
    ------
    ImportFormatError
        An unreadable or empty file, a named column that is absent, no column to melt.
    """
    frames = []
    for raw in paths:
        path = Path(raw)
        try:
            frames.append(load_results(path))
        except LoadError as exc:
            raise ImportFormatError(f"wide importer: {exc}") from None
    first = frames[0]
    names = [Path(p).name for p in paths]
    for name, f in zip(names[1:], frames[1:], strict=True):
        if list(f.columns) != list(first.columns):
            raise ImportFormatError(f"{name}: its columns differ from {names[0]}'s; the wide "
                                    "importer stacks files with the same columns.")
    raw = (pd.concat([f.assign(**{SOURCE_FILE: n}) for n, f in zip(names, frames, strict=True)],
                     ignore_index=True) if len(frames) > 1 else first)
    if prediction_cols:
        cols = [str(c) for c in prediction_cols]
        missing = [c for c in cols if c not in raw.columns]
        if missing:
            raise ImportFormatError(f"{names[0]}: prediction column {missing[0]!r} is missing "
                                    f"(columns: {', '.join(map(str, raw.columns))}).")
    else:
        try:
            regex = re.compile(pattern or DEFAULT_PATTERN)
        except re.error as exc:
            raise ImportFormatError(
                f"wide importer: bad column pattern {pattern!r} ({exc}).") from None
        cols = [c for c in raw.columns if regex.search(str(c))]
        if not cols:
            raise ImportFormatError(
                f"{names[0]}: no column to melt matches {regex.pattern!r}; name them with "
                "--prediction-col COL (repeatable).")
    _check_melted_size(raw, cols, names[0])
    step = Step.make("melt", columns=cols, factor=factor, value=value,
                     strip=_common_prefix(cols) or _common_suffix(cols))
    frame, report = apply_step(raw, step)
    from analysis.structure import infer_structure
    from analysis.values import SUGGEST_MAX_VALUES

    # the melted answers are the outcome (never a replicate index or another 0/1 column);
    # the new factor describes who answered: a model-side column, never in the prompt unit
    outcome, outcome_note = melted_outcome(frame, cols, value)
    kind = "model" if factor == "model" else None
    structure = infer_structure(frame, outcome=value if outcome else None,
                                model_columns=[factor] if kind else (),
                                max_values=SUGGEST_MAX_VALUES)
    design = design_from_structure(frame, structure, outcome or suggest_outcome(frame))
    one_valued = frame[factor].nunique(dropna=False) < 2
    if factor not in design.names and not one_valued:  # keeps cluster and prompt unit
        design = replace(design, factors=(*design.factors, make_factor(frame, factor)))
    factors = tuple(make_factor(frame, factor, kind=kind) if f.name == factor and kind else f
                    for f in design.factors if not (f.name == factor and one_valued))
    design = replace(design, factors=factors, name="wide import")
    counts = {"rows_read": len(raw), "columns_melted": len(cols), "rows_out": len(frame),
              "empty_values": report.rows_not_handled}
    notes = [f"melted {', '.join(cols)} into {factor!r} "
             f"({', '.join(map(str, pd.unique(frame[factor])))}) and {value!r}: "
             f"{len(raw):,} rows x {len(cols)} columns = {len(frame):,} rows.",
             f"{report.rows_not_handled:,} empty values kept as empty {value!r}."]
    if one_valued:
        notes.append(f"{factor!r} has the single value {frame[factor].iloc[0]!r} (one column "
                     "melted): kept as a column, left out of the design's factors (a factor "
                     "needs two values).")
    if outcome_note:
        notes.append(outcome_note)
    if design.outcome is None:
        notes.append(f"No 0/1 outcome column: derive one on the Prepare step (match {value!r} "
                     "with a gold column, or threshold a score).")
    return ImportResult(frame=frame, design=design, source="wide", counts=counts, notes=notes)
