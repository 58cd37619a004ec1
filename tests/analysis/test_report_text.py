"""A report to send (issue 29 item 2): skipped sections with reasons, human titles,
numbers rounded as on the pages, readable settings, empty tables as one sentence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import report as R
from analysis.design import Design, apply_design
from analysis.report_text import display_table, figure_title, settings_lines, table_title


def _table_and_design():
    rng = np.random.default_rng(5)
    n = 400
    frame = pd.DataFrame({"category": "Age",  # constant, as in a one-category BBQ file
                          "polarity": rng.choice(["neg", "nonneg"], n),
                          "condition": rng.choice(["ambig", "disambig"], n),
                          "score": rng.normal(size=n),
                          "biased": rng.integers(0, 2, n)})
    design = Design.from_dict({
        "factors": [{"name": "category", "kind": "domain", "values": ["Age"]},
                    {"name": "polarity", "kind": "prompt", "values": ["neg", "nonneg"]},
                    {"name": "condition", "kind": "prompt",
                     "values": ["ambig", "disambig"]}],
        "outcome": {"column": "biased", "mapping": "binary"}})
    return apply_design(frame, design), design


def test_numbers_are_rounded_as_on_the_pages():
    table = pd.DataFrame({"subgroup": ["a = 1"], "n": [12345], "deviation_rate": [0.566667],
                          "log_disparity": [-0.619039], "p_value": [1.234e-70],
                          "p_adjusted": [0.0342], "small_n": [True],
                          "coverage_percentage": [0.197917]})
    shown = display_table(table, adjust="bh")
    assert shown.iloc[0].to_dict() == {
        "subgroup": "a = 1", "n": "12,345", "rate": "0.567", "LD": "-0.619",
        "p": "1.2e-70", "p (BH)": "0.034", "small n": "yes", "coverage": "19.8 %"}
    # the header names the method the numbers were adjusted with (issue 37)
    assert "p (Holm)" in display_table(table, adjust="holm").columns
    assert "p adjusted" in display_table(table).columns
    percentages = pd.DataFrame({"model": ["m"], "n": [3], "unknown": [33.33333]})
    assert display_table(percentages, "cohorts_percentages").iloc[0]["unknown"] == "33.3"


def test_every_table_and_figure_stem_of_a_full_report_has_a_human_title():
    results, design = _table_and_design()
    rep = R.build_report(results, design, [s for s in R.SECTIONS if s != "judges"])
    for sec in rep.sections:
        for stem, _ in sec.tables:
            title, caption = table_title(stem)
            assert "_" not in title and caption, stem
        for stem, fig in sec.figures:
            title, caption = figure_title(stem, fig)
            assert "_" not in title and caption, stem
    html = R.report_html(rep)
    assert "<h3>coverage_thinnest_cells</h3>" not in html
    assert "<h3>Thinnest cells</h3>" in html


def test_defaults_never_start_on_a_constant_factor():
    results, design = _table_and_design()
    for name in ("subgroups", "disparity"):
        settings = R.default_settings(name, results, design)
        chosen = settings["factors"] if name == "subgroups" else settings["by"]
        assert "category" not in chosen and chosen, name
    sec = R.build_section("disparity", results, design)  # used to fail: one group (Age)
    assert sec.skipped is None and sec.tables


def test_a_section_that_cannot_be_computed_is_skipped_and_the_rest_built():
    results, design = _table_and_design()
    rep = R.build_report(results, design, [
        ("coverage", {"factors": ["polarity", "condition"]}),
        ("disparity", {"by": ["category"]}),  # one group: cannot be computed
        ("subgroups", {"factors": ["polarity"], "level": 1})])
    skipped = {s.name: s.skipped for s in rep.sections}
    assert skipped["coverage"] is None and skipped["subgroups"] is None
    assert "Only one group" in skipped["disparity"]
    html = R.report_html(rep)
    assert "Skipped: Only one group" in html and html.count("<section") == 3


def test_a_report_whose_every_section_fails_still_says_why_for_each():
    results, design = _table_and_design()
    bad = {"coverage": {"factors": ["nope"]}, "subgroups": {"factors": ["nope"]},
           "ecdf": {}, "importance": {"factors": ["nope"]}, "disparity": {"by": ["category"]},
           "index": {"dimensions": [{"factor": "nope", "score": "deviation_metric",
                                     "weight": 1.0}]},
           "cohorts": {"category": "nope"}, "judges": {},
           "compare": {"by": "nope"}, "counterfactual": {"swap": "nope"}, "native": {},
           "checks": {}, "variance": {"facets": ["nope"]}}
    rep = R.build_report(results, design, list(bad.items()))
    assert all(s.skipped for s in rep.sections), [(s.name, s.skipped) for s in rep.sections]
    html = R.report_html(rep)
    assert html.count("Skipped: ") == len(R.SECTIONS)
    for sec in rep.sections:
        assert R._e(sec.skipped) in html


def test_a_typo_in_a_setting_name_still_stops_the_report():
    results, design = _table_and_design()
    with pytest.raises(R.SettingsError, match="unknown setting"):
        R.build_report(results, design, [("subgroups", {"levle": 1})])


def test_settings_list_only_what_differs_from_the_defaults():
    defaults = {"factors": ["a"], "level": 2, "where": {}, "ci": "none", "cluster": "t",
                "n_boot": 1000, "judge_noise": {"replicates": 0, "mode": "mean"}}
    assert settings_lines(dict(defaults), defaults) == []
    changed = {**defaults, "level": 1, "where": {"condition": ["ambig"]}, "n_boot": 50,
               "judge_noise": {"replicates": 0, "mode": "single"}}
    assert settings_lines(changed, defaults) == ["level: 1", "subset: condition = ambig"]
    changed["ci"] = "bootstrap"
    assert settings_lines(changed, defaults)[-2:] == ["ci: bootstrap", "n boot: 50"]


def test_an_empty_table_reads_as_one_sentence():
    html = R._table_html(pd.DataFrame({"group_a": [], "statistic": []}))
    assert "<table" not in html and "No rows" in html


def test_an_ecdf_compared_by_another_factor_is_built_without_a_model_factor():
    """The eCDF page compares curves by any factor; its report section used to be skipped
    ("no model factor") although the page drew it."""
    results, design = _table_and_design()
    assert R.build_section("ecdf", results, design).skipped.startswith("the design has no "
                                                                       "model factor")
    sec = R.build_section("ecdf", results, design, {"by": "condition"})
    assert sec.skipped is None and sec.settings["factors"] == ["polarity"]
    assert len(sec.figures) == 1
