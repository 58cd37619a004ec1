"""Jobs, results and provider batches of the Answers & agreement page (logic in judges/).

Session-state keys: ``tools_<section>_job`` (a running :class:`judges.tasks.FrameJob`),
``tools_<section>_out`` (its finished table), ``tools_<section>_error``, and
``tools_batches_...`` for the batch status section.
"""

from __future__ import annotations

import asyncio

import pandas as pd
import streamlit as st

from analysis.export import table_bytes
from analysis.judge_stats.names import human_pairs
from judges.batch import BatchStore, cancel_batch, refresh_batches
from judges.cache import ReplyCache
from judges.endpoints import EndpointRefused
from judges.errors import CacheError, JudgesError
from judges.providers import ChatProvider
from ui.job_watch import stop_with_session
from ui.judges_tools import agreement_pairs, cache_problem, chosen_provider, table_input
from ui.session import user_cache_path
from ui.widgets import md

__all__ = [
    "agreement_tab", "agreement_table", "batches_panel", "download", "job_panel", "start",
]


def start(key: str, make_job, *args, **kwargs) -> None:
    """Start ``make_job(*args, **kwargs)`` (a :class:`judges.tasks.FrameJob`) as section
    ``key``'s job (a button callback: values come in as arguments, never from globals)."""
    try:
        if any(isinstance(a, ChatProvider) and a.uses_server_key for a in args):
            raise EndpointRefused(
                "The runs of this page have no cost cap, so they cannot use the server's API "
                "key: enter your own key under 'API keys'.")
        job = stop_with_session(make_job(*args, **kwargs))
        st.session_state[f"tools_{key}_job"] = job.start()
        st.session_state.pop(f"tools_{key}_error", None)
    except JudgesError as exc:
        st.session_state[f"tools_{key}_error"] = str(exc)


def job_panel(key: str) -> None:
    """Progress and cancel of section ``key``'s job; its output when finished."""
    if f"tools_{key}_error" in st.session_state:
        st.error(md(st.session_state[f"tools_{key}_error"]))

    @st.fragment(run_every=0.5)
    def panel() -> None:
        job = st.session_state.get(f"tools_{key}_job")
        if job is None:
            return
        if job.finished:
            del st.session_state[f"tools_{key}_job"]
            if job.error:
                st.session_state[f"tools_{key}_error"] = job.error
            else:
                st.session_state[f"tools_{key}_out"] = job.output
            st.rerun(scope="app")
        p = job.progress()
        st.progress(p.done / p.total if p.total else 1.0,
                    text=f"{p.done:,} / {p.total:,} done · {p.unscored:,} without a result · "
                         f"{p.cached:,} cached · ${p.cost_usd:,.4f}")
        if job.monitor is not None and job.monitor.statuses:
            st.caption(job.monitor.snapshot().summary())
        if job.stats.waiting:
            st.caption(md(job.stats.waiting))
        st.button("Stop (keep what is done)", on_click=job.cancel, key=f"tools_{key}_cancel")

    panel()


@st.cache_data(max_entries=16, show_spinner="Computing agreement...")
def agreement_table(frame: pd.DataFrame, pairs: list[tuple[str, str]], ci: str) -> pd.DataFrame:
    """``analysis.api.judge_agreement`` of the pairs (its table), cached per table and choice."""
    from analysis import api

    return api.judge_agreement(frame, pairs, ci=ci).table


def download(table: pd.DataFrame, name: str, key: str) -> None:
    """A CSV download button."""
    st.download_button("Download (CSV)", table_bytes(table), file_name=name,
                       mime="text/csv", key=f"tools_{key}_download", on_click="ignore")


def batches_panel() -> None:
    """Stored provider batches: list, collect ended ones into the cache, cancel one."""
    try:
        _batches(user_cache_path())
    except CacheError as exc:
        cache_problem(exc, "tools_reset_cache_batches")
    except JudgesError as exc:  # e.g. a stored batch's endpoint this server may not call
        st.error(md(str(exc)))


def _batches(path) -> None:
    with BatchStore(path) as store:
        table = store.table(open_only=not st.checkbox("Show collected batches",
                                                      key="tools_batches_all"))
        open_ids = [b.batch_id for b in store.batches(open_only=True)]
    st.dataframe(table, hide_index=True)
    c1, c2 = st.columns(2)
    if c1.button("Check and collect now", key="tools_batches_refresh", disabled=not open_ids):
        with ReplyCache(path) as cache, BatchStore(path) as store:
            done = asyncio.run(refresh_batches(store, cache, _stored_provider))
        st.session_state["tools_batches_note"] = (
            f"{sum(s.ended for s in done)} of {len(done)} open batch(es) ended and were "
            "collected into the cache: run the same task again to use them.")
        st.rerun()
    chosen = c2.selectbox("Open batch", open_ids, key="tools_batches_pick")
    if chosen and c2.button("Cancel this batch", key="tools_batches_cancel"):
        with BatchStore(path) as store:
            asyncio.run(cancel_batch(store, _stored_provider(store.get(chosen)), chosen))
        st.rerun()
    if "tools_batches_note" in st.session_state:
        st.success(st.session_state["tools_batches_note"])


def _stored_provider(stored) -> ChatProvider:
    return chosen_provider(stored.api, stored.model, stored.endpoint)


def agreement_tab() -> None:
    """The Agreement tab: a judged file with human labels -> agreement per metric and stage."""
    st.caption("Pearson r, Spearman rho, Kendall tau and quadratic-weighted kappa with 95% "
               "intervals, per stage and overall. Human labels: columns `human_<metric>`.")
    frame = table_input("agree", "Judged file with human labels",
                           {"Judged file (Judges page)": st.session_state.get("judges_judged")})
    if frame is not None:
        found = human_pairs(frame)
        numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
        c1, c2, c3 = st.columns(3)
        every = c1.checkbox(f"Every human label found ({len(found)})", bool(found),
                            key="tools_agree_every", disabled=not found)
        judge = c2.selectbox("Judge column", numeric, index=None, placeholder="choose...",
                             key="tools_agree_judge")
        human = c3.selectbox("Human (or second judge) column", numeric, index=None,
                             placeholder="choose...", key="tools_agree_human")
        ci = st.radio("Intervals", ["bootstrap", "analytic", "none"], horizontal=True,
                      key="tools_agree_ci")
        pairs, problem = agreement_pairs(found, every, judge, human)
        if problem:
            st.info(md(problem))
        else:
            try:
                table = agreement_table(frame, pairs, ci)
                st.dataframe(table, hide_index=True)
                download(table, "agreement.csv", "agree")
            except JudgesError as exc:
                st.error(md(str(exc)))
