"""Multiple testing: one kernel for every analysis that adjusts p-values.

``adjust_p(p, method)`` gives the adjusted p-values of one family of tests for each method
of :data:`METHODS` (the statsmodels ``multipletests`` methods of the same names:
``fdr_bh``, ``fdr_by``, ``holm``, ``bonferroni``, ``hommel``;
``tests/analysis/test_multiple_testing.py`` checks each against it). NaN p-values (tests
not run) stay NaN and are not counted in the family. :data:`LABELS` and :data:`NAMES` are
what a column header and a sentence call a method, so a view names the adjustment the
numbers were computed with (issue 37); :func:`decision_levels` the thresholds at which a
method's decisions can change (the eCDF's sequential KS splits stop on them).

This module is the one list of methods: the ``adjust`` options' choices
(``analysis.options.common.ADJUST_METHODS``, Compare's ``ADJUSTMENTS``), the CLI's
``--adjust``, the pages' widgets and the report's headers follow from it. It imports
numpy inside the functions, so the options (and the CLI's parser) can read the names
without it.

The arithmetic of BH, BY, Holm and Bonferroni is written out rather than calling
statsmodels: the same floating-point operations on sorted arrays (the numbers of the
existing tables stay bit-identical) without statsmodels' import and per-call overhead in
the judge-noise and bootstrap loops, which adjust thousands of families. Hommel (a
closed procedure, less simple to write out) is statsmodels' own.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Literal, get_args

from analysis.errors import AnalysisError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["FAMILY_WISE", "LABELS", "METHODS", "Method", "NAMES", "adjust_p", "adjusted_label",
           "benjamini_hochberg", "check_method", "decision_levels", "holm", "methods_text"]

Method = Literal["bh", "by", "holm", "bonferroni", "hommel"]
#: The adjustments, by the name an option takes.
METHODS: tuple[str, ...] = get_args(Method)
#: Short names for column headers ("p (Holm)").
LABELS: dict[str, str] = {"bh": "BH", "by": "BY", "holm": "Holm", "bonferroni": "Bonferroni",
                          "hommel": "Hommel"}
#: Full names for sentences.
NAMES: dict[str, str] = {"bh": "Benjamini-Hochberg", "by": "Benjamini-Yekutieli",
                         "holm": "Holm", "bonferroni": "Bonferroni", "hommel": "Hommel"}
#: The methods that control the family-wise error rate (the others: the false discovery
#: rate).
FAMILY_WISE: frozenset[str] = frozenset({"holm", "bonferroni", "hommel"})


def methods_text(methods: Sequence[str] = METHODS, default: str | None = None) -> str:
    """The methods for an option's help: ``"bh (default: Benjamini-Hochberg, false
    discovery rate), by (Benjamini-Yekutieli), holm, bonferroni or hommel (family-wise)"``
    (the order given; ``default`` is marked)."""
    def one(m: str) -> str:
        kind = "family-wise" if m in FAMILY_WISE else "false discovery rate"
        name = "" if NAMES[m].lower() == m else f"{NAMES[m]}, "
        return f"{m} ({'default: ' if m == default else ''}{name}{kind})"

    parts = [one(m) for m in methods]
    return ", ".join(parts[:-1]) + f" or {parts[-1]}" if len(parts) > 1 else parts[0]


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
    import numpy as np

    p = np.asarray(p_values, dtype=float)
    finite = np.flatnonzero(~np.isnan(p))
    order = finite[np.argsort(p[finite], kind="mergesort" if stable else None)]
    return p, order, np.full(p.shape, np.nan)


def benjamini_hochberg(p_values: np.ndarray | Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg (false discovery rate) adjusted p-values.

    ``p_adj_(i) = min_{j >= i} min(1, m p_(j) / j)`` over the m finite p-values sorted
    ascending (the step-up procedure; statsmodels' ``fdr_bh``).
    """
    import numpy as np

    p, order, out = _finite_sorted(p_values, stable=True)
    m = len(order)
    if m:
        scaled = p[order] * m / np.arange(1, m + 1)
        out[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return out


def _benjamini_yekutieli(p_values: np.ndarray | Sequence[float]) -> np.ndarray:
    """Benjamini-Yekutieli: BH times ``sum_{k<=m} 1/k`` (any dependence; ``fdr_by``)."""
    import numpy as np

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
    import numpy as np

    p, order, out = _finite_sorted(p_values, stable=False)
    m = len(order)
    if m:
        adjusted = np.maximum.accumulate(p[order] * np.arange(m, 0, -1))
        adjusted[adjusted > 1] = 1
        out[order] = adjusted
    return out


def _bonferroni(p_values: np.ndarray | Sequence[float]) -> np.ndarray:
    """Bonferroni: ``min(1, m p)`` (family-wise; ``bonferroni``)."""
    import numpy as np

    p = np.asarray(p_values, dtype=float)
    m = int((~np.isnan(p)).sum())
    return np.minimum(p * m, 1.0)


def _hommel(p_values: np.ndarray | Sequence[float]) -> np.ndarray:
    """Hommel's closed procedure (family-wise, valid under positive dependence;
    statsmodels' ``hommel`` on the finite p-values)."""
    from statsmodels.stats.multitest import multipletests

    p, order, out = _finite_sorted(p_values, stable=True)
    if len(order):
        out[order] = multipletests(p[order], method="hommel")[1]
    return out


_KERNELS = {"bh": benjamini_hochberg, "by": _benjamini_yekutieli, "holm": holm,
            "bonferroni": _bonferroni, "hommel": _hommel}


def _steps(method: str, alpha: float, k: int) -> list[float]:
    i = range(1, k + 1)
    harmonic = sum(1 / j for j in i)
    return {"bh": lambda: [alpha * j / k for j in i],
            "by": lambda: [alpha * j / (k * harmonic) for j in i],
            "holm": lambda: [alpha / (k - j + 1) for j in i],
            "bonferroni": lambda: [alpha / k],
            # Hommel compares p_(i) with c alpha / j (1 <= c <= j <= k; each ratio once)
            "hommel": lambda: [alpha * float(r) for r in
                               {Fraction(c, j) for j in i for c in range(1, j + 1)}]}[method]()


def decision_levels(method: str, alpha: float, k: int) -> list[float]:
    """The levels at which a p-value's decision can change for ``alpha`` and ``k`` tests
    adjusted together by ``method``: ``alpha`` itself (the unadjusted p) and the
    method's step thresholds (``bh``: ``alpha * i / k``; ``by``: the same over
    ``sum(1 / j)``; ``holm``: ``alpha / (k - i + 1)``; ``bonferroni``: ``alpha / k``;
    ``hommel``: ``c * alpha / j``, ``1 <= c <= j <= k``), ascending.

    Examples
    --------
    >>> decision_levels("holm", 0.05, 2)
    [0.025, 0.05]
    """
    return sorted({float(v) for v in _steps(check_method(method), alpha, max(int(k), 1))}
                  | {float(alpha)})


def adjust_p(p_values: np.ndarray | Sequence[float], method: str = "bh") -> np.ndarray:
    """The adjusted p-values of one family by ``method`` (one of :data:`METHODS`).

    Raises
    ------
    AnalysisError
        An unknown method.
    """
    return _KERNELS[check_method(method)](p_values)
