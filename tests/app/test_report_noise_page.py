"""Judge noise travels from the Subgroups / Importance pages into the report and into
their Copy-as-CLI text (docs/report.md, docs/judge_noise.md)."""

from __future__ import annotations

import copy

import numpy as np

from analysis.design import apply_design
from analysis.judge_noise import NOISE_COLUMNS, SURVIVES, subgroup_noise
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
                          replicates=50, mode="single", seed=3)
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
