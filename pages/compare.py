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
from analysis.reproduce import compare_view
from ui.common import page_link, require_results, subset_filter
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
from ui.reproduce import reproduce
from ui.widgets import md, show_figure, show_table, stop_on_error

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
show_table(c.overall, "compare_overall", key="compare_overall", table_key="compare_overall_table",
           column_config=column_config(result.settings))
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
    with stop_on_error():
        fig, sun = pair_figures(c, pair, design, settings, where)
    show_figure(fig, f"compare_{pair[0]}_{pair[1]}", key="compare_dumbbell",
                chart="compare_dumbbell_chart")
    if sun is not None:
        st.caption("Sunburst: colour = LD under b - LD under a (red: the subgroup stands out "
                   "more under b). Verdicts differ: its own LD is significant for one value "
                   "and not the other.")
        show_figure(sun, f"compare_{pair[0]}_{pair[1]}_sunburst", key="compare_sunburst",
                    chart="compare_sunburst_chart")
        flagged = int(table[VERDICTS_DIFFER].sum())
        if flagged:
            st.caption(f"{flagged} subgroups have different verdicts under the two values.")
    shown = table.drop(columns=[MODEL_A, MODEL_B])
    show_table(shown, f"compare_subgroups_{pair[0]}_{pair[1]}", key="compare_subgroups",
               table_key="compare_table",
               column_config=column_config(result.settings, subgroups=True),
               column_order=[SUBGROUP, *[col for col in shown.columns if col != SUBGROUP]])
reproduce(compare_view(settings, design_cluster=design.cluster), design, where, "compare_repro")
total_error_expander(results, design, key="compare_measurement", where=where)  # facets
