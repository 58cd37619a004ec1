"""Issue 42 item 1 in chromium: the session id stays in the URL on every page, also on the
pages that end in a message and ``st.stop()`` (Compare's pairing error, Factor importance's
separation refusal, Report's "No sections yet"); a reload there keeps the upload, and a
link without the id reopens this browser's last session and says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.browsertools import CHROMIUM, FLAGS, nav_link, settle, visit
from ui.navigation import PAGES

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]


def _one_model_with_separation(folder: Path) -> Path:
    """One model (Compare: nothing to compare), and a race whose rows never deviate
    (Factor importance: a separation refusal)."""
    import numpy as np

    rng = np.random.default_rng(1)
    lines = ["model,race,gender,biased"]
    for i in range(240):
        race = ("white", "black", "asian", "hispanic")[i % 4]
        lines.append(f"m1,{race},{('female', 'male')[(i // 4) % 2]},"
                     f"{0 if race == 'asian' else int(rng.random() < 0.4)}")
    path = folder / "one_model_separated.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_page_keeps_the_session_id_in_every_state_and_a_reload_keeps_the_upload(
        app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    upload = _one_model_with_separation(tmp_path)
    titles = [title for pages in PAGES.values() for _, title, _ in pages]
    lost, problems = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(app_url, wait_until="domcontentloaded")
        page.get_by_text("35,868").first.wait_for(timeout=60_000)
        visit(page, "Data")
        page.get_by_text("Upload a file", exact=True).click()
        settle(page)
        page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
            str(upload))
        page.get_by_text(upload.name).last.wait_for(timeout=30_000)
        settle(page)
        for title in titles:
            problems += visit(page, title)
            if "sid=" not in page.url:
                lost.append(title)
        # each error path was really taken (the pages ended in their message + st.stop())
        for title, says in (("Compare", None), ("Factor importance", "Separation"),
                            ("Report", "No sections yet")):
            visit(page, title)
            alert = page.locator('[data-testid="stAlert"]')
            assert alert.count(), title
            if says:
                assert says in " ".join(alert.all_inner_texts()), title
            assert "sid=" in page.url, title
        visit(page, "Compare")
        page.reload(wait_until="domcontentloaded")
        page.get_by_role("heading", name="Compare").first.wait_for(timeout=60_000)
        settle(page)
        page.get_by_text(upload.name).first.wait_for(timeout=30_000)
        assert page.get_by_text("could not be restored").count() == 0
        # the same browser on a link without the id: its last session, said so
        page.goto(app_url + "/compare", wait_until="domcontentloaded")
        page.get_by_text("your last session in this browser").first.wait_for(timeout=60_000)
        settle(page)
        page.get_by_text(upload.name).first.wait_for(timeout=30_000)
        assert "sid=" in page.url
        nav_link(page, "Data").click()
        settle(page)
        assert "sid=" in page.url
        browser.close()
    assert lost == [], f"?sid= missing from the URL on: {lost}"
    assert problems == [], "\n".join(problems)
