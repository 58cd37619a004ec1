"""The suggested design of an evaluation-harness import (lm-eval, Inspect).

Both harnesses log one record per (item, model run): the item's own fields, the model
and its settings, and one or more scores. :func:`harness_design` turns such a table
into a starting :class:`~analysis.design.Design` the same way for both sources
(``docs/import_lm_eval.md``, ``docs/import_inspect.md``):

- item fields: whatever :func:`analysis.design.suggest_design` offers as factors among
  them (read from the structure of the distinct items: never texts, ids, answer options
  ``ans0``.. or the gold index ``label``; ``docs/structure.md``), with its kind
  guessed from the name;
- the cluster (a template column) and the prompt unit (the item id and the prompt
  columns crossed with it) from :func:`analysis.structure.infer_structure` on the
  whole table;
- ``prompt`` columns (task, answer filter, ...) and ``model`` columns (the model's
  settings) become factors of that kind when they take more than one value (missing
  values aside: generation settings are missing for tasks that do not generate); the
  ``model`` column itself is always a factor, so two imports concatenate cleanly;
- the outcome: among the score columns whose values all lie in [0, 1] (1 = correct,
  the harnesses' convention), one whose values vary, with a value in the most rows,
  with *deviation = score < 1* (not fully correct). A metric the harness marks as "lower
  is better" deviates where it is above 0 instead. Other numeric scores stay candidates
  (listed in the notes) and are never guessed into an outcome.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from analysis.design import Design, Factor, Outcome, make_factor, suggest_design
from analysis.structure import infer_structure

__all__ = [
    "MODEL_COLUMN", "harness_design", "is_unit_score", "json_text", "suggest_score_outcome",
    "uniform_types",
]


MODEL_COLUMN = "model"


def is_unit_score(series: pd.Series) -> bool:
    """True when a column is numeric with every present value in [0, 1] (at least one)."""
    if not (pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)):
        return False
    values = series.dropna().astype(float)
    return bool(len(values)) and bool(((values >= 0) & (values <= 1)).all())


def suggest_score_outcome(
    frame: pd.DataFrame,
    score_columns: Sequence[str],
    *,
    lower_is_better: Mapping[str, bool] | None = None,
) -> tuple[Outcome | None, list[str]]:
    """The suggested outcome among ``score_columns`` and notes on the choice.

    Returns
    -------
    (outcome, notes)
        ``outcome`` is ``None`` when no score column holds values in [0, 1].
    """
    lower_is_better = dict(lower_is_better or {})
    unit = [c for c in score_columns if c in frame.columns and is_unit_score(frame[c])]
    other = [c for c in score_columns if c in frame.columns and c not in unit]
    notes = []
    if other:
        notes.append("Numeric scores not in [0, 1], kept as columns but not suggested as the "
                      f"outcome (map them with a threshold): {', '.join(other)}.")
    if not unit:
        notes.append("No score column holds values in [0, 1]: choose the outcome and how it "
                     "maps to a deviation in the Design step.")
        return None, notes
    present = {c: int(frame[c].notna().sum()) for c in unit}
    # A score whose deviation varies first (one that is always 0, such as the exact match
    # of a placeholder model, or CrowS-Pairs' absolute likelihood_diff, above 0 for every
    # pair, makes every disparity undefined), then the one on most rows; max keeps the
    # first of equals.
    varies = {c: _deviation_varies(frame[c], lower_is_better.get(c, False)) for c in unit}
    constant = [c for c in unit if not varies[c] and frame[c].nunique() > 1]
    if constant:
        notes.append("Not suggested as the outcome, because its deviation is the same on "
                     "every row (no disparity could be measured): "
                     + ", ".join(f"{c} ({'> 0' if lower_is_better.get(c) else '< 1'} on "
                                 "every row)" for c in constant) + ".")
    best = max(unit, key=lambda c: (varies[c], present[c]))
    if lower_is_better.get(best, False):
        outcome = Outcome(column=best, mapping="above", threshold=0.0)
        notes.append(f"Outcome: {best} (lower is better), deviation where {best} > 0.")
    else:
        outcome = Outcome(column=best, mapping="below", threshold=1.0)
        notes.append(f"Outcome: {best}, deviation where {best} < 1 (not fully correct).")
    missing = len(frame) - present[best]
    if missing:
        notes.append(f"{missing:,} rows have no {best} (another task or scorer): they have no "
                     "deviation and drop out of outcome statistics.")
    others = [c for c in unit if c != best]
    if others:
        notes.append(f"Other candidate outcomes: {', '.join(others)}.")
    return outcome, notes


def _deviation_varies(series: pd.Series, lower_is_better: bool) -> bool:
    """Whether the deviation the importers map a score to (``> 0`` when lower is better,
    else ``< 1``) takes both values."""
    values = series.dropna().astype(float)
    deviates = values > 0 if lower_is_better else values < 1
    return bool(deviates.any() and not deviates.all())


def harness_design(
    frame: pd.DataFrame,
    *,
    item_columns: Sequence[str],
    prompt_columns: Sequence[str] = (),
    model_columns: Sequence[str] = (),
    score_columns: Sequence[str] = (),
    lower_is_better: Mapping[str, bool] | None = None,
    name: str = "",
) -> tuple[Design, list[str]]:
    """A starting design for a harness import (see module docstring) and notes on it.

    Parameters
    ----------
    frame
        The imported results table.
    item_columns
        The item's own fields (lm-eval ``doc`` fields, Inspect sample metadata).
    prompt_columns, model_columns
        Columns that describe how the item was asked / which model and settings answered.
    score_columns
        The per-sample scores (outcome candidates).
    lower_is_better
        Score columns for which a lower value is better.
    name
        The design's name.

    Returns
    -------
    (design, notes)
        The suggested :class:`~analysis.design.Design` and human-readable notes (the
        outcome chosen and the other candidates, rows without it, item fields left out).
    """
    items = [c for c in item_columns if c in frame.columns]
    factors: list[Factor] = []
    one_valued: list[str] = []
    if items:
        # Judge the item fields once per item: the same items under several tasks or
        # models repeat, and an item id must still look like an id.
        distinct_items = frame[items].drop_duplicates()
        factors.extend(suggest_design(distinct_items).factors)
    for kind, columns in (("prompt", prompt_columns), ("model", model_columns)):
        for col in columns:
            if col not in frame.columns:
                continue
            # A setting that is only missing for some tasks (generation kwargs of a
            # multiple-choice task) does not vary by itself.
            varies = frame[col].nunique(dropna=True) > 1
            if varies:
                factors.append(make_factor(frame, col, kind=kind))  # type: ignore[arg-type]
            elif col == MODEL_COLUMN and len(frame):
                one_valued.append(f"{col!r} has the single value "
                                  f"{str(frame[col].iloc[0])!r}")
    outcome, notes = suggest_score_outcome(frame, score_columns, lower_is_better=lower_is_better)
    if one_valued:  # the design is usable as it is: a factor needs two values
        notes.append(f"{'; '.join(one_valued)}: kept as a column, not a factor of the "
                     "design (a factor needs two values; compare models by importing "
                     "several runs together).")
    skipped = [c for c in items if c not in {f.name for f in factors}]
    if skipped:
        notes.append("Item fields kept as columns but not suggested as factors (text, ids, "
                     f"constants or 0/1 values): {', '.join(skipped)}.")
    # the template (cluster) and the prompt unit, read from the whole table's structure
    structure = infer_structure(frame, factors=[f.name for f in factors],
                                outcome=list(score_columns), model_columns=model_columns)
    unit = tuple(c for c in structure.prompt_unit if c in frame.columns)
    return Design(factors=tuple(factors), outcome=outcome, name=name,
                  cluster=structure.cluster, prompt_unit=unit if structure.item_id else (),
                  inferred=structure.to_dict()), notes


def json_text(value: object) -> object:
    """Lists and mappings as compact JSON text (so they count as ordinary values)."""
    if isinstance(value, (list, tuple, dict, np.ndarray)):
        if isinstance(value, np.ndarray):
            value = value.tolist()
        return json.dumps(value, ensure_ascii=False, sort_keys=isinstance(value, dict),
                          default=str)
    return value


def uniform_types(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns mixing Python types (a field that is a number in one task's documents and
    text in another's) as text, so the table writes to Parquet; factor values are text
    anyway (``docs/architecture.md``). Missing values stay missing."""
    for col in frame.columns:
        s = frame[col]
        if s.dtype != object:
            continue
        present = s.dropna()
        types = {type(v) for v in present}
        if len(types) > 1:
            frame[col] = s.where(s.isna(), present.map(str))
    return frame
