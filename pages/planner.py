"""Planner page: prompts to add for coverage, a fractional factorial, power."""

import streamlit as st

from analysis import api as bw
from analysis.errors import AnalysisError
from analysis.factor_defaults import coverage_factors
from analysis.options.planning import PlanOptions
from ui.common import active_frame, cells_for, require_results
from ui.generate import generate_section
from ui.navigation import route_first_visit
from ui.options import other_options
from ui.planner import (
    NEW_EXAMPLE,
    before_after,
    parse_factors,
    power_calculator,
    template_choice,
    variants_section,
)
from ui.widgets import each_note, md, show_table

route_first_visit()

st.title("Planner")
st.caption("Plan a better benchmark: which prompts to add so the factor grid is covered "
           "and balanced, a fractional design for a new benchmark, and the rows needed to "
           "detect a disparity.")

st.subheader("Prompts to add")
if active_frame() is None:
    st.info("Load results on the Data page to plan additions to them.")
else:
    results, design = require_results(need_outcome=False)
    factors = st.multiselect("Factors spanning the grid", design.names,
                             default=coverage_factors(design), key="planner_factors")
    budget = st.number_input(PlanOptions.label("budget"), 1, 10_000_000, 100,
                             key="planner_budget")
    template = template_choice(list(results.columns), design)
    more = other_options(PlanOptions, ("budget", "template"), key="planner_option")
    columns = [*factors, *([template] if template and template not in factors else [])]
    try:
        plan = bw.plan(results, design, factors=factors, applied=True,
                       cells=cells_for(results, design, columns, with_outcome=False),
                       options=PlanOptions.coerce(more, budget=budget, template=template)).raw
    except AnalysisError as exc:
        st.error(md(str(exc)))
    else:
        before_after(plan)
        each_note(plan.notes, st.warning)
        if not more.get("whole_variants"):
            st.caption("Empty combinations first, then the thinnest: no other choice of "
                       f"{int(budget):,} prompts reaches a higher coverage or a lower Gini "
                       "index.")
        variants_section(plan)
        show_table(plan.add, "prompts_to_add", key="planner_add_csv", table_key="planner_add")
        generate_section(results, design, plan.add)  # ui/generate.py: the loop

st.subheader("New benchmark: fractional factorial")
c1, c2 = st.columns([3, 1])
text = c1.text_area("Factors (one per line, 'name: value, value')", NEW_EXAMPLE,
                    key="planner_new_factors")
runs = c2.number_input(PlanOptions.label("runs"), 2, 100_000, 16, key="planner_runs")
try:
    frac = bw.fractional_factorial(parse_factors(text), runs=int(runs))
except AnalysisError as exc:
    st.error(md(str(exc)))
else:
    res = "full factorial" if frac.meta["resolution"] == float("inf") else \
        f"resolution {int(frac.meta['resolution'])}"
    st.markdown(f"**{len(frac.table)} runs, {res}.** Generators: " + (", ".join(
        f"{md(k)} = {md(v)}" for k, v in frac.meta["generators"].items()) or "none"))
    if note := frac.meta["budget_note"]:
        st.info(md(note))
    each_note(frac.meta["aliases"])
    show_table(frac.table, "fractional_factorial", key="planner_runs_csv",
               table_key="planner_runs_table")

st.subheader("Rows needed to detect a disparity")
power_calculator()

if active_frame() is not None:
    from ui.measurement_error import d_study_section, total_error_section

    st.subheader("Measurement error: templates, seeds, judges")
    st.caption("How much of each headline number is the benchmark's own noise: the "
               "variance of each random facet, and the interval over the facets beside the "
               "sampling interval (docs/measurement_error.md).")
    total_error_section(*require_results(), key="planner_variance")
    st.subheader("Design study: one more judge or ten more templates?")
    d_study_section(*require_results(), key="planner_dstudy")
