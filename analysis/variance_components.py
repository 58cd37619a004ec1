"""Variance components of a benchmark's random facets (a G-study; docs/measurement_error.md).

The model, for one row ``r`` (a 0/1 deviation or a continuous outcome)::

    y_r = x_r' beta + sum over random groups g of u_g[level of r] + e_r
    u_g ~ N(0, sigma2_g) independent,  e_r ~ N(0, sigma2_e)

``x_r``: the fixed factors' main effects (model, domain factors, prompt factors not
declared random), treatment-coded. The random *groups* are the facets (template, item,
seed, judge, sample ...) and, when the table has a model factor, each facet's
interaction with the model (``template x model``). A 0/1 outcome is fitted as a linear
probability model: the components are on the probability scale, which is the scale of
the deviation rates the app reports (docs/measurement_error.md says why).

The fit is REML, profiled over ``sigma2_e`` with relative standard deviations
``theta_g = sigma_g / sigma_e >= 0`` (zero allowed: the boundary), as ``lme4::lmer``
parametrises it. It works on the *cells* (distinct combinations of the fixed factors and
the facets): ``n``, the sum and the within-cell sum of squares of each cell are
sufficient, the REML criterion being the same as on the rows. Once the cross-products
``Z'WZ``, ``Z'WX``, ``X'WX`` are formed, one evaluation of the criterion costs a
Cholesky factorisation of a ``q x q`` matrix (``q``: random levels), whatever the rows:
1e5 rows fit in well under a second. Intervals: a parametric bootstrap that draws the
cells' sufficient statistics from the fitted model (exact for the Gaussian model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import linalg, optimize, sparse, stats

from analysis.errors import FitError

__all__ = [
    "GStudy", "JUDGE_WORDS", "MAX_FACET_LEVELS", "MAX_RANDOM_LEVELS", "MIN_LEVELS",
    "RELIABLE_LEVELS", "RESIDUAL",
    "contribution", "default_facets", "fit_components", "headline", "name_words", "one_thread",
    "total_error",
]

#: The residual's name in the components table.
RESIDUAL = "residual"
#: Fewest levels for a facet's variance to be estimated at all (one level: no variance).
MIN_LEVELS = 2
#: Fewer levels than this: estimated, with a note that the estimate and its interval
#: rest on ``levels - 1`` degrees of freedom (5 levels: the interval spans about x30).
RELIABLE_LEVELS = 5
#: Random levels of the groups other than the largest (whose block is diagonal and
#: eliminated exactly): the size of the dense factorisation.
MAX_RANDOM_LEVELS = 3000
#: Levels of one facet (an item id may be the largest group: it is eliminated exactly).
MAX_FACET_LEVELS = 100_000
#: Words of a judge column's name (a judge facet).
JUDGE_WORDS = ("judge", "judges", "rater", "raters", "annotator", "annotators", "grader",
               "scorer")
_SEP = " x "


@dataclass(frozen=True)
class _Group:
    name: str           # "template" or "template x model"
    facet: str          # "template"
    codes: np.ndarray   # per cell, 0..levels-1
    levels: int
    interaction: bool


@dataclass
class GStudy:
    """A fitted G-study (:func:`fit_components`).

    Attributes
    ----------
    components
        One row per random group and the residual: ``component``, ``facet``,
        ``interaction`` (with the model), ``levels``, ``variance``, ``sd``, ``share``
        (of the total variance), ``ci_low``, ``ci_high`` (bootstrap percentile interval
        of the variance), ``share_ci_low``, ``share_ci_high``, ``boundary`` (estimated
        at zero), ``note``.
    notes
        What the reader must know (facets left out and why, boundary, convergence).
    """

    components: pd.DataFrame
    notes: list[str]
    fixed: list[str]
    facets: list[str]
    model: str | None
    outcome_kind: str
    n_rows: int
    n_cells: int
    confidence: float
    n_resamples: int
    converged: bool
    #: -2 x the REML log-likelihood at the estimates (lme4's ``REMLcrit``).
    reml_criterion: float = float("nan")
    #: Asymptotic covariance of the variances (groups, then the residual): 2 x the
    #: inverse Hessian of -2 REML log-likelihood; zero rows for boundary components.
    covariance: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))
    beta: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    cells: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    groups: list[_Group] = field(repr=False, default_factory=list)
    nested_in: dict[str, list[str]] = field(default_factory=dict)

    def variance(self, component: str) -> float:
        """The estimated variance of ``component`` (0 for a component not fitted)."""
        if not hasattr(self, "_variances"):
            fitted = self.components.dropna(subset=["variance"])
            self._variances = dict(zip(fitted["component"],
                                       fitted["variance"].astype(float), strict=True))
        return self._variances.get(component, 0.0)


def name_words(name: str) -> list[str]:
    """The lower-case words of a column name (split at anything not a letter or digit)."""
    import re

    return [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]


def default_facets(table: pd.DataFrame, design: Any) -> list[str]:
    """The random facets read from the design and the table: the design's cluster
    (template), then columns named as a replicate (``seed``, ``sample``, ``run`` ...), a
    temperature or a judge, that are not fixed factors of kind model or domain."""
    from analysis.values import REPLICATE_WORDS

    fixed = set(design.of_kind("model", "domain")) if design is not None else set()
    found: list[str] = []
    if design is not None and design.cluster and design.cluster in table.columns:
        found.append(design.cluster)
    outcome = getattr(getattr(design, "outcome", None), "column", None)
    for column in table.columns:
        words = name_words(str(column))
        if column in fixed or column in found or column == outcome or "id" in words:
            continue
        named = any(w in REPLICATE_WORDS or w in JUDGE_WORDS or w in ("temperature", "temp")
                    for w in words)
        if named and 2 <= table[column].nunique(dropna=False) <= MAX_RANDOM_LEVELS:
            found.append(str(column))
    return found


def _codes(series: pd.Series) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(series.astype(str), sort=True)
    return codes.astype(np.int64), len(uniques)


def _fixed_matrix(cells: pd.DataFrame, fixed: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    blocks = [np.ones((len(cells), 1))]
    names = ["(intercept)"]
    for factor in fixed:
        codes, k = _codes(cells[factor])
        if k < 2:
            continue
        dummies = np.zeros((len(cells), k - 1))
        rows = np.nonzero(codes > 0)[0]
        dummies[rows, codes[rows] - 1] = 1.0
        blocks.append(dummies)
        names += [f"{factor}[{j}]" for j in range(1, k)]
    return np.hstack(blocks), names


def _full_rank(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Columns of ``x`` kept so that the weighted design has full rank (pivoted QR of the
    ``p x p`` cross-product, scaled to unit diagonal)."""
    gram = x.T @ (x * w[:, None])
    scale = np.sqrt(np.maximum(np.diag(gram), 1e-300))
    _, r, piv = linalg.qr(gram / scale[:, None] / scale[None, :], pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int(np.sum(diag > diag[0] * 1e-10)) if len(diag) else 0
    return np.sort(piv[:rank])


class _Problem:
    """The REML criterion of one set of groups, from the cells' cross-products.

    ``A = Lambda Z'WZ Lambda + I`` is factorised by blocks: the largest group's block is
    diagonal (a cell belongs to one level of a group), so it is eliminated exactly and
    only the Schur complement of the other groups (``q - q_largest`` square) is
    Cholesky-factorised.
    """

    def __init__(self, x: np.ndarray, z: sparse.csr_matrix, sizes: Sequence[int],
                 w: np.ndarray, n_rows: int):
        self.x, self.z, self.w, self.n = x, z, w, n_rows
        self.sizes = list(sizes)
        self.index = np.repeat(np.arange(len(self.sizes)), self.sizes)
        self.p = x.shape[1]
        if not self.sizes:
            self.xtwx = x.T @ (x * w[:, None])
            return
        big = int(np.argmax(self.sizes))
        starts = np.concatenate([[0], np.cumsum(self.sizes)])
        self.one = np.arange(starts[big], starts[big + 1])
        self.two = np.setdiff1d(np.arange(starts[-1]), self.one)
        zw = z.T.multiply(w).tocsr()
        ztwz = (zw @ z).tocsc()
        self.d1 = np.asarray(ztwz[self.one][:, self.one].diagonal()).ravel()
        self.b12 = ztwz[self.one][:, self.two].toarray()
        self.a22 = ztwz[self.two][:, self.two].toarray()
        self.ztwx = np.asarray(zw @ x)
        self.xtwx = x.T @ (x * w[:, None])

    def data(self, ybar: np.ndarray, ss_within: float) -> tuple[np.ndarray, np.ndarray, float]:
        wy = self.w * ybar
        return (np.asarray(self.z.T @ wy).ravel(), self.x.T @ wy,
                float(ybar @ wy) + float(ss_within))

    def _a_solve(self, lam: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, float]:
        """``A^-1 rhs`` and ``log |A|``."""
        l1, l2 = lam[self.one], lam[self.two]
        d1 = l1 ** 2 * self.d1 + 1.0
        a12 = self.b12 * l1[:, None] * l2[None, :]
        s = self.a22 * l2[:, None] * l2[None, :]
        s[np.diag_indices_from(s)] += 1.0
        s -= a12.T @ (a12 / d1[:, None])
        r1, r2 = rhs[self.one], rhs[self.two]
        logdet = float(np.sum(np.log(d1)))
        out = np.empty_like(rhs)
        if len(self.two):
            chol = linalg.cho_factor(s, lower=True, check_finite=False)
            logdet += 2 * float(np.sum(np.log(np.diag(chol[0]))))
            v2 = linalg.cho_solve(chol, r2 - a12.T @ (r1 / d1[:, None]), check_finite=False)
            out[self.two] = v2
            out[self.one] = (r1 - a12 @ v2) / d1[:, None]
        else:
            out[self.one] = r1 / d1[:, None]
        return out, logdet

    def solve(self, theta: np.ndarray, zty: np.ndarray, xty: np.ndarray, yty: float
              ) -> tuple[float, np.ndarray, float]:
        """REML deviance, beta and sigma2_e at ``theta`` (relative sds per group)."""
        df = self.n - self.p
        if not self.sizes:
            beta = np.linalg.solve(self.xtwx, xty)
            rss = max(yty - beta @ xty, 1e-300)
            logdet = float(np.linalg.slogdet(self.xtwx)[1])
            return logdet + df * (1 + np.log(2 * np.pi * rss / df)), beta, rss / df
        lam = theta[self.index]
        lzx = lam[:, None] * self.ztwx
        lzy = lam * zty
        sol, logdet_a = self._a_solve(lam, np.column_stack([lzx, lzy]))
        cx, cu = sol[:, :-1], sol[:, -1]
        xvx = self.xtwx - lzx.T @ cx
        xvy = xty - lzx.T @ cu
        try:
            cholx = linalg.cho_factor(xvx, lower=True, check_finite=False)
        except linalg.LinAlgError:
            return np.inf, np.zeros(self.p), np.nan
        beta = linalg.cho_solve(cholx, xvy, check_finite=False)
        u = cu - cx @ beta
        rss = max(yty - (u @ lzy + beta @ xty), 1e-300)
        logdet = logdet_a + 2 * np.sum(np.log(np.diag(cholx[0])))
        self.last = (float(logdet), float(rss))
        deviance = logdet + df * (1 + np.log(2 * np.pi * rss / df))
        return float(deviance), beta, rss / df

    def unprofiled(self, variances: np.ndarray, zty: np.ndarray, xty: np.ndarray,
                   yty: float) -> float:
        """-2 REML log-likelihood (less a constant) at the variances (groups, residual)."""
        s2 = variances[-1]
        if s2 <= 0 or np.any(variances[:-1] < 0):
            return np.inf
        dev = self.solve(np.sqrt(variances[:-1] / s2), zty, xty, yty)[0]
        if not np.isfinite(dev):
            return np.inf
        logdet, rss = self.last
        return logdet + (self.n - self.p) * np.log(s2) + rss / s2

    def covariance(self, variances: np.ndarray, zty: np.ndarray, xty: np.ndarray,
                   yty: float) -> np.ndarray:
        """Asymptotic covariance of the variance estimates: twice the inverse Hessian of
        the -2 REML log-likelihood (central differences), over the components not at the
        boundary (rows and columns of a zero component: 0). NaN if not positive definite."""
        free = np.nonzero(variances > 0)[0]
        k = len(free)
        h = np.empty((k, k))
        steps = 1e-4 * variances[free]

        def f(shift: np.ndarray) -> float:
            v = variances.copy()
            v[free] += shift
            return self.unprofiled(v, zty, xty, yty)

        f0 = f(np.zeros(k))
        for i in range(k):
            ei = np.zeros(k)
            ei[i] = steps[i]
            h[i, i] = (f(ei) - 2 * f0 + f(-ei)) / steps[i] ** 2
            for j in range(i):
                ej = np.zeros(k)
                ej[j] = steps[j]
                h[i, j] = h[j, i] = (f(ei + ej) - f(ei - ej) - f(ej - ei) + f(-ei - ej)) / (
                    4 * steps[i] * steps[j])
        out = np.zeros((len(variances), len(variances)))
        if not np.isfinite(h).all():  # a step underflowed (a component near 0)
            return np.full_like(out, np.nan)
        try:
            chol = linalg.cho_factor(h, lower=True)
        except linalg.LinAlgError:
            return np.full_like(out, np.nan)
        out[np.ix_(free, free)] = 2 * linalg.cho_solve(chol, np.eye(k))
        return out

    def fit(self, zty: np.ndarray, xty: np.ndarray, yty: float,
            start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float, bool]:
        k = len(self.sizes)
        if k == 0:
            dev, beta, s2 = self.solve(np.zeros(0), zty, xty, yty)
            return np.zeros(0), beta, s2, True
        starts = [start] if start is not None else [np.full(k, 0.5)]
        best = None
        for x0 in starts:
            res = optimize.minimize(lambda t: self.solve(t, zty, xty, yty)[0], x0,
                                    method="L-BFGS-B", bounds=[(0.0, None)] * k,
                                    options={"maxiter": 500, "ftol": 1e-11, "gtol": 1e-7})
            if best is None or res.fun < best.fun:
                best = res
        theta = np.asarray(best.x)
        # a component near zero: compare with the boundary exactly (lme4 does the same)
        for j in range(k):
            if 0 < theta[j] < 1e-3:
                trial = theta.copy()
                trial[j] = 0.0
                if self.solve(trial, zty, xty, yty)[0] <= best.fun + 1e-8:
                    theta = trial
        _, beta, s2 = self.solve(theta, zty, xty, yty)
        return theta, beta, s2, bool(best.success)


def one_thread() -> Any:
    """BLAS limited to one thread (the fits' many small factorisations: threads only
    contend, 10x slower on a shared 2-core machine)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


def _cells(table: pd.DataFrame, outcome: str, columns: list[str]) -> pd.DataFrame:
    y = pd.to_numeric(table[outcome], errors="coerce").to_numpy(dtype=float)
    keep = ~np.isnan(y)
    codes, labels = [], []
    for c in columns:  # a row without a value of a factor or facet is left out (code -1)
        k, uniques = pd.factorize(table[c].to_numpy(), sort=True)
        keep &= k >= 0
        codes.append(k)
        labels.append(np.asarray([str(u) for u in uniques], dtype=object))
    y = y[keep]
    codes = [k[keep] for k in codes]
    if not len(y):
        return pd.DataFrame(columns=[*columns, "n", "total", "total2"])
    stacked = np.column_stack(codes) if codes else np.zeros((len(y), 1), np.int64)
    keys, cell = np.unique(stacked, axis=0, return_inverse=True)
    cell = cell.ravel()
    frame = pd.DataFrame({c: labels[j][keys[:, j]] for j, c in enumerate(columns)})
    frame["n"] = np.bincount(cell, minlength=len(keys))
    frame["total"] = np.bincount(cell, weights=y, minlength=len(keys))
    frame["total2"] = np.bincount(cell, weights=y ** 2, minlength=len(keys))
    return frame


def _is_nested(inner: np.ndarray, outer: np.ndarray) -> bool:
    """Whether every level of ``inner`` occurs with a single level of ``outer``."""
    pairs = np.unique(np.column_stack([inner, outer]), axis=0)
    return len(pairs) == len(np.unique(inner))


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return _is_nested(a, b) and _is_nested(b, a)


def fit_components(table: pd.DataFrame, outcome: str, *, fixed: Sequence[str],
                   facets: Sequence[str], model: str | None = None,
                   interactions: bool = True, n_resamples: int = 200,
                   confidence: float = 0.95, seed: int = 0) -> GStudy:
    """REML variance components of ``facets`` (and their interactions with ``model``),
    with the ``fixed`` factors' main effects as fixed effects.

    Parameters
    ----------
    table
        One row per answer (or judgment): the outcome, the fixed factors, the facets.
    outcome
        The numeric outcome column (0/1 deviation, or a continuous score).
    fixed
        Fixed factors (model and domain factors, prompt factors not declared random).
    facets
        Random facets (template, seed, judge ...). A facet with one level, one aliased
        with an earlier facet, with a fixed factor, or with the residual is left out with
        a note; the others are still fitted.
    model
        The model factor (among ``fixed``) whose interaction with each facet is a
        component, when ``interactions``.
    n_resamples
        Parametric bootstrap draws for the intervals (0: no intervals).

    Returns
    -------
    GStudy
        ``components``: one row per component (columns listed on :class:`GStudy`).

    Raises
    ------
    FitError
        No usable rows, an outcome that does not vary, no facet left to fit.
    """
    with one_thread():  # small factorisations: BLAS threads only contend
        return _fit(table, outcome, fixed=fixed, facets=facets, model=model,
                    interactions=interactions, n_resamples=n_resamples,
                    confidence=confidence, seed=seed)


def _fit(table: pd.DataFrame, outcome: str, *, fixed: Sequence[str], facets: Sequence[str],
         model: str | None, interactions: bool, n_resamples: int, confidence: float,
         seed: int) -> GStudy:
    fixed = [f for f in dict.fromkeys(fixed) if f not in facets]
    facets = list(dict.fromkeys(facets))
    missing = [c for c in [outcome, *fixed, *facets] if c not in table.columns]
    if missing:
        raise FitError(f"Columns not in the table: {', '.join(map(repr, missing))}.")
    cells = _cells(table, outcome, [*fixed, *facets])
    if cells.empty:
        raise FitError(f"No row has a numeric {outcome!r}: nothing to decompose.")
    n_rows = int(cells["n"].sum())
    w = cells["n"].to_numpy(dtype=float)
    ybar = cells["total"].to_numpy() / w
    ss_within = float(np.sum(cells["total2"].to_numpy() - cells["total"].to_numpy() * ybar))
    values = pd.unique(table[outcome].dropna())
    outcome_kind = "binary" if set(pd.to_numeric(pd.Series(values), errors="coerce")
                                   .dropna().tolist()) <= {0, 1} else "continuous"
    if np.allclose(ybar, ybar[0]) and ss_within <= 1e-12:
        raise FitError(f"{outcome!r} takes a single value on these rows: it has no variance "
                       f"to decompose.")
    x_all, _ = _fixed_matrix(cells, fixed)
    x = x_all[:, _full_rank(x_all, w)]
    notes: list[str] = []
    skipped: list[dict[str, Any]] = []
    if model is not None and model not in fixed:
        model = None
    model_codes, n_models = _codes(cells[model]) if model else (None, 1)
    cell_codes = np.arange(len(cells))
    groups: list[_Group] = []

    def skip(name: str, facet: str, levels: int, interaction: bool, note: str) -> None:
        skipped.append({"component": name, "facet": facet, "interaction": interaction,
                        "levels": levels, "note": note})
        notes.append(note)

    xtwx_inv = np.linalg.pinv(x.T @ (x * w[:, None]))

    def aliased_with_fixed(codes: np.ndarray, k: int) -> bool:
        # trace of Z'WZ less its projection on the fixed effects: 0 when Z lies in X's span
        zf = sparse.csr_matrix((np.ones(len(codes)), (np.arange(len(codes)), codes)),
                               shape=(len(codes), k))
        zwx = np.asarray(zf.T.multiply(w) @ x)
        resid = w.sum() - float(np.sum((zwx @ xtwx_inv) * zwx))
        return bool(resid <= 1e-9 * w.sum())

    for facet in facets:
        codes, k = _codes(cells[facet])
        if k < MIN_LEVELS:
            skip(facet, facet, k, False,
                 f"{facet!r} has one level ({cells[facet].iloc[0]!r}): a facet needs at "
                 f"least {MIN_LEVELS} levels to have a variance (its component is not "
                 f"estimated).")
            continue
        if k > MAX_FACET_LEVELS:
            skip(facet, facet, k, False,
                 f"{facet!r} has {k:,} levels, more than the {MAX_FACET_LEVELS:,} this fit "
                 f"handles: its variance stays in the residual (not estimated).")
            continue
        twin = next((g.facet for g in groups if not g.interaction
                     and _same_partition(codes, g.codes)), None)
        if twin is not None:
            skip(facet, facet, k, False,
                 f"{facet!r} is aliased with {twin!r}: each level of one goes with one level "
                 f"of the other, so their variances cannot be told apart (reported under "
                 f"{twin!r}). Cross them (every {facet} with several {twin} levels) to "
                 f"separate them.")
            continue
        if _same_partition(codes, cell_codes) and np.all(w == 1):
            skip(facet, facet, k, False,
                 f"{facet!r} identifies every row: its variance cannot be told apart from "
                 f"the residual (needs 2 or more rows per level and the rest of the design).")
            continue
        if aliased_with_fixed(codes, k):
            skip(facet, facet, k, False,
                 f"{facet!r} is aliased with the fixed factors (each level of {facet!r} is "
                 f"one combination of them): its variance is absorbed by their effects.")
            continue
        if k < RELIABLE_LEVELS:
            notes.append(f"{facet!r} has only {k} levels: its variance rests on {k - 1} "
                         f"degree{'s' if k > 2 else ''} of freedom and its interval is very "
                         f"wide; {RELIABLE_LEVELS} or more levels (10 or more for a usable "
                         f"interval) are needed.")
        groups.append(_Group(facet, facet, codes, k, False))
        if model and interactions and n_models > 1:
            pair = codes * n_models + model_codes
            pair_codes = np.unique(pair, return_inverse=True)[1].ravel()
            kk = int(pair_codes.max()) + 1
            name = f"{facet}{_SEP}{model}"
            crossed = kk > k  # some level of the facet seen with two or more models
            if not crossed:
                skip(name, facet, kk, True,
                     f"{facet!r} is nested in {model!r} (each level with one model): its "
                     f"interaction with the model is not separate from {facet!r} itself.")
            elif _same_partition(pair_codes, cell_codes) and np.all(w == 1):
                skip(name, facet, kk, True,
                     f"{name!r} identifies every row: it cannot be told apart from the "
                     f"residual.")
            else:
                groups.append(_Group(name, facet, pair_codes.astype(np.int64), kk, True))
    def dense_part() -> int:  # levels of every group but the largest (eliminated exactly)
        sizes = sorted((g.levels for g in groups), reverse=True)
        return sum(sizes[1:])

    while dense_part() > MAX_RANDOM_LEVELS and any(g.interaction for g in groups):
        big = max((g for g in groups if g.interaction), key=lambda g: g.levels)
        groups.remove(big)
        skip(big.name, big.facet, big.levels, True,
             f"{big.name!r} ({big.levels:,} levels) is left out: with it the fit would "
             f"factorise more than {MAX_RANDOM_LEVELS:,} levels at once; its variance stays "
             f"in the residual.")
    sizes = sorted((g.levels for g in groups), reverse=True)
    if sum(sizes[1:]) > MAX_RANDOM_LEVELS:
        raise FitError(f"The facets other than the largest have {sum(sizes[1:]):,} random "
                       f"levels in all, more than {MAX_RANDOM_LEVELS:,}: fit fewer facets "
                       f"(or leave out their interactions with the model).")
    if not groups:
        raise FitError("No facet can be estimated on these rows: "
                       + " ".join(s["note"] for s in skipped) if skipped else
                       "No random facet given: name the template, seed or judge column.")
    z = sparse.hstack([sparse.csr_matrix((np.ones(len(cells)), (cell_codes, g.codes)),
                                         shape=(len(cells), g.levels)) for g in groups]
                      ).tocsr()
    problem = _Problem(x, z, [g.levels for g in groups], w, n_rows)
    zty, xty, yty = problem.data(ybar, ss_within)
    theta, beta, s2, converged = problem.fit(zty, xty, yty)
    if not converged:
        notes.append("The REML optimiser stopped before convergence: the components are "
                     "the best point found; treat them as approximate.")
    variances = np.append(theta ** 2 * s2, s2)
    criterion = problem.solve(theta, zty, xty, yty)[0]
    cov = problem.covariance(variances, zty, xty, yty)
    boot = _bootstrap(problem, x, z, beta, variances, groups, w, n_rows, len(cells),
                      n_resamples, seed, theta) if n_resamples else None
    names = [g.name for g in groups] + [RESIDUAL]
    total = variances.sum()
    rows = []
    alpha = 1 - confidence
    for j, name in enumerate(names):
        grp = groups[j] if j < len(groups) else None
        row = {"component": name, "facet": grp.facet if grp else RESIDUAL,
               "interaction": bool(grp.interaction) if grp else False,
               "levels": grp.levels if grp else n_rows, "variance": variances[j],
               "sd": np.sqrt(variances[j]), "share": variances[j] / total,
               "boundary": bool(grp is not None and theta[j] == 0.0), "note": ""}
        if boot is not None:
            row["ci_low"], row["ci_high"] = np.quantile(boot[:, j], [alpha / 2, 1 - alpha / 2])
            shares = boot[:, j] / boot.sum(axis=1)
            row["share_ci_low"], row["share_ci_high"] = np.quantile(
                shares, [alpha / 2, 1 - alpha / 2])
        else:
            row.update(ci_low=np.nan, ci_high=np.nan, share_ci_low=np.nan, share_ci_high=np.nan)
        if row["boundary"]:
            row["note"] = (f"estimated at zero (the boundary): no {name} variance beyond the "
                           f"residual on these rows")
            notes.append(f"{name!r}: {row['note']}; its interval starts at 0.")
        elif grp is not None and grp.levels < RELIABLE_LEVELS:
            row["note"] = f"only {grp.levels} levels: very wide interval"
        rows.append(row)
    for s in skipped:
        rows.append({**s, "variance": np.nan, "sd": np.nan, "share": np.nan,
                     "ci_low": np.nan, "ci_high": np.nan, "share_ci_low": np.nan,
                     "share_ci_high": np.nan, "boundary": False})
    columns = ["component", "facet", "interaction", "levels", "variance", "sd", "share",
               "ci_low", "ci_high", "share_ci_low", "share_ci_high", "boundary", "note"]
    components = pd.DataFrame(rows)[columns]
    nested_in = {g.facet: [h.facet for h in groups if h is not g and not h.interaction
                           and _is_nested(g.codes, h.codes)]
                 for g in groups if not g.interaction}
    return GStudy(components, list(dict.fromkeys(notes)), fixed, facets, model, outcome_kind,
                  n_rows, len(cells), confidence, int(n_resamples), converged, criterion, cov, beta,
                  cells.assign(_ybar=ybar, _fit=x @ beta), groups, nested_in)


def _bootstrap(problem: _Problem, x: np.ndarray, z: sparse.csr_matrix, beta: np.ndarray,
               variances: np.ndarray, groups: list[_Group], w: np.ndarray, n_rows: int,
               n_cells: int, n_resamples: int, seed: int, theta: np.ndarray) -> np.ndarray:
    """Variances refitted on ``n_resamples`` draws of the cells' sufficient statistics
    from the fitted Gaussian model (rows: draws; columns: groups then the residual)."""
    rng = np.random.default_rng(seed)
    mean = x @ beta
    s2 = variances[-1]
    out = np.empty((n_resamples, len(variances)))
    for b in range(n_resamples):
        u = np.concatenate([rng.normal(0, np.sqrt(v), g.levels)
                            for g, v in zip(groups, variances[:-1], strict=True)])
        ybar = mean + z @ u + rng.normal(0, 1, n_cells) * np.sqrt(s2 / w)
        ss_within = s2 * rng.chisquare(n_rows - n_cells) if n_rows > n_cells else 0.0
        zty, xty, yty = problem.data(ybar, ss_within)
        th, _, s2b, _ = problem.fit(zty, xty, yty, start=np.maximum(theta, 0.05))
        out[b] = np.append(th ** 2 * s2b, s2b)
    return out


def contribution(gs: GStudy, a: np.ndarray) -> dict[str, float]:
    """Variance of the linear functional ``sum_c a_c ybar_c`` by component."""
    return {k: v for k, (v, _) in _contributions(gs, a).items()}


def _contributions(gs: GStudy, a: np.ndarray) -> dict[str, tuple[float, float]]:
    """Per component: the variance it adds to ``sum_c a_c ybar_c`` and its coefficient
    (the variance divided by the component's variance)."""
    w = gs.cells["n"].to_numpy(dtype=float)
    out = {}
    for g in gs.groups:
        per_level = np.bincount(g.codes, weights=a, minlength=g.levels)
        coef = float(per_level @ per_level)
        out[g.name] = (gs.variance(g.name) * coef, coef)
    coef = float(np.sum(a ** 2 / w))
    out[RESIDUAL] = (gs.variance(RESIDUAL) * coef, coef)
    return out


def _df(gs: GStudy, parts: Mapping[str, tuple[float, float]]) -> float:
    """Satterthwaite degrees of freedom of ``V = sum_k c_k sigma2_k``: ``2 V^2 / Var(V)``
    with ``Var(V) = c' Cov c`` from the REML information (lmerTest's approach); inf when
    the covariance is not available."""
    names = [g.name for g in gs.groups] + [RESIDUAL]
    c = np.array([parts[n][1] for n in names])
    total = sum(v for v, _ in parts.values())
    var = float(c @ gs.covariance @ c) if gs.covariance.shape == (len(c), len(c)) else np.nan
    if not np.isfinite(var) or var <= 0:
        return np.inf
    return float(2 * total ** 2 / var)


def total_error(gs: GStudy, *, subgroup_factors: Sequence[str] = (),
                confidence: float | None = None,
                metric_factors: Sequence[str] = ()) -> pd.DataFrame:
    """Sampling and total-error intervals of the headline numbers (see
    :func:`_total_error`, whose docstring lists the columns)."""
    with one_thread():  # many small dot products: BLAS threads only contend
        return _total_error(gs, subgroup_factors=subgroup_factors, confidence=confidence,
                            metric_factors=metric_factors)


def _total_error(gs: GStudy, *, subgroup_factors: Sequence[str] = (),
                 confidence: float | None = None,
                 metric_factors: Sequence[str] = ()) -> pd.DataFrame:
    """Sampling and total-error intervals of the headline numbers: each model's rate,
    the difference between each model and the first, and each value's rate and log
    disparity (LD, value vs the other rows) of ``subgroup_factors`` (fixed factors).
    With ``metric_factors`` (fixed factors) and a 0/1 outcome, also each model's
    deviation metric over the subgroups of those factors jointly (``methods.md`` s. 3:
    with the ideal value 0 it is the unweighted mean of the subgroups' rates, a linear
    function of the cells, so its total-error interval is exact in the same way).

    The sampling interval treats the rows as independent (binomial for a 0/1 outcome,
    ``s / sqrt(n)`` otherwise): the usual interval. The total-error variance is the
    residual's (``sigma2_e * sum_c a_c^2 / n_c``) plus the variance each facet
    contributes to the number (``sigma2_g * sum_l a_l^2`` for the number's weights
    ``a_l`` on the levels of group ``g``), with Satterthwaite degrees of freedom
    (``2 V^2 / Var(V)``, ``Var(V)`` from the REML information of the variances) and a t
    quantile; an LD by the delta method on the log scale.

    A component REML puts at zero (the boundary) adds nothing, so a facet whose variance
    is real but not detected would shrink the interval to the sampling one. The floor:
    the largest cluster-robust (CR1) variance of the number over one facet's levels;
    when it exceeds the model's variance it is used, with that facet's ``G - 1`` df (the
    classic interval over templates; exact for one balanced facet). Only facets with
    :data:`RELIABLE_LEVELS` or more levels give a floor: over 2 to 4 clusters the robust
    variance has 1 to 3 df and would widen the interval by its noise alone.

    Returns
    -------
    pandas.DataFrame
        One row per number: ``quantity`` (``rate``, ``difference``, ``deviation
        metric``, ``subgroup rate``, ``log disparity``), ``label``, ``estimate``, ``n``,
        ``se_sampling``,
        ``ci_low_sampling``, ``ci_high_sampling``, ``se_total``, ``df_total``, ``ci_low``,
        ``ci_high``, ``se_ratio`` (total / sampling), ``dominant`` (the component adding
        the most variance), ``cluster_floor`` (the facet whose cluster-robust variance
        was used, when larger than the model's; else empty) and one ``share_<component>``
        column per component (its share of the total variance of the number).
    """
    level = gs.confidence if confidence is None else confidence
    z = stats.norm.ppf(0.5 + level / 2)
    cells = gs.cells
    w = cells["n"].to_numpy(dtype=float)
    ybar = cells["_ybar"].to_numpy()
    binary = gs.outcome_kind == "binary"
    rows: list[dict[str, Any]] = []

    total2 = cells["total2"].to_numpy()

    def weights(mask: np.ndarray) -> tuple[np.ndarray, float, float]:
        a = w * mask
        n = a.sum()
        a /= n
        return a, float(a @ ybar), float(n)

    def within_var(mask: np.ndarray, mean: float, n: float) -> float:
        if binary:
            return mean * (1 - mean) / n
        return (total2 @ mask / n - mean ** 2) * n / max(n - 1, 1) / n

    mains = [g for g in gs.groups if not g.interaction]

    fit = cells["_fit"].to_numpy()

    def robust(a: np.ndarray) -> tuple[float, float, str]:
        """The largest cluster-robust variance over one facet (CR1: G / (G - 1) x the
        sum over its levels of the squared weighted sums of the residuals from the fixed
        effects), its G - 1 and the facet: the floor of the total-error variance when
        REML puts a facet at zero."""
        best = (0.0, np.inf, "")
        resid = ybar - fit
        for g in mains:
            sums = np.bincount(g.codes, weights=a * resid, minlength=g.levels)
            used = int(np.count_nonzero(np.bincount(g.codes, weights=np.abs(a),
                                                    minlength=g.levels)))
            if used < RELIABLE_LEVELS:  # CR1 on 2-4 clusters: 1-3 df, too noisy a floor
                continue
            v = used / (used - 1) * float(sums @ sums)
            if v > best[0]:
                best = (v, used - 1.0, g.facet)
        return best

    def add(quantity: str, label: str, estimate: float, n: float, var_s: float,
            a: np.ndarray) -> None:
        with_df = _contributions(gs, a)
        parts = {k: v for k, (v, _) in with_df.items()}
        var_t = sum(parts.values())
        df = _df(gs, with_df)
        floor, floor_df, floor_facet = robust(a)
        floored = floor > var_t
        if floored:  # the facet's variance is there although REML found none: add it
            parts[floor_facet] = parts.get(floor_facet, 0.0) + floor - var_t
            var_t, df = floor, floor_df
        t = stats.t.ppf(0.5 + level / 2, df) if np.isfinite(df) else z
        se_s, se_t = np.sqrt(var_s), np.sqrt(var_t)
        facet_parts = {k: v for k, v in parts.items() if k != RESIDUAL}
        dominant = max(parts, key=parts.get) if parts else ""
        row = {"quantity": quantity, "label": label, "estimate": estimate, "n": int(n),
               "se_sampling": se_s, "ci_low_sampling": estimate - z * se_s,
               "ci_high_sampling": estimate + z * se_s, "se_total": se_t, "df_total": df,
               "ci_low": estimate - t * se_t, "ci_high": estimate + t * se_t,
               "se_ratio": se_t / se_s if se_s > 0 else np.nan,
               "dominant": dominant if facet_parts else RESIDUAL,
               "cluster_floor": floor_facet if floored else ""}
        for k, v in parts.items():
            row[f"share_{k}"] = v / var_t if var_t > 0 else np.nan
        rows.append(row)

    models = [None]
    if gs.model:
        models = list(pd.unique(cells[gs.model]))
    masks = {m: (cells[gs.model] == m).to_numpy() if m is not None
             else np.ones(len(cells), bool) for m in models}
    stats_of = {m: weights(mask) for m, mask in masks.items()}
    for m in models:
        a, mean, n = stats_of[m]
        add("rate", f"{gs.model} = {m}" if m is not None else "all rows", mean, n,
            within_var(masks[m], mean, n), a)
    for m in models[1:]:
        a0, m0, n0 = stats_of[models[0]]
        a1, m1, n1 = stats_of[m]
        var_s = within_var(masks[m], m1, n1) + within_var(masks[models[0]], m0, n0)
        add("difference", f"{m} - {models[0]}", m1 - m0, n0 + n1, var_s, a1 - a0)
    metric = [f for f in metric_factors if f in cells.columns and f != gs.model]
    for m in models if metric and binary else []:
        groups, _ = pd.factorize(pd.MultiIndex.from_frame(cells[metric].astype(str)))
        inside = masks[m]
        present = np.unique(groups[inside])
        a = np.zeros(len(cells))
        var_s = 0.0
        for g in present:
            sub = inside & (groups == g)
            a_g, r_g, n_g = weights(sub)
            a += a_g / len(present)
            var_s += within_var(sub, r_g, n_g) / len(present) ** 2
        label = (f"{gs.model} = {m}: " if m is not None else "") + (
            f"{len(present)} subgroups of {' x '.join(metric)}")
        add("deviation metric", label, float(a @ ybar), float(w[inside].sum()), var_s, a)
    for factor in subgroup_factors:
        if factor not in cells.columns or factor == gs.model:
            continue
        codes, uniques = pd.factorize(cells[factor])
        for j, value in enumerate(uniques):
            inside = codes == j
            if inside.all():
                continue
            a_in, r_in, n_in = weights(inside)
            a_out, r_out, n_out = weights(~inside)
            label = f"{factor} = {value}"
            add("subgroup rate", label, r_in, n_in, within_var(inside, r_in, n_in), a_in)
            if r_in > 0 and r_out > 0:
                var_s = (within_var(inside, r_in, n_in) / r_in ** 2
                         + within_var(~inside, r_out, n_out) / r_out ** 2)
                add("log disparity", label, float(np.log(r_in / r_out)), n_in, var_s,
                    a_in / r_in - a_out / r_out)
    return pd.DataFrame(rows)


def headline(errors: pd.DataFrame, quantities: Sequence[str] = ("rate", "difference"),
             top: int = 3) -> list[str]:
    """One sentence per headline number of a :func:`total_error` table (the rows whose
    ``quantity`` is in ``quantities``): the estimate, its sampling and total-error
    intervals, how much wider, and the components' shares of its variance, largest
    first, naming the facet that dominates (``top`` shares at most)."""
    out = []
    for r in errors[errors["quantity"].isin(quantities)].to_dict("records"):
        shares = sorted(((k.removeprefix("share_"), v) for k, v in r.items()
                         if k.startswith("share_") and v == v and v >= 0.005),
                        key=lambda kv: -kv[1])
        parts = ", ".join(f"{k} {100 * v:.0f} %" for k, v in shares[:top])
        out.append(f"{r['label']}: {r['estimate']:.4g}, sampling interval "
                   f"[{r['ci_low_sampling']:.4g}, {r['ci_high_sampling']:.4g}], over the "
                   f"facets [{r['ci_low']:.4g}, {r['ci_high']:.4g}] (SE x{r['se_ratio']:.2g}); "
                   f"shares of its variance: {parts or 'none'}; "
                   + (f"{r['dominant']} dominates." if r["dominant"] != RESIDUAL else
                      "no facet dominates (the residual is the largest part)."))
    return out
