"""Reliability section: how far judges agree with each other and with themselves (logic in
analysis/judge_stats/reliability.py; shown in the Reliability tab of Answers & agreement and under a
several-judges result on the Judges page).

Session-state keys (namespaced ``rel_<where>_``): ``rel_<where>_current`` (use the Judges
page's judged result), ``rel_<where>_upload`` (judged files), ``rel_<where>_boot``,
``rel_<where>_seed``, ``rel_<where>_range``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.express as px
import streamlit as st

from analysis.judge_stats import columns as C
from analysis.judge_stats.names import judge_names_in
from analysis.judge_stats.reliability import (
    ALPHA_ORDINAL,
    ICC1,
    ICC2,
    ICC3,
    SD,
    SOURCE,
    ReliabilityError,
)
from ui.judges_tools import read_table
from ui.widgets import md

__all__ = ["HOW", "reliability_tab", "show", "show_for_judged"]


HOW = ("**alpha_ordinal**: Krippendorff's alpha, ordinal metric, pairable values only "
       "(missing scores left out). **icc2_1**: ICC(2,1), two-way random effects, absolute "
       "agreement; **icc3_1**: ICC(3,1), two-way mixed, consistency; **icc1_1**: ICC(1,1), "
       "one-way random (Shrout & Fleiss 1979), on the rows every rater scored "
       "(`n_complete`). Across repeated samples only ICC(1,1) applies. Intervals: alpha's "
       "percentile bootstrap over rows; the ICCs' classical F intervals (Shrout & Fleiss, "
       "McGraw & Wong; = pingouin). 1 = perfect agreement, 0 = chance level.")


@st.cache_data(max_entries=16, show_spinner="Bootstrapping...")
def _compute(frames: tuple[pd.DataFrame, ...], names: tuple[str, ...], n_resamples: int, seed: int,
             min_range: float) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    from analysis import api

    r = api.judge_reliability(list(frames), names, n_resamples=n_resamples, seed=seed,
                              min_range=min_range)
    return r.table, r.tables["disagreements"], r.tables["spread"], r.meta["judges"]


def show(frames: Sequence[pd.DataFrame], names: Sequence[str], where: str) -> None:
    """Alpha / ICC table with intervals, the disagreement list and the SD histogram."""
    c1, c2, c3 = st.columns(3)
    n_resamples = int(c1.number_input("Bootstrap resamples (alpha)", 0, 20_000, 1000, step=100,
                                 key=f"rel_{where}_boot"))
    seed = int(c2.number_input("Seed", 0, 2**31 - 1, 0, key=f"rel_{where}_seed"))
    min_range = float(c3.number_input("List disagreements of at least", 1.0, 4.0, 2.0,
                                      step=1.0, key=f"rel_{where}_range"))
    try:
        table, disagree, spread, judges = _compute(tuple(frames), tuple(names), n_resamples, seed,
                                                   min_range)
    except ReliabilityError as exc:
        st.error(md(str(exc)))
        return
    st.caption(md(f"Judges: {', '.join(judges)}; {len(frames[0]):,} rows.") + " " + HOW)
    shown = table.copy()
    for s in (ALPHA_ORDINAL, ICC2, ICC3, ICC1):
        shown[s] = [_with_ci(v, lo, hi) for v, lo, hi in
                    zip(table[s], table[f"{s}_low"], table[f"{s}_high"], strict=True)]
    st.dataframe(shown[[C.METRIC, C.STAGE, "across", "raters", "n_units", "n_complete",
                        ALPHA_ORDINAL, ICC2, ICC3, ICC1]], hide_index=True)
    st.markdown(f"**Disagreements** (judges' scores span {min_range:g} or more): "
                f"{len(disagree):,}")
    if len(disagree):
        st.dataframe(disagree, hide_index=True)
    if len(spread):
        label = ("SD of each judge's repeated samples" if spread[SOURCE].str.startswith(
            "samples").any() else "SD across judges")
        fig = px.histogram(spread, x=SD, color=C.METRIC, nbins=20, barmode="overlay",
                           title=f"Per-row score spread ({label})",
                           labels={SD: "standard deviation of the scores", "count": "rows"})
        st.plotly_chart(fig, key=f"rel_{where}_hist")


def _with_ci(value: float, lo: float, hi: float) -> str:
    if pd.isna(value):
        return ""
    return f"{value:.3f}" + ("" if pd.isna(lo) else f" [{lo:.3f}, {hi:.3f}]")


def reliability_tab() -> None:
    """Choose judged files (the Judges page's result, uploads) and show their reliability."""
    st.caption("One judged file with several judges' columns (`ics@<judge>`, from several "
               "judges on the Judges page or `--judge ... --judge ...`), several judged files "
               "of the same rows (one judge each), or a file judged with repeated samples "
               "(`ics_scores`).")
    frames, names = [], []
    current = st.session_state.get("judges_judged")
    if current is not None and st.checkbox("The judged result of the Judges page", True,
                                           key="rel_tab_current"):
        frames.append(current)
        names.append(st.session_state.get("judges_judged_name", "Judges page result"))
    uploads = st.file_uploader("Judged files (CSV, TSV, Parquet, JSON Lines)",
                               type=["csv", "tsv", "parquet", "jsonl", "json"],
                               accept_multiple_files=True, key="rel_tab_upload")
    for upload in uploads or []:
        try:
            frames.append(read_table(upload.getvalue(), upload.name))
            names.append(upload.name)
        except ValueError as exc:
            st.error(md(f"{upload.name}: {exc}"))
    if not frames:
        st.info("Choose or upload at least one judged file.")
        return
    show(frames, names, "tab")


def show_for_judged(judged: pd.DataFrame, name: str) -> None:
    """The section under a judged result with several judges or repeated samples (nothing
    otherwise)."""
    from judges.samples import has_samples

    several = len(judge_names_in(judged)) >= 2
    if not several and not has_samples(judged):
        return
    st.subheader("Reliability of the judges" if several else "Reliability of the judge")
    show([judged], [name], "page")
