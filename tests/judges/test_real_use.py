"""Judges in real use (issue 18) and against broken inputs (issue 20 items 3-5).

Reasoning-model profiles, partial files, honest costs, fail fast, raw replies kept, corrupt
caches, hostile text, two runs on one cache. The real SDK clients talk to the loopback
server of ``judge_server.py``; numbers are counted at the server.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading

import pandas as pd
import pytest

from analysis.judge_stats import columns as C
from judges.cache import ReplyCache, move_aside
from judges.cli import EXIT_INPUT, EXIT_OK, main
from judges.cli_common import EXIT_FAILED
from judges.cost import PriceTable, estimate_message_tokens
from judges.errors import CacheError, JudgesError
from judges.fourstage import validate_fourstage
from judges.judge import JudgeConfig, estimate_run, judge_frame, judge_requests
from judges.providers import AnthropicChat, OpenAIChat, make_provider
from judges.request import ChatRequest, Reply
from judges.runner import RunConfig, RunStats, request_key, run_requests
from tests.judges.helpers import FAST, PRICES, make_row
from tests.judges.judge_server import FakeLLMServer, FakeReply, default_behaviour


def frame_of(*rows: dict) -> pd.DataFrame:
    return validate_fourstage(pd.DataFrame(list(rows)), allow_empty_texts=True)


def openai_body(text: str | None, *, model: str, finish: str = "stop",
                usage: tuple[int, int] = (100, 20)) -> bytes:
    """A raw Chat Completions body (to set the model snapshot or odd text exactly)."""
    return json.dumps({
        "id": "c", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": finish}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}}).encode()


# --- 1. reasoning models ---------------------------------------------------------------------
def test_reasoning_model_profile_on_the_official_endpoint():
    provider = OpenAIChat("o4-mini")
    config = JudgeConfig(reasoning_effort="low")
    request = next(judge_requests(frame_of(make_row(0, 1)), config=config, provider=provider))
    body = provider.body(request)
    assert "temperature" not in body and body["max_completion_tokens"] == 4000
    assert body["reasoning_effort"] == "low" and "max_tokens" not in body
    assert provider.param_warnings(config.params(provider)) == [
        "temperature = 0.0 is not sent to openai:o4-mini: reasoning models accept only their "
        "default temperature (the API answers 400 to any other)."]
    plain = OpenAIChat("gpt-4o-mini")
    assert plain.body(next(judge_requests(frame_of(make_row(0, 1)), provider=plain)))[
        "max_completion_tokens"] == 400
    assert "reasoning_effort = 'low' is not sent" in plain.param_warnings(
        config.params(plain))[0]
    assert [OpenAIChat(m).reasoning for m in ("o1", "o3-mini", "gpt-5", "gpt-5-nano",
                                              "gpt-5-chat-latest", "gpt-4.1")] == [
        True, True, True, True, False, False]
    with pytest.raises(JudgesError, match="reasoning effort must be one of"):
        JudgeConfig(reasoning_effort="max")


def test_anthropic_names_the_parameters_it_does_not_send():
    warnings = AnthropicChat("claude-haiku-4-5").param_warnings(
        {"temperature": 0.0, "seed": 7, "max_tokens": 400})
    assert len(warnings) == 2
    assert warnings[0].startswith("temperature = 0.0 is not sent to anthropic:claude-haiku-4-5")
    assert "the Anthropic API has no seed" in warnings[1]


def test_reasoning_run_records_parameters_snapshot_and_cut_off_replies():
    def behaviour(call):
        assert "temperature" not in call.body  # the API would answer 400
        if "text 1" in call.prompt:  # reasoning used the whole budget: no visible text
            return FakeReply(raw=openai_body("", model="gpt-5-mini-2025-08-07", finish="length",
                                             usage=(100, 4000)))
        return FakeReply(raw=openai_body('{"explanation": "ok", "score": 4}',
                                         model="gpt-5-mini-2025-08-07"))

    frame = frame_of(make_row(0, 1), make_row(1, 1))
    with FakeLLMServer(behaviour) as srv:
        provider = make_provider("openai", model="gpt-5-mini", base_url=srv.openai_url)
        run = judge_frame(frame, provider, run_config=FAST,
                          config=JudgeConfig(reasoning_effort="minimal"))
        assert [c.body["max_tokens"] for c in srv.calls] == [4000, 4000]
        assert {c.body["reasoning_effort"] for c in srv.calls} == {"minimal"}
    judged = run.judged
    assert judged["ics"].tolist()[0] == 4 and pd.isna(judged["ics"].tolist()[1])
    assert judged[C.UNSCORED_REASON][1] == (
        "ics: empty reply: cut off at the token limit (4,000 output tokens spent, e.g. on "
        "reasoning); raise max tokens")
    assert json.loads(judged[C.JUDGE_PARAMS][0]) == {
        "json_schema": True, "max_tokens": 4000, "reasoning_effort": "minimal"}
    assert set(judged[C.JUDGE_MODEL_SNAPSHOT]) == {"gpt-5-mini-2025-08-07"}
    assert run.warnings and run.warnings[0].startswith("temperature = 0.0 is not sent")


# --- 2. partial files -----------------------------------------------------------------------
def test_score_judges_what_it_can_and_strict_refuses(tmp_path, capsys):
    rows = [make_row(i, (1, 2, 3, 4)[i % 4]) for i in range(8)]
    rows[0]["answer"] = ""  # stage 1, still waiting in a batch
    rows[5]["story_b"] = None  # stage 2: three judgments without a text
    path = tmp_path / "partial.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    out = tmp_path / "judged.csv"
    with FakeLLMServer() as srv:
        args = ["score", str(path), "--provider", "openai", "--model", "judge-x",
                "--base-url", srv.openai_url, "--no-cache", "--out", str(out), "--quiet"]
        assert main(args) == EXIT_OK
        assert srv.n_requests == 12 - 1 - 3
        assert main([*args, "--strict"]) == EXIT_INPUT
        assert srv.n_requests == 8
    err = capsys.readouterr().err
    assert "2 of 8 rows have an empty answer, story_b" in err
    assert "row 1 (id q0), stage 1: answer is empty." in err  # --strict: today's refusal
    judged = pd.read_csv(out, keep_default_na=False)
    assert judged[C.UNSCORED_REASON][0] == "ics: no answer to judge (answer empty)"
    assert judged[C.UNSCORED_REASON][5].count("no answer to judge (story_b empty)") == 3
    assert (judged[C.UNSCORED_REASON][[1, 2, 3, 4, 6, 7]] == "").all()


# --- 3. costs --------------------------------------------------------------------------------
def test_estimate_and_run_count_identical_requests_once(tmp_path):
    rows = [make_row(i, 1, text="same answer") for i in range(6)]
    for r in rows:  # six copies of one judgment (e.g. a file concatenated twice)
        r.update(id="q", question="Same question?")
    rows.append(make_row(9, 1))
    frame = frame_of(*rows)
    with FakeLLMServer(latency=0.2) as srv:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url)
        est = estimate_run(frame, provider, prices=PRICES)
        assert (est.judgments, est.calls, est.cached) == (7, 2, 5)
        stats = RunStats()
        run = judge_frame(frame, provider, run_config=RunConfig(concurrency=8, timeout=5),
                          prices=PRICES, stats=stats)
        assert srv.n_requests == 2  # the six in flight at once were sent once
    assert stats.shared == 5 and stats.cache_hits == 5
    assert run.judged["ics"].notna().all()
    usage = [(len(c.prompt) // 4, 20) for c in srv.calls]  # what the server reported
    paid = sum(PRICES.cost("local", "judge-x", i, o) for i, o in usage)
    assert stats.cost_usd == pytest.approx(paid)  # two calls paid, not seven
    assert run.judged[C.JUDGE_CACHED].sum() == 5


def test_cost_cap_message_reports_everything_spent():
    """Issue 43: with requests in flight when the cap was reached, the message said what
    had been spent at that moment ($0.44 of the $0.88 the run paid in the end)."""
    frame = frame_of(*[make_row(i, 1) for i in range(24)])
    request = next(judge_requests(frame))
    bound = PRICES.cost("local", "judge-x", estimate_message_tokens(request.messages), 400)
    with FakeLLMServer(latency=0.2) as srv:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url)
        run = judge_frame(frame, provider, run_config=RunConfig(concurrency=8, timeout=5),
                          prices=PRICES, max_cost_usd=10.5 * bound)
    assert srv.n_requests > 8  # the cap was reached with requests in flight
    assert run.stopped == (f"cost cap ${10.5 * bound:,.4f} reached "
                           f"(${run.stats.cost_usd:,.4f} spent in all, the requests in flight "
                           "when it was reached included); run again to go on from the cache")
    left = run.judged.loc[run.judged["ics"].isna(), C.UNSCORED_REASON]
    assert len(left) and left.str.startswith("ics: not judged: stopped: cost cap $").all()
    assert left.str.contains("more for the requests in flight").any()  # said while running


def test_cost_cap_stops_before_crossing_and_a_rerun_resumes(tmp_path):
    frame = frame_of(*[make_row(i, 1) for i in range(10)])
    request = next(judge_requests(frame))
    bound = PRICES.cost("local", "judge-x", estimate_message_tokens(request.messages), 400)
    cap = 3.5 * bound  # room for three worst-case requests, not four
    with FakeLLMServer() as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url)
        run = judge_frame(frame, provider, run_config=RunConfig(concurrency=1, timeout=5),
                          prices=PRICES, cache=cache, max_cost_usd=cap)
        first = srv.n_requests
        assert run.stopped and run.stopped.startswith("cost cap $")
        assert run.stats.cost_usd <= cap and first >= 3
        assert run.judged["ics"].notna().sum() == first
        left = run.judged.loc[run.judged["ics"].isna(), C.UNSCORED_REASON]
        assert left.str.startswith("ics: not judged: stopped: cost cap").all()
        again = judge_frame(frame, provider, run_config=RunConfig(concurrency=1, timeout=5),
                            prices=PRICES, cache=cache, max_cost_usd=100.0)
        assert srv.n_requests == 10 and again.stopped is None  # only the missing ones
    assert again.judged["ics"].notna().all()
    with pytest.raises(JudgesError, match="A cost cap needs a price"):
        judge_frame(frame, make_provider("openai", model="no-price", base_url=srv.openai_url),
                    prices=PRICES, max_cost_usd=1.0)


def test_cached_batch_reply_keeps_its_batch_price(tmp_path):
    request = ChatRequest(messages=(("user", "hello"),), params={"max_tokens": 5})
    with FakeLLMServer() as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url)
        cache.put(request_key(provider, request),
                  Reply("x", input_tokens=1_000_000, output_tokens=0, billed_share=0.5))
        (result,) = asyncio.run(run_requests([request], provider, cache=cache, prices=PRICES))
        assert srv.n_requests == 0
    assert result.cached and result.cost_usd == pytest.approx(0.5)  # $1/M input, half


# --- 4. fail fast ----------------------------------------------------------------------------
def test_wrong_base_url_stops_at_the_first_requests(tmp_path, capsys):
    srv = FakeLLMServer().start()
    url = srv.openai_url
    srv.stop()  # nothing listens there any more
    frame = frame_of(*[make_row(i, 1) for i in range(40)])
    provider = make_provider("openai", model="judge-x", base_url=url)
    stats = RunStats()
    run = judge_frame(frame, provider, run_config=RunConfig(concurrency=4, timeout=2,
                                                            max_retries=5), stats=stats)
    assert stats.http_attempts <= 4 and stats.retries == 0  # not 40 x 6
    assert "the first requests to http://127.0.0.1" in run.stopped
    assert "the right base URL?" in run.stopped
    reasons = run.judged[C.UNSCORED_REASON]
    assert reasons.str.startswith("ics: not judged: stopped:").sum() >= 36
    path = tmp_path / "in.csv"
    frame.to_csv(path, index=False)
    assert main(["score", str(path), "--provider", "openai", "--model", "judge-x",
                 "--base-url", url, "--no-cache", "--out", str(tmp_path / "o.csv"),
                 "--quiet"]) == EXIT_INPUT
    assert "error: the first requests to" in capsys.readouterr().err


def test_bad_key_is_sent_once_per_worker_not_for_every_row():
    def angry(call):
        return FakeReply(status=401, raw=b'{"error": {"message": "Incorrect API key"}}')

    frame = frame_of(*[make_row(i, 1) for i in range(30)])
    with FakeLLMServer(angry, latency=0.05) as srv:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url,
                                 api_key="sk-wrong-key-1234")
        run = judge_frame(frame, provider, run_config=RunConfig(concurrency=2, timeout=2))
        assert srv.n_requests <= 2
    assert "AuthenticationError (HTTP 401)" in run.stopped and "sk-wrong" not in run.stopped


# --- 5. raw replies, unparsed replies asked again --------------------------------------------
def test_raw_replies_are_kept_and_unparsed_ones_asked_again(tmp_path):
    answers = iter(["I would say a four.", '{"explanation": "fine", "score": 4}'])

    def behaviour(call):
        return FakeReply(text=next(answers, '{"explanation": "x", "score": 2}'))

    frame = frame_of(make_row(0, 1))
    with FakeLLMServer(behaviour) as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url)
        first = judge_frame(frame, provider, cache=cache, run_config=FAST).judged
        assert first[C.raw_column("ics")][0] == "I would say a four."
        assert first[C.UNSCORED_REASON][0] == "ics: no JSON object in the reply"
        reuse = judge_frame(frame, provider, cache=cache, run_config=FAST,
                            config=JudgeConfig(reuse_unparsed=True)).judged
        assert srv.n_requests == 1 and pd.isna(reuse["ics"][0])  # reused as asked
        est = estimate_run(frame, provider, cache=cache, prices=PRICES)
        assert est.calls == 1  # the unparsed reply will be asked again
        stats = RunStats()
        second = judge_frame(frame, provider, cache=cache, run_config=FAST, stats=stats).judged
        assert srv.n_requests == 2 and stats.reasked == 1 and second["ics"][0] == 4
        judge_frame(frame, provider, cache=cache, run_config=FAST)
        assert srv.n_requests == 2  # the parsed reply replaced the unparsed one
    assert second[C.raw_column("ics")][0] == '{"explanation": "fine", "score": 4}'


# --- issue 20 item 4: hostile text -----------------------------------------------------------
def test_lone_surrogates_are_stored_and_written_safely(tmp_path):
    text = '{"explanation": "bad \\ud800 char", "score": 3}'  # JSON escape of a lone surrogate
    raw = openai_body(None, model="judge-x").replace(b'"content": null',
                                                     b'"content": ' + json.dumps(text).encode())
    raw = raw.replace(b"\\\\ud800", b"\\ud800")
    frame = frame_of(make_row(0, 1))
    with FakeLLMServer(lambda call: FakeReply(raw=raw)) as srv, \
            ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url)
        judged = judge_frame(frame, provider, cache=cache, run_config=FAST).judged
        assert len(cache) == 1  # stored, not lost after being paid
        judge_frame(frame, provider, cache=cache, run_config=FAST)
        assert srv.n_requests == 1
    assert judged["ics"][0] == 3 and judged[C.explanation_column("ics")][0] == "bad \ufffd char"
    judged.to_csv(tmp_path / "judged.csv", index=False)  # no UnicodeEncodeError
    assert "\ufffd" in (tmp_path / "judged.csv").read_text(encoding="utf-8")
    assert Reply("a\ud800b\ud83d\ude00").text == "a\ufffdb\U0001f600"


# --- issue 20 item 3: corrupt and foreign caches ---------------------------------------------
@pytest.mark.parametrize("kind", ["garbage", "truncated", "foreign", "folder"])
def test_unusable_cache_files_get_one_clear_message_and_can_be_moved_aside(tmp_path, kind,
                                                                           capsys):
    path = tmp_path / "c.sqlite"
    if kind == "garbage":
        path.write_bytes(b"this is not a database" * 100)
    elif kind == "truncated":
        with ReplyCache(path) as cache:
            for i in range(300):
                cache.put(f"k{i}", Reply("x" * 200))
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    elif kind == "foreign":
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE replies (id INTEGER, payload BLOB)")
    else:
        path.mkdir()
    with pytest.raises(CacheError, match=r"The reply cache .*c\.sqlite cannot be used") as info:
        ReplyCache(path)
    assert "--reset-cache" in str(info.value) and info.value.path == str(path)
    infile = tmp_path / "in.csv"
    frame_of(make_row(0, 1)).to_csv(infile, index=False)
    with FakeLLMServer() as srv:
        args = ["score", str(infile), "--provider", "openai", "--model", "judge-x",
                "--base-url", srv.openai_url, "--cache", str(path), "--out",
                str(tmp_path / "o.csv"), "--quiet"]
        assert main(args) == EXIT_INPUT
        assert srv.n_requests == 0
        if kind == "folder":
            return  # a folder is not moved: the user chooses another --cache
        assert main([*args, "--reset-cache"]) == EXIT_OK
    err = capsys.readouterr().err
    assert "cannot be used" in err and "The unusable cache was moved to" in err
    moved = [p for p in tmp_path.glob("c.sqlite.unusable-*")
             if not p.name.endswith(("-wal", "-shm"))]
    assert len(moved) == 1 and moved[0].stat().st_size > 0  # kept, not deleted
    with ReplyCache(path) as cache:
        assert len(cache) == 1


def test_a_bad_row_is_skipped_and_asked_again(tmp_path):
    request = ChatRequest(messages=(("user", "hello"),))
    with FakeLLMServer() as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url)
        key = request_key(provider, request)
        cache._conn.execute("INSERT INTO replies (key, reply) VALUES (?, ?)", (key, "{not json"))
        (result,) = asyncio.run(run_requests([request], provider, cache=cache))
        assert srv.n_requests == 1 and result.status == "ok" and not result.cached
        assert cache.get(key) is not None


def test_move_aside_keeps_the_old_file():
    assert move_aside("/nonexistent/nothing.sqlite") is None


# --- issue 20 item 5: two runs on one cache --------------------------------------------------
def test_two_concurrent_runs_on_one_cache_pay_once(tmp_path):
    frame = frame_of(*[make_row(i, (1, 2)[i % 2]) for i in range(12)])  # 6 + 18 = 24 calls
    path = tmp_path / "shared.sqlite"
    runs: list = []
    errors: list = []
    with FakeLLMServer(default_behaviour, latency=0.3) as srv:
        def one() -> None:
            try:
                with ReplyCache(path) as cache:  # its own connection, like another process
                    provider = make_provider("openai", model="judge-x",
                                             base_url=srv.openai_url)
                    runs.append(judge_frame(frame, provider, cache=cache, prices=PRICES,
                                            run_config=RunConfig(concurrency=6, timeout=10)))
            except Exception as exc:  # a thread's exception would otherwise vanish
                errors.append(exc)

        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == [] and len(runs) == 2
        assert srv.n_requests == 24  # not 48
    assert all(r.judged[list(C.METRICS)].notna().sum().sum() == 24 for r in runs)
    assert sum(r.stats.http_attempts for r in runs) == 24
    pd.testing.assert_frame_equal(runs[0].judged[list(C.METRICS)],
                                  runs[1].judged[list(C.METRICS)])
    with ReplyCache(path) as cache:
        assert cache._conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0


class _FirstLookMisses(ReplyCache):
    """The race's window: each key's first look misses, as when another run stores its
    reply (and releases its claim) just after this run looked and before it claims."""

    def __init__(self, path) -> None:
        super().__init__(path)
        self.looked: set[str] = set()

    def get(self, key):  # noqa: ANN001, ANN201 (ReplyCache.get's signature)
        if key not in self.looked:
            self.looked.add(key)
            return None
        return super().get(key)


def test_a_reply_stored_between_the_look_and_the_claim_is_not_paid_twice(tmp_path):
    frame = frame_of(*[make_row(i, (1, 2)[i % 2]) for i in range(12)])  # 24 calls
    path = tmp_path / "shared.sqlite"
    with FakeLLMServer(default_behaviour) as srv:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url)
        with ReplyCache(path) as cache:
            first = judge_frame(frame, provider, cache=cache, prices=PRICES)
        assert srv.n_requests == 24
        with _FirstLookMisses(path) as cache:
            again = judge_frame(frame, provider, cache=cache, prices=PRICES)
        assert srv.n_requests == 24  # the claim found the stored replies: none sent again
    assert again.stats.http_attempts == 0
    pd.testing.assert_frame_equal(first.judged[list(C.METRICS)],
                                  again.judged[list(C.METRICS)])
    with ReplyCache(path) as cache:
        assert cache._conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0


def test_exit_code_of_a_cost_cap_is_three(tmp_path, capsys):
    infile = tmp_path / "in.csv"
    frame_of(*[make_row(i, 1) for i in range(5)]).to_csv(infile, index=False)
    prices = tmp_path / "prices.yaml"
    prices.write_text("sections:\n  local:\n    judge-x: {input: 1000, output: 1000}\n")
    with FakeLLMServer() as srv:
        code = main(["score", str(infile), "--provider", "openai", "--model", "judge-x",
                     "--base-url", srv.openai_url, "--no-cache", "--prices", str(prices),
                     "--max-cost", "0.5", "--concurrency", "1", "--out",
                     str(tmp_path / "o.csv"), "--quiet"])
        assert srv.n_requests == 0  # even one request could cost more than $0.50
    assert code == EXIT_FAILED
    assert "error: cost cap $0.5000 reached" in capsys.readouterr().err
    assert PriceTable.load(prices).lookup("local", "judge-x") is not None


def test_input_texts_with_lone_surrogates_are_sent_and_written_safely(tmp_path):
    row = make_row(0, 1, text="answer with a broken \ud800 character")
    # pandas' string dtype refuses such text; an object column (a frame built in Python)
    # can hold it
    frame = validate_fourstage(pd.DataFrame([row], dtype=object))
    with FakeLLMServer() as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url)
        judged = judge_frame(frame, provider, cache=cache, run_config=FAST).judged
        assert "broken \ufffd character" in srv.calls[0].prompt
    assert judged["ics"].notna().all()
    assert judged["answer"][0] == "answer with a broken \ufffd character"
    judged.to_csv(tmp_path / "j.csv", index=False)
    judged.to_json(tmp_path / "j.jsonl", orient="records", lines=True, force_ascii=False)


def test_answer_command_names_parameters_anthropic_does_not_take(capsys):
    from judges.answer import questions_sample_path

    with FakeLLMServer() as srv:
        assert main(["answer", str(questions_sample_path()), "--provider", "anthropic",
                     "--model", "c", "--base-url", srv.url, "--temperature", "0,0.7",
                     "--seed", "1", "--estimate", "--no-cache", "--out", "x.csv"]) == EXIT_OK
        assert srv.n_requests == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("warning:")] == [
        "warning: temperature = 0.0 is not sent to anthropic:c: Anthropic API version "
        "2026-10-21 rejects it; the model's default applies.",
        "warning: seed = 1 is not sent to anthropic:c: the Anthropic API has no seed.",
        "warning: temperature = 0.7 is not sent to anthropic:c: Anthropic API version "
        "2026-10-21 rejects it; the model's default applies."]
