"""Which cluster column an analysis uses, and the small-sample reference for few clusters.

Shared by factor importance (``analysis/importance.py``) and subgroups
(``analysis/subgroups.py``); the decisions are in ``docs/uncertainty.md``:

- :func:`resolve_cluster` checks the cluster column before any number is computed. A
  cluster the caller names explicitly must exist (else :class:`ClusterError`); a cluster
  that is only *declared by the design* and is absent, constant, one row per value or a
  factor of the analysis is not used, and a note says so and what was assumed instead
  (rows independent). Whatever is chosen, the analysis reports it (``cluster``,
  ``n_clusters``, notes), so a number never silently changes meaning.
- With G clusters the default small-sample treatment (``small_sample="cr2"``) is the
  bias-reduced linearization covariance (CR2; Bell & McCaffrey 2002; Pustejovsky &
  Tipton 2018) with Student's t on G - 1 degrees of freedom (Wald tests of q columns:
  F(q, G - 1)). ``"cr1"`` is the usual sandwich with the factor
  ``G / (G - 1) * (N - 1) / (N - p)`` and t(G - 1) (Stata's ``vce(cluster)``,
  statsmodels' ``use_t=True``); ``"none"`` the same sandwich with the normal reference
  (statsmodels' default). Measured (tests/analysis/test_cluster_size.py): with 12
  clusters a 5 % test of a template-level factor with no effect rejects 5.0 % (CR2, t),
  6.0 % (CR1, t), 9.0 % (CR1, normal) of the time. :data:`FEW_CLUSTERS` (30) is where a
  "few clusters" note starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError, ClusterError  # noqa: F401  (re-exported)

__all__ = [
    "ClusterChoice", "ClusterError", "FEW_CLUSTERS", "SMALL_SAMPLES", "SMALL_SAMPLE_LABELS",
    "SmallSample", "check_small_sample", "cluster_note", "cr2_scores", "critical_value",
    "describe", "few_clusters_note", "missing_cluster_message", "reference_df", "resolve_cluster",
    "two_sided_p", "wald_p"
]


#: Fewer clusters than this get a "few clusters" note.
FEW_CLUSTERS = 30
#: Small-sample treatment of cluster-robust statistics: ``"cr2"`` (bias-reduced
#: covariance, t with G - 1 df; default), ``"cr1"`` (CR1 sandwich, t with G - 1 df) or
#: ``"none"`` (CR1 sandwich, normal and chi-square: statsmodels' default).
SmallSample = Literal["cr2", "cr1", "none"]
SMALL_SAMPLES: tuple[str, ...] = get_args(SmallSample)
#: In words, for notes and labels.
SMALL_SAMPLE_LABELS = {"cr2": "bias-reduced (CR2) covariance", "cr1": "CR1 sandwich",
                       "none": "CR1 sandwich"}


@dataclass(frozen=True)
class ClusterChoice:
    """The cluster an analysis uses (None: rows independent) and why.

    Attributes
    ----------
    column
        The cluster column, or None.
    n_clusters
        Distinct values of ``column`` among the rows (0 without a cluster).
    notes
        What was assumed instead of a declared cluster, in words (show with the numbers).
    """

    column: str | None
    n_clusters: int = 0
    notes: tuple[str, ...] = ()


def resolve_cluster(data: pd.DataFrame, cluster: str | None, *, declared: bool,
                    factors: Sequence[str] = (), rows: pd.Series | None = None
                    ) -> ClusterChoice:
    """Check a cluster column against the table and the analysis' factors.

    Parameters
    ----------
    data
        The results table (or a cell table with ``n``) the analysis runs on.
    cluster
        The cluster column, or None.
    declared
        True when the cluster comes from the design (not named by the caller): then an
        absent column is a note, not an error.
    factors
        The factors of the analysis. A declared cluster that is one of them is not used
        (its fixed effects absorb what the rows of a cluster share; note); a cluster named
        by the caller that is one of them is left to the caller to refuse.
    rows
        Rows per line of ``data`` (the ``n`` of a cell table); default one each.

    Returns
    -------
    ClusterChoice
        ``column`` None (with a note) when the cluster is absent (declared only),
        constant, or marks a single row per value; else the column and its number of
        values.

    Raises
    ------
    ClusterError
        A cluster named by the caller is not a column of ``data``.
    """
    if not cluster:
        return ClusterChoice(None)
    if cluster not in data.columns:
        if not declared:
            raise ClusterError(missing_cluster_message(cluster, data.columns))
        return ClusterChoice(None, 0, (
            f"the design's cluster column {cluster!r} is not in the table: rows are treated "
            "as independent (standard errors and p-values assume no clustering)",))
    if declared and cluster in factors:
        return ClusterChoice(None, 0, (
            f"the design's cluster {cluster!r} is a factor of this analysis, so it is not "
            "used as the cluster: its values get their own parameters/subgroups and the "
            "rows are treated as independent given them",))
    weights = (np.ones(len(data)) if rows is None else np.asarray(rows, dtype=float))
    present = weights > 0
    values = data[cluster] if present.all() else data[cluster][present]
    # rows per value (a missing value counts as one): factorize keeps Arrow strings and
    # categoricals as codes, where a groupby on the values would copy them to objects
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    counts = np.bincount(codes, weights=weights[present], minlength=len(uniques))
    g = len(counts)
    if g < 2:
        shown = "no value" if g == 0 else f"the single value {str(uniques[0])!r}"
        return ClusterChoice(None, 0, (
            f"the cluster column {cluster!r} has {shown} in the rows analysed: there is "
            "nothing to cluster over, rows are treated as independent",))
    if (counts <= 1).all():
        return ClusterChoice(None, 0, (
            f"every value of the cluster column {cluster!r} marks a single row: each row is "
            "its own cluster, the same as independent rows (the plain standard errors)",))
    return ClusterChoice(cluster, g)


def cluster_note(table: pd.DataFrame, cluster: str | None) -> str | None:
    """The design check's warning when the design's cluster cannot cluster, or None.

    The same judgement and words as :func:`resolve_cluster` for a declared cluster (one
    place decides): missing, a single value, or one row per value; as a sentence.
    """
    if not cluster:
        return None
    notes = resolve_cluster(table, cluster, declared=True).notes
    return notes[0][:1].upper() + notes[0][1:] + "." if notes else None


def reference_df(small_sample: SmallSample, g: int) -> int | None:
    """Degrees of freedom of the t / F reference (G - 1), None for the normal."""
    return None if small_sample == "none" else g - 1


def describe(small_sample: SmallSample, g: int) -> str:
    """``"bias-reduced (CR2) covariance, t with 11 df"`` and the like."""
    df = reference_df(small_sample, g)
    return (f"{SMALL_SAMPLE_LABELS[small_sample]}, "
            + (f"t with {df} df (G - 1)" if df is not None else "normal reference"))


def few_clusters_note(g: int, cluster: str, small_sample: SmallSample = "cr2") -> str | None:
    """The "few clusters" note for G < :data:`FEW_CLUSTERS` (None otherwise)."""
    if g >= FEW_CLUSTERS:
        return None
    what = {"cr2": "the bias-reduced covariance with t on G - 1 df keeps a 5 % test near 5 % "
                   "down to about 10 clusters",
            "cr1": "t on G - 1 df corrects most of the over-rejection; the default "
                   "bias-reduced (CR2) covariance corrects more",
            "none": "the normal reference over-rejects (a 5 % test rejects a true null more "
                    "often); the default (CR2, t on G - 1 df) corrects this"}[small_sample]
    worse = ("; with fewer than 10 clusters even that is not reliable: read the p-values "
             "as rough" if g < 10 else "")
    return (f"few clusters: only {g} values of {cluster} (fewer than {FEW_CLUSTERS}); "
            f"cluster-robust standard errors are themselves uncertain: {what}{worse}")


def check_small_sample(small_sample: str) -> None:
    """Raise :class:`AnalysisError` for an unknown small-sample treatment."""
    if small_sample not in SMALL_SAMPLES:
        raise AnalysisError(f"small_sample must be one of {', '.join(SMALL_SAMPLES)}, got "
                            f"{small_sample!r}.")


def cr2_scores(scores: np.ndarray, bread: np.ndarray, infos: np.ndarray) -> np.ndarray:
    """Bias-reduced (CR2) cluster scores ``u_g* = F^-1 (I - F I_g F)^(-1/2) F u_g``.

    ``scores`` (G x p) are the cluster scores ``u_g``, ``bread`` the inverse information
    ``B`` (p x p), ``infos`` (G x p x p) each cluster's information ``I_g = X_g' W_g X_g``,
    ``F = B^(1/2)``. This is Bell & McCaffrey's ``X_g' W_g^(1/2) (I - H_gg)^(-1/2)
    W_g^(-1/2) r_g`` with ``H_gg = W_g^(1/2) X_g B X_g' W_g^(1/2)``, reduced to p x p
    matrices (the non-zero eigenvalues of ``H_gg`` are those of ``F I_g F``), so rows
    never need to be materialised. The covariance is ``B (sum u_g* u_g*') B`` without
    a further factor. A cluster with leverage 1 (it alone fixes a parameter) has no
    bias-reduced score: its eigenvalue is capped at 1 - 1e-10, inflating the variance.
    """
    w, q = np.linalg.eigh(bread)
    w = np.clip(w, 0, None)
    f = (q * np.sqrt(w)) @ q.T
    f_inv = (q * np.where(w > 0, 1 / np.sqrt(np.where(w > 0, w, 1)), 0)) @ q.T
    m = f @ infos @ f  # (G, p, p)
    lam, vec = np.linalg.eigh((m + np.swapaxes(m, 1, 2)) / 2)
    shrink = 1 / np.sqrt(np.clip(1 - lam, 1e-10, None))
    fu = scores @ f  # (G, p): F u_g (F symmetric)
    adjusted = np.einsum("gij,gj,gkj,gk->gi", vec, shrink, vec, fu)
    return adjusted @ f_inv


def two_sided_p(stat: np.ndarray, df: float | None) -> np.ndarray:
    """Two-sided p-values of ``stat`` against t(df), or the normal when ``df`` is None
    (without importing SciPy: :mod:`analysis.special`)."""
    stat = np.asarray(stat, dtype=float)
    if df is None:
        from analysis.special import normal_sf2

        return normal_sf2(stat)
    from scipy.special import stdtr

    return 2 * stdtr(df, -np.abs(stat))


def critical_value(confidence: float, df: float | None) -> float:
    """The two-sided critical value at ``confidence``: t(df) quantile, or the normal's."""
    if df is None:
        from analysis.special import normal_ppf

        return normal_ppf(0.5 + confidence / 2)
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + confidence / 2))


def wald_p(stat: float, q: int, df: float | None) -> float:
    """p-value of a Wald statistic on ``q`` columns: chi-square(q), or F(q, df) of stat/q."""
    if q <= 0 or not np.isfinite(stat):
        return float("nan")
    if df is None:
        from analysis.special import chi2_sf

        return chi2_sf(q, stat)
    from scipy.special import fdtrc

    return float(fdtrc(q, df, stat / q))


def missing_cluster_message(cluster: str, columns) -> str:
    """The error for a named cluster column that the table lacks: the table's own columns
    (not the ``deviation`` column the workbench derives, so every engine says the same)."""
    from analysis.columns import DEVIATION

    shown = [str(c) for c in columns if str(c) != DEVIATION][:12]
    return f"Cluster column {cluster!r} is not in the table (columns: {', '.join(shown)})."
