"""Bias workbench: page config and routing only (pages live in pages/, the navigation in
ui/navigation.py)."""

import streamlit as st

from ui.navigation import navigation

st.set_page_config(page_title="Bias workbench", page_icon="⚖️", layout="wide")

navigation().run()
