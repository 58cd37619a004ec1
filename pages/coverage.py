"""Coverage page: how completely and how evenly the factor grid is filled (methods.md §1)."""

import streamlit as st

from analysis import coverage as cov
from analysis.columns import N_EMPTY_CELLS
from analysis.errors import AnalysisError
from analysis.figures.coverage import coverage_heatmap, marginal_bar
from analysis.options.coverage import CoverageOptions as Opts
from ui.common import (
    cells_for,
    figure_downloads,
    require_results,
    subset_filter,
    table_download,
)
from ui.coverage import (
    COLUMN_CONFIG,
    EMPTY_DOWNLOAD_MAX,
    HEATMAP_MAX_CELLS,
    count_choice,
    coverage_cells_for,
    empty_page,
    grid_choice,
    models_overview,
    overview,
    pair_choice,
    show_metrics,
    show_reading,
)
from ui.native import native_scores_view
from ui.navigation import route_first_visit
from ui.options import other_options
from ui.report import add_to_report_button
from ui.reproduce import reproduce_coverage
from ui.widgets import md

route_first_visit()

st.title("Coverage")
results, design = require_results(need_outcome=False)
st.caption("Which combinations of factor values the benchmark holds, and how evenly. Coverage "
           "is the share of combinations with at least one prompt (declared values never seen "
           "count as empty); the Gini index is 0 when every combination is equally filled.")

factors = grid_choice(design)
if not factors:
    st.info("Choose at least one factor.")
    st.stop()
c1, c2 = st.columns([1, 2])  # compact controls above the answer
with c1:
    where = subset_filter(design, "coverage")
with c2:
    unit = count_choice(design)
models = design.of_kind("model")
answer = st.container()  # the numbers and the tabs first, the other options below
with st.expander("Other options", expanded=False):
    more = other_options(Opts, ("count",), key="coverage_option")
try:
    cells = coverage_cells_for(results, design, factors, where, unit)
    info = overview(cells, design, factors, where, unit, limit=Opts.coerce(more).limit,
                    results=results)
except AnalysisError as exc:
    st.error(md(str(exc)))
    st.stop()
with answer:
    show_metrics(info)  # the answer first: the numbers and the heatmap, the reading below

    t_map, t_factor, t_empty, t_thin, t_model = st.tabs(
        ["Pairwise heatmap", "Per factor", "Empty combinations", "Thinnest cells", "Models"])
    with t_map:
        if len(factors) < 2:
            st.info("Choose two or more factors for a heatmap.")
        else:
            row, col = pair_choice(design, factors)
            size = len(design.factor(row).values) * len(design.factor(col).values)
            if size > HEATMAP_MAX_CELLS:
                st.warning(f"{md(row)} x {md(col)} has {size:,} combinations: too many to draw.")
            else:
                pairs = cov.pair_counts(cells, design, row, col, where=where, within=factors)
                fig = coverage_heatmap(pairs, row, col, counted=cov.counted_noun(cells))
                st.plotly_chart(fig, key="coverage_heatmap_chart")
                figure_downloads(fig, f"coverage_{row}_{col}", key="coverage_heatmap")
                table_download(pairs, f"coverage_{row}_{col}", key="coverage_pairs")
    with t_factor:
        st.dataframe(cov.per_factor_table(info["summary"]), hide_index=True, width="stretch",
                     column_config=COLUMN_CONFIG)
        table_download(info["summary"], "coverage_summary", key="coverage_summary")
        bar_factor = st.selectbox("Rows per value of", factors, key="coverage_bar_factor")
        bar = marginal_bar(info["marginals"], bar_factor, counted=cov.counted_noun(cells))
        st.plotly_chart(bar, key="coverage_bar_chart")
        figure_downloads(bar, f"coverage_{bar_factor}", key="coverage_bar")
        table_download(info["marginals"], "coverage_marginals", key="coverage_marginals")
    with t_empty:
        n_empty = int(info["summary"].iloc[0][N_EMPTY_CELLS])
        st.caption(f"{n_empty:,} empty combinations, in declared order; the CSV holds the first "
                   f"{min(n_empty, EMPTY_DOWNLOAD_MAX):,}. Nested factors make many of them "
                   "impossible rather than missing (see the warnings above).")
        st.dataframe(empty_page(cells, design, factors, where, info), hide_index=True,
                     width="stretch")
        table_download(info["empty"], "coverage_empty_cells", key="coverage_empty")
    with t_thin:
        st.caption("Observed combinations with the fewest rows: what to add after the empty ones.")
        st.dataframe(info["thinnest"], hide_index=True, width="stretch")
        table_download(info["thinnest"], "coverage_thinnest_cells", key="coverage_thinnest")
    with t_model:
        prompts = [f for f in factors if f not in models]
        if not models or not prompts:
            st.info("The design has no model factor (or only model factors are chosen).")
        else:
            grid = list(dict.fromkeys(prompts + models))
            mcells = cells_for(results, design, grid, where, with_outcome=False)
            table, reading = models_overview(mcells, design, models, prompts, where)
            st.markdown("\n".join(f"- {md(s)}" for s in reading))
            st.dataframe(table, hide_index=True, width="stretch", column_config=COLUMN_CONFIG)
            table_download(table, "coverage_by_model", key="coverage_models")

show_reading(info)
reproduce_coverage(design, factors, where, unit, more=more)
add_to_report_button("coverage", {"factors": factors, "count": unit, "where": where, **more})
native_scores_view(results, design, where, page="coverage")  # BBQ s_DIS / s_AMB ... with CIs
