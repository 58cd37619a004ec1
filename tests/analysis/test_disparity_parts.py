"""The Disparity page's parts, cached apart, give what ``disparity_report`` gives.

The page caches the group summary and the selection rates apart (each per its own
options) and joins them with :func:`analysis.disparity.report_of`; the permutation test
is joined by :func:`analysis.disparity.with_permutation` (``tests/analysis/test_cached_steps.py``).
"""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import apply_design
from analysis import disparity as dsp
from analysis.design import Design
from analysis.errors import AnalysisError
from tests.app.apptools import ROOT


@pytest.fixture(scope="module")
def bbq() -> tuple[pd.DataFrame, Design]:
    design = Design.load(ROOT / "sample_data" / "bbq_unifiedqa.design.yaml")
    return apply_design(pd.read_csv(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz"),
                        design), design


@pytest.mark.parametrize("options", [
    {"statistic": "median", "polarity": "harmful", "n_resamples": 0},
    {"statistic": "skewness", "standard": "quantile", "quantile": 0.3, "direction": "within",
     "tolerance": 0.2, "alpha": 0.01, "conventions": "saged", "quantiles": (0.1, 0.9),
     "n_resamples": 0},
])
def test_report_from_its_parts_equals_disparity_report(bbq, options):
    """The page caches the group summary and the selection rates apart (each per its own
    options) and joins them with :func:`analysis.disparity.report_of`."""
    results, _ = bbq
    full = dsp.disparity_report(results, "biased_answer", ["category"], **options)
    given = {"baseline": None, "quantiles": (0.25, 0.75), "conventions": "workbench",
             "standard": "mean", "quantile": 0.5, "value": None, "direction": None,
             "tolerance": None, "comparison": "inclusive", "polarity": None, "alpha": 0.05,
             **options}
    direction = dsp.selection_direction(given["polarity"], given["direction"])
    summary = dsp.group_summary(results, "biased_answer", ["category"],
                                baseline=given["baseline"], quantiles=given["quantiles"],
                                conventions=given["conventions"])
    selection = dsp.selection_rates(
        results, "biased_answer", ["category"], baseline=given["baseline"],
        standard=given["standard"], quantile=given["quantile"], value=given["value"],
        direction=direction, tolerance=given["tolerance"], comparison=given["comparison"])
    n_missing = dsp.grouping(results, "biased_answer", ["category"]).n_missing  # 111 here
    parts = dsp.report_of(summary, selection, feature="biased_answer", by=["category"],
                          n_missing=n_missing,
                          **{**{k: v for k, v in given.items() if k != "n_resamples"},
                             "direction": direction})
    joined = dsp.with_permutation(parts, None, n_resamples=0, adaptive=full.settings[
        "adaptive"], compare=full.settings["compare"], seed=full.settings["random_state"])
    assert list(joined.settings.items()) == list(full.settings.items())
    for part in ("summary", "selection", "metrics"):
        pd.testing.assert_frame_equal(getattr(joined, part), getattr(full, part))
    assert joined.dixon == full.dixon


@pytest.mark.parametrize("baseline", [None, "correct"])
def test_a_grouping_gives_what_the_table_gives(bbq, baseline):
    """The page groups the rows once (:func:`analysis.disparity.grouping`) and passes the
    grouping to the summary, the selection rates, the permutation test and the box plot."""
    results, _ = bbq
    by = ["category", "input_format"]
    rows = dsp.grouping(results, "biased_answer", by, baseline=baseline)
    for function, kwargs in ((dsp.group_summary, {"conventions": "saged"}),
                             (dsp.selection_rates, {"standard": "median"}),
                             (dsp.permutation_test, {"n_resamples": 99, "seed": 2}),
                             (dsp.grouped_values, {})):
        want = function(results, "biased_answer", by, baseline=baseline, **kwargs)
        got = function(rows, "biased_answer", by, baseline=baseline, **kwargs)
        pd.testing.assert_frame_equal(got, want, check_exact=True)
    with pytest.raises(AnalysisError, match="This grouping is of 'biased_answer' by "
                                                "category, input_format"):
        dsp.group_summary(rows, "correct", by, baseline=baseline)
    with pytest.raises(AnalysisError, match="not of 'biased_answer' by category"):
        dsp.selection_rates(rows, "biased_answer", ["category"], baseline=baseline)
