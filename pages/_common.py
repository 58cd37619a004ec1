"""What every page shares: the active data and design, cached steps, downloads.

Session-state keys (the only ones shared between pages):

- ``results_frame``: the loaded table as read (pandas DataFrame);
- ``results_name``: its display name;
- ``results_token``: a content hash identifying it in caches;
- ``design``: the :class:`analysis.design.Design` in force.

Expensive steps are cached with ``st.cache_resource`` keyed by the token and the
design's JSON, so a widget change never re-applies the design or rebuilds a cell
table (the cached objects are shared: treat them as read-only).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import streamlit as st

from analysis.cells import cell_table
from analysis.design import Design, apply_design
from analysis.errors import AnalysisError
from analysis.export import (
    FIGURE_FORMATS,
    INSTALL_HINT,
    MIME,
    browser_available,
    figure_bytes,
    table_bytes,
)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = ROOT / "sample_data"
DEFAULT_SAMPLE = "bbq_unifiedqa.csv.gz"


def token_of(data: bytes | pd.DataFrame) -> str:
    """A short content hash for cache keys."""
    if isinstance(data, pd.DataFrame):
        data = pd.util.hash_pandas_object(data, index=False).to_numpy().tobytes()
    return hashlib.sha1(data).hexdigest()[:16]


def set_data(frame: pd.DataFrame, name: str, token: str, design: Design | None = None) -> None:
    """Make ``frame`` the active results table (and optionally ``design`` the design)."""
    st.session_state["results_frame"] = frame
    st.session_state["results_name"] = name
    st.session_state["results_token"] = token
    if design is not None:
        st.session_state["design"] = design


def active_frame() -> pd.DataFrame | None:
    """The loaded table, or None."""
    return st.session_state.get("results_frame")


@st.cache_resource(max_entries=4, show_spinner="Applying the design...")
def _applied(token: str, design_json: str, _frame: pd.DataFrame, _design: Design) -> pd.DataFrame:
    return apply_design(_frame, _design)


@st.cache_resource(max_entries=32, show_spinner="Counting cells...")
def _cells(token: str, design_json: str, factors: tuple[str, ...], where: str,
           with_outcome: bool, _results: pd.DataFrame, _where: dict) -> pd.DataFrame:
    return cell_table(_results, list(factors), where=_where or None, with_outcome=with_outcome)


def require_results(*, need_outcome: bool = True) -> tuple[pd.DataFrame, Design]:
    """The design applied to the active table, or a message and ``st.stop()``.

    Returns
    -------
    (results, design)
        ``results`` has categorical factor columns and, with an outcome, ``deviation``.
    """
    frame = active_frame()
    design: Design | None = st.session_state.get("design")
    if frame is None:
        st.info("Load a results table on the **Data** page first.")
        st.page_link("pages/data.py", label="Go to Data", icon="📄")
        st.stop()
    if design is None or not design.factors:
        st.info("Declare the factors on the **Design** page first.")
        st.page_link("pages/design.py", label="Go to Design", icon="🧩")
        st.stop()
    if need_outcome and design.outcome is None:
        st.info("This page needs an outcome: say on the **Design** page how a row counts as a "
                "deviation.")
        st.page_link("pages/design.py", label="Go to Design", icon="🧩")
        st.stop()
    try:
        results = _applied(st.session_state["results_token"], design.to_json(), frame, design)
    except AnalysisError as exc:
        st.error(str(exc))
        st.stop()
    return results, design


def cells_for(results: pd.DataFrame, design: Design, factors: Sequence[str],
              where: dict[str, list[str]] | None = None, *,
              with_outcome: bool = True) -> pd.DataFrame:
    """Cached :func:`analysis.cells.cell_table` of the active results."""
    where = {k: list(v) for k, v in (where or {}).items() if v}
    return _cells(st.session_state["results_token"], design.to_json(), tuple(factors),
                  repr(sorted(where.items())), with_outcome, results, where)


def subset_filter(design: Design, key: str, *, label: str = "Subset (applied first)"
                  ) -> dict[str, list[str]]:
    """Widgets to restrict rows to some factor values; returns ``{factor: [values]}``."""
    where: dict[str, list[str]] = {}
    with st.expander(label, expanded=False):
        st.caption("Keep only rows with the chosen values, e.g. one model or CoT = yes. "
                   "Leave a factor empty to keep all its values.")
        cols = st.columns(min(3, max(len(design.factors), 1)))
        for i, f in enumerate(design.factors):
            chosen = cols[i % len(cols)].multiselect(f.name, list(f.values),
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
