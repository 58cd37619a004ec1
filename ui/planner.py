"""Widgets of the Planner page: the grid to fill, a new benchmark's factors, power.

Session-state keys: ``planner_factors``, ``planner_budget``, ``planner_template``,
``planner_new_factors``, ``planner_runs``, ``planner_rate``, ``planner_ld``, ``planner_share``,
``planner_power``.
"""

from __future__ import annotations

import streamlit as st

from analysis.columns import COVERAGE_PERCENTAGE, GINI_INDEX, N_OBSERVED_CELLS
from analysis.errors import AnalysisError
from analysis.options.planning import PlanOptions, PowerOptions
from analysis.planning import Plan
from ui.options import other_options
from ui.widgets import md

__all__ = ["NEW_EXAMPLE", "before_after", "parse_factors", "power_calculator",
           "template_choice", "variants_section"]


#: The new-benchmark box starts with this example (six two-value factors).
NEW_EXAMPLE = "\n".join(f"{f}: no, yes" for f in
                        ["cot", "persona", "few_shot", "doubt", "negated", "long_context"])


def before_after(plan: Plan) -> None:
    """Coverage, Gini index and observed combinations before -> after, as metrics."""
    c = st.columns(3)
    b, a = plan.before, plan.after
    c[0].metric("Coverage", f"{100 * a[COVERAGE_PERCENTAGE]:.2f} %",
                f"{100 * (a[COVERAGE_PERCENTAGE] - b[COVERAGE_PERCENTAGE]):+.2f} points",
                help=f"before: {100 * b[COVERAGE_PERCENTAGE]:.2f} %")
    c[1].metric("Gini index", f"{a[GINI_INDEX]:.4f}", f"{a[GINI_INDEX] - b[GINI_INDEX]:+.4f}",
                delta_color="inverse", help=f"before: {b[GINI_INDEX]:.4f}")
    c[2].metric("Combinations with prompts", f"{a[N_OBSERVED_CELLS]:,}",
                f"{a[N_OBSERVED_CELLS] - b[N_OBSERVED_CELLS]:+,}")


def template_choice(columns: list[str], design) -> str | None:  # noqa: ANN001 - a Design
    """The template column whose variants fill design gaps (default: the design's
    cluster); key ``planner_template``."""
    options = ["(none: no template variants)", *columns]
    default = options.index(design.cluster) if design.cluster in columns else 0
    chosen = st.selectbox(PlanOptions.label("template"), options, index=default,
                          key="planner_template", help=PlanOptions.help("template"))
    return None if chosen == options[0] else chosen


def variants_section(plan: Plan) -> None:
    """What the plan's rows are (fill / gap / variant: counts of prompts), the ranked
    template variants and each nested factor crossed with every template."""
    kinds = plan.add.groupby("kind")["n"].sum() if len(plan.add) else {}
    c = st.columns(3)
    for col, (kind, label) in zip(c, [("fill", "Observed combinations levelled up"),
                                      ("gap", "Gaps from existing templates"),
                                      ("variant", "Prompts from template variants")],
                                  strict=True):
        col.metric(label, f"{int(kinds.get(kind, 0)):,}")
    st.caption(f"Empty combinations ruled out by a constraint: {plan.n_constraint:,}; design "
               f"gaps: {plan.n_gaps:,}; never proposed: {plan.n_excluded:,}.")
    if len(plan.variants):
        st.markdown("**Template variants**, ranked by coverage and Gini gain (coverage and "
                    "Gini index after each variant and all ranked before it; `n_planned`: "
                    "prompts of this plan from it)")
        st.dataframe(plan.variants, hide_index=True, key="planner_variants")
    if len(plan.crossings):
        st.markdown("**Each nested factor crossed with every template** (all its variants)")
        st.dataframe(plan.crossings, hide_index=True, key="planner_crossings")


def parse_factors(text: str) -> dict[str, list[str]]:
    """``"a: x, y\\nb: x, y"`` -> ``{"a": ["x", "y"], "b": ["x", "y"]}``."""
    out: dict[str, list[str]] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if ":" not in line:
            raise AnalysisError(f"Line {i}: write a factor as 'name: value, value'.")
        name, values = line.split(":", 1)
        out[name.strip()] = [v.strip() for v in values.split(",") if v.strip()]
    return out


def power_calculator() -> None:
    """Rate, LD, share and power in (the other options of
    :class:`~analysis.options.planning.PowerOptions`, e.g. alpha, in "Other options",
    ``planner_power_option_<name>``); rows needed out."""
    c = st.columns(4)
    rate = c[0].number_input("Deviation rate outside", 0.01, 0.99, 0.3, 0.01, key="planner_rate")
    ld = c[1].number_input("Log disparity to detect", -5.0, 5.0, 0.4, 0.05, key="planner_ld")
    share = c[2].number_input("Subgroup share of rows", 0.001, 0.999, 0.1, 0.01,
                              format="%.3f", key="planner_share")
    power = c[3].select_slider(PowerOptions.label("power"), [0.5, 0.7, 0.8, 0.9, 0.95],
                               value=PowerOptions.default("power"), key="planner_power",
                               help=PowerOptions.help("power"))
    with st.expander("Other options", expanded=False):
        more = other_options(PowerOptions, ("power",), key="planner_power_option")
    opts = PowerOptions.coerce(more, power=power)
    try:
        from analysis import api as bw

        out = bw.power(rate=rate, ld=ld, share=share, options=opts).raw
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return
    st.metric("Rows needed", f"{out['n_total']:,}",
              help=f"{out['n_subgroup']:,} in the subgroup, {out['n_outside']:,} outside")
    st.caption(f"Subgroup rate {out['rate_subgroup']:.3f} against {rate:g}; power "
               f"{out['achieved_power']:.3f} ({out['method']}) with a two-sided Wald test "
               f"at alpha = {opts.alpha:g}." + (
                   " The power stays at or above the target from this N on (checked up to "
                   f"{out['checked_up_to']:,})" if out["method"] == "exact" else "")
               + (f"; {out['n_first_reaching']:,} rows already reach it, but some totals "
                  "between fall back below (exact power is a sawtooth in N)."
                  if out["n_first_reaching"] < out["n_total"] else "."))
