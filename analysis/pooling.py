"""Partially pooled deviation rates and log disparities of subgroups (``docs/pooling.md``).

A thin subgroup's raw rate (15 rows, 2 deviations) is mostly noise, and a table of many
of them ranks noise. The pooled estimate borrows strength from the factor structure:
for each factor combination of a subgroup table (all ``stigma x gender`` subgroups, say)
the subgroups' logit rates follow a multilevel model

    y_g = theta_g + e_g,   e_g ~ N(0, s_g^2)              (sampling error, s_g known)
    theta_g = mu + sum_T u_T[g],   u_T ~ N(0, tau_T^2)    (one variance per term T)

over the terms of the combination: the main effect of every factor and every
interaction (``stigma``, ``gender``, ``stigma:gender`` for a pair). ``y_g`` is the
empirical logit ``log((a + 0.5) / (n - a + 0.5))``; ``s_g^2 = deff_g / (n_g p_g (1 - p_g))``
with ``p_g`` the pooled rate of the previous fit (three fits; the empirical rate first),
so a subgroup with 0 deviations does not get the near-infinite variance of its own
empirical logit. This is the Fay-Herriot small-area model with crossed random terms
(a Gaussian multilevel model with known sampling variances: what ``metafor::rma.mv``
fits), chosen over a binomial GLMM because it takes the cluster-robust sampling
variances as they are and has closed-form predictions and prediction errors.

Decisions (reasons in ``docs/pooling.md``):

- **Random or fixed**: a term with at least :data:`MIN_LEVELS_RANDOM` (5) observed levels
  is random (pooled); one with fewer is a fixed effect (a variance from 2-4 values is
  not estimable with any precision; Gelman 2006), so a 2 x 2 table is not pooled at all.
  A term whose levels split the subgroups exactly as a lower term does (nested factors)
  is aliased and left out.
- **Variances**: adjusted REML (Li & Lahiri 2010; Yoshimori & Lahiri 2014): the
  restricted marginal likelihood of ``y`` times ``prod_T tau_T^2``, maximised over the
  standard deviations with L-BFGS-B. Plain REML puts a variance from 10-30 levels at 0
  often, and the intervals then collapse onto the synthetic estimate (coverage 0.88-0.90
  for the thin subgroups of the simulation in ``tests/analysis/test_pooling.py``; 0.95
  with the true variances); the adjusted likelihood is never maximal at 0 and brings the
  coverage back to 0.95 without the cost of a bootstrap. ``tables["pooling"]`` lists them.
- **Prediction and interval**: the EBLUP ``theta~ = y - S P y`` and its prediction error
  variance ``s^2 - s^4 P_gg`` (``P = V^-1 - V^-1 X (X' V^-1 X)^-1 X' V^-1``), which
  includes the uncertainty of the fixed effects (Henderson; Prasad & Rao's g1 + g2).
  The interval is ``expit(theta~ +- z * sqrt(mse))``. A first-order term for the
  variances' own uncertainty (Kass & Steffey 1989) was tried: with plain REML it lifted
  the coverage to 0.91 only, with the adjusted likelihood it is not needed (0.955 vs
  0.959) and tripled the time, so it is left out.
- **Clusters**: with a cluster (the template) the sampling variance is inflated by
  Kish's design effect ``deff_g = 1 + (m_g - 1) rho``, ``m_g = sum_c n_gc^2 / n_g`` the
  size-weighted rows per cluster of the subgroup, with one intracluster correlation rho
  estimated from the CR2 cluster-robust variances of all subgroups' rates (least squares
  of ``robust / binomial - 1`` on ``m_g - 1``). A per-subgroup robust variance resting
  on 2-3 clusters is itself too noisy to weight by; the model keeps it cluster-robust
  in aggregate and per subgroup through ``m_g``.
- **LD**: ``ld_pooled = logit(p~_g) - logit(q~_g)`` with the outside rate
  ``q~_g = (D - n_g p~_g) / (N - n_g)``; its variance is
  ``(1 + w_g)^2 mse_g + deff_out / ((N - n_g) q~ (1 - q~))`` with
  ``w_g = n_g p~ (1 - p~) / ((N - n_g) q~ (1 - q~))`` (the delta method; the rows outside
  are not pooled).
- **Curves** (the eCDF): every curve's (model's) subgroups are pooled on their own.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.columns import DEVIATIONS, N
from analysis.errors import PoolingError

__all__ = [
    "LD_POOLED", "LD_POOLED_HIGH", "LD_POOLED_LOW", "MAX_POOLED_SIZE", "MIN_LEVELS_RANDOM",
    "POOLED_COLOUR_TITLE",
    "POOLED_COLUMNS", "POOLED_LABEL", "pooled_ecdf_title",
    "POOLING_WEIGHT", "RATE_POOLED", "RATE_POOLED_HIGH", "RATE_POOLED_LOW", "PoolFit",
    "PoolingInfo", "Term",
    "design_effects", "fit_pooled_logits", "pool_rates", "pool_subgroups", "pooled_summary",
    "swap_pooled",
]

@dataclass(frozen=True)
class PoolingInfo:
    """What :func:`pool_subgroups` / :func:`pool_rates` say beside the pooled columns
    (``return_info=True``): ``terms`` one row per (factor combination, term):
    ``factors``, ``term``, ``kind`` (random, fixed, aliased), ``n_levels``, ``variance``
    (REML, logit scale), ``n_subgroups`` (and ``by`` for the eCDF's); ``rho`` the
    intracluster correlation of the design effects; ``notes`` the readings to show."""

    terms: pd.DataFrame
    rho: float
    notes: tuple[str, ...]


#: The labels of the figures drawn from the pooled values.
POOLED_COLOUR_TITLE = "Pooled log disparity<br>(partial pooling)"
POOLED_LABEL = "pooled estimates (partial pooling, docs/pooling.md)"
RATE_POOLED = "rate_pooled"
RATE_POOLED_LOW = "rate_pooled_low"
RATE_POOLED_HIGH = "rate_pooled_high"
LD_POOLED = "ld_pooled"
LD_POOLED_LOW = "ld_pooled_low"
LD_POOLED_HIGH = "ld_pooled_high"
#: The weight of the subgroup's own estimate in its pooled logit (1: not pooled, 0: fully).
POOLING_WEIGHT = "pooling_weight"
POOLED_COLUMNS = (RATE_POOLED, RATE_POOLED_LOW, RATE_POOLED_HIGH, LD_POOLED, LD_POOLED_LOW,
                  LD_POOLED_HIGH, POOLING_WEIGHT)
#: A factor combination whose subgroups x random levels exceed this is left raw (note).
MAX_POOLED_SIZE = 20_000_000
#: A term with at least this many observed levels is random (pooled), else fixed.
MIN_LEVELS_RANDOM = 5
#: Added to deviations and non-deviations in the empirical logit.
_EMPIRICAL = 0.5
#: Fits of the sampling variances at the previous fit's pooled rates (the first: empirical).
_ROUNDS = 3
#: Bounds of a term's standard deviation on the logit scale.
_MAX_SD = 10.0
_MIN_SD = 1e-4


@dataclass(frozen=True)
class Term:
    """One term of the model over a table's subgroups: ``codes`` gives each subgroup's
    level of the term (0 .. levels - 1)."""

    name: str
    codes: np.ndarray
    levels: int
    random: bool


@dataclass
class PoolFit:
    """A fitted pooling model (:func:`fit_pooled_logits`).

    Attributes
    ----------
    theta, mse, weight
        Per subgroup: the pooled logit (EBLUP), its prediction error variance, and the
        weight of its own estimate ``1 - s^2 P_gg``.
    variances
        REML variance of each random term, by name.
    converged
        Whether the optimiser reported success (True with no random term).
    """

    theta: np.ndarray
    mse: np.ndarray
    weight: np.ndarray
    variances: dict[str, float] = field(default_factory=dict)
    converged: bool = True


def _independent_columns(x: np.ndarray) -> np.ndarray:
    """The columns of ``x`` forming a basis of its column space (pivoted QR)."""
    from scipy.linalg import qr

    if x.shape[1] == 0:
        return x
    _, r, piv = qr(x, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int((diag > diag[0] * 1e-10 * max(x.shape)).sum()) if len(diag) else 0
    return x[:, np.sort(piv[:rank])]


def _one_hot(codes: np.ndarray, levels: int) -> np.ndarray:
    out = np.zeros((len(codes), levels))
    out[np.arange(len(codes)), codes] = 1.0
    return out


class _Model:
    """The REML pieces of ``y ~ N(X b, D + Z G Z')`` for given term SDs (Woodbury on the
    random terms that are not one level per subgroup; those are folded into D)."""

    def __init__(self, y: np.ndarray, s2: np.ndarray, terms: Sequence[Term]):
        m = len(y)
        self.y, self.s2 = y, s2
        fixed = [_one_hot(t.codes, t.levels) for t in terms if not t.random]
        self.x = _independent_columns(np.column_stack([np.ones(m), *fixed]))
        self.random = [t for t in terms if t.random]
        self.diagonal = [t.levels == m and len(np.unique(t.codes)) == m for t in self.random]
        blocks = [_one_hot(t.codes, t.levels)
                  for t, d in zip(self.random, self.diagonal, strict=True) if not d]
        self.z = np.column_stack(blocks) if blocks else np.zeros((m, 0))
        self.blocks = [None if d else _one_hot(t.codes, t.levels)
                       for t, d in zip(self.random, self.diagonal, strict=True)]
        self.column_term = np.concatenate(
            [np.full(t.levels, j) for j, (t, d) in enumerate(
                zip(self.random, self.diagonal, strict=True)) if not d] or
            [np.zeros(0, dtype=int)]).astype(int)

    def pieces(self, sd: np.ndarray, *, full: bool = True, grad: bool = False
               ) -> dict[str, np.ndarray | float]:
        """``neg2`` (-2 x the REML log-likelihood); with ``full`` also ``py`` (``P y``)
        and ``diag_p`` (the diagonal of P); with ``grad`` ``grad_tau``, the derivative
        of ``neg2`` by each variance: ``tr(P K_j) - y' P K_j P y`` (``K_j = Z_j Z_j'``)."""
        tau = np.asarray(sd, dtype=float) ** 2
        d = self.s2 + sum((tau[j] for j, diag in enumerate(self.diagonal) if diag), 0.0)
        q = self.z.shape[1]
        if q:
            zl = self.z * np.sqrt(tau[self.column_term])
            zd = zl / d[:, None]
            c = np.linalg.cholesky(np.eye(q) + zl.T @ zd)
            w = np.linalg.solve(c, zd.T).T  # D^-1 Z L C^-T: V^-1 = D^-1 - w w'
            logdet = float(np.log(d).sum() + 2 * np.log(np.diag(c)).sum())
        else:
            w = np.zeros((len(d), 0))
            logdet = float(np.log(d).sum())

        def vinv(a: np.ndarray) -> np.ndarray:  # V^-1 a
            return a / (d[:, None] if a.ndim == 2 else d) - w @ (w.T @ a)

        vx = vinv(self.x)
        a_mat = self.x.T @ vx
        ca = np.linalg.cholesky(a_mat)
        beta = np.linalg.solve(a_mat, vx.T @ self.y)
        r = self.y - self.x @ beta
        py = vinv(r)
        neg2 = logdet + 2 * float(np.log(np.diag(ca)).sum()) + float(r @ py)
        if not (full or grad):
            return {"neg2": neg2}
        diag_p = 1 / d - (w * w).sum(1) - (vx * np.linalg.solve(a_mat, vx.T).T).sum(1)
        out = {"neg2": neg2, "py": py, "diag_p": diag_p}
        if grad:
            g = np.zeros(len(self.random))
            rows = np.arange(len(d))
            for j, (t, z) in enumerate(zip(self.random, self.blocks, strict=True)):
                if z is None:  # K = I
                    g[j] = diag_p.sum() - float(py @ py)
                    continue
                pz = vinv(z) - vx @ np.linalg.solve(a_mat, vx.T @ z)
                g[j] = (pz[rows, t.codes].sum()
                        - float((np.bincount(t.codes, py, minlength=t.levels) ** 2).sum()))
            out["grad_tau"] = g
        return out


def _sd_of(log_sd: np.ndarray) -> np.ndarray:
    return np.exp(np.clip(log_sd, np.log(_MIN_SD), np.log(_MAX_SD)))


def _adjusted(model: _Model, sd: np.ndarray, adjust: bool) -> tuple[float, np.ndarray]:
    """-2 x the REML log-likelihood, times the Li-Lahiri factor ``prod_T tau_T`` when
    ``adjust`` (on the log scale: minus ``2 sum log tau_T``), and its gradient by the
    SDs."""
    got = model.pieces(sd, full=False, grad=True)
    grad = 2 * sd * got["grad_tau"]
    if not adjust:
        return float(got["neg2"]), grad
    return float(got["neg2"]) - 4 * float(np.log(sd).sum()), grad - 4 / sd


def fit_pooled_logits(y: np.ndarray, s2: np.ndarray, terms: Sequence[Term], *,
                      variances: Sequence[float] | None = None,
                      start: Sequence[float] | None = None, adjust: bool = True
                      ) -> PoolFit:
    """Fit the pooling model to logits ``y`` with known sampling variances ``s2``.

    Parameters
    ----------
    y, s2
        The subgroups' (empirical) logits and their sampling variances.
    terms
        The model's terms (:class:`Term`); the intercept is always in.
    variances
        The random terms' variances, in their order among ``terms``; None: by REML.
    start
        The random terms' standard deviations to start REML from (default: two starts
        from the spread of ``y``).
    adjust
        Maximise the adjusted REML likelihood ``prod_T tau_T x L_REML`` (Li & Lahiri
        2010; Yoshimori & Lahiri 2014): its estimates are never 0, which keeps the
        intervals of a table with few levels from collapsing onto the synthetic
        estimate; False: plain REML.

    Returns
    -------
    PoolFit
        With no random term the fit is the fixed-effect one (no pooling when the fixed
        terms saturate the table).
    """
    from scipy.optimize import minimize

    y, s2 = np.asarray(y, dtype=float), np.asarray(s2, dtype=float)
    model = _Model(y, s2, terms)
    k = len(model.random)
    converged = True
    if variances is not None:
        sd = np.sqrt(np.asarray(variances, dtype=float))
    elif k == 0:
        sd = np.zeros(0)
    else:
        spread = max(float(np.var(y)) - float(np.mean(s2)), 0.01)
        best = None
        starts = ([np.asarray(start, dtype=float)] if start is not None else
                  [np.full(k, np.sqrt(spread / k) * scale) for scale in (1.0, 0.1)])
        for x0 in starts:
            x0 = np.clip(x0, _MIN_SD, _MAX_SD)
            if adjust:  # an interior maximum: BFGS on log sd
                def on_log(v: np.ndarray) -> tuple[float, np.ndarray]:
                    sd = _sd_of(v)
                    f, g = _adjusted(model, sd, True)
                    return f, g * sd
                res = minimize(on_log, np.log(x0), jac=True, method="BFGS",
                               options={"gtol": 1e-5})
                res.x = _sd_of(res.x)
            else:
                res = minimize(lambda v: _adjusted(model, v, False), x0, jac=True,
                               method="L-BFGS-B", bounds=[(_MIN_SD, _MAX_SD)] * k)
            if best is None or res.fun < best.fun:
                best = res
        sd, converged = np.asarray(best.x), bool(best.success)
    out = model.pieces(sd)
    theta = y - s2 * out["py"]
    mse = np.maximum(s2 - s2 * s2 * out["diag_p"], 0.0)
    weight = np.clip(1 - s2 * out["diag_p"], 0.0, 1.0)
    return PoolFit(theta, mse, weight,
                   {t.name: float(v) ** 2 for t, v in zip(model.random, sd, strict=True)},
                   converged)


def _terms(table: pd.DataFrame, combo: Sequence[str]) -> tuple[list[Term], list[str]]:
    """Every main effect and interaction of ``combo`` over ``table``'s rows (its
    subgroups), aliased terms left out (named in the second value)."""
    from analysis.values import factor_codes

    codes = {f: factor_codes(table[f].astype(str))[0] for f in combo}
    terms: list[Term] = []
    seen: list[np.ndarray] = []
    aliased = []
    for k in range(1, len(combo) + 1):
        for subset in itertools.combinations(combo, k):
            key = np.zeros(len(table), dtype=np.int64)
            for f in subset:
                key = key * (int(codes[f].max()) + 1) + codes[f]
            _, inverse = np.unique(key, return_inverse=True)
            inverse = inverse.reshape(-1)
            levels = int(inverse.max()) + 1 if len(inverse) else 0
            name = ":".join(subset)
            if levels <= 1 or any(_same_partition(inverse, s) for s in seen):
                if levels > 1:
                    aliased.append(name)
                continue
            seen.append(inverse)
            terms.append(Term(name, inverse, levels, levels >= MIN_LEVELS_RANDOM))
    return terms, aliased


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    pairs = np.unique(np.column_stack([a, b]), axis=0)
    return len(pairs) == len(np.unique(a)) == len(np.unique(b))


def design_effects(cells: pd.DataFrame, factors: Sequence[str], table: pd.DataFrame, *,
                   cluster: str | None) -> tuple[np.ndarray, np.ndarray, float]:
    """Kish design effects of the rates of ``table``'s subgroups and of the rows outside
    each, from one intracluster correlation (module docstring).

    Returns
    -------
    (deff, deff_outside, rho)
        Per subgroup of ``table``; all 1 and rho 0 without a cluster.
    """
    size = len(table)
    if cluster is None:
        return np.ones(size), np.ones(size), 0.0
    from analysis.subgroup_codes import cell_grid
    from analysis.values import factor_codes

    grid = cell_grid(cells, list(factors), cluster, max_level=len(factors))
    # the clusters in the order of the cell table's codes: each subgroup's sum over them
    # runs left to right (cumsum), the order of the counts' first implementation
    rank = {v: i for i, v in enumerate(factor_codes(cells[cluster])[1])}
    perm = np.argsort([rank[v] for v in grid.labels], kind="stable")
    t_c = grid.totals()[0][perm]
    n = table[N].to_numpy(float)
    a = table[DEVIATIONS].to_numpy(float)
    p = a / n
    sum_n2, sum_tn, robust = np.zeros(size), np.zeros(size), np.zeros(size)
    clusters = np.zeros(size, np.int64)
    for rows, a_c, n_c in grid.blocks(table):
        a_c, n_c = a_c[:, perm], n_c[:, perm]
        sum_n2[rows], sum_tn[rows] = (n_c * n_c).sum(1), n_c @ t_c  # whole numbers: exact
        clusters[rows] = (n_c > 0).sum(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            h = n_c / n[rows, None]
            resid = a_c - p[rows, None] * n_c
            robust[rows] = np.cumsum(np.where(h < 1, resid ** 2 / (1 - h), 0.0), axis=1)[:, -1]
    big_n = float(t_c.sum())
    outside = big_n - n
    with np.errstate(divide="ignore", invalid="ignore"):
        robust = robust / n ** 2
        binomial = p * (1 - p) / n
        ratio = robust / binomial
        per_cluster = sum_n2 / n
        per_cluster_out = ((t_c ** 2).sum() - 2 * sum_tn + sum_n2) / outside
    usable = (clusters >= 2) & (binomial > 0) & (per_cluster > 1) & np.isfinite(ratio)
    x = per_cluster[usable] - 1
    rho = float(np.clip((x * (ratio[usable] - 1)).sum() / (x * x).sum(), 0.0, 1.0)
                if usable.any() and (x * x).sum() > 0 else 0.0)
    deff = 1 + (per_cluster - 1) * rho
    deff_out = np.where(outside > 0, 1 + (np.nan_to_num(per_cluster_out, nan=1.0) - 1) * rho,
                        1.0)
    return deff, deff_out, rho


def _check_poolable(n: np.ndarray, a: np.ndarray) -> None:
    if len(n) == 0:
        raise PoolingError("There are no subgroups to pool.")
    if (n <= 1).all():
        raise PoolingError("Every subgroup has at most one row: a rate from one row says "
                           "nothing about its subgroup's sampling variance, so there is "
                           "nothing to pool. Choose fewer factors or a lower level.")
    total_a, total_n = float(a.sum()), float(n.sum())
    if total_a == 0 or total_a == total_n:
        what = "no row deviates" if total_a == 0 else "every row deviates"
        raise PoolingError(f"No variation in the outcome ({what}): every subgroup's rate "
                           "is the same, there is no between-subgroup variance to estimate "
                           "and nothing to pool. Turn pooled estimates off.")


def _pool_groups(table: pd.DataFrame, factors: Sequence[str], deff: np.ndarray, *,
                 confidence: float, within: str | None = None
                 ) -> tuple[dict[str, np.ndarray], pd.DataFrame, list[str]]:
    """Fit one model per (curve, factor combination) of ``table``: the pooled logit, its
    prediction error variance and the weight, aligned with ``table``."""
    from scipy.special import expit, ndtri

    size = len(table)
    theta, mse, weight = np.full(size, np.nan), np.full(size, np.nan), np.ones(size)
    n = table[N].to_numpy(float)
    a = table[DEVIATIONS].to_numpy(float)
    fixed = np.column_stack([table[f].notna().to_numpy() for f in factors])
    pattern = fixed.astype(np.int64) @ (1 << np.arange(len(factors), dtype=np.int64))
    curves = (table[within].astype(str).to_numpy() if within else np.full(size, ""))
    rows, notes, unconverged, too_big = [], [], [], []
    one_level: list[str] = []
    for key in pd.unique(pd.Series(list(zip(curves, pattern, strict=True)))):
        curve, pat = key
        idx = np.flatnonzero((curves == curve) & (pattern == pat))
        combo = [f for j, f in enumerate(factors) if pat >> j & 1]
        sub = table.iloc[idx]
        terms, aliased = _terms(sub, combo)
        y = np.log((a[idx] + _EMPIRICAL) / (n[idx] - a[idx] + _EMPIRICAL))
        p = (a[idx] + _EMPIRICAL) / (n[idx] + 2 * _EMPIRICAL)
        if len(idx) == 1:
            one_level.append(" x ".join(combo))
        label = " x ".join(combo)
        size_of = len(idx) * sum(t.levels for t in terms if t.random and t.levels < len(idx))
        if size_of > MAX_POOLED_SIZE:  # the dense m x q pieces would not fit: left raw
            too_big.append(f"{label} ({len(idx):,} subgroups)")
            s2 = deff[idx] / (n[idx] * p * (1 - p))
            theta[idx], mse[idx], weight[idx] = y, s2, 1.0
            continue
        fit = None
        for _ in range(_ROUNDS):
            s2 = deff[idx] / (n[idx] * p * (1 - p))
            start = None if fit is None else np.sqrt(list(fit.variances.values()))
            fit = fit_pooled_logits(y, s2, terms, start=start)
            p = np.clip(expit(fit.theta), 1e-6, 1 - 1e-6)
        theta[idx], mse[idx], weight[idx] = fit.theta, fit.mse, fit.weight
        if not fit.converged:
            unconverged.append(f"{label}" + (f" ({within} = {curve})" if within else ""))
        for t in terms:
            rows.append({**({within: curve} if within else {}), "factors": label,
                         "term": t.name, "kind": "random" if t.random else "fixed",
                         "n_levels": t.levels, "variance": fit.variances.get(t.name, np.nan),
                         "n_subgroups": len(idx)})
        for name in aliased:
            rows.append({**({within: curve} if within else {}), "factors": label,
                         "term": name, "kind": "aliased", "n_levels": np.nan,
                         "variance": np.nan, "n_subgroups": len(idx)})
    if one_level:
        notes.append("not pooled: " + "; ".join(sorted(set(one_level))) + " has a single "
                     "subgroup (a factor with one value): nothing to borrow strength from, "
                     "its pooled columns hold the unpooled estimate (0.5 added to its "
                     "deviations and non-deviations)")
    if too_big:
        notes.append("not pooled (too large for the dense model here, more than "
                     f"{MAX_POOLED_SIZE:,} subgroups x levels): " + "; ".join(too_big)
                     + ": their pooled columns hold the unpooled estimates (0.5 added to the "
                     "deviations and non-deviations); choose a lower level or fewer factors")
    if unconverged:
        notes.append("the REML fit of the variances did not report convergence for "
                     + "; ".join(unconverged) + ": read their pooled estimates with care")
    z = float(ndtri(0.5 + confidence / 2))
    half = z * np.sqrt(mse)
    out = {"theta": theta, "mse": mse, "weight": weight,
           RATE_POOLED: expit(theta), RATE_POOLED_LOW: expit(theta - half),
           RATE_POOLED_HIGH: expit(theta + half)}
    return out, pd.DataFrame(rows), notes


def _fixed_notes(terms: pd.DataFrame) -> list[str]:
    if terms.empty:
        return []
    fixed = sorted(set(terms.loc[terms["kind"] == "fixed", "term"]))
    if not fixed:
        return []
    return [f"fixed (not pooled, fewer than {MIN_LEVELS_RANDOM} values): "
            + ", ".join(fixed)]


def pool_subgroups(cells: pd.DataFrame, factors: Sequence[str], table: pd.DataFrame, *,
                   cluster: str | None = None, confidence: float = 0.95,
                   return_info: bool = False) -> pd.DataFrame | tuple[pd.DataFrame, PoolingInfo]:
    """Pooled rate and log disparity of every subgroup of a subgroup table.

    Parameters
    ----------
    cells
        The cell table the subgroups were counted from (over ``factors`` and the cluster).
    factors
        The chosen factors (a subgroup fixes some of them: NaN in the others).
    table
        Output of :func:`analysis.subgroups.subgroups` on ``cells``.
    cluster
        The cluster column of the cluster-robust variances (None: independent rows).
    confidence
        Level of the pooled intervals.

    Returns
    -------
    pandas.DataFrame
        ``table`` with ``rate_pooled``, ``rate_pooled_low``, ``rate_pooled_high`` (the
        pooled deviation rate and its interval), ``ld_pooled``, ``ld_pooled_low``,
        ``ld_pooled_high`` (the pooled log disparity against the rows outside the
        subgroup and its interval) and ``pooling_weight`` (the weight of the subgroup's
        own estimate in its pooled logit: 1 = not pooled); with ``return_info`` the pair
        ``(table, PoolingInfo)`` (the terms' variances, the intracluster correlation and
        the notes).

    Raises
    ------
    PoolingError
        No variation in the outcome, every subgroup of at most one row.
    """
    from scipy.special import logit, ndtri

    factors = list(factors)
    n = table[N].to_numpy(float)
    a = table[DEVIATIONS].to_numpy(float)
    total_n, total_a = float(cells[N].sum()), float(cells[DEVIATIONS].sum())
    _check_poolable(np.asarray(cells[N], float), np.asarray(cells[DEVIATIONS], float))
    _check_poolable(n, a)
    deff, deff_out, rho = design_effects(cells, factors, table, cluster=cluster)
    got, terms, notes = _pool_groups(table, factors, deff, confidence=confidence)
    p = got[RATE_POOLED]
    outside = total_n - n
    z = float(ndtri(0.5 + confidence / 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.clip((total_a - n * p) / outside, 1e-6, 1 - 1e-6)
        w = n * p * (1 - p) / (outside * q * (1 - q))
        ld = logit(p) - logit(q)
        var = (1 + w) ** 2 * got["mse"] + deff_out / (outside * q * (1 - q))
    defined = outside > 0
    half = z * np.sqrt(var)
    out = table.copy()
    for col in (RATE_POOLED, RATE_POOLED_LOW, RATE_POOLED_HIGH):
        out[col] = got[col]
    out[LD_POOLED] = np.where(defined, ld, np.nan)
    out[LD_POOLED_LOW] = np.where(defined, ld - half, np.nan)
    out[LD_POOLED_HIGH] = np.where(defined, ld + half, np.nan)
    out[POOLING_WEIGHT] = got["weight"]
    return (out, _info(terms, rho, cluster, notes)) if return_info else out


def _info(terms: pd.DataFrame, rho: float, cluster: str | None, notes: list[str]
          ) -> PoolingInfo:
    return PoolingInfo(terms, rho, (_summary_note(terms, rho, cluster), *_fixed_notes(terms),
                                    *notes))


def _summary_note(terms: pd.DataFrame, rho: float, cluster: str | None) -> str:
    how = (f"sampling variances cluster-robust over {cluster} (Kish design effect from "
           f"the CR2 variances, intracluster correlation {rho:.3f})" if cluster
           else "independent rows")
    return ("Pooled estimates: partial pooling over the factor structure (one multilevel "
            "model per factor combination, main effects and interactions of at least "
            f"{MIN_LEVELS_RANDOM} values random with their variances by adjusted REML; "
            "docs/pooling.md); " + how)


def pool_rates(cells: pd.DataFrame, factors: Sequence[str], rates: pd.DataFrame, *,
               by: str, cluster: str | None = None, confidence: float = 0.95,
               return_info: bool = False) -> pd.DataFrame | tuple[pd.DataFrame, PoolingInfo]:
    """Pooled deviation rates of the eCDF's subgroups, each curve (value of ``by``) on
    its own.

    Parameters
    ----------
    cells
        Cell table over ``by``, ``factors`` (and the cluster).
    factors, by
        As :func:`analysis.ecdf.subgroup_rates`.
    rates
        Output of :func:`analysis.ecdf.subgroup_rates`.
    cluster, confidence
        As :func:`pool_subgroups`.

    Returns
    -------
    pandas.DataFrame
        ``rates`` with ``rate_pooled``, ``rate_pooled_low``, ``rate_pooled_high`` and
        ``pooling_weight``; with ``return_info`` the pair as :func:`pool_subgroups`
        (its ``terms`` have a ``by`` column).

    Raises
    ------
    PoolingError
        As :func:`pool_subgroups`.
    """
    factors = list(factors)
    _check_poolable(np.asarray(cells[N], float), np.asarray(cells[DEVIATIONS], float))
    _check_poolable(rates[N].to_numpy(float), rates[DEVIATIONS].to_numpy(float))
    deff, _, rho = design_effects(cells, [by, *factors], rates, cluster=cluster)
    got, terms, notes = _pool_groups(rates, factors, deff, confidence=confidence, within=by)
    out = rates.copy()
    for col in (RATE_POOLED, RATE_POOLED_LOW, RATE_POOLED_HIGH):
        out[col] = got[col]
    out[POOLING_WEIGHT] = got["weight"]
    return (out, _info(terms, rho, cluster, notes)) if return_info else out


def swap_pooled(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the pooled values in the columns the figures and the top findings
    read (``deviation_rate``, ``log_disparity``, ``ci_low``, ``ci_high``), the raw ones
    kept as ``deviation_rate_raw``, ``log_disparity_raw``, ``ci_low_raw``, ``ci_high_raw``
    (what "use the pooled values" does; a table without pooled columns is returned as
    is)."""
    from analysis.columns import CI_HIGH, CI_LOW, DEVIATION_RATE, LOG_DISPARITY

    if RATE_POOLED not in table.columns:
        return table
    out = table.copy()
    pairs = [(DEVIATION_RATE, RATE_POOLED)]
    if LD_POOLED in out.columns:
        pairs += [(LOG_DISPARITY, LD_POOLED), (CI_LOW, LD_POOLED_LOW), (CI_HIGH, LD_POOLED_HIGH)]
    for raw, pooled in pairs:
        if raw in out.columns:
            out[f"{raw}_raw"] = out[raw]
            out[raw] = out[pooled]
    return out



def pooled_summary(rates: pd.DataFrame, *, by: str, ideal: float, cutoff: float
                   ) -> pd.DataFrame:
    """:func:`analysis.ecdf.ecdf_summary` of the pooled rates (``deviation_metric``,
    ``mean_rate``, ``share_above_cutoff``), with the raw rates' beside as
    ``deviation_metric_raw``, ``mean_rate_raw``, ``share_above_cutoff_raw``."""
    from analysis.columns import DEVIATION_METRIC, MEAN_RATE, SHARE_ABOVE_CUTOFF
    from analysis.ecdf import ecdf_summary

    raw = ecdf_summary(rates, by=by, ideal=ideal, cutoff=cutoff)
    out = ecdf_summary(swap_pooled(rates), by=by, ideal=ideal, cutoff=cutoff)
    for col in (DEVIATION_METRIC, MEAN_RATE, SHARE_ABOVE_CUTOFF):
        out[f"{col}_raw"] = raw[col].to_numpy()
    return out


def pooled_ecdf_title(by: str) -> str:
    """The title of an eCDF figure drawn from the pooled rates."""
    from analysis.safe_text import escape_html_label

    return f"eCDF of pooled subgroup deviation rates by {escape_html_label(by)}"
