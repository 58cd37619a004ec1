"""Bias index page: the composite LLM bias index (LLMBI) and its components (methods.md s. 6)."""

import streamlit as st

from analysis.columns import LLMBI, RANK
from analysis.factor_defaults import numeric_columns
from analysis.figures.index import index_figure
from analysis.reproduce import index_view
from ui.common import per_table, require_results, subset_filter
from ui.defaults import choose_hint
from ui.disparity import data_note
from ui.disparity_index import index_options, index_result, likeliest_dimensions
from ui.importance_linear import deviation_view_note
from ui.index_published import BOTH, PUBLISHED, published_section, variant_choice
from ui.navigation import route_first_visit
from ui.report import add_to_report_button
from ui.reproduce import reproduce
from ui.uncertainty import bootstrap_options, show_intervals
from ui.widgets import show_figure, show_table, stop_on_error, table_download

route_first_visit()

st.title("Bias index")
results, design = require_results()
deviation_view_note(design)  # a continuous outcome: say what is analysed
st.caption("LLMBI = (1/n) sum w_i B_i + P(D) + lambda S: bias scores of the chosen "
           "dimensions, a penalty for a lack of diversity, a sentiment-bias term. The index "
           "is a weighted summary: its value and any ranking of models depend on every "
           "choice below, so each component is shown beside the total. Lower is less biased.")
data_note(results)
variant = variant_choice()
if variant == PUBLISHED:
    published_section(results, design)
    st.stop()
options = index_options(design, per_table(numeric_columns, results, design, design))
if options is None:
    choose_hint("Choose at least one bias dimension (**Bias dimensions** above).",
                "index_dimensions", likeliest_dimensions(design))
    st.stop()
intervals = options.pop("intervals")  # the bootstrap's confidence and seed
where = subset_filter(design, "index")
with stop_on_error():
    result = index_result(results, design, where, options, intervals=intervals)

totals = result.table.sort_values([RANK, LLMBI])
components = result.tables["components"]
add_to_report_button("index", {**options, "where": where}, ci_prefix="index")
if totals[LLMBI].isna().any():
    st.warning("The index is undefined for some rows: a component could not be computed "
               "(see the notes in the components table).")
st.subheader("Index per model")
fig = index_figure(components, result.table)  # the answer first, its table below
show_figure(fig, "bias_index", key="index_fig", chart="index_chart")
st.dataframe(totals, hide_index=True)
table_download(result.table, "bias_index_totals", key="index_totals")

boot = bootstrap_options(results, design, "index", seed=intervals["seed"])
if boot:
    with st.spinner("Bootstrapping the index..."):
        booted = index_result(results, design, where, options, boot=boot, intervals=intervals)
        show_intervals(booted.tables["bootstrap"], "bias_index_bootstrap", key="index_boot",
                       confidence=booted.meta["bootstrap"]["confidence"])
reproduce(index_view(options, boot=boot, design_cluster=design.cluster, intervals=intervals),
          design, where, "index_repro")

st.subheader("Components")
st.caption("score: the component's raw value (B_i, the Gini index or the constant, S); "
           "weight: as entered (the penalty's scale, lambda); contribution: what it adds to "
           "the index (a model's contributions sum to its LLMBI).")
show_table(components, "bias_index_components", key="index_components")
if variant == BOTH:
    published_section(results, design)
