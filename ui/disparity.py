"""Widgets and cached computations of the Disparity page (and the data note of the Bias index
and Cohorts pages); the Bias index widgets are in ``ui/disparity_index.py``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from analysis.api import Result
from analysis.columns import GROUP, METRIC, QUANTITY, VALUE
from analysis.context import is_simulated
from analysis.design import Design
from analysis.disparity import DisparityReport
from analysis.disparity_parts import DisparityParts
from analysis.factor_defaults import feature_polarity
from analysis.multiple_testing import NAMES, adjusted_label
from analysis.options.disparity import DisparityOptions as Opts
from ui.common import analysis_result
from ui.defaults import page_defaults
from ui.opening import disparity_by
from ui.options import other_options
from ui.saged_stats import saged_options
from ui.widgets import md

__all__ = ["COLUMN_CONFIG", "box_of", "column_config", "data_note", "disparity_options",
           "disparity_result", "metric_row", "permutation_caption", "to_options"]


_NUM = st.column_config.NumberColumn
#: The tables' column headers but the adjusted p-value's (:func:`column_config`).
COLUMN_CONFIG = {
    "p_value": _NUM("p", format="%.4f"),
    "selection_rate": _NUM("selection rate", format="%.3f"),
    "impact_ratio": _NUM("impact ratio", format="%.3f", help="SR / highest SR; < 0.8 fails "
                         "the four-fifths rule"),
    "passes_four_fifths": st.column_config.CheckboxColumn("passes 4/5"),
}


def data_note(results: pd.DataFrame) -> None:
    """Say where the active table comes from; a warning when it is simulated."""
    from ui.data import SAMPLES

    name = str(st.session_state.get("results_name", ""))
    if is_simulated(results):
        st.warning(f"**Simulated data** ({md(name)}): numbers below describe a simulation with "
                   "stated effects, not real model output.")
    if name in SAMPLES:
        st.caption(SAMPLES[name]["caption"])


def _index(name: str, choices: list | tuple | None = None) -> int:
    """The position of option ``name``'s default among ``choices`` (its own by default)."""
    return list(choices or Opts.choices(name)).index(Opts.default(name))


