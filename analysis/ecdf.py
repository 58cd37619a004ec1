"""eCDF of subgroup deviation rates and the deviation metric (``methods.md`` s. 3).

The subgroups are the combinations of values of the chosen factors (by default all of
them at once; ``level=k`` takes every k of them), formed separately within each value of
a comparison factor (usually the model), from the cell table. Each subgroup contributes
one unweighted deviation rate; one eCDF per comparison value.

The deviation metric with ideal value C is the area between a curve's eCDF and the
ideal (a step at C): ``DM = int_0^p+ (C - Q(p)) dp + int_p+^1 (Q(p) - C) dp`` with Q the
empirical quantile function, which equals the mean absolute distance of the subgroup
values from C, ``DM = mean |x_i - C|``; that is how it is computed. Ties need no special
care (the eCDF simply jumps by the share of tied values), and a curve with a single
subgroup has ``DM = |x - C|``.

Two curves are compared with the two-sample Kolmogorov-Smirnov test; more than two,
pairwise with a Benjamini-Hochberg adjustment over the pairs. Without ties the p-value is
:func:`scipy.stats.ks_2samp`'s (exact for small samples, asymptotic otherwise). Rates of
subgroups are often tied (many zeros), and those p-values assume continuous data: with
ties they are conservative. With a tie in the pooled rates the p-value is the permutation
distribution of D given the observed (tied) values: exact, by enumerating every split of
the pooled values, when there are at most :data:`EXACT_LIMIT` splits, else from
``n_resamples`` seeded random splits, ``(b + 1) / (m + 1)``. The ``method`` column says
which. A curve with a single subgroup cannot be compared (its eCDF is one step): such
pairs are refused with a note, not reported as D = 1, p = 1.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.columns import (
    DEVIATION_METRIC,
    DEVIATION_RATE,
    DEVIATIONS,
    GROUP_A,
    GROUP_B,
    MC_SE,
    MEAN_RATE,
    METHOD,
    N_A,
    N_B,
    N_RESAMPLES,
    N_SUBGROUPS,
    NOTE,
    P_ADJUSTED,
    P_VALUE,
    SHARE_ABOVE_CUTOFF,
    STATISTIC,
    N,
)
from analysis.errors import AnalysisError
from analysis.multiple_testing import adjust_p, check_method, decision_levels
from analysis.options.ecdf import EcdfOptions
from analysis.subgroups import subgroup_counts

__all__ = [
    "CUTOFF", "DEFAULT_RESAMPLES", "EXACT_LIMIT", "KS_ALPHA", "curve_values", "decision_levels",
    "deviation_metric",
    "ecdf_steps", "ecdf_summary", "ks_permutation_pvalue", "ks_tail_bound", "ks_tests",
    "subgroup_rates",
]


#: The "no bias" cutoff on subgroup deviation rates used in clinical-trial fairness work
#: (the option's default).
CUTOFF: float = EcdfOptions.default("cutoff")
#: Ties: enumerate every split of the pooled values when there are at most this many.
EXACT_LIMIT = 20_000
#: Random splits of the KS permutation p-value (the ``ks_resamples`` option's default).
DEFAULT_RESAMPLES: int = EcdfOptions.default("ks_resamples")
#: The level the sequential KS test decides against (:func:`ks_tests`).
KS_ALPHA = 0.05


def subgroup_rates(
    cells: pd.DataFrame,
    factors: Sequence[str],
    *,
    by: str,
    level: int | None = None,
) -> pd.DataFrame:
    """One deviation rate per subgroup of ``factors``, within each value of ``by``.

    Parameters
    ----------
    cells
        Cell table over ``by`` and ``factors`` with ``n`` and ``deviations``
        (:func:`analysis.cells.cell_table`).
    factors
        Factors whose value combinations form the subgroups.
    by
        Comparison factor: one curve per value (e.g. ``"model"``).
    level
        Number of factors a subgroup fixes (every combination of ``level`` of the
        factors); default all of them (the cells of ``factors``).

    Returns
    -------
    pandas.DataFrame
        One row per observed (``by`` value, subgroup): columns ``by``, one per factor
        (NaN where not fixed), ``level``, ``subgroup``, ``n``, ``deviations`` and
        ``deviation_rate``.
    """
    factors = list(factors)
    level = len(factors) if level is None else level
    out = subgroup_counts(cells, factors, levels=[level], within=by)
    out[DEVIATION_RATE] = out[DEVIATIONS] / out[N]
    return out


def deviation_metric(values: Sequence[float] | np.ndarray, *, ideal: float = 0.0) -> float:
    """Area between the eCDF of ``values`` and the ideal step at ``ideal`` (= mean |x - C|).

    Raises
    ------
    AnalysisError
        No values, or a missing value among them.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise AnalysisError("The deviation metric needs at least one subgroup.")
    if np.isnan(x).any():
        raise AnalysisError("The deviation metric got a missing subgroup value.")
    return float(np.mean(np.abs(x - float(ideal))))


