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
from ui.reproduce import reproduce
from ui.widgets import md

__all__ = ["d_study_section", "total_error_expander", "total_error_section"]

_ERROR_COLUMNS = ["quantity", "label", "estimate", "n", "ci_low_sampling", "ci_high_sampling",
                  "ci_low", "ci_high", "se_ratio", "dominant"]
_COMPONENT_COLUMNS = ["component", "levels", "variance", "sd", "share", "ci_low", "ci_high",
                      "note"]
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
    try:
        opts = VarianceOptions.coerce(None, facets=facets, n_resamples=int(boot))
        result = analysis_result("variance_components", results, design, opts,
                                 **({"where": where} if where else {}))
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return
    errors = result.tables["total_error"]
    st.markdown(md(_shares_sentence(result.table)))
    if result.meta.get("dominant"):
        first = errors.iloc[0]
        st.markdown(md(f"**{first['label']}**: {first['estimate']:.4f}, sampling interval "
                       f"[{first['ci_low_sampling']:.4f}, {first['ci_high_sampling']:.4f}], "
                       f"over the facets [{first['ci_low']:.4f}, {first['ci_high']:.4f}] "
                       f"(x{first['se_ratio']:.2g} wider); **{first['dominant']}** adds the "
                       f"most variance."))
    st.dataframe(result.table[_COMPONENT_COLUMNS], hide_index=True, key=f"{key}_components")
    shown = errors if not compact else errors[errors["quantity"].isin(["rate", "difference"])]
    st.dataframe(shown[_ERROR_COLUMNS], hide_index=True, key=f"{key}_errors")
    st.caption(md(f"{result.settings['method']}. Sampling interval: rows independent. "
                  f"Total-error interval: plus the facets' variance, t with Satterthwaite "
                  f"df (docs/measurement_error.md)."))
    for note in result.notes:
        st.caption(md(note))
    reproduce(rp.api_view(opts), design, where, f"{key}_repro")


def total_error_expander(results: pd.DataFrame, design: Design, *, key: str,
                         where: dict | None = None) -> None:
    """The total-error section in an expander (the Subgroups and Compare pages)."""
    with st.expander("Measurement error: intervals over templates, seeds and judges",
                     icon=":material/stacked_line_chart:"):
        # an expander's body runs even when closed: the fit waits for the analyst
        if st.toggle("Estimate the facets' variance (REML)", key=f"{key}_on"):
            total_error_section(results, design, key=key, where=where, compact=True)


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
    judge_cost = c3.number_input(DStudyOptions.label("judge_cost"), 0.0, 1e9, 0.0,
                                 help=DStudyOptions.help("judge_cost"), key=f"{key}_judge")
    try:
        opts = DStudyOptions.coerce(None, facets=facets, target_se=target_se or None,
                                    answer_cost=answer_cost, judge_cost=judge_cost)
        result = analysis_result("d_study", results, design, opts,
                                 **({"where": where} if where else {}))
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return
    t = result.tables
    if result.meta.get("answer"):
        st.markdown(md(f"**{result.meta['answer']}**"))
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
    for note in result.notes:
        st.caption(md(note))
    view = rp.api_view(opts, function="d_study")
    reproduce(dataclasses.replace(view, options=(("d-study", True), *view.options)), design,
              where, f"{key}_repro")
