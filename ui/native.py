"""The benchmark's own scores on the pages (``docs/native_scores.md``): the Compare page's
paired deltas of s_DIS / s_AMB / pct_stereotype ... with paired cluster-bootstrap
intervals (``bw.native_deltas``), and on the analysis pages (Subgroups, Factor importance,
Coverage) the scores themselves with their cluster intervals (``bw.native_scores``).

Session state: ``compare_native`` (the last paired deltas with their key),
``<page>_native_scores`` (the key of the scores a page was asked for; the scores
themselves are cached per table, design and subset, shared between pages)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pandas as pd
import streamlit as st

from analysis import reproduce as rp
from analysis.design import Design
from analysis.errors import AnalysisError
from analysis.multiple_testing import NAMES
from analysis.options.native import NativeOptions
from analysis.report_native import SHOWN  # the scores' columns shown (the CSV has them all)
from ui.native_adjust import delta_adjust, deltas_columns, deltas_view, native_copy
from ui.widgets import md

__all__ = ["native_deltas_view", "native_scores_view"]

_STATE = "compare_native"
#: Breakdown scopes left out of the table by default (the CSV and a choice keep them).
_FINE = ("subcategory", "additional_metadata.subcategory")


def native_deltas_view(results: pd.DataFrame, design: Design, settings: dict[str, Any],
                       where: dict[str, Any]) -> None:
    """An expander with the paired deltas of the native scores between the values of the
    compared factor (computed on request: a bootstrap of a few seconds); nothing for a
    table without a native score."""
    from analysis import api

    if not api.has_native_score(results) or not settings.get("by"):
        return
    with st.expander("The benchmark's own scores (BBQ's s_DIS / s_AMB, pct_stereotype ...): "
                     "paired deltas with cluster intervals"):
        adjust = delta_adjust()
        st.caption("Each value's score on the prompts both answered, the same bootstrap "
                   "draws of the shared clusters (templates, within each category) for both: "
                   "a paired interval of b - a. Test: bootstrap t with G - 1 df, "
                   f"{NAMES[adjust]} over a pair's deltas (docs/native_scores.md).")
        key = json.dumps([st.session_state.get("results_token"), settings["by"],
                          settings.get("reference"), where, adjust], sort_keys=True,
                         default=str)
        if st.button("Compute the paired deltas", key="compare_native_run"):
            try:
                with st.spinner("Bootstrapping the shared clusters..."):
                    res = api.native_deltas(results, design, by=settings["by"],
                                            reference=settings.get("reference"), where=where,
                                            adjust=adjust)
            except AnalysisError as exc:
                st.error(md(str(exc)))
                return
            st.session_state[_STATE] = (key, res.table, list(res.notes), res.settings)
        stored = st.session_state.get(_STATE)
        if not stored or stored[0] != key:
            return
        table = stored[1]
        main = table[table["scope"].isin(["overall", "category", "bias_type"])]
        shown = main.drop(columns=[c for c in ("family", "cluster", "interval")
                                   if c in main.columns])
        st.dataframe(shown, hide_index=True, key="compare_native_table",
                     column_config=deltas_columns(stored[3]))
        if len(table):
            st.caption(md(str(table["interval"].iloc[0])) + ". " + " ".join(
                md(n) for n in stored[2]))
        from ui.common import table_download

        table_download(table, f"native_deltas_{settings['by']}", key="compare_native")
        native_copy(design, deltas_view(stored[3]), where,  # told apart from the comparison
                    "# the native scores' paired deltas\n")


def _where_key(where: dict[str, Any] | None) -> str:
    return json.dumps(sorted((k, sorted(map(str, v))) for k, v in (where or {}).items() if v))


def native_scores_view(results: pd.DataFrame, design: Design, where: dict[str, Any] | None,
                       *, page: str) -> None:
    """An expander with the benchmark's own scores (BBQ's s_DIS / s_AMB per category and
    subcategory, lm-eval's pct_stereotype / acc ..., DiscrimEval's coefficients) of the
    rows in ``where``, each with its cluster-bootstrap interval, computed on request with
    one call of :func:`analysis.api.native_scores` (cached per table, design and subset);
    a CSV download and "Add to report" (the report's native section, this subset).
    Nothing for a table without a native score. ``page``: the prefix of the widget keys.

    The table shown has the setting columns (``model``, ``task``, ``input_format``,
    ``filter``, those present) and ``score``, ``scope``, ``group``, ``estimate``,
    ``ci_low``, ``ci_high``, ``n``, ``n_clusters``; the CSV has every column of
    ``bw.native_scores``.
    """
    from analysis import api
    from ui.common import per_table

    token = st.session_state.get("results_token")
    if not per_table(api.has_native_score, results, design):
        return
    with st.expander("The benchmark's own scores (BBQ's s_DIS / s_AMB, pct_stereotype ...) "
                     "with cluster intervals"):
        st.caption("The numbers the benchmark's authors and lm-eval report (the same point "
                   "estimates), overall and per category, on the rows of this page's subset; "
                   "each interval resamples the benchmark's clusters (templates, within each "
                   "category). lm-eval itself gives no standard error for BBQ's scores "
                   "(docs/native_scores.md).")
        key = hashlib.sha256(json.dumps([token, design.to_json(), _where_key(where)])
                             .encode()).hexdigest()[:16]
        state = f"{page}_native_scores"
        if st.button("Compute the scores with intervals", key=f"{page}_native_run"):
            st.session_state[state] = key
        if st.session_state.get(state) != key:
            return
        try:
            with st.spinner("Bootstrapping the clusters..."):
                res = per_table(api.native_scores, results, design, design,
                                where=dict(json.loads(_where_key(where))) or None)
        except AnalysisError as exc:
            st.error(md(str(exc)))
            return
        _show_scores(res, page)
        _report_button(results, design, where)
        options = NativeOptions.from_settings(res.settings, skip=("cluster",))  # the default
        native_copy(design, rp.api_view(options, function="native_scores"), where,
                    "# the benchmark's own scores\n")


def _show_scores(res: Any, page: str) -> None:
    from ui.common import table_download

    table = res.table
    scopes = list(dict.fromkeys(table["scope"]))
    chosen = st.multiselect("Rows", scopes, default=[s for s in scopes if s not in _FINE],
                            key=f"{page}_native_scopes",
                            help="overall, and per value of each breakdown column")
    settings = [c for c in table.columns if c not in (*SHOWN, "family", "boot_se", "n_boot",
                                                      "cluster", "interval")]
    shown = table[table["scope"].isin(chosen)][[*settings, *SHOWN]]
    st.dataframe(shown, hide_index=True, key=f"{page}_native_table")
    if len(table):
        methods = "; ".join(dict.fromkeys(str(m) for m in table["interval"]))
        st.caption(md(f"Intervals: {methods}. ")
                   + " ".join(md(n) for n in res.notes))
    table_download(table, "native_scores", key=f"{page}_native")


def _report_button(results: pd.DataFrame, design: Design, where: dict[str, Any] | None
                   ) -> None:
    from analysis.errors import SectionSkipped
    from analysis.report_native import native_defaults
    from ui.report import add_to_report_button

    try:
        settings = native_defaults(results, design)
    except SectionSkipped:
        return
    subset = {k: list(v) for k, v in (where or {}).items() if v}
    if settings.get("by") and len(subset.get(settings["by"], (1, 2))) < 2:
        settings = {**settings, "by": None, "reference": None}  # one value left: no deltas
    add_to_report_button("native", {**settings, "where": subset})
