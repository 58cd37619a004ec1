"""Widgets shared by the Subgroups and eCDF pages: factor choice, view filter, table format."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from analysis.columns import (
    CI_HIGH,
    CI_LOW,
    CONTINUITY_CORRECTED,
    DEVIATION_METRIC,
    DEVIATION_RATE,
    LD_UNDEFINED,
    LOG_DISPARITY,
    MEAN_RATE,
    P_ADJUSTED,
    P_VALUE,
    RATE_OUTSIDE,
    SHARE_ABOVE_CUTOFF,
    SMALL_N,
    STATISTIC,
    SUBGROUP,
)
from analysis.design import Design
from ui.widgets import md

__all__ = [
    "COLUMN_CONFIG", "TEST_LABELS", "adjusted_column", "answer_notes", "bbq_scores_section",
    "cluster_toggle",
    "default_factors", "factor_choice", "missing_outcome_note", "table_caption",
    "uncertainty_notes", "value_filter",
]


_NUM = st.column_config.NumberColumn
COLUMN_CONFIG = {
    SUBGROUP: st.column_config.TextColumn("subgroup", width="large", pinned=True,
                                          help="The factor values the subgroup fixes"),
    DEVIATION_RATE: _NUM("rate", format="%.3f", help="Share of the subgroup's rows that deviate"),
    RATE_OUTSIDE: _NUM("rate outside", format="%.3f",
                       help="Deviation rate of every row outside the subgroup"),
    LOG_DISPARITY: _NUM("LD", format="%.3f",
                        help="logit(rate) - logit(rate outside); > 0: more deviation (red)"),
    CI_LOW: _NUM("CI low", format="%.3f", help="Woolf confidence interval of LD"),
    CI_HIGH: _NUM("CI high", format="%.3f"),
    P_VALUE: _NUM("p", format="%.3g"),
    SMALL_N: st.column_config.CheckboxColumn("small n", help="n < min n or an expected "
                                             "count below 5: the normal approximation is poor"),
    CONTINUITY_CORRECTED: st.column_config.CheckboxColumn(
        "corrected", help="A cell of the 2x2 table was 0: 0.5 added to all four cells"),
    LD_UNDEFINED: st.column_config.CheckboxColumn(
        "LD undefined", help="No rows outside the subgroup, or an outcome that never or "
                             "always deviates"),
    DEVIATION_METRIC: _NUM("deviation metric", format="%.4f"),
    MEAN_RATE: _NUM("mean rate", format="%.4f"),
    SHARE_ABOVE_CUTOFF: _NUM("share above cutoff", format="%.3f"),
    STATISTIC: _NUM("KS D", format="%.3f"),
}
TEST_LABELS = {"auto": "auto (Fisher for small n)", "wald": "Wald z", "fisher": "Fisher exact"}


def adjusted_column(method: str, over: str) -> dict:
    """The ``p_adjusted`` column's format, headed by its method (``p (Holm)``; ``over``:
    the family, e.g. "every subgroup in the table")."""
    from analysis.multiple_testing import NAMES, adjusted_label

    return {P_ADJUSTED: _NUM(adjusted_label(method), format="%.2e",
                             help=f"{NAMES[method]} over {over}")}


def _outcome_missing(results: pd.DataFrame, where: tuple) -> tuple[int, int]:
    from analysis import api
    from analysis.columns import DEVIATION

    subset = api.subset_rows(results[[DEVIATION, *dict(where)]], where=dict(where) or None)
    return int(subset[DEVIATION].isna().sum()), len(subset)


def _where_key(where: dict | None) -> tuple:
    return tuple(sorted((k, tuple(v)) for k, v in (where or {}).items() if v))


def missing_outcome_note(results: pd.DataFrame, where: dict) -> None:
    """A caption counting the subset's rows left out because their outcome is missing."""
    from analysis.columns import DEVIATION
    from ui.common import per_table

    if DEVIATION not in results.columns:
        return
    k, n = per_table(_outcome_missing, results, st.session_state["design"], _where_key(where))
    if k:
        st.caption(f"{k:,} of {n:,} rows have no outcome and are left out.")


def _bbq_groupings(results: pd.DataFrame) -> list[str] | None:
    """None for a table that is not BBQ's; else the columns to offer for its scores."""
    from ui.inference_pool import bbq_groupings

    return bbq_groupings(results)


def bbq_scores_section(results: pd.DataFrame, where: dict) -> None:
    """BBQ's own bias scores (s_DIS, s_AMB) when the table is a BBQ results table (cached
    per table, subset and grouping)."""
    from analysis import api as bw
    from ui.common import per_table
    from ui.table_job import load_job

    design = st.session_state["design"]
    # read at load with the Coverage job (ui.inference_pool.count_unit_cells): the same
    # groupings and first table, without 1M rows' text on the visitor's thread
    early = getattr(load_job(results), "bbq", None)
    by = list(early[0]) if early is not None else per_table(_bbq_groupings, results, design)
    if by is None:
        return
    st.subheader("BBQ bias scores")
    chosen = st.multiselect("Scores per", by, default=by[:2], key="subgroups_bbq_by")
    where_key = dict(_where_key(where))
    scores = early[1] if early is not None and list(chosen) == by[:2] and not where_key \
        else per_table(bw.bbq_scores, results, design, by=list(chosen), where=where_key).table
    st.caption("BBQ (Parrish et al. 2022): s_DIS = 2 x biased / non-unknown answers - 1 in "
               "disambiguated contexts; s_AMB = (1 - accuracy) x s in ambiguous ones. From -1 "
               "(always against the stereotype) to 1 (always the stereotype); the paper "
               "plots x 100.")
    st.dataframe(scores, hide_index=True)


