"""What every page shares: the active data and design, cached steps (and, re-exported
from ``ui/widgets.py``, the subset filter, download buttons and page links).

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

import contextlib
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

import pandas as pd
import streamlit as st

from analysis.design import Design, apply_design
from analysis.errors import AnalysisError
from analysis.names import clash_free, rename_note
from ui.active import (
    active_frame,
    set_data,
    token_of,
)
from ui.context import show_context
from ui.widgets import figure_downloads, page_link, stop_on_error, subset_filter, table_download

__all__ = ["active_frame", "analysis_result", "applied_results", "cells_for", "ensure_data",
           "figure_downloads",
           "page_link", "per_table", "require_results", "set_data", "subset_filter",
           "table_download", "token_of", "warm_applied"]

T = TypeVar("T")


def ensure_data() -> pd.DataFrame | None:
    """The loaded table; a fresh session opens on the bundled sample, except when the
    session of a link could not be restored (``ui/session.py``): then that is said. A
    suggested design inferred in the background is adopted here once it is there, and a
    large table's Coverage count unit is submitted to the background worker
    (:func:`ui.table_job.start_count_unit`, once per table and design)."""
    from ui.pending_design import adopt_finished

    adopt_finished()
    if "restore_error" in st.session_state:
        st.warning(st.session_state["restore_error"])
    elif active_frame() is None and "data_error" not in st.session_state:
        from ui.data import load_default_sample  # the app opens on the sample

        load_default_sample()
    from ui.table_job import start_count_unit

    start_count_unit(applied_results)  # a large table's load-time job, on whichever page
    return active_frame()


@st.cache_resource(max_entries=4, show_spinner="Applying the design...")
def _applied(token: str, design_json: str, _frame: pd.DataFrame, _design: Design) -> pd.DataFrame:
    frame, design, _ = clash_free(_frame, _design)  # factors named like output columns
    return apply_design(frame, design)


@st.cache_resource(max_entries=32, show_spinner="Counting cells...")
def _cells(token: str, design_json: str, factors: tuple[str, ...], where: str,
           with_outcome: bool, _results: pd.DataFrame, _where: dict) -> pd.DataFrame:
    from analysis import api

    return api.cells(_results, factors=list(factors), where=_where or None,
                     with_outcome=with_outcome).table


def require_results(*, need_outcome: bool = True) -> tuple[pd.DataFrame, Design]:
    """The design applied to the active table, or a message and ``st.stop()``.

    Returns
    -------
    (results, design)
        ``results`` has categorical factor columns and, with an outcome, ``deviation``.
    """
    frame = ensure_data()
    design: Design | None = st.session_state.get("design")
    if frame is None:
        st.info("Load a results table on the **Data** page first.")
        page_link("pages/data.py", label="Go to Data", icon="📄")
        st.stop()
    from ui.pending_design import pending_notice

    pending_notice(stop=True)  # the suggested design is still being inferred
    if design is None or not design.factors:
        st.info("Declare the factors on the **Design** page first.")
        page_link("pages/design.py", label="Go to Design", icon="🧩")
        st.stop()
    if need_outcome and design.outcome is None:
        st.info("This page needs an outcome: say on the **Design** page how a row counts as a "
                "deviation.")
        page_link("pages/design.py", label="Go to Design", icon="🧩")
        st.stop()
    show_context(design)
    with stop_on_error():
        results = applied_results(design)
    _, design, renamed = clash_free(frame.iloc[:0], design)  # the names the results carry
    if renamed:
        st.caption(rename_note(renamed))
    return results, design


def applied_results(design: Design) -> pd.DataFrame:
    """The active table with ``design`` applied (cached); raises AnalysisError on mismatch."""
    frame = active_frame()
    return _applied(st.session_state["results_token"], design.to_json(), frame, design)


def warm_applied() -> None:
    """Apply the active design to the active table now (cached per table and design), so
    the first analysis page opened does not pay for it: the Data page calls this once the
    table is shown, as part of loading (0.4 s at 1M rows; docs/performance.md). A design
    that does not fit is left for the analysis pages to explain."""
    design: Design | None = st.session_state.get("design")
    if active_frame() is None or design is None or not design.factors:
        return
    with contextlib.suppress(AnalysisError):  # said by the analysis pages
        applied_results(design)


def cells_for(results: pd.DataFrame, design: Design, factors: Sequence[str],
              where: dict[str, list[str]] | None = None, *,
              with_outcome: bool = True) -> pd.DataFrame:
    """Cached :func:`analysis.api.cells` of the active results (summed from the cells
    the background job read at load when they cover them: :func:`ui.table_job.
    fine_cells`, the same counts)."""
    from ui.table_job import fine_cells

    where = {k: list(v) for k, v in (where or {}).items() if v}
    summable = set(factors) <= {*design.names, *([design.cluster] if with_outcome else [])}
    fine = fine_cells(results, design, list(factors), where, outcome=with_outcome) \
        if summable else None  # (a text column's order needs the cluster's first rows)
    return _cells(st.session_state["results_token"], design.to_json(), tuple(factors),
                  repr(sorted(where.items())), with_outcome,
                  results if fine is None else fine, where)


@st.cache_resource(max_entries=128, show_spinner=False)
def _per_table(token: str, design_json: str, name: str, arguments: str, _fn: Callable,
               _results: pd.DataFrame, _args: tuple, _kwargs: dict) -> object:
    return _fn(_results, *_args, **_kwargs)


def per_table(fn: Callable[..., T], results: pd.DataFrame, design: Design, *args: object,
              **kwargs: object) -> T:
    """``fn(results, *args, **kwargs)`` computed once per active table, design and
    arguments (told apart by their ``repr``), for a step that scans the rows of
    ``results`` (the design applied to the active table, :func:`require_results`): at 1M
    rows such a step costs 0.1-2 s on every rerun otherwise. The result is shared between
    reruns and sessions: read-only."""
    from ui.opening import step_key
    from ui.table_job import opened_value

    name, arguments = step_key(fn, *args, **kwargs)

    known, value = opened_value(results, design, name, arguments)  # by the load-time job
    if known:
        fn = partial(_given, value)
    return _per_table(st.session_state["results_token"], design.to_json(), name, arguments,
                      fn, results, args, kwargs)


def _given(value: T, *args: object, **kwargs: object) -> T:
    return value


@st.cache_resource(max_entries=16, show_spinner="Computing...")
def _result(token: str, design_json: str, name: str, options: str, inputs: str,
            _results: pd.DataFrame, _design: Design, _options: object,
            _cells: pd.DataFrame | None, _inputs: dict, _given: object = None) -> object:
    if _given is not None:  # computed by the load-time job (ui/disparity_job.py)
        return _given
    from analysis import api

    extra = {"cells": _cells} if _cells is not None else {}
    return getattr(api, name)(_results, _design, options=_options, applied=True, **extra,
                              **_inputs)


def analysis_result(name: str, results: pd.DataFrame, design: Design, options: object, *,
                    cells: pd.DataFrame | None = None, **inputs: object) -> object:
    """``analysis.api.<name>(results, design, options=options, **inputs)``: a page's one
    call of its analysis (``results`` the active table with the design applied), cached
    per table, design, options and inputs; ``cells``: the page's cached cell table of the
    rows analysed (:func:`cells_for`). The :class:`analysis.api.Result` is shared between
    reruns and sessions: read-only."""
    from ui.opening import result_key
    from ui.table_job import opened_result

    key = result_key(name, options, inputs)
    given = opened_result(results, design, key) if cells is None else None
    return _result(st.session_state["results_token"], design.to_json(), *key, results, design,
                   options, cells, inputs, given)
