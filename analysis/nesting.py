"""Functional dependencies between factors ("nested" factors).

When one factor's value is a function of another's (a template fixes the gender of
its subject; a stigma fixes its cluster), most combinations of the two are impossible:
coverage counts them as empty cells and a regression with both is collinear. This
module finds such pairs so the app and the CLI can say so (``docs/methods.md`` §1, §4).

Benchmarks often add control rows in which every domain factor sits at its
"none" value (SSQA's base prompts: no stigma, no gender). A template then fixes the
gender of all its other rows, yet shares the control value with every template. Such
pairs are reported as ``nested outside reference``: the dependency holds on every row
where the dependent factor is not at its reference value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from analysis.columns import (
    DEPENDENT,
    DETERMINANT,
    N_DEPENDENT_VALUES,
    N_DETERMINANT_VALUES,
    NESTING_KIND,
)
from analysis.errors import AnalysisError
from analysis.nesting_text import describe_nesting, nesting_columns  # words, re-exported
from analysis.values import REFERENCE_PATTERN, default_reference, factor_values

__all__ = ["describe_nesting", "find_nestings", "nesting_columns", "unnested_choice"]


_COLUMNS = [DETERMINANT, DEPENDENT, N_DETERMINANT_VALUES, N_DEPENDENT_VALUES, NESTING_KIND]


def _presence(a: np.ndarray, size_a: int, b: np.ndarray, size_b: int) -> np.ndarray:
    """Boolean (size_a, size_b) matrix: which value pairs occur (one bincount, O(rows))."""
    counts = np.bincount(a * size_b + b, minlength=size_a * size_b)
    return counts.reshape(size_a, size_b) > 0


def _determines(present: np.ndarray) -> bool:
    """Each occurring row value pairs with exactly one column value (and >= 2 of each occur)."""
    rows = present.any(axis=1)
    cols = present.any(axis=0)
    if rows.sum() < 2 or cols.sum() < 2:
        return False
    return bool((present[rows].sum(axis=1) == 1).all())


def find_nestings(
    frame: pd.DataFrame,
    factors: Sequence[str],
    *,
    references: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Pairs of factors where one determines the other in the rows of ``frame``.

    ``A`` determines ``B`` when every observed value of ``A`` occurs with exactly one
    value of ``B``. When that fails only because of rows where ``B`` is at a
    control value (its reference, or a value named like "none"/"no ..."/"base"), or
    where ``A`` is (one side at a time: setting both aside finds spurious pairs in small
    tables), the pair is ``nested outside reference``: in SSQA a template fixes
    the gender of all rows but its base prompt ("no gender"); in BBQ a subcategory fixes
    its category except for the value "none" that several categories share.
    Factors with a single observed value are reported once as ``constant``.

    Only which value pairs occur matters, so a cell table gives the same answer as the
    rows it was built from. Each pair costs one ``bincount`` over the rows.

    Parameters
    ----------
    frame
        The results table (or a cell table of it).
    factors
        Factor columns to examine.
    references
        Reference value per factor; by default :func:`analysis.design.default_reference`.

    Returns
    -------
    pandas.DataFrame
        One row per finding, columns ``determinant`` (missing for constants),
        ``dependent``, ``n_determinant_values``, ``n_dependent_values`` (observed) and
        ``kind``: ``nested`` (A determines B, not the reverse), ``nested outside
        reference`` (see above), ``equivalent`` (each determines the other: the same
        grouping under two names) or ``constant``.
    """
    missing = [f for f in factors if f not in frame.columns]
    if missing:
        raise AnalysisError(f"Not columns of the table: {', '.join(missing)}.")
    codes: dict[str, np.ndarray] = {}
    n_values: dict[str, int] = {}
    control: dict[str, np.ndarray] = {}
    sizes: dict[str, int] = {}
    references = {f: (references or {}).get(f) or default_reference(frame[f])
                  for f in factors}  # the most frequent value: read on every row
    frame = _distinct_rows(frame, factors)
    for f in factors:
        c, values = factor_values(frame[f])
        codes[f] = c.to_numpy(dtype=np.int64)
        n_values[f] = len(values)
        sizes[f] = int((np.bincount(codes[f], minlength=len(values)) > 0).sum())
        ref = references[f]
        control[f] = np.array([v == ref or bool(REFERENCE_PATTERN.search(v.strip()))
                               for v in values])
    rows = [{DETERMINANT: None, DEPENDENT: f, N_DETERMINANT_VALUES: 0, N_DEPENDENT_VALUES: 1,
             NESTING_KIND: "constant"} for f in factors if sizes[f] == 1]
    live = [f for f in factors if sizes[f] > 1]
    for i, a in enumerate(live):
        for b in live[i + 1:]:
            present = _presence(codes[a], n_values[a], codes[b], n_values[b])
            a_fixes_b, b_fixes_a = _determines(present), _determines(present.T)
            if a_fixes_b and b_fixes_a:
                rows.append(_row(a, b, sizes, "equivalent"))
            elif a_fixes_b or b_fixes_a:
                rows.append(_row(a, b, sizes, "nested") if a_fixes_b
                            else _row(b, a, sizes, "nested"))
            else:
                for det, dep, pres in ((a, b, present), (b, a, present.T)):
                    if _nested_outside_control(pres, control[det], control[dep]):
                        rows.append(_row(det, dep, sizes, "nested outside reference"))
    return pd.DataFrame(rows, columns=_COLUMNS)


