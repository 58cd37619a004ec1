"""Benchmark: a fresh server's first page in a real browser (issue 42: "a fresh server's
first page takes ~28 s at high load with a blank screen").

Run: ``PYTHONPATH=. python benchmarks/bench_first_page.py [--repeat 2] [--root DIR ...]``.

Per trial, each server is started fresh (``streamlit run``, loopback, its own state
folder) and opened once in headless Chromium (Playwright) at its root URL, as a first
visitor does. A script in the page, installed before the page's own, records from the
navigation's start (``performance.now()``): the **first paint** (Chromium's first
contentful paint: Streamlit's empty frame), the **first text** of the app in the main
area (what ends the blank screen: the app's loading message or the page itself), the
page's **title** (the ``Data`` heading) and, after the run has settled, **settled** (the
first page complete, the bundled sample loaded and shown).

The **baseline in the same run** is a one-line Streamlit script (``st.title("Data")``) on
a fresh server the same way: what any Streamlit page costs on this machine at this load;
the ratios (app / baseline) are what the workbench adds. ``--root`` runs the app of
another checkout too (e.g. the main branch before a change), each trial in turn, so
before and after are measured under the same load. Also printed: the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.app.browsertools import CHROMIUM, FLAGS, free_port, running_app, settle  # noqa: E402

#: Installed before the page's scripts: the first moment the main area shows text, and
#: the first moment it shows a heading, in ms since the navigation started.
WATCH = """
window.__firstText = null; window.__title = null;
const look = () => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return;
  const text = main.innerText.trim();
  if (window.__firstText === null && text.length > 0) window.__firstText = performance.now();
  if (window.__title === null && main.querySelector('h1')) window.__title = performance.now();
};
new MutationObserver(look).observe(document, {childList: true, subtree: true,
                                              characterData: true});
"""
BASELINE_SCRIPT = 'import streamlit as st\n\nst.title("Data")\n'


@contextlib.contextmanager
def server(root: Path, script: str, state: str):
    """``streamlit run script`` from ``root`` (its own ``PYTHONPATH``) on a free loopback
    port; yields its URL once healthy and the seconds it took to become so."""
    start = time.perf_counter()
    with running_app(free_port(), root=root, script=script, PYTHONPATH=str(root),
                     BIAS_WORKBENCH_STATE_DIR=state) as url:
        yield url, time.perf_counter() - start


def first_page(browser, url: str, title: str) -> dict[str, float]:
    """Seconds from the navigation's start to the first paint, the first text, the title
    heading and the settled run."""
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    try:
        page.add_init_script(WATCH)
        page.goto(url, wait_until="domcontentloaded")
        page.get_by_role("heading", name=title).first.wait_for(timeout=300_000)
        settle(page, timeout=300)
        settled = page.evaluate("performance.now()")
        paint = page.evaluate("""() => (performance.getEntriesByType('paint')
            .find(e => e.name === 'first-contentful-paint') || {startTime: null}).startTime""")
        first_text, heading = page.evaluate("[window.__firstText, window.__title]")
        return {"first_paint": (paint or 0) / 1000, "first_text": (first_text or 0) / 1000,
                "title": (heading or 0) / 1000, "settled": settled / 1000}
    finally:
        page.close()


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=2, help="trials (fresh servers each)")
    ap.add_argument("--root", action="append", default=[], type=Path,
                    help="another checkout whose app.py to measure too (repeatable)")
    args = ap.parse_args(argv)
    roots = [ROOT, *[r.resolve() for r in args.root]]
    rows: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        base_dir = Path(tmp) / "baseline"
        base_dir.mkdir()
        (base_dir / "baseline.py").write_text(BASELINE_SCRIPT, encoding="utf-8")
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            for trial in range(args.repeat):
                runs = [("baseline", base_dir, "baseline.py")]
                runs += [(str(r), r, "app.py") for r in roots]
                for name, root, script in runs:
                    state = tempfile.mkdtemp(dir=tmp)
                    with server(root, script, state) as (url, startup):
                        times = first_page(browser, url, "Data")
                    times["startup"] = startup
                    times["load"] = os.getloadavg()[0]
                    rows.setdefault(name, []).append(times)
                    print(f"trial {trial + 1} {name}: " + ", ".join(
                        f"{k} {v:.2f}" for k, v in times.items()), flush=True)
        finally:
            browser.close()
    base = {k: statistics.median(t[k] for t in rows["baseline"]) for k in rows["baseline"][0]}
    print("\nmedian seconds from the navigation's start (ratio to the baseline's title):")
    print(f"{'server':<40} {'startup':>8} {'paint':>7} {'text':>7} {'title':>7} "
          f"{'settled':>8} {'text/base':>9} {'title/base':>10} {'load':>5}")
    for name, trials in rows.items():
        m = {k: statistics.median(t[k] for t in trials) for k in trials[0]}
        print(f"{name[-40:]:<40} {m['startup']:8.2f} {m['first_paint']:7.2f} "
              f"{m['first_text']:7.2f} {m['title']:7.2f} {m['settled']:8.2f} "
              f"{m['first_text'] / base['title']:9.1f} {m['title'] / base['title']:10.1f} "
              f"{m['load']:5.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
