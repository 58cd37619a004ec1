"""The app's navigation (``app.py`` routes with it) and the first-visit guard of the pages.

Why the guard: while a server has not yet run ``app.py`` in any session, Streamlit's legacy
multipage mode is on because a ``pages/`` folder exists next to it, so a first visit at a
page URL (``/judges``) runs that page file directly, under a generated list of every file of
``pages/`` (and ``app``; hidden by ``client.showSidebarNavigation = false``) instead of our
navigation. :func:`route_first_visit`, called
at the top of every page file, notices that case and hands the run to our navigation, which
turns the legacy mode off for the whole server (``st.navigation`` does that) and runs the
page the URL asked for. Under our navigation, and in AppTest runs of a page file, it does
nothing.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

__all__ = ["PAGES", "navigation", "route_first_visit"]


#: Page files by section, with titles and icons (paths relative to app.py's folder); a page
#: file not listed here joins "Analyse" (:func:`_with_unlisted`).
_LISTED: dict[str, list[tuple[str, str, str]]] = {
    "Set up": [
        ("pages/data.py", "Data", ":material/upload_file:"),
        ("pages/prepare.py", "Prepare", ":material/build:"),
        ("pages/design.py", "Design", ":material/schema:"),
    ],
    "Analyse": [
        ("pages/coverage.py", "Coverage", ":material/grid_on:"),
        ("pages/subgroups.py", "Subgroups", ":material/donut_large:"),
        ("pages/ecdf.py", "eCDF", ":material/show_chart:"),
        ("pages/compare.py", "Compare", ":material/compare_arrows:"),
        ("pages/counterfactual.py", "Counterfactual pairs", ":material/swap_horiz:"),
        ("pages/importance.py", "Factor importance", ":material/balance:"),
        ("pages/disparity.py", "Disparity", ":material/bar_chart:"),
        ("pages/bias_index.py", "Bias index", ":material/speed:"),
        ("pages/cohorts.py", "Cohorts", ":material/stacked_bar_chart:"),
    ],
    "Share": [
        ("pages/report.py", "Report", ":material/summarize:"),
    ],
    "Plan": [
        ("pages/planner.py", "Planner", ":material/architecture:"),
    ],
    "Judge": [
        ("pages/judges.py", "Judges", ":material/gavel:"),
        ("pages/judges_tools.py", "Answers & agreement", ":material/handshake:"),
    ],
}




def _with_unlisted(listed: dict[str, list[tuple[str, str, str]]], root: Path | None = None
                   ) -> dict[str, list[tuple[str, str, str]]]:
    """``listed`` plus every other file of ``root/pages/`` (default: app.py's folder) at
    the end of "Analyse", titled from its name (``pages/value_rates.py``: "Value
    rates"), so a new analysis's page needs no line here."""
    known = {path for pages in listed.values() for path, _, _ in pages}
    root = root or Path(__file__).resolve().parents[1]
    extra = [(f"pages/{p.name}", p.stem.replace("_", " ").capitalize(), ":material/analytics:")
             for p in sorted((root / "pages").glob("*.py"))
             if f"pages/{p.name}" not in known and not p.name.startswith("_")]
    return {section: pages + extra if section == "Analyse" else list(pages)
            for section, pages in listed.items()}


#: The app's pages by section: :data:`_LISTED` and the unlisted page files.
PAGES: dict[str, list[tuple[str, str, str]]] = _with_unlisted(_LISTED)


#: The sidebar container of our page links (its element carries ``st-key-app_nav``).
NAV_KEY = "app_nav"


def navigation():
    """``st.navigation`` of :data:`PAGES` (the first page is the default), with the page list
    drawn by us in the sidebar.

    Streamlit's own list is never shown (``position="hidden"``): on a fresh server the first
    run is Streamlit's legacy ``pages/`` mode, whose generated list of files flashed in the
    sidebar before ours replaced it. ``client.showSidebarNavigation = false``
    (``.streamlit/config.toml``) hides that generated list, and it would hide a
    ``position="sidebar"`` navigation too, so ours is a column of ``st.page_link`` under
    section captions (the current page highlighted by Streamlit). URLs are unchanged (the
    file names: ``/coverage``, ``/judges``, ...).
    """
    first = PAGES["Set up"][0][0]
    sections = {section: [st.Page(path, title=title, icon=icon, default=path == first)
                          for path, title, icon in pages]
                for section, pages in PAGES.items()}
    page = st.navigation(sections, position="hidden")
    with st.sidebar.container(key=NAV_KEY):
        for section, pages in sections.items():
            st.caption(section)  # our own constant titles, no visitor text
            for p in pages:
                st.page_link(p)
    return page


def _legacy_mode() -> bool:
    # Streamlit keeps the legacy-mode switch on its pages manager (not public API; checked
    # with streamlit 1.67, where st.navigation sets it to False for the whole server).
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - another Streamlit layout
        return False
    return bool(PagesManager.uses_pages_directory)


def route_first_visit() -> None:
    """At the top of a page file: if this run is Streamlit's legacy page mode (a first visit
    at a page URL on a fresh server), run our navigation instead and stop. Otherwise load a
    bundled sample chosen on the Data page whose change callback was lost to a page switch
    (:func:`ui.data.sync_sample_choice`), before the page reads the table, and put back
    the active table's page settings (:func:`ui.page_state.recall`)."""
    if _legacy_mode():
        st.set_page_config(page_title="Bias workbench", page_icon="⚖️", layout="wide")
        from ui import auth

        page = navigation()
        auth.require_sign_in()  # the same gate as app.py's
        page.run()
        st.stop()
    from ui import page_state
    from ui.data import sync_sample_choice  # ui.data -> ui.common -> ui.context: kept lazy

    sync_sample_choice()
    page_state.recall()  # this table's settings, kept across page switches and reloads
    page_state.show_notes()
