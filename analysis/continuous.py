"""Group means of a continuous outcome per factor value (the Subgroups view of a score).

For a continuous outcome (``Outcome.type == "continuous"``) the subgroup table's log
disparity of a 0/1 deviation is replaced by what a score supports: per factor value, the
number of rows, the mean and standard deviation of the score, and the difference in mean
against the factor's reference value with a Welch confidence interval and p-value
(unequal variances; ``scipy.stats.ttest_ind(equal_var=False)`` gives the same numbers).
Other factors are pooled (a marginal comparison); Factor importance gives the differences
with the other factors held fixed.

With a cluster (templates, questions: declared or inferred), rows of one cluster are not
independent and Welch's test is not used: a difference of group means is a contrast of
the linear model of the score on the factor's value indicators, so it gets the same
inference as the linear importance fit (issue 38): the bias-reduced CR2 covariance with
the contrast's Satterthwaite df and the number of clusters behind it
(:class:`analysis.clusters.SmallSampleCR2`; equal to R clubSandwich's ``coef_test`` on
``lm(score ~ factor)``, ``tests/reference/clubsandwich_reference.R``). A value found in
fewer than two clusters (or with df below the floor) is not estimable: no interval and no
p-value, a note instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.design import Design, factor_values
from analysis.errors import AnalysisError
from analysis.multiple_testing import adjust_p, check_method

__all__ = ["CLUSTER_COLUMNS", "COLUMNS", "group_means"]


#: Columns of :func:`group_means`.
COLUMNS = ["factor", "value", "reference", "n", "mean", "sd", "difference", "ci_low",
           "ci_high", "p_value", "p_adjusted"]
#: ... and with a cluster: the CR2 standard error, Satterthwaite df, supporting clusters
#: and the note of a difference that cannot be estimated.
CLUSTER_COLUMNS = [*COLUMNS[:7], "std_err", "df", "n_clusters", *COLUMNS[7:], "note"]


def group_means(data: pd.DataFrame, design: Design, *, factors: Sequence[str] | None = None,
                outcome: str | None = None, confidence: float = 0.95,
                cluster: str | None = None, adjust: str = "bh") -> pd.DataFrame:
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
    cluster
        Cluster column (template, question): the differences get the CR2 standard error
        with Satterthwaite df instead of Welch's (rows with a missing cluster left out).
    adjust
        The multiple-testing method of ``p_adjusted`` (default Benjamini-Hochberg; any
        of :data:`analysis.multiple_testing.METHODS`).

    Returns
    -------
    pandas.DataFrame
        One row per (factor, observed value): ``factor``, ``value``, ``reference``,
        ``n``, ``mean``, ``sd`` (sample), ``difference`` (mean - mean at the reference;
        0 for the reference), ``ci_low``, ``ci_high``, ``p_value`` (Welch, two-sided),
        ``p_adjusted`` (by ``adjust`` over the non-reference rows); NaN where a
        group has fewer than two rows. With ``cluster``, also ``std_err`` (CR2), ``df``
        (Satterthwaite), ``n_clusters`` (clusters holding the value) and ``note`` (why a
        difference has no interval or p-value: a value or reference in fewer than two
        clusters, or df below :data:`analysis.clusters.DF_FLOOR`); the interval and
        p-value are t on those df.

    Raises
    ------
    AnalysisError
        No outcome, a non-numeric outcome, an unknown factor, a cluster column not in
        the table.
    """
    from scipy.special import stdtr, stdtrit

    check_method(adjust)
    outcome = outcome or (design.outcome.column if design.outcome else None)
    if not outcome or outcome not in data.columns:
        raise AnalysisError(f"Group means need the score column {outcome!r} in the table.")
    y = pd.to_numeric(data[outcome], errors="coerce")
    if y.notna().sum() < data[outcome].notna().sum():
        raise AnalysisError(f"The outcome {outcome!r} is not numeric: group means need a score.")
    keep = y.notna().to_numpy()
    if cluster is not None:
        return _clustered(data, design, y, keep, factors, cluster, confidence, adjust)
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
    return _adjusted(pd.DataFrame(rows, columns=COLUMNS[:-1]), adjust)


def _adjusted(out: pd.DataFrame, adjust: str = "bh") -> pd.DataFrame:
    """``p_adjusted``: ``adjust`` over the non-reference rows with a p-value."""
    adj = np.full(len(out), np.nan)
    mask = (out["value"] != out["reference"]) & out["p_value"].notna()
    if mask.any():
        adj[mask.to_numpy()] = adjust_p(out.loc[mask, "p_value"].to_numpy(), adjust)
    out["p_adjusted"] = adj
    return out


