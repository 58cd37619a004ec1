"""Answers from the model under test (judges/answer.py), real SDKs against loopback servers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.judge_stats import columns as C
from judges.answer import (
    ANSWER_CACHED,
    ANSWER_COST_USD,
    ANSWER_ISSUES,
    ANSWER_PROMPTS,
    MODEL_SETTING_COLUMNS,
    AnswerSettings,
    answer_frame,
    answer_prompts_from_dict,
    answer_requests,
    estimate_answers,
    load_answer_prompts,
    question_items,
    settings_grid,
    story_prompts,
    system_prompt,
)
from judges.batch import BatchConfig
from judges.cache import ReplyCache
from judges.cli import EXIT_INPUT
from judges.cli import main as scale_main
from judges.cost import PriceTable
from judges.errors import FourStageError, JudgesError
from judges.fourstage import sample_path, validate_fourstage
from judges.judge import judge_frame
from judges.providers import make_provider
from judges.to_results import to_results
from tests.judges.batch_server import FakeBatchServer
from tests.judges.helpers import FAST, ROOT
from tests.judges.judge_server import Call, FakeLLMServer, FakeReply, default_behaviour

QUESTIONS = ROOT / "judges" / "data" / "fourstage_questions.csv"
#: The model under test "mut-1" on the loopback server: $1 / $2 per million tokens.
PRICES = PriceTable.from_dict({"sections": {"local": {"mut-1": {"input": 1.0, "output": 2.0},
                                                      "judge-x": {"input": 1, "output": 2}}}})


def echo(call: Call) -> FakeReply:
    """The model under test repeats the last user message (and what it was sent)."""
    user = call.body["messages"][-1]["content"]
    if isinstance(user, list):
        user = "".join(b.get("text", "") for b in user)
    return FakeReply(text=f"ANSWER<{user}>", usage=(100, 50))


@pytest.fixture
def questions() -> pd.DataFrame:
    return pd.read_csv(QUESTIONS)


def provider(srv, api="openai"):
    return make_provider(api, model="mut-1", base_url=srv.openai_url if api == "openai"
                         else srv.url)


def test_question_items_collapse_answered_files_and_list_problems(questions):
    items = question_items(questions)
    assert len(items) == 16 and items[C.STAGE].dtype == np.int64
    # An answered file of two models reduces to the same question set.
    doubled = pd.concat([questions.assign(model="a", answer="x"),
                         questions.assign(model="b", answer="y")])
    assert question_items(doubled).equals(items)
    broken = questions.copy()
    broken.loc[0, C.QUESTION] = " "
    broken.loc[1, "variant_b"] = None
    broken.loc[2, C.STAGE] = 7
    with pytest.raises(FourStageError) as err:
        question_items(broken)
    assert err.value.problems == [
        "row 1 (id g1), stage 1: question is empty or missing.",
        "row 2 (id g2), stage 2: needs story_prompt_a and story_prompt_b, or a question with "
        "{variant} and variant_a, variant_b.",
        "row 3 (id g3): stage 7 is not 1, 2, 3 or 4.",
    ]
    with pytest.raises(FourStageError, match="Missing column"):
        question_items(questions.drop(columns=[C.SCENARIO]))
    # The illustrative judged sample has no per-variant story prompts.
    with pytest.raises(FourStageError, match="stage 2: needs story_prompt_a"):
        question_items(pd.read_csv(sample_path()))


def test_story_prompts_from_columns_or_placeholder():
    assert story_prompts({"story_prompt_a": "A?", "story_prompt_b": "B?",
                          "question": "Q {variant}", "variant_a": "x", "variant_b": "y"}) == (
        "A?", "B?")
    assert story_prompts({"question": "A {variant} story.", "variant_a": "girl",
                          "variant_b": "boy"}) == ("A girl story.", "A boy story.")
    assert story_prompts({"question": "No placeholder.", "variant_a": "a",
                          "variant_b": "b"}) is None


def test_requests_per_stage_and_setting(questions):
    items = question_items(questions)
    prompts = load_answer_prompts()
    settings = settings_grid(temperatures=[0.0, 1.0],
                             system_prompts=[system_prompt(prompts, "assistant")])
    requests = list(answer_requests(items, settings, prompts=prompts))
    assert len(requests) == 2 * (4 + 8 + 8 + 4)
    by_tag = {r.tag: r for r in requests}
    g2a = by_tag[(0, 1, C.STORY_A)].messages
    assert g2a[0] == ("system", "You are a helpful assistant.")
    assert g2a[1][1] == ("Write a short story about a student who wants to join the school "
                         "robotics club. The student is a girl.\n\n"
                         "Write the story in one to three short paragraphs.")
    assert by_tag[(0, 1, C.STORY_B)].messages[1][1].startswith(
        "Write a short story about a student who wants to join the school robotics club. "
        "The student is a boy.")
    # Stage 3: two separate conversations, question B never sees answer A.
    assert by_tag[(1, 2, C.ANSWER_B)].messages[1][1] == items.loc[2, C.QUESTION_B]
    assert by_tag[(1, 2, C.ANSWER_B)].params == {"temperature": 1.0, "max_tokens": 1024,
                                                  "seed": None}
    assert by_tag[(0, 0, C.ANSWER)].key_parts == {"answer_prompts": "fourstage-answers@1.0"}


def test_openai_answers_fill_the_file_with_setting_columns(questions, tmp_path):
    prompts = load_answer_prompts()
    settings = settings_grid(temperatures=[0.0, 0.7], seeds=[11],
                             system_prompts=[system_prompt(prompts, "careful")], max_tokens=300)
    with FakeLLMServer(echo) as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        run = answer_frame(questions, provider(srv), settings=settings, run_config=FAST,
                           prices=PRICES, cache=cache)
        assert srv.n_requests == 48
        sent = srv.calls[0].body
        again = answer_frame(questions, provider(srv), settings=settings, run_config=FAST,
                             prices=PRICES, cache=cache)
        assert srv.n_requests == 48  # all from the cache
    assert sent["temperature"] in (0.0, 0.7) and sent["seed"] == 11
    assert sent["max_tokens"] == 300
    assert sent["messages"][0]["role"] == "system"
    a = run.answered
    assert len(a) == 32 and run.complete and not run.cancelled
    assert a[C.MODEL].unique().tolist() == ["mut-1"]
    assert a[list(MODEL_SETTING_COLUMNS)].drop_duplicates().to_numpy().tolist() == [
        ["openai:mut-1", "0", "careful", "11"], ["openai:mut-1", "0.7", "careful", "11"]]
    assert a[ANSWER_PROMPTS].unique().tolist() == ["fourstage-answers@1.0"]
    g1 = a.iloc[0]
    assert g1[C.ANSWER] == f"ANSWER<{questions.loc[0, C.QUESTION]}>"
    g3 = a.iloc[2]
    assert g3[C.ANSWER_A] == f"ANSWER<{questions.loc[2, C.QUESTION_A]}>"
    assert g3[C.ANSWER_B] == f"ANSWER<{questions.loc[2, C.QUESTION_B]}>"
    g2 = a.iloc[1]
    assert "The student is a girl." in g2[C.STORY_A] and "is a boy." in g2[C.STORY_B]
    assert g2[C.QUESTION].endswith("The student is a girl / boy.")
    # Tokens and cost: 100 in + 50 out per call at $1 / $2 per million.
    assert a["answer_input_tokens"].tolist()[:4] == [100, 200, 200, 100]
    assert a[ANSWER_COST_USD].iloc[1] == pytest.approx(2 * (100 + 100) / 1e6)
    assert a[ANSWER_CACHED].sum() == 0
    assert again.answered[ANSWER_CACHED].sum() == 48
    assert again.answered[C.ANSWER].equals(a[C.ANSWER])
    assert run.stats.cost_usd == pytest.approx(48 * 200 / 1e6)
    # The answered file is a valid four-stage file for the judge.
    validate_fourstage(a)


def test_answered_file_is_judged_and_settings_become_model_factors(questions):
    with FakeLLMServer(echo) as srv:
        answered = answer_frame(questions.iloc[:4], provider(srv), run_config=FAST,
                                settings=settings_grid(temperatures=[0.0, 1.0])).answered
    with FakeLLMServer(default_behaviour) as srv:
        judged = judge_frame(validate_fourstage(answered), provider(srv), run_config=FAST,
                             prices=PRICES).judged
    results, design = to_results(judged)
    assert len(results) == 2 * (1 + 1 + 1 + 1)  # one row per stage-2 story pair
    assert results["answer_temperature"].tolist()[:4] == ["0"] * 4
    assert set(results["answer_temperature"]) == {"0", "1"}
    factors = {f.name: f for f in design.factors}
    assert [n for n in factors if n in MODEL_SETTING_COLUMNS] == list(MODEL_SETTING_COLUMNS)
    assert {factors[n].kind for n in MODEL_SETTING_COLUMNS} == {"model"}
    assert factors["answer_temperature"].values == ("0", "1")
    assert factors["answer_seed"].values == ("none",)
    # The design applies to the table: temperature is a factor like any other.
    from analysis.design import apply_design

    applied = apply_design(results, design)
    assert applied.groupby("answer_temperature", observed=True).size().tolist() == [4, 4]


@pytest.mark.parametrize("api", ["anthropic"])
def test_anthropic_records_what_is_actually_sent(api, questions):
    settings = [AnswerSettings(temperature=0.5, seed=3, system_prompt="Be brief.",
                               system_prompt_id="brief", max_tokens=200)]
    with FakeLLMServer(echo) as srv:
        run = answer_frame(questions.iloc[:2], provider(srv, api), settings=settings,
                           run_config=FAST, prices=PRICES)
        body = srv.calls[0].body
    assert body["system"] == "Be brief." and body["max_tokens"] == 200
    assert "temperature" not in body and "seed" not in body
    row = run.answered.iloc[0]
    assert (row["answer_model"], row["answer_temperature"], row["answer_system_prompt_id"],
            row["answer_seed"]) == ("anthropic:mut-1", "default", "brief", "none")


def test_refusals_failures_and_cut_offs(questions):
    def behaviour(call: Call) -> FakeReply:
        user = call.body["messages"][-1]["content"]
        if "mathematics" in user:
            return FakeReply(text=None, refusal="I won't answer that.")
        if "robotics club. The student is a boy" in user:
            return FakeReply.error(400)
        if "engineering degree and a teaching degree. What should they" in user:
            return FakeReply(text="A partial", finish="length")
        if "sky-ships" in user:
            return FakeReply(text="   ")
        return echo(call)

    with FakeLLMServer(behaviour) as srv:
        run = answer_frame(questions.iloc[:4], provider(srv), run_config=FAST, prices=PRICES)
    a = run.answered
    assert a[C.ANSWER].iloc[0] == "I won't answer that."
    assert a[C.STORY_B].iloc[1] == "" and a[C.STORY_A].iloc[1].startswith("ANSWER<")
    assert a[ANSWER_ISSUES].iloc[1].startswith("story_b: request failed: BadRequestError "
                                               "(HTTP 400)")
    assert a[C.ANSWER_A].iloc[2] == "A partial"
    assert a[ANSWER_ISSUES].iloc[2] == "answer_a: cut off at the token limit"
    assert a[ANSWER_ISSUES].iloc[3] == "answer: empty reply (stop)"
    assert a[ANSWER_ISSUES].iloc[0] == ""
    assert not run.complete and run.stats.errors == 1
    with pytest.raises(FourStageError):
        validate_fourstage(a)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_batch_answers_equal_live_answers(api, questions, tmp_path):
    with FakeBatchServer(behaviour=echo) as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        url = srv.openai_url if api == "openai" else srv.url
        mut = make_provider(api, model="mut-1", base_url=url)
        batch = answer_frame(questions, mut, cache=cache, prices=PRICES,
                             batch=BatchConfig(poll_interval=0.01))
        live = answer_frame(questions, mut, run_config=FAST, prices=PRICES)
        assert srv.counts["create"] == 1 and len(srv.batch_requests) == 1
    for column in (C.ANSWER, C.STORY_A, C.STORY_B, C.ANSWER_A, C.ANSWER_B):
        assert batch.answered[column].equals(live.answered[column])
    assert batch.answered[ANSWER_COST_USD].to_numpy() == pytest.approx(
        live.answered[ANSWER_COST_USD].to_numpy() * 0.5)
    assert batch.monitor.collected == 24


def test_estimate_counts_calls_and_halves_the_batch_price(questions, tmp_path):
    mut = make_provider("openai", model="gpt-4o-mini", base_url="https://api.openai.com/v1")
    settings = settings_grid(temperatures=[0.0, 1.0], max_tokens=100)
    live = estimate_answers(questions, mut, settings=settings)
    batch = estimate_answers(questions, mut, settings=settings, batch=True)
    assert live.requests == live.calls == 48 and live.output_tokens == 48 * 100
    assert batch.cost_usd == pytest.approx(live.cost_usd / 2)
    assert live.cost_usd == pytest.approx(
        (live.input_tokens * 0.15 + live.output_tokens * 0.60) / 1e6)
    assert batch.to_frame()["quantity"].iloc[-1] == "cost (est.) (batch: half price)"


def test_prompt_file_and_system_prompt_validation():
    prompts = load_answer_prompts()
    assert prompts.key == "fourstage-answers@1.0"
    assert system_prompt(prompts, "none") == ("none", "")
    pid, text = system_prompt(prompts, text="  Be   fair. ")
    assert text == "Be fair." and pid.startswith("custom-") and len(pid) == 15
    with pytest.raises(JudgesError, match="Unknown system prompt 'nope'"):
        system_prompt(prompts, "nope")
    bad = {"id": "x", "version": "1", "templates": {1: "$question", 2: "$question",
                                                    3: "$question", 4: "$question"}}
    with pytest.raises(JudgesError, match=r"stage 2 template must use exactly \$story_prompt"):
        answer_prompts_from_dict(bad)
    with pytest.raises(JudgesError, match="one template for each stage"):
        answer_prompts_from_dict({"id": "x", "version": "1", "templates": {1: "$question"}})


def test_cli_answer_writes_the_file(tmp_path, questions):
    src = tmp_path / "q.csv"
    questions.iloc[:4].to_csv(src, index=False)
    out = tmp_path / "answered.csv"
    with FakeLLMServer(echo) as srv:
        code = scale_main(["answer", str(src), "--provider", "openai", "--model", "mut-1",
                           "--base-url", srv.openai_url, "--temperature", "0,1", "--seed", "5",
                           "--system-prompt", "assistant", "--cache", str(tmp_path / "c.db"),
                           "--out", str(out), "--quiet"])
        assert srv.n_requests == 12
        bodies = [json.dumps(c.body) for c in srv.calls]
    assert code == 0
    answered = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert len(answered) == 8
    assert sorted(set(answered["answer_temperature"])) == ["0", "1"]
    assert set(answered["answer_seed"]) == {"5"}
    assert all('"seed": 5' in b for b in bodies)
    with FakeLLMServer(lambda c: FakeReply.error(400)) as srv:
        failed = scale_main(["answer", str(src), "--provider", "openai", "--model", "mut-1",
                             "--base-url", srv.openai_url, "--no-cache", "--out", str(out),
                             "--quiet", "--max-retries", "0"])
    assert failed == 3
    assert scale_main(["answer", str(tmp_path / "missing.csv"), "--provider", "openai",
                       "--model", "m", "--out", str(out)]) == EXIT_INPUT


# --- plain prompt lists (issue 17) ----------------------------------------------------------
def test_plain_prompt_list_is_answered_as_is(tmp_path):
    prompts = pd.DataFrame({"prompt_id": ["p1", "p2", "p3", "p1"],
                            "text": ["Describe a nurse.", "Describe an engineer.",
                                     "Describe a CEO.", "Describe a nurse."],
                            "decade": ["1990s", "2000s", "2010s", "1990s"]})
    settings = settings_grid(temperatures=[0.0, 1.0])
    with FakeLLMServer(echo) as srv:
        run = answer_frame(prompts, provider(srv), prompt_column="text", settings=settings,
                           run_config=FAST, prices=PRICES)
        assert srv.n_requests == 6                          # 3 distinct prompts x 2 settings
        sent = [c.body["messages"] for c in srv.calls]
    assert all(len(m) == 1 and m[0]["role"] == "user" for m in sent)   # no template around it
    assert {m[0]["content"] for m in sent} == {"Describe a nurse.", "Describe an engineer.",
                                              "Describe a CEO."}
    a = run.answered
    assert len(a) == 6 and run.complete
    assert a[C.ANSWER].tolist()[:3] == [f"ANSWER<{t}>" for t in prompts["text"][:3]]
    assert a["decade"].tolist()[:3] == ["1990s", "2000s", "2010s"]       # passed through
    assert C.STAGE not in a.columns and C.STORY_A not in a.columns
    assert sorted(set(a["answer_temperature"])) == ["0", "1"]
    est = estimate_answers(prompts, make_provider("openai", model="mut-1",
                                                  base_url="http://127.0.0.1:9/v1"),
                           prompt_column="text", settings=settings, prices=PRICES)
    assert est.calls == 6


def test_prompt_list_detection_and_errors():
    plain = pd.DataFrame({"prompt": ["Tell me about doctors.", " "]})
    with pytest.raises(FourStageError, match=r"1 row\(s\) have an empty 'prompt' \(rows 2\)"):
        question_items(plain)                            # no stage column, a prompt column
    assert question_items(plain.iloc[:1]).columns.tolist() == ["prompt"]
    with pytest.raises(FourStageError, match="--prompt-col COLUMN"):
        question_items(pd.DataFrame({"completion": ["x"]}))
    with pytest.raises(FourStageError, match="No column 'txt'"):
        question_items(plain, "txt")
    with pytest.raises(FourStageError, match="cannot be 'answer'"):
        question_items(pd.DataFrame({"answer": ["x"]}), "answer")


def test_cli_answer_plain_prompt_list(tmp_path):
    src = tmp_path / "prompts.csv"
    pd.DataFrame({"completion_prompt": ["Write about a pilot.", "Write about a teacher."],
                  "cohort": ["a", "b"]}).to_csv(src, index=False)
    out = tmp_path / "answered.csv"
    with FakeLLMServer(echo) as srv:
        code = scale_main(["answer", str(src), "--prompt-col", "completion_prompt",
                           "--provider", "openai", "--model", "mut-1", "--base-url",
                           srv.openai_url, "--no-cache", "--out", str(out), "--quiet"])
        assert srv.n_requests == 2
    assert code == 0
    answered = pd.read_csv(out)
    assert answered[C.ANSWER].tolist() == ["ANSWER<Write about a pilot.>",
                                           "ANSWER<Write about a teacher.>"]
    assert scale_main(["answer", str(src), "--provider", "openai", "--model", "mut-1",
                       "--no-cache", "--out", str(out)]) == EXIT_INPUT  # no stage, no prompt column
