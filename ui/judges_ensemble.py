"""Several judges on the Judges page: choice, estimate per judge and total, run (logic in
judges/ensemble.py).

Session-state keys: widgets ``judges_more`` (more judges, one per line),
``judges_ensemble`` (mean / median), ``judges_run_several``; the running job and its
result use the Judges page's keys (``judges_job``, ``judges_judged`` ...; ``ui/judges.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from judges.cache import optional_cache
from judges.endpoints import require_cost_cap
from judges.ensemble import (
    ENSEMBLES,
    JudgeSpec,
    check_unique,
    ensemble_job,
    estimate_judges,
    parse_judge,
)
from judges.errors import CacheError, JudgesError
from ui.judges import Settings
from ui.judges_run import launch
from ui.judges_tools import cache_problem, chosen_provider
from ui.widgets import md

__all__ = ["Several", "choose", "parse_lines", "show_estimate", "start"]


@dataclass(frozen=True)
class Several:
    """The judges chosen on the page (the first is the page's main judge)."""

    specs: tuple[JudgeSpec, ...]
    ensemble: str


def parse_lines(text: str) -> list[JudgeSpec]:
    """``provider:model [base URL]`` per line (blank lines and ``#`` comments skipped)."""
    specs = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        judge, _, url = line.partition(" ")
        specs.append(parse_judge(judge, base_url=url.strip() or None))
    return specs


def choose(s: Settings) -> Several | None:
    """The *Several judges* expander; the judges when more than the main one is given."""
    if s.provider == "embedding":
        return None
    with st.expander("Several judges (ensemble and reliability)"):
        text = st.text_area(
            "More judges, one per line: provider:model, optionally a base URL after a space",
            key="judges_more", placeholder="anthropic:claude-haiku-4-5\n"
                                           "openai:llama3:8b http://localhost:11434/v1",
            help="Each judge scores every judgment; the judged file keeps each judge's "
                 "columns (ics@<judge>) and the ensemble (ics) with ics_judges_sd.")
        ensemble = st.selectbox("Ensemble of the judges' scores", ENSEMBLES,
                                key="judges_ensemble")
    if not text.strip():
        return None
    try:
        main = JudgeSpec(s.provider, s.model or "?", base_url=s.base_url)
        specs = check_unique([main, *parse_lines(text)])
    except JudgesError as exc:
        st.error(md(str(exc)))
        return None
    if s.batch:
        st.error("The batch API runs one judge: untick it to run several judges live.")
        return None
    return Several(tuple(specs), ensemble)


def _judges(s: Settings, several: Several) -> list:
    out = []
    for spec in several.specs:
        field = "judges_api_key" if spec.provider == s.provider else None
        provider = chosen_provider(spec.provider, spec.model, spec.base_url, field)
        out.append((spec.name, provider, s.config))
    return out


def show_estimate(frame: pd.DataFrame, s: Settings, several: Several) -> None:
    """Calls, tokens and cost per judge and in total."""
    judges = _judges(s, several)
    for name, provider, config in judges:
        for warning in config.warnings(provider):
            st.warning(md(f"{name}: {warning}"))
    try:
        with optional_cache(s.cache_path) as cache:
            table = estimate_judges(frame, judges, cache=cache)
    except CacheError as exc:
        cache_problem(exc, "judges_reset_cache")
        return
    st.caption(f"{len(judges)} judges, {several.ensemble} ensemble: estimate per judge and "
               "in total (cost empty: no price for that model).")
    st.dataframe(table, hide_index=True)


def start(frame: pd.DataFrame, s: Settings, several: Several, name: str) -> None:
    """Start the several-judges run in the background (a button callback)."""
    def make():
        judges = _judges(s, several)
        require_cost_cap(any(p.uses_server_key for _, p, _ in judges), s.max_cost)
        return ensemble_job(frame, judges, ensemble=several.ensemble,
                            concurrency=s.concurrency, cache_path=s.cache_path,
                            max_cost_usd=s.max_cost)

    launch(make, name)
