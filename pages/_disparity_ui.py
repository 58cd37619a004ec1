"""Widgets and cached computations of the Disparity, Bias index and Cohorts pages."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st

from analysis import disparity as dsp
from analysis.cells import filter_rows
from analysis.columns import DEVIATION
from analysis.design import Design
from analysis.index import DIMENSION_SCORES, SENTIMENT_SCORES, BiasIndex, Dimension, bias_index

#: Column names of generated data that say where it comes from.
ORIGIN_COLUMNS = ("data_origin", "origin", "source")
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
    from pages._data_ui import SAMPLES

    name = str(st.session_state.get("results_name", ""))
    simulated = "simulated" in name.lower() or any(
        c in results.columns and results[c].astype(str).str.lower().eq("simulated").any()
        for c in ORIGIN_COLUMNS)
    if simulated:
        st.warning(f"**Simulated data** ({name}): numbers below describe a simulation with "
                   "stated effects, not real model output.")
    if name in SAMPLES:
        st.caption(SAMPLES[name]["caption"])


def numeric_columns(results: pd.DataFrame, design: Design) -> list[str]:
    """Numeric columns that are not factors (nor the derived deviation), floats first."""
    skip = set(design.names) | {DEVIATION}
    cols = [c for c in results.columns if c not in skip
            and (pd.api.types.is_numeric_dtype(results[c]) or pd.api.types.is_bool_dtype(
                results[c]))]
    return sorted(cols, key=lambda c: (not pd.api.types.is_float_dtype(results[c]),
                                       results[c].nunique() <= 2))


def default_group(design: Design, exclude: Sequence[str] = ()) -> list[str]:
    """The first domain factor (else the first factor) as a starting grouping."""
    order = design.of_kind("domain") + design.of_kind("prompt") + design.of_kind("model")
    return [f for f in order if f not in exclude][:1]


def disparity_options(design: Design, numeric: list[str]) -> dict:
    """The Disparity page's widgets; returns the keyword options of ``disparity_report``."""
    c1, c2, c3 = st.columns(3)
    feature = c1.selectbox("Numeric feature", numeric, key="disparity_feature")
    by = c2.multiselect("Group by", design.names, default=default_group(design),
                        key="disparity_by")
    baseline = c3.selectbox("Baseline column (calibration)", ["(none)", *numeric],
                            key="disparity_baseline",
        help="feature - baseline per row: removes the scoring tool's and the context's bias")
    c1, c2, c3, c4 = st.columns(4)
    statistic = c1.selectbox("Statistic per group", dsp.STATISTICS, key="disparity_statistic")
    standard = c2.selectbox("Selection standard", dsp.STANDARDS, key="disparity_standard",
                            help="Computed over all analysed rows; 'value' is a fixed number")
    direction = c3.selectbox("Selected when the value is", dsp.DIRECTIONS,
                             key="disparity_direction")
    alpha = c4.selectbox("alpha (Dixon's Q)", dsp.DIXON_ALPHAS, index=1, key="disparity_alpha")
    opts = {"feature": feature, "by": by, "statistic": statistic, "standard": standard,
            "direction": direction, "alpha": alpha,
            "baseline": None if baseline == "(none)" else baseline}
    with st.expander("More options", expanded=False):
        c1, c2, c3 = st.columns(3)
        opts["quantile"] = c1.number_input("Standard quantile", 0.0, 1.0, 0.5, 0.05,
                                           key="disparity_quantile")
        opts["value"] = c2.number_input("Standard value", value=0.0, key="disparity_value")
        opts["tolerance"] = c3.number_input("Tolerance ('within')", 0.0, value=0.1,
                                            key="disparity_tolerance")
        lo, hi = st.slider("Quantile range", 0.0, 1.0, (0.25, 0.75), 0.05,
                           key="disparity_quantiles")
        opts["quantiles"] = (lo, hi)
        c1, c2, c3 = st.columns(3)
        opts["n_permutations"] = c1.number_input("Permutations (0: none)", 0, 99_999, 999,
                                                 key="disparity_permutations")
        opts["random_state"] = c2.number_input("Seed", 0, value=0, key="disparity_seed")
        opts["compare"] = c3.selectbox("Each group against", dsp.COMPARES,
                                       key="disparity_compare")
    return opts


