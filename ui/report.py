"""The "Add to report" button of the analysis pages and the Report page's widgets.

Session state: ``report_sections`` is a list of ``{"section": name, "settings": {...},
"id": n}`` (plain JSON-serialisable values, as :func:`analysis.report.plain` makes them;
``id`` keys the item's widgets on the Report page, ``report_next_id`` counts): a page
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
from ui.common import per_table
from ui.widgets import md

__all__ = [
    "KEY", "add_defaults_button", "add_to_report_button", "build", "ci_editor",
    "criteria_uploader", "downloads",
    "noise_editor", "prepared_download", "section_list", "settings_summary", "stored_sections",
]


KEY = "report_sections"


def _next_id() -> int:
    n = st.session_state.get("report_next_id", 0)
    st.session_state["report_next_id"] = n + 1
    return n


def stored_sections() -> list[dict[str, Any]]:
    """The sections added so far (the list in session state, created when missing)."""
    items = st.session_state.setdefault(KEY, [])
    for item in items:
        if "id" not in item:
            item["id"] = _next_id()
    return items


def _add(section: str, settings: dict[str, Any], ci_prefix: str | None = None,
         noise_prefix: str | None = None) -> None:
    if ci_prefix:  # the page's bootstrap widgets, as they are when the button is pressed
        from ui.uncertainty import page_ci_settings

        settings = {**settings, **page_ci_settings(ci_prefix)}
    if noise_prefix:  # the page's judge-noise expander (replicates 0: off)
        from ui.judge_noise import page_noise_settings

        noise = page_noise_settings(noise_prefix)
        settings = {**settings, "judge_noise": noise or {"replicates": 0}}
    stored_sections().append({"section": section, "settings": rpt.plain(settings),
                              "id": _next_id()})
    st.session_state.pop("report_built", None)


def add_to_report_button(section: str, settings: dict[str, Any], *,
                         ci_prefix: str | None = None, noise_prefix: str | None = None) -> None:
    """A button that stores this page's current ``settings`` as a report section.

    Parameters
    ----------
    section
        One of :data:`analysis.report.SECTIONS`.
    settings
        The keyword settings of that section (see ``docs/report.md``); dataclasses and
        tuples are converted to plain values.
    ci_prefix
        The prefix of the page's bootstrap widgets (:func:`ui.uncertainty.bootstrap_options`):
        their state when the button is pressed becomes the section's ``ci``, ``cluster``,
        ``n_resamples``, ``seed`` and ``confidence`` settings.
    noise_prefix
        The prefix of the page's judge-noise widgets (:mod:`ui.judge_noise`): their state
        when the button is pressed becomes the section's ``judge_noise`` setting
        (``replicates`` 0 when off).
    """
    n = sum(1 for s in stored_sections() if s["section"] == section)
    st.button("Add to report", key=f"report_add_{section}", icon="📑", on_click=_add,
              args=(section, settings, ci_prefix, noise_prefix),
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


def _ci_label(item: dict[str, Any]) -> str:
    s = item["settings"]
    if item["section"] not in rpt.CI_SECTIONS or s.get("ci", "none") != "bootstrap":
        return ""
    n = s.get("n_resamples", s.get("n_boot", rpt.CI_SECTIONS[item["section"]]))
    return f" · bootstrap intervals ({n:,} replicates)"


def ci_editor(item: dict[str, Any], columns: list[str], design: Design) -> None:
    """Widgets that show and edit a section's interval settings (``ci``, ``cluster``,
    ``n_resamples``, ``seed``, ``confidence``), written back into the stored settings
    (session-state keys ``report_<setting>_<id>``, ``report_n_boot_<id>`` for the
    replicates)."""
    ss, settings, sid = st.session_state, item["settings"], item["id"]
    if "n_boot" in settings and "n_resamples" not in settings:  # saved before the rename
        settings["n_resamples"] = settings.pop("n_boot")
    current = {**rpt.ci_defaults(item["section"], design), **settings}
    clusters = [None, *[c for c in columns if c != "deviation"]]
    if current["cluster"] not in clusters:
        current["cluster"] = None

    def key(name: str) -> str:
        return f"report_{'n_boot' if name == 'n_resamples' else name}_{sid}"

    for name in rpt.CI_KEYS:
        ss.setdefault(key(name), current[name])

    def changed(name: str) -> None:
        value = ss[key(name)]
        settings[name] = int(value) if name in ("n_resamples", "seed") else value
        ss.pop("report_built", None)

    c1, c2, c3, c4, c5 = st.columns(5)
    c1.selectbox("Intervals", rpt.CI_CHOICES, key=key("ci"), on_change=changed, args=("ci",),
                 help="bootstrap: percentile intervals (analysis.bootstrap), seeded")
    c2.selectbox("Resample", clusters, key=key("cluster"), on_change=changed,
                 args=("cluster",), format_func=lambda c: c or "rows (independent)")
    c3.number_input("Replicates", min_value=20, max_value=100_000, step=100,
                    key=key("n_resamples"), on_change=changed, args=("n_resamples",))
    c4.number_input("Seed", min_value=0, step=1, key=key("seed"), on_change=changed,
                    args=("seed",))
    c5.number_input("Confidence", min_value=0.5, max_value=0.999, step=0.01, format="%.3f",
                    key=key("confidence"), on_change=changed, args=("confidence",))


def _defaults(results: pd.DataFrame, design: Design, section: str) -> dict[str, Any]:
    try:
        return rpt.plain(rpt.default_settings(section, results, design))
    except AnalysisError:
        return {}


def settings_summary(item: dict[str, Any], results: pd.DataFrame | None,
                     design: Design | None) -> None:
    """The section's settings that differ from the defaults, one line each (the full
    settings folded below)."""
    from analysis.report_text import settings_lines

    defaults: dict[str, Any] = {}
    if results is not None and design is not None:  # cached per table, design and section
        defaults = per_table(_defaults, results, design, design, item["section"])
    lines = settings_lines({**defaults, **item["settings"]}, defaults)
    st.markdown("\n".join(f"- {md(x)}" for x in lines) if lines
                else "Default settings of the page.")
    st.caption("All settings: " + md(", ".join(f"{k} = {v}" for k, v in
                                               item["settings"].items()) or "defaults"))


def _noise_label(item: dict[str, Any]) -> str:
    noise = item["settings"].get("judge_noise") or {}
    if item["section"] not in rpt.NOISE_SECTIONS or not noise.get("replicates"):
        return ""
    return f" · judge noise ({noise['replicates']:,} replicates, {noise.get('mode', 'mean')})"


def noise_editor(item: dict[str, Any], modes: list[str]) -> None:
    """Widgets that show and edit a section's ``judge_noise`` setting (replicates, 0: off;
    mode; seed; subgroups: alpha), written back into the stored settings."""
    from analysis.judge_noise import MODE_LABELS

    ss, settings, sid, section = st.session_state, item["settings"], item["id"], item["section"]
    current = {**rpt.noise_defaults(section), **(settings.get("judge_noise") or {})}
    modes = list(dict.fromkeys([*modes, current["mode"]]))

    def key(name: str) -> str:
        return f"report_noise_{name}_{sid}"

    for name in rpt.NOISE_SECTIONS[section]:
        ss.setdefault(key(name), current[name])

    def changed(name: str) -> None:
        value = ss[key(name)]
        noise = {**current, **(settings.get("judge_noise") or {})}
        noise[name] = int(value) if name in ("replicates", "seed") else value
        settings["judge_noise"] = noise
        ss.pop("report_built", None)

    cols = st.columns(len(rpt.NOISE_SECTIONS[section]))
    cols[0].number_input("Judge-noise replicates", min_value=0, max_value=100_000, step=50,
                         key=key("replicates"), on_change=changed, args=("replicates",),
                         help="0: off. Redraws the judge's scores and counts how often each "
                              "conclusion keeps its sign and significance (docs/judge_noise.md)")
    cols[1].selectbox("Redraw each score as", modes, key=key("mode"), on_change=changed,
                      args=("mode",), format_func=lambda m: MODE_LABELS.get(m, m))
    cols[2].number_input("Noise seed", min_value=0, step=1, key=key("seed"),
                         on_change=changed, args=("seed",))
    if "alpha" in rpt.NOISE_SECTIONS[section]:
        cols[3].number_input("Significant: adjusted p <", min_value=0.0001, max_value=0.5,
                             step=0.01, format="%.4f", key=key("alpha"), on_change=changed,
                             args=("alpha",))


def section_list(columns: list[str] | None = None, design: Design | None = None, *,
                 results: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """The stored sections with up / down / remove buttons; returns them.

    With the table's ``columns`` and the ``design``, the sections with bootstrap
    intervals (:data:`analysis.report.CI_SECTIONS`) also get :func:`ci_editor`; with
    ``results``, the subgroups and importance sections get :func:`noise_editor` when the
    table can be resampled (or the stored section already asks for judge noise).
    """
    from analysis import api as bw

    modes = bw.judge_noise_modes(results) if results is not None else []
    items = stored_sections()
    for i, item in enumerate(items):
        c1, c2, c3, c4 = st.columns([6, 1, 1, 1])
        title = rpt.TITLES.get(item["section"], item["section"])
        with c1.expander(f"{i + 1}. {title}{_ci_label(item)}{_noise_label(item)}"):
            if columns is not None and design is not None \
                    and item["section"] in rpt.CI_SECTIONS:
                ci_editor(item, columns, design)
            if results is not None and item["section"] in rpt.NOISE_SECTIONS \
                    and (modes or _noise_label(item)):
                noise_editor(item, modes)
            settings_summary(item, results, design)
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


def criteria_uploader() -> None:
    """A criteria file (``docs/checks.md``) added as the report's Checks section (the
    gate's verdicts on the active table)."""
    from analysis import api as bw

    up = st.file_uploader("Criteria file for a **Checks** section (YAML, the gate's "
                          "criteria: docs/checks.md)", type=["yaml", "yml"],
                          key="report_criteria")
    if up is None:
        return
    try:
        content = bw.check_criteria(up.getvalue(), up.name)
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return
    st.button("Add the Checks section", key="report_add_checks",
              on_click=lambda: _add("checks", {"criteria": content}))


