"""Page sections of the benchmark's own measurement error (docs/measurement_error.md):
the variance components of the facets with the total-error intervals
(:func:`total_error_section`, ``bw.variance_components``) and the design study
(:func:`d_study_section`, ``bw.d_study``). The Planner page draws both; the Subgroups and
Compare pages draw :func:`total_error_expander` (one line each)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from analysis import reproduce as rp
from analysis.design import Design
from analysis.errors import AnalysisError
from analysis.options.variance import DStudyOptions, VarianceOptions
from ui.common import analysis_result
from ui.options import other_options
from ui.reproduce import reproduce
from ui.widgets import each_note, md

__all__ = ["d_study_section", "deviation_metric_headline", "total_error_expander",
           "total_error_headline", "total_error_section"]

_ERROR_COLUMNS = ["quantity", "label", "estimate", "n", "ci_low_sampling", "ci_high_sampling",
                  "ci_low", "ci_high", "se_ratio", "dominant"]
_COMPONENT_COLUMNS = ["component", "levels", "variance", "sd", "share", "ci_low", "ci_high",
                      "note"]
#: Rows up to which the pages' headline boxes estimate the facets by default (a REML fit
#: of ~2 s at 100k rows; above it a larger table's first render stays at its speed:
#: issue 44, and the toggle turns the box on).
HEADLINE_MAX_ROWS = 200_000


def _headline_default(results: pd.DataFrame) -> bool:
    return len(results) <= HEADLINE_MAX_ROWS


_D_COLUMNS = ["change", "cost", "extra_cost", "se_rate", "se_difference", "g_coefficient",
              "se_gain_per_cost"]


def _facet_choice(results: pd.DataFrame, design: Design, key: str) -> tuple[str, ...]:
    from analysis.variance_components import default_facets

    found = default_facets(results, design)
    columns = [c for c in results.columns if c not in design.of_kind("model", "domain")]
    return tuple(st.multiselect(
        VarianceOptions.label("facets"), columns, default=[c for c in found if c in columns],
        help=VarianceOptions.help("facets"), key=f"{key}_facets"))


def _shares_sentence(components: pd.DataFrame) -> str:
    fitted = components.dropna(subset=["variance"]).sort_values("share", ascending=False)
    parts = [f"{r.component} {100 * r.share:.1f} %" for r in fitted.itertuples()]
    return "Share of the total variance: " + ", ".join(parts) + "."


def total_error_section(results: pd.DataFrame, design: Design, *, key: str,
                        where: dict | None = None, compact: bool = False) -> None:
    """Variance components of the facets, their shares, and each headline number's
    sampling and total-error intervals with the dominant facet."""
    facets = _facet_choice(results, design, key)
    # 0 on a page (the fit alone is quick; each draw refits): the analyst asks for them
    boot = st.number_input(VarianceOptions.label("n_resamples") + " (intervals of the "
                           "components; 0: none)", 0, 1000, 0,
                           help=VarianceOptions.help("n_resamples"), key=f"{key}_boot")
    more: dict = {}
    if not compact:  # compact: inside the pages' expander, which cannot hold another
        with st.expander("Other options"):
            # a literal key: the pages' option keys are read from the source
            # (tests/app/test_page_options.py); the full section is the Planner's
            more = other_options(VarianceOptions, ("facets", "n_resamples"),
                                 key="planner_variance_option")
    try:
        opts = VarianceOptions.coerce(None, facets=facets, n_resamples=int(boot), **more)
        result = analysis_result("variance_components", results, design, opts,
                                 **({"where": where} if where else {}))
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return
    errors = result.tables["total_error"]
    st.markdown(md(_shares_sentence(result.table)))
    if result.meta.get("dominant"):
        first = errors.iloc[0]
        st.markdown(f"**{md(first['label'])}**: " + md(
            f"{first['estimate']:.4f}, sampling interval [{first['ci_low_sampling']:.4f}, "
            f"{first['ci_high_sampling']:.4f}], over the facets [{first['ci_low']:.4f}, "
            f"{first['ci_high']:.4f}] (x{first['se_ratio']:.2g} wider); ")
            + f"**{md(first['dominant'])}** adds the most variance.")
    st.dataframe(result.table[_COMPONENT_COLUMNS], hide_index=True, key=f"{key}_components")
    shown = errors if not compact else errors[errors["quantity"].isin(["rate", "difference"])]
    st.dataframe(shown[_ERROR_COLUMNS], hide_index=True, key=f"{key}_errors")
    st.caption(md(f"{result.settings['method']}. Sampling interval: rows independent. "
                  f"Total-error interval: plus the facets' variance, t with Satterthwaite "
                  f"df (docs/measurement_error.md)."))
    each_note(result.notes)
    reproduce(rp.api_view(opts), design, where, f"{key}_repro")


def total_error_expander(results: pd.DataFrame, design: Design, *, key: str,
                         where: dict | None = None) -> None:
    """The total-error section in an expander (the Subgroups and Compare pages)."""
    with st.expander("Measurement error: intervals over templates, seeds and judges",
                     icon=":material/stacked_line_chart:"):
        # an expander's body runs even when closed: the fit waits for the analyst
        if st.toggle("Estimate the facets' variance (REML)", key=f"{key}_on"):
            total_error_section(results, design, key=key, where=where, compact=True)


def total_error_headline(results: pd.DataFrame, design: Design, *, key: str,
                         where: dict | None = None) -> None:
    """The headline rates and differences with their total-error intervals and the
    facets' shares, one line each, beside the page's answer (the Subgroups and Compare
    pages): the default facets, no bootstrap (quick); a toggle turns it off, the
    expander at the page's foot has the tables."""
    if not st.toggle("Intervals over templates, seeds and judges",
                     value=_headline_default(results), key=f"{key}_headline",
                     help="REML variance components of the design's random facets "
                          "(docs/measurement_error.md); details at the foot of the page; "
                          f"on by default up to {HEADLINE_MAX_ROWS:,} rows"):
        return
    try:
        result = analysis_result("variance_components", results, design,
                                 VarianceOptions.coerce(None, n_resamples=0),
                                 **({"where": where} if where else {}))
    except AnalysisError as exc:  # no facet, constant outcome ...: say so, quietly
        st.caption(md(f"No interval over the facets: {exc}"))
        return
    lines = result.meta.get("headline", [])
    if lines:
        st.info("**Over the facets** (" + md(", ".join(result.settings["facets"])) + "):  \n"
                + "  \n".join(md(line) for line in lines))


