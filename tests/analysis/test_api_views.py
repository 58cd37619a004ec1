"""The compositions the pages call (issue 37: ui/ and pages/ call ``analysis.api``, never
a statistics module): each API function gives the numbers of the statistics functions it
composes, on the bundled samples and on hand-made tables, so moving a page onto it
changes no number. The reference numbers are the modules' own, which their tests check
against scipy, statsmodels and clubSandwich."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from analysis import api as bw
from analysis.design import Design, Factor, Outcome, apply_design
from analysis.errors import AnalysisError

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_data"


@pytest.fixture(scope="module")
def bbq() -> tuple[pd.DataFrame, Design]:
    from analysis.io import load_results

    design = Design.load(SAMPLES / "bbq_unifiedqa.design.yaml")
    return load_results(SAMPLES / "bbq_unifiedqa.csv.gz"), design


@pytest.fixture(scope="module")
def ssqa() -> tuple[pd.DataFrame, Design]:
    from analysis.io import load_results

    design = Design.load(SAMPLES / "ssqa_simulated.design.yaml")
    return apply_design(load_results(SAMPLES / "ssqa_simulated.csv.gz"), design), design


def test_fractional_factorial_is_the_planning_design_with_its_budget_note():
    from analysis.planning import budget_note, fractional_factorial

    factors = {f: ["0", "1"] for f in "abcde"}
    result = bw.fractional_factorial(factors, runs="10")
    frac = fractional_factorial(factors, 10)
    pd.testing.assert_frame_equal(result.table, frac.runs)
    assert len(result.table) == 8 and result.meta["resolution"] == frac.resolution == 3
    assert result.meta["budget_note"] == budget_note(10, frac) != ""
    assert result.notes == (result.meta["budget_note"],)
    # every pair of factors shows every pair of values equally often (strength 2)
    for a, b in (("a", "b"), ("c", "e")):
        assert result.table.groupby([a, b]).size().tolist() == [2, 2, 2, 2]
    full = bw.fractional_factorial({"a": ["x", "y"], "b": ["x", "y", "z"]}, runs=6)
    assert len(full.table) == 6 and full.notes == () and full.meta["resolution"] == np.inf
    with pytest.raises(AnalysisError, match="whole number"):
        bw.fractional_factorial(factors, runs="many")


def test_nesting_finds_the_templates_fixing_gender_with_one_sentence_each(ssqa):
    from analysis.nesting import describe_nesting, find_nestings

    results, design = ssqa
    result = bw.nesting(results, design, applied=True)
    columns = [*design.names, *([design.cluster] if design.cluster not in design.names
                                else [])]
    expected = find_nestings(results, columns,
                             references={f.name: f.reference for f in design.factors})
    pd.testing.assert_frame_equal(result.table, expected)
    assert result.notes == tuple(describe_nesting(r) for r in expected.to_dict("records"))
    assert result.settings["columns"] == columns
    pairs = set(zip(result.table["determinant"], result.table["dependent"], strict=True))
    assert ("template", "gender") in pairs  # docs/architecture.md: "template -> gender"


def test_findings_and_the_rows_behind_one(ssqa):
    from analysis.findings import describe_finding, rows_behind, top_findings

    results, design = ssqa
    table = bw.subgroups(results, design, factors=["model", "cot"], applied=True).table
    result = bw.findings(table, factors=["model", "cot"], min_abs_ld=0.05,
                         max_p_adjusted=0.05, min_n=10, measure="ld")
    expected = top_findings(table, min_abs_ld=0.05, max_p_adjusted=0.05, min_n=10)
    pd.testing.assert_frame_equal(result.table, expected)
    assert len(expected) >= 1
    first = expected.iloc[0]
    assert result.meta["described"][str(first["subgroup"])] == describe_finding(first)
    fixed = result.meta["where"][str(first["subgroup"])]
    assert set(fixed) <= {"model", "cot"} and all(len(v) == 1 for v in fixed.values())
    behind = bw.rows_behind(results, fixed=fixed, where={"cot": ["yes", "no"]}).table
    pd.testing.assert_frame_equal(behind, rows_behind(results, {"cot": ["yes", "no"]}, fixed))
    assert len(behind) == int(first["n"])  # the subgroup's n is its rows
    assert behind["deviation"].mean() == pytest.approx(float(first["deviation_rate"]))


def test_bbq_scores_equal_the_published_sample_scores(bbq):
    from analysis.bbq_scores import bias_scores

    results, _ = bbq
    assert bw.is_bbq(results) and not bw.is_bbq(results.drop(columns="context_condition"))
    result = bw.bbq_scores(results, by=["category"], where={"input_format": ["arc"]})
    expected = bias_scores(results[results["input_format"] == "arc"], by=["category"])
    pd.testing.assert_frame_equal(result.table.reset_index(drop=True),
                                  expected.reset_index(drop=True))
    assert result.settings == {"by": ["category"], "where": {"input_format": ["arc"]}}


def test_predicates_of_the_pages(bbq, ssqa):
    assert bw.has_native_score(bbq[0]) and not bw.has_native_score(ssqa[0])
    assert bw.judge_noise_modes(ssqa[0]) == []
    listing = bw.available_features()
    assert list(listing.columns) == ["feature", "available", "reason"]
    assert (listing["reason"] == "").eq(listing["available"]).all()


def test_criteria_upload_is_checked_as_the_gate_does():
    text = (SAMPLES / "bbq_unifiedqa.criteria.yaml").read_bytes()
    criteria = bw.check_criteria(text, "bbq_unifiedqa.criteria.yaml")
    assert isinstance(criteria, dict) and criteria["criteria"]
    with pytest.raises(AnalysisError, match="not UTF-8"):
        bw.check_criteria(b"\xff\xfe criteria", "bad.yaml")


def test_time_capsules_compose_the_capsule_statistics():
    from analysis import capsules as cp

    rows = []
    counts = {"1950s": {"woman": 4, "man": 30, "neither": 16},
              "1990s": {"woman": 6, "man": 18, "neither": 25},
              "2010s": {"woman": 11, "man": 21, "neither": 17}}
    for decade, c in counts.items():
        for label, k in c.items():
            rows += [{"decade": decade, "label": label, "prompt": "ceo"}] * k
    frame = pd.DataFrame(rows)
    spec = "gender=woman,man"
    result = bw.time_capsules(frame, category="label", cohort="decade", demographics=spec,
                              by=["prompt"], capsule_star="among_subcategories")
    dist = cp.capsule_distribution(frame, "label", "decade", demographics=spec, by=["prompt"])
    tests = cp.capsule_tests(dist, "label", "decade", by=["prompt"])
    pd.testing.assert_frame_equal(result.table, dist)
    pd.testing.assert_frame_equal(result.tables["tests"], tests)
    pd.testing.assert_frame_equal(result.tables["spread"],
                                  cp.capsule_spread(dist, "label", "decade", by=["prompt"]))
    pd.testing.assert_frame_equal(result.tables["table"], cp.capsule_table(
        dist, "label", "decade", by=["prompt"], tests=tests, star="among_subcategories"))
    for _, part in result.tables["tests"].groupby("test"):  # BH over the rows of one test
        assert part["p_adjusted"].to_numpy() == pytest.approx(
            multipletests(part["p_value"].to_numpy(), method="fdr_bh")[1])
    # the distribution alone, then the tests on it: the same numbers (the app's two caches)
    alone = bw.time_capsules(frame, category="label", cohort="decade", demographics=spec,
                             by=["prompt"], tests=False)
    assert alone.tables == {}
    again = bw.time_capsules(frame, category="label", cohort="decade", demographics=spec,
                             by=["prompt"], distribution=alone.table,
                             capsule_star="among_subcategories")
    pd.testing.assert_frame_equal(again.tables["tests"], tests)


def test_the_cached_pairing_gives_the_comparison_of_the_rows(bbq):
    results, design = bbq
    applied = apply_design(results, design)
    unit = bw.prompt_unit(applied, design, by="input_format", applied=True)
    assert unit.settings["unit"] == ["example_id"] and unit.settings["source"] == "id column"
    pairing = bw.compare_pairing(applied, design, by="input_format", subgroups=["category"],
                                 applied=True, inferred=unit.raw, cluster=None)
    assert pairing.settings["unit"] == ["example_id"] and pairing.settings["cluster"] is None
    direct = bw.compare(applied, design, by="input_format", subgroups=["category"],
                        applied=True, cluster=None, n_resamples=200)
    cached = bw.compare(applied, design, by="input_format", subgroups=["category"],
                        applied=True, cluster=None, n_resamples=200, pairing=pairing.raw)
    pd.testing.assert_frame_equal(direct.table, cached.table)
    pd.testing.assert_frame_equal(direct.tables["subgroups"], cached.tables["subgroups"])


def test_group_means_with_and_without_the_cluster():
    from analysis.continuous import group_means

    ref = ROOT / "tests" / "reference"
    data = pd.read_csv(ref / "clubsandwich_data.csv")
    levels = ("ref", "one", "two", "three")
    design = Design(factors=(Factor("sub", "domain", levels, levels[0]),),
                    outcome=Outcome("score", "above", threshold=0, type="continuous"))
    clustered = bw.group_means(data, design, cluster="cluster", confidence="0.9")
    pd.testing.assert_frame_equal(clustered.table, group_means(
        apply_design(data, design), design, cluster="cluster", confidence=0.9))
    assert clustered.settings["cluster"] == "cluster" and clustered.settings["adjust"] == "bh"
    expected = json.loads((ref / "clubsandwich_reference.json").read_text())
    coef = pd.DataFrame(expected["cases"]["group_means_sub"]["coefficients"]).iloc[1:]
    out = clustered.table.set_index("value")
    assert out.loc[list(levels[1:]), "difference"].to_numpy() == pytest.approx(
        coef.iloc[:, 1].to_numpy(dtype=float), rel=1e-6)
    welch = bw.group_means(data, design)
    assert welch.settings["cluster"] is None and "df" not in welch.table.columns


def test_plan_on_cached_cells_is_the_plan_of_the_rows(ssqa):
    from analysis.cells import cell_table

    results, design = ssqa
    factors = ["model", "cot", "prompt_style"]
    direct = bw.plan(results, design, factors=factors, budget=50, applied=True)
    columns = [*factors, design.cluster]
    cached = bw.plan(results, design, factors=factors, budget=50, applied=True,
                     cells=cell_table(results, columns, with_outcome=False))
    pd.testing.assert_frame_equal(direct.table, cached.table)
    pd.testing.assert_frame_equal(direct.tables["summary"], cached.tables["summary"])
    assert int(direct.table["n"].sum()) == 50


def test_findings_default_to_the_reports_thresholds():
    import inspect

    from analysis.findings import FINDING_MAX_P, FINDING_MIN_LD

    params = inspect.signature(bw.findings).parameters
    assert params["min_abs_ld"].default == FINDING_MIN_LD
    assert params["max_p_adjusted"].default == FINDING_MAX_P