def default_factors(design: Design, *, exclude: Sequence[str] = (), k: int = 2,
                    results: pd.DataFrame | None = None, models: bool = False) -> list[str]:
    """Up to ``k`` factors to start with: domain first, then prompt, then model factors,
    no constant, text-like or id factor and no two of them nested in each other
    (:mod:`analysis.factor_defaults`) on ``results`` (cached per table), or on the active
    data when it is not given (``ui/defaults.py``). With ``models``, a model factor with
    several values is the first of them (a table of several models opens on the models:
    issue 42, race x gender of three models showed no subgroup)."""
    if results is None:
        from ui.defaults import page_defaults

        chosen = page_defaults(design, k, exclude=exclude)
        useful = page_defaults(design, None, ("model",), exclude=exclude) if models else []
    else:
        from analysis.factor_defaults import default_factors as start_with
        from analysis.factor_defaults import useful_factors
        from ui.common import per_table

        chosen = list(per_table(start_with, results, design, design, k,
                                exclude=tuple(exclude)))
        useful = (list(per_table(useful_factors, results, design, design, ("model",),
                                 exclude=tuple(exclude))) if models else [])
    if useful and useful[0] not in chosen:
        chosen = [useful[0], *[f for f in chosen if f != useful[0]]][:k]
    return chosen


def factor_choice(design: Design, key: str, *, exclude: Sequence[str] = (),
                  label: str = "Factors (in ring order)",
                  results: pd.DataFrame | None = None, models: bool = False) -> list[str]:
    """A multiselect of factors, remembered per page under ``key`` (``models``: see
    :func:`default_factors`)."""
    from ui.widgets import fit

    options = [f for f in design.names if f not in exclude]
    if key in st.session_state:
        fit(key, options, label)  # drop a choice that is no longer offered, with a note
        return st.multiselect(label, options, key=key)
    return st.multiselect(label, options, default=default_factors(
        design, exclude=exclude, results=results, models=models), key=key)


def value_filter(table: pd.DataFrame, factors: Sequence[str], key: str) -> pd.DataFrame:
    """Widgets to show only subgroups with some values; returns the rows shown."""
    keep = pd.Series(True, index=table.index)
    with st.expander("Show only subgroups with these values", expanded=False):
        cols = st.columns(min(3, max(len(factors), 1)))
        for i, f in enumerate(factors):
            values = [str(v) for v in table[f].cat.categories] if isinstance(
                table[f].dtype, pd.CategoricalDtype) else sorted(table[f].dropna().unique())
            chosen = cols[i % len(cols)].multiselect(md(f), values, key=f"{key}_{f}")
            if chosen:
                keep &= table[f].astype(object).isin(chosen)
        flagged = st.checkbox("Hide small-n subgroups", key=f"{key}_hide_small")
        if flagged and SMALL_N in table.columns:
            keep &= ~table[SMALL_N]
    return table[keep]


def cluster_toggle(results: pd.DataFrame, design: Design) -> str | None:
    """The design's cluster for the subgroups' CIs and p-values (a toggle, on by default;
    off: the independent-rows analysis), or None when the design declares none."""
    cluster = design.cluster
    if not cluster or cluster not in results.columns:
        return None
    on = st.toggle(f"Account for clustering by {md(cluster)}", value=True,
                   key="subgroups_clustered",
                   help="Rows sharing a template are correlated: CIs and p-values become "
                        "cluster-robust (t with G - 1 df). Off: rows treated as independent.")
    return cluster if on else None


def uncertainty_notes(result) -> None:  # noqa: ANN001 - an analysis.api.Result
    """How the CIs and p-values were computed, and what was assumed (the cluster, the
    continuity correction, the bootstrap's notes) of the Subgroups Result."""
    st.caption(md(f"CIs and p-values: {result.settings['uncertainty']}."))
    for note in result.meta["warnings"]:
        if not note.startswith("CIs and p-values are cluster-robust"):
            st.warning(md(note))


def answer_notes(result, results: pd.DataFrame, where: dict) -> None:  # noqa: ANN001
    """Under the sunburst: the counts (subgroups, rows, adjusted p < 0.05, small n), the
    missing-outcome note, how the uncertainty was computed and the subgroups without LD
    (``result``: the page's :class:`analysis.api.Result`)."""
    table = result.table
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Subgroups", f"{len(table):,}")
    m2.metric("Rows in subset", f"{result.meta['n_rows']:,}")
    m3.metric("Adjusted p < 0.05", f"{int((table[P_ADJUSTED] < 0.05).sum()):,}")
    m4.metric("Small n", f"{int(table[SMALL_N].sum()):,}")
    missing_outcome_note(results, where)
    uncertainty_notes(result)
    if table[LD_UNDEFINED].any():
        st.warning(f"{int(table[LD_UNDEFINED].sum())} subgroups have no log disparity: they "
                   "hold every row of the subset, or the outcome never/always deviates in it.")


def table_caption(table: pd.DataFrame, full: pd.DataFrame, adjust: str = "bh") -> None:
    """The Subgroups table's heading and how to read it (sorting, clicks, the family of
    the adjustment ``adjust``, subgroups listed once)."""
    from analysis.multiple_testing import NAMES

    st.subheader("Table")
    st.caption(f"Click a column header to sort, a row to see its responses. Adjusted p: "
               f"{NAMES[adjust]} across all {int(table[P_ADJUSTED].notna().sum()):,} "
               "distinct subgroups with a p-value (filtering the view below does not change "
               "it)." + (f" {len(full) - len(table)} subgroups have exactly the rows of "
                         "another one and are listed once (same_rows_as names them)."
                         if len(full) > len(table) else ""))
