"""The flat API's disparity (analysis.api.disparity) against the module function, its
options (strings, bad names and values) and the one default of the permutation tests."""

from __future__ import annotations

import inspect

import pandas as pd
import pytest

from analysis import api as bw
from analysis.design import apply_design
from analysis.disparity import (
    COMPARES,
    COMPARISONS,
    CONVENTIONS,
    DIRECTIONS,
    DIXON_ALPHAS,
    STANDARDS,
    STATISTICS,
    disparity_report,
    permutation_test,
)
from analysis.options import OptionError
from analysis.options import disparity as O
from analysis.report import build_section
from analysis.saged_stats import NORMALIZATIONS, saged_statistics
from tests.app.apptools import sample_with_design

FEATURE, BY = "sentiment", "pachankis_cluster"


@pytest.fixture(scope="module")
def ssqa():
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    return apply_design(frame, design), design


def test_the_api_table_is_the_module_functions(ssqa):
    rows, design = ssqa
    got = bw.disparity(rows, design, feature=FEATURE, by=BY, n_resamples=199, seed=4,
                       statistic="median")
    want = disparity_report(rows, FEATURE, [BY], n_resamples=199, seed=4, statistic="median")
    pd.testing.assert_frame_equal(got.table, want.summary)
    pd.testing.assert_frame_equal(got.tables["selection"], want.selection)
    pd.testing.assert_frame_equal(got.tables["permutation"], want.permutation)
    assert got.tables["dixon"].iloc[0]["statistic"] == want.dixon.statistic
    pd.testing.assert_frame_equal(got.tables["saged_statistics"],
                                  saged_statistics(rows, FEATURE, [BY]))
    assert got.settings["n_resamples"] == 199 and got.settings["by"] == [BY]
    # the JSON keys of the report's own settings stay as they were
    assert got.raw.settings["n_permutations"] == 199 and got.raw.settings["random_state"] == 4


def test_polarity_defaults_to_the_designs(ssqa):
    rows, design = ssqa
    declared = bw.disparity(rows, design, feature="deviation", by=BY, n_resamples=0)
    assert declared.settings["polarity"] == "harmful"  # the deviation column is harmful
    assert declared.tables["selection"]["selection_rule"].iloc[0] == "x <= standard"
    unknown = bw.disparity(rows, design, feature="deviation", by=BY, n_resamples=0,
                           polarity=None)
    assert unknown.tables["selection"]["selection_rule"].iloc[0] == "x >= standard"
    assert "permutation" not in declared.tables


def test_strings_are_accepted_and_bad_options_refused(ssqa):
    rows, design = ssqa
    typed = bw.disparity(rows, design, feature=FEATURE, by=BY, n_resamples="99",
                         adaptive="false", quantiles="0.2,0.8", alpha="0.1", where={
                             "model": "sim-model-A"})
    assert typed.settings["quantiles"] == [0.2, 0.8] and typed.settings["adaptive"] is False
    assert (typed.tables["permutation"]["n_permutations"] == 99).all()
    assert typed.table["n"].sum() == (rows["model"] == "sim-model-A").sum()
    with pytest.raises(OptionError, match="has no option 'n_permutations'.*n_resamples"):
        bw.disparity(rows, design, feature=FEATURE, by=BY, n_permutations=99)
    with pytest.raises(OptionError, match="statistic must be one of 'mean'"):
        bw.disparity(rows, design, feature=FEATURE, by=BY, statistic="average")
    with pytest.raises(OptionError, match="alpha must be one of"):
        bw.disparity(rows, design, feature=FEATURE, by=BY, alpha=0.2)
    with pytest.raises(OptionError, match="quantiles: takes two numbers"):
        bw.disparity(rows, design, feature=FEATURE, by=BY, quantiles="0.2")


def test_one_default_for_the_permutation_tests():
    """permutation_test and disparity_report took adaptive False and True: both now take
    every default from the options."""
    for function in (permutation_test, disparity_report):
        params = inspect.signature(function).parameters
        for name in ("adaptive", "n_resamples", "seed", "alpha", "quantiles"):
            assert params[name].default == O.DisparityOptions.default(name), (function, name)
    assert O.DisparityOptions.default("adaptive") is True


def test_the_options_choices_are_the_modules():
    specs = O.DisparityOptions
    assert (specs.choices("statistic"), specs.choices("standard")) == (list(STATISTICS),
                                                                       list(STANDARDS))
    assert specs.choices("direction") == list(DIRECTIONS)
    assert specs.choices("comparison") == list(COMPARISONS)
    assert specs.choices("compare") == list(COMPARES)
    assert specs.choices("conventions") == list(CONVENTIONS)
    assert specs.choices("alpha") == list(DIXON_ALPHAS)
    assert specs.choices("normalization") == list(NORMALIZATIONS)


def test_report_settings_saved_with_the_old_names_still_load(ssqa):
    rows, design = ssqa
    base = {"feature": FEATURE, "by": [BY]}
    old = build_section("disparity", rows, design, {**base, "n_permutations": 99,
                                                    "random_state": 3})
    new = build_section("disparity", rows, design, {**base, "n_resamples": 99, "seed": 3})
    assert old.settings["n_resamples"] == 99 and "n_permutations" not in old.settings
    pd.testing.assert_frame_equal(dict(old.tables)["disparity_permutation"],
                                  dict(new.tables)["disparity_permutation"])
    assert dict(new.tables)["disparity_permutation"]["n_permutations"].max() <= 99
