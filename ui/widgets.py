"""Widgets every page uses: the subset filter, the download buttons and page links."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError

from analysis.context import stamp_figure, stamp_table
from analysis.design import Design
from analysis.errors import AnalysisError
from analysis.export import (
    FIGURE_FORMATS,
    MIME,
    figure_bytes,
    table_bytes,
    unavailable_reason,
)
from analysis.safe_text import escape_markdown
from ui.context import current_context, note_subset

__all__ = [
    "ENCODINGS", "NO_EXPORT_WARM_UP", "each_note", "encoding_choice", "figure_downloads", "fit",
    "md", "p_value_columns", "page_link", "show_figure", "show_table", "start_exporter",
    "stop_on_error", "subset_filter", "table_download",
]


#: Encodings offered for uploads. A byte-order mark (UTF-8, UTF-16, UTF-32) names the
#: encoding by itself; the choice is for files without one (Latin-1 or Windows exports).
ENCODINGS: dict[str, str] = {
    "utf-8": "UTF-8 (default; a byte-order mark is followed)",
    "cp1252": "Windows-1252 (Excel on Windows, Western Europe)",
    "latin-1": "Latin-1 (ISO-8859-1)",
    "utf-16-le": "UTF-16 LE (little-endian, no byte-order mark)",
    "utf-16-be": "UTF-16 BE (big-endian, no byte-order mark)",
    "shift_jis": "Shift JIS",
    "gb18030": "GB18030",
}


def encoding_choice(key: str, on_change=None) -> str:
    """The encoding of an uploaded text file without a byte-order mark (a mark names the
    encoding by itself and wins: :func:`analysis.io.detect_bom`)."""
    return st.selectbox("Encoding of a text file without a byte-order mark", list(ENCODINGS),
                        format_func=ENCODINGS.get, key=key, on_change=on_change)


def md(text: object) -> str:
    """Text from user data (labels, column names, values, file names, messages naming
    them) made safe for anything Streamlit renders as Markdown: ``st.markdown``,
    ``st.caption``, ``st.error`` / ``warning`` / ``info`` / ``success`` and widget labels.

    A column named ``![px](http://host/x.png)`` is shown as those characters instead of
    an image fetched from ``host`` (:func:`analysis.safe_text.escape_markdown`).
    """
    return escape_markdown(text)


def fit(key: str, options: Sequence[Any], what: str) -> None:
    """Drop from the setting ``key`` the values not in ``options``, with a note shown
    where it is called.

    Call before the widget of ``key`` is drawn (outside a closed expander). ``what`` names
    the control on the page (e.g. "Subgroups: Factors").
    """
    ss = st.session_state
    if key not in ss:
        return
    value, allowed = ss[key], set(options)
    if isinstance(value, (list, tuple)):
        dropped = [v for v in value if v not in allowed]
        if dropped:
            ss[key] = [v for v in value if v in allowed]
    elif value is not None and value not in allowed:
        dropped = [value]
        del ss[key]
    else:
        dropped = []
    if dropped:
        st.info(md(f"{what}: {', '.join(map(str, dropped))} dropped from the kept settings "
                   "(not offered for this table and design)."), icon="ℹ️")


def subset_filter(design: Design, key: str, *, label: str = "Subset (applied first)"
                  ) -> dict[str, list[str]]:
    """Widgets to restrict rows to some factor values; returns ``{factor: [values]}``."""
    where: dict[str, list[str]] = {}
    for f in design.factors:  # kept values the design no longer offers: dropped, with a note
        fit(f"{key}_where_{f.name}", list(f.values), f"{label}: {f.name}")
    with st.expander(label, expanded=False):
        st.caption("Keep only rows with the chosen values, e.g. one model or CoT = yes. "
                   "Leave a factor empty to keep all its values.")
        cols = st.columns(min(3, max(len(design.factors), 1)))
        for i, f in enumerate(design.factors):
            chosen = cols[i % len(cols)].multiselect(md(f.name), list(f.values),
                                                      key=f"{key}_where_{f.name}")
            if chosen:
                where[f.name] = chosen
    note_subset(where)
    return where


def p_value_columns(table: pd.DataFrame) -> dict:
    """``column_config`` showing every p-value column of ``table`` as ``1.2e-70``."""
    from analysis.formatting import P_FORMAT, is_p_column

    return {c: st.column_config.NumberColumn(c, format=P_FORMAT) for c in table.columns
            if is_p_column(str(c)) and pd.api.types.is_float_dtype(table[c])}


def table_download(table: pd.DataFrame, name: str, key: str) -> None:
    """A CSV download button for ``table`` (rendered when clicked).

    On an analysis page the CSV carries the page's context as ``workbench_*`` columns.
    """
    context = current_context()  # stamped on click: a copy of a large table costs every run
    st.download_button("CSV", lambda: table_bytes(stamp_table(table, context) if context
                                                  else table), file_name=f"{name}.csv",
                       mime=MIME["csv"], key=f"{key}_csv", on_click="ignore", icon="⬇️")


def show_table(table: pd.DataFrame, name: str, key: str, *, table_key: str | None = None,
               **dataframe: Any) -> Any:
    """``st.dataframe(table, hide_index=True, key=table_key, **dataframe)`` with its CSV
    download below (:func:`table_download` of ``name`` and ``key``); returns what
    ``st.dataframe`` returns (the selection event with ``on_select``)."""
    shown = st.dataframe(table, hide_index=True, key=table_key, **dataframe)
    table_download(table, name, key=key)
    return shown


def show_figure(fig, name: str, key: str, *, chart: str) -> None:  # noqa: ANN001 - a Figure
    """``st.plotly_chart(fig, key=chart)`` with its download buttons below
    (:func:`figure_downloads` of ``name`` and ``key``)."""
    st.plotly_chart(fig, key=chart)
    figure_downloads(fig, name, key=key)


def each_note(notes: Iterable[object], show=st.caption) -> None:  # noqa: ANN001
    """``show(md(note))`` for each note (``show``: ``st.caption``, ``st.warning``, ...)."""
    for note in notes:
        show(md(note))


@contextlib.contextmanager
def stop_on_error() -> Iterator[None]:
    """Inside it, an :class:`~analysis.errors.AnalysisError` is shown as its message
    (escaped) and the page stops there (``st.stop()``)."""
    try:
        yield
    except AnalysisError as exc:
        st.error(md(str(exc)))
        st.stop()


def figure_downloads(fig, name: str, key: str) -> None:
    """Download buttons for a figure: PNG, SVG, PDF and standalone HTML.

    Files are rendered only when a button is clicked (deferred data), so a page
    rerun costs nothing; while an image renders, Streamlit's button shows a spinner
    (``st.spinner`` is ignored inside deferred-data callables). Without a browser for
    kaleido the image buttons are disabled and say what to install; HTML keeps working.
    """
    reason = unavailable_reason()  # no kaleido, or no browser for it
    can_render = reason is None
    context = current_context()  # stamped on click: the page's context line under the plot
    cols = st.columns(len(FIGURE_FORMATS) + 1)
    for col, fmt in zip(cols, FIGURE_FORMATS, strict=False):
        enabled = fmt == "html" or can_render
        col.download_button(
            fmt.upper(),
            (lambda f=fmt: figure_bytes(stamp_figure(fig, context) if context else fig, f)),
            file_name=f"{name}.{fmt}",
            mime=MIME[fmt], key=f"{key}_{fmt}", on_click="ignore", icon="⬇️",
            disabled=not enabled, help=reason if not enabled else (
                None if fmt == "html" else "Rendered when clicked: a few seconds, while "
                                           "the button shows a spinner"),
        )
    if reason:
        cols[-1].caption(reason)


def start_exporter() -> bool:
    """Start the figure exporter (kaleido's Chrome) in the background on a server's first
    page view, so that the first PNG/SVG/PDF download does not wait for Chrome's start
    (2-3 s idle, 9-17 s under load; issue 44.4). Once per process; returns at once
    (:func:`analysis.export.warm_up`). Not under Streamlit's AppTest (tests run pages
    without downloads, and a Chrome per test process would only cost CPU), nor with the
    environment variable :data:`NO_EXPORT_WARM_UP` set (a server that never exports;
    the benchmark's cold start): then the first export starts Chrome, as before.

    Returns
    -------
    bool
        Whether a start was asked for in this call.
    """
    import os
    import sys

    if _EXPORTER["asked"] or "streamlit.testing.v1" in sys.modules \
            or os.environ.get(NO_EXPORT_WARM_UP):
        return False
    _EXPORTER["asked"] = True
    from analysis.export import warm_up

    return warm_up()


#: An environment variable that, when set (non-empty), keeps :func:`start_exporter` off.
NO_EXPORT_WARM_UP = "BIAS_WORKBENCH_NO_EXPORT_WARM_UP"
#: Whether :func:`start_exporter` has run in this process.
_EXPORTER = {"asked": False}


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
