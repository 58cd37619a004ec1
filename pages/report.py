"""Report page: the sections added with "Add to report", built into one HTML/ZIP/PDF."""

import streamlit as st

from ui.common import require_results
from ui.importance_linear import deviation_view_note
from ui.navigation import route_first_visit
from ui.report import add_defaults_button, build, criteria_uploader, downloads, section_list

route_first_visit()

st.title("Report")
results, design = require_results(need_outcome=False)
deviation_view_note(design)  # a continuous outcome: say what is analysed
st.caption("One self-contained report of the whole analysis: the design, a data summary and "
           "each section's figures, tables, settings and warnings. Add sections with the "
           "**Add to report** button on each analysis page (it stores the page's settings); "
           "the report is rebuilt here from the active table and design.")

criteria_uploader()  # the gate's criteria: a Checks section with their verdicts
items = section_list(list(results.columns), design, results=results)
if not items:
    st.info("No sections yet: press **Add to report** on an analysis page.")
    add_defaults_button()
    st.stop()
if st.button("Build report", key="report_build", type="primary"):
    with st.spinner("Building the report..."):
        build(results, design, items)
downloads()
