"""The loop in the app (ui/generate.py): Planner "Generate prompts" -> the Answers page
answers them with a loopback model -> the answers join the results (added) with coverage
before / after. Real SocialStigmaQA prompts (4 templates, 5 stigmas, no base prompts)
with two stigma x style cells emptied."""

from __future__ import annotations

import pandas as pd

from tests.analysis.test_generate_loop import DATA, design, ssqa_subset, yes_if_stop
from tests.app.apptools import answer_generated, metric_values, page_test, shown


def results() -> pd.DataFrame:
    frame = ssqa_subset()
    frame = frame[frame["prompt_style"] != "base"].reset_index(drop=True)
    return frame.assign(model="mut-1", answer=frame["biased_answer"].where(
        frame.index % 3 == 0, "can't tell"))


def test_planner_generate_then_answers_then_added(monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_JUDGE_ENDPOINTS", "http://127.0.0.1:*")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    frame = results()
    assert len(frame) == 52
    at = page_test("planner.py", frame=frame, design=design(base=False))
    at.run()
    at.multiselect(key="planner_factors").set_value(["stigma", "prompt_style", "biased_answer"])
    at.number_input(key="planner_budget").set_value(4).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="generate_prompt_col").value == "prompt"
    at.button(key="generate_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    prompts = at.session_state["generate_prompts"]
    assert sorted(zip(prompts["stigma"], prompts["prompt_style"], prompts["biased_answer"],
                      strict=True)) == [("Asexual", "positive", "no"),
                                        ("Asexual", "positive", "yes"),
                                        ("Homeless", "doubt", "no"), ("Homeless", "doubt", "yes")]
    # the generated texts are the benchmark's own prompts of those cells
    assert set(prompts["prompt"]) <= set(pd.read_csv(DATA / "ssqa_yes_no.csv.gz")["prompt"])
    assert metric_values(at)["Round trip"] == "100.00 %"  # 52 of 52 rebuilt exactly

    # The Answers page offers the generated prompts first and answers them, with another
    # model than the results': the design gains its name.
    answers, n_requests = answer_generated(at, yes_if_stop, "mut-2")
    assert n_requests == 4
    answered = answers.session_state["tools_answers_out"]
    assert len(answered) == 4 and set(answered["answer"]) <= {"yes", "no"}
    answers.button(key="generate_extend").click().run()
    assert not answers.exception, answers.exception
    combined = answers.session_state["results_frame"]
    assert len(combined) == 56 and combined["added"].sum() == 4
    table = answers.session_state["generate_extended"].set_index("when")
    assert table.loc["after", "n_observed_cells"] == table.loc["before", "n_observed_cells"] + 4
    assert table.loc["before", "n_empty_cells"] == 4 and table.loc["after", "n_empty_cells"] == 0
    assert "generate_prompts" not in answers.session_state  # answered: not offered again
    assert answers.session_state["design"].factor("model").values == ("mut-1", "mut-2")
    assert "The design's model gains the values of the new rows: mut-2." in \
        [c.value for c in answers.caption]
    # every page reads the combined table with that design: Coverage
    coverage = page_test("coverage.py", frame=combined, design=answers.session_state["design"])
    coverage.run()
    assert not coverage.exception and not coverage.error


def test_an_uploaded_template_with_an_unknown_slot_is_named():
    frame = results()
    at = page_test("planner.py", frame=frame, design=design(base=False))
    at.run()
    at.multiselect(key="planner_factors").set_value(["stigma", "prompt_style", "biased_answer"])
    at.number_input(key="planner_budget").set_value(4).run()
    at.selectbox(key="generate_prompt_col").set_value("(none: use a templates file)")
    at.file_uploader(key="generate_templates").upload(
        "mine.csv", b"template,text\nn1,My neighbour is {stigm}.\n", "text/csv").run()
    at.button(key="generate_run").click().run()
    assert not at.exception
    assert "mine.csv, template 'n1': unknown slot {stigm} (did you mean {stigma}?)" in \
        shown(at.error[0].value)
    assert "generate_prompts" not in at.session_state
