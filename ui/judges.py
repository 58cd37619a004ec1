"""Input and settings of the Judges page (logic in judges/; run: ``ui/judges_run.py``,
results: ``ui/judges_results.py``).

Session-state keys (all namespaced ``judges_``): widgets ``judges_source``,
``judges_upload``, ``judges_provider``, ``judges_model_<provider>``, ``judges_base_url``,
``judges_concurrency``, ``judges_api_key`` (the password field: the key lives only in this
session's memory), ``judges_use_cache``, ``judges_batch``, ``judges_temperature``,
``judges_max_tokens``, ``judges_effort``, ``judges_max_cost``, ``judges_samples``,
``judges_both_orders`` (``ui/judges_samples.py``), ``judges_logprobs``,
``judges_similarity_threshold``, ``judges_reset_cache``, ``judges_run``, ``judges_cancel``,
``judges_send``, ``judges_download``, ``judges_unscored_only``; state ``judges_job`` (the running
:class:`judges.job.JudgeJob` or batch :class:`judges.tasks.FrameJob`), ``judges_judged`` and
``judges_judged_name`` (the last judged table), ``judges_summary`` (its run summary),
``judges_cancelled``, ``judges_error``, ``judges_sent``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from analysis.judge_stats import columns as C
from judges.errors import JudgesError
from judges.fourstage import empty_texts, load_fourstage, sample_path
from judges.judge import JudgeConfig
from judges.providers import PROVIDERS, REASONING_EFFORTS, ChatProvider, make_provider
from ui.session import user_cache_path
from ui.widgets import encoding_choice, md

__all__ = [
    "DEFAULT_MODELS", "PROVIDER_CHOICES", "SAMPLE_LABEL", "Settings", "load_input",
    "logprobs_unavailable", "provider_of", "settings",
]


SAMPLE_LABEL = "Illustrative sample (bundled)"
EMBEDDING_HELP = ("'bundled' (all-MiniLM-L6-v2, offline) or a model name the server's operator "
                  "lists (BIAS_WORKBENCH_EMBEDDING_MODELS); paths and hub names are not used "
                  "on the pages.")
PROVIDER_CHOICES = ("openai", "anthropic", "embedding")
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5",
                  "embedding": "bundled"}


@st.cache_data(max_entries=8, show_spinner="Reading the file...")
def _read(data: bytes, name: str, encoding: str = "utf-8") -> pd.DataFrame:
    return load_fourstage(data, name=name, allow_empty_texts=True, encoding=encoding)


def load_input() -> tuple[pd.DataFrame, str] | None:
    """The source radio and uploader; the validated table and its name, or None."""
    source = st.radio("Four-stage test file", [SAMPLE_LABEL, "Upload a file"], horizontal=True,
                      key="judges_source")
    if source == SAMPLE_LABEL:
        st.caption("Illustrative texts written for bias-workbench (not real model output): "
                   "4 stages, 4 sensitive factors, 2 fictional models under test.")
        data, name = sample_path().read_bytes(), sample_path().name
        encoding = "utf-8"
    else:
        upload = st.file_uploader("CSV, TSV, Parquet or JSON Lines with the four-stage columns",
                                  type=["csv", "tsv", "parquet", "jsonl", "json"],
                                  key="judges_upload")
        encoding = encoding_choice("judges_encoding")
        if upload is None:
            return None
        data, name = upload.getvalue(), upload.name
    try:
        frame = _read(data, name, encoding)
    except JudgesError as exc:
        st.error(md(str(exc)))
        return None
    empty = empty_texts(frame)
    if empty:
        st.info(f"{len(empty):,} of {len(frame):,} rows have an empty answer or story: they "
                f"are not sent, and their judgments are unscored ('{C.NO_ANSWER}').")
    return frame, name


@dataclass(frozen=True)
class Settings:
    """The judge chosen on the page."""

    provider: str
    model: str
    base_url: str | None
    concurrency: int
    use_cache: bool
    batch: bool = False
    config: JudgeConfig = JudgeConfig()
    max_cost: float | None = None
    similarity_threshold: float = C.SIMILARITY_THRESHOLD

    @property
    def cache_path(self) -> Path | None:
        """The reply cache file, or ``None`` without the cache."""
        return user_cache_path() if self.use_cache else None


def logprobs_unavailable(provider: str, model: str) -> str | None:
    """Why the chosen judge returns no token log-probabilities (``None``: it can)."""
    try:
        return make_provider(provider, model=model or "-").logprobs_unavailable()
    except JudgesError as exc:
        return str(exc)


def _logprobs_option(provider: str, model: str) -> bool:
    """The log-probabilities checkbox, disabled with the reason where the judge cannot."""
    reason = logprobs_unavailable(provider, model)
    on = st.checkbox("Probability-weighted scores (log-probabilities)", key="judges_logprobs",
                     disabled=reason is not None,
                     help="Asks for the probabilities of the score tokens 1-5 and adds "
                          "<metric>_expected = sum k p_k beside the sampled score (G-Eval, "
                          "Liu et al. 2023). No extra billed tokens; replies cached without "
                          "them are a different request and are asked again.")
    if reason is not None:
        st.caption(f"Log-probabilities are not available for {md(provider)}:{md(model)}: "
                   f"{md(reason)}.")
    return on and reason is None


def _request_settings(provider: str, model: str) -> tuple[JudgeConfig, float | None]:
    """Temperature, max tokens, reasoning effort, log-probabilities, cost cap, samples and
    both-orders widgets."""
    from ui.judges_samples import sampling_settings

    e1, e2, e3, e4 = st.columns(4)
    temp = e1.text_input("Temperature ('none': provider default)", "0",
                         key="judges_temperature").strip().lower()
    tokens = int(e2.number_input("Max tokens (0: 400, or 4000 for reasoning models)", 0,
                                 200_000, 0, step=100, key="judges_max_tokens"))
    effort = e3.selectbox("Reasoning effort (o-series, gpt-5)", ["none", *REASONING_EFFORTS],
                          key="judges_effort")
    cap = e4.number_input("Cost cap, USD (0: none)", 0.0, 1e6, 0.0, step=1.0,
                          key="judges_max_cost")
    try:
        temperature = None if temp in ("none", "default", "") else float(temp)
    except ValueError:
        st.error(md(f"Temperature must be a number or 'none', not {temp!r}: using 0."))
        temperature = 0.0
    samples, both_orders = sampling_settings()
    config = JudgeConfig(temperature=temperature, max_tokens=tokens or None,
                         reasoning_effort=None if effort == "none" else effort,
                         samples=samples, both_orders=both_orders,
                         logprobs=_logprobs_option(provider, model.strip()))
    return config, (float(cap) or None)


def settings() -> Settings:
    """Provider, model, base URL, concurrency, key and cache widgets."""
    c1, c2, c3 = st.columns([1, 2, 2])
    provider = c1.selectbox("Judge", PROVIDER_CHOICES, key="judges_provider")
    model = c2.text_input("Model", value=DEFAULT_MODELS[provider], key=f"judges_model_{provider}",
                          help=EMBEDDING_HELP if provider == "embedding" else None)
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
        config, cap = _request_settings(provider, model)
        threshold = C.SIMILARITY_THRESHOLD
    else:
        concurrency, use_cache, batch, config, cap = 1, False, False, JudgeConfig(), None
        threshold = float(c3.number_input(
            "Similarity threshold (below: deviation)", 0.0, 1.0, C.SIMILARITY_THRESHOLD,
            step=0.01, key="judges_similarity_threshold",
            help="0.62 is calibrated on the bundled illustrative sample; calibrate on a few "
                 "labelled rows of your own texts."))
    return Settings(provider, model.strip(), base_url, concurrency, use_cache or batch, batch,
                    config, cap, threshold)


def provider_of(s: Settings) -> ChatProvider:
    """The chosen LLM judge, with the key the rules allow (``ui.judges_tools.chosen_provider``:
    the typed key, or the server's when Base URL is empty)."""
    from ui.judges_tools import chosen_provider

    return chosen_provider(s.provider, s.model, s.base_url, "judges_api_key")
