"""One real-browser journey: start the app, open it in Debian's chromium, upload, switch page."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app_url():
    port = _free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("the Streamlit server did not become healthy in 60 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_open_upload_and_switch_page(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    upload = tmp_path / "tiny_results.csv"
    upload.write_text("model,template,gender,answer\n"
                      + "".join(f"m{i % 2},t{i % 3},{'f' if i % 3 == 0 else 'm'},{i % 2}\n"
                                for i in range(60)))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app_url, wait_until="domcontentloaded")
        # The app opens on the bundled BBQ sample: 11,956 examples x 3 input formats.
        page.get_by_text("35,868").first.wait_for(timeout=60_000)

        page.get_by_text("Upload a file").click()
        page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
            str(upload))
        page.get_by_text("tiny_results.csv").last.wait_for(timeout=30_000)
        page.get_by_text("60", exact=True).first.wait_for(timeout=30_000)

        page.get_by_role("link", name="Design").first.click()
        page.get_by_text("Nested factors").first.wait_for(timeout=30_000)
        # template fixes gender in the uploaded table: the page must say so.
        page.get_by_text("gender is nested in template").first.wait_for(timeout=30_000)
        browser.close()
