"""Factor importance by logistic regression (``docs/methods.md`` §4).

The model is ``logit P(deviation = 1) = b0 + sum_j sum_{v != ref_j} b_jv [F_j = v]``
(treatment coding against each factor's reference value), optionally with two-factor
interactions, fitted on a subset of rows the user selects. ``b_jv > 0`` marks a risk
factor, ``b_jv < 0`` a protective one; the intercept is the log-odds of deviation when
every factor is at its reference, reported as the probability ``1 / (1 + exp(-b0))``.

The fit runs on the cell table: the Bernoulli likelihood of the rows equals the
binomial likelihood of the cells with ``(k, n - k)`` per cell (up to a constant), so a
binomial GLM on the cells gives the row-level estimates, standard errors and
likelihood-ratio statistics exactly, at the cost of the number of cells instead of the
number of rows. The design matrix is built directly from the categorical codes (no
formula parsing); Newton-Raphson (IRLS) on the cells finds the maximum, and the
covariance is the inverse information at the estimates, ``(X' diag(n p (1 - p)) X)^-1``
(the inverse observed information of the row-level logit). The tests check estimates,
standard errors, p-values and log-likelihood against statsmodels' row-level ``Logit``.

Before fitting, :func:`factor_importance` refuses, with an explanation and suggested
:class:`Fix` es, when the model is not estimable: no variation in the outcome, a factor
with one value in the subset, a reference value absent from the subset, linearly
dependent (aliased) columns, values with no or only deviations (separation), too few
rows per parameter. After fitting it refuses a fit that did not converge or ran off to
infinity (separation by a combination of values), so no number from a failed fit is
ever returned.

p-values are per coefficient and **not adjusted** for multiple testing; the
``p_adjusted`` column gives adjusted values over the non-intercept terms by the method
``adjust`` names (default ``"bh"``, Benjamini-Hochberg; any method of
:mod:`analysis.multiple_testing`), and the risk/protective labels use them
(``adjust="none"`` labels by the unadjusted p; ``p_adjusted`` then stays BH).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar, get_args

import numpy as np
import pandas as pd

from analysis.cells import filter_rows
from analysis.clusters import (
    DF_FLOOR,
    MIN_SUPPORTING_CLUSTERS,
    SATTERTHWAITE_LABEL,
    SMALL_SAMPLE_LABELS,
    SmallSample,
    SmallSampleCR2,
    check_small_sample,
    covariance_rank,
    critical_value,
    describe,
    describe_satterthwaite,
    few_clusters_note,
    positive_definite_factor,
    reference_df,
    resolve_cluster,
    two_sided_p,
    wald_p,
)
from analysis.columns import (
    CI_HIGH,
    CI_LOW,
    COEF,
    COEF_CI_HIGH,
    COEF_CI_LOW,
    DESIGN_EFFECT,
    DEVIATION,
    DEVIATION_RATE,
    DEVIATIONS,
    DF,
    EFFECT,
    FACTOR,
    LR_STATISTIC,
    MODEL_STD_ERR,
    N_CLUSTERS,
    N_PARAMETERS,
    NAIVE_STD_ERR,
    ODDS_RATIO,
    P_ADJUSTED,
    P_ADJUSTED_LR,
    P_VALUE,
    P_VALUE_LR,
    PROBABILITY,
    PROBABILITY_CI_HIGH,
    PROBABILITY_CI_LOW,
    REASON,
    ROBUST_MODEL_SE_RATIO,
    ROBUST_WALD_DF,
    ROBUST_WALD_DF_DENOMINATOR,
    ROBUST_WALD_STATISTIC,
    STD_ERR,
    TERM,
    VALUE,
    N,
    Z,
)
from analysis.design import Design
from analysis.errors import AnalysisError, FitError
from analysis.factor_defaults import suggest_factors  # re-exported: a page default
from analysis.importance_adjust import adjust_tests, adjusted_by
from analysis.importance_codes import ClusterPairs
from analysis.importance_parts import ImportanceParts, same_bits, table_signature
from analysis.labels import subset_caption  # re-exported: words, not a statistic
from analysis.multiple_testing import METHODS, Method, adjust_p
from analysis.subgroups import benjamini_hochberg
from analysis.values import factor_codes, format_value

__all__ = [
    "ADJUSTS", "Adjust", "BASELINE", "CLUSTER_ROBUST", "FROM_DESIGN", "Fix", "GEE", "INTERCEPT",
    "ImportanceRefusal", "ImportanceResult", "MAX_ITERATIONS", "MAX_MATRIX_ENTRIES",
    "MIN_EVENTS_PER_PARAMETER", "MIN_ROWS_PER_PARAMETER", "NAIVE", "NOT_ESTIMABLE",
    "NOT_SIGNIFICANT", "PROTECTIVE", "P_STEPS", "RISK", "ROBUST_TERM_COLUMNS",
    "ROBUST_TEST_COLUMNS", "RUNAWAY_LOGIT", "RUNAWAY_STD_ERR", "RefusalReason",
    "SEPARATION_ACTIONS", "SEPARATION_LABELS", "SeparationAction", "TERM_COLUMNS",
    "TEST_COLUMNS", "Where", "apply_fix", "factor_importance", "subset_caption",
    "suggest_factors", "uncertainty_label",
]


SeparationAction = Literal["refuse", "drop", "merge"]
SEPARATION_ACTIONS: tuple[str, ...] = get_args(SeparationAction)
#: What each separation action does, in words (the app's radio labels).
SEPARATION_LABELS = {"refuse": "Refuse and explain", "drop": "Leave their rows out",
                     "merge": "Merge them into the reference"}
#: The p-value thresholds offered for showing terms.
P_STEPS = [0.001, 0.01, 0.05, 0.1, 1.0]
#: ``adjust``: a method of :mod:`analysis.multiple_testing` (``p_adjusted`` by it, the
#: labels by ``p_adjusted``) or ``"none"`` (``p_adjusted`` Benjamini-Hochberg, the labels
#: by the unadjusted ``p_value``: the option's old meaning, kept).
Adjust = Method | Literal["none"]
ADJUSTS: tuple[str, ...] = (*METHODS, "none")  # derived: a new kernel method is one here
RefusalReason = Literal["no_variation", "constant_factor", "reference_absent", "aliased",
                        "separation", "too_few_rows", "not_converged"]
Where = Mapping[str, str | Sequence[str]]

#: ``cluster=`` default of :func:`factor_importance`: the design's cluster column (one
#: object, defined with the options: ``analysis/options``).
from analysis.options import FROM_DESIGN  # noqa: E402

#: Kinds of covariance (``ImportanceResult.covariance``).
NAIVE, CLUSTER_ROBUST, GEE = "naive", "cluster", "gee"
#: Name of the intercept term.
INTERCEPT = "(intercept)"
#: Labels of the ``effect`` column.
RISK, PROTECTIVE, NOT_SIGNIFICANT, BASELINE = "risk", "protective", "not significant", "baseline"
#: Label of a coefficient that rests on fewer than 2 clusters or too few df (no p-value).
NOT_ESTIMABLE = "not estimable"
#: Fewer rows than this per parameter are refused (overridable).
MIN_ROWS_PER_PARAMETER = 10.0
#: Fewer deviations (or non-deviations) than this per parameter give a warning note.
MIN_EVENTS_PER_PARAMETER = 10.0
MAX_ITERATIONS = 100
#: A fitted cell with |log-odds| above this means the estimates ran off to infinity.
RUNAWAY_LOGIT = 20.0
#: A standard error above this (log-odds) means the information matrix is near singular.
RUNAWAY_STD_ERR = 50.0
#: Refuse design matrices larger than this many entries (cells x parameters).
MAX_MATRIX_ENTRIES = 60_000_000
#: Relative residual below which a column counts as a combination of earlier columns.
_ALIAS_TOL = 1e-9
_MAX_FIX_ROUNDS = 50
#: Rows of the design matrix per block in products that would otherwise copy it whole.
_BLOCK = 1 << 16
#: Fixed-Hessian iterations of a likelihood-ratio refit before it falls back to Newton.
_MAX_CHORD_ITERATIONS = 40
#: A likelihood-ratio refit stops when less than this log-likelihood remains to gain.
_LLF_TOL = 1e-10
#: Relative residual above which the Cholesky factor of X'X vouches for independent columns.
_SURELY_INDEPENDENT = 1e-4
#: Design matrices with at least this many entries are fitted with one BLAS thread.
_ONE_THREAD_ENTRIES = 200_000
_T = TypeVar("_T")
#: Python threads over the row blocks of large products (each with one BLAS thread).
_BLOCK_THREADS = min(os.cpu_count() or 1, 4)

TERM_COLUMNS = [TERM, FACTOR, VALUE, N, DEVIATIONS, DEVIATION_RATE, COEF, STD_ERR, Z, P_VALUE,
                P_ADJUSTED, ODDS_RATIO, CI_LOW, CI_HIGH, COEF_CI_LOW, COEF_CI_HIGH, PROBABILITY,
                PROBABILITY_CI_LOW, PROBABILITY_CI_HIGH, EFFECT]
TEST_COLUMNS = [FACTOR, DF, LR_STATISTIC, P_VALUE, P_ADJUSTED]
#: With a cluster, the terms table gains these after the standard errors (before ``z``):
#: the coefficient's df (Satterthwaite with CR2; G - 1 with CR1; NaN: normal) and the
#: clusters holding its value.
ROBUST_TERM_COLUMNS = [DF, N_CLUSTERS]
#: With a cluster, the factor tests: the robust Wald test (HTZ with CR2) is ``p_value``;
#: the likelihood-ratio test (independent rows) keeps ``df``, ``lr_statistic``,
#: ``p_value_lr``, ``p_adjusted_lr``; ``reason`` says why a test is missing.
ROBUST_TEST_COLUMNS = [FACTOR, ROBUST_WALD_DF, ROBUST_WALD_DF_DENOMINATOR,
                       ROBUST_WALD_STATISTIC, P_VALUE, P_ADJUSTED, N_CLUSTERS, REASON, DF,
                       LR_STATISTIC, P_VALUE_LR, P_ADJUSTED_LR]


# --- refusals and their fixes -------------------------------------------------------------
@dataclass(frozen=True)
class Fix:
    """A change of the model specification that removes a refusal's cause.

    Apply it with :func:`apply_fix`. Every field is optional; ``label`` says in words
    what it does (shown on a button in the app, listed by the CLI).
    """

    label: str
    drop_factors: tuple[str, ...] = ()
    drop_interactions: tuple[tuple[str, str], ...] = ()
    #: Rows to leave out: ``((factor, (value, ...)), ...)``.
    exclude: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: New references: ``((factor, value), ...)``.
    references: tuple[tuple[str, str], ...] = ()
    on_separation: SeparationAction | None = None


class ImportanceRefusal(FitError):
    """The model cannot be fitted as specified.

    Attributes
    ----------
    reason
        One of ``no_variation``, ``constant_factor``, ``reference_absent``, ``aliased``,
        ``separation``, ``too_few_rows``, ``not_converged``.
    explanation
        What is wrong, naming the factors, values and rows concerned.
    fixes
        Suggested :class:`Fix` es (possibly none); ``str(exc)`` lists them too.
    """

    def __init__(self, reason: RefusalReason, explanation: str, fixes: Sequence[Fix] = ()):
        self.reason = reason
        self.explanation = explanation
        seen: dict[str, Fix] = {}
        for f in fixes:
            seen.setdefault(f.label, f)
        self.fixes = tuple(seen.values())
        text = explanation
        if self.fixes:
            text += "\nPossible fixes:\n" + "\n".join(f"- {f.label}" for f in self.fixes)
        super().__init__(text)


def apply_fix(
    fix: Fix,
    *,
    factors: Sequence[str],
    references: Mapping[str, str] | None = None,
    exclude: Mapping[str, Sequence[str]] | None = None,
    interactions: Sequence[str | tuple[str, str]] = (),
    on_separation: SeparationAction = "refuse",
) -> dict:
    """The keyword arguments of :func:`factor_importance` with ``fix`` applied.

    Returns
    -------
    dict
        Keys ``factors``, ``references``, ``exclude``, ``interactions``,
        ``on_separation``, ready to pass on with ``**``.
    """
    dropped = set(fix.drop_factors)
    pairs = [p for p in _parse_interactions(interactions)
             if p not in fix.drop_interactions and not (set(p) & dropped)]
    refs = {k: v for k, v in dict(references or {}).items() if k not in dropped}
    refs.update({k: v for k, v in fix.references if k in factors and k not in dropped})
    excl = {k: list(v) for k, v in dict(exclude or {}).items()}
    for name, values in fix.exclude:
        excl[name] = list(dict.fromkeys([*excl.get(name, []), *values]))
    return {
        "factors": [f for f in factors if f not in dropped],
        "references": refs,
        "exclude": excl,
        "interactions": pairs,
        "on_separation": fix.on_separation or on_separation,
    }


# --- result ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImportanceResult:
    """A converged logistic regression of deviation on factors.

    Attributes
    ----------
    terms
        One row per coefficient (intercept first), columns :data:`TERM_COLUMNS`:

        - ``term``: ``(intercept)``, ``factor[value]`` or ``a[x]:b[y]`` for interactions;
        - ``factor`` (None for the intercept; ``a:b`` for interactions), ``value``
          (None for the intercept; ``x:y`` for interactions);
        - ``n``, ``deviations``, ``deviation_rate``: rows of the subset with that value
          (both values for an interaction; every factor at its reference for the
          intercept);
        - ``coef`` (log-odds ratio against the reference; the intercept is the
          log-odds at all references), ``std_err``, ``z``, ``p_value`` (two-sided Wald,
          not adjusted), ``p_adjusted`` (over the non-intercept terms by the
          method of ``adjust``, default Benjamini-Hochberg; NaN for the intercept);
        - ``odds_ratio`` = exp(coef) with ``ci_low``, ``ci_high`` (Wald interval at
          ``confidence``, exponentiated; for the intercept: the odds at all
          references); ``coef_ci_low``, ``coef_ci_high`` the same on the log-odds scale;
        - ``probability`` with ``probability_ci_low``/``_high``: the fitted deviation
          probability at the term's value(s) with every other factor at its reference
          (for the intercept: ``1 / (1 + exp(-b0))``);
        - ``effect``: ``risk`` (coef > 0) or ``protective`` (coef < 0) when the p-value
          (adjusted unless ``adjust == "none"``) is below ``alpha``, else ``not significant``;
          ``baseline`` for the intercept;
        - with a cluster (``cluster``): ``naive_std_err`` and ``design_effect`` (robust
          / naive standard error) after ``std_err``, which is then the robust one; with
          GEE instead ``model_std_err`` and ``robust_model_se_ratio`` (robust /
          model-based standard error); then ``df`` and ``n_clusters``
          (:data:`ROBUST_TERM_COLUMNS`). With CR2 (default) ``df`` is the coefficient's
          Satterthwaite df (Pustejovsky & Tipton 2018) and ``p_value`` and the intervals
          use t with it (the probability interval: t with the df of its own contrast);
          with CR1 / GEE t with G - 1 df; with ``small_sample="none"`` the normal (df
          NaN). A coefficient whose value occurs in fewer than 2 clusters, or whose df is
          below :data:`analysis.clusters.DF_FLOOR`, has no p-value, no interval and the
          label ``not estimable`` (a note names it and its clusters).
    factor_tests
        Likelihood-ratio test per factor and per interaction, columns ``factor``,
        ``df``, ``lr_statistic`` (2 x log-likelihood difference to the model without
        the factor's columns and without every interaction that contains it),
        ``p_value`` (chi-square), ``p_adjusted`` (over the tests by ``adjust``'s method).
        Empty when ``likelihood_ratio=False``. With a cluster the columns are
        :data:`ROBUST_TEST_COLUMNS`: ``p_value`` / ``p_adjusted`` are the cluster-robust
        Wald test (HTZ with CR2: ``robust_wald_statistic`` is its F on
        ``robust_wald_df`` and ``robust_wald_df_denominator`` df), ``n_clusters`` the
        clusters holding the factor's non-reference values, ``reason`` why a test is
        refused (a value on fewer than 2 clusters, a singular covariance, too few df);
        the likelihood-ratio test, which assumes independent rows, is kept as ``df``,
        ``lr_statistic``, ``p_value_lr``, ``p_adjusted_lr``.
    notes
        What was done to the data (values dropped or merged for separation, values
        without rows) and warnings (few events per parameter). Show them with the
        numbers.
    """

    terms: pd.DataFrame
    factor_tests: pd.DataFrame
    factors: tuple[str, ...]
    references: Mapping[str, str]
    interactions: tuple[tuple[str, str], ...]
    n_rows: int
    n_deviations: int
    n_cells: int
    n_parameters: int
    log_likelihood: float
    null_log_likelihood: float
    iterations: int
    alpha: float
    adjust: Adjust
    confidence: float
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: The cluster column of the robust covariance (None: rows independent).
    cluster: str | None = None
    n_clusters: int = 0
    #: ``naive``, ``cluster`` (sandwich on the logit) or ``gee`` (exchangeable).
    covariance: str = "naive"
    #: The estimated exchangeable correlation of a GEE fit.
    gee_correlation: float | None = None
    #: Degrees of freedom of the t / F reference of the robust statistics (G - 1), or
    #: None (normal / chi-square: no cluster, or ``reference="normal"``).
    reference_df: int | None = None
    #: The covariance's small-sample treatment in words ("" without a cluster).
    small_sample_label: str = ""
    #: How the df of the robust t tests are chosen: ``"satterthwaite"`` (per coefficient,
    #: CR2), ``"G - 1"`` (CR1, GEE) or ``"normal"``; "" without a cluster.
    df_method: str = ""

    @property
    def pseudo_r2(self) -> float:
        """McFadden's pseudo R-squared, ``1 - llf / llf_null``."""
        return 1.0 - self.log_likelihood / self.null_log_likelihood

    @property
    def baseline_probability(self) -> float:
        """Deviation probability with every factor at its reference."""
        return float(self.terms[PROBABILITY].iloc[0])

    def summary(self) -> dict:
        """Scalars of the fit as a plain dict (for JSON and the app's metrics)."""
        return {
            "factors": list(self.factors), "references": dict(self.references),
            "interactions": [":".join(p) for p in self.interactions],
            "n_rows": self.n_rows, "n_deviations": self.n_deviations,
            "n_cells": self.n_cells, N_PARAMETERS: self.n_parameters,
            "log_likelihood": self.log_likelihood,
            "null_log_likelihood": self.null_log_likelihood,
            "pseudo_r2": self.pseudo_r2, "iterations": self.iterations,
            "baseline_probability": self.baseline_probability, "alpha": self.alpha,
            "adjust": self.adjust, "confidence": self.confidence, "notes": list(self.notes),
            "cluster": self.cluster, "n_clusters": self.n_clusters,
            "covariance": self.covariance, "gee_correlation": self.gee_correlation,
            "reference_df": self.reference_df, "df_method": self.df_method,
        }


# --- cells as codes -------------------------------------------------------------------------
@dataclass
class _Cells:
    """Observed cells of the chosen factors: integer codes into declared values, n, k."""

    values: dict[str, list[str]]
    codes: dict[str, np.ndarray]
    n: np.ndarray
    k: np.ndarray
    #: Cluster code per cell (cells are then factor cells x clusters), or None.
    cluster: np.ndarray | None = None
    n_cluster_values: int = 0
    _observed: dict[str, list[int]] = field(default_factory=dict, repr=False, compare=False)
    #: The factor cells' rows per cluster (the clustered logit's path, issue 44): the
    #: cells are then factor cells only (``cluster`` None) and the robust covariance is
    #: summed over these pairs (:mod:`analysis.importance_codes`).
    pairs: ClusterPairs | None = None

    @property
    def factors(self) -> list[str]:
        return list(self.codes)

    def observed(self, f: str) -> list[int]:
        """Codes of the values of ``f`` that have rows, in declared order."""
        if f not in self._observed:
            self._observed[f] = [int(c) for c in np.flatnonzero(np.bincount(
                self.codes[f], weights=self.n, minlength=len(self.values[f])))]
        return list(self._observed[f])

    def totals(self, f: str) -> tuple[np.ndarray, np.ndarray]:
        size = len(self.values[f])
        return (np.bincount(self.codes[f], weights=self.n, minlength=size),
                np.bincount(self.codes[f], weights=self.k, minlength=size))

    def mask(self, f: str, value: str) -> np.ndarray:
        return self.codes[f] == self.values[f].index(value)

    def keep(self, mask: np.ndarray) -> _Cells:
        return _Cells(self.values, {f: c[mask] for f, c in self.codes.items()},
                      self.n[mask], self.k[mask],
                      None if self.cluster is None else self.cluster[mask],
                      self.n_cluster_values,
                      pairs=None if self.pairs is None else self.pairs.keep_cells(mask))

    def recoded(self, codes: dict[str, np.ndarray]) -> _Cells:
        """The same cells (and clusters) with new factor codes, merged."""
        return _Cells(self.values, codes, self.n, self.k, self.cluster,
                      self.n_cluster_values, pairs=self.pairs).aggregate()

    def aggregate(self) -> _Cells:
        """Merge duplicate cells (after recoding) and drop empty ones (a cell is a
        combination of factor values, and of the cluster when there is one)."""
        sizes = [len(self.values[f]) for f in self.factors]
        columns = [self.codes[f] for f in self.factors]
        if self.cluster is not None:
            sizes.append(max(self.n_cluster_values, 1))
            columns.append(self.cluster)
        if math.prod(sizes) < 2**62:  # one int64 key per cell, else unique rows
            key = np.zeros(len(self.n), dtype=np.int64)
            for column, size in zip(columns, sizes, strict=True):
                key = key * size + column
            _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        else:
            _, first, inverse = np.unique(np.column_stack(columns), axis=0,
                                          return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        n = np.bincount(inverse, weights=self.n, minlength=len(first))
        k = np.bincount(inverse, weights=self.k, minlength=len(first))
        codes = {f: np.asarray(self.codes[f][first], dtype=np.int64) for f in self.factors}
        cluster = None if self.cluster is None else np.asarray(self.cluster[first],
                                                                dtype=np.int64)
        pairs = (None if self.pairs is None
                 else self.pairs.merge_cells(inverse, len(first)))
        out = _Cells(self.values, codes, n, k, cluster, self.n_cluster_values, pairs=pairs)
        return out if n.all() else out.keep(n > 0)

    def frame(self) -> pd.DataFrame:
        """Cells as a DataFrame with categorical factor columns (for nesting checks)."""
        return pd.DataFrame({f: pd.Categorical.from_codes(c, categories=self.values[f])
                             for f, c in self.codes.items()})


def _row_weights(data: pd.DataFrame) -> np.ndarray | None:
    """Rows per line: ``n`` of a cell table, None (one each) for a results table."""
    if DEVIATION not in data.columns and N in data.columns:
        return data[N].to_numpy(dtype=float)
    return None


def _cells_from(data: pd.DataFrame, design: Design, factors: list[str], where: Where | None,
                exclude: Mapping[str, Sequence[str]], cluster: str | None = None, *,
                coded: tuple[np.ndarray, list[str]] | None = None
                ) -> tuple[_Cells, list[str]]:
    """The model's cells (split by cluster when one is given) and the cluster labels;
    ``coded``: the cluster column's :func:`factor_codes` over ``data``'s rows."""
    from analysis.cells import cell_table

    if cluster is not None:
        if cluster in factors:
            raise AnalysisError(f"The cluster column {cluster!r} is also a factor of the "
                                "model: leave it out of the factors or choose another cluster.")
        if cluster not in data.columns:
            from analysis.clusters import missing_cluster_message

            raise AnalysisError(missing_cluster_message(cluster, data.columns))
    extra = [c for c in [*(where or {}), *exclude, *([cluster] if cluster else [])]
             if c not in factors]
    extra = list(dict.fromkeys(extra))
    pairs = cluster is not None
    if pairs and coded is not None:  # the codes go through the filters with the rows
        data = data.assign(**{_CLUSTER_CODE: coded[0]})
        extra.append(_CLUSTER_CODE)
    if DEVIATION in data.columns:
        table = (_outcome_rows(data, factors + extra, where) if pairs
                 else cell_table(data, factors + extra, where=where))
    elif N in data.columns and DEVIATIONS in data.columns:
        missing = [c for c in factors + extra if c not in data.columns]
        if missing:
            raise AnalysisError(f"The cell table has no column {', '.join(missing)}: build it "
                                "over every factor of the model and of the filters.")
        table = filter_rows(data, where)
    else:
        raise AnalysisError(
            "Factor importance needs a results table with a 'deviation' column (apply a "
            "design with an outcome) or a cell table with 'n' and 'deviations'.")
    keep = np.ones(len(table), dtype=bool)
    for name, dropped in exclude.items():
        codes, values = factor_codes(table[name])
        unknown = [v for v in dropped if v not in values]
        if unknown:
            raise AnalysisError(f"Cannot leave out {name} = {', '.join(unknown)}: no such value.")
        keep &= ~np.isin(codes, [values.index(v) for v in dropped])
    table = table[keep]
    rows = N not in table.columns  # the rows themselves (the clustered path), one each
    if len(table) == 0 or (not rows and table[N].sum() == 0):
        raise ImportanceRefusal("no_variation", "No row is left in the subset after the "
                                                "filters and exclusions.")
    values, codes = {}, {}
    for f in factors:
        c, labels = factor_codes(table[f])
        declared = list(design.factor(f).values)
        position = {v: i for i, v in enumerate(declared)}
        unknown = [v for v in labels if v not in position]
        if unknown:
            raise AnalysisError(f"Factor {f!r} has values the design does not declare "
                                f"({', '.join(unknown[:5])}): apply the design first.")
        # int32 codes per row (or line of a cell table): half the memory of int64
        remap = np.array([position[v] for v in labels], dtype=np.int32)
        values[f], codes[f] = declared, remap[c]
    n = None if rows else table[N].to_numpy(dtype=float)
    k = table[DEVIATION if rows else DEVIATIONS].to_numpy(dtype=float)
    if cluster is None:
        return _Cells(values, codes, n, k).aggregate(), []
    cluster_codes, cluster_labels = ((table[_CLUSTER_CODE].to_numpy(), coded[1])
                                     if coded is not None else factor_codes(table[cluster]))
    # canonical cluster order (sorted labels), so that every engine sums the same way
    order = sorted(range(len(cluster_labels)), key=lambda i: str(cluster_labels[i]))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    cluster_codes, cluster_labels = rank[cluster_codes], [cluster_labels[i] for i in order]
    return _paired_cells(values, codes, n, k, cluster_codes, len(order)), cluster_labels


#: The column that carries the cluster's codes through the filters (not a user's name).
_CLUSTER_CODE = "\x00cluster code"


def _outcome_rows(data: pd.DataFrame, columns: list[str], where: Where | None
                  ) -> pd.DataFrame:
    """The rows of ``columns`` and ``deviation`` in ``where`` with a known outcome (what
    :func:`analysis.cells.cell_table` counts, not yet counted)."""
    needed = [c for c in dict.fromkeys([*columns, DEVIATION]) if c in data.columns]
    table = filter_rows(data[needed], where)
    known = table[DEVIATION].notna().to_numpy()
    return table if known.all() else table[known]


def _paired_cells(values: dict[str, list[str]], codes: dict[str, np.ndarray],
                  n: np.ndarray | None, k: np.ndarray, cluster: np.ndarray,
                  n_clusters: int) -> _Cells:
    """The factor cells of rows (weights ``n``, default 1) with their per-cluster counts
    (:class:`ClusterPairs`), from integer codes: no factors x cluster cell table."""
    from analysis.importance_codes import cell_index, cluster_margins, combo_pairs, count_pairs
    from analysis.values import combine_codes, split_codes

    factors = list(codes)
    sizes = [len(values[f]) for f in factors]
    # (cell, cluster) keys straight from the codes (``cluster`` becomes the keys)
    direct = combo_pairs([codes[f] for f in factors], sizes, cluster, n_clusters, n, k)
    pair_combos = None
    if direct is not None:
        uniq, pairs, pair_combos = direct
        key = uniq
        cell_codes = split_codes(uniq, sizes)
    else:
        key = combine_codes([codes[f] for f in factors], sizes, n=len(k))
        if key.dtype == object:  # astronomically many possible cells: the code tuples
            uniq, cell = np.unique(np.column_stack([codes[f] for f in factors]), axis=0,
                                   return_inverse=True)
            cell_codes = [uniq[:, j] for j in range(len(factors))]
        else:
            uniq, cell = cell_index(key, math.prod(sizes))
            cell_codes = split_codes(uniq, sizes)
        pairs = count_pairs(cell.reshape(-1), cluster, len(uniq), n_clusters, n, k)
    cell_n = np.bincount(pairs.cell, weights=pairs.n, minlength=len(uniq))
    cell_k = np.bincount(pairs.cell, weights=pairs.k, minlength=len(uniq))
    # the per-cluster sums from tables over factor subsets (of the pairs: the same
    # integers and order from rows and from an engine's cell table, so the same bytes)
    margins = (None if key.dtype == object
               else cluster_margins(pairs, uniq, sizes, pair_combos=pair_combos))
    out = _Cells(values, {f: np.asarray(c, dtype=np.int64)
                          for f, c in zip(factors, cell_codes, strict=True)}, cell_n, cell_k,
                 n_cluster_values=n_clusters, pairs=pairs if margins is None else margins)
    return out if cell_n.all() else out.keep(cell_n > 0)


# --- terms and the design matrix ---------------------------------------------------------------
@dataclass(frozen=True)
class _Term:
    name: str
    factor: str | None
    value: str | None
    parts: tuple[tuple[str, int], ...]  # (factor, code) whose indicators multiply


def _parse_interactions(interactions: Sequence[str | tuple[str, str]]
                        ) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in interactions:
        pair = tuple(item.split(":")) if isinstance(item, str) else tuple(item)
        pair = tuple(p.strip() for p in pair)
        if len(pair) != 2 or pair[0] == pair[1] or not all(pair):
            raise AnalysisError(f"An interaction names two different factors as a:b, got "
                                f"{item!r}.")
        if pair not in out and pair[::-1] not in out:
            out.append(pair)  # type: ignore[arg-type]
    return out


def _build_terms(cells: _Cells, refs: Mapping[str, str], interactions: list[tuple[str, str]],
                 no_column: set[tuple]) -> list[_Term]:
    terms = [_Term(INTERCEPT, None, None, ())]
    ref_code = {f: cells.values[f].index(refs[f]) for f in cells.factors}
    for f in cells.factors:
        for c in cells.observed(f):
            if c != ref_code[f]:
                v = cells.values[f][c]
                terms.append(_Term(f"{f}[{v}]", f, v, ((f, c),)))
    for a, b in interactions:
        seen = set(zip(cells.codes[a].tolist(), cells.codes[b].tolist(), strict=True))
        for ca in cells.observed(a):
            for cb in cells.observed(b):
                if (ca == ref_code[a] or cb == ref_code[b] or (ca, cb) not in seen
                        or (a, ca, b, cb) in no_column):
                    continue
                va, vb = cells.values[a][ca], cells.values[b][cb]
                terms.append(_Term(f"{a}[{va}]:{b}[{vb}]", f"{a}:{b}", f"{va}:{vb}",
                                   ((a, ca), (b, cb))))
    return terms


def _matrix(cells: _Cells, terms: list[_Term]) -> np.ndarray:
    m = len(cells.n)
    if m * len(terms) > MAX_MATRIX_ENTRIES:
        raise ImportanceRefusal(
            "too_few_rows", f"The model has {len(terms):,} parameters over {m:,} observed "
                            "cells: too large to fit here. Choose fewer factors or values.")
    X = np.zeros((m, len(terms)))
    flat = X.reshape(-1)
    # the terms of one factor (or one pair) are indicators of its values (value pairs):
    # one pass per factor sets the 1 of each cell in the column of its value
    by_factors: dict[tuple[str, ...], dict[tuple[int, ...], int]] = {}
    for j, t in enumerate(terms):
        by_factors.setdefault(tuple(f for f, _ in t.parts), {})[
            tuple(c for _, c in t.parts)] = j
    for facs, columns in by_factors.items():
        if not facs:
            X[:, columns[()]] = 1.0
            continue
        sizes = [len(cells.values[f]) for f in facs]
        column_of = np.full(math.prod(sizes), -1, dtype=np.int64)
        key = np.zeros(m, dtype=np.int64)
        for f, size in zip(facs, sizes, strict=True):
            key = key * size + cells.codes[f]
        for codes, j in columns.items():
            column_of[np.ravel_multi_index(codes, sizes)] = j
        column = column_of[key]
        rows = np.flatnonzero(column >= 0)
        flat[rows * len(terms) + column[rows]] = 1.0
    return X


def _dependencies(X: np.ndarray) -> list[tuple[int, dict[int, float]]]:
    """Columns that are linear combinations of earlier ones, with the combination.

    Greedy in column order (intercept, then factors in the order given): a column is
    kept when its residual after projecting on the kept columns (Gram-Schmidt, twice
    for stability) is not negligible relative to its norm. The columns' lengths and
    angles are those of the triangular factor ``R`` of ``X = QR`` (``Q`` has orthonormal
    columns), so the procedure runs on ``R`` (p x p) instead of ``X`` (cells x p).
    """
    if _surely_independent(X):
        return []
    R = _triangular_factor(X)
    m, p = R.shape
    Q = np.empty((m, p))
    kept: list[int] = []
    out = []
    for j in range(p):
        x = R[:, j]
        v = x.copy()
        if kept:
            Qk = Q[:, :len(kept)]
            for _ in range(2):
                v -= Qk @ (Qk.T @ v)
        r = float(np.linalg.norm(v))
        if r <= _ALIAS_TOL * float(np.linalg.norm(x)):
            coef = np.linalg.lstsq(R[:, kept], x, rcond=None)[0]
            out.append((j, {kept[i]: float(c) for i, c in enumerate(coef) if abs(c) > 1e-7}))
        else:
            Q[:, len(kept)] = v / r
            kept.append(j)
    return out


def _surely_independent(X: np.ndarray) -> bool:
    """True when every column's residual on the earlier ones exceeds
    :data:`_SURELY_INDEPENDENT` of its norm (the diagonal of the Cholesky factor of
    ``X'X``, whose rounding error is far below that), so none is within the aliasing
    tolerance; False when that cannot be vouched for (then the QR path decides)."""
    gram = _gram(X, np.ones(len(X)))
    norms = np.sqrt(np.diag(gram))
    if not np.all(norms > 0):
        return False
    try:
        L = np.linalg.cholesky(gram)
    except np.linalg.LinAlgError:
        return False
    return bool(np.all(np.diag(L) > _SURELY_INDEPENDENT * norms))


def _triangular_factor(X: np.ndarray) -> np.ndarray:
    """``R`` of ``X = QR`` (Householder, block by block: QR of ``R`` stacked on the next
    block of rows), without forming ``Q`` or copying all of ``X`` at once."""
    m, p = X.shape
    if m <= max(_BLOCK, p):
        return np.linalg.qr(X, mode="r")
    R = np.linalg.qr(X[:_BLOCK], mode="r")
    for start in range(_BLOCK, m, _BLOCK):
        R = np.linalg.qr(np.vstack([R, X[start:start + _BLOCK]]), mode="r")
    return R


# --- checks before fitting --------------------------------------------------------------------
def _q(v: str) -> str:
    return f"'{v}'"


def _check_variation(cells: _Cells) -> None:
    n, k = cells.n.sum(), cells.k.sum()
    if k == 0 or k == n:
        what = "no deviation" if k == 0 else "only deviations"
        raise ImportanceRefusal(
            "no_variation", f"The selected rows ({int(n):,}) contain {what}: there is nothing "
                            "for a regression to explain. Widen the subset or change the "
                            "outcome mapping.")


def _check_constant(cells: _Cells, notes: Sequence[str]) -> None:
    constant = [(f, cells.values[f][cells.observed(f)[0]]) for f in cells.factors
                if len(cells.observed(f)) == 1]
    if constant:
        lines = [f"- {f} takes only the value {_q(v)} in the selected rows, so it cannot "
                 "explain any difference: leave it out (or widen the subset)."
                 for f, v in constant]
        raise ImportanceRefusal(
            "constant_factor", _with_notes("A factor has a single value in the subset:\n"
                                           + "\n".join(lines), notes),
            [Fix(f"Drop factor {f} (only {_q(v)} in the subset)", drop_factors=(f,))
             for f, v in constant]
            + ([Fix("Drop " + ", ".join(f for f, _ in constant),
                    drop_factors=tuple(f for f, _ in constant))] if len(constant) > 1 else []))


def _check_references(cells: _Cells, refs: Mapping[str, str], notes: Sequence[str]) -> None:
    lines, fixes = [], []
    for f in cells.factors:
        if refs[f] in [cells.values[f][c] for c in cells.observed(f)]:
            continue
        totals, _ = cells.totals(f)
        best = cells.values[f][int(np.argmax(totals))]
        present = [cells.values[f][c] for c in cells.observed(f)]
        lines.append(f"- {f}: the reference {_q(refs[f])} has no row in the subset (present: "
                     f"{', '.join(present[:10])}{', ...' if len(present) > 10 else ''}). The "
                     f"coefficients compare each value with the reference, so choose one that "
                     f"is present, e.g. the most frequent, {_q(best)}.")
        fixes.append(Fix(f"Use {_q(best)} as the reference of {f}", references=((f, best),)))
    if lines:
        raise ImportanceRefusal(
            "reference_absent", _with_notes("A reference value is absent from the subset:\n"
                                            + "\n".join(lines), notes), fixes)


def _with_notes(text: str, notes: Sequence[str]) -> str:
    if not notes:
        return text
    return text + "\n(This after: " + "; ".join(notes) + ".)"


def _aliasing_refusal(cells: _Cells, terms: list[_Term], X: np.ndarray,
                      deps: list[tuple[int, dict[int, float]]], refs: Mapping[str, str],
                      notes: Sequence[str], prompt_factors: Sequence[str] = ()
                      ) -> ImportanceRefusal:
    from analysis.nesting import describe_nesting, find_nestings

    involved_sets = []
    for j, combo in deps:
        facs = set()
        for i in [j, *combo]:
            for f, _ in terms[i].parts:
                facs.add(f)
        involved_sets.append((j, combo, facs))
    involved = [f for f in cells.factors if any(f in s for *_, s in involved_sets)]
    lines: list[str] = []
    fixes: list[Fix] = []
    explained_pairs: set[frozenset] = set()

    # 1. whole factors nested in one another
    nest = find_nestings(cells.frame(), involved, references={f: refs[f] for f in involved})
    for row in nest.to_dict(orient="records"):
        det, dep = row["determinant"], row["dependent"]
        if det is None or not any({det, dep} <= s for *_, s in involved_sets):
            continue
        explained_pairs.add(frozenset((det, dep)))
        finer, coarser = (det, dep) if row["kind"] != "equivalent" else (dep, det)
        lines.append(f"- {describe_nesting(row)} Suggestion: drop {finer} (keeps the coarser "
                     f"{coarser}), or drop {coarser} to keep the detail.")
        fixes.append(Fix(f"Drop factor {finer} (keep {coarser})", drop_factors=(finer,)))
        fixes.append(Fix(f"Drop factor {coarser} (keep {finer})", drop_factors=(coarser,)))

    # 2. values of different factors that mark exactly the same rows
    groups: dict[bytes, list[tuple[str, str]]] = {}
    for f in involved:
        for c in cells.observed(f):
            groups.setdefault(np.packbits(cells.codes[f] == c).tobytes(), []).append(
                (f, cells.values[f][c]))
    for members in groups.values():
        facs = [f for f, _ in members]
        pairs = {frozenset((a, b)) for a in facs for b in facs if a != b}
        if len(set(facs)) < 2 or pairs <= explained_pairs:
            continue
        if not any(len(set(facs) & s) >= 2 for *_, s in involved_sets):
            continue
        explained_pairs |= pairs
        f0, v0 = _control_member(members, refs, prompt_factors)
        n_rows = int(cells.n[cells.mask(f0, v0)].sum())
        listed = _and([f"{f} = {_q(v)}" for f, v in members])
        names = _and(facs)
        lines.append(
            f"- {listed} mark exactly the same {n_rows:,} rows of the subset, so their "
            "indicator columns are identical and the model cannot tell their effects apart, "
            f"although {_neither(facs)} on the other rows. Typical cause: control rows "
            f"outside the factorial design (here every row with {f0} = {_q(v0)} has "
            f"{_and([f'{f} = {_q(v)}' for f, v in members if f != f0])}, and no other row "
            f"does). Fix: leave these {n_rows:,} rows out of the subset ({f0} != "
            f"{_q(v0)}), or keep only one of {names}.")
        if v0 == refs[f0] and f0 in prompt_factors:
            # the paper's way out: drop the control prompts, compare with what remains
            moved = _references_after_exclusion(cells, refs, cells.mask(f0, v0))
            text = ", ".join(f"{f} = {_q(v)}" for f, v in moved)
            fixes.insert(0, Fix(f"Drop the rows at the reference prompt ({f0} = {_q(v0)}, "
                                f"{n_rows:,} rows)" + (f"; new references {text}" if moved
                                                        else ""),
                                exclude=((f0, (v0,)),), references=tuple(moved)))
        else:
            fixes.append(Fix(f"Leave out the {n_rows:,} rows with {f0} = {_q(v0)}",
                             exclude=((f0, (v0,)),)))
        for keep_f in facs:
            others = tuple(f for f in facs if f != keep_f)
            fixes.append(Fix(f"Drop {_and(list(others))} (keep {keep_f})",
                             drop_factors=others))

    # 3. anything else: show the linear relation itself
    for j, combo, facs in involved_sets:
        pairs = {frozenset((a, b)) for a in facs for b in facs if a != b}
        if pairs and pairs & explained_pairs and not any(
                terms[i].factor and ":" in terms[i].factor for i in [j, *combo]):
            continue
        rhs = " ".join(f"{'-' if c < 0 else '+'} "
                       f"{'' if math.isclose(abs(c), 1) else f'{abs(c):.3g} x '}"
                       f"{'1' if i == 0 else f'[{terms[i].name}]'}"
                       for i, c in combo.items()).lstrip("+ ")
        first = [f for f, _ in terms[j].parts]
        fixed_by = (_only_together(cells, terms[j]) if len(terms[j].parts) == 2
                    else _fixed_by(cells, first + sorted(facs - set(first))))
        lines.append(f"- The column [{terms[j].name}] equals {rhs or '0'} in every observed "
                     f"cell{fixed_by}, so its coefficient is not identifiable.")
        inter = [tuple(terms[i].factor.split(":")) for i in [j, *combo]
                 if terms[i].factor and ":" in terms[i].factor]
        for pair in dict.fromkeys(inter):
            fixes.append(Fix(f"Drop the interaction {pair[0]}:{pair[1]}",
                             drop_interactions=(pair,)))
        for f in sorted(facs, key=lambda f: -len(cells.observed(f)))[:3]:
            fixes.append(Fix(f"Drop factor {f}", drop_factors=(f,)))
    text = ("These factors cannot all be in one model: some of their columns are linearly "
            "dependent (aliased), so no amount of data separates their effects.\n"
            + "\n".join(lines))
    return ImportanceRefusal("aliased", _with_notes(text, notes), fixes)


def _control_member(members: list[tuple[str, str]], refs: Mapping[str, str],
                    prompt_factors: Sequence[str]) -> tuple[str, str]:
    """Which of several aliased (factor, value) pairs to leave out: a prompt factor at its
    reference (SSQA's prompt_style = 'base') first, then any factor at its reference."""
    for wanted in (lambda f, v: v == refs[f] and f in prompt_factors,
                   lambda f, v: v == refs[f]):
        for f, v in members:
            if wanted(f, v):
                return f, v
    return members[0]


def _references_after_exclusion(cells: _Cells, refs: Mapping[str, str], dropped: np.ndarray
                                ) -> list[tuple[str, str]]:
    """New references (the most frequent remaining value) for the factors whose reference
    occurs only in the ``dropped`` cells."""
    kept = ~dropped
    out = []
    for f in cells.factors:
        size = len(cells.values[f])
        totals = np.bincount(cells.codes[f][kept], weights=cells.n[kept], minlength=size)
        if totals[cells.values[f].index(refs[f])] > 0 or not totals.any():
            continue
        out.append((f, cells.values[f][int(np.argmax(totals))]))
    return out


def _only_together(cells: _Cells, term: _Term) -> str:
    """' (a = 'x' occurs only together with b = 'y')' for an aliased interaction column."""
    (a, ca), (b, cb) = term.parts
    for (f, c), (g, d) in (((a, ca), (b, cb)), ((b, cb), (a, ca))):
        partners = np.unique(cells.codes[g][cells.codes[f] == c])
        if len(partners) == 1 and partners[0] == d:
            return (f" ({f} = {_q(cells.values[f][c])} occurs only together with "
                    f"{g} = {_q(cells.values[g][d])}, so the interaction adds nothing)")
    return ""


def _fixed_by(cells: _Cells, facs: list[str]) -> str:
    """' (f is fixed by the combination of a and b)' when one factor is."""
    if len(facs) < 3:
        return ""
    for f in facs:
        others = [g for g in facs if g != f]
        key = np.zeros(len(cells.n), dtype=np.int64)
        for g in others:
            key = key * len(cells.values[g]) + cells.codes[g]
        both = key * len(cells.values[f]) + cells.codes[f]
        if len(np.unique(both)) == len(np.unique(key)):
            return f" ({f} is fixed by the combination of {_and(others)})"
    return ""


def _neither(facs: Sequence[str]) -> str:
    if len(facs) == 2:
        return f"neither {facs[0]} nor {facs[1]} determines the other"
    return f"none of {_and(facs)} determines another"


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


@dataclass(frozen=True)
class _Separated:
    parts: tuple[tuple[str, str], ...]  # (factor, value), one for a value, two for a combo
    n: int
    k: int
    reference: bool  # a part is the reference value of its factor

    def describe(self) -> str:
        what = " and ".join(f"{f} = {_q(v)}" for f, v in self.parts)
        dev = "no deviation" if self.k == 0 else "only deviations"
        ref = " (a reference value)" if self.reference else ""
        return f"{what}{ref}: {dev} in {self.n:,} rows"


def _separated(cells: _Cells, refs: Mapping[str, str], interactions: list[tuple[str, str]],
               no_column: set[tuple]) -> list[_Separated]:
    out = []
    bad_values: set[tuple[str, int]] = set()
    for f in cells.factors:
        n, k = cells.totals(f)
        for c in cells.observed(f):
            if k[c] == 0 or k[c] == n[c]:
                v = cells.values[f][c]
                bad_values.add((f, c))
                out.append(_Separated(((f, v),), int(n[c]), int(k[c]), v == refs[f]))
    for a, b in interactions:
        size_b = len(cells.values[b])
        key = cells.codes[a] * size_b + cells.codes[b]
        uniq, inverse = np.unique(key, return_inverse=True)
        n = np.bincount(inverse, weights=cells.n)
        k = np.bincount(inverse, weights=cells.k)
        for u, nn, kk in zip(uniq, n, k, strict=True):
            ca, cb = int(u // size_b), int(u % size_b)
            if (kk > 0 and kk < nn) or (a, ca) in bad_values or (b, cb) in bad_values:
                continue
            va, vb = cells.values[a][ca], cells.values[b][cb]
            is_ref = va == refs[a] or vb == refs[b]
            if not is_ref and (a, ca, b, cb) in no_column:
                continue  # merged: no own parameter, the main effects carry it
            out.append(_Separated(((a, va), (b, vb)), int(nn), int(kk), is_ref))
    return out


def _separation_refusal(items: list[_Separated], cells: _Cells, refs: Mapping[str, str],
                        notes: Sequence[str], *, merge_failed: bool = False
                        ) -> ImportanceRefusal:
    listing = "\n".join(f"- {s.describe()}" for s in items)
    text = ("Separation: in the selected rows these values (or combinations) have no "
            "deviation at all or only deviations, so their coefficients are infinite and the "
            "maximum-likelihood fit does not exist:\n" + listing)
    if merge_failed:
        text += ("\nA reference value (or a combination with one) cannot be merged into the "
                 "reference: leave its rows out or choose another reference.")
    new_refs = []
    for s in items:
        if len(s.parts) == 1 and s.reference:
            f = s.parts[0][0]
            totals, _ = cells.totals(f)
            bad = {cells.values[f].index(v) for t in items if len(t.parts) == 1
                   for g, v in t.parts if g == f}
            choices = [c for c in np.argsort(-totals, kind="stable")
                       if totals[c] > 0 and c not in bad]
            if choices:
                new_refs.append((f, cells.values[f][int(choices[0])]))
    dropped = np.zeros(len(cells.n), dtype=bool)
    for s in items:
        dropped |= np.logical_and.reduce([cells.mask(f, v) for f, v in s.parts])
    left_n, left_k = float(cells.n[~dropped].sum()), float(cells.k[~dropped].sum())
    fixes = []
    if 0 < left_k < left_n:  # a fix that leaves no rows (or no variation) is not offered
        fixes.append(Fix("Leave out the rows of these values"
                         + (" and use " + ", ".join(f"{_q(v)} as the reference of {f}"
                                                     for f, v in new_refs) if new_refs else ""),
                         on_separation="drop", references=tuple(new_refs)))
    else:
        text += ("\nLeaving out the rows of these values would leave "
                 + ("no rows" if left_n == 0 else "rows with a single outcome")
                 + ": a factor whose every value separates is aliased with the outcome (a "
                   "response, not a factor); drop it.")
    if not merge_failed and not any(s.reference for s in items):
        fixes.append(Fix("Merge these values into their factor's reference",
                         on_separation="merge"))
    facs = list(dict.fromkeys(f for s in items if len(s.parts) == 1 for f, _ in s.parts))
    fixes += [Fix(f"Drop factor {f}", drop_factors=(f,)) for f in facs]
    pairs = list(dict.fromkeys(tuple(f for f, _ in s.parts) for s in items if len(s.parts) == 2))
    fixes += [Fix(f"Drop the interaction {a}:{b}", drop_interactions=((a, b),)) for a, b in pairs]
    return ImportanceRefusal("separation", _with_notes(text, notes), fixes)


def _resolve_separation(cells: _Cells, items: list[_Separated], refs: Mapping[str, str],
                        action: SeparationAction, no_column: set[tuple], notes: list[str]
                        ) -> _Cells:
    if action == "drop":
        drop = np.zeros(len(cells.n), dtype=bool)
        for s in items:
            m = np.ones(len(cells.n), dtype=bool)
            for f, v in s.parts:
                m &= cells.mask(f, v)
            drop |= m
            notes.append(f"left out {s.describe()} (separation)")
        return cells.keep(~drop)
    if any(s.reference for s in items):
        raise _separation_refusal(items, cells, refs, notes, merge_failed=True)
    codes = {f: c.copy() for f, c in cells.codes.items()}
    for s in items:
        if len(s.parts) == 1:
            f, v = s.parts[0]
            codes[f][cells.codes[f] == cells.values[f].index(v)] = cells.values[f].index(refs[f])
            notes.append(f"merged {s.describe()} into the reference {_q(refs[f])} (separation)")
        else:
            (a, va), (b, vb) = s.parts
            no_column.add((a, cells.values[a].index(va), b, cells.values[b].index(vb)))
            notes.append(f"no interaction parameter for {s.describe()} (separation)")
    return cells.recoded(codes)


# --- fitting ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Fit:
    params: np.ndarray
    eta: np.ndarray
    llf: float
    iterations: int
    converged: bool


def _loglik(eta: np.ndarray, n: np.ndarray, k: np.ndarray) -> float:
    """``sum(k log mu + (n - k) log(1 - mu))`` as ``sum(k eta - n log(1 + e^eta))`` (one
    transcendental per cell, as :func:`_loglik_score`), over row blocks in threads."""
    if len(eta) <= _BLOCK:
        return float(np.sum(k * eta - n * np.logaddexp(0.0, eta)))
    return float(sum(_per_block(lambda a, b: float(np.sum(
        k[a:b] * eta[a:b] - n[a:b] * np.logaddexp(0.0, eta[a:b]))), len(eta))))


def _score_information(X: np.ndarray, n: np.ndarray, k: np.ndarray, eta: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The score ``X'(k - n mu)`` and the information ``X' diag(n mu (1 - mu)) X`` at
    ``eta``, in one pass over the row blocks (threads; summed in block order)."""
    from analysis.special import expit

    def block(a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        rows, mu = X[a:b], expit(eta[a:b])
        return (rows.T @ (k[a:b] - n[a:b] * mu),
                rows.T @ (rows * (n[a:b] * mu * (1 - mu))[:, None]))

    if len(X) <= _BLOCK:
        return block(0, len(X))
    score, info = np.zeros(X.shape[1]), np.zeros((X.shape[1], X.shape[1]))
    for part_score, part_info in _per_block(block, len(X)):
        score += part_score
        info += part_info
    return score, info


def _predictor(X: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``X @ beta`` over row blocks in threads."""
    if len(X) <= _BLOCK:
        return X @ beta
    return np.concatenate(_per_block(lambda a, b: X[a:b] @ beta, len(X)))


def _fit(X: np.ndarray, n: np.ndarray, k: np.ndarray,
         start: np.ndarray | None = None) -> _Fit:
    """Maximum likelihood by Newton-Raphson (= IRLS for the canonical logit link).

    Starts like a GLM (one weighted least-squares step from the empirical logits of the
    cells, or from ``start``), halves a step that lowers the likelihood, and stops when
    the largest step is below 1e-10 (convergence is quadratic, so the estimates are then
    exact to rounding). Divergence (separation) shows as iterations running out or the
    linear predictor growing past :data:`RUNAWAY_LOGIT`; the caller checks both.
    """
    from analysis.special import expit, logit

    if start is None:
        eta0 = logit((k + 0.5) / (n + 1.0))
        w0 = n * expit(eta0) * (1 - expit(eta0))
        beta = np.linalg.solve(_gram(X, w0), X.T @ (w0 * eta0))
    else:
        beta = np.asarray(start, dtype=float).copy()
    eta = _predictor(X, beta)
    llf = _loglik(eta, n, k)
    converged = False
    iteration = 0
    while iteration < MAX_ITERATIONS:
        iteration += 1
        score, info = _score_information(X, n, k, eta)
        try:
            step = np.linalg.solve(info, score)
        except np.linalg.LinAlgError:
            break
        for _ in range(30):  # step halving keeps the likelihood increasing
            new_eta = _predictor(X, beta + step)
            new_llf = _loglik(new_eta, n, k)
            if new_llf >= llf - 1e-9 * abs(llf):
                break
            step = step / 2
        beta, eta, llf = beta + step, new_eta, new_llf
        if not np.isfinite(llf) or np.max(np.abs(eta)) > 2 * RUNAWAY_LOGIT:
            break
        if np.max(np.abs(step)) < 1e-10:
            converged = True
            break
    return _Fit(beta, eta, llf, iteration, converged and bool(np.isfinite(beta).all()))


def _per_block(fn: Callable[[int, int], _T], rows: int) -> list[_T]:
    """``fn(start, stop)`` for each block of :data:`_BLOCK` rows, in block order.

    Several blocks run in :data:`_BLOCK_THREADS` threads (numpy and BLAS release the GIL;
    large fits hold BLAS to one thread each, :func:`_blas_threads`). The callers add the
    blocks' results in block order, as a loop would, so the sums are the same to the bit.
    """
    starts = list(range(0, rows, _BLOCK))
    if len(starts) < 2 or _BLOCK_THREADS < 2:
        return [fn(a, min(a + _BLOCK, rows)) for a in starts]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=_BLOCK_THREADS) as pool:
        return list(pool.map(lambda a: fn(a, min(a + _BLOCK, rows)), starts))


def _gram(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``X' diag(w) X``, block by block (no weighted copy of the whole of ``X``)."""
    if len(X) <= _BLOCK:
        return X.T @ (X * w[:, None])
    out = np.zeros((X.shape[1], X.shape[1]))
    for part in _per_block(lambda a, b: X[a:b].T @ (X[a:b] * w[a:b, None]), len(X)):
        out += part
    return out


def _information(X: np.ndarray, n: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """The Fisher information ``X' diag(n p (1 - p)) X`` at the linear predictor ``eta``."""
    p = 1.0 / (1.0 + np.exp(-eta))
    return _gram(X, n * p * (1.0 - p))


def _covariance(X: np.ndarray, n: np.ndarray, eta: np.ndarray) -> np.ndarray:
    return np.linalg.inv(_information(X, n, eta))


def _check_fit(fit: _Fit, cov: np.ndarray, cells: _Cells, terms: list[_Term]) -> None:
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    runaway = np.abs(fit.eta) > RUNAWAY_LOGIT
    if fit.converged and not runaway.any() and np.all(se < RUNAWAY_STD_ERR):
        return
    if runaway.any():
        idx = np.flatnonzero(runaway)[:6]
        listing = "\n".join(
            "- " + ", ".join(f"{f} = {_q(cells.values[f][cells.codes[f][i]])}"
                             for f in cells.factors)
            + f": {int(cells.k[i]):,} deviations in {int(cells.n[i]):,} rows" for i in idx)
        text = ("The fit ran off to infinity: a combination of values separates deviating "
                "from non-deviating rows (quasi-complete separation), so the estimates do not "
                "exist. Cells with a fitted probability of essentially 0 or 1:\n" + listing)
    elif not fit.converged:
        text = (f"The fit did not converge in {MAX_ITERATIONS} iterations, so no estimate is "
                "shown. This usually means separation by a combination of values.")
    else:
        worst = terms[int(np.argmax(se))].name
        text = (f"The fit is numerically unstable (standard error of {worst} = "
                f"{float(np.max(se)):.3g}), a sign of near-separation or near-aliasing.")
    raise ImportanceRefusal(
        "not_converged", text + "\nFewer factors, an interaction less, or merging rare "
                                "values usually helps.",
        [Fix(f"Drop factor {f}", drop_factors=(f,)) for f in cells.factors[::-1][:3]])


# --- the steps of factor_importance -------------------------------------------------------------
def _check_options(on_separation: str, adjust: str, alpha: float, confidence: float,
                   small_sample: SmallSample) -> None:
    if on_separation not in SEPARATION_ACTIONS:
        raise AnalysisError(f"on_separation must be one of {', '.join(SEPARATION_ACTIONS)}.")
    if adjust not in ADJUSTS:
        raise AnalysisError(f"adjust must be one of {', '.join(ADJUSTS)}.")
    if not 0 < alpha < 1 or not 0 < confidence < 1:
        raise AnalysisError("alpha and confidence must lie strictly between 0 and 1.")
    check_small_sample(small_sample)


def _model_spec(design: Design, factors: Sequence[str] | None,
                references: Mapping[str, str] | None,
                interactions: Sequence[str | tuple[str, str]]
                ) -> tuple[list[str], dict[str, str], list[tuple[str, str]]]:
    """The model's factors, their references and its interactions, checked."""
    factors = list(factors) if factors is not None else design.names
    if not factors:
        raise AnalysisError("Choose at least one factor for the regression.")
    if len(set(factors)) < len(factors):
        raise AnalysisError("A factor is listed twice.")
    for f in factors:
        design.factor(f)
    refs = {f: design.factor(f).reference for f in factors}
    for f, v in (references or {}).items():
        if f not in refs:
            raise AnalysisError(f"Reference given for {f!r}, which is not a factor of the model.")
        if str(v) not in design.factor(f).values:
            raise AnalysisError(f"Reference {v!r} is not a value of {f!r} (values: "
                                f"{', '.join(design.factor(f).values[:12])}).")
        refs[f] = str(v)
    pairs = _parse_interactions(interactions)
    for a, b in pairs:
        if a not in factors or b not in factors:
            raise AnalysisError(f"Interaction {a}:{b}: both factors must be in the model.")
    return factors, refs, pairs


def _chosen_cluster(data: pd.DataFrame, design: Design, cluster: str | None,
                    factors: list[str], gee: bool, notes: list[str],
                    coded: dict | None = None) -> str | None:
    """The cluster column to use (the design's by default), or None; notes why not.
    ``coded`` (a dict) receives the column's :func:`factor_codes` for the cells."""
    declared = cluster is FROM_DESIGN
    if declared:
        cluster = design.cluster
    if cluster:
        choice = _coded_cluster(data, cluster, declared, factors if declared else (), coded)
        cluster = choice.column
        notes.extend(choice.notes)
    if gee and not cluster:
        raise AnalysisError("A GEE fit needs a cluster column (rows within a cluster are "
                            "correlated): name one, e.g. the prompt template."
                            + (f" ({notes[0]})" if notes else ""))
    return cluster or None


def _coded_cluster(data: pd.DataFrame, cluster: str, declared: bool, factors: Sequence[str],
                   coded: dict | None):
    """:func:`resolve_cluster`, judged on the column's codes (one line per value with its
    rows), so the column is coded once for the check and the cells (``coded[cluster]``;
    issue 44). When the cluster is not used, the notes are those of the whole column."""
    rows = _row_weights(data)
    if coded is None or cluster not in data.columns or cluster in factors:
        return resolve_cluster(data, cluster, declared=declared, factors=factors, rows=rows)
    codes, labels = _cluster_codes_of(data[cluster])
    counts = np.bincount(codes, weights=rows, minlength=len(labels))
    choice = resolve_cluster(pd.DataFrame({cluster: labels}), cluster, declared=declared,
                             factors=factors, rows=counts)
    if choice.column is None:
        return resolve_cluster(data, cluster, declared=declared, factors=factors, rows=rows)
    coded[cluster] = (codes, labels)
    return choice


def _cluster_codes_of(series: pd.Series) -> tuple[np.ndarray, list[str]]:
    """:func:`factor_codes` of a cluster column; for text without missing values by one
    ``pd.factorize`` (faster than with a missing-value code; the labels' order does not
    matter: clusters are numbered by sorted label)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return factor_codes(series)
    codes, uniques = pd.factorize(series)
    labels = [format_value(u) for u in uniques]
    if (len(codes) and codes.min() < 0) or len(set(labels)) < len(labels):
        return factor_codes(series)  # a missing value, or values equal as text
    return codes, labels


def _usable_cluster(cells: _Cells, cluster: str | None, gee: bool, notes: list[str]
                    ) -> tuple[_Cells, str | None]:
    """The cells without their cluster split when the rows analysed have one cluster."""
    if not cluster or len(_cluster_codes(cells)) >= 2:
        return cells, cluster
    notes.append(f"the cluster column {cluster!r} has a single value in the rows "
                 "analysed: there is nothing to cluster over, rows are treated as "
                 "independent")
    if gee:
        raise AnalysisError("A GEE fit needs at least two clusters in the rows analysed; "
                            f"{cluster!r} has one.")
    return _Cells(cells.values, cells.codes, cells.n, cells.k).aggregate(), None


def _cluster_codes(cells: _Cells) -> np.ndarray:
    """The cluster codes with rows (sorted), from the pairs or the split cells."""
    if cells.pairs is not None:
        return cells.pairs.used_clusters()
    return np.unique(cells.cluster)


@dataclass
class _Model:
    """An estimable model: its cells (after separation fixes), terms and design matrix."""

    cells: _Cells
    terms: list[_Term]
    X: np.ndarray
    #: Values and combinations found separated (and dropped or merged) on the way.
    separated: list[_Separated]


def _estimable_model(cells: _Cells, refs: Mapping[str, str], pairs: list[tuple[str, str]],
                     on_separation: SeparationAction, prompt_factors: Sequence[str],
                     notes: list[str]) -> _Model:
    """Refuse what cannot be estimated; drop or merge separated values as asked (each
    round can reveal new separation, so the checks repeat until none is left)."""
    no_column: set[tuple] = set()
    separated_all: list[_Separated] = []
    for _ in range(_MAX_FIX_ROUNDS):
        _check_variation(cells)
        _check_constant(cells, notes)
        _check_references(cells, refs, notes)
        terms = _build_terms(cells, refs, pairs, no_column)
        X = _matrix(cells, terms)
        deps = _dependencies(X)
        if deps:
            raise _aliasing_refusal(cells, terms, X, deps, refs, notes,
                                    prompt_factors=prompt_factors)
        separated = _separated(cells, refs, pairs, no_column)
        separated_all += separated
        if not separated:
            return _Model(cells, terms, X, separated_all)
        if on_separation == "refuse":
            raise _separation_refusal(separated, cells, refs, notes)
        cells = _resolve_separation(cells, separated, refs, on_separation, no_column, notes)
    # pragma: no cover - each round removes a value or a combination
    raise ImportanceRefusal("separation", "Separation could not be resolved.")


def _note_unseen_values(model: _Model, design: Design, factors: list[str],
                        where: Where | None, exclude: Mapping[str, Sequence[str]],
                        notes: list[str]) -> None:
    """Note declared values without rows (not those filtered out or already noted)."""
    cells = model.cells
    for f in factors:
        removed = set(exclude.get(f, ()))
        if where and f in where:
            kept = where[f]
            removed |= set(design.factor(f).values) - ({kept} if isinstance(kept, str)
                                                       else set(map(str, kept)))
        noted = {v for s in model.separated for g, v in s.parts
                 if g == f and len(s.parts) == 1}
        present = {cells.values[f][c] for c in cells.observed(f)}
        unseen = [v for v in design.factor(f).values
                  if v not in present and v not in removed and v not in noted]
        if unseen and len(unseen) < len(design.factor(f).values):
            notes.append(f"{f} = {', '.join(map(_q, unseen[:8]))}"
                         f"{' ...' if len(unseen) > 8 else ''}: no rows in the subset, "
                         "no coefficient")


def _check_size(model: _Model, factors: list[str], pairs: list[tuple[str, str]],
                min_rows_per_parameter: float, notes: list[str]) -> None:
    """Refuse too few rows per parameter; note too few events per parameter."""
    cells = model.cells
    n_rows, n_dev, p = int(cells.n.sum()), int(cells.k.sum()), len(model.terms)
    if n_rows < min_rows_per_parameter * p:
        raise ImportanceRefusal(
            "too_few_rows",
            f"Too few rows: {n_rows:,} rows for {p} parameters ({n_rows / p:.1f} per "
            f"parameter; at least {min_rows_per_parameter:g} are needed for estimates and "
            "p-values to mean something).",
            [Fix("Drop the interactions", drop_interactions=tuple(pairs))] * bool(pairs)
            + [Fix(f"Drop factor {f} ({len(cells.observed(f))} values)", drop_factors=(f,))
               for f in sorted(factors, key=lambda f: -len(cells.observed(f)))[:2]])
    events = min(n_dev, n_rows - n_dev)
    if events < MIN_EVENTS_PER_PARAMETER * p:
        rarer = "deviations" if n_dev <= n_rows - n_dev else "non-deviations"
        notes.append(f"only {events:,} {rarer} for {p} parameters (fewer than "
                     f"{MIN_EVENTS_PER_PARAMETER:g} per parameter): estimates may be biased "
                     "away from 0 and intervals too narrow")


def _blas_threads(entries: int) -> contextlib.AbstractContextManager:
    """One BLAS thread for a large fit (a design matrix of about ``entries`` entries).

    The fit is a long series of medium-sized matrix products; on a busy machine a
    multi-threaded BLAS spends most of its time waiting for its other threads (measured
    on the shared 2-core machine: 13 s instead of 0.6 s for one information matrix at
    1M cells). Small fits leave BLAS as it is.
    """
    if entries < _ONE_THREAD_ENTRIES:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


def _fitted(model: _Model, factors: list[str], refs: dict[str, str],
            pairs: list[tuple[str, str]], notes: list[str], *, cluster: str | None,
            gee: bool, small_sample: SmallSample, likelihood_ratio: bool, alpha: float,
            adjust: Adjust, confidence: float, parts: ImportanceParts | None = None
            ) -> ImportanceResult:
    """Fit the model, refuse a failed fit, and assemble the result."""
    cells, terms, X = model.cells, model.terms, model.X
    n_rows, n_dev, p = int(cells.n.sum()), int(cells.k.sum()), len(terms)
    fit = _fit(X, cells.n, cells.k)
    info = _information(X, cells.n, fit.eta) if fit.converged else None
    cov = np.linalg.inv(info) if info is not None else np.full((p, p), np.nan)
    _check_fit(fit, cov, cells, terms)
    params, robust, df, support = fit.params, None, None, None
    if cluster:
        robust, support = _robust_support(X, cells, terms, fit, cov, n_rows=n_rows, gee=gee,
                                          small_sample=small_sample, parts=parts)
        params, cov = robust.params, robust.cov
        notes.extend(robust.notes(cluster, small_sample))
        df = reference_df(small_sample, robust.n_clusters)
    table = _terms_table(terms, X, cells, params, cov, alpha=alpha, adjust=adjust,
                         confidence=confidence, df=df, support=support)
    tests = (_lr_tests(X, cells, terms, fit, factors, pairs, info) if likelihood_ratio
             else pd.DataFrame(columns=TEST_COLUMNS))
    failed = tests.loc[tests[LR_STATISTIC].isna(), FACTOR].tolist()
    if failed:
        notes.append("the likelihood-ratio test of " + ", ".join(failed) + " is missing: the "
                     "model without it did not converge")
    if robust is not None:
        _insert_naive_columns(table, robust, support)
        notes.extend(support.notes(terms, cluster, robust.n_clusters))
        tests = _robust_wald_tests(tests, terms, params, cov, factors, pairs, df=df,
                                   notes=notes, support=support)
    tests = adjust_tests(tests, adjust)
    k_total = cells.k.sum()
    null_llf = _loglik(np.full(len(cells.n), math.log(k_total / (n_rows - k_total))),
                       cells.n, cells.k)
    n_cells = len(cells.n) if cluster is None or cells.pairs is not None else len(
        _Cells(cells.values, cells.codes, cells.n, cells.k).aggregate().n)
    return ImportanceResult(
        terms=table, factor_tests=tests, factors=tuple(factors), references=refs,
        interactions=tuple(pairs), n_rows=n_rows, n_deviations=n_dev, n_cells=n_cells,
        n_parameters=p, log_likelihood=fit.llf, null_log_likelihood=null_llf,
        iterations=fit.iterations, alpha=alpha, adjust=adjust, confidence=confidence,
        notes=tuple(notes), cluster=cluster or None,
        n_clusters=0 if robust is None else robust.n_clusters,
        covariance="naive" if robust is None else robust.kind,
        gee_correlation=None if robust is None else robust.correlation,
        reference_df=None if support is not None and support.satterthwaite else df,
        small_sample_label="" if robust is None else (
            "GEE robust covariance" if robust.kind == GEE
            else SMALL_SAMPLE_LABELS[small_sample]),
        df_method="" if support is None else support.method)


def _robust_support(X: np.ndarray, cells: _Cells, terms: list[_Term], fit: _Fit,
                    cov: np.ndarray, *, n_rows: int, gee: bool, small_sample: SmallSample,
                    parts: ImportanceParts | None) -> tuple[_Robust, _Support]:
    """:func:`_robust` and :func:`_support` of the fit; from ``parts`` when they were
    computed for these very cells (a kept part) from the same bits of ``X``, the linear
    predictor and the model-based covariance (so the same numbers)."""
    def make() -> tuple[_Robust, _Support, tuple[np.ndarray, ...]]:
        robust = _robust(X, cells, fit, cov, n_rows=n_rows, gee=gee,
                         small_sample=small_sample, terms=terms)
        support = _support(X, cells, terms, robust,
                           reference_df(small_sample, robust.n_clusters))
        return robust, support, (X, fit.eta, fit.params, cov)

    if parts is None or gee:  # (GEE refits on the rows: not kept)
        robust, support, _ = make()
        return robust, support
    key = ("robust", small_sample, n_rows, tuple(t.name for t in terms))
    robust, support, _ = parts.get(
        "robust", cells, key, make,
        check=lambda part: all(map(same_bits, part[2], (X, fit.eta, fit.params, cov))))
    return robust, support


def _insert_naive_columns(table: pd.DataFrame, robust: _Robust,
                          support: _Support | None = None) -> None:
    """The model-based standard error and the robust / model ratio, then ``df`` and
    ``n_clusters`` (with ``support``), before ``z``."""
    naive_se = np.sqrt(np.diag(robust.naive_cov))
    plain, ratio = ((MODEL_STD_ERR, ROBUST_MODEL_SE_RATIO) if robust.kind == GEE
                    else (NAIVE_STD_ERR, DESIGN_EFFECT))
    table.insert(table.columns.get_loc(Z), plain, naive_se)
    table.insert(table.columns.get_loc(Z), ratio, table[STD_ERR] / naive_se)
    if support is not None:
        table.insert(table.columns.get_loc(Z), DF, support.df)
        table.insert(table.columns.get_loc(Z), N_CLUSTERS, support.clusters)


@dataclass(frozen=True)
class _Support:
    """What stands behind each coefficient of a clustered fit: its df (per term), the df
    of its probability contrast, the clusters holding its value (``presence``: G x p)."""

    df: np.ndarray
    df_probability: np.ndarray
    presence: np.ndarray
    satterthwaite: bool
    kernel: SmallSampleCR2 | None = None
    #: The kernel's factor tests already computed, by (coefficients' bits, columns): a
    #: support kept in an :class:`ImportanceParts` store tests again in no time.
    tests: dict = field(default_factory=dict, compare=False, repr=False)

    def factor_test(self, b: np.ndarray, columns: list[int]):
        """The kernel's HTZ test of ``columns`` (:meth:`SmallSampleCR2.factor_test`)."""
        assert self.kernel is not None
        key = (np.asarray(b, dtype=float).tobytes(), tuple(columns))
        if key not in self.tests:
            self.tests[key] = self.kernel.factor_test(b, columns)
        return self.tests[key]

    @property
    def clusters(self) -> np.ndarray:
        return self.presence.sum(axis=0)

    @property
    def method(self) -> str:
        if self.satterthwaite:
            return "satterthwaite"
        return "normal" if np.all(np.isnan(self.df)) else "G - 1"

    @property
    def estimable(self) -> np.ndarray:
        """Coefficients with a p-value: on at least 2 clusters and, with Satterthwaite
        df, df at or above :data:`analysis.clusters.DF_FLOOR`."""
        ok = self.clusters >= MIN_SUPPORTING_CLUSTERS
        if self.satterthwaite:
            ok &= np.isfinite(self.df) & (self.df >= DF_FLOOR)
        return ok

    def notes(self, terms: list[_Term], cluster: str, g: int) -> list[str]:
        """One note per coefficient without a p-value, naming its value and clusters."""
        out = []
        for j in np.flatnonzero(~self.estimable):
            t, k = terms[j], int(self.clusters[j])
            what = (f"{t.factor} = {_q(t.value)}" if t.factor and t.value is not None
                    else t.name)
            if k < MIN_SUPPORTING_CLUSTERS:
                out.append(f"{what} occurs in {k} of {g:,} values of {cluster}: its effect "
                           f"cannot be told apart from that {cluster}'s own, so it has no "
                           "p-value, interval or risk/protective label")
            else:
                out.append(f"{what} occurs in {k} of {g:,} values of {cluster} and its "
                           f"Satterthwaite df is {self.df[j]:.2g} (below {DF_FLOOR:g}): "
                           "no p-value, interval or risk/protective label")
        return out


def _presence(X: np.ndarray, cells: _Cells, g: int, terms: list[_Term] | None = None
              ) -> np.ndarray:
    """(G, p): does cluster g hold rows where column j is not 0."""
    from analysis.importance_codes import ClusterMargins

    margins = cells.pairs if isinstance(cells.pairs, ClusterMargins) else None
    presence = (None if margins is None or terms is None
                else margins.presence(_axis_parts(terms, cells)))
    if presence is not None:
        return presence
    if cells.pairs is not None:
        from analysis.importance_codes import cluster_presence

        pairs = margins.pairs() if margins is not None else cells.pairs
        return cluster_presence(X, pairs, pairs.used_clusters())
    assert cells.cluster is not None
    _, index = np.unique(cells.cluster, return_inverse=True)
    out = np.zeros((g, X.shape[1]), dtype=bool)
    nonzero = (X != 0) & (cells.n > 0)[:, None]
    for j in range(X.shape[1]):
        out[np.unique(index[nonzero[:, j]]), j] = True
    return out


def _support(X: np.ndarray, cells: _Cells, terms: list[_Term], robust: _Robust,
             df: int | None) -> _Support:
    if robust.kernel is not None and cells.pairs is not None:  # x_j^2 n w > 0 where present
        presence = np.einsum("gjj->gj", robust.kernel.infos) > 0
    else:
        presence = _presence(X, cells, robust.n_clusters, terms)
    p = X.shape[1]
    if robust.kernel is not None:
        # the coefficients' and the probabilities' contrasts in one call (each row alone)
        df = robust.kernel.satterthwaite(np.vstack([np.eye(p), _probability_contrasts(terms)]))
        return _Support(df[:p], df[p:], presence, True, robust.kernel)
    same = np.full(p, np.nan if df is None else float(df))
    return _Support(same, same, presence, False)


# --- the public function -----------------------------------------------------------------------
def factor_importance(
    data: pd.DataFrame,
    design: Design,
    *,
    factors: Sequence[str] | None = None,
    references: Mapping[str, str] | None = None,
    where: Where | None = None,
    exclude: Mapping[str, Sequence[str]] | None = None,
    interactions: Sequence[str | tuple[str, str]] = (),
    on_separation: SeparationAction = "refuse",
    alpha: float = 0.05,
    adjust: Adjust = "bh",
    confidence: float = 0.95,
    min_rows_per_parameter: float = MIN_ROWS_PER_PARAMETER,
    likelihood_ratio: bool = True,
    cluster: str | None = FROM_DESIGN,
    gee: bool = False,
    small_sample: SmallSample = "cr2",
    parts: ImportanceParts | None = None,
) -> ImportanceResult:
    """Logistic regression of deviation on factors, treatment-coded (methods.md §4).

    Parameters
    ----------
    data
        The results table from :func:`analysis.design.apply_design` (with a
        ``deviation`` column), or a cell table from :func:`analysis.cells.cell_table`
        (``n``, ``deviations``) over at least the model's factors and the factors named
        in ``where`` / ``exclude``. A cell table over more factors is summed down.
    design
        Declares the factors' values and default references.
    factors
        Factors of the model, in the order the terms are listed (default: every factor
        of the design).
    references
        Reference value per factor, overriding the design's.
    where
        Keep only rows with these values, e.g. ``{"model": "A", "cot": ["yes"]}``.
    exclude
        Leave out rows with these values, e.g. ``{"prompt_style": ["base"]}``.
    interactions
        Two-factor interactions among ``factors``, as ``"a:b"`` or ``("a", "b")``: one
        parameter per observed combination of two non-reference values.
    on_separation
        What to do with values (and interaction combinations) whose rows have no or only
        deviations: ``"refuse"`` (default; raise with an explanation), ``"drop"`` (leave
        their rows out) or ``"merge"`` (merge such a value into its factor's reference;
        an interaction combination loses its own parameter). A separated reference value
        cannot be merged. Every change is listed in ``notes``.
    alpha
        Threshold for the risk / protective labels.
    adjust
        The multiple-testing adjustment of ``p_adjusted`` over the non-intercept terms (and
        of the factor tests' ``p_adjusted`` columns), and the labels use it: ``"bh"``
        (default, Benjamini-Hochberg; with 94 stigmas about 5 would be labelled under a
        global null by the unadjusted p, issue 38), ``"by"``, ``"holm"``,
        ``"bonferroni"`` or ``"hommel"`` (:mod:`analysis.multiple_testing`); ``"none"``:
        the labels use the per-term p-values and ``p_adjusted`` stays Benjamini-Hochberg.
        Both ``p_value`` and ``p_adjusted`` are always reported.
    confidence
        Level of the Wald intervals (coefficient, odds ratio, probability).
    min_rows_per_parameter
        Refuse when the subset has fewer rows than this times the number of parameters.
    likelihood_ratio
        Also compute a likelihood-ratio test per factor and interaction (one refit each).
    cluster
        Column whose rows are correlated (template, prompt id, seed; default: the
        design's ``cluster``; ``None``: rows independent). Standard errors, z, p-values
        and every interval are then cluster-robust (with ``small_sample="none"`` equal
        to statsmodels' binomial ``GLM.fit(cov_type="cluster")`` on the rows); ``terms``
        gains ``naive_std_err``, ``design_effect`` (robust / naive standard error),
        ``df`` and ``n_clusters``, and ``factor_tests`` the robust Wald test as its
        ``p_value`` (:data:`ROBUST_TEST_COLUMNS`). The fit stays on the cell table,
        split by cluster. A cluster that only the design declares is not used, with a
        note, when it is absent from the table, a factor of the model, constant in the
        subset or one row per value (:func:`analysis.clusters.resolve_cluster`); the
        same for a named cluster except that an absent one raises.
    gee
        With a cluster: estimate by GEE with an exchangeable working correlation
        (statsmodels, on the rebuilt rows) instead of the logit; robust covariance.
    small_sample
        With a cluster: ``"cr2"`` (default) uses the bias-reduced (CR2) covariance
        (Bell & McCaffrey 2002) and compares each robust z with Student's t on that
        coefficient's Satterthwaite df (intervals likewise), and tests factors by HTZ
        (Pustejovsky & Tipton 2018; clubSandwich's ``coef_test`` / ``Wald_test``):
        a contrast resting on few clusters gets few df; ``"cr1"`` the CR1 sandwich with
        t(G - 1) (= statsmodels ``use_t=True``, Stata); ``"none"`` the CR1 sandwich
        with the normal and chi-square references (= statsmodels'
        ``cov_type="cluster"``). A GEE fit keeps statsmodels' robust covariance (t on
        G - 1). Measured sizes: docs/uncertainty.md.
    parts
        An :class:`analysis.importance_parts.ImportanceParts` store kept by a caller that
        calls again on the same (unmodified) table with other options: the cells, the
        cluster's pairs and, while the fit is bit for bit the same (alpha, adjust,
        confidence changed), the cluster-robust covariance are taken from it. The
        numbers are the same with or without it.

    Returns
    -------
    ImportanceResult
        ``terms`` (one row per coefficient), ``factor_tests`` (LR tests), the fit's
        scalars and ``notes``; see :class:`ImportanceResult` for the columns.

    Raises
    ------
    ImportanceRefusal
        (a :class:`~analysis.errors.FitError`) when the model is not estimable; its
        ``reason``, ``explanation`` and ``fixes`` say why and what to change.
    AnalysisError
        Unknown factors, values or options.
    """
    _check_options(on_separation, adjust, alpha, confidence, small_sample)
    factors, refs, pairs = _model_spec(design, factors, references, interactions)
    exclude = {k: [str(x) for x in ([v] if isinstance(v, str) else v)]
               for k, v in (exclude or {}).items() if v}
    notes: list[str] = []
    cells, cluster = _chosen_cells(data, design, factors, where, exclude, cluster, gee, notes,
                                   parts)
    cells, cluster = _usable_cluster(cells, cluster, gee, notes)
    with _blas_threads(len(cells.n) * (1 + sum(len(cells.observed(f)) for f in factors))):
        model = _estimable_model(cells, refs, pairs, on_separation,
                                 design.of_kind("prompt"), notes)
        _note_unseen_values(model, design, factors, where, exclude, notes)
        _check_size(model, factors, pairs, min_rows_per_parameter, notes)
        return _fitted(model, factors, refs, pairs, notes, cluster=cluster, gee=gee,
                       small_sample=small_sample, likelihood_ratio=likelihood_ratio,
                       alpha=alpha, adjust=adjust, confidence=confidence, parts=parts)


def _chosen_cells(data: pd.DataFrame, design: Design, factors: list[str], where: Where | None,
                  exclude: dict[str, list[str]], cluster: str | None, gee: bool,
                  notes: list[str], parts: ImportanceParts | None
                  ) -> tuple[_Cells, str | None]:
    """The cluster used (its notes into ``notes``) and the model's cells: computed, or
    from ``parts`` for the same table object, factors, cluster option and subset."""

    def make() -> tuple[_Cells, str | None, tuple[str, ...]]:
        found: list[str] = []
        coded: dict = {}
        chosen = _chosen_cluster(data, design, cluster, factors, gee, found, coded)
        cells, _ = _cells_from(data, design, factors, where, exclude, chosen,
                               coded=coded.get(chosen))
        return cells, chosen, tuple(found)

    if parts is None:
        cells, chosen, found = make()
    else:
        read = [*factors, *(where or {}), *exclude, DEVIATION, N, DEVIATIONS,
                *([design.cluster] if cluster is FROM_DESIGN and design.cluster else []),
                *([cluster] if cluster and cluster is not FROM_DESIGN else [])]
        key = (tuple(factors), tuple(tuple(design.factor(f).values) for f in factors),
               design.cluster, cluster is FROM_DESIGN, cluster, gee,
               repr(sorted((where or {}).items(), key=lambda kv: str(kv[0]))),
               repr(sorted(exclude.items())), table_signature(data, read))
        cells, chosen, found = parts.get("cells", data, key, make)
    notes.extend(found)
    return cells, chosen


# --- clustered rows ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Robust:
    params: np.ndarray
    cov: np.ndarray
    naive_cov: np.ndarray
    n_clusters: int
    kind: str
    correlation: float | None
    #: The small-sample kernel (CR2 of the logit): Satterthwaite df and HTZ tests.
    kernel: SmallSampleCR2 | None = None

    def notes(self, cluster: str, small_sample: SmallSample = "cr2") -> list[str]:
        how = (describe_satterthwaite(self.n_clusters) if self.kernel is not None else
               describe(small_sample, self.n_clusters) if self.kind != GEE else
               f"GEE, exchangeable working correlation {self.correlation:.4g}, "
               + describe(small_sample, self.n_clusters).split(", ", 1)[1])
        out = [f"standard errors, p-values and intervals are cluster-robust over the "
               f"{self.n_clusters:,} values of {cluster} ({how})"
               + "; the factor tests' p_value is the cluster-robust Wald test, the "
                 "likelihood-ratio test (p_value_lr) assumes independent rows"]
        few = few_clusters_note(self.n_clusters, cluster, small_sample,
                                satterthwaite=self.kernel is not None)
        if few:
            out.append(few)
        return out


def _robust(X: np.ndarray, cells: _Cells, fit: _Fit, naive_cov: np.ndarray, *, n_rows: int,
            gee: bool, small_sample: SmallSample = "cr2",
            terms: list[_Term] | None = None) -> _Robust:
    """Cluster-robust (sandwich) covariance of the logit fit, or a GEE fit.

    The score of the rows of cell ``c`` sums to ``x_c (k_c - n_c p_c)``; summing the cells
    of each cluster gives the cluster scores ``u_g`` and the sandwich
    ``V = c B (sum_g u_g u_g') B`` with ``B`` the inverse information (the naive
    covariance) and statsmodels' small-sample factor ``c = G / (G - 1) * (N - 1) / (N - p)``
    (G clusters, N rows, p parameters), as ``GLM.fit(cov_type="cluster")``; with
    ``small_sample="cr2"`` the cluster scores are the bias-reduced ones
    (:func:`analysis.clusters.cr2_scores`, cluster information from the cells) and
    ``c = 1``.
    """
    if cells.pairs is not None:
        return _robust_pairs(X, cells, fit, naive_cov, n_rows=n_rows, gee=gee,
                             small_sample=small_sample, terms=terms)
    groups = cells.cluster
    assert groups is not None
    used, group_index = np.unique(groups, return_inverse=True)
    g = len(used)
    if g < 2:
        raise ImportanceRefusal("too_few_rows", "Cluster-robust standard errors need at least "
                                                "two clusters in the subset; there is one.")
    if gee:
        return _gee(X, cells, group_index, naive_cov, g)
    mu = 1.0 / (1.0 + np.exp(-fit.eta))
    u = X * (cells.k - cells.n * mu)[:, None]
    scores = np.zeros((g, X.shape[1]))
    np.add.at(scores, group_index, u)
    p = X.shape[1]
    if small_sample == "cr2":
        weights = cells.n * mu * (1 - mu)
        infos = np.zeros((g, p, p))
        order = np.argsort(group_index, kind="stable")
        bounds = np.searchsorted(group_index[order], np.arange(g + 1))
        for j in range(g):
            rows = order[bounds[j]:bounds[j + 1]]
            infos[j] = (X[rows] * weights[rows, None]).T @ X[rows]
        kernel = SmallSampleCR2(scores, naive_cov, infos)
        return _Robust(fit.params, kernel.cov, naive_cov, g, CLUSTER_ROBUST, None, kernel)
    factor = g / (g - 1) * (n_rows - 1) / (n_rows - p)
    cov = factor * naive_cov @ (scores.T @ scores) @ naive_cov
    return _Robust(fit.params, cov, naive_cov, g, CLUSTER_ROBUST, None)


def _robust_pairs(X: np.ndarray, cells: _Cells, fit: _Fit, naive_cov: np.ndarray, *,
                  n_rows: int, gee: bool, small_sample: SmallSample,
                  terms: list[_Term] | None = None) -> _Robust:
    """:func:`_robust` of factor cells with their (cell, cluster) pairs: the same cluster
    scores and cluster informations as sums over the pairs, or over per-cluster tables
    of factor subsets (:mod:`analysis.importance_codes`), without the factors x cluster
    cells."""
    from analysis.importance_codes import (
        ClusterMargins,
        cluster_information,
        cluster_scores,
        pair_slots,
    )

    pairs = cells.pairs
    assert pairs is not None
    if isinstance(pairs, ClusterMargins) and (gee or terms is None):
        pairs = pairs.pairs()
    used = pairs.used_clusters()
    g = len(used)
    if g < 2:
        raise ImportanceRefusal("too_few_rows", "Cluster-robust standard errors need at least "
                                                "two clusters in the subset; there is one.")
    if gee:
        split = _Cells(cells.values, {f: c[pairs.cell] for f, c in cells.codes.items()},
                       pairs.n, pairs.k, pairs.cluster, pairs.n_clusters)
        return _gee(X[pairs.cell], split, pairs.cluster_index(used), naive_cov, g)
    mu = 1.0 / (1.0 + np.exp(-fit.eta))
    p = X.shape[1]
    sums = (pairs.sums(_axis_parts(terms, cells), mu, information=small_sample == "cr2")
            if isinstance(pairs, ClusterMargins) and terms is not None else None)
    if sums is not None:
        scores, infos = sums
    else:
        pairs = pairs.pairs() if isinstance(pairs, ClusterMargins) else pairs
        slots = pair_slots(X, pairs)  # each pair's nonzero columns, once for both sums
        scores = cluster_scores(X, pairs, mu, used, slots=slots)
        infos = (cluster_information(X, pairs, mu * (1 - mu), used, slots=slots)
                 if small_sample == "cr2" else None)
    if infos is not None:
        kernel = SmallSampleCR2(scores, naive_cov, infos)
        return _Robust(fit.params, kernel.cov, naive_cov, g, CLUSTER_ROBUST, None, kernel)
    factor = g / (g - 1) * (n_rows - 1) / (n_rows - p)
    cov = factor * naive_cov @ (scores.T @ scores) @ naive_cov
    return _Robust(fit.params, cov, naive_cov, g, CLUSTER_ROBUST, None)


def _axis_parts(terms: list[_Term], cells: _Cells) -> list[tuple[tuple[int, int], ...]]:
    """Each term's (factor axis, code) parts: the factors' positions among the cells'."""
    axis = {f: a for a, f in enumerate(cells.factors)}
    return [tuple((axis[f], c) for f, c in t.parts) for t in terms]


def _gee(X: np.ndarray, cells: _Cells, group_index: np.ndarray, naive_cov: np.ndarray,
         g: int) -> _Robust:
    """statsmodels GEE (binomial, exchangeable) on the rows the cells stand for.

    The rows are rebuilt exactly (a cell x cluster of ``n`` rows with ``k`` deviations
    is ``k`` ones and ``n - k`` zeros with the cell's covariates); the covariance is
    statsmodels' robust (sandwich) one, without small-sample correction.
    """
    import warnings

    import statsmodels.api as sm
    from statsmodels.genmod.cov_struct import Exchangeable

    n = cells.n.astype(np.int64)
    k = cells.k.astype(np.int64)
    rows = np.repeat(np.arange(len(n)), n)
    start = np.repeat(np.r_[0, np.cumsum(n)[:-1]], n)
    y = (np.arange(len(rows)) - start < np.repeat(k, n)).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = sm.GEE(y, X[rows], groups=group_index[rows], family=sm.families.Binomial(),
                       cov_struct=Exchangeable())
        result = model.fit(maxiter=200)
    if not np.all(np.isfinite(result.params)):
        raise ImportanceRefusal("not_converged", "The GEE fit did not converge; use the "
                                                 "cluster-robust logit (without --gee).")
    naive = np.asarray(result.cov_naive)
    return _Robust(np.asarray(result.params), np.asarray(result.cov_robust), naive, g, GEE,
                   float(model.cov_struct.dep_params))


def _robust_wald_tests(tests: pd.DataFrame, terms: list[_Term], b: np.ndarray, cov: np.ndarray,
                       factors: list[str], pairs: list[tuple[str, str]], *,
                       df: int | None = None, notes: list[str] | None = None,
                       support: _Support | None = None) -> pd.DataFrame:
    """The cluster-robust Wald test per factor (its columns and interactions, as the LR
    test) and per interaction, beside the likelihood-ratio test (renamed ``p_value_lr``).

    With the CR2 kernel (``support.kernel``): HTZ (clubSandwich's ``Wald_test(...,
    test = "HTZ")``), ``robust_wald_statistic`` its F on (``robust_wald_df`` = q,
    ``robust_wald_df_denominator``) df. Otherwise ``W = b_J' V_JJ^-1 b_J`` against
    chi-square(q), or ``W / q`` against F(q, df) with ``df`` = G - 1. Refused (NaN and a
    ``reason``, also in ``notes``) when a column rests on fewer than 2 clusters (or too
    few df), when ``V_JJ`` is singular (its rank below q: never a chi-square of a
    pseudo-inverse), or when the HTZ df fall below :data:`analysis.clusters.DF_FLOOR`.
    """
    from scipy.special import fdtrc

    rows = []
    for name, cols in _test_groups(terms, factors, pairs):
        q, reason = len(cols), ""
        stat = df_denom = p_value = np.nan
        clusters = (int(support.presence[:, cols].any(axis=1).sum())
                    if support is not None else 0)
        weak = ([terms[j].name for j in cols if not support.estimable[j]]
                if support is not None else [])
        if weak:
            reason = (f"{_and(weak[:4])}{' ...' if len(weak) > 4 else ''} cannot be estimated "
                      "(fewer than 2 clusters, or too few df), so no joint test of its "
                      "columns exists")
        elif support is not None and support.kernel is not None:
            test = support.factor_test(b, cols)
            reason = test.reason
            if not reason:
                stat, df_denom, p_value = test.statistic, test.df, test.p_value
        else:
            sub = cov[np.ix_(cols, cols)]
            try:
                chol = positive_definite_factor(sub)
                z = np.linalg.solve(chol, b[cols])
                stat = float(z @ z)
                df_denom = np.nan if df is None else float(df)
                p_value = (wald_p(stat, q, None) if df is None
                           else float(fdtrc(q, df, stat / q)))
                if df is not None:
                    stat = stat / q  # reported as the F statistic of its reference
            except np.linalg.LinAlgError:
                rank = covariance_rank(sub)
                reason = (f"its cluster-robust covariance is singular (rank {rank} for {q} "
                          "columns; with G clusters at most G - 1 for the CR1 sandwich), so "
                          "no test of all its columns exists")
        if reason and notes is not None:
            notes.append(f"no cluster-robust test of {name}: {reason}")
        rows.append({FACTOR: name, ROBUST_WALD_DF: q, ROBUST_WALD_DF_DENOMINATOR: df_denom,
                     ROBUST_WALD_STATISTIC: stat, P_VALUE: p_value, N_CLUSTERS: clusters,
                     REASON: reason})
    robust = pd.DataFrame(rows, columns=[FACTOR, ROBUST_WALD_DF, ROBUST_WALD_DF_DENOMINATOR,
                                         ROBUST_WALD_STATISTIC, P_VALUE, N_CLUSTERS, REASON])
    robust.insert(robust.columns.get_loc(P_VALUE) + 1, P_ADJUSTED,
                  benjamini_hochberg(robust[P_VALUE].to_numpy(dtype=float)))
    if len(tests) == 0:
        return robust
    lr = tests.rename(columns={P_VALUE: P_VALUE_LR, P_ADJUSTED: P_ADJUSTED_LR})
    out = robust.merge(lr, on=FACTOR, how="left")
    return out[[c for c in ROBUST_TEST_COLUMNS if c in out.columns]]


def _probability_contrasts(terms: list[_Term]) -> np.ndarray:
    """Rows: the linear predictor at each term's values with everything else at the
    reference (b0 + the main effects of the term's values + the term itself)."""
    index = {t.parts: j for j, t in enumerate(terms)}
    G = np.zeros((len(terms), len(terms)))
    for j, t in enumerate(terms):
        G[j, 0] = 1
        for part in t.parts:
            if (part,) in index:
                G[j, index[(part,)]] = 1
        G[j, j] = 1
    return G


def _terms_table(terms: list[_Term], X: np.ndarray, cells: _Cells, b: np.ndarray,
                 cov: np.ndarray, *, alpha: float, adjust: Adjust, confidence: float,
                 df: int | None = None, support: _Support | None = None) -> pd.DataFrame:
    """The terms table; p-values and intervals against t(df) when ``df`` is given, or
    t with each term's own df (``support``: Satterthwaite); a term that ``support``
    finds not estimable gets no p-value, interval or label."""
    from analysis.special import expit

    se = np.sqrt(np.diag(cov))
    z = b / se
    term_df = support.df if support is not None and support.satterthwaite else df
    prob_df = support.df_probability if support is not None and support.satterthwaite else df
    ok = support.estimable if support is not None else np.ones(len(b), dtype=bool)
    p = np.full(len(b), np.nan)
    crit = np.full(len(b), np.nan)
    crit_p = np.full(len(b), np.nan)
    p[ok] = two_sided_p(z[ok], term_df[ok] if np.ndim(term_df) else term_df)
    crit[ok] = critical_value(confidence, term_df[ok] if np.ndim(term_df) else term_df)
    crit_p[ok] = critical_value(confidence, prob_df[ok] if np.ndim(prob_df) else prob_df)
    p_adj = np.concatenate([[np.nan], adjust_p(p[1:], adjusted_by(adjust))])
    G = _probability_contrasts(terms)
    eta = G @ b
    eta_se = np.sqrt(np.einsum("ij,jk,ik->i", G, cov, G))
    n_term = X.T @ cells.n
    k_term = X.T @ cells.k
    ref_rows = X[:, 1:].sum(axis=1) == 0 if len(terms) > 1 else np.ones(len(cells.n), bool)
    n_term[0], k_term[0] = cells.n[ref_rows].sum(), cells.k[ref_rows].sum()
    p_label = p if adjust == "none" else p_adj
    effect = np.where(p_label < alpha, np.where(b > 0, RISK, PROTECTIVE), NOT_SIGNIFICANT)
    effect = np.where(ok, effect, NOT_ESTIMABLE).astype(object)
    effect[0] = BASELINE
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = k_term / n_term
    return pd.DataFrame({
        TERM: [t.name for t in terms],
        FACTOR: [t.factor for t in terms],
        VALUE: [t.value for t in terms],
        N: n_term.round().astype(np.int64),
        DEVIATIONS: k_term.round().astype(np.int64),
        DEVIATION_RATE: rate,
        COEF: b, STD_ERR: se, Z: z, P_VALUE: p, P_ADJUSTED: p_adj,
        ODDS_RATIO: np.exp(b), CI_LOW: np.exp(b - crit * se), CI_HIGH: np.exp(b + crit * se),
        COEF_CI_LOW: b - crit * se, COEF_CI_HIGH: b + crit * se,
        PROBABILITY: expit(eta), PROBABILITY_CI_LOW: expit(eta - crit_p * eta_se),
        PROBABILITY_CI_HIGH: expit(eta + crit_p * eta_se),
        EFFECT: effect,
    }, columns=TERM_COLUMNS)


def _test_groups(terms: list[_Term], factors: list[str], pairs: list[tuple[str, str]]
                 ) -> list[tuple[str, list[int]]]:
    """The columns each test removes: a factor's own and those of every interaction that
    contains it; an interaction's own. Tests without a column are left out."""
    groups = [(f, {f, *(f"{a}:{b}" for a, b in pairs if f in (a, b))}) for f in factors]
    groups += [(f"{a}:{b}", {f"{a}:{b}"}) for a, b in pairs]
    out = []
    for name, drop in groups:
        cols = [j for j, t in enumerate(terms) if t.factor in drop]
        if cols:
            out.append((name, cols))
    return out


def _lr_tests(X: np.ndarray, cells: _Cells, terms: list[_Term], full: _Fit,
              factors: list[str], pairs: list[tuple[str, str]],
              info: np.ndarray | None = None) -> pd.DataFrame:
    """One likelihood-ratio test per factor and interaction (``info``: the information at
    the full fit, computed when not given)."""
    from analysis.special import chi2_sf

    groups = _test_groups(terms, factors, pairs)
    reduced = _reduced_logliks(X, cells.n, cells.k, full, [cols for _, cols in groups], info)
    rows = []
    for (name, cols), llf in zip(groups, reduced, strict=True):
        stat = max(2.0 * (full.llf - llf), 0.0) if llf is not None else np.nan
        rows.append({FACTOR: name, DF: len(cols), LR_STATISTIC: stat,
                     P_VALUE: chi2_sf(len(cols), stat) if np.isfinite(stat) else np.nan})
    out = pd.DataFrame(rows, columns=TEST_COLUMNS[:-1])
    out[P_ADJUSTED] = benjamini_hochberg(out[P_VALUE].to_numpy(dtype=float))
    return out


def _reduced_logliks(X: np.ndarray, n: np.ndarray, k: np.ndarray, full: _Fit,
                     drops: list[list[int]], info: np.ndarray | None = None
                     ) -> list[float | None]:
    """Maximum log-likelihood of each model without the columns ``drops[t]`` (None when
    that fit does not converge).

    All reduced models are fitted together, one pass over ``X`` per iteration for all of
    them, by Newton steps with a fixed Hessian: the full model's information restricted
    to the kept columns (exact at the full estimates, close at the reduced ones).
    Each starts from the one-step estimate ``b_K + H_KK^-1 H_KD b_D`` (the first-order
    position of the reduced maximum) and stops, as :func:`_fit`, when its largest step
    is below 1e-10 or the log-likelihood it would still gain is below :data:`_LLF_TOL`
    (the statistic is then exact to about 1e-9); a step that lowers the likelihood is
    halved. A model that does not
    converge so within :data:`_MAX_CHORD_ITERATIONS` steps, or runs off, is refitted by
    :func:`_fit` (Newton with its own Hessian) from the full estimates.
    """
    p, q = X.shape[1], len(drops)
    if q == 0:
        return []
    if info is None:
        info = _information(X, n, full.eta)
    b = full.params
    keeps = [np.setdiff1d(np.arange(p), cols) for cols in drops]
    inverses: list[np.ndarray | None] = []
    beta = np.zeros((p, q))
    for t, (cols, keep) in enumerate(zip(drops, keeps, strict=True)):
        try:
            inverse = np.linalg.inv(info[np.ix_(keep, keep)])
        except np.linalg.LinAlgError:
            inverse = None
        inverses.append(inverse)
        if inverse is not None:
            beta[keep, t] = b[keep] + inverse @ (info[np.ix_(keep, cols)] @ b[cols])
    result: list[float | None] = [None] * q
    active = [t for t in range(q) if inverses[t] is not None]
    accepted = beta.copy()
    best = np.full(q, -np.inf)
    step = np.zeros((p, q))
    halvings = np.zeros(q, dtype=int)
    for _ in range(_MAX_CHORD_ITERATIONS):
        if not active:
            break
        llf, score, runaway = _loglik_score(X, n, k, beta[:, active])
        still = []
        for i, t in enumerate(active):
            if runaway[i] or not np.isfinite(llf[i]):
                continue  # refitted below
            if np.isfinite(best[t]) and llf[i] < best[t] - 1e-9 * abs(best[t]):
                halvings[t] += 1
                if halvings[t] <= 30:  # as _fit: halve a step that lowers the likelihood
                    step[:, t] /= 2
                    beta[:, t] = accepted[:, t] + step[:, t]
                    still.append(t)
                continue
            best[t], accepted[:, t], halvings[t] = llf[i], beta[:, t], 0
            step[:, t] = 0.0
            step[keeps[t], t] = inverses[t] @ score[keeps[t], i]
            gain = 0.5 * float(step[:, t] @ score[:, i])  # llf still to gain, to 2nd order
            if np.max(np.abs(step[:, t])) < 1e-10 or gain < _LLF_TOL:
                result[t] = float(llf[i])
                continue
            beta[:, t] = accepted[:, t] + step[:, t]
            still.append(t)
        active = still
    for t in range(q):
        if result[t] is None:
            refit = _fit(X[:, keeps[t]], n, k, start=b[keeps[t]])
            result[t] = refit.llf if refit.converged else None
    return result


def _loglik_score(X: np.ndarray, n: np.ndarray, k: np.ndarray, beta: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each column of ``beta`` (p x q): the log-likelihood, the score ``X'(k - n mu)``
    and whether the linear predictor ran past ``2 x`` :data:`RUNAWAY_LOGIT`; block by
    block of rows (the q linear predictors of a block at a time)."""
    q = beta.shape[1]
    llf = np.zeros(q)
    score = np.zeros((X.shape[1], q))
    peak = np.zeros(q)

    def block(a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows, nb, kb = X[a:b], n[a:b], k[a:b]
        eta = beta.T @ rows.T  # q x rows: sums along rows are pairwise
        softplus = np.logaddexp(0.0, eta)  # log(1 + e^eta) = -log(1 - mu)
        return (np.sum(kb * eta - nb * softplus, axis=1),
                rows.T @ (kb - nb * np.exp(eta - softplus)).T, np.max(np.abs(eta), axis=1))

    for part_llf, part_score, part_peak in _per_block(block, len(X)):
        llf += part_llf
        score += part_score
        peak = np.maximum(peak, part_peak)
    return llf, score, peak > 2 * RUNAWAY_LOGIT


# --- choosing factors ---------------------------------------------------------------------------
# --- words ---------------------------------------------------------------------------------
def uncertainty_label(fit: ImportanceResult, design: Design | None = None) -> str:
    """How the standard errors of ``fit`` were computed, in words (CLI, page, report).

    Without a cluster it says "independent rows", and adds "(the design's cluster X is
    not used)" when the design declares one, so the plain analysis is never mistaken for
    the default clustered one.
    """
    if fit.cluster:
        kind = "GEE (exchangeable), " if fit.covariance == GEE else ""
        ref = (f"t with {fit.reference_df} df" if fit.reference_df is not None
               else "normal reference")
        if fit.df_method == "satterthwaite":
            ref = (f"{SATTERTHWAITE_LABEL}: t with each coefficient's own df, HTZ factor "
                   "tests; Pustejovsky & Tipton 2018")
        ref = (fit.small_sample_label + ", " if fit.small_sample_label
               and fit.df_method != "satterthwaite" else "") + ref
        ratio = ("robust_model_se_ratio = robust / model-based standard error"
                 if fit.covariance == GEE else "design_effect = robust / naive standard error")
        return (f"{kind}cluster-robust over {fit.n_clusters:,} values of {fit.cluster} "
                f"({ref}); {ratio}")
    declared = design.cluster if design is not None else None
    return "independent rows (no clustering)" + (
        f"; the design's cluster {declared} is not used" if declared else "")