def disparity_options(design: Design, numeric: list[str]) -> dict:
    """The Disparity page's widgets (labels, choices, defaults and help from
    :class:`analysis.options.disparity.DisparityOptions`); returns ``feature``, ``by`` and
    every option (:func:`to_options`; the polarity ``"design"`` while the widget shows the
    design's, a value only where the standard or the direction reads it)."""
    c1, c2, c3 = st.columns(3)
    feature = c1.selectbox("Numeric feature", numeric, key="disparity_feature")
    start = disparity_by(design, page_defaults)  # never a constant factor
    by = c2.multiselect("Group by", design.names, default=start, key="disparity_by")
    baseline = c3.selectbox(Opts.label("baseline"), ["(none)", *numeric],
                            key="disparity_baseline",
        help="feature - baseline per row: removes the scoring tool's and the context's bias")
    c1, c2, c3, c4, c5 = st.columns(5)
    statistic = c1.selectbox(Opts.label("statistic"), Opts.choices("statistic"),
                             index=_index("statistic"), key="disparity_statistic",
                             help=Opts.help("statistic"))
    standard = c2.selectbox(Opts.label("standard"), Opts.choices("standard"),
                            index=_index("standard"), key="disparity_standard",
                            help="Computed over all analysed rows; 'value' is a fixed number")
    polarities = ["unknown", "harmful", "favourable"]
    declared = feature_polarity(design, feature) if feature else None
    polarity = c3.selectbox(
        Opts.label("polarity"), polarities, index=polarities.index(declared or "unknown"),
        key=f"disparity_polarity_{feature}",
        help="From the design (the deviation column is harmful). The four-fifths rule reads "
             "the selection rate as a rate of favourable outcomes, so selection takes the "
             "favourable side: at or below the standard for a harmful feature.")
    direction = c4.selectbox(Opts.label("direction"),
                             ["favourable side", *Opts.choices("direction")],
                             key="disparity_direction")
    alpha = c5.selectbox(Opts.label("alpha"), Opts.choices("alpha"), index=_index("alpha"),
                         key="disparity_alpha")
    opts = {"feature": feature, "by": by, "statistic": statistic, "standard": standard,
            "direction": None if direction == "favourable side" else direction,
            "polarity": "design" if polarity == (declared or "unknown") else
            None if polarity == "unknown" else polarity, "alpha": alpha,
            "baseline": None if baseline == "(none)" else baseline}
    with st.expander("More options", expanded=False):
        c1, c2, c3 = st.columns(3)
        opts["quantile"] = c1.number_input(Opts.label("quantile"), 0.0, 1.0,
                                           Opts.default("quantile"), 0.05,
                                           key="disparity_quantile")
        # the page's number boxes need a number where the option's default is "none given"
        opts["value"] = c2.number_input(Opts.label("value"), value=0.0, key="disparity_value")
        opts["tolerance"] = c3.number_input(Opts.label("tolerance"), 0.0, value=0.1,
                                            key="disparity_tolerance")
        lo, hi = st.slider(Opts.label("quantiles"), 0.0, 1.0, Opts.default("quantiles"), 0.05,
                           key="disparity_quantiles")
        opts["quantiles"] = (lo, hi)
        c1, c2, c3, c4, c5 = st.columns(5)
        opts["n_resamples"] = c1.number_input(Opts.label("n_resamples"), 0, 99_999,
                                              Opts.default("n_resamples"),
                                              key="disparity_permutations")
        opts["adaptive"] = c2.checkbox(Opts.label("adaptive"), Opts.default("adaptive"),
                                       key="disparity_adaptive",
                                       help="Stop a group once its p-value is clearly above or "
                                            "below alpha (99.9 % binomial interval)")
        opts["seed"] = c3.number_input(Opts.label("seed"), 0, value=Opts.default("seed"),
                                       key="disparity_seed")
        opts["compare"] = c4.selectbox(Opts.label("compare"), Opts.choices("compare"),
                                       index=_index("compare"), key="disparity_compare")
        opts["comparison"] = c5.selectbox(Opts.label("comparison"), Opts.choices("comparison"),
                                          index=_index("comparison"),
                                          key="disparity_comparison",
                                          help="inclusive: x >= s (SAGED); strict: x > s")
        saged = st.checkbox(
            Opts.label("conventions"), Opts.default("conventions") == "saged",
            key="disparity_saged_conventions",
            help="Variance / std with ddof 0, scipy's default skewness and kurtosis, max Z = "
                 "the largest signed z-score (ddof 0), min/max whenever max != 0: the numbers "
                 "SAGED's library prints. Off: unbiased variance, bias-adjusted shape, max |z| "
                 "(docs/disparity.md).")
        opts["conventions"] = "saged" if saged else "workbench"
        opts |= saged_options()
        opts |= other_options(options_class(), opts, key="disparity_option")  # not laid out
    if opts["standard"] != "value":  # read only by these (so not copied as a flag)
        opts["value"] = None
    if opts["direction"] != "within":
        opts["tolerance"] = None
    return opts


def options_class() -> type[Opts]:
    """:class:`~analysis.options.disparity.DisparityOptions` read from its module at each
    run (a module-level alias would keep a class a test patched alive in the next test)."""
    from analysis.options import disparity

    return disparity.DisparityOptions


def to_options(options: dict) -> Opts:
    """The :class:`~analysis.options.disparity.DisparityOptions` of the page's widget
    values (:func:`disparity_options`; ``feature`` and ``by`` are inputs, not options)."""
    cls = options_class()
    return cls.coerce({k: v for k, v in options.items() if k in cls.specs()})


@st.cache_resource(max_entries=4, show_spinner=False)
def _parts(token: str, design_json: str) -> DisparityParts:
    return DisparityParts()


