"""Subgroups page: deviation rate and log disparity of every 1..3-level subgroup, sunburst."""

import streamlit as st

from analysis.reproduce import api_view
from ui.common import figure_downloads, require_results
from ui.findings import clicked_sector, rows_panel, selected_subgroup
from ui.importance_linear import deviation_view_note, group_means_section
from ui.measurement_error import total_error_expander, total_error_headline
from ui.native import native_scores_view
from ui.navigation import route_first_visit
from ui.pooling import pooled_notes
from ui.report import add_to_report_button
from ui.reproduce import reproduce
from ui.subgroups import answer_notes, bbq_scores_section
from ui.subgroups_page import controls, subgroups_result, subgroups_table, sunburst_panel
from ui.widgets import stop_on_error

route_first_visit()

st.title("Subgroups")
results, design = require_results()
deviation_view_note(design)  # a continuous outcome: say what is analysed
group_means_section(results, design)  # ... and show its means per factor value
st.caption("A k-level subgroup fixes the values of k factors. Log disparity (LD) compares its "
           "deviation rate with that of every row outside it: LD = logit(rate) - "
           "logit(rate outside); LD > 0 (red) means more deviating answers than the rest.")

c = controls(results, design)
where, factors = c.where, c.factors
with stop_on_error():  # widgets -> the options -> one cached call of analysis.api.subgroups
    o, answer = subgroups_result(results, design, c)
result, opts = o.result, o.opts
if o.noise:
    st.info(result.meta["judge_noise_summary"])
with answer:
    fig, clicked, picked = sunburst_panel(result, c, o)
    figure_downloads(fig, "subgroups_sunburst", key="subgroups_sunburst")
    add_to_report_button("subgroups", {"factors": factors, "level": c.level, "test": c.test,
                                       "min_n": c.min_n, "where": where, **o.more,
                                       **o.power, "pooled": o.pooled},
                         ci_prefix="subgroups", noise_prefix="subgroups")
    answer_notes(result, results, where)
    pooled_notes(result, "Sunburst and top findings")
total_error_headline(results, design, key="subgroups_measurement", where=where)  # facets

event, rows = subgroups_table(result, factors, opts.adjust)
rows_panel(results, where, selected_subgroup(event, rows, factors)
           or clicked_sector(clicked, fig, result.tables["all"], factors) or picked)
bbq_scores_section(results, where)
native_scores_view(results, design, where, page="subgroups")  # BBQ s_DIS / s_AMB ... with CIs
reproduce(api_view(opts, factors=factors), design, where, "subgroups")
total_error_expander(results, design, key="subgroups_measurement", where=where)  # facets
