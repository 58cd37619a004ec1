"""Judge noise travels from the Subgroups / Importance pages into the report and into
their Copy-as-CLI text (docs/report.md, docs/judge_noise.md)."""

from __future__ import annotations

import copy
import json
import shlex

import numpy as np
import pytest

from analysis.design import apply_design
from analysis.judge_noise import (
    NOISE_COLUMNS,
    SAME_SIGN,
    SIGNIFICANT,
    SURVIVES,
    subgroup_noise,
)
from tests.app.apptools import page_test
from tests.app.test_judge_noise_page import judged_results


def test_subgroups_with_noise_added_edited_and_built():
    results, design = judged_results()
    at = page_test("subgroups.py", frame=results, design=design).run()
    at.multiselect(key="subgroups_factors").set_value(["model", "stage"]).run()
    at.radio(key="subgroups_level").set_value(1).run()
    at.checkbox(key="subgroups_noise").check()
    at.radio(key="subgroups_noise_mode").set_value("single")
    at.select_slider(key="subgroups_noise_r").set_value(50).run()
    assert not at.exception and not at.error
    at.button(key="report_add_subgroups").click().run()
    (item,) = at.session_state["report_sections"]
    assert item["settings"]["judge_noise"] == {"replicates": 50, "mode": "single", "seed": 0,
                                               "alpha": 0.05}

    rep = page_test("report.py", frame=results, design=design)
    rep.session_state["report_sections"] = [copy.deepcopy(item)]
    rep.run()
    assert not rep.exception
    sid = item["id"]
    assert rep.number_input(key=f"report_noise_replicates_{sid}").value == 50
    assert rep.selectbox(key=f"report_noise_mode_{sid}").value == "single"
    assert "judge noise (50 replicates, single)" in rep.expander[0].label
    rep.number_input(key=f"report_noise_seed_{sid}").set_value(3).run()  # edited here
    assert rep.session_state["report_sections"][0]["settings"]["judge_noise"]["seed"] == 3
    rep.button(key="report_build").click().run()
    assert not rep.exception and not rep.error
    report, html_text = rep.session_state["report_built"]
    got = dict(report.sections[0].tables)["subgroups"].set_index("subgroup")
    want = subgroup_noise(apply_design(results, design), ["model", "stage"], max_level=1,
                          test=item["settings"]["test"], min_n=item["settings"]["min_n"],
                          n_resamples=50, mode="single", seed=3)
    assert set(NOISE_COLUMNS) <= set(got.columns)
    np.testing.assert_array_equal(got.loc[want["subgroup"], SURVIVES], want[SURVIVES])
    assert "Judge noise: 50 replicates" in html_text and "seed 3" in html_text


def test_noise_off_adds_replicates_zero_and_no_editor_without_samples():
    results, design = judged_results()
    at = page_test("importance.py", frame=results, design=design).run()
    at.multiselect(key="importance_factors").set_value(["model"]).run()
    at.button(key="report_add_importance").click().run()
    assert not at.exception
    item = at.session_state["report_sections"][0]
    assert item["settings"]["judge_noise"] == {"replicates": 0}
    rep = page_test("report.py", frame=results.drop(columns="score_samples"), design=design)
    rep.session_state["report_sections"] = [copy.deepcopy(item)]
    rep.run()
    assert not rep.exception
    assert not [n for n in rep.number_input if n.key.startswith("report_noise_")]


def _copy_text(at) -> tuple[str, str]:
    (cli,) = [c.value for c in at.code if c.language == "bash"]
    (code,) = [c.value for c in at.code if c.language == "python"]
    return cli, code


def _run_copied(cli: str, code: str, results, design, tmp_path, monkeypatch, capsys):
    """The copied command run in-process from a folder holding results.csv and
    design.yaml (what the page names them); returns its JSON and the script's namespace."""
    from analysis.cli import main

    results.to_csv(tmp_path / "results.csv", index=False)
    design.save(tmp_path / "design.yaml")
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(cli)
    assert argv[:3] == ["python", "-m", "analysis"]
    capsys.readouterr()
    assert main(argv[3:]) == 0
    out = json.loads(capsys.readouterr().out)
    namespace: dict = {}
    exec(compile(code, "copied.py", "exec"), namespace)  # noqa: S102 - the page's own text
    capsys.readouterr()
    return out, namespace


def _same_shares(rows: list[dict], script, page, label: str) -> None:
    """The CLI's JSON rows and the script's table hold the page's survival columns."""
    page = page.set_index(label)
    assert sorted(r[label] for r in rows) == sorted(page.index)
    for r in rows:
        shown = page.loc[r[label]]
        assert (r["same_sign"], r["significant"], r["survives"]) == pytest.approx(
            (shown[SAME_SIGN], shown[SIGNIFICANT], shown[SURVIVES]), abs=1e-12)
    script = script.set_index(label).loc[page.index]
    np.testing.assert_allclose(script[list(NOISE_COLUMNS)], page[list(NOISE_COLUMNS)],
                               atol=1e-12)
    assert page[SURVIVES].notna().any()


def test_subgroups_copy_text_has_the_noise_options(tmp_path, monkeypatch, capsys):
    results, design = judged_results()
    at = page_test("subgroups.py", frame=results, design=design).run()
    at.multiselect(key="subgroups_factors").set_value(["model", "stage"]).run()
    at.radio(key="subgroups_level").set_value(1).run()
    cli, _ = _copy_text(at)
    assert "--judge-noise" not in cli  # off: unchanged
    at.checkbox(key="subgroups_noise").check()
    at.radio(key="subgroups_noise_mode").set_value("single")
    at.select_slider(key="subgroups_noise_alpha").set_value(0.1)
    at.select_slider(key="subgroups_noise_r").set_value(50).run()
    assert not at.exception and not at.error
    cli, code = _copy_text(at)
    assert {"--judge-noise 50", "--noise-mode single", "--noise-alpha 0.1"} <= {
        " ".join(p) for p in zip(cli.split()[:-1], cli.split()[1:], strict=True)}
    out, ns = _run_copied(cli, code, results, design, tmp_path, monkeypatch, capsys)
    assert out["judge_noise"]["settings"]["mode"] == "single"
    assert out["judge_noise"]["settings"]["alpha"] == 0.1
    _same_shares(out["judge_noise"]["rows"], ns["table"], at.dataframe[0].value, "subgroup")


def test_importance_copy_text_has_the_noise_options(tmp_path, monkeypatch, capsys):
    results, design = judged_results()
    at = page_test("importance.py", frame=results, design=design).run()
    at.multiselect(key="importance_factors").set_value(["model"]).run()
    at.checkbox(key="importance_noise").check()
    at.select_slider(key="importance_noise_r").set_value(50).run()
    assert not at.exception and not at.error
    cli, code = _copy_text(at)
    assert "--judge-noise 50 --json" in cli  # mean: the command's default noise mode
    out, ns = _run_copied(cli, code, results, design, tmp_path, monkeypatch, capsys)
    _same_shares(out["judge_noise"]["rows"], ns["table"], at.dataframe[0].value, "term")
