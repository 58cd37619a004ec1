"""Design page: factors, kinds, references, the outcome mapping; nesting and cell counts."""

import math
from dataclasses import replace

import streamlit as st

from analysis.columns import DEVIATIONS, N
from analysis.design import Design, design_problems, suggest_design
from analysis.names import clash_free, rename_note
from ui.common import applied_results, cells_for, ensure_data, page_link, table_download
from ui.design import factor_widgets, on_design_upload, outcome_widgets, structure_section
from ui.design_constraints import constraints_section
from ui.navigation import route_first_visit
from ui.pending_design import pending_notice
from ui.uncertainty import cluster_widget
from ui.widgets import each_note, md

route_first_visit()

st.title("Design")
frame = ensure_data()  # opens on the bundled sample like the other pages
if frame is None:
    st.info("Load a results table on the **Data** page first.")
    page_link("pages/data.py", label="Go to Data", icon="📄")
    st.stop()
pending_notice(stop=True)  # the suggested design is still being inferred (off this thread)

current: Design = st.session_state.get("design") or suggest_design(frame)
rev = st.session_state.get("design_rev", 0)
st.caption(f"Table: **{md(st.session_state.get('results_name', ''))}**. A factor is a column whose "
           "values were varied when the benchmark was built or run; its reference is the "
           "control value that regression compares against.")

chosen = st.multiselect("Factor columns", list(frame.columns),
                        default=[n for n in current.names if n in frame.columns],
                        key=f"design_factors_{rev}")
factors = []
for name in chosen:
    with st.expander(f"**{md(name)}**", expanded=len(chosen) <= 3):
        known = next((f for f in current.factors if f.name == name), None)
        factor = factor_widgets(frame, name, known, key=f"design_{rev}_{name}")
        if factor is not None:
            factors.append(factor)

st.subheader("Outcome")
outcome = outcome_widgets(frame, current.outcome, key=f"design_outcome_{rev}")
cluster = cluster_widget(frame, current.cluster, key=f"design_cluster_{rev}")
# replace() keeps every other field of the loaded design (name, recipe, ...).
design = replace(current, factors=tuple(factors), outcome=outcome, cluster=cluster)
if design.recipe:
    st.caption(md(f"Recipe: {len(design.recipe)} Prepare step(s), saved with the design: "
               + "; ".join(s.describe() for s in design.recipe)))
design = constraints_section(frame, design, key=f"design_constraints_{rev}")
problems = design_problems(design, frame)
for p in problems:
    (st.error if p.severity == "error" else st.warning)(md(p.message))
if not any(p.severity == "error" for p in problems) and len(factors) == len(chosen):
    st.session_state["design"] = design

if factors:
    from analysis import api as bw

    st.subheader("Nested factors")  # with the cluster: a factor fixed by it is said too
    nestings = bw.nesting(frame, design, applied=True)  # the rows as they are
    each_note(nestings.notes, st.warning)
    if nestings.table.empty:
        st.success("No factor is a function of another among the chosen ones.")

    if not any(p.severity == "error" for p in problems):
        st.subheader("Cell table")
        results = applied_results(design)
        _, applied, renamed = clash_free(frame.iloc[:0], design)  # names the results carry
        if renamed:
            st.caption(md(rename_note(renamed)))
        cells = cells_for(results, applied, applied.names, with_outcome=outcome is not None)
        c1, c2, c3 = st.columns(3)
        c1.metric("Possible cells", f"{math.prod(len(f.values) for f in factors):,}")
        c2.metric("Observed cells", f"{len(cells):,}")
        c3.metric("Rows per observed cell", f"{cells[N].sum() / max(len(cells), 1):,.1f}")
        if outcome is not None:
            dev, n = int(cells[DEVIATIONS].sum()), int(cells[N].sum())
            st.caption(f"Deviation ({md(outcome.describe())}): {dev:,} of {n:,} rows "
                       f"({dev / max(n, 1):.1%}); {len(frame) - n:,} rows without an outcome.")
        st.dataframe(cells.head(500), width="stretch", hide_index=True, height=240)
        table_download(cells, "cell_table", key="design_cells")

st.subheader("Save or load the design")
saved = st.session_state.get("design", design)
c1, c2 = st.columns(2)
c1.download_button("Design as YAML", saved.to_yaml(), "design.yaml", "application/yaml",
                   key="design_dl_yaml")
c2.download_button("Design as JSON", saved.to_json(), "design.json", "application/json",
                   key="design_dl_json")
st.file_uploader("Load a design file (YAML or JSON)", type=["yaml", "yml", "json"],
                 key="design_upload", on_change=on_design_upload)
if "design_upload_error" in st.session_state:
    st.error(md(st.session_state["design_upload_error"]))
for w in st.session_state.pop("design_upload_warnings", []):
    if w not in {p.message for p in problems}:  # already shown with the design's problems
        st.warning(md(w))

st.subheader("Structure read from the table")
structure_section(frame, st.session_state.get("design", design), key=f"design_structure_{rev}")
