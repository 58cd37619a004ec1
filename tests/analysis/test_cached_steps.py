"""The steps the app caches apart give what the one-call functions give.

The Disparity page keeps the permutation test apart from the rest of the report
(:func:`analysis.disparity.with_permutation`) and the Compare page keeps the pairing apart
from the comparison (:func:`analysis.compare.compare_pairing`); :func:`pair_units` numbers
the prompt units from each column's codes, whatever the column's type.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import apply_design
from analysis import compare as cmp
from analysis import disparity as dsp
from analysis.design import Design
from tests.app.apptools import ROOT

BBQ = ROOT / "sample_data" / "bbq_unifiedqa.csv.gz"


@pytest.fixture(scope="module")
def bbq() -> tuple[pd.DataFrame, Design]:
    design = Design.load(ROOT / "sample_data" / "bbq_unifiedqa.design.yaml")
    return apply_design(pd.read_csv(BBQ), design), design


@pytest.mark.parametrize("options", [
    {"statistic": "mean"},
    {"statistic": "quantile_range", "compare": "overall", "seed": 3, "adaptive": False,
     "n_resamples": 60, "standard": "median"},
])
def test_report_with_separate_permutation_equals_disparity_report(bbq, options):
    results, _ = bbq
    full = dsp.disparity_report(results, "biased_answer", ["category"], **options)
    perm_only = {k: options.get(k, full.settings[s]) for k, s in (
        ("n_resamples", "n_permutations"), ("adaptive", "adaptive"), ("compare", "compare"),
        ("seed", "random_state"))}
    # the rest computed with other permutation options, as the page's cache may hold it
    rest = dsp.disparity_report(results, "biased_answer", ["category"],
                                **{**options, "n_resamples": 0, "seed": 99, "compare": "rest",
                                   "adaptive": True})
    test = dsp.permutation_test(results, "biased_answer", ["category"],
                                statistic=options["statistic"], compare=perm_only["compare"],
                                n_resamples=perm_only["n_resamples"], seed=perm_only["seed"],
                                adaptive=perm_only["adaptive"])
    joined = dsp.with_permutation(rest, test, **perm_only)
    assert list(joined.settings.items()) == list(full.settings.items())
    for part in ("summary", "selection", "metrics", "permutation"):
        pd.testing.assert_frame_equal(getattr(joined, part), getattr(full, part))
    assert joined.settings["n_permutations_used"] == int(test["n_permutations"].max()) > 0


def test_comparison_of_a_kept_pairing_equals_compare(bbq):
    results, design = bbq
    full = cmp.compare(results, design, "input_format", factors=["category"], max_level=1,
                       adjust="bh", n_resamples=200)
    pairing = cmp.pair_units(results, design, "input_format", factors=["category"])
    again = cmp.compare_pairing(pairing, factors=["category"], max_level=1, adjust="bh",
                                n_resamples=200)
    pd.testing.assert_frame_equal(again.overall, full.overall)
    assert again.notes == full.notes and set(again.subgroups) == set(full.subgroups)
    for pair, table in full.subgroups.items():
        pd.testing.assert_frame_equal(again.subgroups[pair], table)


def test_units_numbered_by_first_appearance_whatever_the_column_type():
    # prompt (p, q): rows 0 and 3 are one unit, rows 1 and 4 another, row 2 a third
    p = ["b", "a", "a", "b", "a", "c"]
    q = [1, 2, 1, 1, 2, 7]
    model = ["m1", "m1", "m1", "m2", "m2", "m2"]
    y = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    tables = {
        "object": pd.DataFrame({"p": pd.Series(p, dtype=object), "q": q}),
        "arrow string": pd.DataFrame({"p": pd.Series(p, dtype="string[pyarrow]"), "q": q}),
        "categorical": pd.DataFrame({"p": pd.Categorical(p, categories=["c", "b", "a"]),
                                     "q": pd.Series(q, dtype=float)}),
    }
    for name, frame in tables.items():
        frame = frame.assign(model=pd.Categorical(model), deviation=y)
        pairing = cmp.pair_units(frame, None, "model", unit=["p", "q"], cluster=None)
        assert [str(v) for v in pairing.wide["p"]] == ["b", "a", "a", "c"], name
        assert pairing.wide["q"].astype(float).tolist() == [1, 2, 1, 7], name
        # unit (b, 1): m1 1.0, m2 0.0; (a, 2): 0.0 / 0.0; (a, 1): m1 only; (c, 7): m2 only
        np.testing.assert_array_equal(pairing.outcomes["m1"].to_numpy(),
                                      [1.0, 0.0, 1.0, np.nan])
        np.testing.assert_array_equal(pairing.outcomes["m2"].to_numpy(),
                                      [0.0, 0.0, np.nan, 1.0])
