"""The generic request runner (judges/runner.py): concurrency, retries, cache, cost."""

from __future__ import annotations

import asyncio
import random
import threading
from collections import defaultdict

import pytest

from judges.cache import ReplyCache
from judges.providers import make_provider
from judges.request import ChatRequest
from judges.runner import RunConfig, RunStats, request_key, run_requests, run_stream
from tests.judges.helpers import FAST, PRICES
from tests.judges.judge_server import FakeLLMServer, FakeReply


def requests(n: int, prefix: str = "r") -> list[ChatRequest]:
    return [ChatRequest(messages=(("user", f"{prefix} {i}"),), params={"temperature": 0.0},
                        key_parts={"task": "test"}, tag=i) for i in range(n)]


def run(reqs, provider, **kw):
    async def go():
        try:
            return await run_requests(reqs, provider, **kw)
        finally:
            await provider.aclose()
    return asyncio.run(go())


def scripted(script: dict[str, list[FakeReply]], default: FakeReply | None = None):
    """A behaviour replying from a per-prompt script (in order), then ``default``."""
    seen: dict[str, int] = defaultdict(int)
    lock = threading.Lock()

    def behaviour(call):
        prompt = call.body["messages"][-1]["content"]
        with lock:
            k = seen[prompt]
            seen[prompt] += 1
        replies = script.get(prompt, [])
        return replies[k] if k < len(replies) else (default or FakeReply.judgement(3))
    return behaviour


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_429_with_retry_after_is_honoured(api):
    behaviour = scripted({"r 0": [FakeReply.error(429, retry_after=0.3)]})
    with FakeLLMServer(behaviour) as srv:
        provider = make_provider(api, model="judge-x",
                                 base_url=srv.openai_url if api == "openai" else srv.url)
        stats = RunStats()
        [result] = run(requests(1), provider, config=FAST, stats=stats)
        t0, t1 = srv.calls[0].t, srv.calls[1].t
    assert result.status == "ok" and result.attempts == 2
    assert t1 - t0 >= 0.3  # waited at least Retry-After
    assert t1 - t0 < 0.3 + 0.5
    assert (stats.http_attempts, stats.retries, stats.ok) == (2, 1, 1)


def test_retry_after_pauses_the_other_workers():
    # r 0 gets a 429 asking for 0.4 s; r 1 (queued behind it on a 1-worker pool would be
    # trivial), so use 2 workers and a third request that starts after the 429.
    behaviour = scripted({"r 0": [FakeReply.error(429, retry_after=0.4)]},
                         default=FakeReply.judgement(3, delay=0.05))
    with FakeLLMServer(behaviour) as srv:
        provider = make_provider("openai", model="m", base_url=srv.openai_url)
        run(requests(3), provider, config=RunConfig(concurrency=2, timeout=2, backoff_base=0.01))
        calls = {c.body["messages"][0]["content"]: [] for c in srv.calls}
        for c in srv.calls:
            calls[c.body["messages"][0]["content"]].append(c.t)
    first_429 = calls["r 0"][0]
    assert calls["r 2"][0] - first_429 >= 0.35  # r 2 waited for the pause too


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_5xx_and_timeouts_are_retried_with_backoff(api):
    behaviour = scripted({"r 0": [FakeReply.error(500), FakeReply.error(503)],
                          "r 1": [FakeReply.judgement(2, delay=1.5)]})
    with FakeLLMServer(behaviour) as srv:
        provider = make_provider(api, model="m",
                                 base_url=srv.openai_url if api == "openai" else srv.url)
        config = RunConfig(concurrency=2, timeout=0.4, max_retries=3, backoff_base=0.05,
                           backoff_max=0.1)
        results = run(requests(2), provider, config=config)
    assert [r.status for r in results] == ["ok", "ok"]
    assert [r.attempts for r in results] == [3, 2]


