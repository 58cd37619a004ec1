"""The outcome mapping: an outcome column -> the binary deviation of every row.

Import :func:`deviation` from :mod:`analysis.design`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.columns import DEVIATION
from analysis.design_model import Outcome
from analysis.errors import DesignError, did_you_mean
from analysis.values import factor_values, format_value

__all__ = ["deviation", "is_continuous"]

_TRUE = {"1", "true", "yes", "1.0"}
_FALSE = {"0", "false", "no", "0.0"}


def _as_text(series: pd.Series) -> pd.Series:
    """Trimmed, case-folded factor-value strings (``7``, ``7.0``, ``" 7 "`` -> ``"7"``)."""
    codes, values = factor_values(series)
    labels = np.array([v.strip().casefold() for v in values], dtype=object)
    return pd.Series(labels[codes.to_numpy()], index=series.index)


def deviation(frame: pd.DataFrame, outcome: Outcome) -> pd.Series:
    """The binary deviation of every row: 1.0, 0.0, or NaN where the outcome is missing.

    Raises
    ------
    DesignError
        The outcome column (or the compared column) is absent, or its values do not
        fit the mapping (non-0/1 values for ``binary``, non-numbers for a threshold).
    """
    col = outcome.column
    if col not in frame.columns:
        raise DesignError(f"Outcome column {col!r} is not in the table."
                          + did_you_mean(col, list(frame.columns), sentence=True))
    s = frame[col]
    missing = s.isna()
    if outcome.mapping == "binary":
        if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
            bad = ~missing & ~s.isin([0, 1])
            out = s.astype(float)
        else:
            text = s.astype(str).str.strip().str.lower()
            bad = ~missing & ~text.isin(_TRUE | _FALSE)
            out = text.isin(_TRUE).astype(float)
        if bad.any():
            examples = ", ".join(repr(format_value(v)) for v in pd.unique(s[bad])[:5])
            raise DesignError(
                f"Outcome {col!r} should be 0/1 or true/false, but {int(bad.sum()):,} rows hold "
                f"other values ({examples}). Map it with a set of deviating values, a "
                "comparison column or a threshold instead."
            )
    elif outcome.mapping == "values":
        codes, values = factor_values(s)
        deviating = set(outcome.values)
        hit = np.array([v in deviating for v in values], dtype=float)
        out = pd.Series(hit[codes.to_numpy()], index=s.index)
        unknown = set(outcome.values) - set(values)
        if unknown == set(outcome.values):
            raise DesignError(
                f"Outcome {col!r}: none of the deviating values "
                f"({', '.join(sorted(unknown))}) occurs in the column; its values are "
                f"{', '.join(sorted(values)[:10])}."
            )
    elif outcome.mapping == "equals":
        other = outcome.other_column
        if other not in frame.columns:
            raise DesignError(f"Comparison column {other!r} (for outcome {col!r}) is not in "
                              "the table.")
        a, b = _as_text(s), _as_text(frame[other])  # 1 and 1.0 are the same value
        missing = missing | frame[other].isna()
        out = (a == b).astype(float)
    else:
        numbers = pd.to_numeric(s, errors="coerce")
        bad = numbers.isna() & ~missing
        if bad.any():
            examples = ", ".join(repr(str(v)) for v in pd.unique(s[bad])[:5])
            raise DesignError(
                f"Outcome {col!r} needs numbers for a threshold, but {int(bad.sum()):,} rows "
                f"are not numeric ({examples})."
            )
        out = (numbers < outcome.threshold) if outcome.mapping == "below" else (
            numbers > outcome.threshold)
        out = out.astype(float)
    out = out.where(~missing, np.nan)
    out.name = DEVIATION
    return out


def is_continuous(design) -> bool:  # noqa: ANN001 - an analysis.design.Design
    """Whether the design's outcome is declared continuous (a score, not a 0/1 deviation;
    also ``analysis.importance_linear.is_continuous``)."""
    return design.outcome is not None and design.outcome.type == "continuous"