def deviation_metric_headline(results: pd.DataFrame, design: Design, *, by: str,
                              factors: list[str], joint: bool, ideal: float,
                              where: dict | None = None) -> None:
    """The eCDF page: each model's deviation metric with its total-error interval over
    the facets and their shares, when the curves are the models, the ideal value is 0
    and the subgroups are the factors' joint combinations (then the metric is the mean
    of the subgroups' rates, linear in the cells: docs/measurement_error.md)."""
    if not st.toggle("Deviation metric over templates, seeds and judges",
                     value=_headline_default(results), key="ecdf_measurement_headline",
                     help="REML variance components of the design's random facets "
                          f"(docs/measurement_error.md); on by default up to "
                          f"{HEADLINE_MAX_ROWS:,} rows"):
        return
    if by not in design.of_kind("model") or ideal != 0 or not joint:
        st.caption("No interval over the facets for this choice: it needs the curves by "
                   "the model factor, the ideal value 0 and the level that combines every "
                   "chosen factor (docs/measurement_error.md).")
        return
    try:
        result = analysis_result("variance_components", results, design,
                                 VarianceOptions.coerce(None, n_resamples=0),
                                 metric_factors=tuple(factors),
                                 **({"where": where} if where else {}))
    except AnalysisError as exc:
        st.caption(md(f"No interval over the facets: {exc}"))
        return
    from analysis.variance_components import headline

    lines = headline(result.tables["total_error"], quantities=("deviation metric",))
    if lines:
        st.info("**Deviation metric over the facets** ("
                + md(", ".join(result.settings["facets"])) + "):  \n"
                + "  \n".join(md(line) for line in lines))


