"""A loopback server speaking enough of the OpenAI and Anthropic HTTP APIs for tests.

It answers ``POST /v1/chat/completions`` (OpenAI Chat Completions shape) and
``POST /v1/messages`` (Anthropic Messages shape) on 127.0.0.1, with an optional latency
per reply. A *behaviour* function decides each reply from the request, so tests can
script scores, malformed bodies, 429 with ``Retry-After``, 5xx, hangs (timeouts),
refusals and injected texts. ``GET /stats`` returns the request count. For repeated
samples a behaviour can read :attr:`Call.sample` (the OpenAI ``seed``, else how many
identical prompts came before) and :meth:`Call.block` (one delimited text of the prompt,
e.g. which story is shown first); :func:`sampled_behaviour` scripts varied scores and a
judge that favours the first position.

Used in-process (``FakeLLMServer(...).start()``, a thread with its own asyncio loop) by
the tests, and as a separate process by ``benchmarks/bench_judges.py``::

    python tests/judges/judge_server.py --latency 0.2 --port-file /tmp/port
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Call:
    """One request the server received."""

    n: int
    api: str  # "openai" or "anthropic"
    body: dict[str, Any]
    headers: dict[str, str]
    t: float = 0.0  # time.monotonic() on arrival
    repeat: int = 0  # identical prompts (same API) received before this one

    @property
    def seed(self) -> int | None:
        """The ``seed`` sent (OpenAI), or ``None``."""
        seed = self.body.get("seed")
        return seed if isinstance(seed, int) else None

    @property
    def sample(self) -> int:
        """The sample index of a repeated judgment: the seed on the OpenAI API (none sent =
        sample 0), the count of identical earlier prompts on the Anthropic API (which has no
        seed; deterministic when requests are sent one at a time)."""
        if self.api == "openai":
            return self.seed or 0
        return self.repeat

    def block(self, label: str) -> str:
        """The text between ``<<<LABEL>>>`` and ``<<<END LABEL>>>`` in the prompt ("")."""
        found = re.search(rf"<<<{re.escape(label)}>>>\n(.*?)\n<<<END {re.escape(label)}>>>",
                          self.prompt, re.S)
        return found.group(1) if found else ""

    @property
    def prompt(self) -> str:
        """All message texts (system included), joined by newlines."""
        parts = []
        if isinstance(self.body.get("system"), str):
            parts.append(self.body["system"])
        for m in self.body.get("messages", []):
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
            parts.append(str(content))
        return "\n".join(parts)


@dataclass
class FakeReply:
    """What the server answers. Build with the class methods."""

    text: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None
    refusal: str | None = None
    finish: str | None = None
    usage: tuple[int, int] | None = None

    @classmethod
    def judgement(cls, score: Any, explanation: str = "Reasons.", **kw: Any) -> FakeReply:
        """A well-formed ``{"explanation", "score"}`` reply."""
        return cls(text=json.dumps({"explanation": explanation, "score": score}), **kw)

    @classmethod
    def error(cls, status: int, retry_after: float | None = None, **kw: Any) -> FakeReply:
        """An HTTP error with an API-style error body and optional ``Retry-After``."""
        headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
        body = json.dumps({"type": "error", "error": {"type": "api_error", "message": "boom"}})
        return cls(status=status, headers=headers, raw=body.encode(), **kw)


def hashed_score(call: Call) -> int:
    """A deterministic score 1-5 from the prompt (the default behaviour's judgement)."""
    return 1 + int(hashlib.sha256(call.prompt.encode()).hexdigest()[:8], 16) % 5


def sampled_behaviour(offsets: Sequence[int] = (0,), *, first_story: str | None = None,
                      first_bonus: int = 0) -> Callable[[Call], FakeReply]:
    """A judge whose score varies by sample and, optionally, by position.

    The score is ``#score=N`` from the prompt (3 without one) plus ``offsets[sample %
    len(offsets)]``, plus ``first_bonus`` when the ``STORY A`` block (the story shown
    first) is ``first_story`` and the prompt has no ``#fair``. ``#bad<i>`` in the prompt
    makes sample ``i`` reply without JSON; ``#malformed`` every sample.
    """
    def behave(call: Call) -> FakeReply:
        prompt = call.prompt
        if "#malformed" in prompt or f"#bad{call.sample}" in prompt:
            return FakeReply(text="About a four, I would say.")
        found = re.search(r"#score=(\d)", prompt)
        score = (int(found.group(1)) if found else 3) + offsets[call.sample % len(offsets)]
        if first_story is not None and "#fair" not in prompt and (
                call.block("STORY A") == first_story):
            score += first_bonus
        return FakeReply.judgement(score, f"Sample {call.sample}.", usage=(1000, 200))

    return behave


def default_behaviour(call: Call) -> FakeReply:
    """A valid judgement whose score is :func:`hashed_score`."""
    return FakeReply.judgement(hashed_score(call), f"Deterministic verdict {call.n}.")


def _openai_body(call: Call, reply: FakeReply) -> dict[str, Any]:
    usage = reply.usage or (len(call.prompt) // 4, 20)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text,
                               "refusal": reply.refusal}
    return {
        "id": f"chatcmpl-{call.n}", "object": "chat.completion", "created": 0,
        "model": call.body.get("model", "fake"),
        "choices": [{"index": 0, "message": message,
                     "finish_reason": reply.finish or "stop", "logprobs": None}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                  "total_tokens": usage[0] + usage[1]},
    }


def _anthropic_body(call: Call, reply: FakeReply) -> dict[str, Any]:
    usage = reply.usage or (len(call.prompt) // 4, 20)
    content = [] if reply.text is None else [{"type": "text", "text": reply.text}]
    return {
        "id": f"msg_{call.n}", "type": "message", "role": "assistant",
        "model": call.body.get("model", "fake"), "content": content,
        "stop_reason": reply.finish or "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


class FakeLLMServer:
    """The loopback server (see the module docstring).

    Parameters
    ----------
    behaviour
        ``Call -> FakeReply``; defaults to :func:`default_behaviour`. Called in the
        server's event loop; it must not block.
    latency
        Seconds added before every reply.
    """

    def __init__(self, behaviour: Callable[[Call], FakeReply] | None = None,
                 latency: float = 0.0, port: int = 0):
        self.behaviour = behaviour or default_behaviour
        self.latency = latency
        self.calls: list[Call] = []
        self.keep_calls = True
        self.n_requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._port = port
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], int] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.port = 0

    # --- lifecycle ---------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (the Anthropic base URL)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (the OpenAI base URL)."""
        return self.url + "/v1"

    def start(self) -> FakeLLMServer:
        """Serve in a daemon thread; returns when the port is bound."""
        self._thread = threading.Thread(target=self._run, daemon=True, name="fake-llm")
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake LLM server did not start")
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", self._port, backlog=1024))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.close()

    def serve_forever(self) -> None:
        """Serve in the calling thread (the script entry point)."""
        self._run()

    # --- HTTP --------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0"))
                body = await reader.readexactly(length) if length else b""
                status, extra, payload = await self._respond(method, path, headers, body)
                out = [f"HTTP/1.1 {status} X", "content-type: application/json",
                       f"content-length: {len(payload)}"]
                out += [f"{k}: {v}" for k, v in extra.items()]
                writer.write(("\r\n".join(out) + "\r\n\r\n").encode() + payload)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            with contextlib.suppress(Exception):  # the socket may already be gone
                writer.close()

    async def _respond(self, method: str, path: str, headers: dict[str, str],
                       body: bytes) -> tuple[int, dict[str, str], bytes]:
        if method == "GET" and path.startswith("/stats"):
            stats = {"requests": self.n_requests, "max_in_flight": self.max_in_flight}
            return 200, {}, json.dumps(stats).encode()
        if path.endswith("/chat/completions"):
            api = "openai"
        elif path.endswith("/messages"):
            api = "anthropic"
        else:
            return 404, {}, b'{"error": {"message": "not found"}}'
        with self._lock:
            self.n_requests += 1
            n = self.n_requests
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            call = Call(n=n, api=api, body=json.loads(body or b"{}"), headers=headers,
                        t=time.monotonic())
            with self._lock:
                seen = (api, hashlib.sha1(call.prompt.encode()).hexdigest())
                call.repeat = self._seen.get(seen, 0)
                self._seen[seen] = call.repeat + 1
            if self.keep_calls:
                self.calls.append(call)
            reply = self.behaviour(call)
            if self.latency or reply.delay:
                await asyncio.sleep(self.latency + reply.delay)
            if reply.raw is not None:
                return reply.status, reply.headers, reply.raw
            build = _openai_body if api == "openai" else _anthropic_body
            return reply.status, reply.headers, json.dumps(build(call, reply)).encode()
        finally:
            with self._lock:
                self.in_flight -= 1


def main() -> None:
    """Run the server as a process (used by the benchmark)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, required=True)
    args = parser.parse_args()
    server = FakeLLMServer(latency=args.latency, port=args.port)
    server.keep_calls = False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server._ready.wait(10)
    args.port_file.write_text(str(server.port))
    while thread.is_alive():
        time.sleep(0.5)


if __name__ == "__main__":
    main()
