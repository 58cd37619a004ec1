"""Subgroups page: deviation rate and log disparity of every 1..3-level subgroup, sunburst."""

import streamlit as st

from analysis.columns import SUBGROUP
from analysis.errors import AnalysisError
from analysis.figures.subgroups import sunburst_figure
from analysis.options import FROM_DESIGN
from analysis.options.subgroups import TESTS
from analysis.options.subgroups import SubgroupsOptions as Opts
from ui.common import (
    analysis_result,
    cells_for,
    figure_downloads,
    require_results,
    subset_filter,
    table_download,
)
from ui.defaults import choose_hint
from ui.findings import (
    clicked_sector,
    colour_choice,
    rows_panel,
    selected_subgroup,
    top_findings_panel,
)
from ui.importance_linear import deviation_view_note, group_means_section
from ui.judge_noise import COLUMN_CONFIG as NOISE_COLUMNS
from ui.judge_noise import noise_options
from ui.measurement_error import total_error_expander, total_error_headline
from ui.native import native_scores_view
from ui.navigation import route_first_visit
from ui.options import other_options
from ui.pooling import POOLED_COLUMNS_CONFIG, colour_title, pooled_notes, pooled_toggle, shown
from ui.power import COLUMN_CONFIG as POWER_COLUMNS
from ui.power import power_widgets
from ui.report import add_to_report_button
from ui.reproduce import reproduce_subgroups
from ui.subgroups import (
    COLUMN_CONFIG,
    TEST_LABELS,
    adjusted_column,
    answer_notes,
    bbq_scores_section,
    cluster_toggle,
    default_factors,
    factor_choice,
    table_caption,
    value_filter,
)
from ui.uncertainty import bootstrap_options
from ui.widgets import md

route_first_visit()

st.title("Subgroups")
results, design = require_results()
deviation_view_note(design)  # a continuous outcome: say what is analysed
group_means_section(results, design)  # ... and show its means per factor value
st.caption("A k-level subgroup fixes the values of k factors. Log disparity (LD) compares its "
           "deviation rate with that of every row outside it: LD = logit(rate) - "
           "logit(rate outside); LD > 0 (red) means more deviating answers than the rest.")

where = subset_filter(design, key="subgroups")
c0, c1, c2, c3 = st.columns([3, 1, 1, 1])  # compact controls above the answer
with c0:
    factors = factor_choice(design, "subgroups_factors", results=results, models=True)
if not factors:
    choose_hint("Choose at least one factor (**Factors** above): each ring of the sunburst "
                "splits by one.", "subgroups_factors", default_factors(design))
    st.stop()
levels = list(range(1, min(3, len(factors)) + 1))
level = c1.radio(Opts.label("level"), levels, index=min(1, len(levels) - 1),
                 horizontal=True, key="subgroups_level",
                 help="1: one factor fixed; 2: every pair of values of two factors; 3: triples")
test = c2.selectbox(Opts.label("test"), TESTS, index=TESTS.index(Opts.default("test")),
                    key="subgroups_test", format_func=TEST_LABELS.get, help=Opts.help("test"))
min_n = c3.number_input(Opts.label("min_n"), min_value=1, value=Opts.default("min_n"), step=5,
                        key="subgroups_min_n")

cluster = cluster_toggle(results, design)
pooled = pooled_toggle(Opts, "subgroups")
answer, options = st.container(), st.container()  # the figure first, its options below
with options, st.expander("Other options", expanded=False):
    more = other_options(Opts, ("level", "test", "min_n", "n_resamples"), key="subgroups_option")
with options:
    grey, power = power_widgets()
    boot = bootstrap_options(results, design, "subgroups", cluster=cluster)
noise = noise_options(results, "subgroups", alpha=True)
try:  # widgets -> the options -> one cached call of analysis.api.subgroups
    opts = Opts.coerce(
        level=level, test=test, min_n=int(min_n), **more, **power, pooled=pooled,
        cluster=FROM_DESIGN if cluster and cluster == design.cluster else cluster,
        **({"ci": "bootstrap", "n_resamples": boot["n_resamples"]} if boot else {}),
        **({"judge_noise": noise["replicates"], "noise_mode": noise["mode"],
            "noise_alpha": noise["alpha"]} if noise else {}))
    cells = cells_for(results, design, list(dict.fromkeys(
        [*factors, *([cluster] if cluster else [])])), where)
    result = analysis_result("subgroups", results, design, opts, cells=cells,
                             factors=factors, where=where)
except AnalysisError as exc:
    st.error(md(str(exc)))
    st.stop()
full, table = result.tables["all"], result.table
if noise:
    st.info(result.meta["judge_noise_summary"])
with answer:
    left, right = st.columns([3, 2])
    with left:
        r1, r2 = st.columns(2)
        colour = colour_choice(container=r1)
        sizes = r2.radio("Sector size", ["n", "equal"], horizontal=True, key="subgroups_sizes",
                         format_func={"n": "by n", "equal": "equal (every value visible)"}.get)
        fig = sunburst_figure(shown(full, pooled), factors, grey_undetectable=grey,
                              sizes=sizes, colour=colour,
                              colour_title=colour_title(pooled and colour == "ld"))
        clicked = st.plotly_chart(fig, key="subgroups_sunburst_chart", on_select="rerun",
                                  selection_mode="points")
        if len(factors) > level:  # a factor beyond the level has no ring: say so (issue 42)
            st.caption(md(f"The sunburst has {level} ring(s): the subgroups fix at most "
                          f"{level} of the {len(factors)} factors (Level); "
                          f"{', '.join(factors[level:])} has no ring of its own. Choose level "
                          f"{min(3, len(factors))} to see "
                          f"{'it' if len(factors) - level == 1 else 'them'}."))
    with right:
        picked = top_findings_panel(shown(table, pooled), factors, colour, int(min_n),
                                    adjust=opts.adjust)
    figure_downloads(fig, "subgroups_sunburst", key="subgroups_sunburst")
    add_to_report_button("subgroups", {"factors": factors, "level": level, "test": test,
                                       "min_n": int(min_n), "where": where, **more,
                                       **power, "pooled": pooled},
                         ci_prefix="subgroups", noise_prefix="subgroups")
    answer_notes(result, results, where)
    pooled_notes(result, "Sunburst and top findings")
total_error_headline(results, design, key="subgroups_measurement", where=where)  # facets

table_caption(table, full, opts.adjust)
shown = value_filter(table, factors, key="subgroups_show")
event = st.dataframe(shown, hide_index=True, key="subgroups_table", on_select="rerun", height=420,
                     selection_mode="single-row",
                     column_config=COLUMN_CONFIG | POWER_COLUMNS | NOISE_COLUMNS
                     | POOLED_COLUMNS_CONFIG
                     | adjusted_column(opts.adjust, "every subgroup in the table"),
                     column_order=[SUBGROUP, *[c for c in shown.columns if c != SUBGROUP]])
table_download(shown, "subgroups", key="subgroups_table")
rows_panel(results, where, selected_subgroup(event, shown, factors)
           or clicked_sector(clicked, fig, full, factors) or picked)
bbq_scores_section(results, where)
native_scores_view(results, design, where, page="subgroups")  # BBQ s_DIS / s_AMB ... with CIs
reproduce_subgroups(design, opts, factors, where)
total_error_expander(results, design, key="subgroups_measurement", where=where)  # facets
