"""Helpers of the Judges page: input, settings, run control, results (logic in judges/).

Session-state keys (all namespaced ``judges_``): widgets ``judges_source``,
``judges_upload``, ``judges_provider``, ``judges_model_<provider>``, ``judges_base_url``,
``judges_concurrency``, ``judges_api_key`` (the password field: the key lives only in this
session's memory), ``judges_use_cache``, ``judges_batch``, ``judges_run``, ``judges_cancel``,
``judges_send``, ``judges_download``; state ``judges_job`` (the running
:class:`judges.job.JudgeJob`), ``judges_judged`` and ``judges_judged_name`` (the last
judged table), ``judges_cancelled``, ``judges_error``, ``judges_sent``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import streamlit as st

from judges import columns as C
from judges.agreement import human_pairs
from judges.batch import BATCH_DISCOUNT
from judges.cache import ReplyCache, default_cache_path
from judges.cost import PriceTable
from judges.errors import JudgesError
from judges.fourstage import load_fourstage, sample_path, stage_counts
from judges.job import JudgeJob
from judges.judge import estimate_run
from judges.metrics import stage_metrics, unscored_reasons
from judges.providers import PROVIDERS, make_provider
from judges.runner import RunConfig
from judges.tasks import judge_batch_job
from judges.to_results import to_results
from pages._common import set_data, token_of
from pages._judges_jobs_ui import agreement_table

SAMPLE_LABEL = "Illustrative sample (bundled)"
PROVIDER_CHOICES = ("openai", "anthropic", "embedding")
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5",
                  "embedding": "bundled"}
#: Columns shown when browsing judged rows.
BROWSE = [C.ID, C.STAGE, C.SENSITIVE_FACTOR, C.SCENARIO, C.MODEL, *C.METRICS, C.SIMILARITY,
          *(C.explanation_column(m) for m in C.METRICS), C.UNSCORED_REASON]


@st.cache_data(max_entries=8, show_spinner="Reading the file...")
def _read(data: bytes, name: str) -> pd.DataFrame:
    return load_fourstage(data, name=name)


def load_input() -> tuple[pd.DataFrame, str] | None:
    """The source radio and uploader; the validated table and its name, or None."""
    source = st.radio("Four-stage test file", [SAMPLE_LABEL, "Upload a file"], horizontal=True,
                      key="judges_source")
    if source == SAMPLE_LABEL:
        st.caption("Illustrative texts written for bias-workbench (not real model output): "
                   "4 stages, 4 sensitive factors, 2 fictional models under test.")
        data, name = sample_path().read_bytes(), sample_path().name
    else:
        upload = st.file_uploader("CSV, TSV, Parquet or JSON Lines with the four-stage columns",
                                  type=["csv", "tsv", "parquet", "jsonl", "json"],
                                  key="judges_upload")
        if upload is None:
            return None
        data, name = upload.getvalue(), upload.name
    try:
        return _read(data, name), name
    except JudgesError as exc:
        st.error(str(exc))
        return None


def is_judged(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` already holds judge output (a ``judge`` column with values)."""
    return C.JUDGE in frame.columns and frame[C.JUDGE].fillna("").astype(str).str.len().gt(0).any()


@dataclass(frozen=True)
class Settings:
    """The judge chosen on the page."""

    provider: str
    model: str
    base_url: str | None
    concurrency: int
    use_cache: bool
    batch: bool = False


def settings() -> Settings:
    """Provider, model, base URL, concurrency, key and cache widgets."""
    c1, c2, c3 = st.columns([1, 2, 2])
    provider = c1.selectbox("Judge", PROVIDER_CHOICES, key="judges_provider")
    model = c2.text_input("Model", value=DEFAULT_MODELS[provider], key=f"judges_model_{provider}")
    base_url = None
    if provider != "embedding":
        base_url = c3.text_input("Base URL (optional: Ollama, vLLM, llama.cpp ...)",
                                 key="judges_base_url").strip() or None
        d1, d2, d3 = st.columns([1, 2, 2])
        concurrency = int(d1.number_input("Concurrency", 1, 256, 8, key="judges_concurrency"))
        d2.text_input(f"API key (or {PROVIDERS[provider].env_key} in env/secrets)",
                      type="password", key="judges_api_key",
                      help="Kept in this browser session's memory only; never saved.")
        use_cache = d3.checkbox("Use the reply cache", value=True, key="judges_use_cache")
        batch = d3.checkbox("Batch API (half price, results within 24 h)", key="judges_batch",
                            help="Batch ids are kept in the reply cache: a closed page picks "
                                 "them up when you run again (see also Answers & agreement).")
    else:
        concurrency, use_cache, batch = 1, False, False
    return Settings(provider, model.strip(), base_url, concurrency, use_cache or batch, batch)


def api_key(provider: str) -> str | None:
    """The key: password field, then ``st.secrets``, then the environment."""
    env = PROVIDERS[provider].env_key
    typed = st.session_state.get("judges_api_key")
    if typed:
        return typed
    try:
        if env in st.secrets:
            return str(st.secrets[env])
    except Exception:  # noqa: BLE001 - no or malformed secrets file: fall back to env
        pass
    return os.environ.get(env) or None


