"""Bias workbench: page config and routing only (pages live in pages/)."""

import streamlit as st

st.set_page_config(page_title="Bias workbench", page_icon="⚖️", layout="wide")

PAGES = {
    "Set up": [
        st.Page("pages/data.py", title="Data", icon=":material/upload_file:", default=True),
        st.Page("pages/prepare.py", title="Prepare", icon=":material/build:"),
        st.Page("pages/design.py", title="Design", icon=":material/schema:"),
    ],
    "Analyse": [
        st.Page("pages/coverage.py", title="Coverage", icon=":material/grid_on:"),
        st.Page("pages/subgroups.py", title="Subgroups", icon=":material/donut_large:"),
        st.Page("pages/ecdf.py", title="eCDF", icon=":material/show_chart:"),
        st.Page("pages/importance.py", title="Factor importance", icon=":material/balance:"),
        st.Page("pages/disparity.py", title="Disparity", icon=":material/bar_chart:"),
        st.Page("pages/bias_index.py", title="Bias index", icon=":material/speed:"),
        st.Page("pages/cohorts.py", title="Cohorts", icon=":material/stacked_bar_chart:"),
    ],
    "Share": [
        st.Page("pages/report.py", title="Report", icon=":material/summarize:"),
    ],
    "Judge": [
        st.Page("pages/judges.py", title="Judges", icon=":material/gavel:"),
        st.Page("pages/judges_tools.py", title="Answers & agreement", icon=":material/handshake:"),
    ],
}

st.navigation(PAGES).run()
