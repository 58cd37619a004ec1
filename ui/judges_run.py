"""Run control of the Judges page: estimate, start a job, progress and cancel (logic in
judges/job.py).

Session-state keys: see ``ui/judges.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pandas as pd
import streamlit as st

from analysis.embedding import page_model
from judges.endpoints import require_cost_cap
from judges.errors import CacheError, JudgesError
from judges.fourstage import stage_counts
from judges.job import estimate_judge_run, make_judge_job, progress_text, run_summary
from judges.tasks import FrameJob
from ui.job_watch import stop_with_session
from ui.judges import Settings, provider_of
from ui.judges_tools import cache_problem
from ui.widgets import md

__all__ = ["launch", "progress_panel", "show_estimate", "start_job"]


def start_job(frame: pd.DataFrame, s: Settings, name: str) -> None:
    """Start a judge run in the background (a button callback)."""
    def make() -> FrameJob:
        provider = None if s.provider == "embedding" else provider_of(s)
        if provider is not None:
            require_cost_cap(provider.uses_server_key, s.max_cost)
        # a page never loads a visitor's path or hub name (analysis.embedding.page_model)
        model = page_model(s.model) if provider is None else None
        return make_judge_job(frame, provider, embedding_model=model,
                              concurrency=s.concurrency, cache_path=s.cache_path,
                              batch=s.batch, judge_config=s.config, max_cost_usd=s.max_cost)

    launch(make, name)


def launch(make: Callable[[], FrameJob], name: str) -> None:
    """Build the job with ``make()`` and start it; a setup error goes to ``judges_error``."""
    try:
        job = make()
    except JudgesError as exc:
        st.session_state["judges_error"] = str(exc)
        return
    st.session_state.pop("judges_error", None)
    st.session_state["judges_job"] = stop_with_session(job).start()
    st.session_state["judges_started"] = time.monotonic()
    st.session_state["judges_judged_name"] = name


@st.fragment(run_every=0.5)
def progress_panel() -> None:
    """Progress and cancel button of the running job; reruns the page when it ends."""
    job = st.session_state.get("judges_job")
    if job is None:
        return
    if job.finished:
        st.session_state.pop("judges_job")
        if job.error:
            st.session_state["judges_error"] = job.error
        else:
            st.session_state["judges_judged"] = job.judged
            st.session_state["judges_cancelled"] = job.cancelled
            started = st.session_state.pop("judges_started", None)
            st.session_state["judges_summary"] = run_summary(
                job, None if started is None else time.monotonic() - started)
        st.rerun(scope="app")
    fraction, text = progress_text(job.progress())
    st.progress(fraction, text=text)
    if job.monitor is not None:  # a batch run (judges.tasks.judge_batch_job)
        st.caption(job.monitor.snapshot().summary())
    if job.stats.waiting:  # a long Retry-After wait: what it waits for
        st.caption(md(job.stats.waiting))
    st.button("Cancel (keep what is done)", on_click=job.cancel, key="judges_cancel",
              disabled=job.cancelled)


def show_estimate(frame: pd.DataFrame, s: Settings) -> None:
    """Calls, tokens and cost before running."""
    counts = stage_counts(frame)
    if s.provider == "embedding":
        st.caption(f"{len(frame):,} rows: one cosine similarity each, offline, free.")
        return
    provider = provider_of(s)
    for warning in s.config.warnings(provider):
        st.warning(warning)
    try:
        est = estimate_judge_run(frame, provider, cache_path=s.cache_path, batch=s.batch,
                                 judge_config=s.config)
    except CacheError as exc:
        cache_problem(exc, "judges_reset_cache")
        return
    a, b = st.columns([2, 3])
    a.dataframe(counts, hide_index=True)
    b.dataframe(est.to_frame(), hide_index=True)
    if s.config.logprobs:
        b.caption("Log-probabilities (top 20 per token) add no billed tokens: the output "
                  "tokens above are unchanged. Replies cached without them count as calls.")
