"""The tabs of the Coverage page, drawn from one :func:`analysis.api.coverage` Result
(``pages/coverage.py`` only arranges them): the pairwise heatmap, the per-factor rows and
bar chart, the empty and thinnest combinations, the model coverage."""

from __future__ import annotations

import streamlit as st

from analysis.api import Result
from analysis.columns import N_EMPTY_CELLS
from analysis.coverage_text import per_factor_table
from analysis.design import Design
from analysis.figures.coverage import coverage_heatmap, marginal_bar
from ui.common import figure_downloads, table_download
from ui.coverage import (
    COLUMN_CONFIG,
    EMPTY_DOWNLOAD_MAX,
    HEATMAP_MAX_CELLS,
    empty_page,
    pair_choice,
)
from ui.widgets import md

__all__ = ["TABS", "heatmap_pair", "render_tabs"]

TABS = ["Pairwise heatmap", "Per factor", "Empty combinations", "Thinnest cells", "Models"]


def heatmap_pair(design: Design, factors: list[str]) -> tuple[str, str] | None:
    """The heatmap's two factors (its widgets), or None (and why) when there is no pair to
    draw: one factor, or more combinations than :data:`HEATMAP_MAX_CELLS`."""
    if len(factors) < 2:
        st.info("Choose two or more factors for a heatmap.")
        return None
    row, col = pair_choice(design, factors)
    size = len(design.factor(row).values) * len(design.factor(col).values)
    if size > HEATMAP_MAX_CELLS:
        st.warning(f"{md(row)} x {md(col)} has {size:,} combinations: too many to draw.")
        return None
    return row, col


def _heatmap(result: Result, pair: tuple[str, str]) -> None:
    row, col = pair
    pairs = result.tables["pairs"]
    fig = coverage_heatmap(pairs, row, col, counted=result.meta["counted"])
    st.plotly_chart(fig, key="coverage_heatmap_chart")
    figure_downloads(fig, f"coverage_{row}_{col}", key="coverage_heatmap")
    table_download(pairs, f"coverage_{row}_{col}", key="coverage_pairs")


def _per_factor(result: Result, factors: list[str]) -> None:
    st.dataframe(per_factor_table(result.tables["per_factor"]), hide_index=True,
                 width="stretch", column_config=COLUMN_CONFIG)
    table_download(result.table, "coverage_summary", key="coverage_summary")
    bar_factor = st.selectbox("Rows per value of", factors, key="coverage_bar_factor")
    marginals = result.tables["marginals"]
    bar = marginal_bar(marginals, bar_factor, counted=result.meta["counted"])
    st.plotly_chart(bar, key="coverage_bar_chart")
    figure_downloads(bar, f"coverage_{bar_factor}", key="coverage_bar")
    table_download(marginals, "coverage_marginals", key="coverage_marginals")


def _empty(result: Result, design: Design) -> None:
    n_empty = int(result.table.iloc[0][N_EMPTY_CELLS])
    st.caption(f"{n_empty:,} empty combinations, in declared order; the CSV holds the first "
               f"{min(n_empty, EMPTY_DOWNLOAD_MAX):,}. Nested factors make many of them "
               "impossible rather than missing (see the warnings above).")
    st.dataframe(empty_page(result, design), hide_index=True, width="stretch")
    table_download(result.tables["empty_cells"], "coverage_empty_cells", key="coverage_empty")


def _models(result: Result) -> None:
    if "models" not in result.tables:
        st.info("The design has no model factor (or only model factors are chosen).")
        return
    table = result.tables["models"]
    st.markdown("\n".join(f"- {md(s)}" for s in result.meta["model_reading"]))
    st.dataframe(table, hide_index=True, width="stretch", column_config=COLUMN_CONFIG)
    table_download(table, "coverage_by_model", key="coverage_models")


def render_tabs(tabs: list, result: Result, design: Design, factors: list[str], *,
                pair: tuple[str, str] | None, limit: int) -> None:
    """Fill the page's :data:`TABS` (``tabs``, from ``st.tabs``) from ``result``; ``pair``
    as :func:`heatmap_pair` chose it (drawn in the first tab), ``limit`` thinnest cells."""
    t_map, t_factor, t_empty, t_thin, t_model = tabs
    if pair is not None:
        with t_map:
            _heatmap(result, pair)
    with t_factor:
        _per_factor(result, factors)
    with t_empty:
        _empty(result, design)
    with t_thin:
        st.caption("Observed combinations with the fewest rows: what to add after the empty ones.")
        thinnest = result.tables["thinnest_cells"].head(limit)
        st.dataframe(thinnest, hide_index=True, width="stretch")
        table_download(thinnest, "coverage_thinnest_cells", key="coverage_thinnest")
    with t_model:
        _models(result)