def build(results: pd.DataFrame, design: Design, items: list[dict[str, Any]]) -> None:
    """Build the report of ``items`` into session state (errors shown on the page)."""
    try:
        report = rpt.build_report(results, design,
                                  [(i["section"], i["settings"]) for i in items],
                                  source=str(st.session_state.get("results_name", "results")))
    except AnalysisError as exc:
        st.error(md(str(exc)))  # messages quote factor names and values from the data
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
        st.info(md(f"Skipped {line}"))
    c1, c2, c3 = st.columns(3)
    c1.download_button("HTML report", html_text, file_name="report.html", mime="text/html",
                       key="report_html", on_click="ignore", icon="⬇️")
    with c2:
        prepared_download("zip", "Figures and tables (ZIP)", "report.zip", "application/zip",
                          lambda bar: rpt.report_zip(report, html_text, progress=bar))
    can_pdf = rpt.chromium_path() is not None
    with c3:
        prepared_download("pdf", "PDF", "report.pdf", "application/pdf",
                          lambda bar: _pdf(html_text, bar), disabled=not can_pdf)
    if not can_pdf:
        c3.caption(rpt.PDF_UNAVAILABLE)


def prepared_download(kind: str, label: str, file_name: str, mime: str, make, *,
                      disabled: bool = False) -> None:
    """A "Prepare" button that renders a slow file with a progress bar, then its download
    button (the bytes are kept for the built report: ``report_file_<kind>``).

    ``make(progress)`` returns the bytes; ``progress(fraction, text)`` moves the bar.
    """
    ss, key = st.session_state, f"report_file_{kind}"
    built = ss.get("report_built")
    ready = ss.get(key)
    if ready is not None and ready[0] is built:
        st.download_button(label, ready[1], file_name=file_name, mime=mime,
                           key=f"report_{kind}", on_click="ignore", icon="⬇️")
        return
    if not st.button(f"Prepare {label}", key=f"report_prepare_{kind}", icon="⚙️",
                     disabled=disabled, help=None if not disabled else rpt.PDF_UNAVAILABLE):
        return
    bar = st.progress(0.0, text=f"Preparing {label}...")

    def progress(fraction: float, text: str) -> None:
        bar.progress(min(max(fraction, 0.0), 1.0), text=md(f"Preparing {label}: {text}"))

    try:
        data = make(progress)
    except (ExportUnavailable, AnalysisError) as exc:
        bar.empty()
        st.error(md(str(exc)))
        return
    bar.empty()
    ss[key] = (built, data)
    st.rerun()  # drawn again: the download button in place of "Prepare"


def _pdf(html_text: str, progress) -> bytes:
    progress(0.1, "printing with Chromium (a few seconds)")
    return rpt.report_pdf(html_text)
