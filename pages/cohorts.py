"""Cohorts page: a categorical outcome across cohorts, "time capsule" analysis (methods.md s. 7)."""

import streamlit as st

from analysis import distribution as dist_mod
from analysis.figures.distribution import PANELS_PER_PAGE, n_pages
from analysis.options.cohorts import CohortsOptions as Opts
from analysis.reproduce import cohorts_view
from ui.cohorts import capsule_section, cohort_figures, cohort_options, cohort_view, one_decimal
from ui.common import require_results, subset_filter
from ui.disparity import data_note
from ui.navigation import route_first_visit
from ui.options import other_options
from ui.report import add_to_report_button
from ui.reproduce import reproduce
from ui.widgets import each_note, md, p_value_columns, show_figure, show_table, stop_on_error

route_first_visit()

st.title("Cohorts")
results, design = require_results(need_outcome=False)
st.caption("How the responses split over the categories of a categorical outcome in each "
           "cohort (model, decade of training data, prompt format ...): percentages, how "
           "unevenly the categories are represented, and a chi-square test that every cohort "
           "has the same distribution.")
data_note(results)
opts = cohort_options(results, design)
if opts is None:
    st.info("No categorical outcome found: the table needs a column with 2 to "
            f"{dist_mod.MAX_CATEGORIES} categories besides the cohort factor.")
    st.stop()
if not opts["categories"]:
    st.info("Keep at least one category.")
    st.stop()
where = subset_filter(design, "cohorts")
category, cohort, by = opts["category"], opts["cohort"], opts["by"]
answer = st.container()  # the figures first, the other options of the test below them
with st.expander("Other options of the test", expanded=False):
    opts |= other_options(Opts, ("method", "seed"), key="cohorts_option")
with stop_on_error():
    view = cohort_view(results, design, where, opts)
dist, wide, spread, across, test = (view[k] for k in ("dist", "wide", "spread", "across",
                                                      "test"))
with answer:
    if view["refusal_note"]:  # a refusal is neither: how it was counted (docs/cohorts.md)
        st.info(md(view["refusal_note"].replace(
            "Leave them out with refusals=leave_out.", "Refusals (above): leave them out.")))
    if view["dropped"]:
        st.warning(f"{view['dropped']:,} rows have no {md(category)} and are left out.")
    pages = n_pages(dist, by)
    page = 0
    if pages > 1:
        page = st.number_input(f"Panels: page (of {pages}, {PANELS_PER_PAGE} groups each)", 1,
                               pages, 1, key="cohorts_panel_page") - 1
    bar, line, spread_fig = cohort_figures(results, design, where, opts, page, view)
    for kind, label, fig in (("bar", "stacked", bar), ("line", "lines", line)):  # answer first
        show_figure(fig, f"cohorts_{label}", key=f"cohorts_{kind}_fig",
                    chart=f"cohorts_{kind}_chart")
add_to_report_button("cohorts", {**opts, "where": where})
reproduce(cohorts_view(opts), design, where, "cohorts_repro")

st.subheader("Percentages per cohort")
show_table(wide, "cohorts_percentages", key="cohorts_wide", column_config=one_decimal(wide))
with st.expander("Long table (counts)"):
    show_table(dist, "cohorts_counts", key="cohorts_long", column_config=one_decimal(dist))

st.subheader("Spread of the categories")
st.caption("Standard deviation (ddof = 1, in percentage points) of the category percentages "
           "within each cohort: 0 when all categories are equally frequent. Below: the spread "
           "of each category across cohorts (how much the cohorts disagree).")
show_figure(spread_fig, "cohorts_spread", key="cohorts_spread_fig", chart="cohorts_spread_chart")
show_table(spread, "cohorts_spread", key="cohorts_spread", column_config=one_decimal(spread))
show_table(across, "cohorts_spread_across", key="cohorts_across", column_config=one_decimal(across))

st.subheader("Chi-square test of homogeneity")
st.caption("H0: every cohort has the same category distribution. Pearson chi-square without "
           "continuity correction; Monte Carlo p-values keep the margins fixed and are at "
           "least 1 / (resamples + 1). Cramer's V: effect size from 0 to 1.")
each_note(test["note"][test["note"] != ""].unique(), st.warning)
show_table(test, "cohorts_chi_square", key="cohorts_test", column_config=p_value_columns(test))
capsule_section(results, design, where, opts)
