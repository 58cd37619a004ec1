"""Issue 37: parity of the front-ends generated from the option declarations.

For every analysis composed in :mod:`analysis.api` (:data:`COMPOSED`) and every one of its
options, a non-default value (:func:`non_default`, derived from the option's declaration)
must give the same numbers through the API, the CLI's JSON, the report section and the
"Copy as CLI" / "Copy as Python" texts built from the same options
(:func:`analysis.reproduce.api_view`). The page's side is
``tests/app/test_parity_pages.py``. A new option is tested without a new test; one that
cannot be given a value here must be listed in ``NEEDS`` with the reason.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis import api as bw
from analysis import report as R
from analysis.cli import main
from analysis.design import Design, apply_design
from analysis.io import load_results
from analysis.options import FROM_DESIGN, options_for
from analysis.options.disparity import SAGED_FIELDS
from analysis.reproduce import api_snippet, api_view, cli_command

SAMPLE = "sample_data/ssqa_simulated.csv.gz"
DESIGN = "sample_data/ssqa_simulated.design.yaml"
WHERE = {"prompt_style": ["original", "positive"]}
JUDGED_SAMPLE = "sample_data/judged_simulated.csv.gz"
JUDGED_DESIGN = "sample_data/judged_simulated.design.yaml"
JUDGED_WHERE = {"attribute": ["man", "person", "woman"]}

BBQ = "sample_data/bbq_unifiedqa.csv.gz"
BBQ_DESIGN = "sample_data/bbq_unifiedqa.design.yaml"
BBQ_WHERE = {"category": ["Age", "Religion"]}
#: The numbers of a native score the CLI, the API and the report's table all show.
NATIVE_COLUMNS = ["estimate", "ci_low", "ci_high", "n", "n_clusters"]
#: The numbers of coverage's summary rows (joint and per factor).
COVERAGE_COLUMNS = ["n_cells", "n_observed_cells", "n_empty_cells", "n_rows",
                    "coverage_percentage", "gini_index", "gini_index_observed"]
#: Composed analyses: their inputs and, per view of the numbers, the table in the API's
#: Result, in the CLI's JSON and in the report section, and the columns compared.
COMPOSED: dict[str, dict[str, Any]] = {
    "subgroups": {"inputs": {"factors": ["model", "cot"]}, "views": [
        (lambda r: r.table, lambda out: pd.DataFrame(out["subgroups"]), "subgroups",
         ["n", "log_disparity", "ci_low", "ci_high", "p_value", "p_adjusted", "small_n",
          "boot_ci_low", "boot_ci_high", "mde_log_disparity", "detectable", "rate_pooled",
          "ld_pooled", "ld_pooled_low", "ld_pooled_high"])]},
    "ecdf": {"inputs": {"factors": ["model", "gender"], "by": "prompt_style"},
             "where": {"cot": ["yes"]}, "views": [
        (lambda r: r.table, lambda out: pd.DataFrame(list(out["groups"].values())),
         "ecdf_summary", ["n_subgroups", "deviation_metric", "mean_rate",
                          "share_above_cutoff", "deviation_metric_raw"]),
        (lambda r: r.tables["ks"], lambda out: pd.DataFrame(out["ks"]), "ecdf_ks",
         ["statistic", "p_value", "p_adjusted"]),
        (lambda r: r.tables.get("bootstrap", pd.DataFrame()),
         lambda out: pd.DataFrame(out.get("bootstrap", {}).get("intervals", [])),
         "ecdf_bootstrap", ["estimate", "boot_ci_low", "boot_ci_high"])]},
    "importance": {"inputs": {"factors": ["model", "cot"]}, "views": [
        (lambda r: r.table, lambda out: pd.DataFrame(out["terms"]), "factor_importance",
         ["n", "coef", "std_err", "p_value", "p_adjusted", "odds_ratio", "ci_low", "ci_high",
          "df", "design_effect"]),
        (lambda r: r.tables["lr_tests"], lambda out: pd.DataFrame(out["tests"]),
         "factor_importance_lr_tests", ["statistic", "df", "p_value", "p_value_lr"])]},
    # prompt_style swapped within the template: original vs positive and doubt (base is
    # the control value: left out)
    "counterfactual": {"inputs": {"swap": "prompt_style"}, "where": {"cot": ["no"]},
                       "views": [
        (lambda r: r.table, lambda out: pd.DataFrame(out["pairs"]), "counterfactual_pairs",
         ["n_pairs", "only_a", "only_b", "difference", "ci_low", "ci_high", "statistic",
          "p_value", "p_adjusted", "df", "n_clusters", "cr2_p_value"])]},
    # the report's section settings of compare and index are shaped as the page holds them
    # ("report"), the copied code names an input as the command does ("flags")
    "compare": {"inputs": {"by": "model", "subgroups": ["cot"], "level": 1},
                "flags": {"subgroups": "factors"},
                "report": lambda s, inputs: {
                    **{k: v for k, v in s.items() if k != "subgroups"},
                    "factors": inputs["subgroups"]},
                "views": [
        (lambda r: r.table, lambda out: pd.DataFrame(out["overall"]), "compare_overall",
         ["n_pairs", "rate_a", "rate_b", "difference", "ci_low", "ci_high", "statistic",
          "p_value", "p_adjusted"]),
        (lambda r: r.tables.get("subgroups", pd.DataFrame()),
         lambda out: pd.DataFrame(out["subgroups"]), "compare_subgroups",
         ["n", "difference", "ci_low", "ci_high", "p_value", "p_adjusted"])]},
    "index": {"function": "bias_index", "inputs": {"factors": ["gender", "pachankis_cluster"]},
              "flags": {"factors": "dimensions"}, "report": lambda s, inputs: {
                  # bias_index's arguments, as the page and the report hold them
                  **options_for("index").coerce({k: v for k, v in s.items() if k in
                                                 options_for("index").specs()}
                                                ).index_kwargs(inputs["factors"]),
                  **{k: s[k] for k in R.CI_KEYS if k in s}, "where": s["where"]},
              "views": [
        (lambda r: r.table, lambda out: pd.DataFrame(out["totals"]), "bias_index_totals",
         ["weighted_bias", "diversity_penalty", "sentiment_score", "llmbi", "rank"]),
        (lambda r: r.tables.get("bootstrap", pd.DataFrame()),
         lambda out: pd.DataFrame(out.get("bootstrap", {}).get("intervals", [])),
         "bias_index_bootstrap", ["estimate", "boot_se", "boot_ci_low", "boot_ci_high"])]},
    # the report's disparity section offers no SAGED statistics' options (normalization ...)
    "disparity": {"inputs": {"feature": "sentiment", "by": ["gender"]},
                  "not_in_report": SAGED_FIELDS, "views": [
        (lambda r: r.table, lambda out: pd.DataFrame(out["summary"]), "disparity_summary",
         ["n", "mean", "median", "std", "quantile_range"]),
        (lambda r: r.tables["selection"], lambda out: pd.DataFrame(out["selection"]),
         "disparity_selection", ["n_selected", "selection_rate", "impact_ratio"]),
        (lambda r: r.tables.get("permutation", pd.DataFrame()),
         lambda out: pd.DataFrame(out["permutation"] or []), "disparity_permutation",
         ["difference", "p_value", "p_adjusted"])]},
    # coverage: the summary (the CLI's joint keys and its per-factor rows) and the
    # thinnest cells (the empty ones: the report's section lists none)
    "coverage": {"inputs": {"factors": ["stigma", "gender", "cot"]}, "views": [
        (lambda r: r.table, lambda out: pd.concat([pd.DataFrame([out]), pd.DataFrame(
            out["per_factor"])], ignore_index=True), "coverage_summary", COVERAGE_COLUMNS),
        (lambda r: r.tables["thinnest_cells"], lambda out: pd.DataFrame(out["thinnest_cells"]),
         "coverage_thinnest_cells", ["n"])]},
    "cohorts": {"inputs": {"category": "answer", "cohort": "model", "by": ["cot"]},
                # the time capsules' options (no demographics here: their parity is
                # tests/analysis/test_adjust_options.py's)
                "not_in_report": ("capsule_star", "adjust"), "views": [
        (lambda r: r.tables["homogeneity"], lambda out: pd.DataFrame(out["homogeneity"]),
         "cohorts_chi_square", ["n", "statistic", "df", "p_value", "cramers_v"]),
        (lambda r: r.tables["spread"], lambda out: pd.DataFrame(out["spread_within_cohorts"]),
         "cohorts_spread", ["sd_percent", "min_percent", "max_percent"])]},
    # the G-study and the D-study on the SIMULATED judged sample (3,200 rows: a judge
    # facet; the bootstrap of SSQA's 10,000 cells would take minutes); bootstrap draws
    # only where the option under test asks for them ("base")
    "variance_components": {
        "inputs": {}, "where": JUDGED_WHERE, "sample": JUDGED_SAMPLE,
        "design": JUDGED_DESIGN, "section": "variance", "base": {"n_resamples": 0},
        "values": {"facets": ("template", "judge"), "score_column": "biased"}, "views": [
            (lambda r: r.table, lambda out: pd.DataFrame(out["components"]),
             "variance_components", ["levels", "variance", "share", "ci_low", "ci_high"]),
            (lambda r: r.tables["total_error"], lambda out: pd.DataFrame(out["total_error"]),
             "total_error", ["estimate", "n", "se_sampling", "se_total", "df_total",
                             "ci_low", "ci_high", "se_ratio"])]},
    # plan --d-study: no report section of its own (the report's is the G-study's)
    "d_study": {
        "inputs": {}, "where": JUDGED_WHERE, "sample": JUDGED_SAMPLE,
        "design": JUDGED_DESIGN, "section": None, "cli_extra": (("d-study", True),),
        "values": {"facets": ("template", "judge"), "score_column": "biased",
                   "target_se": 0.02}, "views": [
            (lambda r: r.table, lambda out: pd.DataFrame(out["changes"]), "changes",
             ["cost", "extra_cost", "se_rate", "se_difference", "g_coefficient", "phi"]),
            (lambda r: r.tables["cheapest"], lambda out: pd.DataFrame(out["cheapest"]),
             "cheapest", ["cost", "se_rate", "se_difference"])]},
    # the benchmark's own scores and their paired deltas on the real BBQ sample (two
    # categories, 50 resamples but where the option under test is n_resamples); the
    # report's section gives the deltas only with "by"
    "native_scores": {
        "inputs": {}, "where": BBQ_WHERE, "sample": BBQ, "design": BBQ_DESIGN,
        "section": "native", "base": {"n_resamples": 50},
        "report": lambda s, inputs: {**s, "by": None}, "views": [
            (lambda r: r.table, lambda out: pd.DataFrame(out["scores"]), "native_scores",
             NATIVE_COLUMNS)]},
    "native_deltas": {
        "inputs": {"by": "input_format", "reference": "race"}, "where": BBQ_WHERE,
        "sample": BBQ, "design": BBQ_DESIGN, "section": "native",
        "base": {"n_resamples": 50}, "views": [
            (lambda r: r.table, lambda out: pd.DataFrame(out["scores"]), "native_deltas",
             ["estimate_a", "estimate_b", "delta", "ci_low", "ci_high", "p_adjusted",
              "n_clusters"])]},
}
#: Deliberately not here: ``generate_prompts`` and ``extend_results`` have no options
#: class (they write prompts and join answered rows: no numbers to compare;
#: tests/analysis/test_generate.py and test_generate_loop.py check them through the API
#: and the CLI); ``plan`` and the others composed in analysis.api with an options class
#: (index, compare ...) are outside this wave's list.

#: Options whose non-default value needs another option or another table.
NEEDS: dict[str, dict[str, Any]] = {
    "effect": {"power": 0.8},  # detectable needs the power columns
    "n_resamples": {"ci": "bootstrap"},  # the replicates of the bootstrap
    "seed": {"ci": "bootstrap", "n_resamples": 50},
    "ci": {"n_resamples": 50},
    "confidence": {"ci": "bootstrap", "n_resamples": 50},  # the bootstrap's level too
    # the index: a model split, the sentiment term's own options, two dimensions' weights
    "sentiment_by": {"sentiment": "sentiment"},
    "sentiment_score": {"sentiment": "sentiment"},
    "sentiment_scale": {"sentiment": "sentiment"},
    # disparity: the standard's number and the band's half-width
    "value": {"standard": "value"},
    "tolerance": {"direction": "within"},
}
#: Per analysis, a needed option that differs from the generic one.
NEEDS_OF: dict[tuple[str, str], dict[str, Any]] = {
    ("cohorts", "n_resamples"): {"method": "monte_carlo"},
    ("cohorts", "seed"): {"method": "monte_carlo", "n_resamples": 199},
    ("cohorts", "method"): {"n_resamples": 199},
    ("compare", "n_resamples"): {}, ("compare", "seed"): {"n_resamples": 50},
    ("compare", "confidence"): {"n_resamples": 50},
    ("disparity", "n_resamples"): {}, ("disparity", "seed"): {"n_resamples": 99},
}
#: The command's own options, not the analysis's (the time capsules of cohorts).
CLI_ONLY = {("cohorts", "capsule_star")}
#: Non-default values an option's declaration does not imply (a column, a factor ...).
VALUES: dict[tuple[str, str], Any] = {
    ("index", "model"): "model", ("index", "sentiment"): "sentiment",
    ("index", "sentiment_by"): "model", ("index", "penalty_factors"): "gender,cot",
    ("index", "scores"): "max_abs_log_disparity", ("index", "weights"): "1,2",
    ("index", "penalty_gini"): 0.5, ("disparity", "baseline"): "deviation",
    ("disparity", "quantiles"): (0.1, 0.9), ("disparity", "value"): 0.1,
    ("disparity", "direction"): "below", ("disparity", "tolerance"): 0.2,
    ("disparity", "alpha"): 0.1, ("disparity", "n_resamples"): 99,
    ("disparity", "normalization"): "zscore",
    ("compare", "n_resamples"): 50, ("cohorts", "n_resamples"): 199,
    ("cohorts", "method"): "monte_carlo",  # auto is chi2 on the sample's large counts
}
#: Judge noise needs a judged table (score samples): tests/app/test_report_noise_page.py
#: and tests/analysis/test_api_optsa.py run it through the API, CLI, page and report.
JUDGED = ("judge_noise", "noise_mode", "noise_alpha")


def non_default(cls, name: str) -> Any:
    """A value of option ``name`` other than its default, from its declaration."""
    if (cls.NAME, name) in VALUES:
        return VALUES[cls.NAME, name]
    default, spec = cls.specs()[name]
    if spec.cluster:
        return None  # independent rows (the default: the design's cluster)
    if spec.choices:
        return next(c for c in spec.choices if c != default)
    if isinstance(default, bool):
        return not default
    if name == "level":
        return 1
    if name == "interactions":
        return ("model:cot",)
    if name == "max_p":  # the figure's: no number changes
        return 0.5
    if name == "power":
        return 0.8
    if name == "measures":  # acts on a text column only (tests/analysis/test_counterfactual.py)
        return ("rouge_l",)
    if name == "effect":
        return 0.3
    if name in ("confidence", "noise_alpha"):
        return 0.8
    if isinstance(default, int):
        return default + 3 if name != "n_resamples" else 60
    if isinstance(default, float):
        return default / 2 if default else 0.5
    raise AssertionError(f"no non-default value for {name}: add one to non_default")


def _value(analysis: str, name: str) -> Any:
    """The non-default value tested: the analysis's own (``values``) or :func:`non_default`."""
    given = COMPOSED[analysis].get("values", {})
    return given[name] if name in given else non_default(options_for(analysis), name)


