"""Widgets and cached computations of the Disparity page (and the data note of the Bias index
and Cohorts pages); the Bias index widgets are in ``ui/disparity_index.py``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from analysis import disparity as dsp
from analysis.cells import filter_rows
from analysis.columns import GROUP, METRIC, QUANTITY, VALUE
from analysis.context import is_simulated
from analysis.design import Design
from analysis.options.disparity import DisparityOptions as Opts
from ui.defaults import page_defaults
from ui.options import other_options
from ui.widgets import md

__all__ = ["COLUMN_CONFIG", "box_of", "cached_permutation", "cached_report", "data_note",
           "disparity_options", "grouped", "metric_row"]


_NUM = st.column_config.NumberColumn
COLUMN_CONFIG = {
    "p_value": _NUM("p", format="%.4f"), "p_adjusted": _NUM("p (BH)", format="%.4f"),
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
    the keyword options of ``disparity_report``."""
    c1, c2, c3 = st.columns(3)
    feature = c1.selectbox("Numeric feature", numeric, key="disparity_feature")
    start = page_defaults(design, 1) or dsp.default_group(design)  # never a constant factor
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
    declared = dsp.feature_polarity(design, feature) if feature else None
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
            "polarity": None if polarity == "unknown" else polarity, "alpha": alpha,
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
        opts |= other_options(Opts, opts, key="disparity_option")  # declared, not laid out
    return opts


#: Options that only the permutation test reads (the rest of the report ignores them)
_PERMUTATION_ONLY = ("n_resamples", "adaptive", "seed", "compare")


#: Options of :func:`analysis.disparity.group_summary` and of
#: :func:`analysis.disparity.selection_rates`: each part is cached per its own
_SUMMARY = ("feature", "by", "baseline", "quantiles", "conventions")
_SELECTION = ("feature", "by", "baseline", "standard", "quantile", "value", "direction",
              "tolerance", "comparison")


@st.cache_resource(max_entries=4, show_spinner=False)
def _grouping(token: str, design_json: str, where_key: str, key: str, _results: pd.DataFrame,
              _where: dict, feature: str, by: tuple[str, ...], baseline: str | None
              ) -> dsp.Grouping:
    return dsp.grouping(filter_rows(_results, _where or None), feature, list(by),
                        baseline=baseline)


def grouped(results: pd.DataFrame, design: Design, where: dict, feature: str,
            by: list[str], baseline: str | None) -> dsp.Grouping:
    """:func:`analysis.disparity.grouping` of the subset, cached: the summary, the
    selection rates, the permutation test and the box plot read the rows once."""
    return _grouping(st.session_state["results_token"], design.to_json(),
                     repr(sorted(where.items())), repr((feature, by, baseline)), results,
                     where, feature, tuple(by), baseline)


@st.cache_resource(max_entries=16, show_spinner="Group statistics...")
def _summary(token: str, design_json: str, where_key: str, options_key: str,
             _grouping: dsp.Grouping, _options: dict) -> pd.DataFrame:
    return dsp.group_summary(_grouping, **_options)


@st.cache_resource(max_entries=16, show_spinner="Selection rates...")
def _selection(token: str, design_json: str, where_key: str, options_key: str,
               _grouping: dsp.Grouping, _options: dict) -> pd.DataFrame:
    return dsp.selection_rates(_grouping, **_options)


def _part(function, names: tuple[str, ...], results: pd.DataFrame, design: Design,
          where: dict, options: dict):
    """``function`` (:func:`_summary` or :func:`_selection`) of the options in ``names``."""
    given = {k: options[k] for k in names}
    rows = grouped(results, design, where, options["feature"], options["by"],
                   options["baseline"])
    return function(st.session_state["results_token"], design.to_json(),
                    repr(sorted(where.items())), repr(sorted(given.items())), rows, given)


@st.cache_resource(max_entries=16, show_spinner="Permutation tests...")
def _permutation(token: str, design_json: str, where_key: str, test_key: str,
                 _grouping: dsp.Grouping, _test: dict) -> pd.DataFrame:
    return dsp.permutation_test(_grouping, **_test)


def _test_options(options: dict) -> dict:
    """The options the permutation test depends on: the quantiles only for the quantile
    range, alpha only when the test stops adaptively."""
    test = {k: options[k] for k in ("feature", "by", "baseline", "statistic", "compare",
                                    "n_resamples", "seed", "adaptive")}
    if options["statistic"] == "quantile_range":
        test["quantiles"] = options["quantiles"]
    if options["adaptive"]:
        test["alpha"] = options["alpha"]
    return test


def cached_permutation(results: pd.DataFrame, design: Design, where: dict, options: dict
                       ) -> pd.DataFrame | None:
    """:func:`analysis.disparity.permutation_test` of the subset as the report runs it,
    cached per the options it reads (:func:`_test_options`); None when it is off."""
    if not options["n_resamples"]:
        return None
    test = _test_options(options)
    rows = grouped(results, design, where, options["feature"], options["by"],
                   options["baseline"])
    return _permutation(st.session_state["results_token"], design.to_json(),
                        repr(sorted(where.items())), repr(sorted(test.items())), rows, test)


def cached_report(results: pd.DataFrame, design: Design, where: dict, options: dict, *,
                  permutation: bool = True) -> dsp.DisparityReport:
    """:func:`analysis.disparity.disparity_report` of the subset, from parts cached apart:
    the group summary per its options (:data:`_SUMMARY`), the selection rates per theirs
    (:data:`_SELECTION`), the permutation test per the options it reads
    (:func:`cached_permutation`); the metrics and Dixon's Q across the groups
    (:func:`analysis.disparity.report_of`) read only these tables. So changing the
    standard or the direction recounts the selection only, and the statistic or alpha
    nothing that reads the rows but the test. ``permutation=False``: the report without
    the test (a page shows it last and asks :func:`cached_permutation` there, so
    everything above it is on screen meanwhile)."""
    direction = dsp.selection_direction(options["polarity"], options["direction"])
    options = {**options, "direction": direction}
    summary = _part(_summary, _SUMMARY, results, design, where, options)
    selection = _part(_selection, _SELECTION, results, design, where, options)
    report = dsp.report_of(summary, selection, **{k: v for k, v in options.items()
                                                  if k not in _PERMUTATION_ONLY})
    perm = cached_permutation(results, design, where, options) if permutation else None
    return dsp.with_permutation(report, perm, **{k: options[k] for k in _PERMUTATION_ONLY})


def box_of(results: pd.DataFrame, design: Design, where: dict, feature: str, by: list[str],
           baseline: str | None, label: str):
    """The box plot of the feature per group in the subset (for :func:`ui.common.per_table`:
    building it reads every row)."""
    from analysis.figures.disparity import box_figure

    return box_figure(dsp.grouped_values(grouped(results, design, where, feature, by,
                                                 baseline), feature, by, baseline=baseline),
                      feature=label)


def metric_row(report: dsp.DisparityReport) -> None:
    """Headline numbers: impact ratio and verdict, max Z-score, Dixon's Q."""
    for col, (label, value, note) in zip(st.columns(3), headline(report), strict=True):
        # the note is a verdict, not a change: no arrow (issue 42: "fails 4/5" had an up one)
        col.metric(md(label), value, md(note) if note else note, delta_color="off",
                   delta_arrow="off")
    st.caption(md(report.dixon.note))


def headline(report: dsp.DisparityReport) -> list[tuple[str, str, str | None]]:
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
