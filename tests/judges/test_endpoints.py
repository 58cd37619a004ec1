"""The server's API key and the endpoints a page may call (issue 26 item 1).

The pages run with the real openai / anthropic clients against loopback listeners: one
that records whether any TCP connection arrived (the refused endpoint), and the fake LLM
server (the allowed one).
"""

from __future__ import annotations

import socket
import threading
import time

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from analysis.judge_stats import columns as C
from judges.endpoints import (
    EndpointRefused,
    endpoint_allowed,
    require_cost_cap,
    same_endpoint,
)
from judges.job import JudgeJob
from judges.providers import page_provider
from tests.judges.helpers import ROOT
from tests.judges.judge_server import FakeLLMServer, FakeReply

PAGE = str(ROOT / "pages" / "judges.py")
TOOLS = str(ROOT / "pages" / "judges_tools.py")
SERVER_KEY = "sk-SERVER-secret-0a1b2c3d"


class ConnectionRecorder:
    """A loopback TCP listener that only counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def __enter__(self) -> ConnectionRecorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@pytest.mark.parametrize(("url", "allowed", "ok"), [
    ("https://api.openai.com/v1", ["https://api.openai.com/v1"], True),
    ("https://API.openai.com:443/v1/", ["https://api.openai.com/v1"], True),
    ("https://api.openai.com/v1/chat", ["https://api.openai.com"], True),
    ("https://api.openai.com/v10", ["https://api.openai.com/v1"], False),
    ("http://api.openai.com/v1", ["https://api.openai.com/v1"], False),
    ("https://api.openai.com.evil.test/v1", ["https://api.openai.com"], False),
    ("https://evil.test@api.openai.com/v1", ["https://api.openai.com"], False),
    ("https://api.openai.com/v1?x=1", ["https://api.openai.com"], False),
    ("http://127.0.0.1:8000/v1", ["http://127.0.0.1:*"], True),
    ("http://127.0.0.2:8000/v1", ["http://127.0.0.1:*"], False),
    ("http://localhost:8000/v1", ["http://127.0.0.1:*"], False),
    ("http://127.0.0.1:8001/v1", ["http://127.0.0.1:8000"], False),
    ("file:///etc/passwd", ["http://127.0.0.1:*"], False),
    ("http://127.0.0.1:*", ["http://127.0.0.1:*"], False),
])
def test_allow_list_matching(url, allowed, ok):
    assert endpoint_allowed(url, allowed) is ok


def test_same_endpoint_and_cost_cap_rule():
    assert same_endpoint("https://api.openai.com/v1/", "https://API.openai.com:443/v1")
    assert not same_endpoint("https://api.openai.com/v1", "https://api.openai.com/v2")
    require_cost_cap(False, None)
    require_cost_cap(True, 0.5)
    for cap in (None, 0.0):
        with pytest.raises(EndpointRefused, match="cost cap"):
            require_cost_cap(True, cap)


def test_server_key_goes_only_to_the_default_endpoint(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    typed_url = page_provider("openai", model="m", base_url="http://127.0.0.1:9/v1",
                              server_key=SERVER_KEY)
    assert typed_url.api_key() is None and not typed_url.uses_server_key  # env not read
    default = page_provider("openai", model="m", server_key=SERVER_KEY)
    assert default.api_key() == SERVER_KEY and default.uses_server_key
    same = page_provider("openai", model="m", base_url="https://api.openai.com/v1/",
                         server_key=SERVER_KEY)
    assert same.base_url is None and same.uses_server_key
    mine = page_provider("openai", model="m", base_url="http://127.0.0.1:9/v1",
                         typed_key="sk-mine", server_key=SERVER_KEY)
    assert mine.api_key() == "sk-mine" and not mine.uses_server_key


def _page(path: str = PAGE) -> AppTest:
    at = AppTest.from_file(path, default_timeout=60)
    at.secrets["OPENAI_API_KEY"] = SERVER_KEY
    at.secrets["ANTHROPIC_API_KEY"] = SERVER_KEY
    at.run()
    return at


def _choose(at: AppTest, provider: str, url: str | None) -> None:
    at.selectbox(key="judges_provider").set_value(provider).run()
    at.text_input(key=f"judges_model_{provider}").input("judge-x").run()
    if url is not None:
        at.text_input(key="judges_base_url").input(url).run()


def _wait(at: AppTest, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while "judges_job" in at.session_state or "judges_judged" not in at.session_state:
        assert time.monotonic() < deadline, "the judge run did not finish"
        time.sleep(0.2)
        at.run()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_typed_url_outside_the_allow_list_is_refused_before_any_connection(provider,
                                                                           monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_JUDGE_ENDPOINTS", "https://llm.example.org/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SERVER_KEY)
    with ConnectionRecorder() as rec:
        at = _page()
        _choose(at, provider, f"http://127.0.0.1:{rec.port}/v1")
        at.number_input(key="judges_max_cost").set_value(1.0).run()
        at.button(key="judges_run").click().run()
        time.sleep(0.5)
        at.run()
    assert rec.connections == 0
    assert "judges_job" not in at.session_state and "judges_judged" not in at.session_state
    errors = " ".join(e.value for e in at.error)
    assert "is not one this server may call" in errors
    assert "BIAS_WORKBENCH_JUDGE_ENDPOINTS" in errors and SERVER_KEY not in errors


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_typed_allowed_url_never_gets_the_server_key(provider):
    with FakeLLMServer(lambda c: FakeReply.judgement(4)) as srv:
        at = _page()
        _choose(at, provider, srv.openai_url if provider == "openai" else srv.url)
        at.button(key="judges_run").click().run()
        _wait(at)
        headers = [" ".join(c.headers.values()) for c in srv.calls]
    assert len(headers) == 48
    assert not any(SERVER_KEY in h for h in headers)
    assert all("not-needed" in h for h in headers)


def test_server_key_needs_a_cost_cap_and_reaches_the_operators_endpoint(monkeypatch):
    with FakeLLMServer(lambda c: FakeReply.judgement(4)) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_url)  # the operator's endpoint
        at = _page()
        _choose(at, "openai", None)
        at.button(key="judges_run").click().run()
        assert any("set a cost cap" in e.value for e in at.error)
        assert srv.n_requests == 0 and "judges_job" not in at.session_state
        at.number_input(key="judges_max_cost").set_value(1.0).run()
        at.button(key="judges_run").click().run()
        _wait(at)
        auth = {c.headers["authorization"] for c in srv.calls}
    assert auth == {f"Bearer {SERVER_KEY}"}


def test_tools_page_refuses_the_server_key(monkeypatch):
    with FakeLLMServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_url)
        at = _page(TOOLS)
        at.button(key="tools_answers_run").click().run()
        assert srv.n_requests == 0
    assert "tools_answers_job" not in at.session_state
    assert any("cannot use the server's API key" in e.value for e in at.error)


def test_job_stops_when_its_session_is_gone(four_rows):
    frame = pd.concat([four_rows] * 20, ignore_index=True)
    frame["row_id"] = range(len(frame))
    alive = threading.Event()
    alive.set()
    with FakeLLMServer(latency=0.05) as srv:
        provider = page_provider("openai", model="j", base_url=srv.openai_url)
        job = JudgeJob(frame, provider=provider).stop_when_gone(
            alive.is_set, grace=0.3, interval=0.05)
        job.start()
        deadline = time.monotonic() + 20
        while srv.n_requests < 5:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        alive.clear()  # the browser is closed
        assert job.wait(20)
        sent = srv.n_requests
        time.sleep(0.5)
        assert srv.n_requests == sent  # nothing after the job ended
    assert job.stopped_because == "its session ended" and job.cancelled
    judged = job.judged
    assert sent < 120
    assert judged[C.UNSCORED_REASON].str.contains("run cancelled").any()