def test_retries_give_up_and_report_the_last_error():
    with FakeLLMServer(lambda c: FakeReply.error(500)) as srv:
        provider = make_provider("openai", model="m", base_url=srv.openai_url)
        [result] = run(requests(1), provider, config=FAST)
        n = srv.n_requests
    assert result.status == "error" and result.reply is None
    assert n == FAST.max_retries + 1 == result.attempts
    assert "InternalServerError (HTTP 500)" in result.error
    assert result.error.endswith(f"(gave up after {n} attempts)")


def test_permanent_errors_are_not_retried():
    with FakeLLMServer(lambda c: FakeReply.error(400)) as srv:
        provider = make_provider("openai", model="m", base_url=srv.openai_url)
        [result] = run(requests(1), provider, config=FAST)
        assert srv.n_requests == 1
    assert result.status == "error" and result.attempts == 1
    assert "HTTP 400" in result.error


def test_backoff_has_jitter_within_bounds():
    config = RunConfig(backoff_base=1.0, backoff_max=8.0)
    rng = random.Random(1)
    for attempt, (low, high) in enumerate([(0.5, 1), (1, 2), (2, 4), (4, 8), (4, 8)]):
        draws = [config.backoff(attempt, rng) for _ in range(200)]
        assert low <= min(draws) and max(draws) <= high
        assert max(draws) - min(draws) > 0.3 * (high - low)  # spread, not a constant


def test_concurrency_is_bounded_and_used():
    with FakeLLMServer(latency=0.1) as srv:
        provider = make_provider("openai", model="m", base_url=srv.openai_url)
        results = run(requests(40), provider, config=RunConfig(concurrency=5, timeout=5))
    assert len(results) == 40 and all(r.status == "ok" for r in results)
    assert srv.max_in_flight == 5


def test_results_come_back_in_input_order_with_tags():
    with FakeLLMServer(lambda c: FakeReply.judgement(1, delay=0.05 * (int(
            c.body["messages"][0]["content"].split()[1]) % 3))) as srv:
        provider = make_provider("openai", model="m", base_url=srv.openai_url)
        results = run(requests(9), provider, config=FAST)
    assert [r.request.tag for r in results] == list(range(9))


def test_cache_hits_make_no_request_and_errors_are_not_cached(tmp_path):
    behaviour = scripted({"r 1": [FakeReply.error(400)]})
    with FakeLLMServer(behaviour) as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        provider = make_provider("openai", model="m", base_url=srv.openai_url)
        first = run(requests(3), provider, config=FAST, cache=cache)
        assert [r.status for r in first] == ["ok", "error", "ok"]
        assert len(cache) == 2 and srv.n_requests == 3
        stats = RunStats()
        second = run(requests(3), provider, config=FAST, cache=cache, stats=stats)
        assert srv.n_requests == 4  # only the failed one was asked again
    assert [r.status for r in second] == ["ok", "ok", "ok"]
    assert [r.cached for r in second] == [True, False, True]
    assert [r.attempts for r in second] == [0, 1, 0]
    assert second[0].reply == first[0].reply
    assert (stats.cache_hits, stats.http_attempts) == (2, 1)


