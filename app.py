"""Bias workbench: page config and routing only (pages live in pages/)."""

import streamlit as st

st.set_page_config(page_title="Bias workbench", page_icon="⚖️", layout="wide")

PAGES = {
    "Set up": [
        st.Page("pages/data.py", title="Data", icon="📄", default=True),
        st.Page("pages/design.py", title="Design", icon="🧩"),
    ],
    "Analyse": [
        st.Page("pages/coverage.py", title="Coverage", icon="🧮"),
        st.Page("pages/subgroups.py", title="Subgroups", icon="🎯"),
        st.Page("pages/ecdf.py", title="eCDF", icon="📈"),
        st.Page("pages/importance.py", title="Factor importance", icon="⚖️"),
        st.Page("pages/disparity.py", title="Disparity", icon="📊"),
        st.Page("pages/bias_index.py", title="Bias index", icon="🧭"),
        st.Page("pages/cohorts.py", title="Cohorts", icon="🗂️"),
    ],
}

st.navigation(PAGES).run()
