"""Helpers of the real-browser tests: start the app, drive Debian's chromium through it.

``running_app()`` starts ``streamlit run app.py`` on a free loopback port and stops it by its
PID; :func:`settle` waits for Streamlit's rerun to finish (its status widget is gone) instead
of sleeping; :func:`visit` opens a page from the sidebar and reports an exception box.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_app(port: int, *, root: Path = ROOT, script: str = "app.py", **env: str):
    """``streamlit run app.py`` (or ``script`` in the folder ``root``) on
    127.0.0.1:``port``; yields its URL once healthy and stops the server by its PID
    afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false"],
        cwd=root, env=dict(os.environ, HF_HUB_OFFLINE="1", **env),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
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


#: Streamlit's own record of the script run on its root element (``rerunRequested``,
#: ``running``, ``notRunning``, ...), set by the frontend the moment a widget asks for a rerun.
IDLE = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !document.querySelector('[data-testid="stStatusWidget"]');
}"""


def settle(page, timeout: float = 90) -> None:
    """Wait until the script run is over: the app's script state is ``notRunning`` (and the
    running indicator is gone) twice in a row, 100 ms apart."""
    page.wait_for_timeout(100)  # the click's rerun request reaches the frontend's state
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page.wait_for_function(IDLE, timeout=max(1, deadline - time.monotonic()) * 1000)
        page.wait_for_timeout(100)
        if page.evaluate(IDLE):
            return
    raise AssertionError("the page kept running")


def nav_link(page, title: str):
    """The sidebar link of our navigation to the page called ``title`` (ui/navigation.py)."""
    return page.locator(".st-key-app_nav").get_by_role("link", name=title, exact=True)


def visit(page, title: str) -> list[str]:
    """Open a page from the sidebar; the problems seen on it (exception box, guard)."""
    nav_link(page, title).click()
    heading = {"Factor importance": "Factor importance"}.get(title, title)
    page.get_by_role("heading", name=heading).first.wait_for(timeout=60_000)
    settle(page)
    problems = []
    if page.locator('[data-testid="stException"]').count():
        problems.append(f"{title}: exception box")
    if page.get_by_text("stopped on an unexpected error").count():
        problems.append(f"{title}: " + page.locator('[data-testid="stAlert"]').first
                        .inner_text()[:300])
    return problems


def open_select(page, key: str, option: str):
    """Open the selectbox ``key``'s list until ``option`` shows; returns that option's
    locator (to click)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    item = page.get_by_role("option", name=option, exact=True)
    for _ in range(3):  # a click during a redraw may not open the list
        page.locator(f'.st-key-{key} button[aria-label="Open"]').click()
        try:
            item.wait_for(timeout=5_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    return item


def load_sample(page, title: str) -> None:
    """Load the bundled sample called ``title`` on the Data page; waits until the page
    names its file (the table is loaded)."""
    from ui.data import SAMPLES

    name = next(k for k, v in SAMPLES.items() if v["title"] == title)
    visit(page, "Data")
    page.get_by_text("Bundled sample", exact=True).click()
    settle(page)
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Sample").click()
    page.get_by_role("option", name=title).click()
    settle(page)
    button = page.get_by_role("button", name="Load this sample")
    if button.count():
        button.click()
        settle(page)
    page.get_by_text(name).first.wait_for(timeout=60_000)
