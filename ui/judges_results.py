"""Results of the Judges page: metrics, unscored reasons, agreement, rows, download, send.

Session-state keys: see ``ui/judges.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from analysis.export import table_bytes
from analysis.judge_stats import columns as C
from analysis.judge_stats.names import human_pairs
from judges.to_results import to_results
from ui.common import set_data, token_of
from ui.judges_jobs import agreement_table
from ui.judges_samples import sample_browse_columns, show_position_bias, show_sample_note
from ui.widgets import md

if TYPE_CHECKING:
    from analysis.api import Result

__all__ = ["BROWSE", "send_to_analysis", "show_results"]


#: Columns shown when browsing judged rows (the raw replies last).
BROWSE = [C.ID, C.STAGE, C.SENSITIVE_FACTOR, C.SCENARIO, C.MODEL, *C.METRICS,
          *sample_browse_columns(), C.SIMILARITY,
          *(C.explanation_column(m) for m in C.METRICS), C.UNSCORED_REASON,
          *(C.raw_column(m) for m in C.METRICS)]


def send_to_analysis(judged: pd.DataFrame, name: str) -> None:
    """Make the judged scores the active results table and design (a button callback)."""
    threshold = st.session_state.get("judges_similarity_threshold", C.SIMILARITY_THRESHOLD)
    results, design = to_results(judged, similarity_threshold=threshold)
    set_data(results, f"{name} (judge scores)", token_of(results), design)
    st.session_state["judges_sent"] = f"{name} (judge scores)"


@st.cache_data(max_entries=8, show_spinner="Computing the stage metrics...")
def _stage_metrics(judged: pd.DataFrame) -> Result:
    """``analysis.api.judge_stage_metrics`` with the figures, cached per judged table."""
    from analysis import api

    return api.judge_stage_metrics(judged, figures=True)


def show_results(judged: pd.DataFrame, name: str, summary: pd.DataFrame | None = None) -> None:
    """Run summary, stage metrics, position bias (both orders), unscored reasons, judged
    rows (all or unscored only, with the raw replies and the sample columns), download
    and send to analysis."""
    if summary is not None:
        st.subheader("Run summary")
        st.dataframe(summary, hide_index=True)
    st.subheader("Stage metrics")
    st.caption("share_fair: stages 1 and 4 share of ICS 3-5, stage 3 share of SBAS 4-5; "
               "stage 2: the three consistency scores (mean, and share at or above 3).")
    show_sample_note(judged)
    metrics = _stage_metrics(judged)
    st.dataframe(metrics.table, hide_index=True)
    figures = metrics.meta["figures"]
    if figures:  # FairMonitor's Figures 4 and 5
        c1, c2 = st.columns(2)
        c1.plotly_chart(figures["judge_scores_box"], key="judges_scores_box")
        c2.plotly_chart(figures["judge_stage_bars"], key="judges_stage_bars")
    show_position_bias(judged)
    reasons = metrics.tables["unscored_reasons"]
    if len(reasons):
        st.warning(f"{int(reasons[C.N_ROWS].sum()):,} judgments are unscored.")
        st.dataframe(reasons, hide_index=True)
    pairs = human_pairs(judged)
    if pairs:  # human labels (human_<metric> columns): agreement, analysis/judge_stats/agreement.py
        st.subheader("Agreement with human labels")
        st.dataframe(agreement_table(judged, pairs, "bootstrap"), hide_index=True)
    st.subheader("Judged rows")
    rows = judged
    reasons_col = judged.get(C.UNSCORED_REASON, pd.Series("", index=judged.index))
    unscored = reasons_col.fillna("").astype(str).str.len() > 0
    if st.checkbox(f"Unscored only ({int(unscored.sum()):,} rows, with the judge's raw reply)",
                   key="judges_unscored_only"):
        rows = judged[unscored]
    st.dataframe(rows[[c for c in BROWSE if c in rows.columns]], hide_index=True)
    c1, c2 = st.columns(2)
    c1.download_button("Download the judged file (CSV)", table_bytes(judged),
                       file_name=f"{Path(name).stem}_judged.csv", mime="text/csv",
                       key="judges_download", on_click="ignore")
    c2.button("Send to analysis", key="judges_send", on_click=send_to_analysis,
              args=(judged, name), type="primary")
    if st.session_state.get("judges_sent"):
        st.success(f"**{md(st.session_state['judges_sent'])}** is now the active results table "
                   "with a ready design (outcome: deviation = score below the stage's "
                   "threshold). Open the **Data** and **Design** pages to continue.")
