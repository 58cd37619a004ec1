"""The pages' side of the background structure inference (``ui/inference_pool.py``).

An upload (or a large file, or a table whose structure the Data page shows) submits its
inference to the pool and waits at most ``BIAS_WORKBENCH_INFERENCE_WAIT`` seconds
(default 2): a small table gets its suggested design at once, as before. A slower one
becomes the active table with a provisional design (the suggested outcome, no factors)
and the session key :data:`PENDING` (its token); every page then says "still working"
with the seconds and pair tests so far, refreshes itself every half second, and adopts
the suggested design when it is there (unless the visitor declared one meanwhile). The
visitor's own script thread is never busy with the inference, and no other visitor's is.

Session-state keys: ``_design_pending`` (the token), ``_design_provisional`` (the
provisional design's JSON), ``structure_error`` (why the last inference gave nothing).
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Callable

import pandas as pd
import streamlit as st

from analysis.design import Design, suggest_outcome
from ui import inference_pool

__all__ = ["PENDING", "WAIT_ENV", "adopt_finished", "job_notice", "pending_notice",
           "progress_text", "structure_job", "suggested_design", "wait_seconds"]

PENDING = "_design_pending"
_PROVISIONAL = "_design_provisional"
#: Seconds an upload waits for its inference before the page says it is still working.
WAIT_ENV = "BIAS_WORKBENCH_INFERENCE_WAIT"


def wait_seconds() -> float:
    """:data:`WAIT_ENV` (default 2 s; 0: never wait)."""
    try:
        return max(float(os.environ.get(WAIT_ENV, "2")), 0.0)
    except ValueError:
        return 2.0


def structure_job(token: str, frame: pd.DataFrame) -> inference_pool.Job:
    """The table's inference job (started if needed), after waiting :func:`wait_seconds`."""
    job = inference_pool.submit(token, frame)
    job.wait(wait_seconds())
    return job


def _fallback(frame: pd.DataFrame) -> Design:
    """The provisional design: the suggested outcome (cheap), no factors."""
    return Design(outcome=suggest_outcome(frame))


def suggested_design(frame: pd.DataFrame, token: str) -> Design:
    """The suggested design of a table being loaded (``ui.data.starting_design``): the
    pool's when it is there within :func:`wait_seconds`, else a provisional one, with
    :data:`PENDING` set so that the pages adopt the suggestion when it arrives."""
    ss = st.session_state
    ss.pop("structure_error", None)
    job = structure_job(token, frame)
    if job.done:
        ss.pop(PENDING, None)
        return _finished_design(job, frame)
    design = _fallback(frame)
    ss[PENDING], ss[_PROVISIONAL] = token, design.to_json()
    return design


def _finished_design(job: inference_pool.Job, frame: pd.DataFrame) -> Design:
    result = job.result
    if result is None or result.design is None:
        st.session_state["structure_error"] = (
            f"No design was suggested: {result.error if result else 'no result'}. The "
            "table is loaded; declare its factors on the Design page.")
        return _fallback(frame)
    return result.design


def adopt_finished() -> None:
    """When the pending inference of the active table has finished: its suggested design
    becomes the design (if the provisional one is still in force), the pages' widgets are
    rebuilt. Called at the top of every page (``ui.common.ensure_data``); it also lets
    the garbage collector see again what the waiting boxes' refreshes froze
    (:func:`job_notice`)."""
    _thaw()
    ss = st.session_state
    token = ss.get(PENDING)
    if token is None:
        return
    job = inference_pool.job(token)
    if token != ss.get("results_token") or job is None:
        ss.pop(PENDING, None)
        return
    if not job.done:
        return
    ss.pop(PENDING, None)
    current = ss.get("design")
    provisional = ss.pop(_PROVISIONAL, None)
    # a prepared table's provisional design carries the Prepare recipe (ui/prepare.py):
    # still provisional when it is the provisional one with a recipe; the recipe is kept
    recipe = tuple(current.recipe) if current is not None and current.recipe else ()
    if current is None or (current.with_recipe(()) if recipe else current
                           ).to_json() == provisional:
        adopted = _finished_design(job, ss["results_frame"])
        ss["design"] = adopted.with_recipe(recipe) if recipe else adopted
        ss["design_rev"] = ss.get("design_rev", 0) + 1


def progress_text(job: inference_pool.Job) -> str:
    """What the page says while ``job`` runs or waits for a worker."""
    from analysis.structure import MAX_PAIR_CHECKS, TIME_BUDGET

    if not job.running and not job.done:
        ahead = inference_pool.waiting_before(job)
        return (f"Waiting to read the table's structure: {ahead} other table(s) of this "
                "server are being read first. This page refreshes by itself.")
    return (f"Reading the table's structure in the background: {job.elapsed():.0f} s so "
            f"far, {job.pair_tests():,} of at most {MAX_PAIR_CHECKS:,} pair tests (it stops "
            f"after {TIME_BUDGET:g} s and returns what it found). The table is loaded; the "
            "suggested design follows when it is done, and this page refreshes by itself.")


def pending_notice(*, stop: bool) -> bool:
    """While the active table's inference runs: the progress (refreshed every half second,
    the page rerun when it is done) and, with ``stop``, ``st.stop()``. True while pending."""
    adopt_finished()
    token = st.session_state.get(PENDING)
    job = inference_pool.job(token) if token else None
    if job is None:
        return False
    job_notice(job)
    if stop:
        st.stop()
    return True


#: Whether a waiting box's refresh froze the heap since the last full run thawed it.
_FROZEN: list[bool] = []
_FREEZE_LOCK = threading.Lock()


def _in_fragment_rerun() -> bool:
    """Whether this script run is a fragment's own rerun (not a full run of the page)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return bool(ctx is not None and getattr(ctx, "fragment_ids_this_run", None))


def _freeze_for_the_refresh() -> None:
    """Before a waiting box's refresh ends, Streamlit runs ``gc.collect(2)``
    (``runner.postScriptGC``): about 0.1 s of CPU for the ~190k objects of the imported
    modules (streamlit, pandas, scipy, plotly, statsmodels), whatever the table's size,
    twice a second per box while a job runs. In a fragment-only rerun the objects alive now
    are moved out of the collector's sight (``gc.freeze``); the next full page run of any
    session gives them back (:func:`_thaw`, from :func:`adopt_finished`) and its own
    collection sees everything, so garbage is collected later, never kept."""
    if _in_fragment_rerun():  # (the box drawn in a full run: that run collects as before)
        with _FREEZE_LOCK:
            gc.freeze()
            _FROZEN[:] = [True]


def _thaw() -> None:
    """Undo :func:`_freeze_for_the_refresh` (nothing when no refresh froze the heap)."""
    with _FREEZE_LOCK:
        if _FROZEN:
            _FROZEN.clear()
            gc.unfreeze()


def job_notice(job: inference_pool.Job | None,
               text: Callable[[inference_pool.Job], str] = progress_text) -> None:
    """The progress of ``job`` (``text(job)``) in a fragment that reruns the page when it is
    done (or gone). Each refresh (every half second) is a fragment-only script run that
    draws this box alone (~2 kB to the browser) and costs a few ms of CPU
    (:func:`_freeze_for_the_refresh`); once the job is done the page's full run draws no
    box, so the refreshes stop."""

    @st.fragment(run_every=0.5)
    def _watch() -> None:
        if job is None or job.done:
            st.rerun(scope="app")
        _freeze_for_the_refresh()
        st.info(text(job), icon="⏳")

    _watch()
