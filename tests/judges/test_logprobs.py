"""Probability-weighted scores (``--logprobs``): hand-computed expected scores, the OpenAI
logprobs block, and runs with the real openai and anthropic clients on the loopback server."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from analysis.judge_stats import columns as C
from judges.batch_apis import openai_reply
from judges.cache import ReplyCache
from judges.cli import main
from judges.judge import JudgeConfig, MetricOutcome, assemble_judged, judge_requests
from judges.logprobs import (
    LOW_MASS,
    MISALIGNED,
    NO_LOGPROBS,
    NO_TOKEN,
    NOT_WRITTEN,
    expected_score,
    read_openai_logprobs,
    score_of_token,
    score_probabilities,
)
from judges.providers import OpenAIChat, make_provider
from judges.request import ChatRequest, Reply
from judges.runner import request_key
from judges.to_results import to_results
from tests.judges.helpers import make_row
from tests.judges.judge_server import FakeLLMServer, FakeReply, hashed_score, logprob_content

ln = math.log


def reply_of(score: int, top: dict[str, float], *, split_space: bool = False,
             explanation: str = "Reasons.") -> Reply:
    """A Reply as the OpenAI provider reads it from a loopback-style logprobs block."""
    fake = FakeReply.with_logprobs(score, top, explanation, split_space=split_space)
    return Reply(text=fake.text, logprobs=read_openai_logprobs({"logprobs": {
        "content": fake.logprobs}}))


# --- the formula, by hand ---------------------------------------------------------------------
def test_expected_score_equals_the_hand_computed_weighted_mean():
    # P(3) = 0.1, P(4) = 0.6, P(5) = 0.3: 0.3 + 2.4 + 1.5 = 4.2
    out = expected_score(reply_of(4, {" 4": ln(0.6), " 5": ln(0.3), " 3": ln(0.1)}))
    assert out.value == pytest.approx(4.2, abs=1e-12)
    assert out.probabilities == pytest.approx({3: 0.1, 4: 0.6, 5: 0.3})
    assert out.mass == pytest.approx(1.0) and out.reason is None


def test_space_variants_add_up_and_other_tokens_are_renormalised_away():
    # ' 4' and '4' both write 4; ' x' writes no score: mass 0.9, renormalised over 1-5.
    top = {" 4": ln(0.5), "4": ln(0.1), " 5": ln(0.2), "5": ln(0.05), " 3": ln(0.05),
           " x": ln(0.1)}
    out = expected_score(reply_of(4, top))
    assert out.mass == pytest.approx(0.9)
    assert out.probabilities == pytest.approx({3: 0.05 / 0.9, 4: 0.6 / 0.9, 5: 0.25 / 0.9})
    assert out.value == pytest.approx((3 * 0.05 + 4 * 0.6 + 5 * 0.25) / 0.9, abs=1e-12)


def test_score_token_split_from_its_space():
    # tokens ..., '":', ' ', '2', '}': the digit is a token of its own
    out = expected_score(reply_of(2, {"2": ln(0.7), "1": ln(0.2), "3": ln(0.1)},
                                  split_space=True))
    assert out.value == pytest.approx(0.2 + 1.4 + 0.3, abs=1e-12)


def test_digit_inside_a_longer_token():
    # the score's token is ':4}' (no space in "score":4): ':5}' and '5' both write 5
    text = '{"explanation":"ok","score":4}'
    prefix = text[:-3]
    content = [{"token": prefix, "logprob": 0.0, "bytes": list(prefix.encode()),
                "top_logprobs": []},
               {"token": ":4}", "logprob": ln(0.5), "bytes": list(b":4}"),
                "top_logprobs": [{"token": ":4}", "logprob": ln(0.5)},
                                 {"token": ":5}", "logprob": ln(0.25)},
                                 {"token": "5", "logprob": ln(0.05)},
                                 {"token": ":1}", "logprob": ln(0.2)}]}]
    reply = Reply(text=text, logprobs=read_openai_logprobs({"logprobs": {"content": content}}))
    out = expected_score(reply)
    assert out.probabilities == pytest.approx({1: 0.2, 4: 0.5, 5: 0.3})
    assert out.value == pytest.approx(0.2 + 2.0 + 1.5, abs=1e-12)
    assert score_of_token(" :5} ", (1, 2, 3, 4, 5), ":", "}") == 5
    assert score_of_token("45", (1, 2, 3, 4, 5)) is None
    assert score_of_token("6", (1, 2, 3, 4, 5)) is None


def test_chosen_token_missing_from_top_is_counted():
    p, mass = score_probabilities("4", ln(0.5), [("5", ln(0.3))])
    assert mass == pytest.approx(0.8)
    assert p == pytest.approx({4: 0.625, 5: 0.375})


def test_multibyte_text_and_tokens_split_inside_a_character():
    # "✓" (3 UTF-8 bytes) arrives as two tokens shown as byte strings: offsets come from
    # the bytes, not the token strings, so the score token is still found.
    text = '{"explanation": "Caf\u00e9 \u2713", "score": 5}'
    head = '{"explanation": "Caf\u00e9 '
    check = "\u2713".encode()
    tail = '", "score": '
    content = [
        {"token": head, "logprob": 0.0, "bytes": list(head.encode()), "top_logprobs": []},
        {"token": "bytes:\\xe2\\x9c", "logprob": 0.0, "bytes": list(check[:2]),
         "top_logprobs": []},
        {"token": "bytes:\\x93", "logprob": 0.0, "bytes": list(check[2:]), "top_logprobs": []},
        {"token": tail, "logprob": 0.0, "bytes": list(tail.encode()), "top_logprobs": []},
        {"token": "5", "logprob": ln(0.9), "bytes": [53],
         "top_logprobs": [{"token": "5", "logprob": ln(0.9)}, {"token": "4", "logprob": ln(0.1)}]},
        {"token": "}", "logprob": 0.0, "bytes": [125], "top_logprobs": []},
    ]
    reply = Reply(text=text, logprobs=read_openai_logprobs({"logprobs": {"content": content}}))
    assert [t.token for t in reply.logprobs] == ["5"]  # only digit tokens are kept
    assert expected_score(reply).value == pytest.approx(4.9, abs=1e-12)


def test_no_expected_score_without_enough_evidence():
    # mass 0.4 < 0.5: None with the reason, the table still given
    low = expected_score(reply_of(4, {" 4": ln(0.3), " 5": ln(0.1), " the": ln(0.6)}))
    assert low.value is None and low.reason == LOW_MASS
    assert low.mass == pytest.approx(0.4) and low.probabilities == pytest.approx({4: 0.75,
                                                                                   5: 0.25})
    text = '{"explanation": "e", "score": 3}'
    assert expected_score(Reply(text=text)).reason == NO_LOGPROBS
    assert expected_score(Reply(text=text, logprobs=())).reason == NO_TOKEN
    assert expected_score(Reply(text='{"explanation": "e", "score": 30}', logprobs=()),
                          3).reason == NOT_WRITTEN
    shifted = Reply(text=text, logprobs=[(len(text) - 2, 1, "7", 0.0, [])])
    assert expected_score(shifted).reason == MISALIGNED
    assert expected_score(Reply(text="no JSON", logprobs=())).value is None
    noted = Reply(text=text, logprobs_note="the server rejected logprobs (HTTP 400)")
    assert expected_score(noted).reason == "the server rejected logprobs (HTTP 400)"


def test_quoted_score_in_the_explanation_is_not_the_score_token():
    # The explanation quotes {"score": 5}; the parsed score is the last object's 2.
    text = '{"explanation": "not {\\"score\\": 5}", "score": 2}'
    top = {" 2": ln(0.8), " 1": ln(0.2)}
    content = logprob_content(text, top)
    reply = Reply(text=text, logprobs=read_openai_logprobs({"logprobs": {"content": content}}))
    assert expected_score(reply).value == pytest.approx(1.8, abs=1e-12)


def test_legacy_logprobs_shape_and_absent_blocks():
    text = '{"score": 3}'
    legacy = {"logprobs": {"tokens": ['{"', "score", '":', " 3", "}"],
                           "token_logprobs": [0, 0, 0, ln(0.5), 0],
                           "top_logprobs": [{}, {}, {}, {" 3": ln(0.5), " 2": ln(0.5)}, {}]}}
    reply = Reply(text=text, logprobs=read_openai_logprobs(legacy))
    assert expected_score(reply).value == pytest.approx(2.5)
    assert read_openai_logprobs({"logprobs": None}) is None
    assert read_openai_logprobs({}) is None
    assert read_openai_logprobs({"logprobs": {"content": None}}) is None


def test_reply_logprobs_survive_the_cache(tmp_path):
    reply = reply_of(4, {" 4": ln(0.6), " 5": ln(0.4)})
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        cache.put("k", reply)
        back = cache.get("k")
    assert back == reply and back.logprobs == reply.logprobs
    assert expected_score(back).value == pytest.approx(4.4)
    assert Reply.from_dict(json.loads(json.dumps(Reply(text="x").to_dict()))).logprobs is None


def test_batch_output_lines_keep_logprobs():
    fake = FakeReply.with_logprobs(3, {" 3": ln(0.5), " 4": ln(0.5)})
    body = {"model": "m", "usage": {}, "choices": [{
        "message": {"content": fake.text}, "finish_reason": "stop",
        "logprobs": {"content": fake.logprobs}}]}
    assert expected_score(openai_reply(body)).value == pytest.approx(3.5)


# --- requests, keys and providers ----------------------------------------------------------------
def test_the_setting_enters_the_cache_key_only_when_on(four_rows):
    provider = OpenAIChat("judge-x", base_url="http://127.0.0.1:9/v1")
    off = list(judge_requests(four_rows, config=JudgeConfig(), provider=provider))
    on = list(judge_requests(four_rows, config=JudgeConfig(logprobs=True), provider=provider))
    # off: the very key of a request whose params never had the setting (keys unchanged)
    bare = [ChatRequest(r.messages, {k: v for k, v in r.params.items() if k != "logprobs"},
                        r.key_parts) for r in off]
    assert [request_key(provider, r) for r in off] == [request_key(provider, r) for r in bare]
    assert not {request_key(provider, r) for r in on} & {request_key(provider, r) for r in off}
    body = provider.body(on[0])
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    assert "logprobs" not in provider.body(off[0])
    reasoning = OpenAIChat("o3-mini")
    assert "logprobs" not in reasoning.body(on[0])
    assert request_key(reasoning, on[0]) == request_key(reasoning, off[0])
    assert "reasoning models return no token log-probabilities" in " ".join(
        reasoning.param_warnings(on[0].params))
    assert provider.logprobs_unavailable() is None
    assert "Anthropic" in make_provider("anthropic", model="c").logprobs_unavailable()


def test_expected_is_the_mean_over_samples_that_have_one(four_rows):
    outcomes = [MetricOutcome(0, "ics", 4, "", None, expected=4.0),
                MetricOutcome(0, "ics", 3, "", None, expected=3.0),
                MetricOutcome(0, "ics", 4, "", None, expected=None),
                MetricOutcome(1, "tcs", 2, "", None, expected=2.25)]
    judged = assemble_judged(four_rows, outcomes, judge_label="openai:x", logprobs=True)
    assert judged.loc[0, "ics_expected"] == pytest.approx(3.5)
    assert judged.loc[1, "tcs_expected"] == pytest.approx(2.25)
    assert judged["pcs_expected"].isna().all() and judged["ics_expected"].dtype == float
    plain = assemble_judged(four_rows, outcomes, judge_label="openai:x")
    assert not set(C.EXPECTED_COLUMNS) & set(plain.columns)
    rejudged = assemble_judged(judged, [], judge_label="openai:x")  # old columns dropped
    assert not set(C.EXPECTED_COLUMNS) & set(rejudged.columns)


def test_results_table_score_expected_and_stage2_pairs(four_rows):
    outcomes = [MetricOutcome(0, "ics", 4, "", None, expected=3.8),
                MetricOutcome(1, "tcs", 4, "", None, expected=4.5),
                MetricOutcome(1, "pcs", 3, "", None, expected=3.25),
                MetricOutcome(1, "etcs", 5, "", None, expected=4.75),
                MetricOutcome(2, "sbas", 2, "", None, expected=None),
                MetricOutcome(3, "ics", 5, "", None, expected=4.5)]
    judged = assemble_judged(four_rows, outcomes, judge_label="openai:x", logprobs=True)
    table, _ = to_results(judged)
    assert list(table.columns[:13])[-2:] == [C.PAIR_ID, C.SCORE_EXPECTED]
    assert table[C.SCORE_EXPECTED].tolist()[:2] == [3.8, 3.25]  # the pair: lowest of three
    assert np.isnan(table[C.SCORE_EXPECTED].iloc[2]) and table[C.SCORE_EXPECTED].iloc[3] == 4.5
    assert not set(C.EXPECTED_COLUMNS) & set(table.columns)
    per_metric, _ = to_results(judged, stage2_rows="metrics")
    assert per_metric[C.SCORE_EXPECTED].tolist()[1:4] == [4.5, 3.25, 4.75]
    partial = judged.copy()
    partial.loc[1, "etcs_expected"] = np.nan
    assert np.isnan(to_results(partial)[0][C.SCORE_EXPECTED].iloc[1])
    assert C.SCORE_EXPECTED not in to_results(assemble_judged(
        four_rows, outcomes, judge_label="openai:x"))[0].columns


# --- end to end: python -m judges score --logprobs -----------------------------------------------
@pytest.fixture
def four_file(tmp_path):
    path = tmp_path / "four.csv"
    pd.DataFrame([make_row(i, s) for i, s in enumerate((1, 2, 3, 4))]).to_csv(path, index=False)
    return path


def top_for(call) -> dict[str, float]:
    """The loopback judge's alternatives: its score at 0.7, the next one up at 0.2."""
    s = hashed_score(call)
    return {f" {s}": ln(0.7), f" {s % 5 + 1}": ln(0.2), " x": ln(0.1)}


