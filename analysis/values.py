"""Factor values as strings, the reference value, and roles guessed from column names.

The kernel every module that reads factor columns shares (the design, nesting, the
structure inference, the recipe steps, the engines, the statistics). It imports nothing of
the design, so those modules can use it without an import circle.

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

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError

__all__ = [
    "KINDS", "MAX_FACTOR_VALUES", "MISSING_VALUE", "MODEL_WORDS", "PROMPT_WORDS",
    "REPLICATE_WORDS",
    "REFERENCE_PATTERN", "SUGGEST_MAX_VALUES", "FactorKind",
    "check_frame", "combine_codes", "default_reference", "factor_codes", "factor_values",
    "first_appearance", "format_value", "guess_kind", "is_blank", "order_values",
    "outcome_meaning", "n_distinct",
    "small_integers", "split_codes", "too_many_values", "value_counts_coded",
]

FactorKind = Literal["domain", "prompt", "model"]
KINDS: tuple[str, ...] = get_args(FactorKind)

MISSING_VALUE = "(missing)"
#: A factor with more distinct values than this is refused: it is free text or an id.
MAX_FACTOR_VALUES = 1000
#: Columns with at most this many distinct values are suggested as factors.
SUGGEST_MAX_VALUES = 100

#: A value named like a control group: the default reference (and "outside reference"
#: rows of nesting).
REFERENCE_PATTERN = re.compile(
    r"^(none|no|base|baseline|control|neutral|default|n/?a|unknown)$|^no[ _-]", re.IGNORECASE
)
#: Words of a column name that suggest a model factor / a prompt factor.
MODEL_WORDS = ("model", "seed", "temperature", "temp", "checkpoint", "provider", "decoding",
               "llm", "engine", "system", "cohort")
PROMPT_WORDS = ("prompt", "style", "cot", "format", "template", "instruction", "polarity",
                "condition", "shot", "question", "framing", "language", "stage", "scenario")
#: Words of a replicate index's name: rows repeating one prompt (``docs/structure.md``).
REPLICATE_WORDS = ("sample", "samples", "seed", "seeds", "run", "replicate", "replicates",
                   "rep", "repeat", "repetition", "trial", "draw", "attempt", "iteration",
                   "epoch")


def is_blank(value: Any) -> bool:
    """Whether a cell holds no text: None, ``pd.NA``, NaN, or blank once stripped."""
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) \
        or not str(value).strip()


def format_value(value: Any) -> str:
    """A factor value as its string (``7.0`` -> ``"7"``, missing -> ``"(missing)"``)."""
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


def value_counts_coded(series: pd.Series) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Every row's code, the string value of each code and each code's row count, in one
    pass over the rows (what checking and applying a design need).

    A categorical column (a dictionary-encoded Parquet column, or one pandas made
    categorical) is not factorised again: its own codes serve, with the missing value at
    code -1, i.e. the *last* entry of ``labels`` and ``counts``. Other columns, and
    categoricals whose categories collide once written as text (``1`` and ``"1"``), go
    through :func:`factor_values`.

    Returns
    -------
    (codes, labels, counts)
        ``codes`` an integer array (``labels[codes[i]]`` is row i's value, negative codes
        counting from the end), ``labels`` the strings (``"(missing)"`` for a missing
        value), ``counts`` the rows per label (0 for a category no row has). The labels
        with a positive count are the values present; their order of first appearance is
        :func:`first_appearance`.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        raw = series.cat.codes.to_numpy()
        labels = [format_value(c) for c in series.cat.categories] + [MISSING_VALUE]
        if len(set(labels)) == len(labels):
            counts = np.bincount(raw, minlength=len(labels) - 1) if not (raw < 0).any() \
                else np.bincount(np.where(raw < 0, len(labels) - 1, raw),
                                 minlength=len(labels))
            counts = np.pad(counts, (0, len(labels) - len(counts)))
            return raw, labels, counts
    codes, values = factor_values(series)
    codes = codes.to_numpy()
    return codes, values, np.bincount(codes, minlength=len(values))


def n_distinct(series: pd.Series) -> int:
    """``series.nunique()`` (missing values left out); of a categorical, the number of its
    categories that some row has, counted from the codes (``nunique`` hashes every row's
    code: 17 ms at 1M rows, issue 44 item 3)."""
    if not isinstance(series.dtype, pd.CategoricalDtype):
        return int(series.nunique())
    codes = series.cat.codes.to_numpy()
    codes = codes[codes >= 0] if len(codes) and codes.min() < 0 else codes
    return int(np.count_nonzero(np.bincount(codes, minlength=len(series.cat.categories))))


def first_appearance(codes: np.ndarray, labels: Sequence[str]) -> list[str]:
    """The labels of :func:`value_counts_coded` present in ``codes``, in order of first
    appearance (as :func:`factor_values` lists them)."""
    return [labels[c] for c in pd.unique(codes)]


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


#: Mixed-radix keys past this many possible combinations are Python ints (no overflow).
_INT64_KEYS = 2**62


def combine_codes(codes: Sequence[np.ndarray], sizes: Sequence[int], *,
                  n: int | None = None) -> np.ndarray:
    """One key per row from several factors' codes (mixed radix: the first factor is the
    most significant digit); ``sizes`` are the factors' numbers of values (at least 1).
    The keys sort like the code tuples. ``int64``, or Python ints (object) when the
    combinations exceed 2**62; ``n``: the row count when ``codes`` is empty."""
    big = math.prod(sizes) >= _INT64_KEYS
    key = np.zeros(len(codes[0]) if len(codes) else (n or 0), dtype=object if big else np.int64)
    for c, size in zip(codes, sizes, strict=True):
        key = key * size + (np.asarray(c).astype(object) if big else c)
    return key


def split_codes(keys: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    """The factors' codes of :func:`combine_codes` keys (``int64`` arrays)."""
    keys = np.asarray(keys)
    if keys.dtype != object and len(sizes) and math.prod(sizes) < _INT64_KEYS:
        return [c.astype(np.int64, copy=False) for c in np.unravel_index(keys, tuple(sizes))]
    out = []
    rest = keys
    for size in reversed(sizes):
        out.append((rest % size).astype(np.int64))
        rest = rest // size
    return out[::-1]


