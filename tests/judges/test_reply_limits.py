"""Judge replies bounded (issue 26 item 5): a size cap at the transport, unusable replies
kept short, a run that scored nothing fails, ``--timeout`` bounds the whole request, and
a long ``Retry-After`` wait says what it waits for.

The hostile servers below speak just enough HTTP/1.1 on 127.0.0.1 for the real openai and
anthropic clients: a 200 MB body streamed in 1 MB writes (never held in memory), a gzip
body that expands to 200 MB, a body dripped one byte per second.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import zlib

import pandas as pd
import pytest

from analysis.judge_stats import columns as C
from judges.cache import ReplyCache
from judges.providers import make_provider
from judges.request import STORED_UNUSABLE_CHARS, ChatRequest, clip_text
from judges.runner import RunConfig, RunStats, run_requests
from tests.judges.helpers import ROOT, make_row
from tests.judges.judge_server import FakeLLMServer, FakeReply

MB = 1024 * 1024


class HostileServer:
    """Answers every POST with ``mode``: ``huge`` (200 MB of JSON), ``gzip_bomb`` (gzip
    expanding to 200 MB), ``drip`` (a valid reply, one byte per second)."""

    def __init__(self, mode: str):
        self.mode, self.requests, self.port = mode, 0, 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HostileServer:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1"))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, reader, writer) -> None:
        with contextlib.suppress(Exception):
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            self.requests += 1
            await getattr(self, f"_{self.mode}")(writer)
        with contextlib.suppress(Exception):
            writer.close()

    @staticmethod
    def _head(extra: str = "") -> bytes:
        return (f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                f"{extra}\r\n").encode()

    async def _huge(self, writer) -> None:
        writer.write(self._head() + b'{"choices": [{"message": {"content": "')
        block = b"A" * MB
        for _ in range(200):
            writer.write(block)
            await writer.drain()
        writer.write(b'"}}]}')

    async def _gzip_bomb(self, writer) -> None:
        comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        body = comp.compress(b'{"content": "') + b"".join(
            comp.compress(b"A" * MB) for _ in range(200)) + comp.flush()
        writer.write(self._head(f"content-encoding: gzip\r\ncontent-length: {len(body)}\r\n")
                     + body)
        await writer.drain()

    async def _drip(self, writer) -> None:
        body = json.dumps({"choices": [{"message": {"content": '{"score": 4}'},
                                        "finish_reason": "stop"}]}).encode()
        writer.write(self._head(f"content-length: {len(body)}\r\n"))
        for byte in body:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(1.0)


def _request() -> ChatRequest:
    return ChatRequest(messages=(("user", "judge this"),), key_parts={"task": "test"}, tag=0)


def _run(provider, **kw):
    async def go():
        try:
            return await run_requests([_request()], provider, **kw)
        finally:
            await provider.aclose()
    return asyncio.run(go())


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("mode", ["huge", "gzip_bomb"])
def test_a_huge_reply_is_cut_at_the_cap_and_not_retried(api, mode, monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_MAX_REPLY_KB", "64")
    with HostileServer(mode) as srv:
        base = srv.url + "/v1" if api == "openai" else srv.url
        stats = RunStats()
        [result] = _run(make_provider(api, model="j", base_url=base), stats=stats,
                        config=RunConfig(max_retries=2, timeout=30))
        assert srv.requests == 1  # not retried: the same request gets the same reply
    assert result.status == "error" and result.reply is None
    assert "reply too large" in result.error and "64 KB" in result.error
    assert "BIAS_WORKBENCH_MAX_REPLY_KB" in result.error


# The peak is VmHWM (this process's own high-water mark): ru_maxrss would include the
# memory of the pytest process it was forked from.
_CLI_CHILD = r"""
import json, re, sys
from judges.cli import main
code = main(sys.argv[1:])
status = open("/proc/self/status").read()
peak_kb = int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1))
print(json.dumps({"code": code, "peak_mb": peak_kb / 1024}))
"""


def test_cli_run_against_200_mb_replies_costs_a_few_mb_and_exits_non_zero(tmp_path):
    rows = pd.DataFrame([make_row(i, 1) for i in range(3)])
    src, out, cache = tmp_path / "in.csv", tmp_path / "judged.csv", tmp_path / "c.sqlite"
    rows.to_csv(src, index=False)
    with HostileServer("huge") as srv:
        proc = subprocess.run(
            [sys.executable, "-c", _CLI_CHILD, "score", str(src), "--provider", "openai",
             "--model", "j", "--base-url", srv.url + "/v1", "--out", str(out), "--cache",
             str(cache), "--quiet", "--max-retries", "0"],
            capture_output=True, text=True, timeout=300, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 3, proc.stderr
    assert "none of the 3 judgments was scored" in proc.stderr
    assert result["peak_mb"] < 400, result  # before: 4.1 GB (the interpreter with pandas: ~250 MB)
    assert out.stat().st_size < 20_000 and cache.stat().st_size < 200_000
    judged = pd.read_csv(out)
    assert judged[C.UNSCORED_REASON].str.contains("reply too large").all()


def test_unusable_replies_are_kept_short_in_the_cache_and_the_judged_file(tmp_path):
    prose = "Not JSON at all. " * 30_000  # 510 KB: under the cap, but no score in it
    rows = pd.DataFrame([make_row(0, 1)])
    src, out, cache = tmp_path / "in.csv", tmp_path / "judged.csv", tmp_path / "c.sqlite"
    rows.to_csv(src, index=False)
    from judges.cli import main

    with FakeLLMServer(lambda c: FakeReply(text=prose)) as srv:
        code = main(["score", str(src), "--provider", "openai", "--model", "j", "--base-url",
                     srv.openai_url, "--out", str(out), "--cache", str(cache), "--quiet"])
    assert code == 3  # nothing scored
    judged = pd.read_csv(out)
    raw = judged[C.raw_column("ics")].iloc[0]
    assert raw == clip_text(prose) and len(raw) < STORED_UNUSABLE_CHARS + 60
    assert raw.endswith(f"[... {len(prose) - STORED_UNUSABLE_CHARS:,} more characters not kept]")
    with ReplyCache(cache) as store:
        assert len(store) == 1
    with sqlite3.connect(cache) as db:
        [(stored,)] = db.execute("SELECT reply FROM replies").fetchall()
    assert json.loads(stored)["text"] == clip_text(prose)  # 4 KB kept of 510 KB


def test_timeout_bounds_the_whole_request_not_each_read():
    with HostileServer("drip") as srv:
        provider = make_provider("openai", model="j", base_url=srv.url + "/v1")
        t0 = time.monotonic()
        [result] = _run(provider, config=RunConfig(max_retries=0, timeout=3))
        took = time.monotonic() - t0
    assert result.status == "error" and "timeout" in result.error
    assert took < 6  # before: each 1-second read reset the SDK's timer (~16 s per attempt)


def test_a_long_retry_after_wait_says_what_it_waits_for():
    stats, cancel, out = RunStats(), threading.Event(), []
    with FakeLLMServer(lambda c: FakeReply.error(429, retry_after=100_000)) as srv:
        provider = make_provider("openai", model="j", base_url=srv.openai_url)
        worker = threading.Thread(target=lambda: out.append(_run(
            provider, stats=stats, cancel=cancel,
            config=RunConfig(max_retries=3, retry_after_max=90))))
        worker.start()
        deadline = time.monotonic() + 20
        while stats.waiting is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        cancel.set()
        worker.join(20)
    assert not worker.is_alive()
    note = stats.waiting
    assert note.startswith("waiting 90 s, until ")
    assert "HTTP 429" in note and "Retry-After" in note
    assert "it asked for 100,000 s; waits are capped at 90 s, --retry-after-max" in note
    [[result]] = out
    assert result.status == "cancelled"


def test_batch_result_downloads_have_their_own_cap():
    from judges.transport import _is_batch_file

    assert _is_batch_file("/v1/files/file-abc/content")
    assert _is_batch_file("/v1/messages/batches/msgbatch_1/results")
    assert not _is_batch_file("/v1/chat/completions")
    assert not _is_batch_file("/v1/messages")