def logprob_judge(call) -> FakeReply:
    return FakeReply.with_logprobs(hashed_score(call), top_for(call))


def test_score_logprobs_end_to_end_and_rerun_from_the_cache(four_file, tmp_path, capsys):
    out, res, cache = tmp_path / "j.csv", tmp_path / "r.csv", tmp_path / "c.sqlite"
    with FakeLLMServer(logprob_judge) as srv:
        args = ["score", str(four_file), "--provider", "openai", "--model", "judge-x",
                "--base-url", srv.openai_url, "--cache", str(cache), "--out", str(out),
                "--to-results", str(res), "--quiet", "--logprobs"]
        assert main(args) == 0
        assert srv.n_requests == 6
        assert all(c.body["logprobs"] is True and c.body["top_logprobs"] == 20
                   for c in srv.calls)
        first = pd.read_csv(out)
        assert main(args) == 0
        assert srv.n_requests == 6  # rerun: 0 requests
    err = capsys.readouterr().err
    assert "0 requests (0 retries), 6 from the cache" in err and "warning" not in err
    judged = pd.read_csv(out)
    want = {}  # from the sampled score s the server wrote: (0.7 s + 0.2 (s % 5 + 1)) / 0.9
    for row, stage in enumerate((1, 2, 3, 4)):
        for metric in C.STAGE_METRICS[stage]:
            s = int(judged.loc[row, metric])
            want[(row, metric)] = (0.7 * s + 0.2 * (s % 5 + 1)) / 0.9
            assert judged.loc[row, C.expected_column(metric)] == pytest.approx(want[(row, metric)],
                                                                               abs=1e-9)
    assert len(want) == 6 and len({round(v, 6) for v in want.values()}) > 1
    pd.testing.assert_frame_equal(judged[list(C.EXPECTED_COLUMNS)],
                                  first[list(C.EXPECTED_COLUMNS)])
    assert judged["ics_expected"].notna().sum() == 2 and judged["sbas_expected"].notna().sum() == 1
    assert json.loads(judged[C.JUDGE_PARAMS].iloc[0])["logprobs"] is True
    table = pd.read_csv(res)
    assert table[C.SCORE_EXPECTED].iloc[0] == pytest.approx(want[(0, "ics")])


