"""Widgets of the Cohorts page: the categorical outcome, the cohort factor, the groups."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.design import Design
from analysis.factor_defaults import default_cohort
from analysis.labels import category_label
from analysis.options.cohorts import CohortsOptions as Opts
from ui.opening import category_columns, cohort_factors, cohort_within, observed_categories
from ui.widgets import md

__all__ = [
    "capsule_section", "category_columns", "cohort_figures", "cohort_options", "cohort_view",
    "default_cohort", "one_decimal",
    "remembered_multiselect",
]


#: The options the tables and figures depend on (the test's own options come on top).
_TABLE_KEYS = ("category", "cohort", "by", "categories", "renormalise", "refusals")


def remembered_multiselect(label: str, options: list[str], default: list[str], *, key: str,
                           format_func=str) -> list[str]:
    """A multiselect whose remembered choice drops values no longer offered."""
    if key in st.session_state:
        kept = [v for v in st.session_state[key] if v in options]
        if kept != list(st.session_state[key]):
            st.session_state[key] = kept
        return st.multiselect(label, options, key=key, format_func=format_func)
    return st.multiselect(label, options, default=[d for d in default if d in options], key=key,
                          format_func=format_func)


def cohort_options(results: pd.DataFrame, design: Design) -> dict | None:
    """The page's widgets; None when the table offers no categorical outcome."""
    from ui.common import per_table

    candidates = per_table(category_columns, results, design, design)  # scans the rows
    if not candidates:
        return None
    c1, c2, c3 = st.columns(3)
    category = c1.selectbox("Categorical outcome", candidates, key="cohorts_category",
                            help="Which category each response falls in (e.g. the group a "
                                 "completion portrays, the answer type)")
    factors, first = cohort_factors(design, category)
    if not factors:
        return None
    cohort = c2.selectbox("Cohort factor", factors, index=first,
                          key="cohorts_cohort", help="Compared cohorts, in the factor's "
                                                     "value order (e.g. decades, models)")
    with c3:
        by = remembered_multiselect("Within (role / prompt / demographic)",
                                    [f for f in factors if f != cohort],
                                    cohort_within(design, category, cohort), key="cohorts_by")
    # the labels the analysis uses: booleans as "true" / "false", 7.0 as "7"
    observed = per_table(observed_categories, results, design, category)  # scans the rows
    c1, c2, c3 = st.columns([3, 1, 1])
    with c1:
        # empty or space-padded values quoted, so "A" and " A" read differently
        keep = remembered_multiselect("Categories (in this order)", observed, observed,
                                      key=f"cohorts_keep_{category}",
                                      format_func=category_label)
    method = c2.selectbox(Opts.label("method"), Opts.choices("method"),
                          index=Opts.choices("method").index(Opts.default("method")),
                          key="cohorts_method",
                          help="auto: chi-square, or Monte Carlo when expected counts are "
                               "small (Cochran's rule)")
    seed = c3.number_input(Opts.label("seed"), 0, value=Opts.default("seed"), key="cohorts_seed")
    renormalise = c1.checkbox(
        Opts.label("renormalise"), Opts.default("renormalise"), key="cohorts_renormalise",
        help="Off (the time-capsule study's shares): the categories left out ('neither', "
             "'unclassified') stay in the denominator, so the shown ones may add up to less "
             "than 100 %. On: the chosen categories add up to 100 %.")
    refusals = c1.radio(
        Opts.label("refusals"), ["count", "leave_out"], horizontal=True, key="cohorts_refusals",
        format_func=lambda v: {"count": "count them (as the table has them)",
                               "leave_out": "leave them out"}[v],
        help="Answers that are refusals (REFUSED, declined, no answer ...) are neither "
             "biased nor not: counted where the table puts them (a category of their own, "
             "or the category their rows have), with a note, or left out of n, the shares "
             "and the test.")
    return {"category": category, "cohort": cohort, "by": by, "categories": keep,
            "method": method, "seed": int(seed), "renormalise": renormalise,
            "refusals": refusals}