def _cases() -> list[tuple[str, str]]:
    return [(analysis, name) for analysis in COMPOSED
            for name in options_for(analysis).specs()
            if name not in JUDGED and (analysis, name) not in CLI_ONLY]


_LOADED: dict[str, tuple[pd.DataFrame, Design]] = {}


def _tables(sample: str, design_path: str) -> tuple[pd.DataFrame, Design]:
    if sample not in _LOADED:
        design = Design.load(design_path)
        _LOADED[sample] = apply_design(load_results(sample), design), design
    return _LOADED[sample]


@pytest.fixture(scope="module")
def ssqa():
    return _tables(SAMPLE, DESIGN)


def _cli_json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _same(a: pd.DataFrame, b: pd.DataFrame, columns: list[str], what: str) -> None:
    assert len(a) == len(b), what
    if len(a) == 0:  # an empty table (no cheapest design without a target): no columns
        return
    for c in columns:
        if c in a.columns or c in b.columns:
            assert c in a.columns and c in b.columns, (what, c)
            np.testing.assert_allclose(a[c].astype(float).to_numpy(),
                                       b[c].astype(float).to_numpy(), rtol=1e-10,
                                       equal_nan=True, err_msg=f"{what}: {c}")


def test_every_analysis_with_an_api_function_is_composed():
    """An analysis whose options name their API function (``FUNCTION``) has its row in
    :data:`COMPOSED`: a new analysis cannot go uncompared silently."""
    from analysis.options import all_options

    missing = [name for name, cls in all_options().items()
               if getattr(cls, "FUNCTION", "") and name not in COMPOSED]
    assert missing == []