def test_without_the_option_nothing_changes(four_file, tmp_path):
    out = tmp_path / "j.csv"
    with FakeLLMServer(logprob_judge) as srv:
        assert main(["score", str(four_file), "--provider", "openai", "--model", "judge-x",
                     "--base-url", srv.openai_url, "--no-cache", "--out", str(out),
                     "--quiet"]) == 0
        assert not any("logprobs" in c.body or "top_logprobs" in c.body for c in srv.calls)
    assert not set(C.EXPECTED_COLUMNS) & set(pd.read_csv(out).columns)


def test_anthropic_warns_once_and_keeps_the_sampled_scores(four_file, tmp_path, capsys):
    out = tmp_path / "j.csv"
    with FakeLLMServer() as srv:
        code = main(["score", str(four_file), "--provider", "anthropic", "--model", "c",
                     "--base-url", srv.url, "--no-cache", "--out", str(out), "--quiet",
                     "--logprobs"])
        assert srv.n_requests == 6 and not any("logprobs" in c.body for c in srv.calls)
    assert code == 0
    err = capsys.readouterr().err
    assert err.count("log-probabilities") == 1  # the other warning is about temperature
    assert ("warning: logprobs = True is not sent to anthropic:c: the Anthropic API returns no "
            "token log-probabilities; the sampled score is used.") in err
    judged = pd.read_csv(out)
    assert judged[list(C.EXPECTED_COLUMNS)].isna().all().all()
    assert judged[list(C.METRICS)].notna().sum().sum() == 6


