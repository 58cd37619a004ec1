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
  Tipton 2018); factor importance compares each coefficient with Student's t on its own
  Satterthwaite df and tests factors by HTZ (:class:`SmallSampleCR2`); paths that have
  not moved to it yet use t on G - 1 df (Wald tests of q columns: F(q, G - 1)), which
  over-rejects for contrasts resting on a few clusters. ``"cr1"`` is the usual sandwich
  with the factor
  ``G / (G - 1) * (N - 1) / (N - p)`` and t(G - 1) (Stata's ``vce(cluster)``,
  statsmodels' ``use_t=True``); ``"none"`` the same sandwich with the normal reference
  (statsmodels' default). Measured sizes: docs/uncertainty.md. :data:`FEW_CLUSTERS` (30)
  is where a "few clusters" note starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, get_args

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError, ClusterError  # noqa: F401  (re-exported)

__all__ = [
    "CR2_TOL", "ClusterChoice", "ClusterError", "DF_FLOOR", "FEW_CLUSTERS",
    "MIN_SUPPORTING_CLUSTERS", "PD_TOL", "SATTERTHWAITE_LABEL", "SMALL_SAMPLES",
    "SMALL_SAMPLE_LABELS", "SmallSample", "SmallSampleCR2", "WaldTest", "check_small_sample",
    "cluster_note", "covariance_rank", "cr2_scores", "critical_value", "describe",
    "describe_satterthwaite", "few_clusters_note", "missing_cluster_message",
    "positive_definite_factor", "reference_df", "resolve_cluster", "two_sided_p", "wald_p",
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


#: The small-sample method of the default (CR2) path, in words (CLI, pages, report).
SATTERTHWAITE_LABEL = "CR2, Satterthwaite df"


def describe_satterthwaite(g: int) -> str:
    """``"bias-reduced (CR2) covariance, t with Satterthwaite df per contrast ..."``."""
    return (f"{SMALL_SAMPLE_LABELS['cr2']}, t with Satterthwaite df per contrast "
            f"(Bell-McCaffrey; Pustejovsky & Tipton 2018) over {g} clusters, HTZ Wald tests")


def few_clusters_note(g: int, cluster: str, small_sample: SmallSample = "cr2", *,
                      satterthwaite: bool = False) -> str | None:
    """The "few clusters" note for G < :data:`FEW_CLUSTERS` (None otherwise).

    ``satterthwaite``: the path uses Satterthwaite df per contrast (the CR2 default of
    importance); else the reference is t on G - 1 df, which over-rejects for contrasts
    that rest on a few of the clusters (docs/uncertainty.md, measured sizes).
    """
    if g >= FEW_CLUSTERS:
        return None
    if small_sample == "cr2" and satterthwaite:
        what = ("each contrast's Satterthwaite df says how many clusters stand behind it "
                "(a contrast on 2-3 clusters has about 1-3 df and a wide interval); a "
                "contrast resting on one cluster has no p-value")
    else:
        what = {"cr2": "t on G - 1 df is not reliable for a contrast that rests on a few of "
                       "the clusters (it over-rejects); the Satterthwaite df per contrast "
                       "are the honest reference",
                "cr1": "t on G - 1 df corrects part of the over-rejection; the bias-reduced "
                       "(CR2) covariance with Satterthwaite df corrects more",
                "none": "the normal reference over-rejects (a 5 % test rejects a true null "
                        "more often); CR2 with small-sample df corrects this"}[small_sample]
    worse = ("; with fewer than 10 clusters read the p-values as rough" if g < 10 else "")
    return (f"few clusters: only {g} values of {cluster} (fewer than {FEW_CLUSTERS}); "
            f"cluster-robust standard errors are themselves uncertain: {what}{worse}")


def check_small_sample(small_sample: str) -> None:
    """Raise :class:`AnalysisError` for an unknown small-sample treatment."""
    if small_sample not in SMALL_SAMPLES:
        raise AnalysisError(f"small_sample must be one of {', '.join(SMALL_SAMPLES)}, got "
                            f"{small_sample!r}.")


#: Eigenvalues of ``I - H_gg`` at or below this count as 0 (a cluster that alone fixes a
#: direction of the parameters): their inverse square root is taken as 0, as
#: clubSandwich's ``matrix_power(x, -1/2, tol = -12)`` does.
CR2_TOL = 1e-12
#: A contrast whose Satterthwaite df is below this has no p-value (its t reference would
#: be heavier-tailed than a Cauchy's; docs/uncertainty.md, "Not estimable").
DF_FLOOR = 1.0
#: Clusters that must hold a contrast's rows for it to be estimable.
MIN_SUPPORTING_CLUSTERS = 2


def _root(bread: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``F = B^(1/2)`` and its (pseudo-)inverse for a symmetric PSD ``B``."""
    w, q = np.linalg.eigh((bread + bread.T) / 2)
    w = np.clip(w, 0, None)
    f = (q * np.sqrt(w)) @ q.T
    f_inv = (q * np.where(w > 0, 1 / np.sqrt(np.where(w > 0, w, 1)), 0)) @ q.T
    return f, f_inv


def _leverages(f: np.ndarray, infos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eigenvalues ``lam`` (G, p) and vectors (G, p, p) of ``F I_g F`` and the CR2 weights
    ``(1 - lam)^(-1/2)`` (0 where ``1 - lam <=`` :data:`CR2_TOL`)."""
    m = f @ infos @ f  # (G, p, p)
    lam, vec = np.linalg.eigh((m + np.swapaxes(m, 1, 2)) / 2)
    lam = np.clip(lam, 0, None)
    rest = 1 - lam
    shrink = np.where(rest > CR2_TOL, 1 / np.sqrt(np.where(rest > CR2_TOL, rest, 1)), 0.0)
    return lam, vec, shrink


def cr2_scores(scores: np.ndarray, bread: np.ndarray, infos: np.ndarray) -> np.ndarray:
    """Bias-reduced (CR2) cluster scores ``u_g* = F^-1 (I - F I_g F)^(-1/2) F u_g``.

    ``scores`` (G x p) are the cluster scores ``u_g``, ``bread`` the inverse information
    ``B`` (p x p), ``infos`` (G x p x p) each cluster's information ``I_g = X_g' W_g X_g``,
    ``F = B^(1/2)``. This is Bell & McCaffrey's ``X_g' W_g^(1/2) (I - H_gg)^(-1/2)
    W_g^(-1/2) r_g`` with ``H_gg = W_g^(1/2) X_g B X_g' W_g^(1/2)``, reduced to p x p
    matrices (the non-zero eigenvalues of ``H_gg`` are those of ``F I_g F``), so rows
    never need to be materialised. The covariance is ``B (sum u_g* u_g*') B`` without
    a further factor. A cluster with leverage 1 in a direction (it alone fixes that
    combination of parameters; its residual there is 0 at the fit) gets the
    pseudo-inverse square root, 0, in that direction (:data:`CR2_TOL`), as clubSandwich.
    """
    f, f_inv = _root(bread)
    _, vec, shrink = _leverages(f, infos)
    fu = scores @ f  # (G, p): F u_g (F symmetric)
    adjusted = np.einsum("gij,gj,gkj,gk->gi", vec, shrink, vec, fu)
    return adjusted @ f_inv


#: A covariance whose correlation matrix has an eigenvalue below this (relative to the
#: largest) is singular for a Wald test.
PD_TOL = 1e-10


def positive_definite_factor(cov: np.ndarray) -> np.ndarray:
    """The Cholesky factor of a positive definite ``cov``; raises
    :class:`numpy.linalg.LinAlgError` when it is singular or not positive definite (the
    smallest eigenvalue of its correlation matrix at or below :data:`PD_TOL` times the
    largest, a negative or zero variance, a non-finite entry), so that no Wald test is
    ever computed from a pseudo-inverse."""
    cov = (np.asarray(cov, dtype=float) + np.asarray(cov, dtype=float).T) / 2
    d = np.diag(cov)
    if not np.all(np.isfinite(cov)) or not np.all(d > 0):
        raise np.linalg.LinAlgError("not positive definite")
    r = cov / np.sqrt(np.outer(d, d))
    w = np.linalg.eigvalsh(r)
    if not w[0] > PD_TOL * w[-1]:
        raise np.linalg.LinAlgError("singular")
    return np.linalg.cholesky(cov)


def covariance_rank(cov: np.ndarray) -> int:
    """The rank a Wald test sees: eigenvalues of the correlation matrix above
    :data:`PD_TOL` times the largest (0 for a non-finite matrix)."""
    cov = (np.asarray(cov, dtype=float) + np.asarray(cov, dtype=float).T) / 2
    d = np.diag(cov)
    if not np.all(np.isfinite(cov)) or not np.any(d > 0):
        return 0
    keep = d > 0
    r = cov[np.ix_(keep, keep)] / np.sqrt(np.outer(d[keep], d[keep]))
    w = np.linalg.eigvalsh(r)
    return int(np.sum(w > PD_TOL * w[-1]))


@dataclass(frozen=True)
class WaldTest:
    """A cluster-robust Wald test of ``C b = 0`` (q rows), HTZ by default.

    Attributes
    ----------
    statistic
        The F statistic (HTZ: ``delta Q / q``; ``Q = (Cb)' (C V C')^-1 (Cb)``), NaN when
        refused.
    q
        Numerator df (the rows of C).
    df
        Denominator df (HTZ: ``eta - q + 1``), NaN when refused.
    p_value
        NaN when refused.
    wald
        The plain Wald statistic ``Q`` (NaN when refused).
    reason
        Why there is no test ("" when there is one), naming the cause.
    """

    statistic: float
    q: int
    df: float
    p_value: float
    wald: float
    reason: str = ""


class SmallSampleCR2:
    """Small-sample inference for the CR2 covariance per contrast (Pustejovsky & Tipton 2018).

    Built from the same pieces as :func:`cr2_scores`: the cluster scores ``u_g`` (G x p),
    the inverse information ``B`` (p x p) and each cluster's information ``I_g``
    (G x p x p), ``I_g = X_g' W_g X_g`` with the working weights ``W`` (1 for OLS, the
    row counts of a cell table; ``n mu (1 - mu)`` for a logit). The working model of the
    degrees of freedom is ``Var(y) = W^-1`` with independent rows (clubSandwich's
    ``inverse_var = TRUE``: ``lm`` without weights, and ``glm`` through its working
    regression; docs/uncertainty.md). Everything reduces to p x p matrices per cluster,
    so a fit on a cell table never builds its rows.

    With ``F = B^(1/2)``, ``F I_g F = V_g diag(lam_g) V_g'`` and ``s = (1 - lam)^(-1/2)``
    (0 where ``1 - lam <=`` :data:`CR2_TOL`), a contrast ``c`` has ``d = F c`` and, per
    cluster, ``A_g(c, c') = d' V_g diag(lam s^2) V_g' d'`` and the vector
    ``beta_g(c) = V_g diag(lam s) V_g' d``; the matrix ``P`` of clubSandwich
    (``get_P_array``) is ``P_gh(c, c') = [g = h] A_g(c, c') - beta_g(c)' beta_h(c')``.
    Satterthwaite: ``df = (tr P)^2 / sum P^2`` (clubSandwich's ``coef_test(...,
    test = "Satterthwaite")``); HTZ: ``Omega = tr P`` over the rows of C, ``P`` of
    ``Omega^(-1/2) C``, ``eta = q (q + 1) / sum_st [sum P_st * P_ts + sum P_ss * P_tt]``,
    ``F = (eta - q + 1) / (eta q) Q`` on ``(q, eta - q + 1)`` df (``Wald_test(...,
    test = "HTZ")``).

    Parameters
    ----------
    scores, bread, infos
        As :func:`cr2_scores`.

    Attributes
    ----------
    cov
        The CR2 covariance ``B (sum u_g* u_g*') B``.
    n_clusters_total
        G.
    """

    def __init__(self, scores: np.ndarray, bread: np.ndarray, infos: np.ndarray):
        self.bread = np.asarray(bread, dtype=float)
        self.infos = np.asarray(infos, dtype=float)
        self._f, f_inv = _root(self.bread)
        self._lam, self._vec, self._shrink = _leverages(self._f, self.infos)
        fu = np.asarray(scores, dtype=float) @ self._f
        # V_g diag(s_g) V_g' F u_g as two batched products (BLAS), not a 4-operand einsum
        # (its G p^3 loop was 0.04 s of a 1M-row clustered importance fit; issue 44)
        t = np.matmul(np.swapaxes(self._vec, 1, 2), fu[:, :, None])[:, :, 0]
        adjusted = np.matmul(self._vec, (self._shrink * t)[:, :, None])[:, :, 0]
        star = adjusted @ f_inv
        self.cov = self.bread @ (star.T @ star) @ self.bread
        self.n_clusters_total = len(self.infos)

    # --- the pieces of P ---------------------------------------------------------------------
    def _pieces(self, contrasts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``A`` (q, q, G) and ``beta`` (q, G, p) of the rows of ``contrasts`` (q x p)."""
        d = np.atleast_2d(contrasts) @ self._f  # (q, p): F c (F symmetric)
        # batched matrix products per cluster (BLAS), not einsum's loops (issue 44)
        t = np.matmul(np.swapaxes(self._vec, 1, 2), d.T)  # V_g' d: (G, p, q)
        lam, s = self._lam, self._shrink
        a = np.matmul(np.swapaxes(t, 1, 2), (lam * s**2)[:, :, None] * t)  # (G, q, q)
        beta = np.matmul(self._vec, (lam * s)[:, :, None] * t)  # (G, p, q)
        return a.transpose(1, 2, 0), beta.transpose(2, 0, 1)

    def n_clusters(self, contrasts: np.ndarray) -> np.ndarray:
        """Clusters whose rows move each contrast (``c' I_g c > 0``): for a treatment-coded
        coefficient, the clusters holding rows with its value."""
        c = np.atleast_2d(np.asarray(contrasts, dtype=float))
        per = np.einsum("sj,gjk,sk->sg", c, self.infos, c)
        total = per.sum(axis=1, keepdims=True)
        return (per > 1e-12 * np.where(total > 0, total, 1)).sum(axis=1)

    def variance(self, contrasts: np.ndarray) -> np.ndarray:
        """``c' V c`` per row of ``contrasts``."""
        c = np.atleast_2d(np.asarray(contrasts, dtype=float))
        return np.einsum("sj,jk,sk->s", c, self.cov, c)

    def satterthwaite(self, contrasts: np.ndarray) -> np.ndarray:
        """Satterthwaite degrees of freedom per row of ``contrasts`` (q x p; a vector is
        one contrast); NaN where the contrast's expected variance is 0."""
        c = np.atleast_2d(np.asarray(contrasts, dtype=float))
        out = np.empty(len(c))
        lam, s = self._lam, self._shrink
        for start in range(0, len(c), 64):  # bounded memory for many coefficients
            # as _pieces, but only A's diagonal, and sum_g beta_g beta_g' by BLAS (issue 44)
            t = np.matmul(np.swapaxes(self._vec, 1, 2), (c[start:start + 64] @ self._f).T)
            diag_a = np.einsum("gjs,gj->sg", t * t, lam * s**2)  # A_g(c, c)
            beta = np.matmul(self._vec, (lam * s)[:, :, None] * t)  # (G, p, q)
            bb = np.einsum("gis,gis->sg", beta, beta)  # beta_g . beta_g
            by = beta.transpose(2, 0, 1)
            gram = np.matmul(by.transpose(0, 2, 1), by)  # sum_g beta_g beta_g'
            trace = diag_a.sum(axis=1) - bb.sum(axis=1)
            squares = ((diag_a**2).sum(axis=1) - 2 * (diag_a * bb).sum(axis=1)
                       + np.einsum("sij,sij->s", gram, gram))
            with np.errstate(invalid="ignore", divide="ignore"):
                out[start:start + 64] = np.where(squares > 0, trace**2 / squares, np.nan)
        return out

    def t_tests(self, beta: np.ndarray, contrasts: np.ndarray | None = None
                ) -> pd.DataFrame:
        """Per contrast (default: every coefficient): ``estimate``, ``std_err``, ``t``,
        ``df`` (Satterthwaite), ``p_value`` (two-sided, t(df)), ``n_clusters``."""
        c = (np.eye(len(beta)) if contrasts is None
             else np.atleast_2d(np.asarray(contrasts, dtype=float)))
        est = c @ np.asarray(beta, dtype=float)
        se = np.sqrt(np.clip(self.variance(c), 0, None))
        df = self.satterthwaite(c)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = est / se
        p = np.full(len(est), np.nan)
        ok = np.isfinite(df) & (df > 0) & np.isfinite(t)
        p[ok] = two_sided_p(t[ok], df[ok])
        return pd.DataFrame({"estimate": est, "std_err": se, "t": t, "df": df,
                             "p_value": p, "n_clusters": self.n_clusters(c)})

    def factor_test(self, beta: np.ndarray, columns: Sequence[int]) -> WaldTest:
        """The HTZ test that the coefficients ``columns`` are all 0 (a factor's test), with
        a ``reason`` also when its df fall below :data:`DF_FLOOR`."""
        test = self.htz(beta, np.eye(len(beta))[list(columns)])
        if not test.reason and test.df < DF_FLOOR:
            return replace(test, reason=f"its HTZ df are {test.df:.2g} (below {DF_FLOOR:g}): "
                                        "too few clusters stand behind it for a test")
        return test

    def htz(self, beta: np.ndarray, contrasts: np.ndarray) -> WaldTest:
        """The HTZ Wald test of ``C b = 0`` (clubSandwich ``Wald_test(..., test="HTZ")``).

        Refused (NaN, ``reason`` set) when ``C V C'`` is not positive definite (its rank
        is below q: with CR2 at most G, less when clusters have leverage 1), never turned
        into a chi-square of its pseudo-inverse; or when the HTZ df ``eta - q + 1`` is not
        positive.
        """
        c = np.atleast_2d(np.asarray(contrasts, dtype=float))
        q = len(c)
        vc = c @ self.cov @ c.T
        vc = (vc + vc.T) / 2
        cb = c @ np.asarray(beta, dtype=float)
        nan = float("nan")
        try:
            chol = positive_definite_factor(vc)
        except np.linalg.LinAlgError:
            rank = covariance_rank(vc)
            return WaldTest(nan, q, nan, nan, nan, (
                f"its cluster-robust covariance is singular (rank {rank} for {q} "
                f"contrasts, with {self.n_clusters_total} clusters), so no test of all "
                f"{q} contrasts at once exists"))
        z = np.linalg.solve(chol, cb)
        wald = float(z @ z)
        # Omega = E(C V C') under the working model, then P of Omega^(-1/2) C
        a, bt = self._pieces(c)
        omega = np.einsum("stg->st", a) - np.einsum("sgi,tgi->st", bt, bt)
        w, vecs = np.linalg.eigh((omega + omega.T) / 2)
        root = np.where(w > CR2_TOL, 1 / np.sqrt(np.where(w > CR2_TOL, w, 1)), 0.0)
        a, bt = self._pieces((vecs * root) @ vecs.T @ c)
        total = self._htz_sum(a, bt)
        if not total > 0:
            return WaldTest(nan, q, nan, nan, wald, "the test's degrees of freedom cannot be "
                                                    "estimated (no variation)")
        eta = q * (q + 1) / total
        df = eta - q + 1
        delta = max(df / eta, 0.0)
        stat = delta * wald / q
        if not df > 0:
            return WaldTest(stat, q, df, nan, wald, (
                f"its small-sample degrees of freedom are not positive (HTZ: {df:.3g}): "
                f"{q} contrasts are too many for the {self.n_clusters_total} clusters"))
        from scipy.special import fdtrc

        return WaldTest(stat, q, df, float(fdtrc(q, df, stat)), wald)

    @staticmethod
    def _htz_sum(a: np.ndarray, beta: np.ndarray) -> float:
        """``sum_st [sum P_st * P_ts + sum P_ss * P_tt]`` (the HTZ denominator): the sum of
        ``sum_gh P_st[g, h] P_uv[g, h]`` over every ``s, t``, as matrix products without
        forming the G x G matrices (``a`` (q, q, G), ``beta`` (q, G, p); the ``beta_s'
        beta_t`` of a block of s and every t as one BLAS product, memory at most 2^22
        entries)."""
        q = beta.shape[0]
        dots = np.einsum("sgi,tgi->stg", beta, beta)  # beta_s . beta_t per cluster
        diag_a, diag_d = np.einsum("ssg->sg", a), np.einsum("ssg->sg", dots)
        # P(s, t, u, v) = a_st.a_uv - a_st.dots_uv - a_uv.dots_st + <M_su, M_tv>,
        # M_su = sum_g beta_sg beta_ug'; here (s, t, t, s) and (s, s, t, t)
        cross = (np.einsum("stg,tsg->st", a, a) - np.einsum("stg,tsg->st", a, dots)
                 - np.einsum("tsg,stg->st", a, dots))
        same = diag_a @ diag_a.T - diag_a @ diag_d.T - diag_d @ diag_a.T
        g, p = beta.shape[1:]
        flat = beta.transpose(1, 0, 2).reshape(g, q * p)
        step = max(1, (1 << 22) // (q * p * p))  # rows s of M per BLAS product (memory)
        for lo in range(0, q, step):
            m = (flat[:, lo * p:(lo + step) * p].T @ flat).reshape(-1, p, q, p)  # M_st
            cross[lo:lo + step] += np.einsum("sitj,sjti->st", m, m)  # <M_st, M_st'>
            same[lo:lo + step] += np.einsum("sitj,sitj->st", m, m)  # <M_st, M_st>
        return float(np.sum(cross) + np.sum(same))


def two_sided_p(stat: np.ndarray, df: float | np.ndarray | None) -> np.ndarray:
    """Two-sided p-values of ``stat`` against t(df), or the normal when ``df`` is None
    (without importing SciPy: :mod:`analysis.special`)."""
    stat = np.asarray(stat, dtype=float)
    if df is None:
        from analysis.special import normal_sf2

        return normal_sf2(stat)
    from scipy.special import stdtr

    return 2 * stdtr(df, -np.abs(stat))


def critical_value(confidence: float, df: float | np.ndarray | None) -> float | np.ndarray:
    """The two-sided critical value at ``confidence``: t(df) quantile (one per df for an
    array of df), or the normal's."""
    if df is None:
        from analysis.special import normal_ppf

        return normal_ppf(0.5 + confidence / 2)
    from scipy.special import stdtrit

    if np.ndim(df):
        return stdtrit(np.asarray(df, dtype=float), 0.5 + confidence / 2)
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