def _clustered(data: pd.DataFrame, design: Design, y: pd.Series, keep: np.ndarray,
               factors: Sequence[str] | None, cluster: str, confidence: float,
               adjust: str = "bh") -> pd.DataFrame:
    """:func:`group_means` with a cluster: per factor, the cell-means model ``y ~ 0 +
    value`` (its coefficients are the group means), its CR2 covariance over the clusters
    and each difference ``mean(value) - mean(reference)`` as a contrast of it."""
    from analysis.clusters import (
        DF_FLOOR,
        MIN_SUPPORTING_CLUSTERS,
        SmallSampleCR2,
        critical_value,
        missing_cluster_message,
    )
    from analysis.errors import ClusterError

    if cluster not in data.columns:
        raise ClusterError(missing_cluster_message(cluster, data.columns))
    keep = keep & data[cluster].notna().to_numpy()
    g_codes, g_values = pd.factorize(data[cluster][keep])
    n_g = len(g_values)
    yy = y.to_numpy(dtype=float)[keep]
    rows = []
    for f in (list(factors) if factors is not None else design.names):
        factor = design.factor(f)
        codes, values = factor_values(data[f])
        codes = codes.to_numpy()[keep]
        present = [i for i in range(len(values)) if (codes == i).any()]
        col = {i: j for j, i in enumerate(present)}
        p = len(present)
        x = np.array([col.get(c, -1) for c in codes])
        inside = x >= 0
        counts = np.zeros((n_g, p))
        np.add.at(counts, (g_codes[inside], x[inside]), 1.0)
        n_v = counts.sum(axis=0)
        sums = np.zeros(p)
        np.add.at(sums, x[inside], yy[inside])
        means = sums / n_v
        scores = np.zeros((n_g, p))
        np.add.at(scores, (g_codes[inside], x[inside]), yy[inside] - means[x[inside]])
        infos = np.zeros((n_g, p, p))
        infos[:, np.arange(p), np.arange(p)] = counts
        kernel = SmallSampleCR2(scores, np.diag(1 / n_v), infos) if n_g >= 2 else None
        supported = (counts > 0).sum(axis=0)
        ref = factor.reference
        ref_i = {values[i]: i for i in present}.get(ref)
        for v in [v for v in factor.values if v in {values[i] for i in present}]:
            j = col[values.index(v)]
            g = yy[x == j]
            row = {"factor": f, "value": v, "reference": ref, "n": int(n_v[j]),
                   "mean": means[j], "sd": g.std(ddof=1) if len(g) > 1 else math.nan,
                   "difference": math.nan, "std_err": math.nan, "df": math.nan,
                   "n_clusters": int(supported[j]), "ci_low": math.nan,
                   "ci_high": math.nan, "p_value": math.nan, "note": ""}
            if v == ref:
                row["difference"] = 0.0
                rows.append(row)
                continue
            if ref_i is None:
                row["note"] = f"the reference {ref!r} of {f} has no rows with a score"
                rows.append(row)
                continue
            k = col[ref_i]
            row["difference"] = means[j] - means[k]
            few = [(w, int(supported[c])) for w, c in ((v, j), (ref, k))
                   if supported[c] < MIN_SUPPORTING_CLUSTERS]
            if few or kernel is None:
                w, m = few[0] if few else (v, int(supported[j]))
                row["note"] = (f"{f} = {w!r} occurs in {m} of {n_g} values of {cluster}: its "
                               "mean cannot be told apart from that cluster's own, so the "
                               "difference has no interval or p-value")
                rows.append(row)
                continue
            c = np.zeros(p)
            c[j], c[k] = 1.0, -1.0
            test = kernel.t_tests(means, c).iloc[0]
            row.update(std_err=float(test["std_err"]), df=float(test["df"]))
            if not test["df"] >= DF_FLOOR:
                row["note"] = (f"{f} = {v!r}: its Satterthwaite df ({test['df']:.2g}) are "
                               f"below {DF_FLOOR:g}, so the difference has no interval or "
                               "p-value")
            else:
                half = float(critical_value(confidence, test["df"])) * row["std_err"]
                row.update(ci_low=row["difference"] - half, ci_high=row["difference"] + half,
                           p_value=float(test["p_value"]))
            rows.append(row)
    return _adjusted(pd.DataFrame(rows, columns=CLUSTER_COLUMNS[:-2] + ["note"]), adjust)[
        CLUSTER_COLUMNS]
