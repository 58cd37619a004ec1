"""The context bar above every analysis page, the export stamp, and the page guard.

``require_results`` (``ui/common.py``) opens the bar; ``subset_filter`` adds the subset
to it; ``figure_downloads`` and ``table_download`` stamp what they export with the
same context (``analysis/context.py``). ``app.py`` runs every page inside
:func:`page_guard`, so an unexpected exception becomes a readable message, never a
traceback box, and the session state (data, design, settings) is kept.
"""

from __future__ import annotations

import functools
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pandas as pd
import streamlit as st

from analysis.context import AnalysisContext, is_simulated
from analysis.design import Design
from analysis.safe_text import code_span, escape_markdown

__all__ = [
    "GUARD_MESSAGE", "clear_context", "current_context", "guarded_callback", "is_simulated",
    "note_subset", "page_guard", "show_context",
]


#: Per script run (each run executes in its own thread): the context and its slot.
_RUN = threading.local()

GUARD_MESSAGE = "This page stopped on an unexpected error"


def clear_context() -> None:
    """Forget the previous run's context (called at the start of every run)."""
    _RUN.context = None
    _RUN.slot = None


def current_context() -> AnalysisContext | None:
    """The context of the page being drawn, or None outside analysis pages."""
    return getattr(_RUN, "context", None)


@st.cache_resource(max_entries=8, show_spinner=False)
def _simulated(token: str, _results: pd.DataFrame) -> bool:
    """:func:`analysis.context.is_simulated` once per loaded table (its content token)."""
    return is_simulated(_results)


def _active_is_simulated() -> bool:
    """Whether the loaded table is simulated (the one rule: ``analysis.context``)."""
    results = st.session_state.get("results_frame")
    if results is None:
        return False
    token = st.session_state.get("results_token")
    return _simulated(str(token), results) if token else is_simulated(results)


def show_context(design: Design) -> AnalysisContext:
    """Draw the context bar (dataset, outcome, subset, SIMULATED) and remember it."""
    name = st.session_state.get("results_name", "")
    context = AnalysisContext(
        dataset=name, outcome=design.outcome.describe() if design.outcome else None,
        simulated=_active_is_simulated())
    _RUN.context = context
    _RUN.slot = st.empty()
    _draw()
    return context


def note_subset(where: dict[str, list[str]]) -> None:
    """Record the page's subset in the context (and redraw the bar)."""
    context = current_context()
    if context is None:
        return
    _RUN.context = context.with_subset(where)
    _draw()


def _draw() -> None:
    context, slot = current_context(), getattr(_RUN, "slot", None)
    if context is None or slot is None:
        return
    flag = ":red-badge[SIMULATED outcomes] " if context.simulated else ""
    slot.markdown(
        f"{flag}:gray-badge[data] {code_span(context.dataset)} &nbsp; :gray-badge[outcome] "
        f"{code_span(context.outcome or 'none')} &nbsp; :gray-badge[subset] "
        f"{code_span(context.subset_text())}",
        help="Every exported figure and table carries this context: a line under the "
             "figure, `workbench_*` columns in a CSV (docs/exports.md).")


def _show_error(exc: BaseException, where: str = "This page stopped") -> None:
    st.error(f"{where} on an unexpected error ({type(exc).__name__}: "
             f"{escape_markdown(exc)}). Your data, "
             "design and settings are kept: change a setting or open another page. If it "
             "happens again, please report it with the details below.")
    with st.expander("Details for a bug report"):
        st.code("".join(traceback.format_exception(exc)), language="text")


@contextmanager
def page_guard() -> Iterator[None]:
    """Turn an unexpected exception of a page into a message with the details folded.

    Streamlit's own control flow (``st.stop``, ``st.rerun``, page switches) derives from
    ``BaseException`` and passes through untouched. An error caught by
    :func:`guarded_callback` before the run is shown first.
    """
    clear_context()
    pending = st.session_state.pop("_callback_error", None)
    if pending is not None:
        _show_error(pending, "The last action stopped")
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - the last line of defence of a page
        _show_error(exc)


def guarded_callback(func: Callable[[], None]) -> Callable[[], None]:
    """A widget callback whose unexpected exception is shown by the next page run.

    Callbacks run before the page script, outside :func:`page_guard`.
    """
    @functools.wraps(func)
    def wrapper() -> None:
        try:
            func()
        except Exception as exc:  # noqa: BLE001 - shown by page_guard on this run
            st.session_state["_callback_error"] = exc
    return wrapper