def _judge_call_price(key: str) -> float | None:
    """Dollars per judge call from the judges' cost model (``judges/cost.py``: the
    bundled or ``$BIAS_WORKBENCH_PRICES`` price table), for a judge model and the tokens of
    one call the analyst gives; None when not asked for or unpriced."""
    from judges.cost import PriceTable
    from judges.errors import PriceError

    with st.expander("Cost per judge call from the judges' price table"):
        try:
            table = PriceTable.load()
        except PriceError as exc:
            st.error(md(str(exc)))
            return None
        c1, c2, c3, c4 = st.columns(4)
        section = c1.selectbox("Provider", sorted(table.sections), key=f"{key}_provider")
        models = sorted(m for m in table.sections.get(section, {}) if m != "*")
        if not models:
            st.caption(md(f"No priced model under {section} in {table.source}."))
            return None
        model = c2.selectbox("Judge model", models, key=f"{key}_judge_model")
        tokens_in = c3.number_input("Input tokens per call", 1, 1_000_000, 600,
                                    key=f"{key}_tokens_in")
        tokens_out = c4.number_input("Output tokens per call", 1, 1_000_000, 60,
                                     key=f"{key}_tokens_out")
        use = st.toggle("Use this price", key=f"{key}_use_price")
        price = table.cost(section, model, int(tokens_in), int(tokens_out))
        st.caption(md(f"{section} / {model}: ${price:.6f} per call ({table.source}; check the "
                      f"prices before relying on them)." if price is not None
                      else f"{model} has no price in {table.source}."))
        return price if use else None


def d_study_section(results: pd.DataFrame, design: Design, *, key: str = "dstudy",
                    where: dict | None = None) -> None:
    """The design study: the SE and cost of one more level / ten more / twice the levels
    of each facet, the cheapest design reaching a target SE, the best at the same cost."""
    facets = _facet_choice(results, design, key)
    c1, c2, c3 = st.columns(3)
    target_se = c1.number_input(DStudyOptions.label("target_se"), 0.0, 1.0, 0.0, step=0.001,
                                format="%.4f", help="0: no target", key=f"{key}_target")
    answer_cost = c2.number_input(DStudyOptions.label("answer_cost"), 0.0, 1e9, 1.0,
                                  help=DStudyOptions.help("answer_cost"), key=f"{key}_answer")
    priced = _judge_call_price(key)
    if priced is None:
        from analysis.d_study import judge_side

        # a judge column: a judge call priced as an answer (both one LLM call) until set
        default = 1.0 if judge_side(facets) else 0.0
        judge_cost = c3.number_input(DStudyOptions.label("judge_cost"), 0.0, 1e9, default,
                                     format="%.6f", help=DStudyOptions.help("judge_cost")
                                     + " (default on this page: 1, as an answer, when the "
                                     "table has a judge column)", key=f"{key}_judge")
    else:  # the price table's, in dollars (the answer cost is then in dollars too)
        judge_cost = priced
        c3.metric(DStudyOptions.label("judge_cost"), f"${priced:.6f}")
    with st.expander("Other options"):
        more = other_options(DStudyOptions, ("facets", "target_se", "answer_cost",
                                             "judge_cost"),
                             key="planner_dstudy_option")  # literal, as above
    try:
        opts = DStudyOptions.coerce(None, facets=facets, target_se=target_se or None,
                                    answer_cost=answer_cost, judge_cost=judge_cost, **more)
        result = analysis_result("d_study", results, design, opts,
                                 **({"where": where} if where else {}))
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return
    t = result.tables
    if result.meta.get("one_or_ten"):
        st.markdown(f"**{md(result.meta['one_or_ten'])}**")
    if result.meta.get("answer"):
        st.markdown(f"**{md(result.meta['answer'])}**")
        st.markdown(md(result.meta["changes"]))
    rows = [t["current"], result.table]
    if len(t["cheapest"]):
        rows.append(t["cheapest"].assign(change="cheapest reaching the target: "
                                         + t["cheapest"]["change"]))
    if len(t["best_at_cost"]):
        rows.append(t["best_at_cost"].assign(change="smallest SE at the current cost: "
                                             + t["best_at_cost"]["change"]))
    table = pd.concat(rows, ignore_index=True)
    st.dataframe(table[[c for c in _D_COLUMNS if c in table]], hide_index=True,
                 key=f"{key}_table")
    st.caption(md(f"Target: the {result.settings['target']}. Projected from the variance "
                  f"components (exact for balanced designs); g_coefficient: models as the "
                  f"objects of measurement. {result.settings['method']}."))
    each_note(result.notes)
    view = rp.api_view(opts, function="d_study")
    reproduce(dataclasses.replace(view, options=(("d-study", True), *view.options)), design,
              where, f"{key}_repro")