def show_estimate(frame: pd.DataFrame, s: Settings) -> None:
    """Calls, tokens and cost before running."""
    counts = stage_counts(frame)
    if s.provider == "embedding":
        st.caption(f"{len(frame):,} rows: one cosine similarity each, offline, free.")
        return
    provider = make_provider(s.provider, model=s.model, base_url=s.base_url)
    cache = ReplyCache(default_cache_path()) if s.use_cache else None
    try:
        est = estimate_run(frame, provider, prices=PriceTable.load(), cache=cache)
    finally:
        if cache is not None:
            cache.close()
    if s.batch and est.cost_usd is not None:
        est = replace(est, cost_usd=est.cost_usd * BATCH_DISCOUNT)
    a, b = st.columns([2, 3])
    a.dataframe(counts, hide_index=True)
    b.dataframe(est.to_frame(), hide_index=True)


def start_job(frame: pd.DataFrame, s: Settings, name: str) -> None:
    """Start a judge run in the background (a button callback)."""
    try:
        if s.provider == "embedding":
            job = JudgeJob(frame, embedding_model=s.model)
        else:
            provider = make_provider(s.provider, model=s.model, base_url=s.base_url,
                                     api_key=api_key(s.provider))
            _check_ready_unless_cached(frame, provider, s.use_cache)
            if s.batch:
                st.session_state["judges_job"] = judge_batch_job(frame, provider).start()
                st.session_state["judges_judged_name"] = name
                st.session_state.pop("judges_error", None)
                return
            job = JudgeJob(frame, provider=provider, run_config=RunConfig(
                concurrency=s.concurrency), cache_path=default_cache_path() if s.use_cache
                else None)
    except JudgesError as exc:
        st.session_state["judges_error"] = str(exc)
        return
    st.session_state.pop("judges_error", None)
    st.session_state["judges_job"] = job.start()
    st.session_state["judges_judged_name"] = name


def _check_ready_unless_cached(frame: pd.DataFrame, provider, use_cache: bool) -> None:
    """Raise the provider's setup error unless every judgment is already cached."""
    try:
        provider.check_ready()
    except JudgesError:
        if not use_cache:
            raise
        cache = ReplyCache(default_cache_path())
        try:
            if estimate_run(frame, provider, cache=cache).calls:
                raise
        finally:
            cache.close()


def progress_text(job: JudgeJob) -> tuple[float, str]:
    """Progress bar fraction and caption."""
    p = job.progress()
    cost = f"${p.cost_usd:,.4f}" + (" (some replies unpriced)" if p.unpriced else "")
    text = (f"{p.done:,} / {p.total:,} judged · {p.unscored:,} unscored · {p.cached:,} cached · "
            f"{p.input_tokens + p.output_tokens:,} tokens · {cost}")
    return (p.done / p.total if p.total else 1.0), text


@st.fragment(run_every=0.5)
def progress_panel() -> None:
    """Progress and cancel button of the running job; reruns the page when it ends."""
    job: JudgeJob | None = st.session_state.get("judges_job")
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
    fraction, text = progress_text(job)
    st.progress(fraction, text=text)
    if getattr(job, "monitor", None) is not None:  # a batch run (judges.tasks.FrameJob)
        st.caption(job.monitor.snapshot().summary())
    st.button("Cancel (keep what is done)", on_click=job.cancel, key="judges_cancel",
              disabled=job.cancelled)


def send_to_analysis(judged: pd.DataFrame, name: str) -> None:
    """Make the judged scores the active results table and design (a button callback)."""
    results, design = to_results(judged)
    set_data(results, f"{name} (judge scores)", token_of(results), design)
    st.session_state["judges_sent"] = f"{name} (judge scores)"


def show_results(judged: pd.DataFrame, name: str) -> None:
    """Stage metrics, unscored reasons, judged rows, download and send to analysis."""
    st.subheader("Stage metrics")
    st.caption("share_fair: stages 1 and 4 share of ICS 3-5, stage 3 share of SBAS 4-5; "
               "stage 2: the three consistency scores (mean, and share at or above 3).")
    st.dataframe(stage_metrics(judged), hide_index=True)
    reasons = unscored_reasons(judged)
    if len(reasons):
        st.warning(f"{int(reasons[C.N_ROWS].sum()):,} judgments are unscored.")
        st.dataframe(reasons, hide_index=True)
    pairs = human_pairs(judged)
    if pairs:  # human labels (human_<metric> columns): agreement, judges/agreement.py
        st.subheader("Agreement with human labels")
        st.dataframe(agreement_table(judged, pairs, "bootstrap"), hide_index=True)
    st.subheader("Judged rows")
    st.dataframe(judged[[c for c in BROWSE if c in judged.columns]], hide_index=True)
    c1, c2 = st.columns(2)
    c1.download_button("Download the judged file (CSV)", judged.to_csv(index=False).encode(),
                       file_name=f"{Path(name).stem}_judged.csv", mime="text/csv",
                       key="judges_download", on_click="ignore")
    c2.button("Send to analysis", key="judges_send", on_click=send_to_analysis,
              args=(judged, name), type="primary")
    if st.session_state.get("judges_sent"):
        st.success(f"**{st.session_state['judges_sent']}** is now the active results table "
                   "with a ready design (outcome: deviation = score below the stage's "
                   "threshold). Open the **Data** and **Design** pages to continue.")
