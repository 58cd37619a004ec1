"""A judge job started from the page stops when its browser is closed (issue 26 item 1):
before, requests kept arriving 61 s and 123 s after the tab was gone.

One app server with a 2-second grace (``BIAS_WORKBENCH_JOB_GRACE``) and the loopback judge
allowed; Debian's chromium starts a slow run (one request at a time, 0.3 s each) and is
closed after a few requests. The loopback server then counts what still arrives.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.app.browsertools import CHROMIUM, FLAGS, free_port, running_app, settle, visit
from tests.judges.judge_server import FakeLLMServer

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium")]


def _type(page, label: str, text: str) -> None:
    field = page.get_by_label(label, exact=True)
    field.fill(text)
    field.press("Enter")
    settle(page)


def test_closing_the_browser_stops_the_judge_job(tmp_path):
    from playwright.sync_api import sync_playwright

    with FakeLLMServer(latency=0.3) as srv, running_app(
            free_port(), BIAS_WORKBENCH_STATE_DIR=str(tmp_path / "state"),
            BIAS_WORKBENCH_JUDGE_CACHE=str(tmp_path / "cache.sqlite"),
            BIAS_WORKBENCH_JUDGE_ENDPOINTS="http://127.0.0.1:*",
            BIAS_WORKBENCH_JOB_GRACE="2") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url, wait_until="domcontentloaded")
        page.get_by_role("link", name="Judges", exact=True).first.wait_for(timeout=60_000)
        assert visit(page, "Judges") == []
        _type(page, "Model", "judge-x")
        _type(page, "Base URL (optional: Ollama, vLLM, llama.cpp ...)", srv.openai_url)
        _type(page, "Concurrency", "1")
        page.get_by_role("button", name="Run the judge").click()
        deadline = time.monotonic() + 60
        while srv.n_requests < 3:
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.1)
        browser.close()  # the visitor leaves
        time.sleep(2 + 1 + 1)  # the grace, one watcher check, the request in flight
        stopped_at = srv.n_requests
        time.sleep(4)
        after = srv.n_requests
    assert after == stopped_at, f"{after - stopped_at} requests after the job should stop"
    assert stopped_at < 48  # the run (48 judgments, ~15 s) did not finish on its own
