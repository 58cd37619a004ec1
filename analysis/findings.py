"""From a number to its rows: the top findings of a subgroup table and the rows behind one.

:func:`top_findings` keeps the distinct subgroups (a level-1 subgroup is one factor
value) whose log disparity, adjusted p-value and size pass thresholds the user sets, sorted
by the measure the sunburst is coloured by. :func:`subgroup_where` turns one subgroup into
the factor values it fixes, and :func:`rows_behind` returns the responses behind it (within
the page's subset), prompt and answer columns first. See ``docs/subgroups.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from analysis.cells import filter_rows
from analysis.columns import (
    DEVIATION,
    DEVIATION_RATE,
    DUPLICATE_OF,
    LD_UNDEFINED,
    LOG_DISPARITY,
    P_ADJUSTED,
    N,
)
from analysis.errors import AnalysisError
from analysis.labels import describe_finding, subgroup_where  # re-exported: words

__all__ = [
    "FINDING_MAX_P", "FINDING_MIN_LD", "MEASURES", "TEXT_FIRST", "describe_finding",
    "rows_behind", "subgroup_where", "top_findings",
]


#: The report's thresholds for a top finding (the page lets the user set them).
FINDING_MIN_LD = 0.1
FINDING_MAX_P = 0.05
#: Sort orders of :func:`top_findings`: by |log disparity| or by deviation rate.
MEASURES: tuple[str, ...] = ("ld", "rate")
#: Column names that hold the prompt and the answer, shown first among the rows.
TEXT_FIRST: tuple[str, ...] = ("prompt", "question", "context", "input", "doc", "template",
                               "answer", "prediction", "response", "output", "completion",
                               "target", "label")


def top_findings(table: pd.DataFrame, *, min_abs_ld: float = 0.0,
                 max_p_adjusted: float = 0.05, min_n: int = 1, measure: str = "ld",
                 limit: int | None = None) -> pd.DataFrame:
    """The subgroups passing every threshold, the strongest first.

    Parameters
    ----------
    table
        Output of :func:`analysis.subgroups.subgroups` (duplicates, listed once in
        :func:`~analysis.subgroups.distinct_subgroups`, are left out here too).
    min_abs_ld
        Keep ``|log_disparity| >= min_abs_ld``.
    max_p_adjusted
        Keep ``p_adjusted <= max_p_adjusted`` (1 keeps every p-value).
    min_n
        Keep ``n >= min_n``.
    measure
        ``"ld"``: sort by ``|log_disparity|``; ``"rate"``: by ``deviation_rate`` (highest
        first).
    limit
        At most this many rows.

    Returns
    -------
    DataFrame
        The passing rows of ``table`` with its columns (``subgroup``, ``level``, the factor
        columns, ``n``, ``deviation_rate``, ``log_disparity``, ``p_adjusted`` ...), in
        order.

    Raises
    ------
    AnalysisError
        An unknown ``measure`` or a negative threshold.
    """
    if measure not in MEASURES:
        raise AnalysisError(f"Sort findings by {' or '.join(MEASURES)}, not {measure!r}.")
    if min_abs_ld < 0 or min_n < 0 or not 0 <= max_p_adjusted <= 1:
        raise AnalysisError("Thresholds: |LD| and n at least 0, adjusted p between 0 and 1.")
    keep = table
    if DUPLICATE_OF in keep.columns:
        keep = keep[keep[DUPLICATE_OF].isna()]
    if LD_UNDEFINED in keep.columns:
        keep = keep[~keep[LD_UNDEFINED].astype(bool)]
    ld = keep[LOG_DISPARITY].astype(float)
    mask = (ld.abs() >= min_abs_ld) & (keep[N] >= min_n) & (
        keep[P_ADJUSTED].astype(float) <= max_p_adjusted)
    keep = keep[mask.fillna(False)]
    key = keep[LOG_DISPARITY].abs() if measure == "ld" else keep[DEVIATION_RATE]
    order = np.argsort(-key.to_numpy(dtype=float), kind="stable")
    out = keep.iloc[order]
    return out.head(limit) if limit is not None else out


def rows_behind(results: pd.DataFrame, where: Mapping[str, Sequence[str]] | None,
                fixed: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """The responses of one subgroup within the subset ``where``.

    Returns
    -------
    DataFrame
        The rows of ``results`` with the subset's and the subgroup's values, every column
        kept; prompt- and answer-like columns first (:data:`TEXT_FIRST`), then ``deviation``,
        then the rest in table order. The index is the row's position in ``results``.
    """
    merged: dict[str, list[str]] = {k: [str(v) for v in vals]
                                    for k, vals in (where or {}).items() if vals}
    for factor, values in fixed.items():
        kept = [str(v) for v in values]
        if factor in merged:
            kept = [v for v in kept if v in merged[factor]]
        merged[factor] = kept
    rows = filter_rows(results, merged or None)
    first = [c for word in TEXT_FIRST for c in rows.columns
             if str(c).lower() == word or str(c).lower().startswith(word + "_")]
    first = list(dict.fromkeys(first))
    lead = first + ([DEVIATION] if DEVIATION in rows.columns else [])
    return rows[lead + [c for c in rows.columns if c not in lead]]
