"""Issue 37: ``analysis.api.disparity(..., parts=)`` keeps the parts that read the rows
between calls (the Disparity page's one cached call) and gives the numbers of
:func:`analysis.disparity.disparity_report` on the same rows."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import api as bw
from analysis import disparity as dsp
from analysis.design import apply_design
from analysis.disparity_parts import DisparityParts
from analysis.saged_stats import normalize
from tests.app.apptools import sample_with_design

WHERE = {"prompt_style": ["original", "positive"]}


@pytest.fixture(scope="module")
def ssqa():
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    return apply_design(frame, design), design


def _rows(rows, normalization="none"):
    kept = rows[rows["prompt_style"].astype(str).isin(WHERE["prompt_style"])]
    return normalize(kept, ["sentiment"], normalization)


@pytest.mark.parametrize("options", [
    {}, {"standard": "quantile", "quantile": 0.3, "direction": "within", "tolerance": 0.2},
    {"statistic": "quantile_range", "quantiles": (0.1, 0.9), "n_resamples": 99,
     "adaptive": False, "compare": "overall", "seed": 3},
    {"normalization": "zscore", "conventions": "saged", "alpha": 0.1}])
def test_the_parts_give_the_reports_numbers(ssqa, options):
    rows, design = ssqa
    parts = DisparityParts()
    result = bw.disparity(rows, design, feature="sentiment", by=["gender", "cot"],
                          where=WHERE, applied=True, parts=parts, **options)
    opts = result.meta["options"]
    want = dsp.disparity_report(_rows(rows, opts.normalization), "sentiment",
                                ["gender", "cot"], **opts.kwargs())
    pd.testing.assert_frame_equal(result.table, want.summary)
    pd.testing.assert_frame_equal(result.tables["selection"], want.selection)
    pd.testing.assert_frame_equal(result.tables["metrics"], want.metrics)
    if opts.n_resamples:
        pd.testing.assert_frame_equal(result.tables["permutation"], want.permutation)
    assert result.raw.settings == want.settings
    # again with the same store: the same numbers, nothing new kept
    kept = len(parts)
    again = bw.disparity(rows, design, feature="sentiment", by=["gender", "cot"],
                         where=WHERE, applied=True, parts=parts, **options)
    assert len(parts) == kept
    pd.testing.assert_frame_equal(again.tables["selection"], result.tables["selection"])


def test_a_changed_option_recomputes_only_the_parts_it_reads(ssqa, monkeypatch):
    rows, design = ssqa
    parts = DisparityParts()
    call = {"feature": "sentiment", "by": ["gender"], "where": WHERE, "applied": True,
            "parts": parts, "n_resamples": 99}
    bw.disparity(rows, design, **call)
    read = []
    for name in ("grouping", "group_summary", "selection_rates", "permutation_test"):
        original = getattr(dsp, name)
        monkeypatch.setattr(dsp, name, lambda *a, _f=original, _n=name, **k:
                            read.append(_n) or _f(*a, **k))
    bw.disparity(rows, design, **call, standard="median")
    assert read == ["selection_rates"]
    read.clear()
    bw.disparity(rows, design, **call, standard="median", seed=5)
    assert read == ["permutation_test"]
    read.clear()
    bw.disparity(rows, design, **{**call, "where": None})  # another subset: every part
    assert read == ["grouping", "group_summary", "selection_rates", "permutation_test"]


def test_the_store_is_bounded_per_kind():
    parts = DisparityParts(max_entries=2)
    for i in range(5):
        parts.get("selection", i, lambda i=i: i)
    parts.get("summary", 0, lambda: "s")
    assert len(parts) == 3 and parts.get("selection", 4, lambda: None) == 4
    assert parts.get("selection", 0, lambda: "made again") == "made again"
