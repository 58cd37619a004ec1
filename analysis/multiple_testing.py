"""Multiple testing: one kernel for every analysis that adjusts p-values.

``adjust_p(p, method)`` gives the adjusted p-values of one family of tests for each method
of :data:`METHODS` (the statsmodels ``multipletests`` methods of the same names:
``fdr_bh``, ``fdr_by``, ``holm``, ``bonferroni``; ``tests/analysis/test_multiple_testing.py``
checks each against it). NaN p-values (tests not run) stay NaN and are not counted in the
family. :data:`LABELS` and :data:`NAMES` are what a column header and a sentence call a
method, so a view names the adjustment the numbers were computed with (issue 37).

The methods' arithmetic is written out rather than calling statsmodels: the same
floating-point operations on sorted arrays (the numbers of the existing tables stay
bit-identical) without statsmodels' import and per-call overhead in the judge-noise and
bootstrap loops, which adjust thousands of families.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

from analysis.errors import AnalysisError

__all__ = ["LABELS", "METHODS", "Method", "NAMES", "adjust_p", "adjusted_label",
           "benjamini_hochberg", "check_method", "holm"]

Method = Literal["bh", "by", "holm", "bonferroni"]
#: The adjustments, by the name an option takes.
METHODS: tuple[str, ...] = get_args(Method)
#: Short names for column headers ("p (Holm)").
LABELS: dict[str, str] = {"bh": "BH", "by": "BY", "holm": "Holm", "bonferroni": "Bonferroni"}
#: Full names for sentences.
NAMES: dict[str, str] = {"bh": "Benjamini-Hochberg", "by": "Benjamini-Yekutieli",
                         "holm": "Holm", "bonferroni": "Bonferroni"}


def check_method(method: str, allowed: Sequence[str] = METHODS) -> str:
    """``method`` if it is one of ``allowed``, else an :class:`AnalysisError` naming them."""
    if method not in allowed:
        raise AnalysisError(f"Unknown p-value adjustment {method!r}: use one of "
                            f"{', '.join(allowed)}.")
    return method


def adjusted_label(method: str) -> str:
    """The header of an adjusted p-value column: ``p (BH)``, ``p (Holm)`` ..."""
    return f"p ({LABELS.get(method, method)})"


def _finite_sorted(p_values: np.ndarray | Sequence[float], *, stable: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p = np.asarray(p_values, dtype=float)
    finite = np.flatnonzero(~np.isnan(p))
    order = finite[np.argsort(p[finite], kind="mergesort" if stable else None)]
    return p, order, np.full(p.shape, np.nan)


def benjamini_hochberg(p_values: np.ndarray | Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg (false discovery rate) adjusted p-values.

    ``p_adj_(i) = min_{j >= i} min(1, m p_(j) / j)`` over the m finite p-values sorted
    ascending (the step-up procedure; statsmodels' ``fdr_bh``).
    """
    p, order, out = _finite_sorted(p_values, stable=True)
    m = len(order)
    if m:
        scaled = p[order] * m / np.arange(1, m + 1)
        out[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return out


def _benjamini_yekutieli(p_values: np.ndarray | Sequence[float]) -> np.ndarray:
    """Benjamini-Yekutieli: BH times ``sum_{k<=m} 1/k`` (any dependence; ``fdr_by``)."""
    p, order, out = _finite_sorted(p_values, stable=True)
    m = len(order)
    if m:
        c = np.sum(1.0 / np.arange(1, m + 1))
        scaled = p[order] * (m * c) / np.arange(1, m + 1)
        out[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return out


def holm(p_values: np.ndarray | Sequence[float]) -> np.ndarray:
    """Holm's step-down (family-wise) adjusted p-values: ``max_{j <= i} min(1,
    (m - j + 1) p_(j))`` (the floating-point operations of statsmodels' ``holm``)."""
    p, order, out = _finite_sorted(p_values, stable=False)
    m = len(order)
    if m:
        adjusted = np.maximum.accumulate(p[order] * np.arange(m, 0, -1))
        adjusted[adjusted > 1] = 1
        out[order] = adjusted
    return out


def _bonferroni(p_values: np.ndarray | Sequence[float]) -> np.ndarray:
    """Bonferroni: ``min(1, m p)`` (family-wise; ``bonferroni``)."""
    p = np.asarray(p_values, dtype=float)
    m = int((~np.isnan(p)).sum())
    return np.minimum(p * m, 1.0)


_KERNELS = {"bh": benjamini_hochberg, "by": _benjamini_yekutieli, "holm": holm,
            "bonferroni": _bonferroni}


def adjust_p(p_values: np.ndarray | Sequence[float], method: str = "bh") -> np.ndarray:
    """The adjusted p-values of one family by ``method`` (one of :data:`METHODS`).

    Raises
    ------
    AnalysisError
        An unknown method.
    """
    return _KERNELS[check_method(method)](p_values)
