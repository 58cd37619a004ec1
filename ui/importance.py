"""Widgets of the Factor importance page: model specification, fix buttons, table format.

Session-state keys: ``importance_factors``, ``importance_ref_<factor>``,
``importance_interactions``, ``importance_separation``, ``importance_alpha``,
``importance_option_adjust`` (the declared ``adjust``, in "Other options"),
``importance_cluster``, ``importance_gee``, ``importance_scale``,
``importance_max_p``, ``importance_intercept``
and the subset filter's ``importance_where_<factor>``.
"""

from __future__ import annotations

from itertools import combinations

import pandas as pd
import streamlit as st

from analysis.columns import (
    CI_HIGH,
    CI_LOW,
    COEF,
    DESIGN_EFFECT,
    DEVIATION_RATE,
    DF,
    N_CLUSTERS,
    ODDS_RATIO,
    P_ADJUSTED,
    P_ADJUSTED_LR,
    P_VALUE,
    P_VALUE_LR,
    PROBABILITY,
    ROBUST_MODEL_SE_RATIO,
    STD_ERR,
    Z,
)
from analysis.design import Design
from analysis.factor_defaults import suggest_factors
from analysis.importance import SEPARATION_LABELS, Fix
from analysis.importance_parts import ImportanceParts
from analysis.options.importance import ImportanceOptions as Opts
from ui.common import analysis_result, cells_for
from ui.options import other_options
from ui.widgets import md

__all__ = ["COLUMN_CONFIG", "cluster_options", "column_config", "fix_buttons", "importance_options",
           "importance_result", "intercept_note", "model_options"]


_NUM = st.column_config.NumberColumn
COLUMN_CONFIG = {
    DEVIATION_RATE: _NUM("rate", format="%.3f", help="Observed deviation rate of these rows"),
    COEF: _NUM("coef", format="%.3f", help="Log-odds ratio against the reference value"),
    STD_ERR: _NUM("SE", format="%.3f"),
    DESIGN_EFFECT: _NUM("design effect", format="%.2f",
                        help="Cluster-robust / naive standard error"),
    ROBUST_MODEL_SE_RATIO: _NUM("robust / model SE", format="%.2f",
                                help="GEE: robust / model-based standard error"),
    DF: _NUM("df", format="%.2f",
             help="Degrees of freedom of the t reference: with a cluster and CR2 the "
                  "coefficient's Satterthwaite df (few when few clusters stand behind it); "
                  "in the factor tests the likelihood-ratio test's df"),
    N_CLUSTERS: _NUM("clusters", format="%d",
                     help="Clusters holding rows with this value (fewer than 2: not "
                          "estimable, no p-value)"),
    Z: _NUM("z", format="%.2f"),
    P_VALUE: _NUM("p", format="%.3g", help="Two-sided Wald p-value, not adjusted"),
    P_VALUE_LR: _NUM("p (LR)", format="%.3g",
                     help="Likelihood-ratio test; it assumes independent rows"),
    ODDS_RATIO: _NUM("odds ratio", format="%.3f"),
    CI_LOW: _NUM("OR CI low", format="%.3f"),
    CI_HIGH: _NUM("OR CI high", format="%.3f"),
    PROBABILITY: _NUM("P(deviation)", format="%.3f",
                      help="Fitted probability at this value, every other factor at its "
                           "reference"),
}


def column_config(settings: dict) -> dict:
    """The columns' formats, the adjusted p-values headed by their method
    (:func:`analysis.labels.adjusted_method` of the Result's ``settings``: ``p (BH)``,
    ``p (LR, BH)``)."""
    from analysis.labels import adjusted_method
    from analysis.multiple_testing import LABELS, NAMES, adjusted_label

    method = adjusted_method(settings)
    return {**COLUMN_CONFIG,
            P_ADJUSTED_LR: _NUM(f"p (LR, {LABELS[method]})", format="%.3g",
                                help=f"{NAMES[method]} over the likelihood-ratio tests"),
            P_ADJUSTED: _NUM(adjusted_label(method), format="%.3g",
                             help=f"{NAMES[method]} over the terms")}


def model_options(results: pd.DataFrame, design: Design) -> dict:
    """Widgets for factors, references, interactions, separation and labelling.

    The first visit starts from :func:`analysis.factor_defaults.suggest_factors` (computed on
    the cached cell table over every design factor, the one the Design page shows).
    Returns the keyword arguments of :func:`analysis.importance.factor_importance`.
    """
    ss = st.session_state
    if "importance_factors" in ss:
        ss["importance_factors"] = [f for f in ss["importance_factors"] if f in design.names]
    else:
        ss["importance_factors"] = suggest_factors(cells_for(results, design, design.names),
                                                   design)
    factors = st.multiselect("Factors", design.names, key="importance_factors",
                             help="Each factor is coded against its reference value.")
    with st.expander("References, interactions, separation", expanded=False):
        cols = st.columns(min(3, max(len(factors), 1)))
        references = {}
        for i, f in enumerate(factors):
            factor = design.factor(f)
            key = f"importance_ref_{f}"
            if ss.get(key) not in factor.values:
                ss[key] = factor.reference
            references[f] = cols[i % len(cols)].selectbox(f"Reference of {md(f)}",
                                                          list(factor.values), key=key)
        pairs = [f"{a}:{b}" for a, b in combinations(factors, 2)]
        ss["importance_interactions"] = [p for p in ss.get("importance_interactions", [])
                                         if p in pairs]
        interactions = st.multiselect(Opts.label("interactions"), pairs,
                                      key="importance_interactions")
        on_separation = st.radio(Opts.label("on_separation"), Opts.choices("on_separation"),
                                 index=Opts.choices("on_separation").index(
                                     Opts.default("on_separation")),
                                 format_func=SEPARATION_LABELS.get, help=Opts.help("on_separation"),
                                 horizontal=True, key="importance_separation")
        alpha = st.select_slider(Opts.label("alpha"), [0.001, 0.01, 0.05, 0.1],
                                 value=Opts.default("alpha"), key="importance_alpha")
        cluster, gee = cluster_options(results, design, factors)
        st.caption("Other options of the fit")
        more = other_options(Opts, ("interactions", "on_separation", "alpha", "gee"),
                             key="importance_option")
    return {"factors": factors, "references": references, "interactions": interactions,
            "on_separation": on_separation, "alpha": alpha,
            "cluster": cluster, "gee": gee, **more}


