"""The flat API's cohorts and compare (analysis.api) against the module functions, their
options (strings, bad names and values) and report settings saved under the old names."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import api as bw
from analysis import distribution as dm
from analysis.compare import compare
from analysis.design import apply_design
from analysis.options import OptionError
from analysis.report import build_section
from tests.app.apptools import sample_with_design

CATEGORY, COHORT, BY = "answer", "model", ["pachankis_cluster"]


@pytest.fixture(scope="module")
def ssqa():
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    return apply_design(frame, design), design


def test_cohorts_table_is_the_module_functions(ssqa):
    rows, design = ssqa
    got = bw.cohorts(rows, design, category=CATEGORY, cohort=COHORT, by=BY,
                     method="monte_carlo", n_resamples="499", seed="7")
    dist = dm.category_distribution(rows, CATEGORY, COHORT, by=BY)
    pd.testing.assert_frame_equal(got.table, dist)
    want = dm.homogeneity_test(dist, CATEGORY, COHORT, by=BY, method="monte_carlo",
                               n_resamples=499, seed=7)
    pd.testing.assert_frame_equal(got.tables["homogeneity"], want)
    assert (want["n_resamples"] == 499).all() and (want["p_value"] >= 1 / 500).all()
    assert got.settings["seed"] == 7 and got.settings["n_resamples"] == 499
    # percentages of each cohort add up to 100 within a group (renormalise off: all answers)
    sums = got.table.groupby([*BY, COHORT], observed=True)["percent"].sum()
    assert sums.to_numpy() == pytest.approx(100.0)


def test_cohorts_bad_options(ssqa):
    rows, design = ssqa
    with pytest.raises(OptionError, match="method must be one of 'auto'"):
        bw.cohorts(rows, design, category=CATEGORY, cohort=COHORT, method="fisher")
    with pytest.raises(OptionError, match="has no option 'random_state'.*seed"):
        bw.cohorts(rows, design, category=CATEGORY, cohort=COHORT, random_state=1)
    with pytest.raises(OptionError, match="n_resamples: must be at least 0"):
        bw.cohorts(rows, design, category=CATEGORY, cohort=COHORT, n_resamples=-1)


def test_cohorts_report_reads_random_state(ssqa):
    rows, design = ssqa
    base = {"category": CATEGORY, "cohort": COHORT, "by": BY, "method": "monte_carlo"}
    old = build_section("cohorts", rows, design, {**base, "random_state": 5})
    new = build_section("cohorts", rows, design, {**base, "seed": 5})
    assert old.settings["seed"] == 5 and "random_state" not in old.settings
    pd.testing.assert_frame_equal(dict(old.tables)["cohorts_chi_square"],
                                  dict(new.tables)["cohorts_chi_square"])


def test_compare_table_is_the_module_functions(ssqa):
    rows, design = ssqa
    got = bw.compare(rows, design, by="model", subgroups="stigma", level=1,
                     n_resamples="200", seed=3, confidence="0.9")
    want = compare(rows, design, "model", factors=["stigma"], max_level=1, n_resamples=200,
                   seed=3, confidence=0.9)
    pd.testing.assert_frame_equal(got.table, want.overall)
    pd.testing.assert_frame_equal(got.tables["subgroups"],
                                  pd.concat(list(want.subgroups.values()), ignore_index=True))
    assert got.notes == tuple(want.notes)
    assert not got.tables["subgroups"].attrs and got.settings["resampled"] == "clusters of template"
    # the cluster used (the design's, resolved), as subgroups says it
    assert got.settings["cluster"] == design.cluster == "template"
    assert got.settings["n_resamples"] == 200


def test_compare_bad_options(ssqa):
    rows, design = ssqa
    with pytest.raises(OptionError, match="n_resamples: must be at least 20, not 10"):
        bw.compare(rows, design, by="model", n_resamples=10)
    with pytest.raises(OptionError, match="has no option 'n_boot'.*n_resamples"):
        bw.compare(rows, design, by="model", n_boot=100)
    with pytest.raises(OptionError, match="adjust must be one of 'holm', 'bh', 'by', "
                       "'bonferroni'"):
        bw.compare(rows, design, by="model", adjust="sidak")


def test_compare_report_reads_n_boot_and_cluster_design(ssqa):
    rows, design = ssqa
    old = build_section("compare", rows, design, {"by": "model", "n_boot": 100,
                                                  "cluster": "design", "adjust": "bh"})
    assert old.settings["n_resamples"] == 100 and "n_boot" not in old.settings
    want = compare(rows, design, "model", adjust="bh")
    pd.testing.assert_frame_equal(dict(old.tables)["compare_overall"], want.overall)


def test_the_options_choices_are_the_modules():
    from analysis import compare as cmp
    from analysis.options.cohorts import CohortsOptions
    from analysis.options.compare import CompareOptions

    assert CohortsOptions.choices("method") == list(dm.TEST_METHODS)
    assert CohortsOptions.default("n_resamples") == dm.DEFAULT_RESAMPLES
    assert CompareOptions.choices("test") == list(cmp.MCNEMAR_TESTS)
    assert CompareOptions.choices("adjust") == list(cmp.ADJUSTMENTS)
    assert CompareOptions.choices("duplicates") == list(cmp.DUPLICATE_RULES)


def test_compare_of_a_cached_pairing_is_the_same_comparison(ssqa):
    """The app's pairing (pair_units, cached apart) gives the numbers of the one call."""
    from analysis.compare import pair_units

    rows, design = ssqa
    kw = {"by": "model", "subgroups": ["stigma"], "level": 1, "n_resamples": 60, "seed": 2,
          "confidence": 0.8, "adjust": "bh"}
    whole = bw.compare(rows, design, **kw)
    pairing = pair_units(rows, design, "model", factors=["stigma"], cluster=design.cluster)
    cached = bw.compare(rows, design, **kw, pairing=pairing)
    pd.testing.assert_frame_equal(cached.table, whole.table)
    pd.testing.assert_frame_equal(cached.tables["subgroups"], whole.tables["subgroups"])
    assert cached.settings == whole.settings and cached.notes == whole.notes
