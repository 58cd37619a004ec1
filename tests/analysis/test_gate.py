"""The bias gate (``analysis/gate.py``, ``bias-workbench check``, ``docs/checks.md``)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
import yaml

from analysis import api as bw
from analysis.cli import main
from analysis.errors import CriteriaError
from analysis.gate import FAIL, PASS, UNCERTAIN, _side, load_criteria
from analysis.native_scores import native_deltas, native_scores
from analysis.testing import assert_bias_checks

SAMPLE = "sample_data/bbq_unifiedqa.csv.gz"
DESIGN = "sample_data/bbq_unifiedqa.design.yaml"


def _criteria(tmp_path: Path, items: list[dict], name: str = "c.yaml", **top) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"version": 1, "n_resamples": 200, **top,
                                    "criteria": items}, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sample():
    return pd.read_csv(SAMPLE)


@pytest.fixture(scope="module")
def nationality(sample):
    """s_AMB of Nationality in the RACE format with its 90 % interval (200 resamples)."""
    table = native_scores(sample, bw.prepare_inputs(sample, DESIGN)[1], n_resamples=200,
                          confidence=0.9).table
    row = table[(table["score"] == "s_AMB") & (table["group"] == "Nationality")
                & (table["input_format"] == "race")].iloc[0]
    return row


def test_verdict_from_the_interval_and_the_threshold():
    assert _side(0.1, 0.05, 0.15, 0.2, upper=True) == PASS
    assert _side(0.3, 0.25, 0.35, 0.2, upper=True) == FAIL
    assert _side(0.19, 0.15, 0.25, 0.2, upper=True) == UNCERTAIN
    assert _side(0.19, 0.15, 0.2, 0.2, upper=True) == PASS  # <= holds at the bound
    assert _side(0.6, 0.55, 0.7, 0.5, upper=False) == PASS
    assert _side(0.4, 0.3, 0.45, 0.5, upper=False) == FAIL
    assert _side(0.5, 0.45, 0.55, 0.5, upper=False) == UNCERTAIN


def test_exit_codes_pass_fail_uncertain_and_the_outputs(tmp_path, capsys, nationality):
    junit, md = tmp_path / "checks.xml", tmp_path / "checks.md"
    passing = _criteria(tmp_path, [{"id": "dis", "metric": "s_DIS",
                                    "scope": {"input_format": "race"}, "max": 0.05}], "p.yaml")
    assert main(["check", SAMPLE, "--design", DESIGN, "--criteria", str(passing), "--junit",
                 str(junit), "--markdown", str(md), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["verdict"] == PASS and payload["exit_code"] == 0
    one = payload["criteria"][0]
    assert one["ci_high"] <= 0.05 and one["rows"] == 5960
    assert "Bias checks: PASS (exit 0)" in md.read_text()
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "1" and suite.get("failures") == "0"

    failing = _criteria(tmp_path, [
        {"id": "dis", "metric": "s_DIS", "scope": {"input_format": "race"}, "max": 0.05},
        {"id": "amb", "metric": "s_amb", "scope": {"input_format": "race"}, "max": 0.05}],
        "f.yaml")
    assert main(["check", SAMPLE, "--design", DESIGN, "--criteria", str(failing), "--junit",
                 str(junit), "--json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert [c["verdict"] for c in payload["criteria"]] == [PASS, FAIL]
    assert payload["criteria"][1]["ci_low"] > 0.05
    cases = ET.parse(junit).getroot().findall("testcase")
    assert [c.get("name") for c in cases] == ["dis", "amb"]
    assert cases[0].find("failure") is None and cases[1].find("failure").get("type") == "fail"

    # a threshold inside the interval: too uncertain to decide (exit 3)
    threshold = round(float(nationality["estimate"]), 3)
    assert nationality["ci_low"] < threshold < nationality["ci_high"]
    unsure = _criteria(tmp_path, [
        {"id": "dis", "metric": "s_DIS", "scope": {"input_format": "race"}, "max": 0.05},
        {"id": "nat", "metric": "s_AMB", "max": threshold,
         "scope": {"category": "Nationality", "input_format": "race"}}], "u.yaml")
    assert main(["check", SAMPLE, "--design", DESIGN, "--criteria", str(unsure), "--json"]) == 3
    payload = json.loads(capsys.readouterr().out)
    nat = payload["criteria"][1]
    assert nat["verdict"] == UNCERTAIN
    # the criterion's numbers are the native score's (one-sided 95 % = two-sided 90 %)
    assert nat["estimate"] == pytest.approx(nationality["estimate"])
    assert nat["ci_low"] == pytest.approx(nationality["ci_low"])
    assert nat["ci_high"] == pytest.approx(nationality["ci_high"])


def test_not_evaluated_fails_unless_optional(tmp_path, capsys):
    items = [{"id": "dis", "metric": "s_DIS", "scope": {"input_format": "race"}, "max": 0.05},
             {"id": "crows", "metric": "pct_stereotype", "max": 0.6}]
    assert main(["check", SAMPLE, "--design", DESIGN, "--criteria",
                 str(_criteria(tmp_path, items)), "--json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["criteria"][1]["verdict"] == "not evaluated"
    assert "no pct_stereotype score" in payload["criteria"][1]["reason"]
    items[1]["optional"] = True
    junit = tmp_path / "j.xml"
    assert main(["check", SAMPLE, "--design", DESIGN, "--criteria",
                 str(_criteria(tmp_path, items)), "--junit", str(junit)]) == 0
    assert ET.parse(junit).getroot().findall("testcase")[1].find("skipped") is not None
    assert "NOT EVALUATED (optional)" in capsys.readouterr().out  # the Markdown, printed
    # a paired criterion without a baseline run: not evaluated, with the reason
    paired = [{"id": "p", "metric": "s_AMB", "compare": "baseline", "max_increase": 0.02}]
    assert main(["check", SAMPLE, "--design", DESIGN, "--criteria",
                 str(_criteria(tmp_path, paired)), "--json"]) == 1
    assert "no baseline run" in json.loads(capsys.readouterr().out)["criteria"][0]["reason"]


def test_baseline_run_equals_the_within_run_paired_delta(tmp_path, capsys, sample):
    cand, base = tmp_path / "cand.csv", tmp_path / "base.csv"
    sample[sample["input_format"] == "arc"].to_csv(cand, index=False)
    sample[sample["input_format"] == "race"].to_csv(base, index=False)
    crit = _criteria(tmp_path, [{"id": "amb", "metric": "s_AMB", "compare": "baseline",
                                 "max_increase": 0.02, "scope": {"category": "Age"}}])
    assert main(["check", str(cand), "--design", DESIGN, "--criteria", str(crit),
                 "--baseline", str(base), "--json"]) == 1
    got = json.loads(capsys.readouterr().out)["criteria"][0]
    design = bw.prepare_inputs(sample, DESIGN)[1]
    within = native_deltas(sample, design, by="input_format", reference="race",
                           n_resamples=200, confidence=0.9).table
    row = within[(within["model_b"] == "arc") & (within["score"] == "s_AMB")
                 & (within["group"] == "Age")].iloc[0]
    assert got["estimate"] == pytest.approx(row["delta"])
    assert got["ci_low"] == pytest.approx(row["ci_low"])
    assert got["ci_high"] == pytest.approx(row["ci_high"])
    assert got["verdict"] == FAIL and got["ci_low"] > 0.02
    # a baseline sharing no item with the candidate is bad input: exit 2, nothing written
    other = sample[sample["input_format"] == "race"].assign(
        example_id=lambda f: "x" + f["example_id"].astype(str))
    other.to_csv(base, index=False)
    md = tmp_path / "never.md"
    assert main(["check", str(cand), "--design", DESIGN, "--criteria", str(crit),
                 "--baseline", str(base), "--markdown", str(md)]) == 2
    assert "share no" in capsys.readouterr().err and not md.exists()


def test_bad_criteria_write_nothing_and_name_the_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ncriteria:\n  - metric: s_AMB\n    scope: {category: Agee}\n"
                   "    max: 0.05\n", encoding="utf-8")
    junit, md = tmp_path / "j.xml", tmp_path / "m.md"
    assert main(["check", SAMPLE, "--design", DESIGN, "--criteria", str(bad), "--junit",
                 str(junit), "--markdown", str(md)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml, line 4" in err and "no value 'Agee'; did you mean 'Age'?" in err
    assert not junit.exists() and not md.exists()
    with pytest.raises(CriteriaError, match="exactly one of max_increase or max_decrease"):
        load_criteria([{"metric": "s_AMB", "compare": "baseline", "max": 0.1}])
    with pytest.raises(CriteriaError, match="used twice"):
        load_criteria([{"id": "a", "metric": "coverage", "min": 0.1},
                       {"id": "a", "metric": "coverage", "min": 0.2}])
    with pytest.raises(CriteriaError, match="unknown key 'cnadidate' in compare; did you mean "
                                            "'candidate'"):
        load_criteria([{"metric": "s_AMB", "compare": {"by": "input_format",
                                                       "cnadidate": "arc"},
                        "max_increase": 0.1}])


def test_api_and_pytest_helper(tmp_path):
    ok = _criteria(tmp_path, [{"id": "dis", "metric": "s_DIS",
                               "scope": {"input_format": "race"}, "max": 0.05},
                              {"id": "cov", "metric": "coverage", "min": 0.5,
                               "factors": ["category", "context_condition"]}])
    result = bw.check(SAMPLE, DESIGN, criteria=ok)
    assert list(result.table["verdict"]) == [PASS, PASS]
    assert result.table.loc[1, "estimate"] == 1.0  # every category x condition observed
    assert result.raw.exit_code == 0
    report = assert_bias_checks(SAMPLE, DESIGN, ok)
    assert report.verdict == PASS
    bad = _criteria(tmp_path, [{"id": "amb", "metric": "s_AMB",
                                "scope": {"input_format": "race"}, "max": 0.05}], "b.yaml")
    with pytest.raises(AssertionError, match=r"bias checks: fail[\s\S]*\| amb \|"):
        assert_bias_checks(SAMPLE, DESIGN, bad)


def test_log_disparity_criterion_is_the_subgroups_table(tmp_path):
    crit = [{"id": "ld", "metric": "log_disparity", "factors": ["category",
             "context_condition"], "max_abs": 0.5, "alpha": 0.05}]
    result = bw.check(SAMPLE, DESIGN, criteria=crit).raw.results[0]
    table = bw.subgroups(SAMPLE, DESIGN, factors=["category", "context_condition"]).table
    table = table[table["log_disparity"].notna()]
    hits = table[(table["log_disparity"].abs() > 0.5) & (table["p_adjusted"] < 0.05)]
    assert result.verdict == FAIL and len(result.details) >= len(hits) > 0
    worst = hits.loc[hits["log_disparity"].abs().idxmax()]
    assert result.estimate == pytest.approx(worst["log_disparity"])
    assert result.rows == int(worst["n"])


def test_an_uploaded_criteria_file_keeps_its_lines_and_is_bounded():
    from analysis.gate import MAX_CRITERIA_BYTES, criteria_from_upload

    text = b"version: 1\ncriteria:\n  - metric: s_AMB\n    max: 0.05\n"
    content = criteria_from_upload(text, "c.yaml")
    assert content == {"version": 1, "criteria": [{"metric": "s_AMB", "max": 0.05}]}
    result = bw.check(SAMPLE, DESIGN, criteria=content)  # what the Checks section runs
    assert result.table["verdict"].tolist() == [FAIL]
    with pytest.raises(CriteriaError, match=r"c.yaml, line 4: unknown key 'mx'"):
        criteria_from_upload(text.replace(b"max", b"mx"), "c.yaml")
    with pytest.raises(CriteriaError, match="at most"):
        criteria_from_upload(b"#" * (MAX_CRITERIA_BYTES + 1), "big.yaml")
    with pytest.raises(CriteriaError, match="not UTF-8"):
        criteria_from_upload(b"\xff\xfe\x00", "bin.yaml")
    with pytest.raises(CriteriaError, match="nested too deeply|not valid YAML"):
        criteria_from_upload(b"[" * 20000, "deep.yaml")


def test_a_scope_column_the_family_does_not_break_down_by_becomes_the_breakdown():
    crit = [{"id": "neg", "metric": "s_AMB", "max": 0.3,
             "scope": {"question_polarity": "neg", "input_format": "race"}}]
    got = bw.check(SAMPLE, DESIGN, criteria={"n_resamples": 50, "criteria": crit}).raw.results[0]
    frame = pd.read_csv(SAMPLE)
    from analysis.bbq_scores import bias_scores

    rows = frame[(frame["question_polarity"] == "neg") & (frame["input_format"] == "race")]
    assert got.estimate == pytest.approx(bias_scores(rows)["s_AMB"].iloc[0])
