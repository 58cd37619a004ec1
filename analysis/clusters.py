"""Which cluster column an analysis uses, and the small-sample reference for few clusters.

Shared by factor importance (``analysis/importance.py``) and subgroups
(``analysis/subgroups.py``); the decisions are in ``docs/uncertainty.md``:

- :func:`resolve_cluster` checks the cluster column before any number is computed. A
  cluster the caller names explicitly must exist (else :class:`ClusterError`); a cluster
  that is only *declared by the design* and is absent, constant, one row per value or a
  factor of the analysis is not used, and a note says so and what was assumed instead
  (rows independent). Whatever is chosen, the analysis reports it (``cluster``,
  ``n_clusters``, notes), so a number never silently changes meaning.
- With G clusters, cluster-robust statistics are compared with Student's t on G - 1
  degrees of freedom (Wald tests of q columns: F(q, G - 1)), the reference of Stata's
  ``vce(cluster)`` and of Cameron & Miller (2015, section VI.C), which keeps the size of
  a 5 % test near 5 % down to about 10 clusters where the normal reference rejects far
  too often. :data:`FEW_CLUSTERS` (30) is where a "few clusters" note starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError

#: Fewer clusters than this get a "few clusters" note.
FEW_CLUSTERS = 30
#: Reference distribution of cluster-robust statistics: ``"t"`` (t with G - 1 df, F for
#: joint tests; the default) or ``"normal"`` (z and chi-square, as statsmodels).
Reference = Literal["t", "normal"]
REFERENCES: tuple[str, ...] = get_args(Reference)


class ClusterError(AnalysisError):
    """A cluster column named by the caller cannot be used (absent from the table)."""


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
            raise ClusterError(f"Cluster column {cluster!r} is not in the table (columns: "
                               f"{', '.join(map(str, list(data.columns)[:12]))}).")
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
    values = data[cluster][present]
    counts = pd.Series(weights[present]).groupby(values.to_numpy(), dropna=False).sum()
    g = len(counts)
    if g < 2:
        shown = "no value" if g == 0 else f"the single value {str(counts.index[0])!r}"
        return ClusterChoice(None, 0, (
            f"the cluster column {cluster!r} has {shown} in the rows analysed: there is "
            "nothing to cluster over, rows are treated as independent",))
    if (counts <= 1).all():
        return ClusterChoice(None, 0, (
            f"every value of the cluster column {cluster!r} marks a single row, so clusters "
            "are rows: rows are treated as independent (the plain standard errors)",))
    return ClusterChoice(cluster, g)


def few_clusters_note(g: int, cluster: str, reference: Reference = "t") -> str | None:
    """The "few clusters" note for G < :data:`FEW_CLUSTERS` (None otherwise)."""
    if g >= FEW_CLUSTERS:
        return None
    what = (f"p-values and intervals use Student's t with {g - 1} degrees of freedom "
            "(G - 1), which keeps a 5 % test near 5 %" if reference == "t" else
            "the normal reference over-rejects (a 5 % test rejects a true null more often); "
            "the default t(G - 1) reference corrects most of this")
    return (f"few clusters: only {g} values of {cluster} (fewer than {FEW_CLUSTERS}); "
            f"cluster-robust standard errors are themselves uncertain, {what}")


def check_reference(reference: str) -> None:
    """Raise :class:`AnalysisError` for an unknown reference distribution."""
    if reference not in REFERENCES:
        raise AnalysisError(f"The reference distribution must be one of "
                            f"{', '.join(REFERENCES)}, got {reference!r}.")


def two_sided_p(stat: np.ndarray, df: float | None) -> np.ndarray:
    """Two-sided p-values of ``stat`` against t(df), or the normal when ``df`` is None."""
    from scipy.special import ndtr, stdtr

    stat = np.asarray(stat, dtype=float)
    if df is None:
        return 2 * ndtr(-np.abs(stat))
    return 2 * stdtr(df, -np.abs(stat))


def critical_value(confidence: float, df: float | None) -> float:
    """The two-sided critical value at ``confidence``: t(df) quantile, or the normal's."""
    from scipy.special import ndtri, stdtrit

    if df is None:
        return float(ndtri(0.5 + confidence / 2))
    return float(stdtrit(df, 0.5 + confidence / 2))


def wald_p(stat: float, q: int, df: float | None) -> float:
    """p-value of a Wald statistic on ``q`` columns: chi-square(q), or F(q, df) of stat/q."""
    from scipy.special import chdtrc, fdtrc

    if q <= 0 or not np.isfinite(stat):
        return float("nan")
    if df is None:
        return float(chdtrc(q, stat))
    return float(fdtrc(q, df, stat / q))
