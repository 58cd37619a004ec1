"""Screenshots of a full report, to check it by eye (docs/report.md, issue 29).

Imports BBQ's ``preds_Age.jsonl`` (``../shared/data/bbq/`` or a path given as the first
argument), builds every section with its default settings, and writes here:
``html.png`` (the HTML's first screen and its Subgroups section, 1440 px wide, by Debian's
chromium through Playwright) and ``pdf-NN.png`` (every page of the PDF, by ``pdftoppm``).

    PYTHONPATH=. python docs/report_screenshots/make.py [preds_Age.jsonl]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEFAULT = ROOT.parent / "shared" / "data" / "bbq" / "preds_Age.jsonl"


def main(source: Path) -> None:
    from playwright.sync_api import sync_playwright

    from analysis import report as R
    from analysis.design import apply_design
    from analysis.importers import import_results
    from tests.app.browsertools import CHROMIUM, FLAGS

    imported = import_results("bbq", [source])
    results = apply_design(imported.frame, imported.design)
    report = R.build_report(results, imported.design, list(R.SECTIONS), source=source.name)
    html_text = R.report_html(report)
    for old in HERE.glob("*.png"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "report.html"
        page_file.write_text(html_text, encoding="utf-8")
        pdf = Path(tmp) / "report.pdf"
        pdf.write_bytes(R.report_pdf(html_text))
        subprocess.run(["pdftoppm", "-r", "45", "-png", str(pdf), str(HERE / "pdf")],
                       check=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.goto(page_file.as_uri())
            page.wait_for_timeout(1500)
            page.screenshot(path=str(HERE / "html.png"))
            page.locator("#sec-1").scroll_into_view_if_needed()
            page.wait_for_timeout(500)
            page.screenshot(path=str(HERE / "html-subgroups.png"))
            browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
