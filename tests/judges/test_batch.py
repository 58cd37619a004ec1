"""Provider batch APIs (judges/batch.py): the real SDK clients against loopback stand-ins."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from analysis.judge_stats import columns as C
from judges.batch import (
    BATCH_COLUMNS,
    BatchConfig,
    BatchError,
    BatchMonitor,
    BatchStore,
    batch_api,
    batch_stream,
    cancel_batch,
    judge_frame_batch_async,
    refresh_batches,
    stream_context,
)
from judges.cache import ReplyCache
from judges.context import RunContext
from judges.errors import ProviderConfigError
from judges.fourstage import validate_fourstage
from judges.judge import JudgeConfig, judge_frame, judge_requests
from judges.providers import ChatProvider, make_provider
from judges.runner import RunStats, request_key
from tests.judges.batch_server import EXPIRED, FakeBatchServer
from tests.judges.helpers import FAST, PRICES, ROOT, make_row
from tests.judges.judge_server import Call, FakeReply, default_behaviour

FASTB = BatchConfig(poll_interval=0.01, backoff_base=0.01, backoff_max=0.02)
APIS = ["openai", "anthropic"]


@pytest.fixture
def bserver():
    srv = FakeBatchServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def frame() -> pd.DataFrame:
    """One row per stage: 6 judge calls."""
    return validate_fourstage(pd.DataFrame([make_row(i, s) for i, s in enumerate((1, 2, 3, 4))]))


def provider_for(srv: FakeBatchServer, api: str) -> ChatProvider:
    return make_provider(api, model="judge-x", base_url=srv.openai_url if api == "openai"
                         else srv.url)


def run_batch(frame, provider, cache, **kw):
    return asyncio.run(judge_frame_batch_async(frame, provider, cache=cache,
                                               batch=kw.pop("batch", FASTB),
                                               prices=PRICES, **kw))


def score_table(judged: pd.DataFrame) -> list:
    return judged[list(C.METRICS)].astype("Float64").fillna(-1).to_numpy().tolist()


@pytest.mark.parametrize("api", APIS)
def test_batch_judgments_match_a_live_run_at_half_the_cost(api, bserver, frame, tmp_path):
    live = judge_frame(frame, provider_for(bserver, api), run_config=FAST, prices=PRICES)
    live_bodies = {json.dumps(c.body["messages"]): c.body for c in bserver.calls}
    assert len(live_bodies) == 6
    bserver.calls.clear()
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        run = run_batch(frame, provider_for(bserver, api), cache)
    # Same prompts and parameters as the live calls, so the same (hashed) scores.
    assert len(bserver.calls) == 6
    for call in bserver.calls:
        assert call.body == live_bodies[json.dumps(call.body["messages"])]
    assert score_table(run.judged) == score_table(live.judged)
    assert run.judged[C.UNSCORED_REASON].tolist() == [""] * 4
    assert run.judged[C.JUDGE_COST_USD].to_numpy() == pytest.approx(
        live.judged[C.JUDGE_COST_USD].to_numpy() * 0.5)
    assert run.stats.cost_usd == pytest.approx(live.stats.cost_usd * 0.5)
    assert run.judged[C.JUDGE].iloc[0] == f"{api}:judge-x (batch) [fourstage-ics@2.0]"
    assert bserver.counts["create"] == 1
    assert bserver.counts["upload"] == (1 if api == "openai" else 0)
    assert bserver.counts["download"] == 1  # OpenAI: output file only, no error file
    assert bserver.counts["retrieve"] >= 2  # in progress once, then ended
    assert not run.cancelled


@pytest.mark.parametrize("api", APIS)
def test_partial_failures_are_resubmitted_or_reported(api, frame, tmp_path):
    seen: dict[str, int] = {}

    def behaviour(call: Call) -> FakeReply:
        text = json.dumps(call.body["messages"])
        seen[text] = seen.get(text, 0) + 1
        if "Question 0?" in text and seen[text] == 1:
            return FakeReply.error(500)          # transient: re-submitted, then fine
        if "Neutral?" in text and seen[text] == 1:
            return EXPIRED                       # expired: re-submitted, then fine
        if "Question 3?" in text:
            return FakeReply.error(400)          # permanent: reported
        return default_behaviour(call)

    with FakeBatchServer(behaviour) as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        monitor = BatchMonitor()
        run = run_batch(frame, provider_for(srv, api), cache, monitor=monitor)
        assert srv.counts["create"] == 2
        resubmitted = srv.batch_requests[sorted(srv.batch_requests)[1]]
    assert len(resubmitted) == 2
    assert monitor.submitted == 6 and monitor.resubmitted == 2
    assert monitor.collected == 5 and monitor.failed == 1 and monitor.pending == 0
    j = run.judged
    assert j[C.ICS].iloc[0] in range(1, 6) and j[C.SBAS].iloc[2] in range(1, 6)
    assert pd.isna(j[C.ICS].iloc[3])
    reason = j[C.UNSCORED_REASON].iloc[3]
    assert reason.startswith("ics: request failed: batch ")
    assert ("HTTP 400" in reason) if api == "openai" else ("invalid_request_error" in reason)
    assert run.stats.errors == 1 and run.stats.ok == 5


@pytest.mark.parametrize("api", APIS)
def test_no_resubmission_when_max_resubmits_is_zero(api, frame, tmp_path):
    def behaviour(call: Call) -> FakeReply:
        return EXPIRED if "Question 0?" in json.dumps(call.body) else default_behaviour(call)

    with FakeBatchServer(behaviour) as srv, ReplyCache(tmp_path / "c.sqlite") as cache:
        config = BatchConfig(poll_interval=0.01, max_resubmits=0)
        run = run_batch(frame, provider_for(srv, api), cache, batch=config)
        assert srv.counts["create"] == 1
    expected = "batch_expired" if api == "openai" else "request expired"
    assert expected in run.judged[C.UNSCORED_REASON].iloc[0]
    assert run.judged[C.UNSCORED_REASON].iloc[1:].tolist() == ["", "", ""]


@pytest.mark.parametrize("api", APIS)
def test_a_stopped_run_resumes_by_polling_the_stored_batch(api, bserver, frame, tmp_path):
    path = tmp_path / "c.sqlite"
    bserver.polls_before_done = 3
    with ReplyCache(path) as cache:
        first = run_batch(frame, provider_for(bserver, api), cache,
                          batch=BatchConfig(poll_interval=0.01, max_wait=0))
    assert first.cancelled
    assert first.judged[list(C.METRICS)].notna().sum().sum() == 0
    assert first.judged[C.UNSCORED_REASON].iloc[0].startswith(
        "ics: not judged yet: pending: waiting in batch ")
    assert bserver.counts["create"] == 1
    with BatchStore(path) as store:
        (stored,) = store.batches(open_only=True)
        assert stored.n_requests == 6 and not stored.collected and stored.api == api
        items = store.items(stored.batch_id)
    provider = provider_for(bserver, api)
    assert set(items) == {request_key(provider, r) for r in judge_requests(frame)}
    # A new process (new cache and store objects) finds the batch and waits for it.
    with ReplyCache(path) as cache:
        monitor = BatchMonitor()
        second = run_batch(frame, provider, cache, monitor=monitor)
    assert bserver.counts["create"] == 1  # nothing submitted twice
    assert monitor.resumed == 6 and monitor.submitted == 0 and monitor.collected == 6
    assert not second.cancelled
    assert second.judged[C.UNSCORED_REASON].tolist() == [""] * 4
    with BatchStore(path) as store:
        assert store.batches(open_only=True) == []
        assert store.item_states(stored.batch_id)["state"].tolist() == ["succeeded"] * 6
    # A third run is served by the cache alone, still priced at the batch rate.
    calls = dict(bserver.counts)
    with ReplyCache(path) as cache:
        third = run_batch(frame, provider, cache)
    assert bserver.counts == calls
    assert third.judged[C.JUDGE_CACHED].sum() == 6
    assert score_table(third.judged) == score_table(second.judged)
    assert third.judged[C.JUDGE_COST_USD].to_numpy() == pytest.approx(
        second.judged[C.JUDGE_COST_USD].to_numpy())


def test_a_killed_cli_process_does_not_submit_again(bserver, frame, tmp_path):
    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    cache_path = tmp_path / "c.sqlite"
    bserver.polls_before_done = 10_000  # never ends while the first process watches
    cmd = [sys.executable, "-m", "judges", "score", str(src), "--provider", "openai",
           "--model", "judge-x", "--base-url", bserver.openai_url, "--cache", str(cache_path),
           "--batch", "--poll-interval", "30", "--out", str(tmp_path / "out.csv"), "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if cache_path.exists():
                con = sqlite3.connect(cache_path)
                try:
                    n = con.execute("SELECT COUNT(*) FROM batch_items").fetchone()[0]
                except sqlite3.OperationalError:
                    n = 0
                con.close()
                if n == 6:
                    break
            time.sleep(0.05)
        assert proc.poll() is None
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert bserver.counts["create"] == 1
    bserver.polls_before_done = 0
    with ReplyCache(cache_path) as cache:
        run = run_batch(frame, provider_for(bserver, "openai"), cache)
    assert bserver.counts["create"] == 1
    assert run.judged[C.UNSCORED_REASON].tolist() == [""] * 4


def test_batch_level_failure_is_reported_not_resubmitted(bserver, frame, tmp_path):
    bserver.openai_final_status = "failed"
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        run = run_batch(frame, provider_for(bserver, "openai"), cache)
    assert bserver.counts["create"] == 1
    reasons = run.judged[C.UNSCORED_REASON].tolist()
    assert all("no result (batch failed: the input file is malformed)" in r for r in reasons)
    assert run.stats.errors == 6


@pytest.mark.parametrize("api", APIS)
def test_create_is_retried_after_429_with_retry_after(api, bserver, frame, tmp_path):
    bserver.fail_creates = [FakeReply.error(429, retry_after=0.05),
                            FakeReply.error(503)]
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        start = time.monotonic()
        run = run_batch(frame, provider_for(bserver, api), cache)
    assert time.monotonic() - start >= 0.05
    assert bserver.counts["create"] == 1
    assert run.judged[C.UNSCORED_REASON].tolist() == [""] * 4


def test_a_rejected_batch_raises_a_clear_error(bserver, frame, tmp_path):
    bserver.fail_creates = [FakeReply.error(400)]
    with ReplyCache(tmp_path / "c.sqlite") as cache, pytest.raises(BatchError) as err:
        run_batch(frame, provider_for(bserver, "anthropic"), cache)
    assert "anthropic batch API at http://127.0.0.1" in str(err.value)
    assert "HTTP 400" in str(err.value)


@pytest.mark.parametrize("api", APIS)
def test_refresh_collects_and_cancel_stops_stored_batches(api, bserver, frame, tmp_path):
    path = tmp_path / "c.sqlite"
    bserver.polls_before_done = 1
    with ReplyCache(path) as cache:
        run_batch(frame, provider_for(bserver, api), cache,
                  batch=BatchConfig(poll_interval=0.01, max_wait=0))
        two = validate_fourstage(pd.DataFrame([make_row(9, 1, text="other")]))
        run_batch(two, provider_for(bserver, api), cache,
                  batch=BatchConfig(poll_interval=0.01, max_wait=0))
    with ReplyCache(path) as cache, BatchStore(path) as store:
        first, second = sorted(b.batch_id for b in store.batches(open_only=True))
        status = asyncio.run(cancel_batch(store, provider_for(bserver, api), second))
        assert status.status in ("cancelling", "canceling")
        assert len(cache) == 0
        statuses = asyncio.run(refresh_batches(store, cache, lambda b: provider_for(bserver, api),
                                               config=FASTB))
        assert [s.ended for s in statuses] == [True, True]
        assert len(cache) == 6
        assert store.batches(open_only=True) == []
        cancelled = store.item_states(second)
        assert cancelled["state"].tolist() == ["failed"]
        assert cancelled["error"].iloc[0] in ("batch_cancelled: cancelled", "request canceled")
        table = store.table(open_only=False)
    assert list(table.columns) == list(BATCH_COLUMNS)
    assert table["collected"].tolist() == [True, True]
    assert sorted(table["n_requests"]) == [1, 6]
    # The collected replies serve the next run from the cache: no new batch.
    with ReplyCache(path) as cache:
        run = run_batch(frame, provider_for(bserver, api), cache)
    assert bserver.counts["create"] == 2
    assert run.judged[C.JUDGE_CACHED].sum() == 6


def test_duplicate_requests_are_sent_once(bserver, tmp_path):
    rows = [make_row(0, 1, text="same"), make_row(0, 1, text="same")]
    frame = validate_fourstage(pd.DataFrame(rows))
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        run = run_batch(frame, provider_for(bserver, "anthropic"), cache)
    (lines,) = bserver.batch_requests.values()
    assert len(lines) == 1
    assert run.judged[C.ICS].tolist() == [run.judged[C.ICS].iloc[0]] * 2
    assert run.stats.ok == 2
    # Spend counts what is billed: one request at the batch rate, not two.
    reply_usage = run.judged[[C.JUDGE_INPUT_TOKENS, C.JUDGE_OUTPUT_TOKENS]].iloc[0]
    billed = (reply_usage.iloc[0] * 1.0 + reply_usage.iloc[1] * 2.0) / 1e6 * 0.5
    assert run.stats.cost_usd == pytest.approx(billed) and run.stats.cache_hits == 1
    # A later live run served from the cache keeps the batch price of those replies.
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        live = judge_frame(frame, provider_for(bserver, "anthropic"), cache=cache,
                           prices=PRICES, run_config=FAST)
    assert live.stats.http_attempts == 0
    assert live.judged[C.JUDGE_COST_USD].tolist() == pytest.approx([billed, billed])


def test_large_submissions_are_split(bserver, frame, tmp_path):
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        run = run_batch(frame, provider_for(bserver, "openai"), cache,
                        batch=BatchConfig(poll_interval=0.01, max_requests=4))
    assert sorted(len(v) for v in bserver.batch_requests.values()) == [2, 4]
    assert run.judged[C.UNSCORED_REASON].tolist() == [""] * 4


def test_stream_context_needs_a_cache_and_a_batch_provider(bserver):
    request = next(judge_requests(
        validate_fourstage(pd.DataFrame([make_row(0, 1)])), config=JudgeConfig()))

    async def drain(**kw):
        judge = provider_for(bserver, "openai")
        try:
            return [r async for r in stream_context(RunContext.of(**kw), [request], judge,
                                                    purpose="judge")]
        finally:
            await judge.aclose()

    with pytest.raises(BatchError, match="needs the reply cache"):
        asyncio.run(drain(batch=FASTB, cache=None))
    live = asyncio.run(drain(batch=None, run_config=FAST))
    assert live[0].status == "ok" and live[0].attempts == 1

    class Other(ChatProvider):
        name = "other"

        def _make_client(self, api_key):  # pragma: no cover - never called
            return None

        async def complete(self, request, *, timeout):  # pragma: no cover
            raise NotImplementedError

    with pytest.raises(ProviderConfigError, match="no batch API"):
        batch_api(Other("m"))


def test_batch_stream_counts_tokens_and_cost_in_stats(bserver, frame, tmp_path):
    stats = RunStats()
    requests = list(judge_requests(frame))

    async def drain(cache):
        judge = provider_for(bserver, "openai")
        try:
            return [r async for r in batch_stream(requests, judge, cache=cache, config=FASTB,
                                                  prices=PRICES, stats=stats)]
        finally:
            await judge.aclose()

    with ReplyCache(tmp_path / "c.sqlite") as cache:
        results = asyncio.run(drain(cache))
    assert len(results) == 6 and stats.ok == 6 and stats.done == 6
    tokens_in = sum(r.reply.input_tokens for r in results)
    tokens_out = sum(r.reply.output_tokens for r in results)
    assert stats.input_tokens == tokens_in and stats.output_tokens == tokens_out == 120
    assert stats.cost_usd == pytest.approx((tokens_in * 1.0 + tokens_out * 2.0) / 1e6 * 0.5)
    assert np.isclose(sum(r.cost_usd for r in results), stats.cost_usd)
    assert stats.http_attempts >= 4  # upload, create, two polls, download


def test_cli_score_batch_pending_then_collected_and_batches_command(bserver, frame, tmp_path,
                                                                    capsys):
    from judges.cli import EXIT_INPUT
    from judges.cli import main as scale_main
    from judges.cli_scale import EXIT_PENDING

    src, out, cache = tmp_path / "in.csv", tmp_path / "out.csv", tmp_path / "c.sqlite"
    frame.to_csv(src, index=False)
    base = ["score", str(src), "--provider", "anthropic", "--model", "judge-x", "--base-url",
            bserver.url, "--cache", str(cache), "--out", str(out), "--batch",
            "--poll-interval", "0.01", "--quiet"]
    assert scale_main([*base, "--max-wait", "0"]) == EXIT_PENDING
    pending = pd.read_csv(out)
    assert pending[C.UNSCORED_REASON].str.contains("not judged yet: pending").all()
    assert scale_main(["batches", "--cache", str(cache)]) == 0
    listed = capsys.readouterr().out
    assert "msgbatch_" in listed and "judge" in listed
    assert scale_main(["batches", "--cache", str(cache), "--collect"]) == 0
    assert "No open batches." in capsys.readouterr().out
    assert scale_main(base) == 0
    assert bserver.counts["create"] == 1
    done = pd.read_csv(out)
    assert done[C.UNSCORED_REASON].isna().all() and done[C.JUDGE_CACHED].sum() == 6
    assert scale_main(["batches", "--cache", str(cache), "--cancel", "nope"]) == EXIT_INPUT
    assert scale_main([*base, "--no-cache"]) == EXIT_INPUT


def test_a_run_cancelled_before_submitting_sends_nothing(bserver, frame, tmp_path):
    import threading

    cancel = threading.Event()
    cancel.set()
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        run = run_batch(frame, provider_for(bserver, "openai"), cache, cancel=cancel)
    assert bserver.counts["create"] == 0 and bserver.counts["upload"] == 0
    assert run.judged[C.UNSCORED_REASON].iloc[0] == "ics: not judged: run cancelled"
    assert run.stats.cancelled == 6 and run.cancelled


def test_unparsed_cached_replies_are_submitted_again_unless_reused(bserver, frame, tmp_path):
    from judges.request import Reply

    provider = provider_for(bserver, "openai")
    first = next(judge_requests(frame, provider=provider))
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        cache.put(request_key(provider, first), Reply("no verdict here"))
        kept = run_batch(frame, provider_for(bserver, "openai"), cache,
                         config=JudgeConfig(reuse_unparsed=True))
        assert sum(len(v) for v in bserver.batch_requests.values()) == 5
        assert kept.judged[C.raw_column("ics")][0] == "no verdict here"
        again = run_batch(frame, provider_for(bserver, "openai"), cache)
    assert sum(len(v) for v in bserver.batch_requests.values()) == 6  # only that one again
    assert again.stats.reasked == 1 and again.judged[C.UNSCORED_REASON][0] == ""


def test_batch_cost_cap_is_checked_on_the_worst_case_before_submitting(bserver, frame,
                                                                       tmp_path, capsys):
    from judges.cli import main as scale_main
    from judges.cost import PriceTable, estimate_message_tokens
    from judges.judge import check_batch_cap

    prices = tmp_path / "prices.yaml"
    prices.write_text("sections:\n  local:\n    judge-x: {input: 100, output: 100}\n")
    provider = provider_for(bserver, "openai")
    table = PriceTable.load(prices)
    tokens_in = sum(estimate_message_tokens(r.messages) for r in judge_requests(frame))
    bound = (tokens_in + 6 * 400) * 100 / 1e6 * 0.5  # six calls, each up to 400 tokens out
    assert check_batch_cap(frame, provider, max_cost_usd=1.0, prices=table) == pytest.approx(
        bound)
    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    base = ["score", str(src), "--provider", "openai", "--model", "judge-x", "--base-url",
            bserver.openai_url, "--cache", str(tmp_path / "c.sqlite"), "--out",
            str(tmp_path / "o.csv"), "--batch", "--poll-interval", "0.01", "--quiet",
            "--prices", str(prices)]
    assert scale_main([*base, "--max-cost", f"{bound * 0.9:.6f}"]) == 2  # refused as input
    assert bserver.counts["create"] == 0  # nothing submitted
    assert "This batch could cost up to" in capsys.readouterr().err
    assert scale_main([*base, "--max-cost", f"{bound * 1.1:.6f}"]) == 0
    assert bserver.counts["create"] == 1