def test_every_option_is_tested_or_listed():
    for analysis in COMPOSED:
        cls = options_for(analysis)
        for name in cls.specs():
            if name not in JUDGED and (analysis, name) not in CLI_ONLY:
                assert _value(analysis, name) != cls.default(name), name


@pytest.mark.parametrize("analysis, name", _cases(), ids=lambda x: str(x))
def test_a_non_default_option_gives_the_same_numbers_everywhere(ssqa, capsys, analysis,
                                                                   name):
    spec = COMPOSED[analysis]
    sample, design_path = spec.get("sample", SAMPLE), spec.get("design", DESIGN)
    rows, design = ssqa if sample == SAMPLE else _tables(sample, design_path)
    cls = options_for(analysis)
    needs = {k: v for k, v in NEEDS_OF.get((analysis, name), NEEDS.get(name, {})).items()
             if k in cls.specs()}
    base = {k: v for k, v in spec.get("base", {}).items() if k != name and k not in needs}
    values = {**base, **needs, name: _value(analysis, name)}
    opts = cls.coerce(values)
    function = getattr(bw, spec.get("function", analysis))
    where = spec.get("where", WHERE)
    inputs = spec["inputs"]
    api = function(rows, design, options=opts, where=where, **inputs)
    assert api.settings[name] == (opts.settings()[name] if name != "cluster" else None)
    default = function(rows, design, where=where, **base, **inputs)
    # the copied command and script, built from the same options
    view = api_view(opts, function=spec.get("function"), flags=spec.get("flags"),
                    **spec["inputs"])
    cli = cli_command(view.command, sample, design_path,
                      (*spec.get("cli_extra", ()), *view.options), where=where)
    out = _cli_json(capsys, shlex.split(cli)[3:])
    assert out["settings"][name] == api.settings[name]
    namespace: dict = {}
    exec(compile(api_snippet(view.function, sample, design_path, view.call,  # noqa: S102
                             where=where), "copied.py", "exec"), namespace)
    # the report section from the settings the options give
    settings = {**opts.settings(), **spec["inputs"], "where": where}
    if "cluster" in cls.specs():
        settings["cluster"] = design.cluster if opts.cluster == FROM_DESIGN else opts.cluster
    # importance's only seed is judge noise's: the report keeps it in judge_noise
    judged = (*JUDGED, "seed") if analysis == "importance" else JUDGED
    apart = spec.get("not_in_report", ())  # options the report's section does not offer
    settings = {k: v for k, v in settings.items() if k not in (*judged, *apart)}
    if "report" in spec:
        settings = spec["report"](settings, spec["inputs"])
    section = spec.get("section", analysis)
    sec = R.build_section(section, rows, design, settings) if section else None
    assert sec is None or sec.skipped is None, sec.skipped
    for of_api, of_cli, stem, columns in spec["views"]:
        table = of_api(api)
        _same(table, of_cli(out), columns, f"CLI {name} {stem}")
        _same(table, of_api(namespace["result"]), columns, f"Python {name} {stem}")
        if sec is None:
            continue
        shown = dict(sec.tables).get(stem, pd.DataFrame())
        if "duplicate_of" in shown.columns:  # the report lists every subgroup
            shown = shown[shown["duplicate_of"].isna()]
        if name not in apart:
            _same(table, shown.reset_index(drop=True), columns, f"report {name} {stem}")
    # the option is not inert where it should act on a number
    # (``test`` acts on independent rows only: with the design's cluster it is robust)
    acts = {"subgroups": ("level", "confidence", "adjust", "cluster", "small_sample", "ci",
                          "power", "effect", "pooled"),
            "ecdf": ("level", "ideal", "cutoff", "adjust", "ci", "pooled"),
            "importance": ("confidence", "cluster", "small_sample", "gee", "interactions",
                           "likelihood_ratio"),
            # (compare's adjust: the sample's one pair of models has one p-value)
            "compare": ("confidence", "cluster", "n_resamples", "seed", "subgroup_adjust"),
            "index": ("ci", "scores", "weights", "model", "ideal", "penalty", "penalty_gini",
                      "sentiment", "confidence"),
            "disparity": ("normalization", "baseline", "standard", "quantiles", "n_resamples",
                          "compare", "direction"),
            "cohorts": ("method",),
            "coverage": ("count", "limit"),
            "counterfactual": ("confidence", "adjust", "cluster"),
            # score_column: the judged sample's only score is its 0/1 outcome (same numbers)
            "variance_components": ("facets", "interactions", "n_resamples", "confidence"),
            "d_study": ("facets", "interactions", "target_se", "answer_cost",
                        "judge_cost"),
            "native_scores": ("cluster", "n_resamples", "confidence", "seed"),
            "native_deltas": ("cluster", "n_resamples", "confidence", "seed", "adjust")
            }[analysis]
    if name in acts:
        assert any(not of_api(api).equals(of_api(default)) for of_api, *_ in spec["views"]), \
            f"{name} changed nothing"
