"""The Factor importance page for a continuous outcome (linear or mixed model).

Also the covariate widgets of the logistic fit (:func:`logistic_fit`).

Session-state keys: ``importance_covariates``, ``importance_standardise``,
``importance_mixed``, ``importance_random``, ``importance_unconverged``.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from analysis.design import Design
from analysis.errors import AnalysisError
from analysis.figures.importance_linear import linear_importance_figure
from analysis.importance import ImportanceRefusal
from analysis.options.importance_linear import LinearOptions as Lin
from analysis.options.subgroups import SubgroupsOptions as SubOpts
from analysis.reproduce import importance_linear_options, importance_linear_view
from ui.common import analysis_result
from ui.importance import fix_buttons
from ui.options import other_options
from ui.report import add_to_report_button
from ui.reproduce import reproduce
from ui.widgets import each_note, md, show_figure, show_table

__all__ = [
    "COLUMN_CONFIG", "column_config", "continuous_view", "covariate_options",
    "deviation_view_note", "group_means_section", "logistic_fit",
]


#: The fit's options of ``ImportanceOptions`` the linear model takes.
_FIT = ("alpha", "adjust", "confidence", "small_sample", "cluster")

_NUM = st.column_config.NumberColumn
COLUMN_CONFIG = {
    "mean": _NUM("mean", format="%.3f", help="Mean outcome of these rows"),
    "coef": _NUM("coef", format="%.3f", help="Difference in mean against the reference, "
                                             "the other terms fixed"),
    "std_err": _NUM("SE", format="%.3f"), "statistic": _NUM("t / z", format="%.2f"),
    "p_value": _NUM("p", format="%.3g"),
    "ci_low": _NUM("CI low", format="%.3f"), "ci_high": _NUM("CI high", format="%.3f"),
    "design_effect": _NUM("design effect", format="%.2f"),
}


def column_config(settings: dict) -> dict:
    """:data:`COLUMN_CONFIG` with ``p_adjusted`` headed by its method, from the Result's
    ``settings`` (:func:`analysis.labels.adjusted_method`: ``p (BH)``)."""
    from analysis.labels import adjusted_method
    from analysis.multiple_testing import NAMES, adjusted_label

    method = adjusted_method(settings)
    return {**COLUMN_CONFIG, "p_adjusted": _NUM(adjusted_label(method), format="%.3g",
                                                help=f"{NAMES[method]} over the terms")}


def _numeric_columns(results: pd.DataFrame, design: Design, factors: list[str]) -> list[str]:
    skip = {*factors, design.outcome.column if design.outcome else "", "deviation"}
    return [c for c in results.columns if c not in skip
            and pd.api.types.is_numeric_dtype(results[c]) and results[c].nunique() > 2]


def covariate_options(results: pd.DataFrame, design: Design, factors: list[str], where=st,
                      *, default: tuple[str, ...] = ()) -> tuple[list[str], bool]:
    """The numeric-covariate multiselect (first visit: ``default``, those the table has)
    and the standardise checkbox, drawn in ``where``; (covariates, standardise)."""
    ss = st.session_state
    numeric = _numeric_columns(results, design, factors)
    if "importance_covariates" not in ss:
        ss["importance_covariates"] = [c for c in default if c in numeric]
    ss["importance_covariates"] = [c for c in ss["importance_covariates"] if c in numeric]
    covariates = where.multiselect(Lin.label("covariates"), numeric, key="importance_covariates")
    standardise = where.checkbox(Lin.label("standardise"), value=Lin.default("standardise"),
                                 key="importance_standardise")
    return list(covariates), bool(standardise)


def logistic_fit(results: pd.DataFrame, design: Design, where: dict, options: dict,
                 cell_factors: list[str], *, as_result: bool = False):
    """The logistic fit of the 0/1 deviation, with the covariates chosen in the widgets or
    without (on the cached cells): one cached :func:`analysis.api.importance` call
    (:func:`ui.importance.importance_result`); (fit, covariates, standardise), the
    Result instead of its fit with ``as_result``."""
    from ui.importance import importance_result

    with st.expander("Numeric covariates", expanded=bool(st.session_state.get(
            "importance_covariates"))):
        covariates, standardise = covariate_options(results, design, options["factors"])
    result = importance_result(results, design, where, options, cell_factors,
                               covariates=covariates, standardise=standardise)
    return (result if as_result else result.raw), covariates, standardise


def continuous_view(results: pd.DataFrame, design: Design, where: dict, options: dict) -> None:
    """Fit and show the linear (or mixed) model of the design's continuous outcome."""
    outcome = design.outcome.column
    st.info(md(f"The outcome {outcome} is continuous: a linear model of the score itself "
               "(difference in mean against each reference). Interactions, separation and "
               "GEE apply to the logistic model of a 0/1 outcome and are not used here."))
    c1, c2, c3 = st.columns(3)
    covariates, standardise = covariate_options(results, design, options["factors"], c1,
                                                default=design.covariates)
    mixed = c2.checkbox(Lin.label("mixed"), value=Lin.default("mixed"), key="importance_mixed",
                        disabled=options["cluster"] is None, help=Lin.help("mixed"))
    slopes = c2.radio(Lin.label("random_effects"), Lin.choices("random_effects"),
                      index=Lin.choices("random_effects").index(Lin.default("random_effects")),
                      horizontal=True, key="importance_random", disabled=not mixed,
                      format_func={"slopes": "intercept and slopes",
                                   "intercept": "intercept only"}.get)
    accept = c3.checkbox(Lin.label("accept_unconverged"), value=Lin.default("accept_unconverged"),
                         key="importance_unconverged", disabled=not mixed)
    with c3:  # options of LinearOptions the page does not lay out (none yet)
        more = other_options(Lin, ("standardise", "mixed", "random_effects",
                                   "accept_unconverged"), key="importance_linear_option")
    linear = {"covariates": covariates, "standardise": standardise, "mixed": bool(mixed),
              "random_slopes": slopes == "slopes", "accept_unconverged": accept, **more}
    lin, fit_opts = importance_linear_options(options, linear, design_cluster=design.cluster,
                                              design_covariates=design.covariates)
    try:  # one cached analysis.api.importance_linear call, as Copy as CLI / Python say it
        result = analysis_result(
            "importance_linear", results, design,
            {**dataclasses.asdict(lin), **{k: getattr(fit_opts, k) for k in _FIT}},
            factors=options["factors"], references=options["references"],
            where={k: v for k, v in (where or {}).items() if v})
    except ImportanceRefusal as exc:
        st.error(md(exc.explanation))
        fix_buttons(exc.fixes, design)
        return
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return
    fit, columns = result.raw, column_config(result.settings)
    reproduce(importance_linear_view(options, linear, design_cluster=design.cluster,
                                     design_covariates=design.covariates),
              design, where, "importance_repro")
    add_to_report_button("importance", {**options, "where": where, **linear})
    m = st.columns(4)
    m[0].metric("Rows", f"{fit.n_rows:,}")
    m[1].metric("Cells", f"{fit.n_cells:,}")
    m[2].metric("Parameters", fit.n_parameters)
    m[3].metric("R2", f"{fit.r2:.3f}")
    each_note(fit.notes, st.warning)
    fig = linear_importance_figure(fit.terms, outcome=outcome)
    show_figure(fig, "factor_importance_linear", key="importance_linear_figure",
                chart="importance_linear_chart")
    st.subheader("Coefficients")
    show_table(fit.terms, "factor_importance_linear", key="importance_linear_terms",
               table_key="importance_linear_table", column_config=columns)
    st.subheader("Wald test per factor and covariate")
    show_table(fit.factor_tests, "factor_importance_linear_tests", key="importance_linear_tests",
               column_config=columns)


