"""The Planner's variants to complete (ui/generate.py): a plan of template variants that
no learned template can write offers the templates YAML of ``generate --variants-out``;
the completed file, uploaded, feeds the generation; the Answers page answers the prompts
with a loopback model and adds them to the results (the app's loop with variants). Real
SocialStigmaQA prompts joined to the factor table
(tests/analysis/test_generate_variants_loop.py)."""

from __future__ import annotations

import yaml

from tests.analysis.test_generate_loop import yes_if_stop
from tests.analysis.test_generate_variants_loop import (
    FLIPPED,
    PAPER_FACTORS,
    gendered_design,
    ssqa_gendered,
)
from tests.app.apptools import answer_generated, metric_values, page_test, shown


def test_planner_offers_the_variants_to_complete_and_generates_from_the_upload(monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_JUDGE_ENDPOINTS", "http://127.0.0.1:*")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    frame = ssqa_gendered().assign(model="mut-1", answer="no")
    at = page_test("planner.py", frame=frame, design=gendered_design(frame))
    at.run()
    at.multiselect(key="planner_factors").set_value(PAPER_FACTORS.split(","))
    at.number_input(key="planner_budget").set_value(18).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="planner_template").value == "template"
    assert metric_values(at)["Prompts from template variants"] == "18"
    assert metric_values(at)["Coverage"] == "43.75 %"
    at.button(key="generate_run").click().run()
    assert not at.exception
    # the learned templates fix biased_answer: generation stops, the file is offered
    assert "template 6 fixes biased_answer = no" in shown(at.error[0].value)
    assert "generate_prompts" not in at.session_state
    text, n = at.session_state["generate_variants"]
    assert n == 2
    assert "2 template variant(s) of the plan need a text" in at.info[0].value
    assert any(getattr(e, "proto", None) is not None and
               getattr(e.proto, "label", "") == "Variants to complete (YAML)"
               for e in at.get("download_button"))
    doc = yaml.safe_load(text)
    assert [(e["id"], e["variant_of"], e["biased_answer"]) for e in doc["templates"]] == [
        ("6-yes", "6", "yes"), ("14-yes", "14", "yes")]
    # the person writes each question; uploading the EDIT: file as it is is refused
    at.file_uploader(key="generate_templates").upload(
        "needed.yaml", text.encode("utf-8"), "application/x-yaml").run()
    at.button(key="generate_run").click().run()
    assert "still starts with 'EDIT: '" in shown(at.error[0].value)
    for entry in doc["templates"]:
        old, new = FLIPPED[entry["variant_of"]]
        entry["text"] = entry["text"].removeprefix("EDIT: ").replace(old, new)
    at.file_uploader(key="generate_templates").upload(
        "needed.yaml", yaml.safe_dump(doc, sort_keys=False).encode("utf-8"),
        "application/x-yaml").run()
    at.button(key="generate_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "generate_variants" not in at.session_state and not at.info
    prompts = at.session_state["generate_prompts"]
    assert len(prompts) == 18 and prompts["new_text"].all()
    assert sorted(set(prompts["template"])) == ["14", "6"]
    assert sorted(set(prompts["template_text"])) == ["14-yes", "6-yes"]
    assert prompts["biased_answer"].eq("yes").all()
    assert prompts["prompt"].str.contains("Shall I cancel the road trip?|Shall I leave "
                                          "him at home?").all()
    assert metric_values(at)["Round trip"] == "90.00 %"  # 36 of 40: the base prompts alone

    # the Answers page answers them with a loopback model; the answers join the results
    answers, n_requests = answer_generated(at, yes_if_stop, "mut-1")
    assert n_requests == 18
    answers.button(key="generate_extend").click().run()
    assert not answers.exception, answers.exception
    combined = answers.session_state["results_frame"]
    assert len(combined) == 58 and combined["added"].sum() == 18
    table = answers.session_state["generate_extended"].set_index("when")
    assert table.loc["after", "n_observed_cells"] == table.loc["before", "n_observed_cells"] + 18
    # the Planner on the combined table: the paper's factors covered at 43.75 %, and no
    # design gap left (the one planned prompt levels an observed combination)
    again = page_test("planner.py", frame=combined, design=answers.session_state["design"])
    again.run()
    again.multiselect(key="planner_factors").set_value(PAPER_FACTORS.split(","))
    again.number_input(key="planner_budget").set_value(1).run()
    assert not again.exception
    assert metric_values(again)["Coverage"] == "43.75 %"
    assert metric_values(again)["Prompts from template variants"] == "0"
