"""Run control of the Judges page: start a job, progress and cancel (logic in judges/job.py).

Session-state keys: see ``ui/judges.py``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from judges.errors import JudgesError
from judges.job import make_judge_job, progress_text
from judges.providers import make_provider
from ui.judges import Settings
from ui.judges_tools import api_key


def start_job(frame: pd.DataFrame, s: Settings, name: str) -> None:
    """Start a judge run in the background (a button callback)."""
    try:
        provider = None if s.provider == "embedding" else make_provider(
            s.provider, model=s.model, base_url=s.base_url,
            api_key=api_key(s.provider, "judges_api_key"))
        job = make_judge_job(frame, provider, embedding_model=s.model,
                             concurrency=s.concurrency, cache_path=s.cache_path,
                             batch=s.batch)
    except JudgesError as exc:
        st.session_state["judges_error"] = str(exc)
        return
    st.session_state.pop("judges_error", None)
    st.session_state["judges_job"] = job.start()
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
        st.rerun(scope="app")
    fraction, text = progress_text(job.progress())
    st.progress(fraction, text=text)
    if job.monitor is not None:  # a batch run (judges.tasks.judge_batch_job)
        st.caption(job.monitor.snapshot().summary())
    st.button("Cancel (keep what is done)", on_click=job.cancel, key="judges_cancel",
              disabled=job.cancelled)
