"""In a real browser: an upload whose structure is read in the background shows the "still
working" message and then its suggested design without any click (the page's fragment
refreshes it; ``ui/pending_design.py``). The server never waits for the inference
(``BIAS_WORKBENCH_INFERENCE_WAIT=0``) and has one worker, so the upload's job waits behind
the bundled sample's own structure, read when the Data page first opened."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.app.browsertools import CHROMIUM, FLAGS, free_port, running_app, settle

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]

#: Records whether the main area ever said the structure was being read.
WATCH = """
window.__working = false;
new MutationObserver(() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (main && /structure in the background|Waiting to read the table's structure/
      .test(main.innerText)) window.__working = true;
}).observe(document, {childList: true, subtree: true, characterData: true});
"""


def test_an_upload_shows_its_progress_then_its_design_by_itself(tmp_path):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    rng = np.random.default_rng(0)
    wide = pd.DataFrame({f"c{i}": rng.integers(0, 3, 5) for i in range(1000)})
    path = tmp_path / "wide_1000.csv"
    wide.to_csv(path, index=False)
    with running_app(free_port(), BIAS_WORKBENCH_INFERENCE_WAIT="0",
                     BIAS_WORKBENCH_INFERENCE_WORKERS="1",
                     BIAS_WORKBENCH_STATE_DIR=str(tmp_path / "state")) as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.add_init_script(WATCH)
            page.goto(url, wait_until="domcontentloaded")
            page.get_by_role("heading", name="Data").first.wait_for(timeout=120_000)
            page.get_by_text("Upload a file", exact=True).click()
            page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
                str(path))
            # no click from here on: the page refreshes itself when the job is done
            try:
                page.get_by_text("could be factors: the suggested design takes the first 40"
                                 ).first.wait_for(timeout=120_000)
            except PlaywrightTimeout:  # say what the page showed instead
                shown = page.locator('[data-testid="stMain"]').inner_text()
                pytest.fail(f"no suggested design after 120 s; the page showed:\n{shown}")
            settle(page)
            main = page.locator('[data-testid="stMain"]').inner_text()
            assert "structure in the background" not in main
            assert "Waiting to read the table's structure" not in main
            assert page.evaluate("window.__working")  # it did say so meanwhile
            assert not page.locator('[data-testid="stException"]').count()
        finally:
            browser.close()
