"""Bias workbench: page config and routing only (pages live in pages/, the navigation in
ui/navigation.py)."""

import sys

import streamlit as st

from ui.navigation import navigation  # light: Streamlit only

st.set_page_config(page_title="Bias workbench", page_icon="⚖️", layout="wide")

page = navigation()  # first: it also turns Streamlit's legacy pages/ mode off
# A fresh server's first page imports the analysis stack (pandas, pyarrow, the workbench's
# modules: seconds at high load) before anything of the page is drawn: say so meanwhile
# instead of a blank screen (issue 42; benchmarks/bench_first_page.py).
loading = st.empty()
if "analysis.design" not in sys.modules:
    loading.info("Starting the bias workbench: loading its analysis modules and the "
                 "bundled sample (a few seconds on a fresh server)...", icon="⏳")

from ui import auth, page_state, session  # noqa: E402 - after the loading message
from ui.context import page_guard  # noqa: E402
from ui.frontend_warm import warm_bundles  # noqa: E402
from ui.widgets import start_exporter  # noqa: E402

start_exporter()  # the server's first page view: Chrome for the downloads starts meanwhile
auth.require_sign_in()  # with an [auth] provider configured: nobody gets further unsigned
session.restore()  # after a browser reload: the table, design and settings of ?sid=
mine = session.sessions_sidebar()  # with sign-in: "My sessions" (refreshed after the save)


def finish() -> None:
    """The end of every run, before a page's st.stop() takes effect (ui.session.page_run)."""
    loading.empty()  # the first page is drawn
    page_state.remember()  # this table's page settings and report sections (ui/page_state.py)
    session.save()  # and the session's id back in the URL
    session.sessions_sidebar(mine)
    warm_bundles()  # plotly.js & co. load at idle, not with the first chart (ui/frontend_warm.py)


with session.page_run(finish), page_guard():  # an unexpected error becomes a message
    page.run()
