"""Planner and Design pages (issue 41 items 1-2): the kinds of prompts, the ranked
template variants equal the API's; proposed constraints accepted into the design."""

from __future__ import annotations

import pytest

import analysis.api as bw
from tests.app.apptools import metric_values, page_test, sample_with_design

FACTORS = ["stigma", "gender", "prompt_style", "biased_answer", "cot"]


@pytest.fixture(scope="module")
def ssqa():
    return sample_with_design("ssqa_simulated.csv.gz")


def test_planner_shows_the_variants_of_the_api(ssqa):
    frame, design = ssqa
    at = page_test("planner.py", frame=frame, design=design)
    at.run()
    at.multiselect(key="planner_factors").set_value(FACTORS)
    at.number_input(key="planner_budget").set_value(500).run()
    assert not at.exception and not at.error
    api = bw.plan(frame, design, factors=FACTORS, budget=500)
    metrics = metric_values(at)
    assert metrics["Prompts from template variants"] == "500"
    assert metrics["Observed combinations levelled up"] == "0"
    assert metrics["Coverage"] == f"{100 * api.raw.after['coverage_percentage']:.2f} %"
    tables = {tuple(d.value.columns): d.value for d in at.dataframe}
    variants = next(t for c, t in tables.items() if "from_value" in c)
    assert variants.head(2)[["template", "factor", "value", "n_planned"]].values.tolist() \
        == [["6", "biased_answer", "yes", 252], ["14", "biased_answer", "yes", 248]]
    add = next(t for c, t in tables.items() if "kind" in c)
    assert add["n"].sum() == 500 and set(add["kind"]) == {"variant"}
    # without a template column: inside the observed structure, as before issue 41
    at.selectbox(key="planner_template").set_value("(none: no template variants)").run()
    assert metric_values(at)["Prompts from template variants"] == "0"
    assert metric_values(at)["Coverage"] == "37.17 %"


def test_design_page_proposes_constraints_for_confirmation(ssqa):
    frame, design = ssqa
    at = page_test("design.py", frame=frame, design=design).run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert ("prompt_style = base implies pachankis_cluster = no stigma and gender = no gender "
            "and stigma = no stigma") in text
    assert at.session_state["design"].constraints is None
    at.checkbox(key="design_constraints_0_accept").check().run()
    accepted = at.session_state["design"].constraints
    assert accepted and "prompt_style = base implies" in " ".join(
        c.describe() for c in accepted)
    assert "constraints:" in at.session_state["design"].to_yaml()


def test_planner_says_when_the_budget_is_below_one_whole_variant(ssqa):
    frame, design = ssqa
    at = page_test("planner.py", frame=frame, design=design)
    at.run()
    at.multiselect(key="planner_factors").set_value(FACTORS)
    at.number_input(key="planner_budget").set_value(500)
    at.checkbox(key="planner_option_whole_variants").check().run()
    assert not at.exception
    assert "smaller than one template variant" in at.error[0].value
    at.number_input(key="planner_budget").set_value(1200).run()
    assert not at.error
    assert metric_values(at)["Prompts from template variants"] == "1,120"
    assert metric_values(at)["Coverage"] == "55.72 %"
