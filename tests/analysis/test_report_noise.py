"""Judge noise in the report (issue 14 item 5, docs/report.md): the subgroups and
importance sections' survival shares are analysis.judge_noise's with the same seed, the
CLI's --judge-noise sets them (a section's own settings win), bad values exit 2."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from analysis import api as bw
from analysis import report as R
from analysis.cli import main
from analysis.columns import DUPLICATE_OF, SUBGROUP, TERM
from analysis.errors import AnalysisError
from analysis.judge_noise import NOISE_COLUMNS, SURVIVES, importance_noise, subgroup_noise
from tests.analysis.test_judge_noise import _cli_table, design_of, simulated


@pytest.fixture(scope="module")
def judged():
    res = simulated(np.random.default_rng(5), 400)
    return res, design_of(res, ["arm", "null"])


def _table(sec, name) -> pd.DataFrame:
    return dict(sec.tables)[name]


def test_subgroups_section_equals_subgroup_noise(judged):
    results, design = judged
    noise = {"replicates": 40, "mode": "single", "seed": 9, "alpha": 0.1}
    sec = R.build_section("subgroups", results, design,
                          {"factors": ["arm", "null"], "level": 2, "judge_noise": noise,
                           "where": {"null": ["x", "y"]}})
    got = _table(sec, "subgroups")
    want, info = subgroup_noise(results, ["arm", "null"], max_level=2, test="auto", min_n=30,
                                return_info=True,
                                **{"n_resamples" if k == "replicates" else k: v
                                   for k, v in noise.items()})
    assert set(NOISE_COLUMNS) <= set(got.columns)
    distinct = got[got[DUPLICATE_OF].isna()].set_index(SUBGROUP)
    for col in NOISE_COLUMNS:
        np.testing.assert_array_equal(distinct.loc[want[SUBGROUP], col], want[col])
    assert sec.settings["judge_noise"] == noise
    assert any(n.startswith("Judge noise: 40 replicates of the judge's scores (one sample")
               and f"{info['n_robust']} of {info['n_significant']} significant subgroups"
               in n and "seed 9" in n and "p < 0.1." in n for n in sec.notes)
    # another seed gives other shares; the same seed the same
    again = R.build_section("subgroups", results, design,
                            {"factors": ["arm", "null"], "judge_noise": noise})
    pd.testing.assert_frame_equal(_table(again, "subgroups"), got)
    other = R.build_section("subgroups", results, design,
                            {"factors": ["arm", "null"], "judge_noise": {**noise, "seed": 10}})
    assert not np.array_equal(_table(other, "subgroups")[SURVIVES].fillna(-1),
                              got[SURVIVES].fillna(-1))


def test_importance_section_equals_importance_noise(judged):
    results, design = judged
    sec = R.build_section("importance", results, design,
                          {"factors": ["arm", "null"], "judge_noise": {"replicates": 30}})
    got = _table(sec, "factor_importance")
    fit_options = {"factors": ["arm", "null"], "on_separation": "refuse", "alpha": 0.05,
                   "adjust": "none", "cluster": None, "gee": False}
    want = importance_noise(results, design, n_resamples=30, mode="mean", seed=0,
                            **fit_options)
    pd.testing.assert_frame_equal(got[[TERM, *NOISE_COLUMNS]], want[[TERM, *NOISE_COLUMNS]])
    arm = got[got[TERM].str.startswith("arm[")].iloc[0]
    assert arm[SURVIVES] > 0.9  # 75 % against 25 % deviating on 400 rows
    assert sec.settings["judge_noise"] == {"replicates": 30, "mode": "mean", "seed": 0}
    assert any("30 refits on redrawn judge scores" in n for n in sec.notes)


def test_noise_off_by_default_and_bad_values(judged):
    results, design = judged
    sec = R.build_section("subgroups", results, design, {"factors": ["arm"], "level": 1})
    assert not set(NOISE_COLUMNS) & set(_table(sec, "subgroups").columns)
    assert sec.settings["judge_noise"] == {"replicates": 0, "mode": "mean", "seed": 0,
                                           "alpha": 0.05}
    # a bad value: the options' message (Options.coerce), the API's for the same value
    for bad, api, word in [
            ({"replicates": -1}, {"judge_noise": -1}, "judge_noise: must be at least 1, not -1"),
            ({"replicates": 2.5}, {"judge_noise": 2.5},
             "judge_noise: expected a whole number, not 2.5"),
            ({"mode": "median"}, {"noise_mode": "median"},
             "noise_mode must be one of 'mean', 'single', 'confusion', not 'median'."),
            ({"seed": -3}, {"seed": -3}, "seed: must be at least 0, not -3"),
            ({"alpha": 1.5}, {"noise_alpha": 1.5}, "noise_alpha: must be less than 1, not 1.5")]:
        with pytest.raises(AnalysisError) as report:
            R.build_section("subgroups", results, design, {"judge_noise": bad})
        assert str(report.value) == f"Report section 'subgroups': bad settings ({word})"
        with pytest.raises(AnalysisError) as of_api:
            bw.subgroups(results, design, factors=["arm"], **api)
        assert str(of_api.value) == word
    for bad, word in [({"spread": 1}, "unknown key"), (7, "must map")]:  # the setting's shape
        with pytest.raises(AnalysisError, match=word):
            R.build_section("subgroups", results, design, {"judge_noise": bad})
    with pytest.raises(AnalysisError, match="unknown key.*alpha"):  # importance: its alpha
        R.build_section("importance", results, design, {"judge_noise": {"alpha": 0.1}})
    with pytest.raises(AnalysisError, match="score_samples"):
        R.build_section("subgroups", results.drop(columns="score_samples"), design,
                        {"judge_noise": {"replicates": 10}})


def test_cli_judge_noise_flag_and_precedence(tmp_path, monkeypatch):
    path, design_path = _cli_table(tmp_path)
    seen = {}
    real = R.build_report

    def spy(results, design, sections, **kw):
        seen["sections"] = dict(sections)
        seen["report"] = real(results, design, sections, **kw)
        return seen["report"]

    monkeypatch.setattr(R, "build_report", spy)
    settings = tmp_path / "s.yaml"
    settings.write_text(yaml.safe_dump({"importance": {"judge_noise": {"mode": "mean"}}}))
    out = tmp_path / "r.html"
    assert main(["report", str(path), "--design", str(design_path), "--out", str(out),
                 "--sections", "subgroups,importance,coverage", "--settings", str(settings),
                 "--judge-noise", "25", "--noise-mode", "single", "--seed", "4",
                 "--noise-alpha", "0.1"]) == 0
    assert seen["sections"]["subgroups"]["judge_noise"] == {
        "replicates": 25, "mode": "single", "seed": 4, "alpha": 0.1}
    assert seen["sections"]["importance"]["judge_noise"] == {  # its own mode wins
        "replicates": 25, "mode": "mean", "seed": 4}
    assert "judge_noise" not in seen["sections"]["coverage"]
    sub = seen["report"].sections[0]
    design = design_of(pd.read_csv(path), ["arm", "null"])
    want = subgroup_noise(pd.read_csv(path), ["arm", "null"], max_level=2, test="auto",
                          n_resamples=25, mode="single", seed=4, alpha=0.1)
    got = _table(sub, "subgroups")
    got = got[got[DUPLICATE_OF].isna()].set_index(SUBGROUP)
    np.testing.assert_array_equal(got.loc[want[SUBGROUP], SURVIVES], want[SURVIVES])
    assert design.names == ["arm", "null"]
    html = out.read_text()
    assert "<th>noise survives</th>" in html and "Judge noise: 25 replicates" in html


def test_cli_bad_noise_values_exit_2(tmp_path, capsys):
    path, design_path = _cli_table(tmp_path)
    base = ["report", str(path), "--design", str(design_path), "--sections", "subgroups",
            "--out", str(tmp_path / "r.html")]
    for extra in (["--judge-noise", "-5"], ["--judge-noise", "x"],
                  ["--judge-noise", "5", "--noise-mode", "median"],
                  ["--judge-noise", "5", "--noise-alpha", "1"]):
        assert main(base + extra) == 2
    assert "--judge-noise: must be at least 0" in capsys.readouterr().err
    pd.read_csv(path).drop(columns="score_samples").to_csv(path, index=False)
    assert main(base + ["--judge-noise", "10"]) == 2
    err = capsys.readouterr().err
    assert "Report section 'subgroups'" in err and "score_samples" in err
    assert not (tmp_path / "r.html").exists()
    assert main(base + ["--judge-noise", "0"]) == 0  # off: no samples needed