def test_cache_key_has_output_affecting_parts_only(tmp_path):
    base = ChatRequest(messages=(("user", "x"),), params={"temperature": 0.0},
                       key_parts={"rubric": "a@1"})
    p1 = make_provider("openai", model="m", base_url="http://127.0.0.1:1/v1", api_key="k1")
    p1_other_key = make_provider("openai", model="m", base_url="http://127.0.0.1:1/v1",
                                 api_key="k2")
    key = request_key(p1, base)
    assert request_key(p1_other_key, base) == key  # keys never enter the key
    same_but_tag = ChatRequest(messages=base.messages, params=base.params,
                               key_parts=base.key_parts, tag="something")
    assert request_key(p1, same_but_tag) == key
    variants = [
        ChatRequest(messages=(("user", "y"),), params=base.params, key_parts=base.key_parts),
        ChatRequest(messages=base.messages, params={"temperature": 0.5}, key_parts=base.key_parts),
        ChatRequest(messages=base.messages, params=base.params, key_parts={"rubric": "a@2"}),
    ]
    assert len({request_key(p1, v) for v in variants} | {key}) == 4
    other_model = make_provider("openai", model="m2", base_url="http://127.0.0.1:1/v1")
    other_url = make_provider("openai", model="m", base_url="http://127.0.0.1:2/v1")
    anthropic = make_provider("anthropic", model="m", base_url="http://127.0.0.1:1/v1")
    assert len({key, request_key(other_model, base), request_key(other_url, base),
                request_key(anthropic, base)}) == 4
    # anthropic does not send temperature, so it does not split its cache
    hot = ChatRequest(messages=base.messages, params={"temperature": 0.9},
                      key_parts=base.key_parts)
    assert request_key(anthropic, hot) == request_key(anthropic, base)


def test_cost_arithmetic_per_reply_and_in_stats():
    with FakeLLMServer(lambda c: FakeReply.judgement(3, usage=(1000, 200))) as srv:
        provider = make_provider("openai", model="judge-x", base_url=srv.openai_url)
        stats = RunStats()
        results = run(requests(3), provider, config=FAST, prices=PRICES, stats=stats)
    # 1000 input tokens at $1/M + 200 output tokens at $2/M = $0.0014 per reply
    assert [r.cost_usd for r in results] == pytest.approx([0.0014] * 3)
    assert stats.cost_usd == pytest.approx(0.0042)
    assert (stats.input_tokens, stats.output_tokens, stats.unpriced) == (3000, 600, 0)


def test_unknown_price_is_none_not_zero():
    with FakeLLMServer() as srv:
        provider = make_provider("openai", model="unpriced-model", base_url=srv.openai_url)
        stats = RunStats()
        results = run(requests(2), provider, config=FAST, prices=PRICES, stats=stats)
    assert [r.cost_usd for r in results] == [None, None]
    assert stats.unpriced == 2 and stats.cost_usd == 0.0


def test_cancel_keeps_finished_and_marks_the_rest():
    cancel = threading.Event()

    async def go(provider):
        out = []
        async for result in run_stream(requests(30), provider, config=RunConfig(
                concurrency=2, timeout=5), cancel=cancel):
            out.append(result)
            if len(out) == 4:
                cancel.set()
        await provider.aclose()
        return out

    with FakeLLMServer(latency=0.05) as srv:
        provider = make_provider("openai", model="m", base_url=srv.openai_url)
        out = asyncio.run(go(provider))
        sent = srv.n_requests
    assert len(out) == 30
    ok = [r for r in out if r.status == "ok"]
    cancelled = [r for r in out if r.status == "cancelled"]
    assert len(ok) == sent  # in-flight requests finished and were kept
    assert 4 <= len(ok) <= 6
    assert len(cancelled) == 30 - len(ok)
    assert {r.error for r in cancelled} == {"cancelled before it was sent"}


def test_cancel_during_backoff_stops_waiting():
    cancel = threading.Event()
    with FakeLLMServer(lambda c: FakeReply.error(429, retry_after=30)) as srv:
        provider = make_provider("openai", model="m", base_url=srv.openai_url)
        threading.Timer(0.3, cancel.set).start()
        [result] = run(requests(1), provider, config=FAST, cancel=cancel)
    assert result.status == "cancelled" and result.attempts == 1
    assert result.error == "cancelled while waiting to retry"


def test_run_config_validation():
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        RunConfig(concurrency=0)
    with pytest.raises(ValueError, match="timeout must be positive"):
        RunConfig(timeout=0)
    with pytest.raises(ValueError, match="Unknown request parameter"):
        ChatRequest(messages=(("user", "x"),), params={"top_k": 3})
