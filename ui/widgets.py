"""Widgets every page uses: the subset filter, the download buttons and page links."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from analysis.design import Design
from analysis.export import (
    FIGURE_FORMATS,
    INSTALL_HINT,
    MIME,
    browser_available,
    figure_bytes,
    table_bytes,
)
from analysis.safe_text import escape_markdown


def md(text: object) -> str:
    """Text from user data (labels, column names, values, file names, messages naming
    them) made safe for anything Streamlit renders as Markdown: ``st.markdown``,
    ``st.caption``, ``st.error`` / ``warning`` / ``info`` / ``success`` and widget labels.

    A column named ``![px](http://host/x.png)`` is shown as those characters instead of
    an image fetched from ``host`` (:func:`analysis.safe_text.escape_markdown`).
    """
    return escape_markdown(text)


def subset_filter(design: Design, key: str, *, label: str = "Subset (applied first)"
                  ) -> dict[str, list[str]]:
    """Widgets to restrict rows to some factor values; returns ``{factor: [values]}``."""
    where: dict[str, list[str]] = {}
    with st.expander(label, expanded=False):
        st.caption("Keep only rows with the chosen values, e.g. one model or CoT = yes. "
                   "Leave a factor empty to keep all its values.")
        cols = st.columns(min(3, max(len(design.factors), 1)))
        for i, f in enumerate(design.factors):
            chosen = cols[i % len(cols)].multiselect(md(f.name), list(f.values),
                                                      key=f"{key}_where_{f.name}")
            if chosen:
                where[f.name] = chosen
    return where


def table_download(table: pd.DataFrame, name: str, key: str) -> None:
    """A CSV download button for ``table`` (rendered when clicked)."""
    st.download_button("CSV", lambda: table_bytes(table), file_name=f"{name}.csv",
                       mime=MIME["csv"], key=f"{key}_csv", on_click="ignore", icon="⬇️")


def figure_downloads(fig, name: str, key: str) -> None:
    """Download buttons for a figure: PNG, SVG, PDF and standalone HTML.

    Files are rendered only when a button is clicked (deferred data), so a page
    rerun costs nothing. Without a browser for kaleido the image buttons are
    disabled and say what to install; HTML keeps working.
    """
    can_render = browser_available()
    cols = st.columns(len(FIGURE_FORMATS) + 1)
    for col, fmt in zip(cols, FIGURE_FORMATS, strict=False):
        enabled = fmt == "html" or can_render
        col.download_button(
            fmt.upper(), (lambda f=fmt: figure_bytes(fig, f)), file_name=f"{name}.{fmt}",
            mime=MIME[fmt], key=f"{key}_{fmt}", on_click="ignore", icon="⬇️",
            disabled=not enabled, help=None if enabled else INSTALL_HINT,
        )
    if not can_render:
        cols[-1].caption(INSTALL_HINT)


def page_link(page: str, label: str, icon: str | None = None) -> None:
    """``st.page_link`` to another page of ``app.py``'s navigation.

    A page run on its own (``AppTest.from_file("pages/x.py")``, no ``st.navigation``)
    cannot resolve other pages: Streamlit raises ``StreamlitPageNotFoundError``. The
    link then degrades to a caption instead of breaking the page.
    """
    try:
        st.page_link(page, label=label, icon=icon)
    except StreamlitPageNotFoundError:
        st.caption(f"{label} (see the sidebar)")
