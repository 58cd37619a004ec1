"""The report as people read it: titles and captions, rounded numbers, readable settings.

:mod:`analysis.report` builds the numbers; this module decides how they are shown in the
HTML/PDF (the ZIP's CSV files keep every digit):

- :func:`table_title` / :func:`figure_title`: a human title and a one-line caption for
  every table and figure stem a section produces;
- :func:`display_table`: a table of strings rounded as on the pages (p-values with
  :func:`analysis.formatting.format_p`, rates and other decimals 3 places, percentages 1,
  counts with thousands separators, booleans yes/no) and readable headers;
- :func:`settings_lines`: the settings that differ from the defaults, one readable line
  each (interval and judge-noise settings only when they are switched on).

See ``docs/report.md`` ("A report to send").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from analysis.formatting import format_p, is_p_column, permutation_floors

__all__ = [
    "FIGURES", "FRACTION_COLUMNS", "HEADERS", "PERCENT_TABLES", "TABLES", "display_table",
    "figure_title", "header", "main_choices", "settings_lines", "table_title",
]


#: Table stems: (title, caption).
TABLES: dict[str, tuple[str, str]] = {
    "coverage_summary": ("Coverage summary", "How many of the possible factor-value cells "
                         "the data fills, and how evenly (Gini index: 0 even, 1 all in one)."),
    "coverage_marginals": ("Count per factor value", "Distinct prompts (or responses) for "
                           "each value of each factor."),
    "coverage_thinnest_cells": ("Thinnest cells", "The 20 factor-value combinations with the "
                                "fewest prompts: where conclusions rest on the least data."),
    "subgroups": ("Subgroups", "Deviation rate and log disparity (LD) of every subgroup; "
                  "LD > 0: more deviating answers than the rest of the subset; the adjusted "
                  "p-value's header names its adjustment."),
    "subgroups_top_findings": ("Top findings", "The subgroups with |LD| >= 0.1, "
                               "adjusted p <= 0.05 and at least the small-n threshold of "
                               "rows, strongest first."),
    "subgroups_pooling": ("Pooling model", "The terms of the partial-pooling model of "
                          "each factor combination: random (pooled, variance on the logit "
                          "scale by adjusted REML) or fixed (fewer than 5 values); "
                          "docs/pooling.md."),
    "ecdf_pooling": ("Pooling model per curve", "The terms of each curve's partial-pooling "
                     "model of its subgroup rates (docs/pooling.md)."),
    "ecdf_summary": ("Deviation metric per curve", "Area between each model's eCDF of "
                     "subgroup rates and the ideal (0: no subgroup deviates)."),
    "ecdf_ks": ("Kolmogorov-Smirnov tests between curves", "Whether two models' "
                "distributions of subgroup rates differ."),
    "ecdf_bootstrap": ("Bootstrap intervals of the eCDF metrics", "Percentile intervals of "
                       "each curve's metric, each difference and each KS statistic."),
    "ecdf_subgroup_rates": ("Subgroup rates behind the curves", "One row per subgroup and "
                            "model: the points of the eCDF."),
    "factor_importance": ("Factor importance: terms", "Each factor value's effect on the odds "
                          "of a deviation, against its reference value."),
    "factor_importance_lr_tests": ("Factor importance: one test per factor", "Likelihood-"
                                   "ratio test of dropping each factor from the model."),
    "factor_importance_linear": ("Factor importance: terms (continuous outcome)",
                                 "Each factor value's difference in mean score against its "
                                 "reference value, the other terms fixed; covariates per sd "
                                 "(or unit)."),
    "factor_importance_linear_tests": ("Factor importance: one test per factor", "Wald test "
                                       "of each factor and covariate in the linear model."),
    "compare_overall": ("Paired comparison: overall", "Each pair of values of the compared "
                        "factor on the same prompts: the difference, its interval and the "
                        "paired test."),
    "compare_subgroups": ("Paired comparison per subgroup", "The same paired comparison "
                          "within each subgroup, one row per subgroup and pair."),
    "disparity_summary": ("Disparity summary", "The chosen statistic per group and its "
                          "comparison with the baseline."),
    "disparity_selection": ("Selection rates", "Share of each group on the favourable side "
                            "of the threshold, and its ratio to the baseline's."),
    "disparity_metrics": ("Disparity metrics", "Every fairness metric computed for the "
                          "feature, with its tolerance check."),
    "disparity_permutation": ("Permutation tests", "p-values of the group differences from "
                              "label permutations."),
    "bias_index_totals": ("Bias index per model", "The index and its terms for each model."),
    "bias_index_components": ("Bias index components", "Each dimension's score and weight."),
    "bias_index_bootstrap": ("Bootstrap intervals of the bias index", "Percentile intervals "
                             "of the index and each of its terms, per model."),
    "cohorts_percentages": ("Answer categories per cohort (%)", "Share of each answer "
                            "category within each cohort."),
    "cohorts_spread": ("Spread of category shares", "How far the cohorts' shares of each "
                       "category lie apart."),
    "cohorts_chi_square": ("Homogeneity test", "Whether the cohorts' category distributions "
                           "differ (chi-square or exact)."),
    "judge_stage_metrics": ("Judge metrics per stage", "Scores of the judged answers per "
                            "stage, sensitive factor and model."),
}
#: Figure stems (or their prefixes, tried longest first): (title, caption).
FIGURES: dict[str, tuple[str, str]] = {
    "coverage_heatmap": ("Coverage of two factors", "Count per pair of values; empty cells "
                         "are combinations the data never tried."),
    "coverage_bar": ("Count per value", "Distinct prompts (or responses) per value of the "
                     "first factor."),
    "subgroups_sunburst": ("Subgroups sunburst", "Inner ring: values of the first factor; "
                           "each next ring splits by the next. Colour: LD (red: more "
                           "deviation than the rest, blue: less)."),
    "ecdf": ("eCDF of subgroup rates", "One curve per model; a curve further right means "
             "more subgroups with a high deviation rate."),
    "factor_importance": ("Factor importance", "Effect of each factor value with its "
                          "confidence interval; 1 (odds ratio) means no effect."),
    "factor_importance_linear": ("Factor importance (continuous outcome)", "Difference in "
                                 "mean score of each factor value with its confidence "
                                 "interval; 0 means no effect."),
    "compare_": ("Paired comparison per subgroup", "The two values' rates per subgroup "
                 "joined by a line, sorted by the difference; a dark line is a significant "
                 "difference."),
    "compare_sunburst": ("Paired comparison: subgroups sunburst", "The Subgroups sunburst "
                         "coloured by the difference in LD between the two values (red: the "
                         "subgroup stands out more under the second)."),
    "disparity_selection": ("Selection rates by group", "Share of each group on the "
                            "favourable side, against the baseline."),
    "disparity": ("Disparity statistic by group", "The chosen statistic per group with its "
                  "interval, against the baseline."),
    "bias_index": ("Bias index", "The index per model and the contribution of each term."),
    "cohorts_stacked": ("Answer categories per cohort", "Stacked shares of each answer "
                        "category."),
    "cohorts_spread": ("Spread of category shares", "Range of each category's share across "
                       "cohorts."),
}

#: Readable column headers (others: underscores become spaces).
HEADERS: dict[str, str] = {
    "deviation_rate": "rate", "rate_outside": "rate outside", "log_disparity": "LD",
    "ci_low": "CI low", "ci_high": "CI high", "p_value": "p", "p_adjusted": "p adjusted",
    "boot_ci_low": "bootstrap CI low", "boot_ci_high": "bootstrap CI high",
    "boot_se": "bootstrap SE", "mde_log_disparity": "smallest detectable LD",
    "ld_undefined": "LD undefined", "small_n": "small n", "n": "n",
    "continuity_corrected": "corrected", "coverage_percentage": "coverage",
    "gini_index": "Gini index", "odds_ratio": "odds ratio", "std_err": "SE",
    "coef_ci_low": "CI low", "coef_ci_high": "CI high", "lr_statistic": "LR statistic",
    "df": "df", "statistic": "statistic",
}
#: Fractions shown as percentages ("19.8 %"), as the pages show them.
FRACTION_COLUMNS = frozenset({"coverage_percentage"})
#: Tables whose decimal columns are percentages (one decimal).
PERCENT_TABLES = frozenset({"cohorts_percentages"})
_COUNT_WORDS = ("n", "level", "count", "rows", "cells", "deviations", "subgroups", "df", "prompts",
                "responses", "replicates", "n_boot", "n_resamples")


def _lookup(stem: str, table: Mapping[str, tuple[str, str]]) -> tuple[str, str] | None:
    if stem in table:
        return table[stem]
    for key in sorted(table, key=len, reverse=True):
        if stem.startswith(key):
            return table[key]
    return None


def table_title(stem: str) -> tuple[str, str]:
    """``(title, caption)`` of a report table (a plain title from the stem when unknown)."""
    return _lookup(stem, TABLES) or (stem.replace("_", " ").capitalize(), "")


def figure_title(stem: str, fig: Any = None) -> tuple[str, str]:
    """``(title, caption)`` of a report figure (coverage figures are named by their
    factors: a heatmap trace tells the pair's figure from the bar chart)."""
    if stem.startswith("coverage_"):
        heat = fig is not None and any(t.type == "heatmap" for t in fig.data)
        return FIGURES["coverage_heatmap" if heat else "coverage_bar"]
    if stem.startswith("compare_") and stem.endswith("_sunburst"):  # compare_<a>_<b>_sunburst
        return FIGURES["compare_sunburst"]
    return _lookup(stem, FIGURES) or (stem.replace("_", " ").capitalize(), "")


#: Interval bounds whose header names the level (``confidence``): column -> (what, side).
INTERVAL_HEADERS: dict[str, tuple[str, str]] = {
    "ci_low": ("CI", "low"), "ci_high": ("CI", "high"), "coef_ci_low": ("CI", "low"),
    "coef_ci_high": ("CI", "high"), "boot_ci_low": ("bootstrap CI", "low"),
    "boot_ci_high": ("bootstrap CI", "high")}


def header(column: Any, adjust: str | None = None, confidence: float | None = None) -> str:
    """A readable column header; ``p_adjusted`` names its method ``adjust`` when known
    ("p (Holm)") and an interval's bound its level ``confidence`` when known ("90 % CI
    low"; :func:`analysis.formatting.adjusted_header`, :func:`~analysis.formatting.
    interval_header`)."""
    from analysis.formatting import adjusted_header, interval_header

    name = str(column)
    if name in ("p_adjusted", "ld_p_adjusted") and adjust:  # Compare's LD p too
        return ("LD " if name.startswith("ld_") else "") + adjusted_header({"adjust": adjust})
    if name in INTERVAL_HEADERS and confidence is not None:
        return interval_header({"confidence": confidence}, INTERVAL_HEADERS[name][1],
                               INTERVAL_HEADERS[name][0])
    return HEADERS.get(name, name.replace("_", " "))


def _is_count(name: str) -> bool:
    parts = name.lower().split("_")
    return name.lower() in _COUNT_WORDS or parts[0] == "n" or parts[-1] in _COUNT_WORDS


def _number(x: Any, name: str, percent: bool = False) -> str:
    from analysis.formatting import percent_text

    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return ""
    if is_p_column(name):
        return format_p(float(x))
    value = float(x)
    if name in FRACTION_COLUMNS:
        return f"{percent_text(value)} %"
    if value.is_integer() and (_is_count(name) or abs(value) >= 1000):
        return f"{int(value):,}"
    if percent or "percent" in name.lower() or name.lower().endswith("_pct"):
        return f"{value:,.1f}"
    return f"{value:,.3f}"


def display_table(table: pd.DataFrame, stem: str = "", *, adjust: str | None = None,
                  confidence: float | None = None) -> pd.DataFrame:
    """``table`` as strings, rounded as on the pages, with readable headers (``stem``: the
    table's name in its section; :data:`PERCENT_TABLES` show one decimal; ``adjust``: the
    method of ``p_adjusted``, ``confidence`` the level of its intervals, named in their
    headers).

    Returns
    -------
    DataFrame
        The same rows; every column as text (empty for missing values); headers from
        :func:`header`.
    """
    out = {}
    floors = permutation_floors(table)
    for col in table.columns:
        s, name = table[col], str(col)
        if floors is not None and name == "p_value":  # a permutation p at its floor: a bound
            out[header(col, adjust, confidence)] = [format_p(float(v), f) if v == v else ""
                                for v, f in zip(s.tolist(), floors, strict=True)]
        elif pd.api.types.is_bool_dtype(s):
            out[header(col, adjust, confidence)] = s.map(lambda v: "yes" if v else "no")
        elif pd.api.types.is_numeric_dtype(s):
            percent = stem in PERCENT_TABLES
            out[header(col, adjust, confidence)] = [_number(v, name, percent) for v in s.tolist()]
        else:
            out[header(col, adjust, confidence)] = s.map(lambda v: "" if v is None or (
                isinstance(v, float) and math.isnan(v)) else str(v))
    shown = pd.DataFrame(out, index=table.index)
    if len(set(shown.columns)) < len(shown.columns):  # two columns with one header
        heads = [header(c, adjust, confidence) for c in table.columns]
        shown.columns = [h if heads.count(h) == 1 else str(c)
                         for h, c in zip(heads, table.columns, strict=True)]
    return shown


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_value_text(v) for v in value) if value else "none"
    if isinstance(value, Mapping):
        return "; ".join(f"{k} = {_value_text(v)}" for k, v in value.items()) or "none"
    if value is None:
        return "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def settings_lines(settings: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[str]:
    """The settings that differ from ``defaults``, one readable line each.

    ``where`` reads as the subset ("subset: model = a, b"); the interval settings only
    when ``ci`` is bootstrap, ``judge_noise`` only when its replicates are above 0.
    """
    lines = []
    ci_on = settings.get("ci", "none") == "bootstrap"
    for key, value in settings.items():
        if key in defaults and defaults[key] == value:
            continue
        if key in ("cluster", "n_boot", "n_resamples", "seed", "confidence") and "ci" in settings \
                and not ci_on:
            continue
        if key == "judge_noise":
            if not (value or {}).get("replicates"):
                continue
            lines.append("judge noise: " + _value_text(value))
        elif key == "where":
            if value:
                lines.append("subset: " + "; ".join(
                    f"{k} = {_value_text(v)}" for k, v in value.items() if v))
        else:
            lines.append(f"{key.replace('_', ' ')}: {_value_text(value)}")
    return lines


def main_choices(name: str, settings: Mapping[str, Any]) -> str:
    """The section's main choice in a few words (shown even when it is the default)."""
    keys = {"coverage": ("factors",), "subgroups": ("factors", "level"),
            "ecdf": ("by", "factors"), "importance": ("factors",),
            "disparity": ("feature", "by"), "index": ("model",),
            "cohorts": ("category", "cohort"), "judges": ("by",)}.get(name, ())
    parts = [f"{k.replace('_', ' ')}: {_value_text(settings[k])}" for k in keys
             if k in settings]
    return "; ".join(parts)
