"""Counterfactual page: the same prompt with one factor swapped, within its template."""

import streamlit as st

from analysis.errors import AnalysisError, NoPairsError
from analysis.reproduce import api_view
from ui.common import analysis_result, require_results, subset_filter
from ui.counterfactual import (
    choices,
    generate_missing,
    missing_swaps_view,
    options,
    show_result,
)
from ui.navigation import route_first_visit
from ui.report import add_to_report_button
from ui.reproduce import reproduce
from ui.widgets import md

route_first_visit()

st.title("Counterfactual pairs")
results, design = require_results(need_outcome=False)
st.caption("Two rows pair when they share the template and every other factor and differ "
           "only in the swapped one; each value is compared with the reference on its pairs "
           "(McNemar's test, clustered by template; paired t and Wilcoxon for a score). "
           "Difference = value - reference.")

where = subset_filter(design, key="counterfactual")
inputs = choices(design, results)
if design.outcome is None and inputs["score"] is None and inputs["text"] is None:
    st.info("Choose a numeric score or a text column, or give the design an outcome on the "
            "Design page.")
    st.stop()
opts = options(design)
try:
    result = analysis_result("counterfactual", results, design, opts, where=where, **inputs)
except NoPairsError as exc:
    st.error(md(str(exc)))
    if exc.missing_swaps is not None:
        missing_swaps_view(exc.missing_swaps, note="The prompts that would make the pairs: "
                                                   "a plan (kind = swap) for the generator.")
        generate_missing(results, design, exc.missing_swaps)
    st.stop()
except AnalysisError as exc:
    st.error(md(str(exc)))
    st.stop()

add_to_report_button("counterfactual", {**opts.settings(), **inputs, "where": where})
show_result(result)
generate_missing(results, design, result.tables["missing_swaps"])
reproduce(api_view(opts, **inputs), design, where, "counterfactual_repro")
