"""The flat API's subgroups, ecdf, coverage, bias_index and importance_linear
(``analysis/api.py``): each table equals the analysis module's on a bundled sample, strings
are accepted where a user would type them, a wrong option name or value is an OptionError.
Also ``analysis.index.bias_index`` with factor names as dimensions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import api as bw
from analysis.cells import cell_table, filter_rows
from analysis.design import Design, apply_design
from analysis.errors import AnalysisError
from analysis.options import OptionError
from tests.app.apptools import ROOT

FACTORS = ["model", "gender"]
DATA = ROOT / "sample_data" / "ssqa_simulated.csv.gz"


@pytest.fixture(scope="module")
def ssqa():
    """The file's and the design file's paths (what a notebook user passes), and the
    table as the API prepares it (what the modules are given)."""
    path = str(DATA).replace(".csv.gz", ".design.yaml")
    return str(DATA), path, bw.prepare_inputs(str(DATA), path)[0]


def test_subgroups_equals_the_module_with_the_design_cluster(ssqa):
    from analysis.subgroups import distinct_subgroups, subgroups

    frame, path, applied = ssqa
    got = bw.subgroups(frame, path, factors=FACTORS, level="2", test="wald",
                       where={"cot": "no"})
    # the design restricted to the factors, applied (what the API does with factors=)
    rows = filter_rows(bw.prepare_inputs(frame, path, factors=FACTORS)[0], {"cot": ["no"]})
    full = subgroups(cell_table(rows, [*FACTORS, "template"]), FACTORS, max_level=2,
                     test="wald", cluster="template")
    pd.testing.assert_frame_equal(got.table, distinct_subgroups(full))
    assert got.settings["cluster"] == "template" and got.settings["level"] == 2
    assert got.notes[0].startswith("CIs and p-values: cluster-robust over")
    # no cluster: the independent-rows Woolf interval
    plain = bw.subgroups(frame, path, factors=FACTORS, cluster=None)
    applied = bw.prepare_inputs(frame, path, factors=FACTORS)[0]
    want = distinct_subgroups(subgroups(cell_table(applied, FACTORS), FACTORS))
    pd.testing.assert_frame_equal(plain.table, want)


def test_subgroups_bootstrap_power_and_options_object(ssqa):
    from analysis.bootstrap import bootstrap_log_disparity
    from analysis.options.subgroups import SubgroupsOptions
    from analysis.planning import add_power
    from analysis.subgroups import distinct_subgroups, subgroups

    frame, path, _ = ssqa
    applied = bw.prepare_inputs(frame, path, factors=FACTORS)[0]
    opts = SubgroupsOptions(level=1, ci="bootstrap", n_resamples=50, seed=3, cluster=None,
                            power=0.8)
    got = bw.subgroups(frame, path, options=opts, factors="model, gender")
    full = subgroups(cell_table(applied, FACTORS), FACTORS, max_level=1)
    full = bootstrap_log_disparity(applied, FACTORS, max_level=1, table=full, cluster=None,
                                   n_resamples=50, seed=3)
    full = add_power(full, len(applied), power=0.8)
    want = distinct_subgroups(full)
    cols = ["subgroup", "log_disparity", "boot_ci_low", "boot_ci_high", "mde_log_disparity"]
    pd.testing.assert_frame_equal(got.table[cols], want[cols])


def test_ecdf_equals_the_module(ssqa):
    from analysis.bootstrap import bootstrap_ecdf
    from analysis.ecdf import ecdf_summary, ks_tests, subgroup_rates

    frame, path, applied = ssqa
    design = Design.load(path)
    got = bw.ecdf(frame, design, factors=["gender", "pachankis_cluster"], ideal="0.05",
                  ci="bootstrap", n_resamples="40", seed=2)
    assert got.settings["by"] == "model"  # the design's model factor
    rates = subgroup_rates(cell_table(applied, ["model", "gender", "pachankis_cluster"]),
                           ["gender", "pachankis_cluster"], by="model")
    pd.testing.assert_frame_equal(got.table, ecdf_summary(rates, by="model", ideal=0.05))
    pd.testing.assert_frame_equal(got.tables["ks"], ks_tests(rates, by="model", seed=2))
    want = bootstrap_ecdf(applied, ["gender", "pachankis_cluster"], by="model", ideal=0.05,
                          cluster="template", n_resamples=40, seed=2)
    pd.testing.assert_frame_equal(got.tables["bootstrap"], want)
    with pytest.raises(AnalysisError, match="by='gender' is also in factors"):
        bw.ecdf(frame, design, by="gender", factors=["gender"])


def test_coverage_equals_the_module(ssqa):
    from analysis import coverage as cov

    frame, path, applied = ssqa
    design = Design.load(path)
    got = bw.coverage(frame, design, count="responses", limit="3")
    names = cov.default_factors(design)
    cells = cov.coverage_cells(applied, design, names, unit="responses")
    pd.testing.assert_frame_equal(got.table, cov.coverage_summary(cells, design,
                                                                  factors=names, where={}))
    assert len(got.tables["thinnest_cells"]) == 3
    assert got.settings == {"count": "responses", "limit": 3, "factors": names, "where": {},
                            "exclude": {}}
    # distinct prompts (the default) count fewer than responses in a cell
    prompts = bw.coverage(frame, design)
    assert prompts.table["n_rows"].iloc[0] <= got.table["n_rows"].iloc[0]


def test_bias_index_takes_factor_names(ssqa):
    from analysis.index import Dimension, bias_index

    frame, path, applied = ssqa
    design = Design.load(path)
    got = bw.bias_index(frame, design, factors=["gender", "stigma"], model="model",
                        weights="2, 1", penalty_gini="0.5")
    want = bias_index(applied, design, dimensions=[Dimension("gender", weight=2.0),
                                                   Dimension("stigma")],
                      model="model", penalty_kind="coverage_gini", penalty_value=0.5)
    pd.testing.assert_frame_equal(got.table, want.totals)
    pd.testing.assert_frame_equal(got.tables["components"], want.components)
    # Dimension objects and mappings as given; the module function takes names too
    objects = bw.bias_index(frame, design, dimensions=[
        Dimension("gender", weight=2.0), {"factor": "stigma"}], model="model",
        penalty_gini=0.5)
    pd.testing.assert_frame_equal(objects.table, want.totals)
    by_name = bias_index(applied, design, dimensions=["gender"], model="model")
    by_object = bias_index(applied, design, dimensions=[Dimension("gender")], model="model")
    pd.testing.assert_frame_equal(by_name.totals, by_object.totals)
    assert bias_index(applied, design, dimensions="gender,stigma").totals["llmbi"].notna().all()


@pytest.mark.parametrize("dimensions, message", [
    ([3], r"A dimension is a factor name, a mapping or a Dimension object, not 3 \(int\)"),
    ([{"score": "deviation_metric"}], "keys factor, score and weight"),
    ([{"factor": "gender", "wieght": 2}], "keys factor, score and weight"),
    (["gender", "gender"], "listed twice"),
    (["sexuality"], "'sexuality' is not a column"),
    ([{"factor": "gender", "weight": "heavy"}], "the weight must be a number >= 0"),
    (12, "dimensions must be a list of factor names or Dimension objects, not int"),
])
def test_bias_index_bad_dimensions_are_typed_errors(ssqa, dimensions, message):
    from analysis.index import bias_index

    _, path, applied = ssqa
    design = Design.load(path)
    with pytest.raises(AnalysisError, match=message):
        bias_index(applied, design, dimensions=dimensions)


def test_importance_linear_equals_the_module():
    from analysis.importance_linear import linear_importance
    from analysis.importers import import_results
    from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_discrim_eval_explicit_*")
    imported = import_results("lm-eval", [path])
    frame, design = imported.frame, imported.design
    got = bw.importance_linear(frame, design, factors=["race", "gender"], alpha="0.01",
                               standardise="false", mixed="true",
                               random_effects="intercept")
    want = linear_importance(apply_design(frame, design), design, factors=["race", "gender"],
                             standardise=False, mixed=True, random_slopes=False, alpha=0.01)
    pd.testing.assert_frame_equal(got.table, want.terms)
    assert got.settings["mixed"] is True and got.settings["alpha"] == 0.01
    with pytest.raises(OptionError, match="has no option 'random_slope'.*alpha, adjust"):
        bw.importance_linear(frame, design, random_slope=False)
    with pytest.raises(OptionError, match="use importance"):
        bw.importance_linear(frame, design, outcome_type="binary")


@pytest.mark.parametrize("function, options, message", [
    (bw.subgroups, {"levle": 2}, "subgroups has no option 'levle'.*level"),
    (bw.subgroups, {"test": "exact"}, "test must be one of 'auto', 'wald', 'fisher'"),
    (bw.subgroups, {"n_boot": 100}, "has no option 'n_boot'.*n_resamples"),
    (bw.subgroups, {"min_n": "-1"}, "min_n: must be at least 0"),
    (bw.ecdf, {"cutoff": "high"}, "cutoff: expected a number"),
    (bw.ecdf, {"random_state": 1}, "has no option 'random_state'.*seed"),
    (bw.coverage, {"count": "cells"}, "count must be one of 'prompts', 'responses'"),
    (bw.bias_index, {"sentiment_score": "mean"}, "sentiment_score must be one of"),
    (bw.bias_index, {"weights": "a,b"}, "--weights takes numbers"),
    (bw.bias_index, {"penalty": 1, "penalty_gini": 1}, "not both"),
])
def test_wrong_option_names_and_values_are_option_errors(ssqa, function, options, message):
    frame, design, _ = ssqa  # the paths
    kwargs = {"factors": ["gender", "stigma"]} if function is bw.bias_index else {}
    with pytest.raises(OptionError, match=message):
        function(frame, design, **kwargs, **options)


def test_judge_noise_through_the_api_equals_the_module():
    from analysis.judge_noise import subgroup_noise, threshold_of
    from analysis.subgroups import distinct_subgroups, subgroups
    from tests.app.test_judge_noise_page import judged_results

    results, design = judged_results()
    got = bw.subgroups(results, design, factors=["model", "stage"], level=1, judge_noise=30,
                       noise_mode="single", seed=4)
    applied = apply_design(results, design)
    table = distinct_subgroups(subgroups(cell_table(applied, ["model", "stage"]),
                                         ["model", "stage"], max_level=1))
    want = subgroup_noise(applied, ["model", "stage"], max_level=1, table=table,
                          n_resamples=30, mode="single", seed=4, threshold=threshold_of(design))
    np.testing.assert_array_equal(got.table["noise_survives"], want["noise_survives"])
    assert any("30 replicates" in n for n in got.notes)
