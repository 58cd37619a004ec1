"""Input and settings of the Judges page (logic in judges/; run: ``_judges_run_ui.py``,
results: ``_judges_results_ui.py``).

Session-state keys (all namespaced ``judges_``): widgets ``judges_source``,
``judges_upload``, ``judges_provider``, ``judges_model_<provider>``, ``judges_base_url``,
``judges_concurrency``, ``judges_api_key`` (the password field: the key lives only in this
session's memory), ``judges_use_cache``, ``judges_batch``, ``judges_run``, ``judges_cancel``,
``judges_send``, ``judges_download``; state ``judges_job`` (the running
:class:`judges.job.JudgeJob` or batch :class:`judges.tasks.FrameJob`), ``judges_judged`` and
``judges_judged_name`` (the last judged table), ``judges_cancelled``, ``judges_error``,
``judges_sent``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from judges.cache import default_cache_path
from judges.errors import JudgesError
from judges.fourstage import load_fourstage, sample_path, stage_counts
from judges.job import estimate_judge_run
from judges.providers import PROVIDERS, make_provider
from ui.widgets import md

SAMPLE_LABEL = "Illustrative sample (bundled)"
PROVIDER_CHOICES = ("openai", "anthropic", "embedding")
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5",
                  "embedding": "bundled"}


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
        st.error(md(str(exc)))
        return None


@dataclass(frozen=True)
class Settings:
    """The judge chosen on the page."""

    provider: str
    model: str
    base_url: str | None
    concurrency: int
    use_cache: bool
    batch: bool = False

    @property
    def cache_path(self) -> Path | None:
        """The reply cache file, or ``None`` without the cache."""
        return default_cache_path() if self.use_cache else None


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


def show_estimate(frame: pd.DataFrame, s: Settings) -> None:
    """Calls, tokens and cost before running."""
    counts = stage_counts(frame)
    if s.provider == "embedding":
        st.caption(f"{len(frame):,} rows: one cosine similarity each, offline, free.")
        return
    provider = make_provider(s.provider, model=s.model, base_url=s.base_url)
    est = estimate_judge_run(frame, provider, cache_path=s.cache_path, batch=s.batch)
    a, b = st.columns([2, 3])
    a.dataframe(counts, hide_index=True)
    b.dataframe(est.to_frame(), hide_index=True)