def capsule_section(results: pd.DataFrame, design: Design, where: dict, opts: dict) -> None:
    """Time capsules per demographic (analysis/capsules.py): the paper-shaped table,
    Kruskal-Wallis per subcategory beside the chi-square, spreads per demographic; the
    steps that read the rows, and the tests, are cached per table, subset and options."""
    from analysis import capsules as cp
    from analysis.errors import AnalysisError
    from ui.capsule_options import capsule_adjust, capsule_copy, tests_columns
    from ui.common import per_table, table_download

    category, cohort, by = opts["category"], opts["cohort"], opts["by"]

    st.subheader("Time capsules per demographic")
    st.caption("Subcategories belong to a demographic (gender, race ...): each demographic's "
               "shares, spreads and tests use its own subcategories only. Kruskal-Wallis: "
               + cp.QUESTIONS[cp.KRUSKAL] + " Kruskal-Wallis among subcategories: "
               + cp.QUESTIONS[cp.KRUSKAL_AMONG] + " Chi-square: " + cp.QUESTIONS[cp.CHI_SQUARE])
    c1, c2 = st.columns([3, 1])
    spec = c1.text_input("Demographics (name=subcategories; ...)", "",
                         key="cohorts_demographics",
                         placeholder="gender=woman,man,non-binary;race=White,Asian,Black")
    columns = ["(one demographic)"] + [c for c in results.columns
                                       if c not in (category, cohort)]
    col = c2.selectbox("Demographic column", columns, key="cohorts_demographic_col")
    star = st.radio(Opts.label("capsule_star"), Opts.choices("capsule_star"),
                    index=Opts.choices("capsule_star").index(Opts.default("capsule_star")),
                    horizontal=True, key="cohorts_capsule_star",
                    format_func={"across_cohorts": "a subcategory whose share differs between "
                                 "cohorts", "among_subcategories": "the subcategories of a "
                                 "prompt that differ from each other (the paper's Table 4 "
                                 "note)"}.get,
                    help=f"*: Kruskal-Wallis p < 0.05; *{cp.BH_MARK}: also after the "
                         "adjustment below over the table's tests (p_adjusted)")
    adjust = capsule_adjust()
    if not spec.strip():
        return
    try:
        result = per_table(
            _capsules, results, design, design, where, category, cohort, spec,
            None if col == columns[0] else col, list(by), opts["renormalise"],
            opts["method"], opts["seed"], star, adjust)
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return
    table, tests, spread = (result.tables[k] for k in ("table", "tests", "spread"))
    flat = table.copy()
    flat.columns = [" / ".join(map(str, c)) for c in table.columns]
    flat = flat.reset_index()
    st.dataframe(flat, hide_index=True)
    table_download(flat, "time_capsules_table", key="cohorts_capsule_table")
    st.dataframe(tests, hide_index=True, column_config=tests_columns(result.settings))
    table_download(tests, "time_capsules_tests", key="cohorts_capsule_tests")
    st.dataframe(spread, hide_index=True)
    table_download(spread, "time_capsules_spread", key="cohorts_capsule_spread")
    capsule_copy(design, opts, where, demographics=spec, capsule_star=star, adjust=adjust,
                 demographic_col=None if col == columns[0] else col)


def _capsule_dist(results: pd.DataFrame, where: dict, category: str, cohort: str, spec: str,
                  demographic_col: str | None, by: list[str], renormalise: bool
                  ) -> pd.DataFrame:
    from analysis import api as bw

    return bw.time_capsules(results, category=category, cohort=cohort, demographics=spec,
                            demographic_col=demographic_col, by=by, where=where,
                            renormalise=renormalise, tests=False).table


def _capsules(results: pd.DataFrame, design: Design, where: dict, category: str, cohort: str,
              spec: str, demographic_col: str | None, by: list[str], renormalise: bool,
              method: str, seed: int, star: str = Opts.default("capsule_star"),
              adjust: str = Opts.default("adjust")):
    """:func:`analysis.api.time_capsules`: the distribution cached apart (the test's
    method and seed do not count the rows again), then its tests, spreads and the
    paper-shaped table."""
    from analysis import api as bw
    from ui.common import per_table

    dist = per_table(_capsule_dist, results, design, where, category, cohort, spec,
                     demographic_col, by, renormalise)
    return bw.time_capsules(results, category=category, cohort=cohort, demographics=spec,
                            demographic_col=demographic_col, by=by, where=where,
                            renormalise=renormalise, method=method, seed=seed,
                            capsule_star=star, adjust=adjust, distribution=dist)


def cohort_view(results: pd.DataFrame, design: Design, where: dict, opts: dict) -> dict:
    """The page's tables (``dist``, ``wide``, ``spread``, ``across``, ``test``) and the
    number of rows without a category (``dropped``), how refusals were counted
    (``refusal_note``): one cached
    :func:`analysis.api.cohorts` call (:func:`ui.common.analysis_result`), read-only."""
    from ui.common import analysis_result

    result = analysis_result("cohorts", results, design,
                             Opts.from_settings(opts, skip=("capsule_star",)),
                             category=opts["category"], cohort=opts["cohort"],
                             by=list(opts["by"]), categories=opts["categories"], where=where)
    t = result.tables
    return {"dist": result.table, "wide": t["percentages"], "spread": t["spread"],
            "across": t["spread_across_cohorts"], "test": t["homogeneity"],
            "dropped": result.meta["n_missing"], "refusal_note": result.meta["refusal_note"]}


def cohort_figures(results: pd.DataFrame, design: Design, where: dict, opts: dict,
                   page: int, view: dict) -> list:
    """The stacked bars, the lines (panel page ``page``) and the spread figure of
    :func:`cohort_view` ``view``, cached per the options the tables depend on (not the
    test's)."""
    where_key = repr(sorted((where or {}).items()))
    return _figures(st.session_state["results_token"], design.to_json(),
                    repr(sorted(_table_opts(opts).items(), key=str)), where_key, page,
                    view["dist"], view["spread"], _table_opts(opts))


def _table_opts(opts: dict) -> dict:
    return {k: opts[k] for k in _TABLE_KEYS}


@st.cache_resource(max_entries=16, show_spinner=False)
def _figures(token: str, design_json: str, opts_key: str, where_key: str, page: int,
             _dist: pd.DataFrame, _spread: pd.DataFrame, _opts: dict) -> list:
    from analysis.figures.distribution import distribution_figure, spread_figure

    category, cohort, by = _opts["category"], _opts["cohort"], _opts["by"]
    return [*(distribution_figure(_dist, category, cohort, by=by, kind=kind, page=page)
              for kind in ("bar", "line")), spread_figure(_spread, cohort, by=by)]


def one_decimal(table: pd.DataFrame) -> dict:
    """``column_config`` showing the table's decimal columns (percentages, percentage
    points) with one decimal, as the report does; counts stay whole."""
    return {c: st.column_config.NumberColumn(str(c), format="%.1f") for c in table.columns
            if pd.api.types.is_float_dtype(table[c])}