def deviation_view_note(design: Design) -> None:
    """On a page that analyses the 0/1 deviation: say so when the outcome is continuous."""
    if design.outcome is None or design.outcome.type != "continuous":
        return
    st.info(md(f"The outcome {design.outcome.column} is continuous. This page analyses its "
               f"0/1 deviation ({design.outcome.rule()}), so rates and disparities are "
               "of that threshold; Factor importance models the score itself (differences "
               "in mean with CIs)."))


def group_means_section(results: pd.DataFrame, design: Design) -> None:
    """For a continuous outcome: mean score per factor value, difference from the reference
    with a Welch CI, or with the design's cluster (the page's clustering toggle, on by
    default) a CR2 CI on Satterthwaite df (``analysis.continuous.group_means``), above the
    0/1 subgroup table; ``p_adjusted`` by the page's adjustment (``subgroups_option_adjust``,
    subgroups' ``adjust``), headed by it."""
    if design.outcome is None or design.outcome.type != "continuous" or not design.names:
        return
    from analysis import api as bw
    from analysis.formatting import level_text

    cluster = (design.cluster if design.cluster in results.columns
               and st.session_state.get("subgroups_clustered", True) else None)
    st.subheader(md(f"Mean {design.outcome.column} per factor value"))
    try:
        result = bw.group_means(results, design, cluster=cluster, applied=True,
                                adjust=st.session_state.get("subgroups_option_adjust",
                                                          SubOpts.default("adjust")))
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return
    table, used = result.table, result.settings["cluster"]
    how = (f"cluster-robust (CR2 over the values of {used}, t with each difference's "
           "Satterthwaite df; no p-value for a value in fewer than 2 clusters)"
           if used else "Welch")
    st.caption(md(f"Difference in mean against each factor's reference value (other factors "
                  f"pooled), {how} {level_text(result.settings['confidence'])} CI and "
                  "p-value; Factor importance holds the other factors fixed."))
    show_table(table, "group_means", key="subgroups_group_means_csv",
               table_key="subgroups_group_means", column_config=column_config(result.settings) | {
        "difference": _NUM("difference", format="%.3f"), "sd": _NUM("sd", format="%.3f")})
