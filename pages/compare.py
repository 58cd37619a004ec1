"""Compare page: which model (or setting) is less biased on the same prompts, and where."""

import streamlit as st

from analysis.columns import SUBGROUP
from analysis.compare import (
    ADJUSTMENT_NAMES,
    MODEL_A,
    MODEL_B,
    SUBGROUP_ADJUST,
    VERDICTS_DIFFER,
)
from analysis.errors import AnalysisError
from analysis.labels import adjusted_method
from analysis.multiple_testing import adjusted_label
from ui.common import (
    figure_downloads,
    page_link,
    require_results,
    subset_filter,
    table_download,
)
from ui.compare import (
    choices,
    column_config,
    comparison_result,
    pair_choice,
    pair_figures,
    pairing_failed,
    readings,
)
from ui.measurement_error import total_error_expander, total_error_headline
from ui.native import native_deltas_view
from ui.navigation import route_first_visit
from ui.report import add_to_report_button
from ui.reproduce import reproduce_compare
from ui.widgets import md

route_first_visit()

st.title("Compare")
results, design = require_results(need_outcome=False)
st.caption("Every value of the compared factor answers the same prompts, so each prompt is "
           "its own control: the answers are paired on the prompt and only the pairs are "
           "compared (McNemar's test for the 0/1 deviation, paired t and Wilcoxon for a "
           "score). Difference = b - a.")
page_link("pages/counterfactual.py", label="Swap one factor within its template instead "
          "(Counterfactual pairs)", icon=":material/swap_horiz:")

where = subset_filter(design, key="compare")
settings = choices(design, results)
if design.outcome is None and settings["score"] is None:
    st.info("Choose a numeric score, or give the design an outcome on the Design page.")
    st.stop()
try:
    result = comparison_result(results, design, settings, where)
    c = result.raw
except AnalysisError as exc:
    pairing_failed(exc)  # the message, and a button for the unit that would pair
    st.stop()

add_to_report_button("compare", {**settings, "where": where})
readings(c)
total_error_headline(results, design, key="compare_measurement", where=where)

st.subheader("Overall, per pair")
st.dataframe(c.overall, hide_index=True, column_config=column_config(result.settings),
             key="compare_overall_table")
table_download(c.overall, "compare_overall", key="compare_overall")
with st.expander("Prompts per value (rows, rows without outcome, duplicates)"):
    st.dataframe(c.pairing.counts, hide_index=True)
native_deltas_view(results, design, settings, where)  # BBQ's s_DIS / s_AMB ... paired

pair = pair_choice(c)
if pair is None:
    st.info("Choose prompt factors above to see in which subgroups the values differ.")
else:
    table = c.subgroups[pair]
    by_subgroup = adjusted_method(result.settings, "subgroup_adjust", fixed=SUBGROUP_ADJUST)
    st.subheader(f"Where {md(pair[0])} and {md(pair[1])} differ")
    st.caption(f"Intervals: percentile bootstrap resampling {md(c.pairing.resampled)} "
               f"({settings['n_resamples']:,} replicates, seeded): both answers to a prompt "
               f"stay together. {adjusted_label(by_subgroup)}: "
               f"{ADJUSTMENT_NAMES[by_subgroup]} across the subgroups.")
    try:
        fig, sun = pair_figures(c, pair, design, settings, where)
    except AnalysisError as exc:
        st.error(md(str(exc)))
        st.stop()
    st.plotly_chart(fig, key="compare_dumbbell_chart")
    figure_downloads(fig, f"compare_{pair[0]}_{pair[1]}", key="compare_dumbbell")
    if sun is not None:
        st.caption("Sunburst: colour = LD under b - LD under a (red: the subgroup stands out "
                   "more under b). Verdicts differ: its own LD is significant for one value "
                   "and not the other.")
        st.plotly_chart(sun, key="compare_sunburst_chart")
        figure_downloads(sun, f"compare_{pair[0]}_{pair[1]}_sunburst", key="compare_sunburst")
        flagged = int(table[VERDICTS_DIFFER].sum())
        if flagged:
            st.caption(f"{flagged} subgroups have different verdicts under the two values.")
    shown = table.drop(columns=[MODEL_A, MODEL_B])
    st.dataframe(shown, hide_index=True, key="compare_table",
                 column_config=column_config(result.settings, subgroups=True),
                 column_order=[SUBGROUP, *[col for col in shown.columns if col != SUBGROUP]])
    table_download(shown, f"compare_subgroups_{pair[0]}_{pair[1]}", key="compare_subgroups")
reproduce_compare(design, settings, where)
total_error_expander(results, design, key="compare_measurement", where=where)  # facets
