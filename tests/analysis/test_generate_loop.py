"""The whole loop on the command line against a loopback model server (issue 41 item 5):
``plan --out add.csv`` -> ``generate --plan add.csv --out prompts.csv`` ->
``python -m judges answer prompts.csv`` -> ``extend`` (coverage before / after) -> an
analysis of the combined table. The results are real SocialStigmaQA prompts (4
templates, 5 stigmas) answered by the fake model; two stigma x style cells are emptied."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from analysis.cli import main as analysis_main
from analysis.design import Design
from judges.cli import main as judges_main
from tests.judges.judge_server import Call, FakeLLMServer, FakeReply

DATA = Path(__file__).resolve().parents[1] / "data" / "ssqa"
STIGMAS = ["Asexual", "Homeless", "Jewish", "Infertile", "Illiteracy"]
TEMPLATES = [0, 1, 2, 3]


def yes_if_stop(call: Call) -> FakeReply:
    """The model under test: "yes" when the prompt says "stop", else "no"."""
    text = call.body["messages"][-1]["content"]
    return FakeReply(text="yes" if "stop" in str(text) else "no", usage=(50, 1))


@pytest.fixture
def offline(monkeypatch, tmp_path):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BIAS_WORKBENCH_JUDGE_ENDPOINTS", "http://127.0.0.1:*")
    monkeypatch.setenv("BIAS_WORKBENCH_JUDGE_CACHE", str(tmp_path / "judge-cache.sqlite"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def ssqa_subset() -> pd.DataFrame:
    """Real prompts with the factor table's columns; (Asexual, positive) and (Homeless,
    doubt) removed: four empty combinations of stigma x style x biased answer."""
    prompts = pd.read_csv(DATA / "ssqa_yes_no.csv.gz")
    table = pd.read_csv(DATA / "ssqa_factor_table.csv.gz")
    table = table[table["cot"] == "no"].set_index("row_in_ssqa").sort_index()
    frame = table[["template", "stigma", "prompt_style", "biased_answer"]].assign(
        prompt=prompts["prompt"].to_numpy())
    keep = frame["template"].isin(TEMPLATES) & frame["stigma"].isin([*STIGMAS, "no stigma"])
    gone = ((frame["stigma"] == "Asexual") & (frame["prompt_style"] == "positive")) | \
        ((frame["stigma"] == "Homeless") & (frame["prompt_style"] == "doubt"))
    return frame[keep & ~gone].reset_index(drop=True)


def design(base: bool = True) -> Design:
    """The design of :func:`ssqa_subset` (``base`` False: without the base prompts)."""
    none = ["no stigma"] if base else []
    return Design.from_dict({
        "factors": [
            {"name": "stigma", "kind": "domain", "values": [*none, *STIGMAS],
             "reference": (none or STIGMAS)[0]},
            {"name": "prompt_style", "kind": "prompt",
             "values": [*(["base"] if base else []), "original", "positive", "doubt"],
             "reference": "original"},
            {"name": "biased_answer", "kind": "domain", "values": ["no", "yes"],
             "reference": "no"},
            {"name": "model", "kind": "model", "values": ["mut-1"], "reference": "mut-1"}],
        "outcome": {"column": "answer", "mapping": "equals", "other_column": "biased_answer"},
        "cluster": "template"})


def run(main, argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_generate_answer_extend_analyse(offline, capsys):
    tmp = offline
    subset = ssqa_subset()
    assert len(subset) == 4 * (5 * 3 - 2) + 4 == 56
    subset.to_csv(tmp / "questions.csv", index=False)
    design().save(tmp / "d.yaml")
    answer = ["answer", "--provider", "openai", "--model", "mut-1", "--no-cache", "--quiet"]
    with FakeLLMServer(yes_if_stop) as srv:
        answer += ["--base-url", srv.openai_url]
        # 0. the existing results: the model under test answers the real prompts
        code, _, err = run(judges_main, [*answer[:1], "questions.csv", *answer[1:],
                                         "--out", "results.csv"], capsys)
        assert code == 0, err
        asked = srv.n_requests
        # 1. plan: the four empty combinations first (among the stigmas and the styles
        # with a stigma: a base prompt has none)
        code, out, err = run(analysis_main, [
            "plan", "results.csv", "--design", "d.yaml", "--factors",
            "stigma,prompt_style,biased_answer", "--where", f"stigma={','.join(STIGMAS)}",
            "--where", "prompt_style=original,positive,doubt", "--budget", 4,
            "--out", "add.csv"], capsys)
        assert code == 0, err
        plan = pd.read_csv("add.csv")
        assert sorted(zip(plan["stigma"], plan["prompt_style"], plan["biased_answer"],
                          plan["n"], strict=True)) == [
            ("Asexual", "positive", "no", 1), ("Asexual", "positive", "yes", 1),
            ("Homeless", "doubt", "no", 1), ("Homeless", "doubt", "yes", 1)]
        # 2. generate: the slots learned from the other prompts of each template
        code, out, err = run(analysis_main, [
            "generate", "results.csv", "--design", "d.yaml", "--plan", "add.csv",
            "--out", "prompts.csv"], capsys)
        assert code == 0, err
        assert "Round trip: 52 of 56 prompts (92.86 %)" in out  # the 4 base prompts alone
        prompts = pd.read_csv("prompts.csv")
        assert len(prompts) == 4 and prompts["new_text"].all()
        original = pd.read_csv(DATA / "ssqa_yes_no.csv.gz")["prompt"]
        # the generated texts are the benchmark's own prompts for those cells
        assert set(prompts["prompt"]) <= set(original)
        # 3. the model under test answers the new prompts
        code, _, err = run(judges_main, [*answer[:1], "prompts.csv", *answer[1:],
                                         "--out", "answered.csv"], capsys)
        assert code == 0, err
        assert srv.n_requests == asked + 4
    # 4. the answers join the results with the same design, marked as added
    code, out, err = run(analysis_main, ["extend", "results.csv", "answered.csv", "--design",
                                         "d.yaml", "--out", "combined.csv", "--json"], capsys)
    assert code == 0, err
    payload = json.loads(out)
    assert payload["n_added"] == 4 and payload["n_rows"] == 60
    before, after = payload["before"], payload["after"]
    assert after["n_observed_cells"] == before["n_observed_cells"] + 4
    assert after["n_empty_cells"] == before["n_empty_cells"] - 4
    assert after["coverage_percentage"] > before["coverage_percentage"]
    combined = pd.read_csv("combined.csv")
    assert combined["added"].sum() == 4
    assert combined.loc[combined["added"], "model"].eq("mut-1").all()
    # 5. the analyses read the combined table with the same design: before / after
    rows = {}
    for name, path in (("before", "results.csv"), ("after", "combined.csv")):
        code, out, err = run(analysis_main, ["subgroups", path, "--design", "d.yaml",
                                             "--factors", "stigma", "--json"], capsys)
        assert code == 0, err
        table = pd.DataFrame(json.loads(out)["subgroups"]).set_index("stigma")
        rows[name] = table["n"]
    assert (rows["after"] - rows["before"]).to_dict() == {
        "no stigma": 0, "Asexual": 2, "Homeless": 2, "Jewish": 0, "Infertile": 0,
        "Illiteracy": 0}
