"""Bias workbench: page config and routing only (pages live in pages/, the navigation in
ui/navigation.py)."""

import streamlit as st

from ui import auth, page_state, session
from ui.context import page_guard
from ui.navigation import navigation
from ui.widgets import start_exporter

st.set_page_config(page_title="Bias workbench", page_icon="⚖️", layout="wide")

page = navigation()  # first: it also turns Streamlit's legacy pages/ mode off
start_exporter()  # the server's first page view: Chrome for the downloads starts meanwhile
auth.require_sign_in()  # with an [auth] provider configured: nobody gets further unsigned
session.restore()  # after a browser reload: the table, design and settings of ?sid=
mine = session.sessions_sidebar()  # with sign-in: "My sessions" (refreshed after the save)


def finish() -> None:
    """The end of every run, before a page's st.stop() takes effect (ui.session.page_run)."""
    page_state.remember()  # this table's page settings and report sections (ui/page_state.py)
    session.save()  # and the session's id back in the URL
    session.sessions_sidebar(mine)


with session.page_run(finish), page_guard():  # an unexpected error becomes a message
    page.run()
