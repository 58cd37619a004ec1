"""Factor values as strings and as integer codes: the one place with the missing-value rule.

Factor values are always strings: ``7``, ``7.0`` and ``"7"`` in a file are the value
``"7"``, ``True`` is ``"true"``. **A missing factor value (None, NaN, ``pd.NA``, a
missing category) is a value of its own, ``"(missing)"``** (:data:`MISSING_VALUE`): it
is never dropped and never gets a negative code, so every row has a code and a cell.
A design declares ``"(missing)"`` like any other value when it wants those rows; an
undeclared ``"(missing)"`` is refused like any other undeclared value.

* :func:`factor_values` -- the values *present* in a column, in order of first
  appearance (what a design is suggested from and checked against).
* :func:`factor_codes` -- the kernel the statistics use to group rows or cells: for an
  (ordered) categorical, its declared categories in their order (unseen ones kept),
  ``"(missing)"`` appended when a row is missing and it is not already a category;
  for any other column, :func:`factor_values`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MISSING_VALUE", "REFERENCE_PATTERN", "default_reference", "factor_codes",
           "factor_values", "format_value", "order_values"]

MISSING_VALUE = "(missing)"

#: Values read as a control (reference) value: none, no ..., base, control, neutral, ...
REFERENCE_PATTERN = re.compile(
    r"^(none|no|base|baseline|control|neutral|default|n/?a|unknown)$|^no[ _-]", re.IGNORECASE
)


def format_value(value: Any) -> str:
    """A cell as a factor value: ``"(missing)"``, ``"true"``/``"false"``, ``7.0`` -> ``"7"``."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return MISSING_VALUE
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def factor_values(series: pd.Series) -> tuple[pd.Series, list[str]]:
    """Codes and string values of a column, without converting every row to text.

    Returns
    -------
    (codes, values)
        ``codes`` an int array-like series (position in ``values``), ``values`` the
        distinct values *present* as strings in order of first appearance
        (``"(missing)"`` among them where a row is missing).
    """
    if isinstance(series.dtype, pd.CategoricalDtype):  # e.g. a dictionary-encoded column
        codes, uniques = _categorical_factorize(series)
    else:
        codes, uniques = pd.factorize(series, use_na_sentinel=False)
    labels = [format_value(u) for u in uniques]
    if len(set(labels)) < len(labels):  # e.g. 1 and "1" in one column: merge them
        merged = pd.Index(labels).unique().tolist()
        where = {lab: i for i, lab in enumerate(merged)}
        remap = np.array([where[lab] for lab in labels])
        return pd.Series(remap[codes], index=series.index), merged
    return pd.Series(codes, index=series.index), labels


def _categorical_factorize(series: pd.Series) -> tuple[np.ndarray, list]:
    """``pd.factorize(series, use_na_sentinel=False)`` of a categorical column from its
    integer codes (no hashing of values): the values present, in order of first
    appearance, NaN among them where a row is missing (docs/performance.md)."""
    raw = series.cat.codes.to_numpy()
    order = pd.unique(raw)  # codes present, first appearance; -1 is a missing value
    categories = series.cat.categories
    lookup = np.zeros(len(categories) + 1, dtype=np.intp)  # indexed by code + 1
    lookup[order.astype(np.intp) + 1] = np.arange(len(order))
    uniques = [np.nan if c < 0 else categories[c] for c in order]
    return lookup[raw.astype(np.intp) + 1], uniques


def factor_codes(series: pd.Series) -> tuple[np.ndarray, list[str]]:
    """The integer code of every row and the values the codes index (the statistics'
    one factor -> codes kernel; module docstring for the missing-value rule).

    Returns
    -------
    (codes, values)
        ``codes`` an int64 array, ``0 <= code < len(values)`` for every row; ``values``
        the strings: a categorical's categories in declared order (unseen ones kept,
        ``"(missing)"`` last when a row is missing and it is not a category), else the
        values present in order of first appearance (:func:`factor_values`).
    """
    if not isinstance(series.dtype, pd.CategoricalDtype):
        codes, values = factor_values(series)
        return codes.to_numpy(dtype=np.int64), values
    codes = series.cat.codes.to_numpy(dtype=np.int64)
    values = [str(c) for c in series.cat.categories]
    missing = codes < 0
    if missing.any():
        if MISSING_VALUE not in values:
            values.append(MISSING_VALUE)
        codes = np.where(missing, values.index(MISSING_VALUE), codes)
    return codes, values


def order_values(values: Iterable[str]) -> list[str]:
    """Values in display order: numerically when all are numbers, else alphabetically
    (case-folded) with ``"(missing)"`` last."""
    values = list(values)
    numeric = {}
    for v in values:
        try:
            numeric[v] = float(v)
        except ValueError:
            break
    else:
        return sorted(values, key=lambda v: numeric[v])
    return sorted(values, key=lambda v: (v == MISSING_VALUE, v.casefold()))


def default_reference(series: pd.Series) -> str:
    """A value named like ``none``/``no ...``/``base``/``control``, else the most frequent."""
    codes, values = factor_values(series)
    for v in order_values(values):
        if REFERENCE_PATTERN.search(v.strip()):
            return v
    counts = np.bincount(codes.to_numpy(), minlength=len(values))
    ordered = order_values(values)
    return max(ordered, key=lambda v: counts[values.index(v)])
