"""Real-browser journeys: one app server, one chromium.

Open, upload, switch page; then every page for every bundled sample and three awkward
uploads without an exception box; then a reload that keeps the data; a sample chosen
right before a page switch is the one loaded.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.app.browsertools import CHROMIUM, FLAGS, load_sample, settle, visit

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]


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


ANALYSIS_PAGES = ["Design", "Coverage", "Subgroups", "eCDF", "Factor importance", "Disparity",
                  "Bias index", "Cohorts"]


#: A column name that would fetch an image from outside if rendered as Markdown.
LEAKY_COLUMN = "![px](http://leak.invalid/x.png)"


def _awkward_uploads(folder: Path) -> list[Path]:
    """A factor with 100 values, a boolean factor, columns named like our output columns."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 2000
    many = pd.DataFrame({"model": rng.choice(["m1", "m2"], n),
                         "item": [f"item{i % 100:03d}" for i in range(n)],
                         "tone": rng.choice(["plain", "polite", "rude"], n),
                         "biased": rng.integers(0, 2, n)})
    booleans = pd.DataFrame({"model": rng.choice(["a", "b", "c"], n),
                             "cot": rng.integers(0, 2, n).astype(bool),
                             "topic": rng.choice(["age", "gender", "religion"], n),
                             "is_correct": rng.random(n) < 0.7,
                             "score": rng.normal(size=n).round(3)})
    clash = pd.DataFrame({"subgroup": rng.choice(["g1", "g2", "g3"], n),
                          "n": rng.choice(["1", "2"], n), "level": rng.choice(["lo", "hi"], n),
                          "model": rng.choice(["x", "y"], n),
                          LEAKY_COLUMN: rng.choice(["u", "v"], n),
                          "deviation": rng.integers(0, 2, n)})
    paths = []
    for name, frame in (("many_values.csv", many), ("boolean_factor.csv", booleans),
                        ("output_names.csv", clash)):
        frame.to_csv(folder / name, index=False)
        paths.append(folder / name)
    return paths


def _upload(page, path: Path) -> None:
    visit(page, "Data")
    page.get_by_text("Upload a file", exact=True).click()
    settle(page)
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(path))
    page.get_by_text(path.name).last.wait_for(timeout=30_000)
    settle(page)


def test_every_page_on_every_sample_and_awkward_upload_then_a_reload(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    from ui.data import SAMPLES

    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        # Every request the page makes must go to the app's own server: a label from the
        # data rendered as Markdown (the upload below has a column named like an image
        # link to a host under .invalid, which never resolves) would show up here.
        outside: list[str] = []
        own = urlsplit(app_url).netloc
        page.on("request", lambda r: outside.append(r.url) if urlsplit(r.url).scheme in
                ("http", "https", "ws", "wss") and urlsplit(r.url).netloc != own else None)
        page.goto(app_url, wait_until="domcontentloaded")
        page.get_by_text("35,868").first.wait_for(timeout=60_000)
        for sample in SAMPLES.values():
            load_sample(page, sample["title"])
            problems += [f"{sample['title'][:30]}: {m}" for title in ANALYSIS_PAGES
                         for m in visit(page, title)]
        problems += visit(page, "Judges") + visit(page, "Answers & agreement")
        for path in _awkward_uploads(tmp_path):
            _upload(page, path)
            problems += [f"{path.name}: {m}" for title in ANALYSIS_PAGES
                         for m in visit(page, title)]
        # A reload keeps the last upload (the URL's ?sid= names its server-side copy).
        visit(page, "Subgroups")
        assert "sid=" in page.url
        page.reload(wait_until="domcontentloaded")
        page.get_by_role("heading", name="Subgroups").first.wait_for(timeout=60_000)
        settle(page)
        page.get_by_text("output_names.csv").first.wait_for(timeout=30_000)
        assert page.get_by_text("could not be restored").count() == 0
        browser.close()
    assert problems == [], "\n".join(problems)
    assert outside == [], f"requests to addresses the app did not make: {outside[:5]}"


def test_sample_chosen_right_before_a_page_switch_is_loaded(app_url):
    """Pick another sample and click another page at once (the selectbox's on_change rerun
    is superseded by the page switch): the next page works on the chosen sample."""
    from playwright.sync_api import sync_playwright

    from ui.data import SAMPLES

    chosen = "ssqa_simulated.csv.gz"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app_url, wait_until="domcontentloaded")
        page.get_by_text("35,868").first.wait_for(timeout=60_000)  # the BBQ sample is loaded
        settle(page)
        page.locator('[data-testid="stSelectbox"]').filter(has_text="Sample").click()
        page.get_by_role("option", name=SAMPLES[chosen]["title"]).click()
        page.locator('[data-testid="stSidebarNav"]').get_by_role(
            "link", name="Coverage", exact=True).click()  # no wait: the race of the defect
        page.get_by_role("heading", name="Coverage").first.wait_for(timeout=60_000)
        settle(page)
        bar = page.locator('[data-testid="stMarkdownContainer"] code')
        bar.filter(has_text=chosen).first.wait_for(timeout=30_000)
        assert not bar.filter(has_text="bbq_unifiedqa.csv.gz").count()
        assert not page.locator('[data-testid="stException"]').count()
        browser.close()
