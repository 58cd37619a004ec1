"""The report section ``compare``: the numbers of analysis.compare, defaults, skipping."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import apply_design, load_results
from analysis.compare import compare
from analysis.design import Design, Factor, Outcome
from analysis.report import build_report, build_section, default_settings, report_html
from tests.app.apptools import ROOT


@pytest.fixture(scope="module")
def bbq():
    design = Design.load(ROOT / "sample_data" / "bbq_unifiedqa.design.yaml")
    return apply_design(load_results(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz"), design), \
        design


def test_section_holds_the_comparison(bbq):
    results, design = bbq
    settings = {"by": "input_format", "reference": "race", "factors": ["category"],
                "level": 1, "n_resamples": 200}
    sec = build_section("compare", results, design, settings)
    assert sec.skipped is None and sec.title == "Compare"
    direct = compare(results, design, "input_format", reference="race",
                     factors=["category"], max_level=1, n_resamples=200)
    tables = dict(sec.tables)
    pd.testing.assert_frame_equal(tables["compare_overall"], direct.overall)
    assert len(tables["compare_subgroups"]) == 2 * 6
    assert [name for name, _ in sec.figures] == ["compare_race_arc", "compare_race_qonly",
                                                 "compare_race_arc_sunburst"]
    assert any("went from biased to not biased" in n for n in sec.notes)
    assert any("left out (no partner)" in w for w in sec.warnings)
    html = report_html(build_report(results, design, [("compare", settings)]))
    assert "Compare" in html and "Paired comparison: overall" in html  # its human title


def test_default_compares_the_factor_whose_values_pair(bbq):
    results, design = bbq
    s = default_settings("compare", results, design)
    assert s["by"] == "input_format" and s["factors"] == []


def test_skipped_with_the_reason_when_nothing_pairs():
    frame = pd.DataFrame({"model": ["a", "a", "b", "b"], "item_id": [1, 2, 3, 4],
                          "biased": [1, 0, 0, 1]})
    design = Design((Factor("model", "model", ("a", "b"), "a"),), Outcome("biased"))
    results = apply_design(frame, design)
    assert build_section("compare", results, design).skipped.startswith(
        "no factor's values answer the same prompts")
    sec = build_section("compare", results, design, {"by": "model"})
    assert "share no prompt" in sec.skipped
