"""Regenerate docs/screenshot.png: start the app, open a page in Debian's chromium, capture it.

Usage: python docs/screenshot.py [PAGE_TITLE [OUT.png]] (default: Subgroups, written to
docs/screenshot.png). Needs playwright (the dev extra) and /usr/bin/chromium; never runs
`playwright install`.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main(page_path: str = "Subgroups", out: str = "") -> None:
    from playwright.sync_api import sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py",
                             "--server.headless", "true", "--server.port", str(port),
                             "--browser.gatherUsageStats", "false"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.goto(url, wait_until="networkidle")  # the Data page loads the sample
            page.get_by_text("35,868").first.wait_for(timeout=60_000)
            if page_path:  # follow the sidebar link: a new URL would start a new session
                page.get_by_role("link", name=page_path).first.click()
            time.sleep(6)  # let plotly draw
            page.screenshot(path=out or str(ROOT / "docs" / "screenshot.png"))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


if __name__ == "__main__":
    main(*sys.argv[1:])