def cluster_options(results: pd.DataFrame, design: Design, factors: list[str]
                    ) -> tuple[str | None, bool]:
    """Cluster column (default: the design's) and the GEE switch."""
    choices = [None, *[c for c in results.columns if c not in factors and c != "deviation"]]
    if st.session_state.get("importance_cluster", design.cluster) not in choices:
        st.session_state.pop("importance_cluster", None)
    default = choices.index(design.cluster) if design.cluster in choices else 0
    c1, c2 = st.columns(2)
    cluster = c1.selectbox(Opts.label("cluster"), choices, index=default,
                           key="importance_cluster",
                           format_func=lambda c: c or "none: independent rows",
                           help="Template, prompt id, seed: standard errors become "
                                "cluster-robust, p-values and intervals use t with G - 1 df; "
                                "'design effect' = robust / naive SE. 'none' gives the "
                                "independent-rows analysis.")
    gee = c2.checkbox(Opts.label("gee"), value=Opts.default("gee"), key="importance_gee",
                      disabled=cluster is None, help=Opts.help("gee"))
    return cluster, bool(gee and cluster)


def _apply(fix: Fix, design: Design) -> None:
    ss = st.session_state
    if fix.drop_factors:
        ss["importance_factors"] = [f for f in ss.get("importance_factors", [])
                                    if f not in fix.drop_factors]
    if fix.drop_interactions:
        gone = {f"{a}:{b}" for a, b in fix.drop_interactions}
        ss["importance_interactions"] = [p for p in ss.get("importance_interactions", [])
                                         if p not in gone]
    for f, value in fix.references:
        ss[f"importance_ref_{f}"] = value
    for f, values in fix.exclude:
        kept = ss.get(f"importance_where_{f}") or list(design.factor(f).values)
        ss[f"importance_where_{f}"] = [v for v in kept if v not in values]
    if fix.on_separation:
        ss["importance_separation"] = fix.on_separation


def fix_buttons(fixes: tuple[Fix, ...], design: Design) -> None:
    """One button per suggested fix; a click changes the widgets and reruns the fit."""
    if fixes:
        st.markdown("**Fix it:**")
    for i, fix in enumerate(fixes):
        st.button(fix.label, key=f"importance_fix_{i}", on_click=_apply, args=(fix, design))


def intercept_note(terms: pd.DataFrame, references: dict | None = None) -> str | None:
    """What the intercept row's ``n`` and rate count: the rows with every factor at its
    reference (issue 42: "n 2, rate 0.000" read as the table's), with the references."""
    from analysis.importance import INTERCEPT

    row = terms[terms["term"] == INTERCEPT] if "term" in terms else terms.iloc[:0]
    if row.empty or "n" not in row:
        return None
    n = int(row["n"].iloc[0])
    refs = dict(references or {})
    at = ", ".join(f"{k} = {v}" for k, v in refs.items())
    return (f"(intercept): n and deviation rate are the {n:,} rows with every factor at its "
            f"reference{f' ({at})' if at else ''}, not the whole table; its coefficient is "
            "the fitted log-odds there.")


def importance_options(options: dict, noise: dict | None = None) -> Opts:
    """The page's widgets (:func:`model_options`) as the options of
    :func:`analysis.api.importance`, with the judge-noise expander's settings
    (``ui.judge_noise.noise_options``) when given."""
    return Opts.coerce({k: v for k, v in options.items() if k in Opts.specs()},
                       **({"judge_noise": noise["replicates"], "noise_mode": noise["mode"],
                           "seed": noise["seed"]} if noise else {}))


@st.cache_resource(max_entries=4, show_spinner=False)
def _parts(token: str, design_json: str) -> ImportanceParts:
    return ImportanceParts()


def importance_result(results: pd.DataFrame, design: Design, where: dict, options: dict,
                      cell_factors: list[str], *, covariates: list[str] | None = None,
                      standardise: bool = True, noise: dict | None = None) -> object:
    """The page's one cached :func:`analysis.api.importance` call (on the cached cells
    without covariates or judge noise, which need the rows). The parts that read the
    cells (their codes, the cluster's pairs, the robust covariance while the fit is the
    same) are kept in an :class:`analysis.importance_parts.ImportanceParts` store per
    table and design, so a changed reference, alpha or adjustment does not recount them."""
    where = {k: v for k, v in (where or {}).items() if v}
    rows_needed = bool(covariates) or bool(noise)
    return analysis_result(
        "importance", results, design, importance_options(options, noise),
        cells=None if rows_needed else cells_for(results, design, cell_factors, where),
        factors=list(options["factors"]), where=where,
        references=dict(options["references"]) or None, covariates=list(covariates or []),
        standardise=bool(standardise),
        parts=_parts(st.session_state["results_token"], design.to_json()))