def disparity_result(results: pd.DataFrame, design: Design, where: dict, options: dict, *,
                     permutation: bool = True) -> Result:
    """``analysis.api.disparity`` of the page's options, the page's one cached call
    (:func:`ui.common.analysis_result`). The parts that read the rows are kept in a
    :class:`analysis.disparity_parts.DisparityParts` store per table and design, so a
    changed standard recounts the selection only and ``permutation=False`` (everything
    but the permutation test: the page shows it first, then asks for the full Result)
    followed by the full call runs the test alone."""
    opts = to_options(options)
    if not permutation:
        opts = opts.replace(n_resamples=0)
    from ui.disparity_job import seed_parts
    from ui.table_job import load_job

    parts = _parts(st.session_state["results_token"], design.to_json())
    # what the load-time job computed for the defaults (kept under their options' keys)
    parts.seed(seed_parts(getattr(load_job(results, design), "disparity", None), results))
    return analysis_result("disparity", results, design, opts, feature=options["feature"],
                           by=list(options["by"]), where=where or None, parts=parts)


@st.cache_resource(max_entries=8, show_spinner=False)
def _box(token: str, key: str, _grouping: object, label: str, _given: object = None):
    if _given is not None:  # built by the load-time job (ui/disparity_job.py)
        return _given
    from analysis.figures.disparity import grouping_box_figure

    return grouping_box_figure(_grouping, feature=label)


def box_of(result: Result, label: str, results: pd.DataFrame | None = None,
           design: Design | None = None):
    """The box plot of the feature per group as analysed (the Result's grouping), cached:
    building it reads every row (the load-time job's for the defaults, given the page's
    ``results`` and ``design``)."""
    from ui.disparity_job import box_key
    from ui.table_job import load_job

    key = box_key(result.settings)
    given = None
    if results is not None and design is not None:
        opened = getattr(load_job(results, design), "disparity", None) or {}
        given = (opened.get("box") or {}).get((key, label))
    return _box(st.session_state["results_token"], key, result.meta["grouping"], label, given)


def column_config(settings: dict) -> dict:
    """The tables' column headers; the adjusted p-value's names the Result's method."""
    return {**COLUMN_CONFIG, "p_adjusted": _NUM(adjusted_label(settings["adjust"]),
                                                format="%.4f")}


def permutation_caption(result: Result) -> str:
    """What the permutation table is: the test, its shuffles, the smallest p, the
    adjustment (from the Result's settings)."""
    s, perm = result.settings, result.tables["permutation"]
    n_perm = int(perm["n_permutations"].max())
    return (f"{s['statistic']} of each group against the {s['compare']} of the rows: group "
            f"labels shuffled up to {n_perm:,} times (seed {s['seed']}"
            + ("; a group stops once its p-value is clearly above or below alpha, column "
               "n_permutations" if s["adaptive"] else "")
            + f"); p = (b + 1) / (m + 1), so the smallest possible p is "
            f"{1 / (n_perm + 1):.4f}. Adjusted: {NAMES[s['adjust']]} over the groups.")


def metric_row(report: DisparityReport) -> None:
    """Headline numbers: impact ratio and verdict, max Z-score, Dixon's Q."""
    for col, (label, value, note) in zip(st.columns(3), headline(report), strict=True):
        # the note is a verdict, not a change: no arrow (issue 42: "fails 4/5" had an up one)
        col.metric(md(label), value, md(note) if note else note, delta_color="off",
                   delta_arrow="off")
    st.caption(md(report.dixon.note))


def headline(report: DisparityReport) -> list[tuple[str, str, str | None]]:
    """``(label, value, note)`` of the impact ratio, the max Z-score and Dixon's Q."""
    ir = report.impact_ratio
    verdict = {True: "passes 4/5", False: "fails 4/5", None: "undefined"}[
        report.passes_four_fifths]
    m = report.metrics
    z = m[(m[QUANTITY] == report.settings["statistic"]) & (m[METRIC] == "max_z")].iloc[0]
    group = z[GROUP] if isinstance(z[GROUP], str) else ""
    d = report.dixon
    return [
        ("Impact ratio (min SR / max SR)", "n/a" if np.isnan(ir) else f"{ir:.3f}", verdict),
        (f"Max Z-score of the {report.settings['statistic']}",
         "n/a" if np.isnan(z[VALUE]) else f"{z[VALUE]:.2f}", group or None),
        (f"Dixon's Q ({d.variant or 'n/a'})",
         "n/a" if np.isnan(d.statistic) else f"{d.statistic:.3f}",
         "n/a" if d.significant is None else ("outlier: " + str(d.suspect))
         if d.significant else "no outlier"),
    ]
