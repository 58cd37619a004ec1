"""Factor importance for a continuous outcome: linear and mixed models (``docs/methods.md``).

The model is ``y = b0 + sum_j sum_{v != ref_j} b_jv [F_j = v] + sum_k c_k z_k + e``:
treatment-coded factors as in the logistic fit (:mod:`analysis.importance`) plus numeric
covariates ``z_k`` (standardised as ``(x - mean) / sd`` with the sample standard
deviation, R's ``scale``, unless ``standardise=False``; the output says which). ``b_jv``
is the difference in the mean score between value ``v`` and the reference with the other
factors and covariates held fixed.

**Least squares on sufficient statistics.** The rows are summed into cells (the factor
values x covariate values x cluster): ``n``, ``sum y`` and ``sum y^2`` per cell are all
that ordinary least squares needs: ``X'X = X' diag(n) X``, ``X'y = X' s``, the residual
sum of squares ``sum_c (q_c - 2 yhat_c s_c + n_c yhat_c^2)``; so the fit costs the number
of cells, as the logistic one. With a cluster, the covariance is by default CR2 from the
cluster scores ``u_g = sum_{c in g} x_c (s_c - n_c yhat_c)`` with each coefficient's
Satterthwaite df and HTZ factor tests (:class:`analysis.clusters.SmallSampleCR2`, equal to
clubSandwich on ``lm``); ``small_sample="none"`` is the sandwich with statsmodels' factor
``G / (G - 1) * (N - 1) / (N - p)`` and z tests, equal to statsmodels ``OLS(...).fit(
cov_type="cluster")`` on the rows. Without a cluster: the classical ``s^2 (X'X)^-1`` with
t tests on ``N - p`` degrees of freedom, as ``OLS(...).fit()``. The mixed model's fixed
effects get t tests on Satterthwaite df (lmerTest's convention: :mod:`analysis.mixed_df`).

**Mixed model** (``mixed=True``): statsmodels ``MixedLM`` on the rows (REML), random
effects per cluster: an intercept and, with ``random_slopes=True``, a slope for every
column of the fixed part, which is the model lm-eval's DiscrimEval aggregation fits
(``smf.mixedlm(..., groups="decision_question_id", re_formula=<the fixed part>)``).
A fit that statsmodels reports as not converged is refused (lm-eval reports its numbers
regardless); ``accept_unconverged=True`` returns it with a note.

Aliased factors are refused with the same explanation and :class:`~analysis.importance.Fix`
es as the logistic fit (the same checks run on the factor cells).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis import importance as L
from analysis.clusters import (
    SmallSampleCR2,
    covariance_rank,
    describe_satterthwaite,
    few_clusters_note,
    positive_definite_factor,
)
from analysis.columns import (
    CI_HIGH,
    CI_LOW,
    COEF,
    DESIGN_EFFECT,
    DF,
    EFFECT,
    FACTOR,
    N_CLUSTERS,
    NAIVE_STD_ERR,
    P_ADJUSTED,
    P_VALUE,
    REASON,
    ROBUST_WALD_DF_DENOMINATOR,
    STD_ERR,
    TERM,
    VALUE,
    N,
)
from analysis.design import Design, factor_values
from analysis.design_outcome import is_continuous  # a design's predicate, re-exported
from analysis.errors import AnalysisError
from analysis.importance import FROM_DESIGN, INTERCEPT, ImportanceRefusal
from analysis.importance_adjust import adjust_tests, adjusted_by
from analysis.multiple_testing import adjust_p
from analysis.subgroups import benjamini_hochberg

__all__ = [
    "HIGHER", "LOWER", "LinearImportanceResult", "MEAN", "MIXED", "OLS", "OLS_CLUSTER",
    "STATISTIC", "TERM_COLUMNS", "is_continuous", "linear_importance",
    "logistic_with_covariates",
]


#: Column of a term's mean outcome (rows with the term's value).
MEAN = "mean"
#: Column of the test statistic (t; z with ``small_sample="none"``).
STATISTIC = "statistic"
#: Labels of the ``effect`` column.
HIGHER, LOWER = "higher", "lower"
TERM_COLUMNS = [TERM, FACTOR, VALUE, N, MEAN, COEF, STD_ERR, STATISTIC, P_VALUE, P_ADJUSTED,
                CI_LOW, CI_HIGH, EFFECT]
OLS, OLS_CLUSTER, MIXED = "ols", "cluster", "mixed"


@dataclass(frozen=True)
class LinearImportanceResult:
    """A linear (or mixed) model of a continuous outcome on factors and covariates.

    Attributes
    ----------
    terms
        One row per fixed coefficient (intercept, factor values, covariates), columns
        :data:`TERM_COLUMNS`: ``term``, ``factor`` (the covariate's name for a covariate),
        ``value``, ``n`` (rows with the value; all rows for the intercept's reference
        cell and covariates), ``mean`` (their mean outcome), ``coef`` (difference in
        mean against the reference, other terms fixed; per standard deviation of a
        standardised covariate), ``std_err``, ``statistic`` (t or z), ``p_value``,
        ``p_adjusted`` (over the non-intercept terms by ``adjust``'s method, default
        Benjamini-Hochberg: :mod:`analysis.importance_adjust`), ``ci_low``,
        ``ci_high`` (on the outcome's scale), ``effect`` (``higher`` / ``lower`` /
        ``not significant`` / ``baseline``); with a cluster also ``naive_std_err`` and
        ``design_effect``.
    factor_tests
        Wald test per factor and covariate: ``factor``, ``df``, ``statistic``
        (chi-square; a mixed model's: F on ``df`` and ``df_denominator``, the
        Satterthwaite denominator df of lmerTest's ``anova``), ``p_value``,
        ``p_adjusted``.
    """

    terms: pd.DataFrame
    factor_tests: pd.DataFrame
    outcome: str
    factors: tuple[str, ...]
    references: Mapping[str, str]
    covariates: tuple[str, ...]
    standardised: bool
    n_rows: int
    n_cells: int
    n_parameters: int
    r2: float
    residual_std: float
    covariance: str
    confidence: float
    alpha: float
    cluster: str | None = None
    n_clusters: int = 0
    converged: bool = True
    random_effects: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: ``"satterthwaite"`` (CR2 default with a cluster), ``"G - 1"``, ``"normal"``, or ""
    #: (no cluster: t on N - p; the mixed model: z).
    df_method: str = ""

    def summary(self) -> dict:
        """Scalars of the fit as a plain dict (for JSON and the app's metrics)."""
        return {"outcome": self.outcome, "outcome_type": "continuous",
                "factors": list(self.factors), "references": dict(self.references),
                "covariates": list(self.covariates), "covariates_standardised":
                self.standardised, "n_rows": self.n_rows, "n_cells": self.n_cells,
                "n_parameters": self.n_parameters, "r2": self.r2,
                "residual_std": self.residual_std, "covariance": self.covariance,
                "cluster": self.cluster, "n_clusters": self.n_clusters,
                "converged": self.converged, "random_effects": list(self.random_effects),
                "confidence": self.confidence, "alpha": self.alpha, "notes": list(self.notes),
                "df_method": self.df_method}


def _rows(data: pd.DataFrame, design: Design, outcome: str, factors: list[str],
          covariates: list[str], cluster: str | None, where, exclude) -> tuple[pd.DataFrame,
                                                                           list[str]]:
    from analysis.cells import filter_rows

    notes = []
    needed = [outcome, *factors, *covariates, *([cluster] if cluster else [])]
    missing = [c for c in needed if c not in data.columns]
    if missing:
        raise AnalysisError(f"The table has no column {', '.join(map(repr, missing))} "
                            f"(columns: {', '.join(map(str, data.columns[:12]))}).")
    if cluster is not None and cluster in factors:
        raise AnalysisError(f"The cluster column {cluster!r} is also a factor of the model: "
                            "leave it out of the factors or choose another cluster.")
    table = filter_rows(data, where) if where else data
    for name, dropped in exclude.items():
        table = table[~table[name].astype(str).isin(dropped)]
    y = pd.to_numeric(table[outcome], errors="coerce")
    if table[outcome].notna().sum() and y.notna().sum() < table[outcome].notna().sum():
        raise AnalysisError(f"The outcome {outcome!r} is not numeric (e.g. "
                            f"{table.loc[y.isna() & table[outcome].notna(), outcome].iloc[0]!r}"
                            "): a continuous outcome needs numbers.")
    keep = y.notna() & np.isfinite(y)
    for c in covariates:
        z = pd.to_numeric(table[c], errors="coerce")
        if z.notna().sum() < table[c].notna().sum():
            raise AnalysisError(f"The covariate {c!r} is not numeric: a covariate is a number "
                                "(make it a factor instead).")
        keep &= z.notna()
    dropped = int((~keep).sum())
    if dropped:
        notes.append(f"{dropped:,} rows without the outcome or a covariate are left out")
    table = table[keep]
    if len(table) == 0:
        raise ImportanceRefusal("no_variation", "No row with an outcome is left in the subset.")
    return table, notes


@dataclass
class _Prepared:
    """Rows, codes, covariates and the cells of a fit (shared by both models)."""

    outcome: str
    factors: list[str]
    refs: dict[str, str]
    covariates: list[str]
    cluster: str | None
    notes: list[str]
    y: np.ndarray
    values: dict[str, list[str]]
    codes: dict[str, np.ndarray]
    Z: np.ndarray
    group: np.ndarray | None
    terms: list
    names: list[str]
    cells: pd.DataFrame
    X: np.ndarray
    #: the cells' factor codes, for messages and the logistic fit's checks
    cell_codes: dict[str, np.ndarray]


def _prepare(data, design, *, outcome, factors, references, covariates, standardise, where,
             exclude, cluster, alpha, adjust, confidence, min_rows_per_parameter, what
             ) -> _Prepared:
    """Options checked, rows kept, factor codes, covariates, checks, cells, design matrix."""
    if adjust not in L.ADJUSTS:
        raise AnalysisError(f"adjust must be one of {', '.join(L.ADJUSTS)}.")
    if not 0 < alpha < 1 or not 0 < confidence < 1:
        raise AnalysisError("alpha and confidence must lie strictly between 0 and 1.")
    outcome = outcome or (design.outcome.column if design.outcome else None)
    if not outcome:
        raise AnalysisError(f"Name the {what} outcome column (the design has no outcome).")
    factors = list(factors) if factors is not None else design.names
    covariates = list(covariates) if covariates is not None else list(design.covariates)
    if not factors and not covariates:
        raise AnalysisError("Choose at least one factor or covariate for the regression.")
    overlap = set(factors) & set(covariates)
    if overlap:
        raise AnalysisError(f"{', '.join(sorted(overlap))} is both a factor and a covariate.")
    refs = {f: design.factor(f).reference for f in factors}
    for f, v in (references or {}).items():
        if f not in refs:
            raise AnalysisError(f"Reference given for {f!r}, which is not a factor of the model.")
        if str(v) not in design.factor(f).values:
            raise AnalysisError(f"Reference {v!r} is not a value of {f!r}.")
        refs[f] = str(v)
    if cluster is FROM_DESIGN:
        cluster = design.cluster
    exclude = {k: [str(x) for x in ([v] if isinstance(v, str) else v)]
               for k, v in (exclude or {}).items() if v}
    table, notes = _rows(data, design, outcome, factors, covariates, cluster, where, exclude)
    y = pd.to_numeric(table[outcome]).to_numpy(dtype=float)
    n_rows = len(y)

    # factor codes per row, in the design's declared values
    values, codes = {}, {}
    for f in factors:
        c, labels = factor_values(table[f])
        declared = list(design.factor(f).values)
        unknown = [v for v in labels if v not in declared]
        if unknown:
            raise AnalysisError(f"Factor {f!r} has values the design does not declare "
                                f"({', '.join(unknown[:5])}): apply the design first.")
        remap = np.array([declared.index(v) for v in labels], dtype=np.int64)
        values[f], codes[f] = declared, remap[c.to_numpy(dtype=np.int64)]
    Z = np.column_stack([pd.to_numeric(table[c]).to_numpy(dtype=float) for c in covariates]) \
        if covariates else np.zeros((n_rows, 0))
    if covariates and standardise:
        sd = Z.std(axis=0, ddof=1)
        for c, s in zip(covariates, sd, strict=True):
            if not s > 0:
                raise ImportanceRefusal("constant_factor", f"The covariate {c} takes one value "
                                        "in the subset: leave it out.")
        Z = (Z - Z.mean(axis=0)) / sd
    group = None
    if cluster:
        group, cluster_labels = factor_values(table[cluster])
        group = group.to_numpy(dtype=np.int64)

    # checks on the factor cells, the logistic fit's own (same explanations and fixes)
    terms: list = [L._Term(INTERCEPT, None, None, ())]
    if factors:
        fcells = L._Cells(values, codes, np.ones(n_rows), y).aggregate()
        L._check_constant(fcells, notes)
        L._check_references(fcells, refs, notes)
        terms = L._build_terms(fcells, refs, [], set())
        deps = L._dependencies(L._matrix(fcells, terms))
        if deps:
            raise L._aliasing_refusal(fcells, terms, L._matrix(fcells, terms), deps, refs,
                                      notes, prompt_factors=design.of_kind("prompt"))

    # sufficient statistics per cell (factor codes x covariate values x cluster)
    key_cols = {**{f"f{i}": codes[f] for i, f in enumerate(factors)},
                **{f"z{i}": Z[:, i] for i in range(Z.shape[1])}}
    if group is not None:
        key_cols["g"] = group
    keyed = pd.DataFrame({**key_cols, "y": y, "y2": y * y})
    cells = keyed.groupby(list(key_cols), sort=False).agg(
        n=("y", "size"), s=("y", "sum"), q=("y2", "sum")).reset_index()
    ccodes = {f: cells[f"f{i}"].to_numpy(dtype=np.int64) for i, f in enumerate(factors)}
    n, s, q = (cells[c].to_numpy(dtype=float) for c in ("n", "s", "q"))
    Xf = L._matrix(L._Cells(values, ccodes, n, s), terms)
    Zc = cells[[f"z{i}" for i in range(Z.shape[1])]].to_numpy(dtype=float)
    X = np.hstack([Xf, Zc])
    names = [t.name for t in terms] + list(covariates)
    # a covariate constant within the factor cells, or following them: on the distinct
    # rows of X (factor cells x covariate values), the factor part is checked above
    deps = L._dependencies(np.unique(X, axis=0)) if covariates else []
    if deps:
        bad = [names[j] for j, _ in deps]
        raise ImportanceRefusal("aliased", f"The covariate(s) {', '.join(bad)} are constant "
                                "within the factor cells or combinations of the factors (e.g. "
                                "a covariate that takes one value per factor value), so their "
                                "effect cannot be told apart: leave them out or drop the "
                                "factor they follow.",
                                [L.Fix(f"Drop factor {f}", drop_factors=(f,)) for f in factors])
    p = X.shape[1]
    if n_rows < min_rows_per_parameter * p or n_rows <= p:
        raise ImportanceRefusal("too_few_rows", f"Too few rows: {n_rows:,} rows for {p} "
                                f"parameters (at least {min_rows_per_parameter:g} per "
                                "parameter are needed).",
                                [L.Fix(f"Drop factor {f}", drop_factors=(f,)) for f in factors])

    return _Prepared(outcome, factors, refs, covariates, cluster or None, notes, y, values,
                     codes, Z, group, terms, names, cells, X, ccodes)


def linear_importance(
    data: pd.DataFrame,
    design: Design,
    *,
    outcome: str | None = None,
    factors: Sequence[str] | None = None,
    references: Mapping[str, str] | None = None,
    covariates: Sequence[str] | None = None,
    standardise: bool = True,
    where: L.Where | None = None,
    exclude: Mapping[str, Sequence[str]] | None = None,
    cluster: str | None = FROM_DESIGN,
    mixed: bool = False,
    random_slopes: bool = True,
    accept_unconverged: bool = False,
    alpha: float = 0.05,
    adjust: L.Adjust = "bh",
    confidence: float = 0.95,
    min_rows_per_parameter: float = 2.0,
    small_sample: L.SmallSample = "cr2",
) -> LinearImportanceResult:
    """Linear (or mixed) model of a continuous outcome on factors and covariates.

    Parameters
    ----------
    data
        The results table (one row per response) with the outcome column.
    design
        Declares the factors' values and references, the outcome (default column), the
        cluster and the covariates.
    outcome
        The score column (default: the design's outcome column).
    factors, references, where, exclude, alpha, adjust, confidence
        As :func:`analysis.importance.factor_importance`.
    covariates
        Numeric columns entered as they are or standardised (default: the design's).
    standardise
        Enter covariates as ``(x - mean) / sd`` (sample sd, the rows of the fit), as
        lm-eval's DiscrimEval analysis does with age; False: as they are.
    cluster
        Correlated rows (default: the design's cluster; None: independent rows).
        Cluster-robust standard errors for the linear fit; the grouping of the mixed
        model.
    mixed
        Fit statsmodels' ``MixedLM`` with random effects per cluster.
    random_slopes
        Mixed model: random slopes of every fixed column besides the random intercept
        (lm-eval's DiscrimEval model); False: random intercept only.
    accept_unconverged
        Mixed model: return a fit statsmodels reports as not converged (with a note)
        instead of refusing it.
    min_rows_per_parameter
        Refuse when there are fewer rows than this times the number of parameters.
    small_sample
        Linear model with a cluster: ``"cr2"`` (default) the bias-reduced covariance with
        each coefficient's Satterthwaite df and HTZ factor tests (clubSandwich's
        ``coef_test`` / ``Wald_test``; :class:`analysis.clusters.SmallSampleCR2`);
        ``"cr1"`` the CR1 sandwich with t(G - 1); ``"none"`` the CR1 sandwich with z
        (statsmodels ``OLS(...).fit(cov_type="cluster")``).

    Returns
    -------
    LinearImportanceResult

    Raises
    ------
    ImportanceRefusal
        Constant factor, absent reference, aliased factors (with the logistic fit's
        fixes), a constant or aliased covariate, too few rows, a mixed model that did
        not converge.
    AnalysisError
        Unknown columns, a non-numeric outcome or covariate, bad options.
    """
    prep = _prepare(data, design, outcome=outcome, factors=factors, references=references,
                    covariates=covariates, standardise=standardise, where=where,
                    exclude=exclude, cluster=cluster, alpha=alpha, adjust=adjust,
                    confidence=confidence, min_rows_per_parameter=min_rows_per_parameter,
                    what="continuous")
    (outcome, factors, refs, covariates, cluster, notes, y, values, codes, Z, group, terms,
     names, cells, X) = (prep.outcome, prep.factors, prep.refs, prep.covariates, prep.cluster,
                         prep.notes, prep.y, prep.values, prep.codes, prep.Z, prep.group,
                         prep.terms, prep.names, prep.cells, prep.X)
    if mixed and not cluster:
        raise AnalysisError("A mixed model needs a cluster column (its random effects are "
                            "per cluster): name one, e.g. the decision question or template.")
    n_rows = len(y)
    n, s, q = (cells[c].to_numpy(dtype=float) for c in ("n", "s", "q"))
    p = X.shape[1]
    xtx = X.T @ (X * n[:, None])
    bread = np.linalg.inv(xtx)
    beta = bread @ (X.T @ s)
    fitted = X @ beta
    rss = float(np.sum(q - 2 * fitted * s + n * fitted**2))
    tss = float(q.sum() - s.sum() ** 2 / n_rows)
    sigma2 = rss / (n_rows - p)
    naive = sigma2 * bread
    cov, kind, df_t, n_groups = naive, OLS, float(n_rows - p), 0
    converged, re_names = True, ()
    naive_se, support, mixed_df = None, None, None
    L.check_small_sample(small_sample)
    if group is not None and not mixed:
        used, g_index = np.unique(cells["g"].to_numpy(), return_inverse=True)
        n_groups = len(used)
        if n_groups < 2:
            raise ImportanceRefusal("too_few_rows", "Cluster-robust standard errors need at "
                                    "least two clusters in the subset; there is one.")
        scores = np.zeros((n_groups, p))
        np.add.at(scores, g_index, X * (s - n * fitted)[:, None])
        kind, naive_se = OLS_CLUSTER, np.sqrt(np.diag(naive))
        presence = np.zeros((n_groups, p), dtype=bool)
        for j in range(p):
            presence[np.unique(g_index[(X[:, j] != 0) & (n > 0)]), j] = True
        if small_sample == "cr2":
            infos = np.zeros((n_groups, p, p))
            for j in range(n_groups):
                rows = g_index == j
                infos[j] = (X[rows] * n[rows, None]).T @ X[rows]
            kernel = SmallSampleCR2(scores, bread, infos)
            cov, df_t = kernel.cov, math.nan
            support = L._Support(kernel.satterthwaite(np.eye(p)), np.full(p, np.nan),
                                 presence, True, kernel)
            how = describe_satterthwaite(n_groups)
        else:
            factor = n_groups / (n_groups - 1) * (n_rows - 1) / (n_rows - p)
            cov = factor * bread @ (scores.T @ scores) @ bread
            df_t = math.inf if small_sample == "none" else float(n_groups - 1)
            support = L._Support(np.full(p, np.nan if small_sample == "none" else df_t),
                                 np.full(p, np.nan), presence, False)
            how = ("CR1 sandwich, z: statsmodels OLS cov_type='cluster'"
                   if small_sample == "none" else f"CR1 sandwich, t with {n_groups - 1} df")
        notes.append(f"standard errors, p-values and intervals are cluster-robust over the "
                     f"{n_groups:,} values of {cluster} ({how})")
        few = few_clusters_note(n_groups, cluster, small_sample,
                                satterthwaite=small_sample == "cr2")
        if few:
            notes.append(few)
        notes.extend(support.notes(terms + [L._Term(c, c, None, ()) for c in covariates],
                                   cluster, n_groups))
    if mixed:
        # rows in the table's order, the columns of the fixed part (as lm-eval's formula)
        row_terms = L._matrix(L._Cells(values, codes, np.ones(n_rows), y), terms)
        X_rows = np.hstack([row_terms, Z])
        beta, cov, converged, n_groups, re_names, result = _mixed(
            y, X_rows, group, names, random_slopes, cluster, accept_unconverged, notes)
        fitted_rows = X_rows @ beta
        rss = float(np.sum((y - fitted_rows) ** 2))
        kind = MIXED
        from analysis.mixed_df import satterthwaite_mixed

        mixed_df = satterthwaite_mixed(y, X_rows, X_rows if random_slopes else X_rows[:, :1],
                                       group, np.asarray(result.cov_re), float(result.scale))
        df_t = mixed_df.df
        if not np.all(np.isfinite(df_t)):
            notes.append("the REML deviance's Hessian is not positive definite at the fit (a "
                         "variance at its boundary, or a fit that did not converge): no "
                         "Satterthwaite df, so no p-values or intervals")
    if covariates:
        notes.append("covariates " + ", ".join(covariates) + (
            " standardised: (x - mean) / sd over the rows of the fit, coefficient per "
            "standard deviation" if standardise else " entered as they are: coefficient per "
            "unit"))
    table_out = _terms_table(terms, names, X, n, s, beta, cov, df_t, alpha, adjust,
                             confidence, factors, covariates, naive_se, support)
    if mixed:
        table_out.insert(table_out.columns.get_loc(STATISTIC), DF, df_t)
    tests = adjust_tests(_wald_tests(names, terms, beta, cov, factors, covariates, support,
                                     notes, mixed_df=mixed_df), adjust)
    return LinearImportanceResult(
        terms=table_out, factor_tests=tests, outcome=outcome, factors=tuple(factors),
        references=refs, covariates=tuple(covariates), standardised=standardise,
        n_rows=n_rows, n_cells=len(n), n_parameters=p,
        r2=1 - rss / tss if tss > 0 else math.nan,
        residual_std=math.sqrt(rss / (n_rows - p)), covariance=kind, confidence=confidence,
        alpha=alpha, cluster=cluster or None, n_clusters=n_groups, converged=converged,
        random_effects=re_names, notes=tuple(notes),
        df_method=("satterthwaite (lmerTest)" if mixed else ""
                   ) if support is None else support.method)


def _mixed(y, X, group, names, random_slopes, cluster, accept_unconverged, notes):
    """statsmodels MixedLM (REML, its default optimiser as lm-eval calls ``fit()``)."""
    from statsmodels.regression.mixed_linear_model import MixedLM
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    exog_re = X if random_slopes else X[:, :1]
    re_names = tuple(names) if random_slopes else (INTERCEPT,)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            result = MixedLM(y, X, groups=group, exog_re=exog_re).fit()
        except (np.linalg.LinAlgError, ValueError) as exc:
            raise ImportanceRefusal("not_converged", f"The mixed model could not be fitted "
                                    f"(statsmodels MixedLM: {exc}). Fit a random intercept only "
                                    "(--random-effects intercept) or the linear model with "
                                    f"cluster-robust errors over {cluster} (without --mixed)."
                                    ) from None
    messages = list(dict.fromkeys(str(w.message).strip().rstrip(".") for w in caught
                                  if issubclass(w.category, ConvergenceWarning)))
    n_groups = len(np.unique(group))
    if not result.converged:
        what = ("intercept and slopes of " + ", ".join(names[1:]) if random_slopes
                else "intercept")
        text = (f"The mixed model (random {what} "
                f"per value of {cluster}, {n_groups} groups) did not converge: statsmodels "
                f"MixedLM says {'; '.join(messages) or 'not converged'}. Its numbers are not "
                "a maximum of the likelihood. Fixes: a random intercept only "
                "(--random-effects intercept, random_slopes=False); the linear model with "
                f"cluster-robust errors over {cluster} (without --mixed); or accept the fit as "
                "lm-eval does (--accept-unconverged).")
        if not accept_unconverged:
            raise ImportanceRefusal("not_converged", text)
        notes.append("the mixed model did NOT converge (accepted on request): "
                     + ("; ".join(messages) or "statsmodels reports no convergence"))
    elif messages:
        notes.append("statsmodels MixedLM: " + "; ".join(messages))
    k = X.shape[1]
    beta = np.asarray(result.fe_params, dtype=float)
    cov = np.asarray(result.cov_params(), dtype=float)[:k, :k]
    notes.append(f"mixed model (statsmodels MixedLM, REML): random "
                 f"{'intercept and slopes' if random_slopes else 'intercept'} per value of "
                 f"{cluster} ({n_groups} groups); t tests on each coefficient's "
                 "Satterthwaite df (lmerTest's convention); the factor tests are F tests on "
                 "Satterthwaite denominator df (lmerTest's anova(fit, ddf = "
                 "\"Satterthwaite\"))")
    return beta, cov, bool(result.converged), n_groups, re_names, result


def _terms_table(terms, names, X, n, s, beta, cov, df_t, alpha, adjust, confidence,
                 factors, covariates, naive_se, support=None):
    from scipy.special import ndtr, ndtri, stdtr, stdtrit  # not scipy.stats: slow import

    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = beta / se
    if support is not None and support.satterthwaite:  # each term's own df (CR2)
        df_t = support.df
    if np.ndim(df_t) == 0 and math.isinf(df_t):
        p = 2 * ndtr(-np.abs(stat))
        crit = np.full(len(beta), float(ndtri(0.5 + confidence / 2)))
    else:
        with np.errstate(invalid="ignore"):
            p = 2 * stdtr(df_t, -np.abs(stat))
            crit = np.broadcast_to(stdtrit(df_t, 0.5 + confidence / 2), p.shape).copy()
    ok = support.estimable if support is not None else np.ones(len(beta), dtype=bool)
    p, crit = np.where(ok, p, np.nan), np.where(ok, crit, np.nan)
    p_adj = np.concatenate([[np.nan], adjust_p(p[1:], adjusted_by(adjust))])
    k = len(terms)
    n_term = np.concatenate([X[:, :k].T @ n, np.full(len(covariates), n.sum())])
    s_term = np.concatenate([X[:, :k].T @ s, np.full(len(covariates), s.sum())])
    ref_rows = X[:, 1:k].sum(axis=1) == 0 if k > 1 else np.ones(len(n), bool)
    n_term[0], s_term[0] = n[ref_rows].sum(), s[ref_rows].sum()
    label = p if adjust == "none" else p_adj
    effect = np.where(label < alpha, np.where(beta > 0, HIGHER, LOWER), L.NOT_SIGNIFICANT)
    effect = np.where(ok, effect, L.NOT_ESTIMABLE).astype(object)
    effect[0] = L.BASELINE
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s_term / n_term
    out = pd.DataFrame({
        TERM: names, FACTOR: [t.factor for t in terms] + list(covariates),
        VALUE: [t.value for t in terms] + [None] * len(covariates),
        N: n_term.round().astype(np.int64), MEAN: mean, COEF: beta, STD_ERR: se,
        STATISTIC: stat, P_VALUE: p, P_ADJUSTED: p_adj, CI_LOW: beta - crit * se,
        CI_HIGH: beta + crit * se, EFFECT: effect}, columns=TERM_COLUMNS)
    if naive_se is not None:
        out.insert(out.columns.get_loc(STATISTIC), NAIVE_STD_ERR, naive_se)
        out.insert(out.columns.get_loc(STATISTIC), DESIGN_EFFECT, se / naive_se)
    if support is not None:
        out.insert(out.columns.get_loc(STATISTIC), DF, support.df)
        out.insert(out.columns.get_loc(STATISTIC), N_CLUSTERS, support.clusters)
    return out


#: The mixed model's factor tests: the F test's Satterthwaite denominator df.
DF_DENOMINATOR = "df_denominator"


def _wald_tests(names, terms, beta, cov, factors, covariates, support=None, notes=None,
                mixed_df=None):
    """Wald test per factor and covariate: HTZ with the CR2 kernel (``support``), the F
    test on Satterthwaite denominator df of a mixed model (``mixed_df``, lmerTest's
    ``anova(fit, ddf = "Satterthwaite")``: column ``df_denominator``), else chi-square; a
    test whose covariance is singular or not positive definite (e.g. a 4-column factor
    over 3 clusters, or an unconverged mixed fit) is refused with the reason, never
    turned into a chi-square of a pseudo-inverse."""
    from scipy.special import chdtrc

    groups = [(f, [j for j, t in enumerate(terms) if t.factor == f]) for f in factors]
    groups += [(c, [len(terms) + i]) for i, c in enumerate(covariates)]
    clustered = support is not None
    rows = []
    for name, cols in groups:
        if not cols:
            continue
        stat = df_den = p_value = math.nan
        reason = ""
        weak = [names[j] for j in cols if clustered and not support.estimable[j]]
        if weak:
            reason = (f"{L._and(weak[:4])} cannot be estimated (fewer than 2 clusters, or "
                      "too few df), so no joint test of its columns exists")
        elif mixed_df is not None:
            test = mixed_df.f_test(np.eye(len(beta))[cols])
            reason = test.reason or ("" if test.df == len(cols) else (
                f"its covariance has rank {test.df} for {len(cols)} columns, so no test of "
                "all its columns exists"))
            if not reason:
                stat, df_den, p_value = test.statistic, test.df_denominator, test.p_value
        elif clustered and support.kernel is not None:
            test = support.kernel.factor_test(beta, cols)
            reason = test.reason
            if not reason:
                stat, df_den, p_value = test.statistic, test.df, test.p_value
        else:
            sub = cov[np.ix_(cols, cols)]
            try:
                chol = positive_definite_factor(sub)
                z = np.linalg.solve(chol, beta[cols])
                stat = float(z @ z)
                p_value = float(chdtrc(len(cols), stat))
            except np.linalg.LinAlgError:
                rank = covariance_rank(sub)
                reason = (f"its covariance is not positive definite (rank {rank} for "
                          f"{len(cols)} columns"
                          + (", at most G - 1 with the CR1 sandwich" if clustered else "")
                          + "), so no Wald test of all its columns exists")
        if reason and notes is not None:
            notes.append(f"no Wald test of {name}: {reason}")
        row = {FACTOR: name, "df": len(cols), "statistic": stat, P_VALUE: p_value}
        if clustered:
            row.update({ROBUST_WALD_DF_DENOMINATOR: df_den,
                        N_CLUSTERS: int(support.presence[:, cols].any(axis=1).sum()),
                        REASON: reason})
        else:
            if mixed_df is not None:
                row[DF_DENOMINATOR] = df_den
            if reason:
                row[REASON] = reason
        rows.append(row)
    columns = [FACTOR, "df", *([ROBUST_WALD_DF_DENOMINATOR] if clustered else []),
               *([DF_DENOMINATOR] if mixed_df is not None else []), "statistic", P_VALUE]
    out = pd.DataFrame(rows)
    out = out.reindex(columns=columns + [c for c in (N_CLUSTERS, REASON) if c in out.columns])
    out.insert(out.columns.get_loc(P_VALUE) + 1, P_ADJUSTED,
               benjamini_hochberg(out[P_VALUE].to_numpy(dtype=float)))
    return out


def logistic_with_covariates(
    data: pd.DataFrame,
    design: Design,
    *,
    covariates: Sequence[str],
    factors: Sequence[str] | None = None,
    references: Mapping[str, str] | None = None,
    standardise: bool = True,
    where: L.Where | None = None,
    exclude: Mapping[str, Sequence[str]] | None = None,
    cluster: str | None = FROM_DESIGN,
    alpha: float = 0.05,
    adjust: L.Adjust = "none",
    confidence: float = 0.95,
    likelihood_ratio: bool = True,
    small_sample: L.SmallSample = "cr2",
) -> L.ImportanceResult:
    """The logistic factor-importance model of the 0/1 deviation with numeric covariates.

    ``logit P(deviation) = b0 + treatment-coded factors + sum_k c_k z_k``, fitted by the
    logistic fit's own Newton-Raphson on cells that are the combinations of factor
    values, covariate values (and cluster), so it equals the row-level logit (statsmodels
    ``Logit``; cluster-robust as ``GLM(..., cov_type="cluster")``). Covariates are
    standardised unless ``standardise=False``; a covariate's ``coef`` is its log-odds
    ratio per standard deviation (or unit), its ``probability`` the fitted deviation
    probability at +1 (sd or unit) with every factor at its reference.

    Parameters
    ----------
    data
        The results table after :func:`analysis.design.apply_design` (``deviation``).
    design, factors, references, where, exclude, cluster, alpha, adjust, confidence,
    likelihood_ratio, small_sample
        As :func:`analysis.importance.factor_importance` (no interactions, no separation
        handling: a separated fit is refused; with a cluster, CR2 and t with G - 1 df by
        default, ``small_sample="none"`` is statsmodels' ``cov_type="cluster"``).
    covariates, standardise
        As :func:`linear_importance`.

    Returns
    -------
    analysis.importance.ImportanceResult
        Its ``terms`` (columns :data:`analysis.importance.TERM_COLUMNS`) end with one row
        per covariate (``factor`` = the covariate, ``value`` empty, ``n`` all rows).

    Raises
    ------
    ImportanceRefusal, AnalysisError
        As :func:`analysis.importance.factor_importance` and :func:`linear_importance`.
    """
    from analysis.columns import DEVIATION, DEVIATION_RATE, DEVIATIONS

    if not covariates:
        raise AnalysisError("Name at least one covariate (or use factor_importance).")
    if DEVIATION not in data.columns:
        raise AnalysisError("The logistic model needs the 'deviation' column: apply a design "
                            "with an outcome first.")
    prep = _prepare(data, design, outcome=DEVIATION, factors=factors, references=references,
                    covariates=covariates, standardise=standardise, where=where,
                    exclude=exclude, cluster=cluster, alpha=alpha, adjust=adjust,
                    confidence=confidence, min_rows_per_parameter=L.MIN_ROWS_PER_PARAMETER,
                    what="0/1")
    cells, X = prep.cells, prep.X
    n = cells["n"].to_numpy(dtype=float)
    k = cells["s"].to_numpy(dtype=float)
    n_rows, n_dev = int(n.sum()), int(k.sum())
    ccodes = prep.cell_codes
    lcells = L._Cells(prep.values, ccodes, n, k,
                      None if prep.group is None else cells["g"].to_numpy(dtype=np.int64),
                      0 if prep.group is None else int(prep.group.max()) + 1)
    L._check_variation(lcells)
    terms = [*prep.terms, *(L._Term(c, c, None, ()) for c in prep.covariates)]
    fit = L._fit(X, n, k)
    cov = L._covariance(X, n, fit.eta) if fit.converged else np.full((X.shape[1],) * 2, np.nan)
    L._check_fit(fit, cov, lcells, terms)
    notes, params, robust, df, support = list(prep.notes), fit.params, None, None, None
    if prep.cluster:
        robust = L._robust(X, lcells, fit, cov, n_rows=n_rows, gee=False,
                           small_sample=small_sample)
        params, cov = robust.params, robust.cov
        notes.extend(robust.notes(prep.cluster, small_sample))
        df = L.reference_df(small_sample, robust.n_clusters)
        support = L._support(X, lcells, terms, robust, df)
    table = L._terms_table(terms, X, lcells, params, cov, alpha=alpha, adjust=adjust,
                           confidence=confidence, df=df, support=support)
    last = len(prep.terms)
    at_refs = X[:, 1:last].sum(axis=1) == 0  # the intercept's rows: every factor at reference
    table.loc[0, N], table.loc[0, DEVIATIONS] = int(n[at_refs].sum()), int(k[at_refs].sum())
    table.loc[0, DEVIATION_RATE] = k[at_refs].sum() / n[at_refs].sum()
    table.loc[last:, N] = n_rows
    table.loc[last:, DEVIATIONS] = n_dev
    table.loc[last:, DEVIATION_RATE] = n_dev / n_rows
    table.loc[last:, VALUE] = None
    if robust is not None:
        L._insert_naive_columns(table, robust, support)
        notes.extend(support.notes(terms, prep.cluster, robust.n_clusters))
    tests = (L._lr_tests(X, lcells, terms, fit, [*prep.factors, *prep.covariates], [])
             if likelihood_ratio else pd.DataFrame(columns=L.TEST_COLUMNS))
    if robust is not None:
        tests = L._robust_wald_tests(tests, terms, params, cov,
                                     [*prep.factors, *prep.covariates], [], df=df,
                                     notes=notes, support=support)
    tests = adjust_tests(tests, adjust)
    notes.append("covariates " + ", ".join(prep.covariates) + (
        " standardised: (x - mean) / sd over the rows of the fit; coef = log-odds ratio per "
        "standard deviation" if standardise else " entered as they are; coef = log-odds "
        "ratio per unit"))
    null_llf = L._loglik(np.full(len(n), math.log(n_dev / (n_rows - n_dev))), n, k)
    return L.ImportanceResult(
        terms=table, factor_tests=tests, factors=tuple(prep.factors), references=prep.refs,
        interactions=(), n_rows=n_rows, n_deviations=n_dev, n_cells=len(n),
        n_parameters=X.shape[1], log_likelihood=fit.llf, null_log_likelihood=null_llf,
        iterations=fit.iterations, alpha=alpha, adjust=adjust, confidence=confidence,
        notes=tuple(notes), cluster=prep.cluster,
        n_clusters=0 if robust is None else robust.n_clusters,
        covariance="naive" if robust is None else robust.kind,
        reference_df=None if support is not None and support.satterthwaite else df,
        small_sample_label="" if robust is None else L.SMALL_SAMPLE_LABELS[small_sample],
        df_method="" if support is None else support.method)
