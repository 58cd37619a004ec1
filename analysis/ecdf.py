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

Two curves are compared with the two-sample Kolmogorov-Smirnov test
(:func:`scipy.stats.ks_2samp`, exact p-value for small samples); more than two, pairwise
with a Benjamini-Hochberg adjustment over the pairs. Rates of subgroups are often tied
(e.g. many zeros), and the KS p-value is then conservative.
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
    MEAN_RATE,
    N_A,
    N_B,
    N_SUBGROUPS,
    P_ADJUSTED,
    P_VALUE,
    SHARE_ABOVE_CUTOFF,
    STATISTIC,
    N,
)
from analysis.errors import AnalysisError
from analysis.subgroups import benjamini_hochberg, subgroup_counts

#: The "no bias" cutoff on subgroup deviation rates used in clinical-trial fairness work.
CUTOFF = 0.2


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


def ks_tests(rates: pd.DataFrame, *, by: str) -> pd.DataFrame:
    """Two-sample Kolmogorov-Smirnov test of every pair of curves.

    Returns
    -------
    pandas.DataFrame
        One row per pair (in factor order): ``group_a``, ``group_b``, ``n_a``, ``n_b``
        (subgroups per curve), ``statistic`` (sup |F_a - F_b|), ``p_value``
        (:func:`scipy.stats.ks_2samp`, two-sided, method "auto") and ``p_adjusted``
        (Benjamini-Hochberg over the pairs). Empty with fewer than two curves.
    """
    from scipy import stats  # lazy: keeps the CLI's start-up fast

    groups = curve_values(rates, by)
    rows = []
    for (ka, xa), (kb, xb) in itertools.combinations(groups, 2):
        res = stats.ks_2samp(xa, xb)
        rows.append({GROUP_A: ka, GROUP_B: kb, N_A: len(xa), N_B: len(xb),
                     STATISTIC: float(res.statistic), P_VALUE: float(res.pvalue)})
    out = pd.DataFrame(rows, columns=[GROUP_A, GROUP_B, N_A, N_B, STATISTIC, P_VALUE])
    out[P_ADJUSTED] = benjamini_hochberg(out[P_VALUE].to_numpy(dtype=float))
    return out
