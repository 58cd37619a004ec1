"""A fresh server opened first at a page URL shows our navigation, never a helper module,
and never Streamlit's own generated page list, not even for a frame (issue 29).

Streamlit's legacy multipage discovery scans ``pages/`` when a session starts at a page
URL before ``app.py`` has declared its navigation; with helper modules in ``pages/`` the
sidebar listed them and ``/judges_ui`` rendered blank (issue 18). ``pages/`` now holds page
files only (helpers are in ``ui/``). This opens a new server directly at ``/judges``: the
worst case, where the first run is the legacy mode's (issue 29: its list of files flashed in
the sidebar before our navigation replaced it). From before the first paint, a script in the
page records every frame and every DOM change in which Streamlit's own list
(``stSidebarNav``) exists; it must never have.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.app.browsertools import CHROMIUM, FLAGS, nav_link, running_app, settle

ROOT = Path(__file__).resolve().parents[2]
#: Our navigation, in order (app.py).
PAGES = ["Data", "Prepare", "Design", "Coverage", "Subgroups", "eCDF", "Compare",
         "Counterfactual pairs", "Factor importance",
         "Disparity", "Bias index", "Cohorts", "Report", "Planner", "Judges", "Answers & agreement"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]


def _port_in_range(low: int = 8700, high: int = 8749) -> int:
    for port in range(low, high + 1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.fail(f"no free port in {low}-{high}: another server holds them all; stop it "
                "(the fresh-server test must run, not be skipped)")


def test_page_files_only_in_pages():
    helpers = [p.name for p in (ROOT / "pages").glob("*.py") if p.name.startswith("_")]
    assert helpers == []
    from ui.navigation import _LISTED
    from ui.navigation import PAGES as SECTIONS

    declared = {path for pages in SECTIONS.values() for path, _, _ in pages}
    files = {f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py")}
    assert files == declared
    assert [t for pages in _LISTED.values() for _, t, _ in pages] == PAGES
    for path in files:  # each page hands a legacy-mode first visit to our navigation
        assert "route_first_visit()" in (ROOT / path).read_text(encoding="utf-8"), path


#: Runs in the page before its own scripts: samples the sidebar at every animation frame and
#: every DOM change, recording whether Streamlit's generated page list is there.
WATCH_AUTO_NAV = """
window.__navSamples = 0; window.__autoNav = [];
const look = () => {
  window.__navSamples += 1;
  const nav = document.querySelector('[data-testid="stSidebarNav"]');
  if (nav) window.__autoNav.push(nav.innerText.slice(0, 200));
};
new MutationObserver(look).observe(document, {childList: true, subtree: true});
(function frame() { look(); requestAnimationFrame(frame); })();
"""


def nav_names(page, timeout: float = 90) -> list[str]:
    """The sidebar's page names once our navigation is in place."""
    deadline = time.monotonic() + timeout
    names: list[str] = []
    while time.monotonic() < deadline:
        texts = page.locator('.st-key-app_nav a').all_inner_texts()
        names = [t.strip().splitlines()[-1].strip() for t in texts if t.strip()]
        if names == PAGES:
            return names
        time.sleep(0.5)
    return names


def test_fresh_server_opened_at_judges_shows_our_navigation():
    from playwright.sync_api import sync_playwright

    with running_app(_port_in_range()) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.add_init_script(WATCH_AUTO_NAV)
            page.goto(f"{url}/judges", wait_until="domcontentloaded")  # first request
            assert nav_names(page) == PAGES
            page.get_by_role("heading", name="Judges").first.wait_for(timeout=60_000)
            page.get_by_text("Illustrative sample (bundled)").first.wait_for(timeout=30_000)
            assert "/judges" in page.url
            sidebar = page.locator('[data-testid="stSidebar"]').inner_text().lower()
            assert "judges tools" not in sidebar  # the legacy list of files is gone
            settle(page)
            assert page.evaluate("window.__navSamples") > 50  # sampled from the first paint
            assert page.evaluate("window.__autoNav") == []  # never Streamlit's own list
            nav_link(page, "Coverage").click()  # our links work and keep the page URLs
            page.get_by_role("heading", name="Coverage").first.wait_for(timeout=60_000)
            assert page.url.endswith("/coverage")
            page.goto(f"{url}/judges_ui", wait_until="domcontentloaded")
            assert nav_names(page) == PAGES  # an unknown (old helper) URL: our pages
        finally:
            browser.close()
