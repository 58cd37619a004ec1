"""The benchmark's own scores on the pages (``docs/native_scores.md``): the Compare page's
paired deltas of s_DIS / s_AMB / pct_stereotype ... with paired cluster-bootstrap
intervals (``bw.native_deltas``; the display of the scores themselves on the analysis
pages is ``bw.native_scores``' table)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from analysis.design import Design
from analysis.errors import AnalysisError
from ui.widgets import md

__all__ = ["native_deltas_view"]

_STATE = "compare_native"


def native_deltas_view(results: pd.DataFrame, design: Design, settings: dict[str, Any],
                       where: dict[str, Any]) -> None:
    """An expander with the paired deltas of the native scores between the values of the
    compared factor (computed on request: a bootstrap of a few seconds); nothing for a
    table without a native score."""
    from analysis import api
    from analysis.native_scores import has_native_score

    if not has_native_score(results) or not settings.get("by"):
        return
    with st.expander("The benchmark's own scores (BBQ's s_DIS / s_AMB, pct_stereotype ...): "
                     "paired deltas with cluster intervals"):
        st.caption("Each value's score on the prompts both answered, the same bootstrap "
                   "draws of the shared clusters (templates, within each category) for both: "
                   "a paired interval of b - a. Test: bootstrap t with G - 1 df, Holm over "
                   "a pair's deltas (docs/native_scores.md).")
        key = json.dumps([st.session_state.get("results_token"), settings["by"],
                          settings.get("reference"), where], sort_keys=True, default=str)
        if st.button("Compute the paired deltas", key="compare_native_run"):
            try:
                with st.spinner("Bootstrapping the shared clusters..."):
                    res = api.native_deltas(results, design, by=settings["by"],
                                            reference=settings.get("reference"), where=where)
            except AnalysisError as exc:
                st.error(md(str(exc)))
                return
            st.session_state[_STATE] = (key, res.table, list(res.notes))
        stored = st.session_state.get(_STATE)
        if not stored or stored[0] != key:
            return
        table = stored[1]
        main = table[table["scope"].isin(["overall", "category", "bias_type"])]
        shown = main.drop(columns=[c for c in ("family", "cluster", "interval")
                                   if c in main.columns])
        st.dataframe(shown, hide_index=True, key="compare_native_table")
        if len(table):
            st.caption(md(str(table["interval"].iloc[0])) + ". " + " ".join(
                md(n) for n in stored[2]))
        from ui.common import table_download

        table_download(table, f"native_deltas_{settings['by']}", key="compare_native")
