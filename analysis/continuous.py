"""Group means of a continuous outcome per factor value (the Subgroups view of a score).

For a continuous outcome (``Outcome.type == "continuous"``) the subgroup table's log
disparity of a 0/1 deviation is replaced by what a score supports: per factor value, the
number of rows, the mean and standard deviation of the score, and the difference in mean
against the factor's reference value with a Welch confidence interval and p-value
(unequal variances; ``scipy.stats.ttest_ind(equal_var=False)`` gives the same numbers).
Other factors are pooled (a marginal comparison); Factor importance gives the differences
with the other factors held fixed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.design import Design, factor_values
from analysis.errors import AnalysisError
from analysis.subgroups import benjamini_hochberg

__all__ = ["COLUMNS", "group_means"]


#: Columns of :func:`group_means`.
COLUMNS = ["factor", "value", "reference", "n", "mean", "sd", "difference", "ci_low",
           "ci_high", "p_value", "p_adjusted"]


def group_means(data: pd.DataFrame, design: Design, *, factors: Sequence[str] | None = None,
                outcome: str | None = None, confidence: float = 0.95) -> pd.DataFrame:
    """Mean score per factor value and its difference from the reference value.

    Parameters
    ----------
    data
        The results table with the outcome column (rows with a missing score are left out).
    design
        Factors (values, references) and the outcome (default column).
    factors
        Factors to tabulate (default: every factor of the design).
    outcome
        The score column (default: the design's outcome column).
    confidence
        Level of the Welch intervals.

    Returns
    -------
    pandas.DataFrame
        One row per (factor, observed value): ``factor``, ``value``, ``reference``,
        ``n``, ``mean``, ``sd`` (sample), ``difference`` (mean - mean at the reference;
        0 for the reference), ``ci_low``, ``ci_high``, ``p_value`` (Welch, two-sided),
        ``p_adjusted`` (Benjamini-Hochberg over the non-reference rows); NaN where a
        group has fewer than two rows.

    Raises
    ------
    AnalysisError
        No outcome, a non-numeric outcome, an unknown factor.
    """
    from scipy.special import stdtr, stdtrit

    outcome = outcome or (design.outcome.column if design.outcome else None)
    if not outcome or outcome not in data.columns:
        raise AnalysisError(f"Group means need the score column {outcome!r} in the table.")
    y = pd.to_numeric(data[outcome], errors="coerce")
    if y.notna().sum() < data[outcome].notna().sum():
        raise AnalysisError(f"The outcome {outcome!r} is not numeric: group means need a score.")
    keep = y.notna().to_numpy()
    rows = []
    for f in (list(factors) if factors is not None else design.names):
        factor = design.factor(f)
        codes, values = factor_values(data[f])
        codes = codes.to_numpy()[keep]
        yy = y.to_numpy(dtype=float)[keep]
        stats = {}
        for i, v in enumerate(values):
            g = yy[codes == i]
            stats[v] = (len(g), g.mean() if len(g) else math.nan,
                        g.std(ddof=1) if len(g) > 1 else math.nan)
        ref = factor.reference
        n0, m0, s0 = stats.get(ref, (0, math.nan, math.nan))
        for v in [v for v in factor.values if v in stats]:
            n1, m1, s1 = stats[v]
            diff = m1 - m0
            if v == ref:
                lo = hi = p = math.nan
                diff = 0.0
            else:
                var = s1**2 / n1 + s0**2 / n0 if n0 > 1 and n1 > 1 else math.nan
                se = math.sqrt(var) if var == var else math.nan
                df = (var**2 / ((s1**2 / n1) ** 2 / (n1 - 1) + (s0**2 / n0) ** 2 / (n0 - 1))
                      if se and se == se else math.nan)
                if se and se == se:
                    crit = float(stdtrit(df, 0.5 + confidence / 2))
                    lo, hi = diff - crit * se, diff + crit * se
                    p = float(2 * stdtr(df, -abs(diff) / se))
                else:
                    lo = hi = p = math.nan
            rows.append({"factor": f, "value": v, "reference": ref, "n": n1, "mean": m1,
                         "sd": s1, "difference": diff, "ci_low": lo, "ci_high": hi,
                         "p_value": p})
    out = pd.DataFrame(rows, columns=COLUMNS[:-1])
    adj = np.full(len(out), np.nan)
    mask = (out["value"] != out["reference"]) & out["p_value"].notna()
    if mask.any():
        adj[mask.to_numpy()] = benjamini_hochberg(out.loc[mask, "p_value"].to_numpy())
    out["p_adjusted"] = adj
    return out
