"""Subgroups page: deviation rate and log disparity of every 1..3-level subgroup, sunburst."""

import streamlit as st

from analysis.columns import LD_UNDEFINED, P_ADJUSTED, SMALL_N, SUBGROUP, N
from analysis.errors import AnalysisError
from analysis.figures.subgroups import sunburst_figure
from analysis.subgroups import MIN_N, TESTS, subgroups
from ui.common import (
    cells_for,
    figure_downloads,
    require_results,
    subset_filter,
    table_download,
)
from ui.report import add_to_report_button
from ui.subgroups import COLUMN_CONFIG, factor_choice, value_filter

st.title("Subgroups")
results, design = require_results()
st.caption("A k-level subgroup fixes the values of k factors. Log disparity (LD) compares its "
           "deviation rate with that of every row outside it: LD = logit(rate) - "
           "logit(rate outside); LD > 0 (red) means more deviating answers than the rest.")

where = subset_filter(design, key="subgroups")
factors = factor_choice(design, "subgroups_factors")
if not factors:
    st.info("Choose at least one factor.")
    st.stop()
c1, c2, c3 = st.columns([2, 1, 1])
levels = list(range(1, min(3, len(factors)) + 1))
level = c1.radio("Highest subgroup level", levels, index=min(1, len(levels) - 1),
                 horizontal=True, key="subgroups_level",
                 help="1: one factor fixed; 2: every pair of values of two factors; 3: triples")
test = c2.selectbox("p-value", TESTS, key="subgroups_test",
                    format_func={"wald": "Wald z", "fisher": "Fisher exact"}.get,
                    help="Wald z on LD agrees with the CI; Fisher's exact test suits small "
                         "subgroups")
min_n = c3.number_input("Small n below", min_value=1, value=MIN_N, step=5,
                        key="subgroups_min_n")

try:
    cells = cells_for(results, design, factors, where)
    table = subgroups(cells, factors, max_level=level, test=test, min_n=int(min_n))
except AnalysisError as exc:
    st.error(str(exc))
    st.stop()

add_to_report_button("subgroups", {"factors": factors, "level": level, "test": test,
                                   "min_n": int(min_n), "where": where})
m1, m2, m3, m4 = st.columns(4)
m1.metric("Subgroups", f"{len(table):,}")
m2.metric("Rows in subset", f"{int(cells[N].sum()):,}")
m3.metric("Adjusted p < 0.05", f"{int((table[P_ADJUSTED] < 0.05).sum()):,}")
m4.metric("Small n", f"{int(table[SMALL_N].sum()):,}")
if table[LD_UNDEFINED].any():
    st.warning(f"{int(table[LD_UNDEFINED].sum())} subgroups have no log disparity: they hold "
               "every row of the subset, or the outcome never/always deviates in it.")

st.subheader("Sunburst")
st.caption("Inner ring: values of the first factor; each next ring splits by the next factor. "
           "Size = n, colour = LD (red: more deviation than the rest, blue: less).")
fig = sunburst_figure(table, factors)
st.plotly_chart(fig, key="subgroups_sunburst_chart")
figure_downloads(fig, "subgroups_sunburst", key="subgroups_sunburst")

st.subheader("Table")
st.caption(f"Click a column header to sort. Adjusted p: Benjamini-Hochberg across all "
           f"{int(table[P_ADJUSTED].notna().sum()):,} subgroups with a p-value (filtering the "
           "view below does not change it).")
shown = value_filter(table, factors, key="subgroups_show")
st.dataframe(shown, hide_index=True, column_config=COLUMN_CONFIG, key="subgroups_table",
             column_order=[SUBGROUP, *[c for c in shown.columns if c != SUBGROUP]])
table_download(shown, "subgroups", key="subgroups_table")
