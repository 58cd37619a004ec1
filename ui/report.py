"""The "Add to report" button of the analysis pages and the Report page's widgets.

Session state: ``report_sections`` is a list of ``{"section": name, "settings": {...}}``
(plain JSON-serialisable values, as :func:`analysis.report.plain` makes them): a page
stores its *settings*, never its figures; the Report page rebuilds every section with
:mod:`analysis.report` from the active table and design. ``report_built`` holds the last
built report's HTML (and ``report_built_at`` the sections it was built from).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from analysis import report as rpt
from analysis.design import Design
from analysis.errors import AnalysisError
from analysis.export import ExportUnavailable

KEY = "report_sections"


def stored_sections() -> list[dict[str, Any]]:
    """The sections added so far (the list in session state, created when missing)."""
    return st.session_state.setdefault(KEY, [])


def _add(section: str, settings: dict[str, Any]) -> None:
    stored_sections().append({"section": section, "settings": rpt.plain(settings)})
    st.session_state.pop("report_built", None)


def add_to_report_button(section: str, settings: dict[str, Any]) -> None:
    """A button that stores this page's current ``settings`` as a report section.

    Parameters
    ----------
    section
        One of :data:`analysis.report.SECTIONS`.
    settings
        The keyword settings of that section (see ``docs/report.md``); dataclasses and
        tuples are converted to plain values.
    """
    n = sum(1 for s in stored_sections() if s["section"] == section)
    st.button("Add to report", key=f"report_add_{section}", icon="📑", on_click=_add,
              args=(section, settings),
              help="Store these settings as a section of the report (Report page)."
                   + (f" Already added {n}x." if n else ""))


def _move(i: int, step: int) -> None:
    items = stored_sections()
    j = i + step
    if 0 <= j < len(items):
        items[i], items[j] = items[j], items[i]
    st.session_state.pop("report_built", None)


def _remove(i: int) -> None:
    stored_sections().pop(i)
    st.session_state.pop("report_built", None)


def section_list() -> list[dict[str, Any]]:
    """The stored sections with up / down / remove buttons; returns them."""
    items = stored_sections()
    for i, item in enumerate(items):
        c1, c2, c3, c4 = st.columns([6, 1, 1, 1])
        with c1.expander(f"{i + 1}. {rpt.TITLES.get(item['section'], item['section'])}"):
            st.json(item["settings"])
        c2.button("↑", key=f"report_up_{i}", on_click=_move, args=(i, -1), disabled=i == 0)
        c3.button("↓", key=f"report_down_{i}", on_click=_move, args=(i, 1),
                  disabled=i == len(items) - 1)
        c4.button("Remove", key=f"report_remove_{i}", on_click=_remove, args=(i,))
    return items


def add_defaults_button() -> None:
    """A button adding every section with the default settings."""
    def add_all() -> None:
        for name in rpt.SECTIONS:
            _add(name, {})

    st.button("Add every section with default settings", key="report_add_all",
              on_click=add_all)


def build(results: pd.DataFrame, design: Design, items: list[dict[str, Any]]) -> None:
    """Build the report of ``items`` into session state (errors shown on the page)."""
    try:
        report = rpt.build_report(results, design,
                                  [(i["section"], i["settings"]) for i in items],
                                  source=str(st.session_state.get("results_name", "results")))
    except AnalysisError as exc:
        st.error(str(exc))
        return
    st.session_state["report_built"] = (report, rpt.report_html(report))


def downloads() -> None:
    """HTML, ZIP and PDF downloads of the built report (ZIP and PDF render on click)."""
    built = st.session_state.get("report_built")
    if built is None:
        return
    report, html_text = built
    skipped = [f"{s.title}: {s.skipped}" for s in report.sections if s.skipped]
    for line in skipped:
        st.info(f"Skipped {line}")
    c1, c2, c3 = st.columns(3)
    c1.download_button("HTML report", html_text, file_name="report.html", mime="text/html",
                       key="report_html", on_click="ignore", icon="⬇️")
    c2.download_button("Figures and tables (ZIP)", lambda: rpt.report_zip(report, html_text),
                       file_name="report.zip", mime="application/zip", key="report_zip",
                       on_click="ignore", icon="⬇️")
    can_pdf = rpt.chromium_path() is not None
    c3.download_button("PDF", (lambda: _pdf(html_text)), file_name="report.pdf",
                       mime="application/pdf", key="report_pdf", on_click="ignore",
                       icon="⬇️", disabled=not can_pdf,
                       help=None if can_pdf else rpt.PDF_UNAVAILABLE)
    if not can_pdf:
        c3.caption(rpt.PDF_UNAVAILABLE)


def _pdf(html_text: str) -> bytes:
    try:
        return rpt.report_pdf(html_text)
    except (ExportUnavailable, AnalysisError) as exc:
        raise RuntimeError(str(exc)) from None
