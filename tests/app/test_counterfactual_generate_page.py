"""The Counterfactual page's "Generate the missing swaps" (ui/counterfactual.py ->
ui/generate.py): the page's missing swaps are generated from the templates learned from
the table, and offered on the Answers page like a Planner plan."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.analysis.test_counterfactual_generate import GENDER, GONE, STIGMA, TEXTS, table
from tests.app.apptools import metric_values, page_test
from tests.judges.helpers import ROOT


def test_the_missing_swaps_are_generated_on_the_page():
    frame, design = table()
    at = page_test("counterfactual.py", frame=frame, design=design)
    at.session_state["counterfactual_swap"] = "gender"
    at.run()
    assert not at.exception and not at.error
    assert "Generate the missing swaps" in [h.value for h in at.subheader]
    assert at.selectbox(key="generate_prompt_col").value == "prompt"
    at.button(key="generate_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    prompts = at.session_state["generate_prompts"]
    got = {(r.template, r.stigma, r.gender): r.prompt for r in prompts.itertuples()}
    assert got == {(t, s, g): TEXTS[t].format(g=GENDER[g], s=STIGMA[s]) for t, s, g in GONE}
    assert set(prompts["kind"]) == {"swap"}
    assert metric_values(at)["Round trip"] == "100.00 %"
    # the Answers page offers them as its questions (the loop of the Planner)
    answers = AppTest.from_file(str(ROOT / "pages" / "judges_tools.py"), default_timeout=60)
    for key in ("generate_prompts", "generate_design", "results_frame", "results_name",
                "results_token", "design"):
        answers.session_state[key] = at.session_state[key]
    answers.run()
    assert not answers.exception
    assert answers.radio(key="tools_answers_source").value == "Generated prompts (Planner)"


def test_compare_points_to_the_counterfactual_pairs():
    frame, design = table()
    at = page_test("compare.py", frame=frame, design=design).run()
    assert not at.exception
    assert "Swap one factor within its template instead (Counterfactual pairs) (see the " \
           "sidebar)" in [c.value for c in at.caption]
