"""Real-browser journeys: one app server, one chromium.

Open, upload, switch page; then every page for every bundled sample and three awkward
uploads without an exception box; then a reload that keeps the data; a sample chosen
right before a page switch is the one loaded.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.app.browsertools import CHROMIUM, FLAGS, ROOT, load_sample, nav_link, settle, visit

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
        nav_link(page, "Coverage").click()  # no wait: the race of the defect
        page.get_by_role("heading", name="Coverage").first.wait_for(timeout=60_000)
        settle(page)
        bar = page.locator('[data-testid="stMarkdownContainer"] code')
        bar.filter(has_text=chosen).first.wait_for(timeout=30_000)
        assert not bar.filter(has_text="bbq_unifiedqa.csv.gz").count()
        assert not page.locator('[data-testid="stException"]').count()
        browser.close()


#: The README's "first hour" screenshots (written with UPDATE_SCREENSHOT=1 only).
FIRST_HOUR = ROOT / "docs" / "first_hour"
PREDS_AGE = ROOT / "tests" / "data" / "bbq" / "preds_Age.jsonl.gz"


def _metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def _errors(page) -> list[str]:
    return [e.inner_text()[:200] for e in
            page.locator('[data-testid="stAlertContentError"]').all()]


def _shot(page, name: str) -> None:
    if os.environ.get("UPDATE_SCREENSHOT") == "1":
        FIRST_HOUR.mkdir(exist_ok=True)
        page.wait_for_timeout(500)  # figures' transitions
        page.screenshot(path=str(FIRST_HOUR / f"{name}.png"))


def test_first_hour_import_subset_switch_back_and_send_a_report(app_url, tmp_path):
    """Issue 29's journey: import preds_Age.jsonl -> subset ambiguous -> Subgroups ->
    Coverage -> back (settings kept) -> every page opens without an error -> Report with
    every section -> PDF (prepared with progress, downloaded, a real PDF)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(app_url, wait_until="domcontentloaded")
        page.get_by_text("35,868").first.wait_for(timeout=60_000)
        settle(page)
        assert page.locator('[data-testid="stMainMenu"]').count() == 0  # toolbar: minimal

        page.get_by_text("Import from ...", exact=True).click()
        settle(page)
        page.locator(".st-key-import_files_0 input[type='file']").set_input_files(
            str(PREDS_AGE))
        page.get_by_text("preds_Age.jsonl.gz").first.wait_for(timeout=30_000)
        settle(page)
        page.locator(".st-key-import_run button").click()
        settle(page)
        page.locator(".st-key-import_use button").click()
        settle(page)
        page.get_by_text("Active table: preds_Age.jsonl.gz (bbq import)").first.wait_for(
            timeout=30_000)
        page.locator(".st-key-data_download_csv").first.wait_for(timeout=30_000)  # CSV
        _shot(page, "1_import")

        assert visit(page, "Subgroups") == []
        page.get_by_text("Subset (applied first)").first.click()
        box = page.locator(".st-key-subgroups_where_context_condition")
        box.wait_for(state="visible", timeout=30_000)
        settle(page)  # a rerun still drawing closes the dropdown opened below
        box.locator("input").first.click()
        page.get_by_role("option", name="ambig", exact=True).click()
        page.keyboard.press("Escape")
        settle(page)
        rows = _metric(page, "Rows in subset")
        assert rows == "5,518", rows  # the ambiguous contexts with an outcome
        assert _errors(page) == []
        page.get_by_text("Subset (applied first)").first.click()  # folded again
        settle(page)
        _shot(page, "2_subgroups")

        assert visit(page, "Coverage") == []
        assert visit(page, "Subgroups") == []
        assert _metric(page, "Rows in subset") == rows  # the subset came back
        bar = page.locator('[data-testid="stMarkdownContainer"] code')  # the context bar
        assert bar.filter(has_text="ambig").count() >= 1

        for title in ("Disparity", "Bias index", "Cohorts", "Factor importance", "eCDF"):
            assert visit(page, title) == []
            assert _errors(page) == [], title  # no page opens on an error

        assert visit(page, "Report") == []
        page.locator(".st-key-report_add_all button").click()
        settle(page)
        page.locator(".st-key-report_build button").click()
        settle(page)
        assert _errors(page) == []
        assert page.get_by_text("Skipped eCDF").count() == 1  # no model factor: said why
        page.locator(".st-key-report_prepare_pdf button").click()
        page.locator(".st-key-report_pdf button").wait_for(timeout=180_000)
        settle(page)
        with page.expect_download(timeout=120_000) as download:
            page.locator(".st-key-report_pdf button").click()
        pdf = tmp_path / "report.pdf"
        download.value.save_as(pdf)
        assert pdf.read_bytes()[:4] == b"%PDF" and pdf.stat().st_size > 50_000
        _shot(page, "3_report")
        browser.close()