def test_a_server_that_omits_logprobs_is_named_once(four_file, tmp_path, capsys):
    with FakeLLMServer() as srv:  # ignores the parameter: "logprobs": null
        assert main(["score", str(four_file), "--provider", "openai", "--model", "judge-x",
                     "--base-url", srv.openai_url, "--no-cache", "--out",
                     str(tmp_path / "j.csv"), "--quiet", "--logprobs"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning:") == 1
    assert (f"warning: log-probabilities: 6 of 6 scored judgments have no expected score "
            f"(6: {NO_LOGPROBS}); their <metric>_expected is empty and the sampled score "
            "stands.") in err


def test_a_server_that_rejects_logprobs_falls_back(four_file, tmp_path, capsys):
    def strict(call):
        if "logprobs" in call.body:
            return FakeReply(status=400, raw=json.dumps({"error": {
                "message": "Unrecognized request argument supplied: logprobs"}}).encode())
        return logprob_judge(call)

    out, cache = tmp_path / "j.csv", tmp_path / "c.sqlite"
    with FakeLLMServer(strict) as srv:
        args = ["score", str(four_file), "--provider", "openai", "--model", "judge-x",
                "--base-url", srv.openai_url, "--cache", str(cache), "--out", str(out),
                "--quiet", "--logprobs", "--concurrency", "1"]
        assert main(args) == 0
        # one refusal, asked again without; the other five go without at once
        assert srv.n_requests == 7
        assert ["logprobs" in c.body for c in srv.calls] == [True] + [False] * 6
        assert main(args) == 0 and srv.n_requests == 7  # cached under the --logprobs key
    err = capsys.readouterr().err
    assert err.count("warning:") == 2  # once per run
    assert ("6 of 6 scored judgments have no expected score (6: the server rejected logprobs "
            "(BadRequestError (HTTP 400): Error code: 400 - Unrecognized request argument "
            "supplied: logprobs); asked again without it)") in err
    judged = pd.read_csv(out)
    assert judged[list(C.METRICS)].notna().sum().sum() == 6
    assert judged[list(C.EXPECTED_COLUMNS)].isna().all().all()


def test_a_400_that_is_not_about_logprobs_stays_an_error(four_file, tmp_path):
    with FakeLLMServer(lambda call: FakeReply.error(400)) as srv:
        code = main(["score", str(four_file), "--provider", "openai", "--model", "judge-x",
                     "--base-url", srv.openai_url, "--no-cache", "--out",
                     str(tmp_path / "j.csv"), "--quiet", "--logprobs", "--max-retries", "0"])
        assert srv.n_requests == 12  # each request, then once more without logprobs
    assert code == 3
    judged = pd.read_csv(tmp_path / "j.csv")
    assert judged[C.UNSCORED_REASON].str.contains("HTTP 400").all()


def test_estimate_names_the_option(four_file, tmp_path, capsys):
    with FakeLLMServer() as srv:
        base = ["estimate", str(four_file), "--provider", "openai", "--model", "judge-x",
                "--base-url", srv.openai_url, "--cache", str(tmp_path / "c.sqlite")]
        assert main(base) == 0
        plain = capsys.readouterr().out
        assert main([*base, "--logprobs"]) == 0
        with_lp = capsys.readouterr().out
        assert srv.n_requests == 0
    assert with_lp.startswith(plain)  # the same calls, tokens and cost
    assert with_lp[len(plain):] == ("log-probabilities:    asked (top 20 per token; no extra "
                                    "billed tokens)\n")


def test_batch_path_keeps_the_expected_scores(four_rows, tmp_path):
    import asyncio

    from judges.batch import judge_frame_batch_async
    from judges.batch_apis import BatchConfig
    from tests.judges.batch_server import FakeBatchServer

    with FakeBatchServer(logprob_judge) as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url)
        run = asyncio.run(judge_frame_batch_async(
            four_rows, provider, cache=cache, config=JudgeConfig(logprobs=True),
            batch=BatchConfig(poll_interval=0.01, backoff_base=0.01, backoff_max=0.02)))
    judged = run.judged
    assert run.warnings == []
    for m in C.METRICS:
        s = judged[m].astype(float)
        assert np.allclose(judged[C.expected_column(m)].dropna(),
                           ((0.7 * s + 0.2 * (s % 5 + 1)) / 0.9).dropna())
    assert judged[list(C.EXPECTED_COLUMNS)].notna().sum().sum() == 6


# --- the Judges page ------------------------------------------------------------------------------
def test_judges_page_option_disabled_for_anthropic_and_estimate_follows_it():
    from tests.judges.test_page import choose_local_openai, page, table_with, wait_for_result

    def estimate(at) -> dict[str, str]:
        table = table_with(at, "quantity")
        return dict(zip(table["quantity"], table["value"], strict=True))

    with FakeLLMServer(logprob_judge) as srv:
        at = page()
        at.selectbox(key="judges_provider").set_value("anthropic").run()
        assert at.checkbox(key="judges_logprobs").disabled
        assert any("Log-probabilities are not available for anthropic:claude-haiku-4-5: the "
                   "Anthropic API returns no token log-probabilities" in c.value
                   for c in at.caption)
        choose_local_openai(at, srv.openai_url)
        box = at.checkbox(key="judges_logprobs")
        assert not box.disabled and not box.value
        assert estimate(at)["calls to make"] == "48"
        at.checkbox(key="judges_logprobs").check().run()
        assert any("add no billed tokens" in c.value for c in at.caption)
        at.button(key="judges_run").click().run()
        wait_for_result(at)
        assert srv.n_requests == 48 and all(c.body.get("logprobs") for c in srv.calls)
        assert not at.exception and not at.error
        judged = at.session_state["judges_judged"]
        for m in C.METRICS:  # every scored judgment has its expected score
            assert judged[C.expected_column(m)].notna().sum() == judged[m].notna().sum() > 0
        s = judged["ics"].astype(float)
        want = (0.7 * s + 0.2 * (s % 5 + 1)) / 0.9
        assert np.allclose(judged["ics_expected"].dropna(), want.dropna())
        assert estimate(at)["already cached"] == "48"
        at.checkbox(key="judges_logprobs").uncheck().run()  # another request: not cached
        assert estimate(at)["already cached"] == "0"
        gpt5 = at.text_input(key="judges_model_openai").input("gpt-5-mini").run()
        assert gpt5.checkbox(key="judges_logprobs").disabled
