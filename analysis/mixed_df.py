"""Satterthwaite degrees of freedom for the fixed effects of a linear mixed model.

lmerTest's convention (Kuznetsova, Brockhoff & Christensen 2017, ``summary(lmer_fit)``):
for a contrast ``L`` of the fixed effects, ``df = 2 (L' C L)^2 / (g' A g)``, where
``C(v) = (X' V(v)^-1 X)^-1`` is the covariance of the GLS estimates as a function of the
variance parameters ``v = (theta, sigma)`` (lme4's relative Cholesky factor of the random
effects' covariance, column-major lower triangle, and the residual SD), ``g`` the gradient
of ``L' C L`` in ``v`` and ``A = 2 H^-1`` with ``H`` the Hessian of the REML deviance at
its minimum (both by finite differences, as lmerTest's numDeriv; the df is the same in any
parametrisation at the optimum). The REML deviance is computed per group from
sufficient statistics (``Z_g'Z_g``, ``Z_g'X_g``, ... : Woodbury), so the rows are read once.
Checked against lmerTest 3.1.3 (``tests/reference/lmertest_reference.R``).

A multi-df test ``L beta = 0`` (a factor's columns) is lmerTest's ``contestMD`` (what
``anova(fit, ddf = "Satterthwaite")`` reports per factor): with ``L C L' = P D P'`` (the
eigenvalues above a tolerance, q of them), ``F = sum_i (P_i' L beta)^2 / d_i / q`` on
``(q, ddf)`` df, each ``P_i' L`` a 1-df contrast with its Satterthwaite df ``nu_i`` and
``ddf = 2 E / (E - q)``, ``E = sum nu_i / (nu_i - 2)`` (2 when any ``nu_i <= 2``; the mean
of the ``nu_i`` when they are equal; ``nu`` itself for q = 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["FTest", "MixedDF", "satterthwaite_mixed"]


@dataclass(frozen=True)
class FTest:
    """lmerTest's ``contestMD``: ``statistic`` (F), ``df`` (numerator, the rank of
    ``L C L'``), ``df_denominator`` (Satterthwaite), ``p_value``; ``reason`` (and NaN)
    when ``L C L'`` has no positive eigenvalue or the df cannot be computed."""

    statistic: float
    df: int
    df_denominator: float
    p_value: float
    reason: str = ""


def _f_ddf(nu: np.ndarray, tol: float = 1e-8) -> float:
    """lmerTest's ``get_Fstat_ddf``."""
    if len(nu) == 1:
        return float(nu[0])
    if np.all(np.abs(np.diff(nu)) < tol):
        return float(np.mean(nu))
    if np.any(nu <= 2):
        return 2.0
    e = float(np.sum(nu / (nu - 2)))
    return 2 * e / (e - len(nu))


@dataclass(frozen=True)
class MixedDF:
    """Per contrast: ``df`` (NaN when the REML Hessian is not positive definite) and the
    REML fit the df are taken at (``theta``, ``sigma``, ``beta``, ``cov``, ``deviance``)."""

    df: np.ndarray
    theta: np.ndarray
    sigma: float
    beta: np.ndarray
    cov: np.ndarray
    deviance: float
    df_of: object = None  # contrasts (k x p) -> Satterthwaite df per row (at the fit)

    def f_test(self, contrasts: np.ndarray, tol: float = 1e-8) -> FTest:
        """The F test of ``contrasts @ beta = 0`` on Satterthwaite denominator df
        (lmerTest's ``contestMD``, its default eigenvalue tolerance 1e-8)."""
        from scipy.special import fdtrc

        c = np.atleast_2d(np.asarray(contrasts, dtype=float))
        w, vec = np.linalg.eigh(c @ self.cov @ c.T)
        keep = w > tol
        q = int(keep.sum())
        if q == 0 or self.df_of is None:
            return FTest(math.nan, q, math.nan, math.nan,
                         "its covariance has no positive eigenvalue" if q == 0 else
                         "no Satterthwaite df")
        pl = vec[:, keep].T @ c
        t2 = (pl @ self.beta) ** 2 / w[keep]
        nu = np.asarray(self.df_of(pl), dtype=float)
        if not np.all(np.isfinite(nu) & (nu > 0)):
            return FTest(float(t2.sum() / q), q, math.nan, math.nan,
                         "the REML deviance's Hessian is not positive definite at the fit: "
                         "no Satterthwaite df")
        ddf = _f_ddf(nu)
        stat = float(t2.sum() / q)
        return FTest(stat, q, ddf, float(fdtrc(q, ddf, stat)))