def order_values(values: Iterable[str]) -> list[str]:
    """Values in display order: numerically if all are numbers, else case-insensitively
    with ``"(missing)"`` last."""
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


def guess_kind(column: str) -> FactorKind:
    """Kind suggested by a column's name (model words, prompt words, else domain)."""
    words = re.split(r"[^a-z0-9]+", column.lower())
    joined = column.lower()
    if any(w in words for w in MODEL_WORDS) or "model" in joined:
        return "model"
    if any(w in words or w in joined for w in PROMPT_WORDS):
        return "prompt"
    return "domain"


_HARM_WORDS = ("deviation", "deviates", "deviated", "biased", "bias", "harmful", "harm",
               "toxic", "stereotyped", "stereotypical", "incorrect", "wrong", "error",
               "unsafe", "refused", "failure", "failed")
_SUCCESS_WORDS = ("correct", "accuracy", "acc", "accurate", "right", "success", "passed",
                  "pass", "safe", "match", "matches")


def outcome_meaning(column: str) -> str | None:
    """``"harm"`` (1 = deviation), ``"success"`` (0 = deviation) or None, from the name.

    ``is_correct``, ``correct``, ``accuracy`` -> ``"success"``; ``biased``, ``deviation``,
    ``harmful``, ``is_incorrect`` -> ``"harm"`` (harm words are checked first).
    """
    words = [w for w in re.split(r"[^a-z0-9]+", column.lower()) if w]
    if any(w in _HARM_WORDS for w in words):
        return "harm"
    if any(w in _SUCCESS_WORDS for w in words):
        return "success"
    return None


def check_frame(frame: Any, what: str) -> None:
    """Raise :class:`AnalysisError` unless ``frame`` is a DataFrame with rows and columns."""
    if not isinstance(frame, pd.DataFrame):
        raise AnalysisError(f"{what} needs the results table as a pandas DataFrame (for "
                            f"example from analysis.load_results), not "
                            f"{'nothing' if frame is None else type(frame).__name__}.")
    if frame.shape[1] == 0:
        raise AnalysisError("The results table has no columns.")
    if len(frame) == 0:
        raise AnalysisError("The results table has no rows: there is nothing to analyse.")


def too_many_values(column: str, n: int) -> str:
    """The message refusing a factor column with ``n`` distinct values."""
    return (f"Column {column!r} has {n:,} distinct values: that is free text or an id, not a "
            f"factor (a factor has at most {MAX_FACTOR_VALUES:,} values). Choose another column "
            "or derive a coarser one.")


def small_integers(x: np.ndarray) -> np.ndarray | None:
    """``x - min(x)`` as ``int16`` when every value is an integer within 2^15 of the
    smallest (0/1 answers, judge scores, counts), else None. A stable sort of it orders the
    rows exactly as a stable sort of ``x`` (same ties, same order), by radix."""
    if not len(x):
        return None
    lo, hi = float(x.min()), float(x.max())
    if not (lo.is_integer() and hi - lo < 2 ** 15 and max(-lo, hi) < 2 ** 52):
        return None
    small = (x - lo).astype(np.int16)
    return small if np.array_equal(small + lo, x) else None  # exact for integers
