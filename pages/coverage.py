"""Coverage page: how completely and how evenly the factor grid is filled (methods.md §1)."""

import streamlit as st

from analysis.options.coverage import CoverageOptions as Opts
from analysis.reproduce import coverage_view
from ui.common import require_results, subset_filter
from ui.coverage import (
    count_choice,
    coverage_cells_for,
    coverage_result,
    grid_choice,
    show_metrics,
    show_reading,
)
from ui.coverage_page import TABS, heatmap_pair, render_tabs
from ui.native import native_scores_view
from ui.navigation import route_first_visit
from ui.options import other_options
from ui.report import add_to_report_button
from ui.reproduce import reproduce
from ui.widgets import stop_on_error

route_first_visit()

st.title("Coverage")
results, design = require_results(need_outcome=False)
st.caption("Which combinations of factor values the benchmark holds, and how evenly. Coverage "
           "is the share of combinations with at least one prompt (declared values never seen "
           "count as empty); the Gini index is 0 when every combination is equally filled.")

factors = grid_choice(design)
if not factors:
    st.info("Choose at least one factor.")
    st.stop()
c1, c2 = st.columns([1, 2])  # compact controls above the answer
with c1:
    where = subset_filter(design, "coverage")
with c2:
    unit = count_choice(design, results)
answer = st.container()  # the numbers and the tabs first, the other options below
with st.expander("Other options", expanded=False):
    more = other_options(Opts, ("count",), key="coverage_option")
with answer:
    metrics = st.container()  # the answer first: the numbers, then the tabs
    tabs = st.tabs(TABS)
    with tabs[0]:
        pair = heatmap_pair(design, factors)
with stop_on_error():  # one call of the analysis (its cells cached apart), every tab reads it
    cells = coverage_cells_for(results, design, factors, where, unit)
    options = Opts.coerce({"count": unit, **more})
    result = coverage_result(results, design, factors, where, options, cells=cells, pair=pair)
with metrics:
    show_metrics(result)
render_tabs(tabs, result, design, factors, pair=pair, limit=options.limit)

show_reading(result)
reproduce(coverage_view(factors, unit, more=more), design, where, "coverage_repro")
add_to_report_button("coverage", {"factors": factors, "count": unit, "where": where, **more})
native_scores_view(results, design, where, page="coverage")  # BBQ s_DIS / s_AMB ... with CIs
