"""Prepare page: recipe steps between Data and Design, with per-step counts."""

import streamlit as st

from analysis.errors import AnalysisError
from analysis.prepare import apply_recipe, recipe_yaml
from ui.common import page_link
from ui.features import text_features_section
from ui.navigation import route_first_visit
from ui.prepare import add_step, base_table, step_form, steps, use_prepared
from ui.widgets import md

route_first_visit()

st.title("Prepare")
st.caption("Turn a raw table into an analysable one: melt per-model columns into a factor, "
           "derive a 0/1 outcome by matching answers with options, recode, threshold, "
           "filter. The steps are saved as the design's recipe, so the CLI "
           "(`python -m analysis prepare RAW --recipe design.yaml --out OUT`) rebuilds the "
           "same table.")

base, name = base_table()
if base is None:
    st.info("Load or import a table on the Data page first.")
    st.stop()
st.markdown(f"**Raw table**: {md(name)} ({len(base):,} rows, {base.shape[1]} columns)")

try:
    table, report = apply_recipe(base, steps())
except AnalysisError as exc:  # a recipe that no longer fits: start again
    st.error(md(exc))
    st.session_state["prepare_steps"] = []
    table, report = apply_recipe(base, [])

with st.container(border=True):
    params = step_form(table)
    if st.button("Add step", key="prepare_add", type="primary"):
        error = add_step(base, st.session_state["prepare_kind"], params)
        if error:
            st.error(md(error))
        else:
            st.rerun()

if steps():
    st.subheader("Steps")
    st.dataframe(report, hide_index=True, width="stretch", key="prepare_report")
    c1, c2, c3 = st.columns(3)
    if c1.button("Remove the last step", key="prepare_undo"):
        steps().pop()
        st.rerun()
    c2.button("Use the prepared table", key="prepare_use", type="primary",
              on_click=use_prepared, args=(table, name))
    c3.download_button("Recipe (YAML)", recipe_yaml(steps()), file_name="recipe.yaml",
                       key="prepare_recipe_dl", on_click="ignore")
    if st.session_state.get("results_token") == st.session_state.get("prepare_output_token"):
        st.success("The prepared table is the active table; its recipe is in the design "
                   "(save it on the Design page).")

text_features_section()

st.subheader("Table")
st.caption(f"{len(table):,} rows, {table.shape[1]} columns")
st.dataframe(table.head(200), width="stretch", height=280)
page_link("pages/design.py", label="Next: declare the design", icon="🧩")
