"""Prepare: recipe steps that turn a raw results file into an analysable table.

A *recipe* is a list of steps, each a :class:`Step` (a kind and its parameters). Steps
run in order on a DataFrame and each reports how many rows it changed and how many it
could not handle (``docs/prepare.md``). The recipe is saved in the design file
(``Design.recipe``), so the app and ``python -m analysis prepare IN --recipe FILE``
rebuild the same table from the raw file.

Step kinds and parameters (YAML form)::

    - step: melt          # several columns -> one factor + one value column
      columns: [pred_gpt4, pred_llama]
      factor: model       # default "model"
      value: answer       # default "answer"
      strip: pred_        # optional prefix (or suffix) removed from the factor values
    - step: match         # outcome: does the answer text name the labelled option?
      text: answer
      options: [ans0, ans1, ans2]   # option text columns ...
      label: label                  # ... and the column naming the right one
      output: correct               # default "correct"
    - step: match         # or: compare with another column (normalised)
      text: answer
      other: gold
      output: correct
    - step: recode        # recode / merge values of a column
      column: model
      mapping: {gpt-4o-mini: gpt-4o, gpt-4o-2024: gpt-4o}
      output: model_family          # default: the column itself
    - step: threshold     # a numeric score -> 0/1
      column: toxicity
      threshold: 0.5
      direction: above    # 1 where value > threshold ("below": value < threshold)
      output: toxic       # default "<column>_<direction>"
    - step: filter        # keep (or drop, with exclude: true) rows with these values
      column: split
      values: [test]

Texts are compared with :func:`analysis.matching.normalise` (case,
punctuation, whitespace, a leading article).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from analysis import columns as C
from analysis.errors import AnalysisError
from analysis.values import factor_values

__all__ = [
    "PrepareError", "REPORT_COLUMNS", "STEP_KINDS", "Step", "StepReport", "apply_recipe",
    "apply_step", "load_recipe", "match", "melt", "parse_recipe", "recipe_yaml",
]


#: Step kinds -> (required parameters, optional parameters).
STEP_KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "melt": (("columns",), ("factor", "value", "strip")),
    "match": (("text",), ("options", "label", "other", "output")),
    "recode": (("column", "mapping"), ("output",)),
    "threshold": (("column", "threshold"), ("direction", "output")),
    "filter": (("column", "values"), ("exclude",)),
}
#: Columns of the report :func:`apply_recipe` returns.
REPORT_COLUMNS: tuple[str, ...] = (C.STEP, C.ROWS_IN, C.ROWS_OUT, C.ROWS_CHANGED,
                                   C.ROWS_NOT_HANDLED, C.NOTE)


class PrepareError(AnalysisError):
    """A recipe step is malformed or does not fit the table (names step, column, value)."""


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple((str(k), _freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(key: str, value: Any) -> Any:
    if key == "mapping":
        return {k: v for k, v in value}
    if isinstance(value, tuple):
        return [_thaw("", v) for v in value]
    return value


@dataclass(frozen=True)
class Step:
    """One recipe step: ``kind`` (a key of :data:`STEP_KINDS`) and its parameters.

    Build one with :meth:`make` (``Step.make("filter", column="split", values=["test"])``);
    read parameters with :meth:`get`. Hashable and comparable, so a Design holding a
    recipe stays a frozen value.
    """

    kind: str
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def make(cls, kind: str, **params: Any) -> Step:
        """A validated step (see :data:`STEP_KINDS`)."""
        if kind not in STEP_KINDS:
            raise PrepareError(f"Unknown recipe step {kind!r}; steps are "
                               f"{', '.join(STEP_KINDS)}.")
        required, optional = STEP_KINDS[kind]
        params = {k: v for k, v in params.items() if v is not None}
        missing = [k for k in required if k not in params]
        if missing:
            raise PrepareError(f"Recipe step {kind!r} needs {', '.join(missing)}.")
        unknown = sorted(set(params) - set(required) - set(optional))
        if unknown:
            raise PrepareError(f"Recipe step {kind!r} has unknown parameters "
                               f"{', '.join(unknown)} (allowed: "
                               f"{', '.join(required + optional)}).")
        if kind == "match" and ("other" in params) == ("options" in params or "label" in params):
            raise PrepareError("Recipe step 'match' needs either options + label (compare "
                               "with the labelled option) or other (compare with a column).")
        if kind == "match" and "other" not in params and not (
                "options" in params and "label" in params):
            raise PrepareError("Recipe step 'match' needs both options and label.")
        if kind == "melt" and (not isinstance(params["columns"], (list, tuple))
                               or len(params["columns"]) < 1):
            raise PrepareError("Recipe step 'melt' needs a list of columns.")
        if kind == "recode" and not isinstance(params["mapping"], Mapping):
            raise PrepareError("Recipe step 'recode' needs a mapping {old value: new value}.")
        if kind == "threshold":
            try:
                params["threshold"] = float(params["threshold"])
            except (TypeError, ValueError):
                raise PrepareError(f"Recipe step 'threshold': threshold "
                                   f"{params['threshold']!r} is not a number.") from None
            if params.get("direction", "above") not in ("above", "below"):
                raise PrepareError("Recipe step 'threshold': direction is 'above' or 'below'.")
        if kind == "filter" and not isinstance(params["values"], (list, tuple)):
            params["values"] = [params["values"]]
        return cls(kind, tuple((k, _freeze(v)) for k, v in params.items()))

    def get(self, key: str, default: Any = None) -> Any:
        """A parameter in plain form (lists, dicts), or ``default``."""
        for k, v in self.params:
            if k == key:
                return _thaw(k, v)
        return default

    def to_dict(self) -> dict[str, Any]:
        """``{"step": kind, **params}`` for YAML/JSON."""
        return {"step": self.kind, **{k: self.get(k) for k, _ in self.params}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Step:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, Mapping) or "step" not in data:
            raise PrepareError("Each recipe step must be a mapping with a 'step' key "
                               f"(one of {', '.join(STEP_KINDS)}).")
        return cls.make(str(data["step"]), **{k: v for k, v in data.items() if k != "step"})

    def describe(self) -> str:
        """One line for reports: ``match: answer vs option named by label -> correct``."""
        g = self.get
        if self.kind == "melt":
            return (f"melt {', '.join(map(str, g('columns')))} -> {g('factor', 'model')} "
                    f"+ {g('value', 'answer')}")
        if self.kind == "match":
            what = (f"the option named by {g('label')}" if g("other") is None
                    else str(g("other")))
            return f"match {g('text')} with {what} -> {g('output', C.CORRECT)}"
        if self.kind == "recode":
            return f"recode {g('column')} ({len(g('mapping'))} values) -> {_recode_out(self)}"
        if self.kind == "threshold":
            return (f"threshold {g('column')} {g('direction', 'above')} {g('threshold'):g} -> "
                    f"{_threshold_out(self)}")
        verb = "drop" if g("exclude") else "keep"
        return f"filter: {verb} {g('column')} in {', '.join(map(str, g('values')))}"


def parse_recipe(data: Any) -> tuple[Step, ...]:
    """Steps from a list of step mappings, or a mapping with a ``recipe`` list (a design)."""
    if isinstance(data, Mapping):
        data = data.get("recipe", data.get("steps"))
        if data is None:
            raise PrepareError("The recipe file has no 'recipe' list of steps.")
    if not isinstance(data, (list, tuple)):
        raise PrepareError("A recipe is a list of steps.")
    return tuple(s if isinstance(s, Step) else Step.from_dict(s) for s in data)


def recipe_yaml(steps: Iterable[Step]) -> str:
    """The steps as the YAML list :func:`load_recipe` reads (``prepare --recipe FILE``)."""
    return yaml.safe_dump([s.to_dict() for s in steps], sort_keys=False, allow_unicode=True)


def load_recipe(path: str | Path) -> tuple[Step, ...]:
    """A recipe from a YAML/JSON file: a list of steps, or a design file with ``recipe``."""
    path = Path(path)
    if not path.is_file():
        raise PrepareError(f"{path}: no such recipe file.")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PrepareError(f"{path}: not a YAML/JSON recipe ({exc}).") from None
    try:
        return parse_recipe(data)
    except PrepareError as exc:
        raise PrepareError(f"{path}: {exc}") from None


# --------------------------------------------------------------------------- the steps

@dataclass(frozen=True)
class StepReport:
    """What one step did (a row of the :func:`apply_recipe` report)."""

    step: str
    rows_in: int
    rows_out: int
    rows_changed: int
    rows_not_handled: int
    note: str = ""


def _need(frame: pd.DataFrame, step: Step, *cols: str) -> None:
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise PrepareError(f"Step '{step.describe()}': no column {missing[0]!r} in the table "
                           f"(columns: {', '.join(map(str, frame.columns[:20]))}).")


def melt(frame: pd.DataFrame, columns: Sequence[str], *, factor: str = "model",
         value: str = "answer", strip: str | None = None) -> pd.DataFrame:
    """Stack ``columns`` into a ``factor`` column (their names) and a ``value`` column.

    The other columns repeat for every melted column; rows come column by column
    (all rows of the first column, then the second ...). ``strip`` is removed from the
    start or the end of each column name.

    Returns
    -------
    pandas.DataFrame
        The other columns, then ``factor`` and ``value``.
    """
    keep = [c for c in frame.columns if c not in columns]
    for new in (factor, value):
        if new in keep:
            raise PrepareError(f"melt: the new column {new!r} already exists; choose another "
                               "name.")

    def name(col: str) -> str:
        col = str(col)
        if strip and col.startswith(strip) and len(col) > len(strip):
            return col[len(strip):]
        if strip and col.endswith(strip) and len(col) > len(strip):
            return col[: -len(strip)]
        return col

    parts = [frame[keep].assign(**{factor: name(c), value: frame[c].to_numpy()})
             for c in columns]
    return pd.concat(parts, ignore_index=True)


def _option_index(label: pd.Series, options: list[str], step: Step) -> pd.Series:
    """Which option (0-based position in ``options``) each label names, as floats."""
    text = label.astype(str).str.strip()
    by_name = {o.lower(): i for i, o in enumerate(options)}
    letters = {chr(ord("a") + i): i for i in range(len(options))}
    idx = text.str.lower().map(by_name)
    as_int = pd.to_numeric(text, errors="coerce")
    ok_int = as_int.notna() & (as_int % 1 == 0) & as_int.between(0, len(options) - 1)
    idx = idx.fillna(as_int.where(ok_int))
    if len(options) <= 26:
        idx = idx.fillna(text.str.lower().map(letters))
    bad = idx.isna() & label.notna()
    if bad.any():
        values = ", ".join(str(v) for v in pd.unique(text[bad])[:5])
        raise PrepareError(
            f"Step '{step.describe()}': label column {step.get('label')!r} has "
            f"{int(bad.sum()):,} rows outside the options ({values}); a label is an option "
            f"column name ({', '.join(options)}), its position 0-{len(options) - 1}, or a "
            "letter A, B, C ...")
    return idx


def match(frame: pd.DataFrame, step: Step) -> tuple[pd.DataFrame, int, int, str]:
    """Apply a ``match`` step; returns (frame, changed, not handled, note)."""
    from analysis.matching import match_option, normalise_series

    text_col, out = step.get("text"), step.get("output", C.CORRECT)
    _need(frame, step, text_col)
    text = frame[text_col]
    if step.get("other") is not None:
        other = step.get("other")
        _need(frame, step, other)
        a, b = normalise_series(text), normalise_series(frame[other])
        missing = (a == "") | (b == "")
        result = pd.Series(np.where(a == b, 1.0, 0.0), index=frame.index).where(~missing)
        note = f"{int(missing.sum()):,} rows with an empty {text_col} or {other}: empty {out}"
    else:
        options = [str(o) for o in step.get("options")]
        _need(frame, step, *options, step.get("label"))
        idx = _option_index(frame[step.get("label")], options, step)
        cache: dict[tuple, float] = {}
        values = []
        keys = zip(text.tolist(), *(frame[o].tolist() for o in options), idx.tolist(),
                   strict=True)
        for row in keys:
            if row not in cache:
                answer, opts, right = row[0], row[1:-1], row[-1]
                hit, _ = match_option(answer, dict(enumerate(opts)))
                cache[row] = (np.nan if hit is None or right != right
                              else float(hit == int(right)))
            values.append(cache[row])
        result = pd.Series(values, index=frame.index, dtype=float)
        missing = result.isna()
        note = (f"{int(missing.sum()):,} answers named no option (or no label): empty {out}, "
                "not guessed")
    frame = frame.assign(**{out: result.astype("Int64")})
    return frame, int((~missing).sum()), int(missing.sum()), note


def _recode_out(step: Step) -> str:
    return step.get("output") or step.get("column")


def _threshold_out(step: Step) -> str:
    return step.get("output") or f"{step.get('column')}_{step.get('direction', 'above')}"


def apply_step(frame: pd.DataFrame, step: Step) -> tuple[pd.DataFrame, StepReport]:
    """Run one step on ``frame`` (never modified); the new table and what changed."""
    n_in = len(frame)
    not_handled = 0
    note = ""
    if step.kind == "melt":
        cols = [str(c) for c in step.get("columns")]
        _need(frame, step, *cols)
        frame = melt(frame, cols, factor=step.get("factor", "model"),
                     value=step.get("value", "answer"), strip=step.get("strip"))
        value = step.get("value", "answer")
        not_handled = int(frame[value].isna().sum())
        changed = len(frame)
        note = f"{len(cols)} columns -> {len(frame):,} rows; {not_handled:,} empty values kept"
    elif step.kind == "match":
        frame, changed, not_handled, note = match(frame, step)
    elif step.kind == "recode":
        col = step.get("column")
        _need(frame, step, col)
        mapping = {str(k): str(v) for k, v in step.get("mapping").items()}
        codes, values = factor_values(frame[col])
        new_values = np.array([mapping.get(v, v) for v in values], dtype=object)
        recoded = pd.Series(new_values[codes.to_numpy()], index=frame.index)
        unused = sorted(set(mapping) - set(values))
        changed = int(np.isin(codes.to_numpy(),
                              [i for i, v in enumerate(values) if v in mapping]).sum())
        frame = frame.assign(**{_recode_out(step): recoded})
        note = f"values not in the data: {', '.join(unused)}" if unused else ""
    elif step.kind == "threshold":
        col = step.get("column")
        _need(frame, step, col)
        numbers = pd.to_numeric(frame[col], errors="coerce")
        t = step.get("threshold")
        hit = numbers > t if step.get("direction", "above") == "above" else numbers < t
        out = hit.astype(float).where(numbers.notna()).astype("Int64")
        frame = frame.assign(**{_threshold_out(step): out})
        not_handled = int(numbers.isna().sum())
        changed = n_in - not_handled
        note = f"{not_handled:,} rows not numeric or empty: empty output" if not_handled else ""
    else:  # filter
        col = step.get("column")
        _need(frame, step, col)
        wanted = {str(v) for v in step.get("values")}
        codes, values = factor_values(frame[col])
        hit = np.array([v in wanted for v in values], dtype=bool)[codes.to_numpy()]
        keep = ~hit if step.get("exclude") else hit
        unseen = sorted(wanted - set(values))
        frame = frame[keep].reset_index(drop=True)
        changed = n_in - len(frame)
        note = f"values not in the data: {', '.join(unseen)}" if unseen else ""
    return frame, StepReport(step.describe(), n_in, len(frame), changed, not_handled, note)


def apply_recipe(frame: pd.DataFrame, recipe: Iterable[Step | Mapping[str, Any]]
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every step in order.

    Returns
    -------
    (table, report)
        ``table`` the prepared table; ``report`` one row per step with the columns
        :data:`REPORT_COLUMNS`: ``step`` (its description), ``rows_in``, ``rows_out``,
        ``rows_changed`` (rows the step created, changed or removed), ``rows_not_handled``
        (rows it could not decide: empty values, answers naming no option, non-numbers),
        ``note``.

    Raises
    ------
    PrepareError
        A malformed step, a column that is not there, a label outside the options.
    """
    steps = parse_recipe(list(recipe))
    reports = []
    for step in steps:
        frame, report = apply_step(frame, step)
        reports.append(report)
    table = pd.DataFrame([r.__dict__ for r in reports], columns=list(REPORT_COLUMNS))
    return frame, table
