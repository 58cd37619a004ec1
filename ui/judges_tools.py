"""Helpers of the Answers & agreement page: inputs, API keys, model settings, downloads.

Session-state keys (all namespaced ``tools_``): ``tools_key_<provider>`` (API keys typed on
the page, kept in this session's memory only) and ``tools_<section>_...`` widgets. Jobs, results
and batches: ``ui/judges_jobs.py``. No statistics here: everything is in judges/.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from judges.batch import BatchConfig
from judges.cache import move_aside, optional_cache
from judges.errors import CacheError
from judges.providers import PROVIDERS, ChatProvider, page_provider
from judges.runner import RunConfig
from ui.session import user_cache_path
from ui.widgets import encoding_choice, md

__all__ = [
    "DEFAULT_MODELS", "Model", "agreement_pairs", "api_keys", "cache_problem",
    "chosen_provider", "estimate", "model_settings", "numbers", "read_table", "run_config",
    "server_key", "table_input",
]


DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


@st.cache_data(max_entries=16, show_spinner="Reading the file...")
def read_table(data: bytes, name: str, encoding: str = "utf-8") -> pd.DataFrame:
    """An uploaded table (:func:`analysis.io.load_results`), cached per content."""
    from analysis.io import load_results

    return load_results(data, name=name, encoding=encoding)


def table_input(key: str, label: str, offers: dict[str, pd.DataFrame | None]) -> pd.DataFrame:
    """A source radio (tables offered by this session, or an upload); the table or None."""
    choices = [k for k, v in offers.items() if v is not None] + ["Upload a file"]
    source = st.radio(label, choices, horizontal=True, key=f"tools_{key}_source")
    if source != "Upload a file":
        return offers[source]
    upload = st.file_uploader("CSV, TSV, Parquet or JSON Lines", key=f"tools_{key}_upload",
                              type=["csv", "tsv", "parquet", "jsonl", "json"])
    encoding = encoding_choice(f"tools_{key}_encoding")
    if upload is None:
        return None
    try:
        return read_table(upload.getvalue(), upload.name, encoding)
    except ValueError as exc:
        st.error(md(str(exc)))
        return None


def server_key(provider: str) -> str | None:
    """The server's own key of ``provider``: ``st.secrets``, then the environment."""
    env = PROVIDERS[provider].env_key
    try:
        if env in st.secrets:
            return str(st.secrets[env])
    except Exception:  # noqa: BLE001 - no or malformed secrets file
        pass
    return os.environ.get(env) or None


def chosen_provider(name: str, model: str, base_url: str | None,
                    field: str | None = None) -> ChatProvider:
    """The provider a visitor chose, with the key the rules allow
    (:func:`judges.providers.page_provider`): the password field (``field``, default
    ``tools_key_<name>``; the Judges page passes ``judges_api_key``), else the server's
    key (:func:`server_key`) when Base URL is empty. Endpoints outside the operator's
    allow-list are refused before any connection."""
    typed = st.session_state.get(field or f"tools_key_{name}") or None
    return page_provider(name, model=model, base_url=base_url, typed_key=typed,
                         server_key=server_key(name))


def api_keys() -> None:
    """Password fields for both providers (memory only)."""
    with st.expander("API keys (or OPENAI_API_KEY / ANTHROPIC_API_KEY in env or secrets)"):
        c1, c2 = st.columns(2)
        c1.text_input("OpenAI key", type="password", key="tools_key_openai")
        c2.text_input("Anthropic key", type="password", key="tools_key_anthropic")


@dataclass(frozen=True)
class Model:
    """A provider chosen in a section, and how to run it."""

    provider: ChatProvider
    concurrency: int
    batch: BatchConfig | None
    cache_path: str | None


def model_settings(key: str, label: str) -> Model:
    """Provider, model, base URL, concurrency, cache and batch widgets of a section."""
    c1, c2, c3 = st.columns([1, 2, 2])
    name = c1.selectbox(label, list(DEFAULT_MODELS), key=f"tools_{key}_provider")
    model = c2.text_input("Model", DEFAULT_MODELS[name], key=f"tools_{key}_model_{name}")
    url = c3.text_input("Base URL (optional)", key=f"tools_{key}_url").strip() or None
    d1, d2, d3 = st.columns([1, 2, 2])
    concurrency = int(d1.number_input("Concurrency", 1, 256, 8, key=f"tools_{key}_conc"))
    cache = d2.checkbox("Use the reply cache", True, key=f"tools_{key}_cache")
    batch = d3.checkbox("Batch API (half price, up to 24 h)", key=f"tools_{key}_batch",
                        help="Batch ids are kept in the cache: a closed page picks them up "
                             "again (Batches tab).")
    provider = chosen_provider(name, model.strip() or DEFAULT_MODELS[name], url)
    return Model(provider, concurrency, BatchConfig(poll_interval=10) if batch else None,
                 str(user_cache_path()) if cache or batch else None)


def numbers(text: str, kind: type) -> list:
    """Comma-separated numbers typed in a field (``[]`` when empty)."""
    return [kind(t) for t in text.replace(" ", "").split(",") if t]


def estimate(fn, m: Model, **kwargs) -> None:
    """Show ``fn(..., cache=..., batch=...)``'s estimate table (calls, tokens, cost)."""
    try:
        with optional_cache(m.cache_path) as cache:
            table = fn(cache=cache, batch=m.batch is not None, **kwargs).to_frame()
    except CacheError as exc:
        cache_problem(exc, "tools_reset_cache_estimate")
        return
    st.dataframe(table, hide_index=True)


def run_config(m: Model) -> RunConfig:
    """The runner settings of a section."""
    return RunConfig(concurrency=m.concurrency)


def agreement_pairs(found: list[tuple[str, str]], every: bool, judge: str | None,
                    human: str | None) -> tuple[list[tuple[str, str]], str | None]:
    """The column pairs to compare, or a message asking for an explicit choice (no pair
    is ever guessed: without human labels, nothing is compared until two different
    columns are chosen)."""
    if every and found:
        return found, None
    if not found and (judge is None or human is None):
        return [], ("No human labels found (columns `human_<metric>`): choose the judge column "
                    "and the human (or second judge) column to compare.")
    if judge is None or human is None:
        return [], "Choose the judge column and the human (or second judge) column."
    if judge == human:
        return [], f"Choose two different columns: `{judge}` compared with itself is not an " \
                   "agreement."
    return [(judge, human)], None


def cache_problem(exc: CacheError, key: str) -> None:
    """An unusable cache file: the message and a button that moves it aside."""
    st.error(md(str(exc)))
    st.button("Move the cache aside and start a new one", key=key, on_click=move_aside,
              args=(exc.path,))
