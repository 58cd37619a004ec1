"""The job the app runs once per large loaded table (issue 44 item 3), off the visitors'
threads: the Coverage page's count unit and, read while the worker holds the table, the
cell tables and BBQ scores the pages' first renders sum or show
(:func:`ui.inference_pool.count_unit_cells`; ``docs/performance.md``). Below
:mod:`ui.common` (which calls :func:`start_count_unit` from ``ensure_data`` and sums
:func:`fine_cells` in ``cells_for``); :mod:`ui.coverage` re-exports its names."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from types import SimpleNamespace

import pandas as pd
import streamlit as st

from analysis.design import Design

#: A structure that knows no item id: the design's prompt unit is counted meanwhile.
NO_STRUCTURE = SimpleNamespace(item_id=None, columns=())

__all__ = ["EARLY_COUNT_ROWS", "NO_STRUCTURE", "count_unit_job", "fine_cells", "in_first_order",
           "item_known", "load_job", "opened_result", "opened_value", "same_categories",
           "start_count_unit", "warm_imports"]


def fine_cells(results: pd.DataFrame, design: Design, columns: list[str], where: dict, *,
               outcome: bool = False) -> pd.DataFrame | None:
    """The cell table the count-unit job read with the count unit
    (:func:`ui.inference_pool.count_unit_cells`: every cell of the design's factors and
    the unit's columns, ``n`` its rows) when that job has finished and the table holds
    ``columns`` and every value ``where`` asks for; else None (the rows are counted).
    Counting from it gives the rows' counts (issue 44 item 3: at 1M rows of a benchmark
    whose prompts repeat, thousands of cells instead of the rows). With ``outcome``: the
    job's cells over the factors and the cluster with the outcome's counts (0/1 outcome),
    for :func:`ui.common.cells_for`."""
    from analysis.values import factor_values

    cells = getattr(load_job(results, design), "outcome_cells" if outcome else "cells", None)
    if cells is None or not set(columns) | set(where) <= set(cells.columns) or any(
            cells[f].dtype != results[f].dtype for f in design.names if f in cells):
        return None  # (not read from this applied table: its factors' categories)
    for column, wanted in where.items():  # a value no row has: the rows' own message
        if not set(map(str, wanted)) <= set(factor_values(cells[column])[1]):
            return None
    cluster = design.cluster
    if outcome and cluster in columns and cluster not in design.names:
        if isinstance(results[cluster].dtype, pd.CategoricalDtype):
            return cells if same_categories(cells[cluster], results[cluster]) else None
        return in_first_order(cells, cluster, where)
    return cells


def same_categories(cells: pd.Series, rows: pd.Series) -> bool:
    """Whether the job's cells code a categorical cluster as the rows do: the cell table
    of the rows codes a categorical by its categories as text in declared order
    (:func:`analysis.values.factor_codes`, unseen ones kept), so with the same texts in the
    same order and no missing value (``"(missing)"`` is added only where a counted row
    lacks one) the cells sum to the very same table (an uploaded Parquet file's
    dictionary-encoded cluster column, e.g. BBQ's ``template_id``: issue 44 item 3)."""
    if not isinstance(cells.dtype, pd.CategoricalDtype) or (rows.cat.codes.to_numpy() < 0).any():
        return False
    return [str(v) for v in cells.cat.categories] == [str(v) for v in rows.cat.categories]


def in_first_order(cells: pd.DataFrame, cluster: str, where: dict) -> pd.DataFrame | None:
    """The job's outcome cells of the subset ``where`` with the ``cluster``'s values in
    the order the rows give them: the cell table of the rows codes a text column by first
    appearance among the rows it counts (known outcome, in the subset), so the cells sum
    to the very same table only with that order (:data:`ui.inference_pool.FIRST_ROW`)."""
    from analysis import api
    from analysis.columns import N
    from ui.inference_pool import FIRST_ROW

    sub = api.subset_rows(cells, where=where)
    sub = sub[sub[N].to_numpy() > 0]
    if not len(sub):  # no known outcome in the subset: the rows say so
        return None
    order = sub.groupby(cluster, observed=True)[FIRST_ROW].min().sort_values()
    values = [str(v) for v in order.index]
    return sub.assign(**{cluster: pd.Categorical(sub[cluster].astype(str), categories=values,
                                                 ordered=True)})


def load_job(results: pd.DataFrame, design: Design | None = None) -> object | None:
    """What the load-time job (:func:`start_count_unit`) read for the applied table
    ``results`` and the pages' ``design`` (default: the session's, as
    :func:`ui.common.require_results` gives it), a :class:`ui.inference_pool.CountedFine`,
    once it has finished; else None (never waited for)."""
    if design is None:
        from analysis.names import clash_free

        frame, design = st.session_state.get("results_frame"), st.session_state.get("design")
        if frame is None or design is None:
            return None
        design = clash_free(frame.iloc[:0], design)[1]
    from ui import inference_pool

    job = inference_pool.job(_job_key(design))  # looked up, never submitted here
    value = getattr(job.result, "value", None) if job is not None and job.done else None
    return value if hasattr(value, "unit") else None


def count_unit_job(results: pd.DataFrame, design: Design, *, token: str | None = None
                    ) -> object | None:
    """The background job reading what a cell counts (submitted once per table and
    design: ``ui.inference_pool.submit`` returns the running or finished one), or None
    when the design already names the item id (nothing to read). ``token``: the table's
    (default: the session's ``results_token``; ``benchmarks/bench_app_pages.py`` submits
    it as the Data page does, outside a script run)."""
    if item_known(results, design) and len(results) < EARLY_COUNT_ROWS:
        return None  # nothing to read: the unit is known, the rows are few
    from ui import inference_pool

    design_json = design.to_json()
    return inference_pool.submit(_job_key(design, token), results,
                                 work=partial(inference_pool.design_work,
                                              function=inference_pool.count_unit_cells,
                                              design_json=design_json, text_codes=True))


def _job_key(design: Design, token: str | None = None) -> str:
    token = st.session_state.get("results_token", "") if token is None else token
    return f"{token}|coverage|{design.to_json()}"


def item_known(results: pd.DataFrame, design: Design) -> bool:
    item = (design.inferred or {}).get("item_id")
    return item is not None and item in results.columns


#: Tables from this many rows have the Coverage page's count unit read as soon as the
#: Data page shows them with a design (``start_count_unit``): at 1M rows it takes 3-5 s,
#: more than the page's wait; a smaller table is read within the wait when the page opens.
EARLY_COUNT_ROWS = 200_000


#: Session state: the (token, design) :func:`start_count_unit` last submitted or tried.
_TRIED = "table_job_tried"
#: Session state: the token of the first table the session had (what it opened on).
_OPENED = "table_job_opened"


def start_count_unit(applied_results: Callable[[Design], pd.DataFrame], *,
                     small: bool = False) -> None:
    """Submit the Coverage page's count-unit job (:func:`counted_for`) for the active
    table and design now, without waiting, so that it has finished in the background
    worker when the Coverage page opens (issue 44 item 3): the count unit and the cell
    table every coverage count of the page sums (:func:`fine_cells`). Every page calls it
    (:func:`ui.common.ensure_data`: a table loaded on the Data page, imported, prepared or
    restored from a link), and the Data page once the table is shown. Nothing for a
    table without factors, with a design that does not fit, or while the suggested design
    is still being inferred; the job is the one the Coverage page submits (the same
    applied table, design and key). A table under :data:`EARLY_COUNT_ROWS` rows only
    with ``small`` (the Data page's call, after its structure section has submitted the
    table's structure inference, which the worker then reads first): its job only when
    the design names no item id (:func:`count_unit_job`), and the statistics imports are
    warmed (:func:`warm_imports`) either way, unless it is the table the session opened
    on (a fresh server's first page, the bundled sample, imports no SciPy): the small
    table's first renders paid both (docs/performance.md, "Small tables").
    ``applied_results``: :func:`ui.common.applied_results` (the design applied to the
    active table, cached)."""
    from analysis.names import clash_free
    from ui.pending_design import PENDING

    ss = st.session_state
    frame, design = ss.get("results_frame"), ss.get("design")
    if frame is not None:
        ss.setdefault(_OPENED, ss.get("results_token"))
    if frame is None or design is None or not design.factors or ss.get(PENDING) \
            or (len(frame) < EARLY_COUNT_ROWS and not small):
        return
    tried = (ss.get("results_token"), design.to_json())
    if ss.get(_TRIED) == tried:  # once per session, table and design (a design that does
        return  # not fit would be applied again on every rerun: its error is not cached)
    ss[_TRIED] = tried
    from analysis.errors import AnalysisError

    try:  # the table the pages are given (applied once per table and design, cached)
        applied = applied_results(design)
    except AnalysisError:  # a design that does not fit: the pages say so
        return
    _, design, _ = clash_free(frame.iloc[:0], design)  # the design the pages are given
    count_unit_job(applied, design)  # (None: a small table whose design names its item id)
    if len(frame) >= EARLY_COUNT_ROWS or ss.get(_OPENED) != ss.get("results_token"):
        warm_imports()  # (not for the small table a session opened on, e.g. the bundled
        # sample: a fresh server's first page imports no SciPy, issue 32)


#: What a page still imports in the server once the load-time job computes the opening
#: results elsewhere: at 1M rows the Subgroups page's first render no longer runs a test
#: in the server, so the eCDF page's KS test (``analysis.ecdf.ks_tests``) paid SciPy's
#: statistics modules (0.8 s CPU, 2-4 s under load) within its first render (issue 44
#: item 3; docs/performance.md). At 10k rows the Subgroups page's first render paid them
#: and the REML fit's module of its headline over the facets (on by default up to
#: ``ui.measurement_error.HEADLINE_MAX_ROWS`` rows): 0.7-0.8 s of its 1.0-1.3 s CPU.
WARM_MODULES = ("scipy.stats", "analysis.variance_components")
_WARMED: list[bool] = []


def warm_imports() -> bool:
    """Import :data:`WARM_MODULES` in a daemon thread, once per process, while the visitor
    is on the Data page (as ``analysis.export.warm_up`` imports plotly for the first
    export); a page that needs them meanwhile waits for the import instead of repeating
    it. Returns whether the thread was started."""
    if _WARMED:
        return False
    _WARMED.append(True)
    import importlib
    import threading

    def run() -> None:
        for name in WARM_MODULES:
            importlib.import_module(name)

    threading.Thread(target=run, name="warm-imports", daemon=True).start()
    return True


def opened_value(results: pd.DataFrame, design: Design, name: str, arguments: str
                 ) -> tuple[bool, object]:
    """``(True, value)`` when the load-time job computed the ``ui.common.per_table`` step (of
    :func:`ui.disparity_job.disparity_openers`)
    ``name`` with ``arguments`` for this table and design, else ``(False, None)``."""
    table = _opened(results, design).get("per_table") or {}
    if (name, arguments) in table:
        return True, table[name, arguments]
    return False, None


def opened_result(results: pd.DataFrame, design: Design, key: tuple[str, str, str]
                  ) -> object | None:
    """The :class:`analysis.api.Result` the load-time job computed for the
    ``ui.common.analysis_result`` call ``key`` (``(name, options, inputs)``; of
    :func:`ui.disparity_job.disparity_openers`) on this table and design, else None."""
    return (_opened(results, design).get("results") or {}).get(key)


def _opened(results: pd.DataFrame, design: Design) -> dict:
    """What the load-time job computed for the pages' first renders (``CountedFine.
    disparity``) for this table and design, or an empty dict."""
    return getattr(load_job(results, design), "disparity", None) or {}
