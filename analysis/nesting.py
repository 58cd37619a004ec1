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
from analysis.design import _REFERENCE_PATTERN, default_reference, factor_values
from analysis.errors import AnalysisError

_COLUMNS = [DETERMINANT, DEPENDENT, N_DETERMINANT_VALUES, N_DEPENDENT_VALUES, NESTING_KIND]


def _n_distinct(*codes: np.ndarray) -> int:
    key = np.zeros(len(codes[0]), dtype=np.int64)
    for c in codes:
        key = key * (int(c.max()) + 1 if len(c) else 1) + c
    return len(np.unique(key))


def _determines(a: np.ndarray, b: np.ndarray) -> bool:
    return len(a) > 0 and _n_distinct(a, b) == _n_distinct(a)


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
    tables) (and the rows left hold at least two
    values of each), the pair is ``nested outside reference``: in SSQA a template fixes
    the gender of all rows but its base prompt ("no gender"); in BBQ a subcategory fixes
    its category except for the value "none" that several categories share.
    Factors with a single observed value are reported once as ``constant``.

    Parameters
    ----------
    frame
        The results table.
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
    ref_code: dict[str, list[int]] = {}
    sizes: dict[str, int] = {}
    for f in factors:
        c, values = factor_values(frame[f])
        codes[f] = c.to_numpy(dtype=np.int64)
        sizes[f] = len(np.unique(codes[f]))
        ref = (references or {}).get(f) or default_reference(frame[f])
        ref_code[f] = [i for i, v in enumerate(values)
                       if v == ref or _REFERENCE_PATTERN.search(v.strip())]
    rows = [{DETERMINANT: None, DEPENDENT: f, N_DETERMINANT_VALUES: 0, N_DEPENDENT_VALUES: 1,
             NESTING_KIND: "constant"} for f in factors if sizes[f] == 1]
    live = [f for f in factors if sizes[f] > 1]
    for i, a in enumerate(live):
        for b in live[i + 1:]:
            a_fixes_b = _determines(codes[a], codes[b])
            b_fixes_a = _determines(codes[b], codes[a])
            if a_fixes_b and b_fixes_a:
                rows.append(_row(a, b, sizes, "equivalent"))
            elif a_fixes_b or b_fixes_a:
                rows.append(_row(a, b, sizes, "nested") if a_fixes_b
                            else _row(b, a, sizes, "nested"))
            else:
                for det, dep in ((a, b), (b, a)):
                    if _nested_outside_reference(codes[det], codes[dep], ref_code[det],
                                                 ref_code[dep]):
                        rows.append(_row(det, dep, sizes, "nested outside reference"))
    return pd.DataFrame(rows, columns=_COLUMNS)


def _nested_outside_reference(det: np.ndarray, dep: np.ndarray, det_ref: list[int],
                              dep_ref: list[int]) -> bool:
    """Whether det fixes dep once the rows at either factor's control values are set aside."""
    off_dep, off_det = ~np.isin(dep, dep_ref), ~np.isin(det, det_ref)
    for keep in (off_dep, off_det):
        if keep.all() or not keep.any():
            continue
        if len(np.unique(dep[keep])) >= 2 and len(np.unique(det[keep])) >= 2 and _determines(
                det[keep], dep[keep]):
            return True
    return False


def _row(det: str, dep: str, sizes: Mapping[str, int], kind: str) -> dict:
    return {DETERMINANT: det, DEPENDENT: dep, N_DETERMINANT_VALUES: sizes[det],
            N_DEPENDENT_VALUES: sizes[dep], NESTING_KIND: kind}


def describe_nesting(row: pd.Series | Mapping) -> str:
    """A plain-language sentence for one row of :func:`find_nestings`."""
    det, dep, kind = row[DETERMINANT], row[DEPENDENT], row[NESTING_KIND]
    if kind == "constant":
        return (f"{dep} takes a single value in these rows: it cannot explain anything; "
                "leave it out of coverage and regression.")
    if kind == "equivalent":
        return (f"{det} and {dep} are the same grouping under two names "
                f"({row[N_DETERMINANT_VALUES]} values each): use one of them.")
    outside = (" (apart from the rows where it is at its reference value)"
               if kind == "nested outside reference" else "")
    return (f"{dep} is nested in {det}: each of the {row[N_DETERMINANT_VALUES]} values of {det} "
            f"fixes one of the {row[N_DEPENDENT_VALUES]} values of {dep}{outside}. Coverage over "
            "both counts impossible combinations as empty, and a regression with both is "
            f"collinear: keep {det} or {dep}, not both.")