class _Reml:
    def __init__(self, y, X, Z, groups):
        self.q, self.p = Z.shape[1], X.shape[1]
        self.n = len(y)
        codes = np.unique(groups, return_inverse=True)[1]
        g = codes.max() + 1
        self.sizes = np.bincount(codes, minlength=g)
        outer = lambda a, b: np.einsum("ni,nj->nij", a, b)  # noqa: E731
        self.zz = np.zeros((g, self.q, self.q))
        self.zx = np.zeros((g, self.q, self.p))
        self.zy = np.zeros((g, self.q))
        np.add.at(self.zz, codes, outer(Z, Z))
        np.add.at(self.zx, codes, outer(Z, X))
        np.add.at(self.zy, codes, Z * y[:, None])
        self.xx, self.xy, self.yy = X.T @ X, X.T @ y, float(y @ y)
        self.cells = [(i, j) for j in range(self.q) for i in range(j, self.q)]

    def lam(self, theta):
        out = np.zeros((self.q, self.q))
        for (i, j), v in zip(self.cells, theta, strict=True):
            out[i, j] = v
        return out

    def pieces(self, v):
        """``X'V^-1 X``, ``X'V^-1 y``, ``y'V^-1 y`` and ``log|V|``."""
        theta, sigma = v[:-1], v[-1]
        lam = self.lam(theta)
        a = np.einsum("ji,gjk,kl->gil", lam, self.zz, lam)  # Lam' Z'Z Lam
        k = a + np.eye(self.q)
        chol = np.linalg.cholesky(k)
        logdet = 2 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum()
        bx = np.einsum("ji,gjk->gik", lam, self.zx)  # Lam' Z'X
        by = np.einsum("ji,gj->gi", lam, self.zy)
        kx, ky = np.linalg.solve(k, bx), np.linalg.solve(k, by[..., None])[..., 0]
        s2 = sigma**2
        xvx = (self.xx - np.einsum("gip,giq->pq", bx, kx)) / s2
        xvy = (self.xy - np.einsum("gip,gi->p", bx, ky)) / s2
        yvy = (self.yy - np.einsum("gi,gi->", by, ky)) / s2
        return xvx, xvy, yvy, logdet + self.n * math.log(s2)

    def deviance(self, v) -> float:
        try:
            xvx, xvy, yvy, logdet = self.pieces(v)
            beta = np.linalg.solve(xvx, xvy)
            sign, logdet_x = np.linalg.slogdet(xvx)
        except np.linalg.LinAlgError:
            return math.inf
        if sign <= 0:
            return math.inf
        return float(logdet + logdet_x + yvy - beta @ xvy
                     + (self.n - self.p) * math.log(2 * math.pi))

    def cov_beta(self, v) -> np.ndarray:
        return np.linalg.inv(self.pieces(v)[0])


def _hessian(f, x, rel=1e-4):
    """Central second differences with one Richardson step (error O(h^4))."""
    k = len(x)
    h = rel * np.maximum(np.abs(x), 0.1)

    def second(hh):
        out = np.zeros((k, k))
        f0 = f(x)
        for i in range(k):
            ei = np.zeros(k)
            ei[i] = hh[i]
            out[i, i] = (f(x + ei) - 2 * f0 + f(x - ei)) / hh[i] ** 2
            for j in range(i):
                ej = np.zeros(k)
                ej[j] = hh[j]
                out[i, j] = out[j, i] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej)
                                         + f(x - ei - ej)) / (4 * hh[i] * hh[j])
        return out

    return (4 * second(h / 2) - second(h)) / 3