@st.cache_resource(max_entries=16, show_spinner="Computing disparity and permutation tests...")
def _report(token: str, design_json: str, where_key: str, options_key: str,
            _results: pd.DataFrame, _where: dict, _options: dict) -> dsp.DisparityReport:
    return dsp.disparity_report(filter_rows(_results, _where or None), **_options)


def cached_report(results: pd.DataFrame, design: Design, where: dict, options: dict
                  ) -> dsp.DisparityReport:
    """:func:`analysis.disparity.disparity_report` of the subset, cached per options."""
    return _report(st.session_state["results_token"], design.to_json(),
                   repr(sorted(where.items())), repr(sorted(options.items())), results, where,
                   options)


def metric_row(report: dsp.DisparityReport) -> None:
    """Headline numbers: impact ratio and verdict, max Z-score, Dixon's Q."""
    c1, c2, c3 = st.columns(3)
    ir = report.impact_ratio
    verdict = {True: "passes 4/5", False: "fails 4/5", None: "undefined"}[
        report.passes_four_fifths]
    c1.metric("Impact ratio (min SR / max SR)", "n/a" if np.isnan(ir) else f"{ir:.3f}",
              verdict, delta_color="off")
    m = report.metrics
    z = m[(m["quantity"] == report.settings["statistic"]) & (m["metric"] == "max_z")].iloc[0]
    group = z["group"] if isinstance(z["group"], str) else ""
    c2.metric(f"Max Z-score of the {report.settings['statistic']}",
              "n/a" if np.isnan(z["value"]) else f"{z['value']:.2f}", group or None,
              delta_color="off")
    d = report.dixon
    c3.metric(f"Dixon's Q ({d.variant or 'n/a'})",
              "n/a" if np.isnan(d.statistic) else f"{d.statistic:.3f}",
              "n/a" if d.significant is None else ("outlier: " + str(d.suspect))
              if d.significant else "no outlier", delta_color="off")
    st.caption(d.note)


def index_options(design: Design, numeric: list[str]) -> dict | None:
    """The Bias index page's widgets; returns the keyword options of ``bias_index``."""
    models = design.of_kind("model")
    c1, c2 = st.columns([1, 2])
    model = c1.selectbox("One index per value of", ["(all rows)"] + design.names,
                         index=1 + design.names.index(models[0]) if models else 0,
                         key="index_model")
    model = None if model == "(all rows)" else model
    choices = [f for f in design.names if f != model]
    factors = c2.multiselect("Bias dimensions (sensitive factors)", choices,
                             default=[f for f in design.of_kind("domain") if f != model][:2],
                             key="index_dimensions")
    if not factors:
        return None
    dims = []
    for f in factors:
        c1, c2 = st.columns([2, 1])
        score = c1.selectbox(f"Score of {f}", DIMENSION_SCORES, key=f"index_score_{f}")
        weight = c2.number_input(f"Weight of {f}", 0.0, value=1.0, step=0.5,
                                 key=f"index_weight_{f}")
        dims.append(Dimension(f, score, weight))
    c1, c2, c3 = st.columns(3)
    normalize = c1.checkbox("Weighted mean (rescale weights to mean 1)", True,
                            key="index_normalize")
    kind = c2.radio("Diversity penalty P(D)", ["constant", "coverage_gini"],
                    key="index_penalty_kind", horizontal=True)
    value = c3.number_input("Penalty (constant, or scale of the Gini)", value=0.0, step=0.1,
                            key="index_penalty_value")
    c1, c2, c3 = st.columns(3)
    sentiment = c1.selectbox("Sentiment column (S)", ["(none)"] + numeric,
                             key="index_sentiment")
    s_by = c2.selectbox("Sentiment compared across", factors, key="index_sentiment_by")
    s_score = c3.selectbox("Sentiment score", SENTIMENT_SCORES, key="index_sentiment_score")
    scale = st.number_input("lambda (scale of S)", value=1.0, step=0.1, key="index_lambda")
    return {"dimensions": dims, "model": model, "normalize_weights": normalize,
            "penalty_kind": kind, "penalty_value": value,
            "sentiment": None if sentiment == "(none)" else sentiment, "sentiment_by": s_by,
            "sentiment_score": s_score, "sentiment_scale": scale}


def compute_index(results: pd.DataFrame, design: Design, where: dict, options: dict
                  ) -> BiasIndex:
    """:func:`analysis.index.bias_index` of the subset (fast: it works from cell counts)."""
    return bias_index(filter_rows(results, where or None), design, **options)