#: From this many rows, :func:`find_nestings` of categorical factors reads the distinct
#: combinations of their codes first (a few thousand cells at 1M rows: issue 44 item 3).
DISTINCT_FROM_ROWS = 50_000


def _distinct_rows(frame: pd.DataFrame, factors: Sequence[str]) -> pd.DataFrame:
    """The first row of each distinct combination of ``factors``, in the table's order,
    when they are all categoricals of a large table (their codes combined into one
    integer, one scatter, no hashing of values); else ``frame``. The nestings are the
    same: they depend only on which value pairs occur and on the values' text."""
    if len(frame) < DISTINCT_FROM_ROWS or not factors or not all(
            isinstance(frame[f].dtype, pd.CategoricalDtype) for f in factors):
        return frame
    sizes = [len(frame[f].cat.categories) + 1 for f in factors]  # + a missing value
    if np.prod(np.asarray(sizes, dtype=float)) > DENSE_COMBINATIONS:
        return frame
    joint = np.zeros(len(frame), dtype=np.int64)
    for f, size in zip(factors, sizes, strict=True):
        joint *= size
        joint += frame[f].cat.codes.to_numpy() + 1
    first = np.full(int(np.prod(sizes)), len(frame), dtype=np.int64)
    first[joint[::-1]] = np.arange(len(frame) - 1, -1, -1)
    rows = np.sort(first[first < len(frame)])
    return frame[list(dict.fromkeys(factors))].iloc[rows]


#: Most combinations :func:`_distinct_rows` marks in one table (64 MB of row numbers).
DENSE_COMBINATIONS = 1 << 23


def _nested_outside_control(present: np.ndarray, det_control: np.ndarray,
                            dep_control: np.ndarray) -> bool:
    """Whether det (rows) fixes dep (columns) once one side's control values are set aside."""
    return bool(dep_control.any() and _determines(present[:, ~dep_control])) or bool(
        det_control.any() and _determines(present[~det_control, :]))


def _row(det: str, dep: str, sizes: Mapping[str, int], kind: str) -> dict:
    return {DETERMINANT: det, DEPENDENT: dep, N_DETERMINANT_VALUES: sizes[det],
            N_DEPENDENT_VALUES: sizes[dep], NESTING_KIND: kind}


def unnested_choice(frame: pd.DataFrame, candidates: Sequence[str], k: int, *,
                    references: Mapping[str, str] | None = None) -> list[str]:
    """Up to ``k`` of ``candidates``, in order, no two of them nested in each other.

    A candidate is skipped when :func:`find_nestings` reports it ``nested``, ``nested
    outside reference`` or ``equivalent`` with one already chosen, or ``constant``:
    defaults built this way never open a page on a pair such as template x gender.

    Parameters
    ----------
    frame
        The results table (or a cell table of it).
    candidates
        Factor columns in order of preference.
    k
        How many to choose at most.
    references
        Reference value per factor (see :func:`find_nestings`).
    """
    candidates = [f for f in dict.fromkeys(candidates) if f in frame.columns]
    if k <= 0 or not candidates:
        return []
    found = find_nestings(frame, candidates, references=references)
    constant = set(found.loc[found[NESTING_KIND] == "constant", DEPENDENT])
    linked = {frozenset((r[DETERMINANT], r[DEPENDENT]))
              for r in found.to_dict(orient="records") if r[NESTING_KIND] != "constant"}
    chosen: list[str] = []
    for f in candidates:
        if f in constant or any(frozenset((f, c)) in linked for c in chosen):
            continue
        chosen.append(f)
        if len(chosen) == k:
            break
    return chosen
