"""Disparity page: a numeric feature across groups, the SAGED diagnosis (methods.md s. 5)."""

import streamlit as st

from analysis.factor_defaults import numeric_columns
from analysis.figures.disparity import selection_figure, statistic_figure
from analysis.options.disparity import SAGED_FIELDS
from analysis.reproduce import api_view
from ui.common import per_table, require_results, subset_filter
from ui.defaults import choose_hint, page_defaults
from ui.disparity import (
    box_of,
    column_config,
    data_note,
    disparity_options,
    disparity_result,
    metric_row,
    permutation_caption,
    to_options,
)
from ui.navigation import route_first_visit
from ui.report import add_to_report_button
from ui.reproduce import reproduce
from ui.saged_stats import saged_section
from ui.widgets import md, show_figure, show_table, stop_on_error

route_first_visit()

st.title("Disparity")
results, design = require_results(need_outcome=False)
st.caption("A numeric feature per response (a sentiment or toxicity score from the file, a "
           "judge score, a similarity) compared across groups: a statistic per group, "
           "selection rates and the four-fifths rule, how concentrated the disparity is "
           "(max Z-score, Dixon's Q) and permutation p-values.")
data_note(results)
numeric = per_table(numeric_columns, results, design, design)
if not numeric:
    st.info("The table has no numeric column besides the factors: load a table with a "
            "score column (e.g. sentiment) to use this page.")
    st.stop()

options = disparity_options(design, numeric)
if not options["by"]:
    choose_hint("Choose at least one factor to group by (**Group by** above).", "disparity_by",
                page_defaults(design, 1) or design.names[:1])
    st.stop()
where = subset_filter(design, "disparity")
with stop_on_error():  # everything but the permutation test first, on screen while it runs
    result = disparity_result(results, design, where, options, permutation=False)
    feature = options["feature"] + (f" - {options['baseline']}" if options["baseline"] else "")
    box = box_of(result, feature, results, design)

report, settings = result.raw, result.settings
stat, columns = settings["statistic"], column_config(settings)
missing = report.settings["n_missing"]
if missing:
    st.warning(f"{missing:,} rows have no value of {md(feature)} and are left out.")
metric_row(report)
polarity = report.settings["polarity"] or "of unknown polarity"
st.caption(f"Selected: {report.settings['selection_rule']} (standard "
           f"{report.settings['standard']}); higher {md(feature)} is {polarity}, so the selection "
           "rate is " + ("the rate of favourable outcomes." if report.settings["polarity"]
                         else "read as favourable (SAGED's convention)."))

st.subheader("Group statistics")
summary = result.table
fig = statistic_figure(summary, stat, feature=feature)
show_figure(fig, f"disparity_{stat}", key="disparity_stat_fig", chart="disparity_stat_chart")
reproduce(api_view(to_options(options), feature=options["feature"], by=list(options["by"])),
          design, where, "disparity_repro")  # after the answer: the first figure
add_to_report_button("disparity", {k: v for k, v in options.items() if k not in SAGED_FIELDS}
                     | {"where": where})  # the report's section has no SAGED statistics
with st.expander("Distribution per group (box plot)"):
    show_figure(box, "disparity_box", key="disparity_box_fig", chart="disparity_box_chart")
show_table(summary, "disparity_summary", key="disparity_summary")

st.subheader("Selection rates and the four-fifths rule")
sel = result.tables["selection"]
fig = selection_figure(sel, feature=feature)
show_figure(fig, "disparity_selection", key="disparity_selection_fig",
            chart="disparity_selection_chart")
show_table(sel, "disparity_selection", key="disparity_selection", column_config=columns)

st.subheader("Disparity across groups")
st.caption("Min/max ratio and range: how far apart the extreme groups are. Max Z-score and "
           "Dixon's Q: whether one group stands out (concentrated bias) or the groups are "
           "spread (dispersed bias). Across-group std and Z use ddof = 1.")
show_table(result.tables["metrics"], "disparity_metrics", key="disparity_metrics")

st.subheader("Permutation tests")
with stop_on_error():  # last: the rest shows meanwhile (the parts above are not computed again)
    full = disparity_result(results, design, where, options)
if "permutation" not in full.tables:
    st.info("Permutation tests are off (0 permutations).")
else:
    st.caption(permutation_caption(full))
    perm = full.tables["permutation"]
    show_table(perm, "disparity_permutation", key="disparity_permutation",
               column_config=column_config(full.settings))

saged_section(result)