def _jacobian(f, x, rel=1e-4):
    k = len(x)
    h = rel * np.maximum(np.abs(x), 0.1)
    cols = []
    for i in range(k):
        def d(hi, i=i):
            e = np.zeros(k)
            e[i] = hi
            return (f(x + e) - f(x - e)) / (2 * hi)
        cols.append((4 * d(h[i] / 2) - d(h[i])) / 3)
    return np.stack(cols, axis=-1)  # (..., k)


def satterthwaite_mixed(y: np.ndarray, X: np.ndarray, Z: np.ndarray, groups: np.ndarray,
                        cov_re: np.ndarray, scale: float,
                        contrasts: np.ndarray | None = None) -> MixedDF:
    """Satterthwaite df of each contrast (default: every fixed coefficient).

    ``cov_re`` (q x q) and ``scale`` (the residual variance) are a REML fit's estimates
    (statsmodels ``MixedLMResults.cov_re`` / ``.scale``): the starting point; the REML
    deviance is minimised from there (L-BFGS-B) so that the derivatives are taken at its
    optimum, as lmerTest takes them at lmer's.
    """
    from scipy.optimize import minimize

    reml = _Reml(np.asarray(y, float), np.asarray(X, float), np.asarray(Z, float),
                 np.asarray(groups))
    q = reml.q
    sigma = math.sqrt(max(float(scale), 1e-12))
    rel = np.asarray(cov_re, float) / sigma**2
    try:
        lam = np.linalg.cholesky(rel + 1e-12 * np.eye(q))
    except np.linalg.LinAlgError:
        lam = np.diag(np.sqrt(np.clip(np.diag(rel), 0, None)))
    start = np.array([*(lam[i, j] for i, j in reml.cells), sigma])
    bounds = [(0, None) if i == j else (None, None) for i, j in reml.cells] + [(1e-8, None)]
    best = minimize(reml.deviance, start, method="L-BFGS-B", bounds=bounds,
                    options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 2000})
    v = best.x if best.fun <= reml.deviance(start) else start
    c = np.eye(reml.p) if contrasts is None else np.atleast_2d(contrasts)
    cov = reml.cov_beta(v)
    xvx, xvy, *_ = reml.pieces(v)
    beta = np.linalg.solve(xvx, xvy)
    var = np.einsum("sj,jk,sk->s", c, cov, c)
    hess = _hessian(reml.deviance, v)
    jac = _jacobian(lambda w: np.einsum("sj,jk,sk->s", c, reml.cov_beta(w), c), v)
    try:
        w = np.linalg.eigvalsh((hess + hess.T) / 2)
        if not np.all(np.isfinite(hess)) or w[0] <= 1e-10 * abs(w[-1]):
            raise np.linalg.LinAlgError
        a = 2 * np.linalg.inv(hess)
        df = 2 * var**2 / np.einsum("si,ij,sj->s", jac, a, jac)
    except np.linalg.LinAlgError:
        a, df = None, np.full(len(c), np.nan)

    def df_of(rows: np.ndarray) -> np.ndarray:
        """Satterthwaite df of other contrasts at the same fit (the F tests' rows)."""
        rows = np.atleast_2d(rows)
        if a is None:
            return np.full(len(rows), np.nan)
        var_r = np.einsum("sj,jk,sk->s", rows, cov, rows)
        jac_r = _jacobian(lambda u: np.einsum("sj,jk,sk->s", rows, reml.cov_beta(u), rows), v)
        return 2 * var_r**2 / np.einsum("si,ij,sj->s", jac_r, a, jac_r)

    return MixedDF(df, v[:-1], float(v[-1]), beta, cov, float(reml.deviance(v)), df_of)
