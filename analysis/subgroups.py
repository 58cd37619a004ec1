"""Subgroups of factor values, their deviation rates and log disparity (``methods.md`` s. 2).

A *k-level subgroup* fixes the values of k of the chosen factors. Everything here works
from the cell table (:func:`analysis.cells.cell_table`): a subgroup's ``n`` and
``deviations`` are sums over the cells it contains, and the rows outside it ("not g")
are the totals minus the subgroup, so no pass over the raw rows is needed.

Per subgroup g, with the 2x2 table

=========  ==========  ==============
           deviating   not deviating
=========  ==========  ==============
g          a           b
not g      c           d
=========  ==========  ==============

the log disparity ``LD(g) = logit(a / (a + b)) - logit(c / (c + d))`` is the log odds
ratio ``log(a d / (b c))``. Decisions (see ``docs/subgroups.md``):

- **Continuity correction**: when any of a, b, c, d is 0, 0.5 is added to all four
  cells (Haldane-Anscombe) for LD, its CI and the Wald p-value; flagged in
  ``continuity_corrected``. Rates are always reported uncorrected.
- **CI**: Woolf's log odds ratio interval, ``LD +- z * sqrt(1/a + 1/b + 1/c + 1/d)``;
  where the p-value is Fisher's, the exact conditional (Cornfield) interval on the
  uncorrected counts (:func:`conditional_ld_interval`), which never excludes 0 while
  Fisher's p is above the level (issue 38).
- **p-value**: ``test="auto"`` (default): Fisher's exact two-sided p-value on the
  uncorrected counts where the subgroup is flagged ``small_n`` or its table has a zero
  cell (where the Wald test has little power and a poor null distribution), the Wald z
  test of LD = 0 elsewhere (it agrees with the CI: p < 0.05 exactly when the 95 % CI
  excludes 0). ``"wald"`` and ``"fisher"`` use one test for every row. The ``test``
  column names the test behind each p-value.
- **Undefined LD**: a subgroup that is the whole table (nothing outside it), or a table
  whose outcome never or always deviates, has no log odds ratio: LD, CI and p are NaN
  and ``ld_undefined`` is set; such rows take no part in the multiple-testing family.
- **Small n**: flagged when ``n < min_n`` (30) or the smallest expected count of the
  2x2 table is below ``min_expected`` (5), where the normal approximation is poor.
- **Identical subgroups**: two subgroups with the same rows (a factor with one value
  after a subset, nested factors: ``template = 6, gender = female`` is ``template = 6``)
  are one test. The first in table order (lowest level first) represents them; the
  others get ``duplicate_of`` (its label) and the same p-values.
  :func:`distinct_subgroups` keeps one row each and names the others in ``same_rows_as``.
- **Multiple testing**: Benjamini-Hochberg over the distinct subgroups with a p-value
  (each set of rows counted once); duplicates take their representative's value.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal, get_args

import numpy as np
import pandas as pd

from analysis.clusters import SmallSample, check_small_sample, reference_df, resolve_cluster
from analysis.columns import (
    CI_HIGH,
    CI_LOW,
    CONTINUITY_CORRECTED,
    DESIGN_EFFECT,
    DEVIATION_RATE,
    DEVIATIONS,
    DF,
    DUPLICATE_OF,
    LD_UNDEFINED,
    LEVEL,
    LOG_DISPARITY,
    N_CLUSTERS,
    P_ADJUSTED,
    P_VALUE,
    RATE_OUTSIDE,
    SAME_ROWS_AS,
    SMALL_N,
    STD_ERR,
    SUBGROUP,
    TEST,
    N,
)
from analysis.errors import AnalysisError
from analysis.multiple_testing import adjust_p, benjamini_hochberg, check_method
from analysis.options.subgroups import SubgroupsOptions
from analysis.values import combine_codes, factor_codes, split_codes

if TYPE_CHECKING:
    from analysis.subgroup_codes import ClusterGrid

__all__ = [
    "HALDANE", "MIN_EXPECTED", "MIN_N", "TESTS", "Test", "benjamini_hochberg",
    "cluster_robust_ld", "conditional_ld_interval", "disparity_stats", "distinct_subgroups",
    "fisher_exact_pvalues", "rest_log_disparity",
    "ld_cluster_variance", "ld_satterthwaite_df", "subgroup_counts",
    "subgroups",
    "uncertainty_label", "SubgroupsInfo",
]


Test = Literal["auto", "wald", "fisher"]
TESTS: tuple[str, ...] = get_args(Test)
#: Continuity correction added to every cell of a 2x2 table with a zero cell.
HALDANE = 0.5
#: Subgroups with fewer rows than this are flagged ``small_n`` (the option's default).
MIN_N: int = SubgroupsOptions.default("min_n")
#: ... as are those whose 2x2 table has an expected count below this.
MIN_EXPECTED: float = SubgroupsOptions.default("min_expected")
#: Columns a subgroup table puts beside the factor columns (a factor may not be named so).
_OWN_COLUMNS = (LEVEL, SUBGROUP, N, DEVIATIONS, DEVIATION_RATE, RATE_OUTSIDE, LOG_DISPARITY,
                CI_LOW, CI_HIGH, P_VALUE, P_ADJUSTED, TEST, SMALL_N, CONTINUITY_CORRECTED,
                LD_UNDEFINED, DUPLICATE_OF, SAME_ROWS_AS, DESIGN_EFFECT, N_CLUSTERS, DF)
#: A grouping with at most this many possible combinations is counted with bincount.
_DENSE_LIMIT = 1 << 22


# --- counting subgroups from cells --------------------------------------------------------
def _check_cells(cells: pd.DataFrame, factors: Sequence[str], *, outcome: bool = True) -> None:
    if not factors:
        raise AnalysisError("Choose at least one factor for the subgroups.")
    if len(set(factors)) < len(factors):
        raise AnalysisError("A factor is listed twice.")
    missing = [f for f in factors if f not in cells.columns]
    if missing:
        raise AnalysisError(f"Not columns of the cell table: {', '.join(missing)}.")
    from analysis.names import check_no_clash

    check_no_clash(factors, reserved=_OWN_COLUMNS)
    needed = [N, DEVIATIONS] if outcome else [N]
    absent = [c for c in needed if c not in cells.columns]
    if absent:
        raise AnalysisError(
            f"The cell table lacks {', '.join(absent)}: subgroups need an outcome (build the "
            "cells with analysis.cells.cell_table on a table with a deviation column)."
        )
    if len(cells) == 0 or int(cells[N].sum()) == 0:
        raise AnalysisError("There are no rows with an outcome to form subgroups from.")


def _group(codes: list[np.ndarray], sizes: list[int], weights: list[np.ndarray]
           ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Sum each weight (the first is n) over cells sharing the given codes; observed
    groups only."""
    total = math.prod(sizes)
    n = weights[0]
    if total <= max(_DENSE_LIMIT, 4 * len(n)):
        key = combine_codes(codes, sizes, n=len(n))
        sums = [np.bincount(key, weights=w, minlength=total) for w in weights]
        uniq = np.flatnonzero(sums[0])
        sums = [x[uniq] for x in sums]
        out_codes = split_codes(uniq, sizes)
    else:  # too many possible combinations for a dense count: group the code tuples
        stacked = np.column_stack(codes)
        uniq_rows, inverse = np.unique(stacked, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        sums = [np.bincount(inverse, weights=w, minlength=len(uniq_rows)) for w in weights]
        out_codes = [uniq_rows[:, j] for j in range(len(codes))]
    return out_codes, [np.rint(x).astype(np.int64) for x in sums]


class _DenseMarginals:
    """Marginal count tables of dense weight tensors (n, deviations, ...) over all factors.

    Each marginal is summed from its smallest already computed parent (the table with
    one more factor, the smallest one), so the full tensor is read only by the first
    few reductions and the level-1..3 tables come from small intermediate ones. Used
    when the full grid of value combinations has at most ``_DENSE_LIMIT`` entries. The
    first weight is n: a combination is observed when its n is positive.
    """

    def __init__(self, codes: list[np.ndarray], sizes: list[int], weights: list[np.ndarray]):
        self.sizes = sizes
        n = len(weights[0])
        key = np.ravel_multi_index(codes, sizes) if codes else np.zeros(n, np.int64)
        total = math.prod(sizes)
        full = tuple(range(len(sizes)))
        self.tables = {full: [np.bincount(key, weights=w, minlength=total).reshape(sizes)
                              for w in weights]}

    def table(self, axes: tuple[int, ...]) -> list[np.ndarray]:
        if axes not in self.tables:
            absent = [j for j in range(len(self.sizes)) if j not in axes]
            j = min(absent, key=lambda a: self.sizes[a])
            parent = tuple(sorted((*axes, j)))
            pos = parent.index(j)
            self.tables[axes] = [t.sum(axis=pos) for t in self.table(parent)]
        return self.tables[axes]

    def counts(self, axes: tuple[int, ...]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        tables = self.table(axes)
        flat = np.flatnonzero(tables[0])
        codes = list(np.unravel_index(flat, tables[0].shape))
        return codes, [np.rint(t.ravel()[flat]).astype(np.int64) for t in tables]


def subgroup_counts(
    cells: pd.DataFrame,
    factors: Sequence[str],
    *,
    levels: Sequence[int],
    within: str | None = None,
    extra: Sequence[np.ndarray] = (),
    return_extra: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, list[np.ndarray]]:
    """``n`` and ``deviations`` of every observed subgroup at the given levels.

    Parameters
    ----------
    cells
        A cell table (:func:`analysis.cells.cell_table`) over ``factors`` (and
        ``within``), with ``n`` and ``deviations``.
    factors
        The chosen factors, in order. A level-k subgroup fixes k of them.
    levels
        Which levels to form (each between 1 and ``len(factors)``).
    within
        A factor fixed in every subgroup on top of the k chosen ones (the comparison
        factor of the eCDF, e.g. the model); ``None`` for none.
    extra
        Further integer weights per cell, summed per subgroup in the same pass (the
        row-set signatures of :func:`subgroups`); with ``return_extra``, returned second
        (one array per weight, aligned with the table's rows).

    Returns
    -------
    pandas.DataFrame
        One row per observed subgroup, ordered by level, then factor combination (in the
        order of ``factors``), then values. Columns: ``within`` (when given), one per
        factor (categorical; NaN where the subgroup does not fix that factor),
        ``level`` (k), ``subgroup`` (a label such as ``"gender = female, cot = yes"``),
        ``n`` and ``deviations`` (int64).
    """
    factors = list(factors)
    if within is not None and within in factors:
        raise AnalysisError(f"The comparison factor {within!r} is also among the chosen "
                            "factors; choose it in one place only.")
    _check_cells(cells, factors + ([within] if within else []))
    bad = [k for k in levels if not 1 <= int(k) <= len(factors)]
    if bad or not levels:
        raise AnalysisError(f"Subgroup levels go from 1 to {len(factors)} (the number of "
                            f"chosen factors); got {', '.join(map(str, bad or levels))}.")
    all_factors = ([within] if within else []) + factors
    coded = {f: factor_codes(cells[f]) for f in all_factors}
    weights = [cells[N].to_numpy(dtype=float), cells[DEVIATIONS].to_numpy(dtype=float),
               *(np.asarray(w, dtype=float) for w in extra)]
    sizes = [max(len(coded[f][1]), 1) for f in all_factors]
    dense = (_DenseMarginals([coded[f][0] for f in all_factors], sizes, weights)
             if math.prod(sizes) <= _DENSE_LIMIT else None)
    parts = []
    for k in sorted({int(k) for k in levels}):
        for combo in itertools.combinations(factors, k):
            keys = ([within] if within else []) + list(combo)
            if dense is not None:
                codes, sums = dense.counts(tuple(all_factors.index(f) for f in keys))
            else:
                codes, sums = _group([coded[f][0] for f in keys],
                                     [max(len(coded[f][1]), 1) for f in keys], weights)
            labels = None
            for f, c in zip(combo, codes[len(keys) - k:], strict=True):
                values = np.array([f"{f} = {v}" for v in coded[f][1]], dtype=object)
                labels = values[c] if labels is None else labels + ", " + values[c]
            parts.append({"codes": dict(zip(keys, codes, strict=True)), "level": k,
                          "label": labels, "sums": sums})
    size = sum(len(p["sums"][0]) for p in parts)
    out = pd.DataFrame(index=pd.RangeIndex(size))
    for f in all_factors:
        codes = np.concatenate([p["codes"].get(f, np.full(len(p["sums"][0]), -1))
                                for p in parts])
        out[f] = pd.Categorical.from_codes(codes, categories=coded[f][1], ordered=True)
    out[LEVEL] = np.concatenate([np.full(len(p["sums"][0]), p["level"]) for p in parts])
    out[SUBGROUP] = np.concatenate([p["label"] for p in parts])
    out[N] = np.concatenate([p["sums"][0] for p in parts])
    out[DEVIATIONS] = np.concatenate([p["sums"][1] for p in parts])
    if not return_extra:
        return out
    return out, [np.concatenate([p["sums"][2 + j] for p in parts]) for j in range(len(extra))]


# --- the 2x2 statistics -------------------------------------------------------------------
def _bisect(moves_lo: Callable[[np.ndarray], np.ndarray], lo: np.ndarray, hi: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Halve every open integer interval (``hi - lo > 1``) until all are closed: ``lo``
    moves to the midpoint where ``moves_lo(mid)`` holds, else ``hi`` does."""
    while True:
        open_ = hi - lo > 1
        if not open_.any():
            return lo, hi
        mid = (lo + hi) // 2
        up = moves_lo(mid)
        lo = np.where(open_ & up, mid, lo)
        hi = np.where(open_ & ~up, mid, hi)


def fisher_exact_pvalues(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray
                         ) -> np.ndarray:
    """Two-sided Fisher exact p-values of many 2x2 tables ``[[a, b], [c, d]]`` at once.

    The same rule as :func:`scipy.stats.fisher_exact` (sum of the probabilities of the
    tables no more likely than the observed one, with a relative tolerance of 1e-14),
    vectorised: the far tail is found by a binary search on the unimodal hypergeometric
    probabilities, ~log2(n) array steps instead of a Python loop over tables. Tables with
    an empty row or column get p = 1.
    """
    from scipy import stats  # lazy: keeps the CLI's start-up fast

    a, b, c, d = (np.asarray(x, dtype=np.int64) for x in (a, b, c, d))
    row1, row2, col1 = a + b, c + d, a + c
    total = row1 + row2
    p = np.ones(a.shape, dtype=float)
    live = (row1 > 0) & (row2 > 0) & (col1 > 0) & (b + d > 0)
    if not live.any():
        return p
    a_, m_, n_, k_ = a[live], total[live], row1[live], col1[live]
    dist = stats.hypergeom

    def pmf(x: np.ndarray, sel: np.ndarray | slice = slice(None)) -> np.ndarray:
        return dist.pmf(x, m_[sel], n_[sel], k_[sel])

    mode = ((k_ + 1) * (n_ + 1)) // (m_ + 2)
    p_obs = pmf(a_)
    p_mode = pmf(mode)
    target = p_obs * (1 + 1e-14)
    result = np.ones(len(a_), dtype=float)
    at_mode = np.abs(p_obs - p_mode) / np.maximum(p_obs, p_mode) <= 1e-14
    lo_support = np.maximum(0, k_ - (m_ - n_))
    hi_support = np.minimum(k_, n_)

    below = ~at_mode & (a_ < mode)  # far tail above the mode
    if below.any():
        sel = np.flatnonzero(below)
        lo, hi = mode[sel].copy(), hi_support[sel] + 1  # pmf(lo) > target >= pmf(hi)
        lo, hi = _bisect(lambda mid: pmf(mid, sel) > target[sel], lo, hi)
        result[sel] = (dist.cdf(a_[sel], m_[sel], n_[sel], k_[sel])
                       + dist.sf(lo, m_[sel], n_[sel], k_[sel]))
    above = ~at_mode & (a_ > mode)  # far tail below the mode
    if above.any():
        sel = np.flatnonzero(above)
        lo, hi = lo_support[sel] - 1, mode[sel].copy()  # pmf(lo) <= target < pmf(hi)
        lo, hi = _bisect(lambda mid: ~(pmf(mid, sel) > target[sel]), lo, hi)
        result[sel] = (dist.sf(a_[sel] - 1, m_[sel], n_[sel], k_[sel])
                       + dist.cdf(hi - 1, m_[sel], n_[sel], k_[sel]))
    p[live] = np.minimum(result, 1.0)
    return p


def conditional_ld_interval(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray,
                            confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact conditional (Cornfield) interval of the log odds ratio of 2x2 tables
    ``[[a, b], [c, d]]`` on the uncorrected counts: the log of
    :func:`scipy.stats.contingency.odds_ratio` ``(kind="conditional")``'s
    ``confidence_interval`` (-inf / inf where a bound is 0 / infinite; NaN for a table
    with an empty row or column). The interval shown beside Fisher's p-value: it
    excludes 0 only when Fisher's two-sided p is below ``1 - confidence`` (it inverts the
    two one-sided conditional tests; Fisher's p is at most twice the smaller of them), so
    the two never contradict each other that way; Woolf's interval could (issue 38)."""
    from scipy.stats.contingency import odds_ratio

    lo, hi = np.full(len(a), np.nan), np.full(len(a), np.nan)
    for i, table in enumerate(zip(a, b, c, d, strict=True)):
        x = np.asarray(table, dtype=np.int64).reshape(2, 2)
        if (x.sum(axis=0) == 0).any() or (x.sum(axis=1) == 0).any():
            continue
        iv = odds_ratio(x, kind="conditional").confidence_interval(confidence)
        with np.errstate(divide="ignore"):
            lo[i], hi[i] = np.log(iv.low), np.log(iv.high)
    return lo, hi


def rest_log_disparity(a: np.ndarray, n: np.ndarray, total_a: np.ndarray, total_n: np.ndarray
                       ) -> np.ndarray:
    """LD of subgroups (``a`` deviating of ``n`` rows) against the rest of their table
    (``total_a`` of ``total_n``), broadcast: 0.5 added to the four cells where one is 0
    (:data:`HALDANE`); NaN where the subgroup holds every row or none, or the outcome
    never or always deviates. The point estimate of the bootstraps' replicates
    (:mod:`analysis.bootstrap`, :func:`analysis.compare.paired_bootstrap`)."""
    cells = np.stack(np.broadcast_arrays(a, n - a, total_a - a, (total_n - n) - (total_a - a)))
    shift = np.where((cells <= 0).any(axis=0), HALDANE, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ld = (np.log(cells[0] + shift) + np.log(cells[3] + shift)
              - np.log(cells[1] + shift) - np.log(cells[2] + shift))
    undefined = (total_n - n <= 0) | (total_a <= 0) | (total_a >= total_n)
    return np.where(undefined | (n <= 0), np.nan, ld)


def disparity_stats(
    deviations: np.ndarray,
    n: np.ndarray,
    *,
    total_deviations: int,
    total_n: int,
    test: Test = "auto",
    confidence: float = 0.95,
    min_n: int = MIN_N,
    min_expected: float = MIN_EXPECTED,
    exact_ci: bool = False,
) -> pd.DataFrame:
    """Log disparity, CI, p-value and flags of subgroups against the rows outside them.

    Parameters
    ----------
    deviations, n
        Deviations and rows of each subgroup.
    total_deviations, total_n
        The same over the whole table the subgroups are taken from.
    test, confidence, min_n, min_expected
        See :func:`subgroups`.
    exact_ci
        Where the p-value is Fisher's, the exact conditional interval
        (:func:`conditional_ld_interval`, ~20 ms a table) instead of Woolf's; what
        :func:`subgroups` shows. Off for callers that use only the p-values (judge-noise
        replicates, verdicts).

    Returns
    -------
    pandas.DataFrame
        Columns ``deviation_rate``, ``rate_outside``, ``log_disparity``, ``ci_low``,
        ``ci_high``, ``p_value``, ``test`` ("wald" / "fisher"; None where LD is
        undefined), ``small_n``, ``continuity_corrected``, ``ld_undefined`` (see
        :func:`subgroups`).
    """
    # scipy.special, not scipy.stats: the same functions (norm.ppf is ndtri, norm.sf(x) is
    # ndtr(-x)) without the ~2 s import of scipy.stats (docs/performance.md)
    from scipy.special import ndtr, ndtri

    if test not in TESTS:
        raise AnalysisError(f"Unknown test {test!r}: use one of {', '.join(TESTS)}.")
    if not 0 < confidence < 1:
        raise AnalysisError(f"The confidence level must be between 0 and 1, got {confidence}.")
    a = np.asarray(deviations, dtype=float)
    n = np.asarray(n, dtype=float)
    total_n, total_d = float(total_n), float(total_deviations)
    b = n - a
    c = total_d - a
    d = (total_n - n) - c
    if (np.minimum.reduce([a, b, c, d]) < 0).any() or (n <= 0).any():
        raise AnalysisError("Subgroup counts do not fit the totals (a subgroup with more rows "
                            "or deviations than the table it is taken from).")
    outside = total_n - n
    undefined = (outside == 0) | (total_d == 0) | (total_d == total_n)
    corrected = (np.minimum.reduce([a, b, c, d]) == 0) & ~undefined
    shift = np.where(corrected, HALDANE, 0.0)
    a_, b_, c_, d_ = a + shift, b + shift, c + shift, d + shift
    with np.errstate(divide="ignore", invalid="ignore"):
        ld = np.log(a_) + np.log(d_) - np.log(b_) - np.log(c_)
        se = np.sqrt(1 / a_ + 1 / b_ + 1 / c_ + 1 / d_)
        rate_outside = np.where(outside > 0, c / outside, np.nan)
        expected = np.minimum(n, outside) * min(total_d, total_n - total_d) / total_n
    z = float(ndtri(0.5 + confidence / 2))
    small = (n < min_n) | (expected < min_expected)
    if test == "wald":
        exact = np.zeros(len(a), dtype=bool)
    elif test == "fisher":
        exact = ~undefined
    else:
        exact = (small | corrected) & ~undefined
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2 * ndtr(-(np.abs(ld) / se))
    lo_ci, hi_ci = ld - z * se, ld + z * se
    if exact.any():
        p[exact] = fisher_exact_pvalues(a[exact], b[exact], c[exact], d[exact])
        if exact_ci:
            lo_ci[exact], hi_ci[exact] = conditional_ld_interval(
                a[exact], b[exact], c[exact], d[exact], confidence)
    used = np.where(undefined, None, np.where(exact, "fisher", "wald")).astype(object)
    nan = np.where(undefined, np.nan, 1.0)
    return pd.DataFrame({
        DEVIATION_RATE: a / n,
        RATE_OUTSIDE: rate_outside,
        LOG_DISPARITY: ld * nan,
        CI_LOW: lo_ci * nan,
        CI_HIGH: hi_ci * nan,
        P_VALUE: p * nan,
        TEST: used,
        SMALL_N: small,
        CONTINUITY_CORRECTED: corrected,
        LD_UNDEFINED: undefined,
    })


def subgroups(
    cells: pd.DataFrame,
    factors: Sequence[str],
    *,
    max_level: int | None = None,
    test: Test = "auto",
    confidence: float = 0.95,
    min_n: int = MIN_N,
    min_expected: float = MIN_EXPECTED,
    cluster: str | None = None,
    small_sample: SmallSample = "cr2",
    adjust: str = "bh",
    cluster_grid: ClusterGrid | None = None,
    return_info: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, SubgroupsInfo]:
    """Every subgroup of levels 1..``max_level`` with its log disparity (``methods.md`` s. 2).

    Parameters
    ----------
    cells
        The cell table of the (already subset) results over at least ``factors``
        (:func:`analysis.cells.cell_table`), with ``n`` and ``deviations``.
    factors
        The chosen factors, in order (the sunburst's rings follow this order).
    max_level
        Highest level: 1 = one factor fixed, 2 = pairs, 3 = triples ... (default 2, or 1
        with a single factor).
    test
        ``"auto"`` (default: Fisher's exact test for small-n subgroups and tables with a
        zero cell, Wald elsewhere), ``"wald"`` (z = LD / SE, consistent with the CI) or
        ``"fisher"`` (exact conditional test on the uncorrected 2x2 counts).
    confidence
        Level of the Woolf confidence interval for LD.
    min_n, min_expected
        A subgroup is flagged ``small_n`` when it has fewer than ``min_n`` rows or its
        2x2 table has an expected count below ``min_expected``.
    cluster
        A column of ``cells`` whose rows are correlated (the template). Then the CI and
        p-value of every subgroup are cluster-robust (:func:`cluster_robust_ld`: the
        bias-reduced sandwich standard error of LD, t on the subgroup's own
        Satterthwaite df, :func:`ld_satterthwaite_df`; G - 1 with ``"cr1"``), ``test`` is
        ``"cluster t"`` (``"cluster z"`` with ``small_sample="none"``), and the table gains
        ``design_effect`` (robust / Woolf standard error), ``n_clusters`` (clusters
        holding the subgroup's rows) and ``df``. A subgroup whose rows, or the rows
        outside it, lie in fewer than 2 clusters (or whose df is below
        :data:`analysis.clusters.DF_FLOOR`) has no cluster-robust test: CI, p and df are
        NaN (a note names them). ``test="fisher"`` is refused (it assumes independent
        rows). A constant cluster, or one row per value, is not used (note). With
        ``return_info``, a :class:`SubgroupsInfo` says what was done.
    small_sample
        ``"cr2"`` (default), ``"cr1"`` or ``"none"``: covariance and reference of the
        robust test (:mod:`analysis.clusters`).
    adjust
        The adjustment of ``p_adjusted`` over the distinct subgroups
        (:data:`analysis.multiple_testing.METHODS`: ``"bh"``, the default, ``"by"``,
        ``"holm"``, ``"bonferroni"``); ``SubgroupsInfo.adjust`` names it.
    cluster_grid
        The per-(factor combination, cluster) counts of the rows behind ``cells``
        (:func:`analysis.subgroup_codes.cluster_grid`, for ``cluster`` =
        ``cluster_grid.cluster``): ``cells`` then need only the factors (no factors x
        cluster cell table); without it, :func:`analysis.subgroup_codes.cell_grid` of
        ``cells``.

    Returns
    -------
    pandas.DataFrame
        One row per observed subgroup (see :func:`subgroup_counts` for the order), with
        columns: one per factor (its value, NaN where not fixed), ``level``,
        ``subgroup`` (label), ``n``, ``deviations``, ``deviation_rate`` (d/n,
        uncorrected), ``rate_outside`` (deviation rate of the rows outside the
        subgroup), ``log_disparity`` (LD = logit(rate) - logit(rate outside)),
        ``ci_low`` / ``ci_high`` (Woolf CI of LD; the exact conditional one where the
        p-value is Fisher's), ``p_value`` (H0: LD = 0),
        ``p_adjusted`` (``adjust``, default Benjamini-Hochberg, over the distinct
        subgroups with a p-value),
        ``test`` (the test behind ``p_value``: "wald" or "fisher"), ``small_n``,
        ``continuity_corrected`` (0.5 added to the four cells because one was 0) and
        ``ld_undefined`` (no rows outside the subgroup, or an outcome that never or
        always deviates: LD, CI and p are NaN) and ``duplicate_of`` (the label of an
        earlier subgroup with exactly the same rows, else None; see
        :func:`distinct_subgroups`).

    Raises
    ------
    AnalysisError
        No factor, unknown factor, a level outside 1..len(factors), a cell table
        without outcome, an unknown test.
    """
    factors = list(factors)
    _check_cells(cells, factors)
    check_small_sample(small_sample)
    check_method(adjust)
    notes: list[str] = []
    if cluster_grid is not None and cluster != cluster_grid.cluster:
        raise AnalysisError(f"The cluster grid is of {cluster_grid.cluster!r}, not of "
                            f"{cluster!r}.")
    if cluster is not None:
        judged = cells if cluster_grid is None else cluster_grid.cluster_frame()
        choice = resolve_cluster(judged, cluster, declared=False, rows=judged[N])
        cluster = choice.column
        notes.extend(choice.notes)
    if cluster is not None and test == "fisher":
        raise AnalysisError("Fisher's exact test assumes independent rows; with a cluster "
                            f"({cluster}) the p-values are cluster-robust. Choose test "
                            "'auto' or 'wald', or analyse the rows as independent "
                            "(no cluster).")
    if max_level is None:
        max_level = min(2, len(factors))
    if not isinstance(max_level, (int, np.integer)) or not 1 <= max_level <= len(factors):
        raise AnalysisError(f"The highest subgroup level must be between 1 and {len(factors)} "
                            f"(the number of chosen factors), got {max_level!r}.")
    counts, signatures = subgroup_counts(cells, factors, levels=range(1, int(max_level) + 1),
                                         extra=_signature_weights(cells), return_extra=True)
    total_n = int(cells[N].sum())
    total_d = int(cells[DEVIATIONS].sum())
    st = disparity_stats(counts[DEVIATIONS].to_numpy(), counts[N].to_numpy(),
                         total_deviations=total_d, total_n=total_n, test=test,
                         confidence=confidence, min_n=min_n, min_expected=min_expected,
                         exact_ci=cluster is None)
    for col in st.columns:
        counts[col] = st[col].to_numpy()
    if cluster is not None:
        if cluster_grid is None:
            from analysis.subgroup_codes import cell_grid

            cluster_grid = cell_grid(cells, factors, cluster, max_level=int(max_level))
        robust, robust_notes = cluster_robust_ld(cells, factors, counts, cluster=cluster,
                                                 confidence=confidence,
                                                 small_sample=small_sample,
                                                 grid=cluster_grid, return_notes=True)
        for col in (CI_LOW, CI_HIGH, P_VALUE, TEST):
            counts[col] = robust[col].to_numpy()
        counts.insert(counts.columns.get_loc(TEST) + 1, DESIGN_EFFECT,
                      robust[DESIGN_EFFECT].to_numpy())
        counts.insert(counts.columns.get_loc(TEST) + 2, N_CLUSTERS,
                      robust[N_CLUSTERS].to_numpy())
        counts.insert(counts.columns.get_loc(TEST) + 3, DF, robust[DF].to_numpy())
        notes.extend(robust_notes)
    rep = _representatives(counts, signatures)
    p = counts[P_VALUE].to_numpy()
    distinct = rep == np.arange(len(counts))
    adjusted = np.full(len(counts), np.nan)
    adjusted[distinct] = adjust_p(p[distinct], adjust)
    counts.insert(counts.columns.get_loc(P_VALUE) + 1, P_ADJUSTED, adjusted[rep])
    labels = counts[SUBGROUP].to_numpy(dtype=object)
    counts[DUPLICATE_OF] = np.where(distinct, None, labels[rep]).astype(object)
    g = cluster_grid.g if cluster else 0
    method = ("" if not cluster else "satterthwaite" if small_sample == "cr2"
              else "normal" if small_sample == "none" else "G - 1")
    if not return_info:
        return counts
    return counts, SubgroupsInfo(
        cluster=cluster, n_clusters=g, notes=tuple(notes), adjust=adjust,
        reference_df=reference_df(small_sample, g) if method == "G - 1" else None,
        df_method=method, small_sample=small_sample if cluster else None)


@dataclass(frozen=True)
class SubgroupsInfo:
    """What :func:`subgroups` did (``return_info=True``): the ``cluster`` used (None:
    independent rows) and its ``n_clusters``, the ``notes``, the ``adjust`` method of
    ``p_adjusted``, the robust test's ``df_method`` (``"satterthwaite"``, ``"G - 1"``,
    ``"normal"``, ``""`` without a cluster), ``reference_df`` (G - 1 for ``"cr1"``) and
    ``small_sample``. :meth:`as_dict` is what :func:`uncertainty_label` reads."""

    cluster: str | None
    n_clusters: int
    notes: tuple[str, ...]
    adjust: str
    reference_df: int | None
    df_method: str
    small_sample: str | None

    def as_dict(self) -> dict:
        """The fields as a dict (``dataclasses.asdict``, notes as a list)."""
        return {**asdict(self), "notes": list(self.notes)}


def uncertainty_label(attrs: Mapping | SubgroupsInfo, design=None) -> str:
    """How the CIs and p-values of a subgroup table were computed, in words (from its
    :class:`SubgroupsInfo` or that as a mapping); "independent rows" says too when the
    design's cluster is not used."""
    if isinstance(attrs, SubgroupsInfo):
        attrs = attrs.as_dict()
    cluster = attrs.get("cluster")
    if cluster:
        df = attrs.get("reference_df")
        from analysis.clusters import SMALL_SAMPLE_LABELS

        how = SMALL_SAMPLE_LABELS.get(attrs.get("small_sample") or "cr2", "")
        ref = ("t with each subgroup's Satterthwaite df (column df)"
               if attrs.get("df_method") == "satterthwaite"
               else f"t with {df} df" if df is not None else "normal reference")
        return (f"cluster-robust over {attrs.get('n_clusters', 0):,} values of {cluster} "
                f"({how}, {ref})")
    declared = getattr(design, "cluster", None)
    return "independent rows (no clustering)" + (
        f"; the design's cluster {declared} is not used" if declared else "")


def ld_cluster_variance(a: np.ndarray, n: np.ndarray, d: np.ndarray, t: np.ndarray, *,
                        small_sample: SmallSample = "cr2"
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Cluster-robust variance of the log disparity, vectorised over the leading axes.

    Parameters
    ----------
    a, n
        Deviations and rows of the subgroup in each cluster (last axis: the G clusters).
    d, t
        Deviations and rows of each cluster (broadcast against ``a``).
    small_sample
        ``"cr2"``, ``"cr1"`` or ``"none"`` (:mod:`analysis.clusters`).

    Returns
    -------
    (ld, variance, inside, outside)
        LD (continuity-corrected where the 2x2 table has a zero cell), its variance, and
        the clusters holding rows inside / outside the subgroup.

    Notes
    -----
    LD is the coefficient of ``[row in g]`` in the logit of deviation on that indicator,
    so with ``p1``, ``p0`` the rates inside and outside (``m`` rows outside),
    ``v1 = n p1 (1 - p1)``, ``v0 = m p0 (1 - p0)`` and per cluster c the residual sums
    ``e1_c = a_c - p1 n_c`` and ``e0_c = (d_c - a_c) - p0 (t_c - n_c)``, the sandwich is
    ``K * sum_c (e1_c / v1 - e0_c / v0)^2`` with ``K = G / (G - 1) * (N - 1) / (N - 2)``
    (CR1, = statsmodels' ``cov_type="cluster"``). CR2 scales each residual sum by
    ``(1 - h)^(-1/2)`` with ``h`` the cluster's share of its group's rows (``n_c / n``
    inside, ``(t_c - n_c) / m`` outside: the leverage of the saturated model) and
    ``K = 1`` (Bell & McCaffrey 2002). :func:`ld_satterthwaite_df` gives the degrees of
    freedom of the CR2 test.
    """
    ld, variance, inside, outside, _ = _ld_cluster(a, n, d, t, small_sample, with_df=False)
    return ld, variance, inside, outside


def ld_satterthwaite_df(a: np.ndarray, n: np.ndarray, d: np.ndarray, t: np.ndarray
                        ) -> np.ndarray:
    """Bell-McCaffrey / Satterthwaite degrees of freedom of the CR2 test of each LD.

    Arguments as :func:`ld_cluster_variance` (last axis: the G clusters). Returns the df
    of the t reference of ``LD / SE`` with the CR2 standard error (Bell & McCaffrey
    2002; Pustejovsky & Tipton 2018, clubSandwich's ``coef_test(vcov = "CR2",
    test = "Satterthwaite")`` on the logistic fit of the subgroup's indicator).

    Notes
    -----
    With the working model (the saturated logit, so ``Var(y) = p (1 - p)``) the CR2
    variance is ``sum_c (p_c' e_c)^2`` for fixed vectors ``p_c``, and the df is
    ``2 E[V]^2 / Var[V] = (sum_c P_cc)^2 / sum_(c,k) P_ck^2`` with
    ``P = [p_c' (I - H)_ck p_k]``. The hat matrix of the two-group model is ``1 / n`` on
    pairs of rows inside the subgroup, ``1 / m`` on pairs outside, 0 across, so with
    ``alpha_c = n_c / n``, ``beta_c = (t_c - n_c) / m``, ``u_c = alpha_c (1 -
    alpha_c)^(-1/2)``, ``w_c = beta_c (1 - beta_c)^(-1/2)`` and ``r = v1 / v0``, ``v1 P``
    has the diagonal ``alpha_c + r beta_c`` (it sums to ``1 + r``: CR2 is unbiased under
    the working model) and the off-diagonal ``-(u_c u_k + r w_c w_k)``; everything is
    O(G) per subgroup. A subgroup concentrated in one cluster has df near 1, one spread
    evenly over many clusters df near G - 1.
    """
    return _ld_cluster(a, n, d, t, "cr2", with_df=True)[4]


def _ld_cluster(a, n, d, t, small_sample, *, with_df: bool):
    a, n = np.asarray(a, dtype=float), np.asarray(n, dtype=float)
    d, t = np.broadcast_to(d, a.shape).astype(float), np.broadcast_to(t, a.shape).astype(float)
    big_a, big_n = a.sum(-1), n.sum(-1)
    total_d, total_n = d.sum(-1), t.sum(-1)
    m = total_n - big_n
    c = total_d - big_a
    shift = np.where(np.minimum.reduce([big_a, big_n - big_a, c, m - c]) == 0, HALDANE, 0.0)
    g = a.shape[-1]
    df = None
    with np.errstate(divide="ignore", invalid="ignore"):
        p1 = (big_a + shift) / (big_n + 2 * shift)
        p0 = (c + shift) / (m + 2 * shift)
        ld = np.log(p1) - np.log1p(-p1) - np.log(p0) + np.log1p(-p0)
        v1 = (big_n * p1 * (1 - p1))[..., None]
        v0 = (m * p0 * (1 - p0))[..., None]
        e1 = a - p1[..., None] * n
        e0 = (d - a) - p0[..., None] * (t - n)
        if small_sample == "cr2":
            h1 = n / big_n[..., None]
            h0 = (t - n) / m[..., None]
            s1 = 1 / np.sqrt(np.clip(1 - h1, 1e-10, None))
            s0 = 1 / np.sqrt(np.clip(1 - h0, 1e-10, None))
            u = e1 * s1 / v1 - e0 * s0 / v0
            k = 1.0
            if with_df:
                r = (v1 / v0)[..., 0]
                uu, ww = h1 * s1, h0 * s0
                su2, sw2, suw = (uu * uu).sum(-1), (ww * ww).sum(-1), (uu * ww).sum(-1)
                diag = h1 + r[..., None] * h0
                off = ((su2 * su2 - (uu ** 4).sum(-1))
                       + 2 * r * (suw * suw - (uu * uu * ww * ww).sum(-1))
                       + r * r * (sw2 * sw2 - (ww ** 4).sum(-1)))
                df = (1 + r) ** 2 / ((diag * diag).sum(-1) + off)
        else:
            u = e1 / v1 - e0 / v0
            k = g / (g - 1) * (total_n - 1) / (total_n - 2)
        variance = k * np.sum(u * u, axis=-1)
    inside = (n > 0).sum(-1)
    outside = (t - n > 0).sum(-1)
    return ld, variance, inside, outside, df


def cluster_robust_ld(cells: pd.DataFrame, factors: Sequence[str], table: pd.DataFrame, *,
                      cluster: str, confidence: float = 0.95,
                      small_sample: SmallSample = "cr2", grid: ClusterGrid | None = None,
                      return_notes: bool = False
                      ) -> pd.DataFrame | tuple[pd.DataFrame, list[str]]:
    """Cluster-robust CI and p-value of the log disparity of each subgroup of ``table``.

    The variance is :func:`ld_cluster_variance` (default CR2); the statistic
    ``LD / SE`` is compared with t on G - 1 df (normal with ``small_sample="none"``) and
    the interval is ``LD +- t * SE``, so p < 1 - confidence exactly when the interval
    excludes 0. The per-cluster counts of every subgroup are the marginals of ``grid``
    (:func:`analysis.subgroup_codes.cluster_grid` of the rows; without it
    :func:`analysis.subgroup_codes.cell_grid` of ``cells``, a cell table over the
    factors and ``cluster``), in blocks of subgroups x clusters (clusters in the sorted
    order of their labels, so that every engine sums in the same order).

    Returns
    -------
    pandas.DataFrame
        Aligned with ``table``: ``ci_low``, ``ci_high``, ``p_value``, ``test``
        (``"cluster t"`` / ``"cluster z"``), ``design_effect`` (robust / Woolf SE),
        ``n_clusters`` (clusters with rows of the subgroup), ``std_err``; with
        ``return_notes``, also the notes (what was done, the few-cluster and
        not-estimable warnings).
    """
    from analysis.clusters import (
        DF_FLOOR,
        MIN_SUPPORTING_CLUSTERS,
        SMALL_SAMPLE_LABELS,
        critical_value,
        describe,
        few_clusters_note,
        two_sided_p,
    )

    if grid is None:
        from analysis.subgroup_codes import cell_grid

        grid = cell_grid(cells, list(factors), cluster,
                         max_level=int(table[LEVEL].max()) if len(table) else None)
        if grid is None:
            raise AnalysisError(f"The cell table has no column {cluster!r} to cluster by.")
    t_n, t_d = grid.totals()
    g = len(t_n)
    size = len(table)
    var = np.full(size, np.nan)
    satterthwaite = small_sample == "cr2"
    df = np.full(size, np.nan if small_sample == "none" else float(g - 1))
    inside, outside = np.zeros(size, np.int64), np.zeros(size, np.int64)
    for rows, a, n in grid.blocks(table):
        _, var[rows], inside[rows], outside[rows], block_df = _ld_cluster(
            a, n, t_d, t_n, small_sample, with_df=satterthwaite)
        if satterthwaite:
            df[rows] = block_df
    estimate = table[LOG_DISPARITY].to_numpy(float)
    se = np.sqrt(np.maximum(var, 0.0))
    a, n = table[DEVIATIONS].to_numpy(float), table[N].to_numpy(float)
    b_, c = n - a, t_d.sum() - a
    d = t_n.sum() - n - c
    shift = np.where(np.minimum.reduce([a, b_, c, d]) == 0, HALDANE, 0.0)
    woolf = np.sqrt(1 / (a + shift) + 1 / (b_ + shift) + 1 / (c + shift) + 1 / (d + shift))
    supported = ((inside >= MIN_SUPPORTING_CLUSTERS) & (outside >= MIN_SUPPORTING_CLUSTERS)
                 & np.isfinite(estimate))
    low_df = supported & satterthwaite & ~(df >= DF_FLOOR)
    testable = supported & ~low_df & (se > 0)
    se = np.where(testable, se, np.nan)
    df = np.where(supported, df, np.nan)
    p = np.full(size, np.nan)
    half = np.full(size, np.nan)
    if testable.any():
        ref = None if small_sample == "none" else df[testable]
        p[testable] = two_sided_p(estimate[testable] / se[testable], ref)
        half[testable] = critical_value(confidence, ref) * se[testable]
    name = "cluster t" if small_sample != "none" else "cluster z"
    out = pd.DataFrame({
        CI_LOW: estimate - half, CI_HIGH: estimate + half, P_VALUE: p,
        TEST: np.where(np.isfinite(estimate), name, None).astype(object),
        DESIGN_EFFECT: se / woolf, N_CLUSTERS: inside.astype(np.int64), DF: df,
        STD_ERR: se})
    how = (f"{SMALL_SAMPLE_LABELS['cr2']}, t with each subgroup's Satterthwaite df "
           "(Bell-McCaffrey; column df)" if satterthwaite else describe(small_sample, g))
    notes = [f"CIs and p-values are cluster-robust over the {g:,} values of {cluster} "
             f"({how}); design_effect = robust / Woolf standard error, n_clusters = the "
             f"values of {cluster} holding the subgroup's rows"]
    few = (_few_clusters_satterthwaite(g, cluster) if satterthwaite
           else few_clusters_note(g, cluster, small_sample))
    if few:
        notes.append(few)
    notes += _not_estimable_notes(table[SUBGROUP].to_numpy(dtype=object), inside, outside,
                                  df, np.isfinite(estimate), supported, low_df, g,
                                  cluster)
    return (out, notes) if return_notes else out


#: Subgroups named one by one in the "not estimable" note (the rest are counted).
_NAMED = 8


def _few_clusters_satterthwaite(g: int, cluster: str) -> str | None:
    """The "few clusters" note of the per-subgroup Satterthwaite reference (G < 30)."""
    from analysis.clusters import FEW_CLUSTERS

    if g >= FEW_CLUSTERS:
        return None
    return (f"few clusters: only {g} values of {cluster} (fewer than {FEW_CLUSTERS}); "
            "cluster-robust standard errors are themselves uncertain: each subgroup's "
            "Satterthwaite df (column df) says how many clusters stand behind it (a "
            "subgroup on 2-3 clusters has about 1-3 df and a wide interval)"
            + ("; with fewer than 10 clusters read the p-values as rough" if g < 10 else ""))


def _not_estimable_notes(labels: np.ndarray, inside: np.ndarray, outside: np.ndarray,
                         df: np.ndarray, defined: np.ndarray, supported: np.ndarray,
                         low_df: np.ndarray, g: int, cluster: str) -> list[str]:
    """Name the subgroups without a cluster-robust test: on fewer than 2 clusters (or the
    rows outside them), or with df below the floor; the first :data:`_NAMED` by label."""
    from analysis.clusters import DF_FLOOR, MIN_SUPPORTING_CLUSTERS

    notes = []
    lonely = np.flatnonzero(defined & ~supported)
    if len(lonely):
        def one(i: int) -> str:
            if inside[i] < MIN_SUPPORTING_CLUSTERS:
                return f"{labels[i]} occurs in {inside[i]} of {g:,} values of {cluster}"
            return f"the rows outside {labels[i]} lie in {outside[i]} value of {cluster}"
        shown = "; ".join(one(int(i)) for i in lonely[:_NAMED])
        more = f" (and {len(lonely) - _NAMED} more)" if len(lonely) > _NAMED else ""
        notes.append(f"not estimable: {shown}{more}: a disparity resting on one value of "
                     f"{cluster} cannot be told apart from that value's own effect, so it "
                     "has no cluster-robust test (CI and p left empty, not a finding)")
    low = np.flatnonzero(low_df)
    if len(low):
        shown = "; ".join(f"{labels[i]} ({inside[i]} values of {cluster}, df {df[i]:.2g})"
                          for i in low[:_NAMED])
        more = f" (and {len(low) - _NAMED} more)" if len(low) > _NAMED else ""
        notes.append(f"not estimable: {shown}{more}: Satterthwaite df below {DF_FLOOR:g}, "
                     "no p-value (CI and p left empty, not a finding)")
    return notes


def _signature_weights(cells: pd.DataFrame) -> list[np.ndarray]:
    """Two random integer weights per cell, below 2^b with b = min(32, 52 - log2(cells)),
    so that their sums over any subgroup stay exact in floating point (below 2^52)."""
    rng = np.random.default_rng(20240607)
    bits = min(32, 52 - int(np.ceil(np.log2(len(cells) + 1))))
    return [rng.integers(0, 1 << bits, len(cells)) for _ in range(2)]


def _representatives(table: pd.DataFrame, signatures: Sequence[np.ndarray]) -> np.ndarray:
    """For each subgroup, the position of the first subgroup with exactly the same rows.

    Two subgroups have the same rows exactly when they contain the same observed cells.
    Their signature is ``n`` and the sums of two random integer cell weights
    (:func:`_signature_weights`, summed in the counting pass); two different cell sets
    of equal n share a signature with probability about 2^-2b (2^-64 up to a million
    cells).
    """
    keys = [pd.Series(table[N].to_numpy()), *(pd.Series(x) for x in signatures)]
    position = pd.Series(np.arange(len(table)))
    return position.groupby(keys, sort=False).transform("first").to_numpy()


def distinct_subgroups(table: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct set of rows: duplicates dropped, named on their representative.

    Parameters
    ----------
    table
        Output of :func:`subgroups`.

    Returns
    -------
    pandas.DataFrame
        The rows whose ``duplicate_of`` is None, without that column, plus
        ``same_rows_as``: the labels of the dropped subgroups with the same rows, joined
        by ``"; "`` (empty when there are none). What the CLI and the page's table
        report; the sunburst keeps the full table (its rings need every prefix).
    """
    if DUPLICATE_OF not in table.columns:
        raise AnalysisError("Expected a table from analysis.subgroups.subgroups.")
    dup = table[DUPLICATE_OF]
    same: dict[str, list[str]] = {}
    for label, of in zip(table[SUBGROUP], dup, strict=True):
        if of is not None and not (isinstance(of, float) and np.isnan(of)):
            same.setdefault(of, []).append(str(label))
    out = table[dup.isna()].drop(columns=[DUPLICATE_OF]).reset_index(drop=True)
    out[SAME_ROWS_AS] = ["; ".join(same.get(lab, [])) for lab in out[SUBGROUP]]
    return out