def ecdf_steps(values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct sorted values and the eCDF at each: ``F(x) = #{x_i <= x} / m``.

    Tied values give one step of height (number tied) / m.
    """
    x = np.sort(np.asarray(values, dtype=float))
    uniq, counts = np.unique(x, return_counts=True)
    return uniq, np.cumsum(counts) / len(x)


def curve_values(rates: pd.DataFrame, by: str) -> list[tuple[str, np.ndarray]]:
    """``(value of by, its subgroups' deviation rates)`` per curve, in the factor's order."""
    if by not in rates.columns or DEVIATION_RATE not in rates.columns:
        raise AnalysisError(f"Expected a table from subgroup_rates with columns {by!r} and "
                            f"{DEVIATION_RATE!r}.")
    col = rates[by]
    order = ([str(v) for v in col.cat.categories] if isinstance(col.dtype, pd.CategoricalDtype)
             else sorted(col.astype(str).unique()))
    keys = col.astype(str).to_numpy()
    values = rates[DEVIATION_RATE].to_numpy(dtype=float)
    return [(v, values[keys == v]) for v in order if (keys == v).any()]


def ecdf_summary(
    rates: pd.DataFrame,
    *,
    by: str,
    ideal: float = 0.0,
    cutoff: float = CUTOFF,
) -> pd.DataFrame:
    """Deviation metric and counts per curve.

    Parameters
    ----------
    rates
        Output of :func:`subgroup_rates`.
    by
        Its comparison factor.
    ideal
        The ideal value C of the deviation metric (0 for a deviation rate).
    cutoff
        Rates above it count in ``share_above_cutoff``.

    Returns
    -------
    pandas.DataFrame
        One row per value of ``by`` that has subgroups, in the factor's order: ``by``,
        ``n_subgroups``, ``deviation_metric`` (mean |rate - C|), ``mean_rate``
        (unweighted mean over subgroups), ``share_above_cutoff`` (share of subgroups with
        rate > cutoff).
    """
    rows = [{by: key, N_SUBGROUPS: len(x), DEVIATION_METRIC: deviation_metric(x, ideal=ideal),
             MEAN_RATE: float(np.mean(x)), SHARE_ABOVE_CUTOFF: float(np.mean(x > cutoff))}
            for key, x in curve_values(rates, by)]
    if not rows:
        raise AnalysisError("No subgroup has rows with an outcome: nothing to plot.")
    return pd.DataFrame(rows)


def _ks_d(labels: np.ndarray, last: np.ndarray, n_a: int, n_b: int) -> np.ndarray:
    """D of each row of 0/1 ``labels`` (1 = curve a) over the sorted pooled values;
    ``last`` holds the position of the last value of each tie block."""
    ca = np.cumsum(labels, axis=-1)[..., last]
    cb = (last + 1) - ca
    return np.max(np.abs(ca / n_a - cb / n_b), axis=-1)


def _ks_d_scaled(labels: np.ndarray, last: np.ndarray, n_a: int, n_b: int) -> np.ndarray:
    """``n_a * n_b * D`` of each row of boolean ``labels``, in integers (exact: D* >= D
    is decided without a floating-point tolerance)."""
    ca = np.cumsum(labels, axis=-1, dtype=np.int64 if len(last) >= 2**31 else np.int32)
    ca = ca[..., last].astype(np.int64)
    return np.max(np.abs(ca * n_b - ((last + 1) - ca) * n_a), axis=-1)


#: The sequential KS test checks its stopping rule every this many random splits ...
KS_BATCH = 100
#: ... and stops once the Clopper-Pearson interval of its p-value at this level contains
#: none of the levels it is decided against (the same rule as the Disparity page's test).
KS_STOP_CONFIDENCE = 0.999
#: Random splits drawn at once at most (labels x pooled values): bounds the memory.
_SPLIT_ELEMENTS = 1 << 22


def _clear_of(hits: int, used: int, levels: Sequence[float]) -> bool:
    """Whether the Clopper-Pearson interval (:data:`KS_STOP_CONFIDENCE`) of a p-value
    estimated from ``hits`` of ``used`` splits contains none of ``levels``."""
    from scipy.special import betaincinv

    a = (1 - KS_STOP_CONFIDENCE) / 2
    lower = float(betaincinv(hits, used - hits + 1, a)) if hits > 0 else 0.0
    upper = float(betaincinv(hits + 1, used - hits, 1 - a)) if hits < used else 1.0
    return not any(lower <= level <= upper for level in levels)


def ks_tail_bound(labels: np.ndarray, last: np.ndarray, n_a: int, n_b: int) -> float:
    """An upper bound of the permutation p-value of D given the ties (Bonferroni).

    Under a uniform split of the pooled values, the count ``c_k`` of curve a among the
    first ``t_k`` sorted values (``t_k`` the end of tie block k) is hypergeometric
    (``t_k`` draws of ``N = n_a + n_b`` with ``n_a`` marked). ``D* >= D`` needs
    ``|c_k N - t_k n_a| >= n_a n_b D`` at some block end, so
    ``P(D* >= D) <= sum_k P(|c_k N - t_k n_a| >= n_a n_b D)``. Each term is bounded by
    Hoeffding's inequality for sampling without replacement (Hoeffding 1963, s. 6),
    ``2 exp(-2 u^2 / min(t_k, N - t_k))`` with ``u = n_a n_b D / N``, and replaced by the
    exact hypergeometric tails (:func:`scipy.stats.hypergeom`) where that bound exceeds
    1e-9. The bound is itself a valid (conservative) p-value; it is close to the exact
    one only when that is tiny. ``labels``: the observed curve-a indicator over the
    sorted pooled values.
    """
    n_total = n_a + n_b
    d = int(_ks_d_scaled(labels, last, n_a, n_b))
    if d == 0:
        return 1.0
    t = (last + 1)[last + 1 < n_total].astype(np.int64)
    u = d / n_total
    terms = np.minimum(2 * np.exp(-2 * u * u / np.minimum(t, n_total - t)), 1.0)
    loose = terms > 1e-9
    if loose.any() and terms.sum() < 100:  # the exact tails where Hoeffding's is loose
        from scipy import stats

        tl = t[loose]
        hi = -((-(tl * n_a + d)) // n_total)  # ceil: c >= hi
        lo = (tl * n_a - d) // n_total  # floor: c <= lo
        upper = stats.hypergeom.sf(hi - 1, n_total, n_a, tl)
        lower = np.where(lo >= 0, stats.hypergeom.cdf(np.maximum(lo, 0), n_total, n_a, tl),
                         0.0)
        terms[loose] = np.minimum(terms[loose], upper + lower)
    return float(min(1.0, terms.sum()))


def ks_permutation_pvalue(xa: np.ndarray, xb: np.ndarray, *,
                          n_resamples: int = DEFAULT_RESAMPLES,
                          seed: int | None = 0,
                          stop_at: Sequence[float] = ()) -> tuple[float, float, str, int]:
    """Two-sided KS test of two samples with ties: D and its permutation p-value.

    The null distribution of D is taken over the splits of the pooled values (ties kept)
    into samples of the observed sizes: all of them when there are at most
    :data:`EXACT_LIMIT` (exact, ``p = #{D* >= D} / #splits``), else up to
    ``n_resamples`` random ones (``p = (b + 1) / (m + 1)`` with b of the m splits at least
    as extreme, seeded: each split is a uniform shuffle of the curve labels,
    ``Generator.permuted``).

    With ``stop_at`` (significance levels, e.g. the Benjamini-Hochberg thresholds of
    :func:`ks_tests`) the test is sequential: after 99, 199, 299, ... splits it stops once
    the Clopper-Pearson interval (level :data:`KS_STOP_CONFIDENCE`) of p from b of m
    contains none of the levels, i.e. once the decision at every level is clear; the
    p-value is then the one of the m splits drawn (the same splits as without stopping,
    in the same order). Only p-values close to a level use all ``n_resamples``. Before
    any split, when :func:`ks_tail_bound` (an upper bound of the exact permutation
    p-value) is already below every level, that bound is the p-value (method
    ``"permutation bound (ties)"``, no splits): a clear difference costs nothing.

    Returns
    -------
    (statistic, p_value, method, n_resamples)
        ``method`` is ``"exact permutation (ties)"``, ``"permutation (ties)"`` or
        ``"permutation bound (ties)"``; ``n_resamples`` the number of splits used.
    """
    import math

    xa, xb = np.asarray(xa, dtype=float), np.asarray(xb, dtype=float)
    n_a, n_b = len(xa), len(xb)
    pooled = np.concatenate([xa, xb])
    order = np.argsort(pooled, kind="stable")
    z = pooled[order]
    last = np.flatnonzero(np.r_[z[1:] != z[:-1], True])
    observed_labels = order < n_a
    d_obs = float(_ks_d(observed_labels.astype(np.int64), last, n_a, n_b))
    d_scaled = int(_ks_d_scaled(observed_labels, last, n_a, n_b))
    n_total = n_a + n_b
    if stop_at and math.comb(n_total, n_a) > EXACT_LIMIT:
        bound = ks_tail_bound(observed_labels, last, n_a, n_b)
        if bound < min(stop_at):  # below every level: the decision needs no splits
            return d_obs, bound, "permutation bound (ties)", 0
    if math.comb(n_total, n_a) <= EXACT_LIMIT:
        combos = np.array(list(itertools.combinations(range(n_total), n_a)), dtype=np.int64)
        labels = np.zeros((len(combos), n_total), dtype=bool)
        np.put_along_axis(labels, combos, True, axis=1)
        d = _ks_d_scaled(labels, last, n_a, n_b)
        return d_obs, float(np.mean(d >= d_scaled)), "exact permutation (ties)", len(d)
    rng = np.random.default_rng(seed)
    base = np.zeros(n_total, dtype=bool)
    base[:n_a] = True
    m, hits, used = int(n_resamples), 0, 0
    chunk = max(1, _SPLIT_ELEMENTS // n_total)
    while used < m:
        batch = min(KS_BATCH - (used + 1) % KS_BATCH, m - used)  # ends at 99, 199, ...
        for lo in range(0, batch, chunk):
            labels = rng.permuted(np.tile(base, (min(chunk, batch - lo), 1)), axis=1)
            hits += int(np.sum(_ks_d_scaled(labels, last, n_a, n_b) >= d_scaled))
        used += batch
        if stop_at and (used + 1) % KS_BATCH == 0 and _clear_of(hits, used, stop_at):
            break
    return d_obs, (hits + 1) / (used + 1), "permutation (ties)", used


def ks_tests(rates: pd.DataFrame, *, by: str, n_resamples: int = DEFAULT_RESAMPLES,
             seed: int | None = 0, adjust: str = "bh", adaptive: bool = True,
             alpha: float = KS_ALPHA) -> pd.DataFrame:
    """Two-sample Kolmogorov-Smirnov test of every pair of curves.

    Parameters
    ----------
    rates
        Output of :func:`subgroup_rates`.
    by
        Its comparison factor.
    n_resamples, seed
        Random splits (and their seed) of the permutation p-value with ties, when the
        splits are too many to enumerate.
    adjust
        The adjustment of ``p_adjusted`` over the tested pairs
        (:data:`analysis.multiple_testing.METHODS`; default ``"bh"``).
    adaptive, alpha
        Sequential random splits (default): a pair stops drawing once its decision is
        clear at ``alpha`` for its p-value and at every threshold of ``adjust`` at
        ``alpha`` for the adjusted one (Benjamini-Hochberg ``alpha * i / K``, Holm
        ``alpha / (K - i + 1)``, ...; K tested pairs; :func:`decision_levels`,
        :func:`ks_permutation_pvalue`'s ``stop_at``). Once every pair has stopped,
        which pairs the adjustment rejects at ``alpha`` is what all ``n_resamples``
        splits would give (each p-value's interval lies between the same two thresholds
        as the exact permutation p-value, but for the interval's 0.1 % miss rate).
        False: exactly ``n_resamples`` splits per pair.

    Returns
    -------
    pandas.DataFrame
        One row per pair (in factor order): ``group_a``, ``group_b``, ``n_a``, ``n_b``
        (subgroups per curve), ``statistic`` (sup |F_a - F_b|), ``p_value``
        (two-sided), ``method`` (``"exact"`` / ``"asymp"``: :func:`scipy.stats.ks_2samp`
        without ties; ``"exact permutation (ties)"`` / ``"permutation (ties)"`` /
        ``"permutation bound (ties)"`` (:func:`ks_permutation_pvalue`);
        ``"refused"``), ``n_resamples`` (splits used by a permutation p-value, else 0),
        ``mc_se`` (Monte Carlo standard error of a random-split p-value,
        ``sqrt(p (1 - p) / m)`` over its m splits; 0 for exact and scipy's p-values, NaN
        when refused), ``p_adjusted`` (``adjust`` over the tested pairs) and
        ``note``. A pair
        with a curve of a single subgroup is refused: NaN and a note. Empty with fewer
        than two curves.

    Raises
    ------
    AnalysisError
        Every curve has a single subgroup: no pair can be compared.
    """
    from scipy import stats  # lazy: keeps the CLI's start-up fast

    check_method(adjust)
    groups = curve_values(rates, by)
    single = [k for k, x in groups if len(x) < 2]
    if len(groups) >= 2 and len(single) == len(groups):
        raise AnalysisError(
            f"Every value of {by} has a single subgroup, so no two eCDFs can be compared "
            "(the KS test would report D = 1, p = 1 whatever the rates). Choose more factors "
            "or a lower level so that each curve has several subgroups.")
    pairs = list(itertools.combinations(groups, 2))
    tested = sum(len(xa) >= 2 and len(xb) >= 2 for (_, xa), (_, xb) in pairs)
    if adaptive and not 0 < float(alpha) < 1:
        raise AnalysisError(f"alpha must be between 0 and 1, got {alpha}.")
    stop_at = decision_levels(adjust, float(alpha), tested) if adaptive else []
    rows = []
    for (ka, xa), (kb, xb) in pairs:
        row = {GROUP_A: ka, GROUP_B: kb, N_A: len(xa), N_B: len(xb)}
        if len(xa) < 2 or len(xb) < 2:
            one = ka if len(xa) < 2 else kb
            row.update({STATISTIC: np.nan, P_VALUE: np.nan, METHOD: "refused", N_RESAMPLES: 0,
                        MC_SE: np.nan,
                        NOTE: f"{by} = {one} has a single subgroup: nothing to compare"})
        elif len(np.unique(np.concatenate([xa, xb]))) < len(xa) + len(xb):
            d, p, method, used = ks_permutation_pvalue(xa, xb, n_resamples=n_resamples,
                                                       seed=seed, stop_at=stop_at)
            random = method == "permutation (ties)"
            note = "tied rates: permutation p-value given the ties"
            if method == "permutation bound (ties)":
                note = ("tied rates: an upper bound of the permutation p-value given the "
                        "ties, already below every level (no random splits needed)")
            elif random and used < int(n_resamples):
                note += (f"; stopped after {used:,} random splits, the decision at "
                         f"alpha = {float(alpha):g} being clear")
            if random and p <= (1 + 1e-9) / (used + 1):
                from analysis.formatting import format_p

                note += (f"; p at its floor 1/({used:,} + 1): p {format_p(p, p)} (a bound; "
                         "more random splits give a smaller one)")
            row.update({STATISTIC: d, P_VALUE: p, METHOD: method, N_RESAMPLES: used,
                        MC_SE: float(np.sqrt(p * (1 - p) / used)) if random else 0.0,
                        NOTE: note})
        else:
            method = "exact" if max(len(xa), len(xb)) <= 10_000 else "asymp"  # scipy's auto
            res = stats.ks_2samp(xa, xb, method=method)
            row.update({STATISTIC: float(res.statistic), P_VALUE: float(res.pvalue),
                        METHOD: method, N_RESAMPLES: 0, MC_SE: 0.0, NOTE: ""})
        rows.append(row)
    cols = [GROUP_A, GROUP_B, N_A, N_B, STATISTIC, P_VALUE, METHOD, N_RESAMPLES, MC_SE, NOTE]
    out = pd.DataFrame(rows, columns=cols)
    out.insert(cols.index(P_VALUE) + 1, P_ADJUSTED,
               adjust_p(out[P_VALUE].to_numpy(dtype=float), adjust))
    return out
