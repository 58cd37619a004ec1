"""eCDF page: subgroup deviation rates per model, the deviation metric and KS tests."""

import streamlit as st

from analysis.columns import N_SUBGROUPS
from analysis.figures.ecdf import ecdf_figure
from analysis.options import FROM_DESIGN
from analysis.options.ecdf import EcdfOptions as Opts
from analysis.reproduce import api_view
from ui.common import analysis_result, cells_for, figure_downloads, require_results, subset_filter
from ui.ecdf import ks_section
from ui.importance_linear import deviation_view_note
from ui.measurement_error import deviation_metric_headline
from ui.navigation import route_first_visit
from ui.options import other_options
from ui.pooling import ecdf_title, pooled_notes, pooled_toggle, shown
from ui.report import add_to_report_button
from ui.reproduce import reproduce
from ui.subgroups import COLUMN_CONFIG, factor_choice, missing_outcome_note
from ui.uncertainty import bootstrap_options, show_intervals
from ui.widgets import each_note, md, show_table, stop_on_error

route_first_visit()

st.title("eCDF")
results, design = require_results()
deviation_view_note(design)  # a continuous outcome: say what is analysed
st.caption("Each subgroup (a combination of values of the chosen factors) gives one deviation "
           "rate, unweighted; one curve per value of the comparison factor. The deviation "
           "metric is the area between a curve and the ideal C, i.e. the mean |rate - C| "
           "(smaller is better).")

where = subset_filter(design, key="ecdf")
preferred = (design.of_kind("model") + design.of_kind("prompt") + design.names)[0]
c1, c2 = st.columns([1, 2])
by = c1.selectbox("Compare curves by", design.names, key="ecdf_by",
                  index=design.names.index(preferred), help="Usually the model")
with c2:
    factors = factor_choice(design, "ecdf_factors", exclude=[by], results=results,
                            label="Subgroups: combinations of these factors")
if not factors:
    st.info("Choose at least one factor to form subgroups.")
    st.stop()
c1, c2, c3 = st.columns(3)
level = c1.selectbox(Opts.label("level"), range(len(factors), 0, -1),
                     key=f"ecdf_level_{len(factors)}",  # back to "all" when factors change
                     format_func=lambda k: f"all {k}" if k == len(factors) else f"any {k}",
                     help="All chosen factors (the default) or every combination of fewer")
ideal = c2.number_input(Opts.label("ideal"), value=Opts.default("ideal"), step=0.05,
                        key="ecdf_ideal")
cutoff = c3.number_input(Opts.label("cutoff"), value=Opts.default("cutoff"), min_value=0.0,
                         max_value=1.0, step=0.05, key="ecdf_cutoff", help=Opts.help("cutoff"))

pooled = pooled_toggle(Opts, "ecdf")
answer = st.container()  # the figure first, the other options below it
with st.expander("Other options", expanded=False):
    more = other_options(Opts, ("level", "ideal", "cutoff", "n_resamples"), key="ecdf_option")
summary_box, intervals_box = st.container(), st.container()
with intervals_box:
    boot = bootstrap_options(results, design, "ecdf", seed=more.get("seed"))
with stop_on_error():  # widgets -> the options -> one cached call of analysis.api.ecdf
    opts = Opts.coerce({**more, "level": level, "ideal": ideal, "cutoff": cutoff,
                        "pooled": pooled, **(
        {"ci": "bootstrap", "n_resamples": boot["n_resamples"],
         "cluster": FROM_DESIGN if boot["cluster"] == design.cluster else boot["cluster"]}
        if boot else {})})
    cells = cells_for(results, design, [by, *factors], where)
    result = analysis_result("ecdf", results, design, opts, cells=cells, by=by,
                             factors=factors, where=where)
summary, ks, rates = result.table, result.tables["ks"], result.tables["rates"]

with answer:
    missing_outcome_note(results, where)
    add_to_report_button("ecdf", {"by": by, "factors": factors, "level": level, "ideal": ideal,
                                  "cutoff": cutoff, "where": where, **more, "pooled": pooled},
                         ci_prefix="ecdf")
    few = summary[summary[N_SUBGROUPS] < 5]
    if len(few):
        st.warning("Few subgroups on " + ", ".join(f"{md(r[by])} ({r[N_SUBGROUPS]})" for r in
                                                    few.to_dict(orient="records"))
                   + ": the eCDF is coarse and the KS test has little power.")
    fig = ecdf_figure(shown(rates, pooled), summary, by=by, ideal=ideal, cutoff=cutoff, ks=ks,
                      title=ecdf_title(by, pooled))
    st.plotly_chart(fig, key="ecdf_chart")
    pooled_notes(result, "Curves and deviation metric")
    figure_downloads(fig, "ecdf", key="ecdf_figure")

with summary_box:
    st.subheader("Deviation metric per curve")
    show_table(summary, "ecdf_summary", key="ecdf_summary", column_config=COLUMN_CONFIG)
if boot:
    with intervals_box:
        st.caption("Bootstrap intervals: deviation metric per curve, the difference between "
                   "two curves and the KS statistic (its percentile interval is biased "
                   "upwards).")
        each_note(result.meta["bootstrap"].get("notes", []), st.warning)
        show_intervals(result.tables["bootstrap"], "ecdf_bootstrap", key="ecdf_boot",
                       confidence=opts.confidence)
deviation_metric_headline(results, design, by=by, factors=list(factors),
                          joint=level == len(factors), ideal=ideal, where=where)
reproduce(api_view(opts, factors=factors, by=by), design, where, "ecdf_repro")

ks_section(ks, by, opts.adjust)

with st.expander(f"Subgroup rates ({len(rates):,} rows)"):
    show_table(rates, "ecdf_subgroup_rates", key="ecdf_rates", column_config=COLUMN_CONFIG)
