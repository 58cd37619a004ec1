"""The first chart page in chromium with and without the bundle warm-up (``ui/frontend_warm.py``).

Run: ``PYTHONPATH=. python benchmarks/bench_first_chart.py [--repeat 3] [--wait 5]
[--page Coverage]`` (needs Debian's chromium).

Per repetition, interleaved, two fresh servers (``streamlit run app.py``) and browsers: one
with the warm-up, one with ``BIAS_WORKBENCH_WARM_BUNDLES=0``. Each opens the app on the
bundled sample (the Data page), waits until the page is drawn and then ``--wait`` seconds
more (a visitor reading the Data page), then opens ``--page`` from the sidebar and times it
until the page is idle, as ``bench_browser_journey.py`` does (the DOM's last change). Printed
per run and as best / median: the page's browser time, chromium's renderer main thread busy
meanwhile (DevTools ``Performance.getMetrics``; the CPU-like measure on a loaded machine) and
during the wait on the Data page (where the warm-up's work went), and which frontend bundles
the page still had to fetch. The load average is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_browser_journey import OBSERVER, MainThread, quiet_since  # noqa: E402
from tests.app.browsertools import (  # noqa: E402
    CHROMIUM,
    FLAGS,
    free_port,
    nav_link,
    running_app,
    settle,
)
from ui.frontend_warm import SWITCH  # noqa: E402

#: The names (without hash) of the frontend bundles fetched so far.
BUNDLES_FETCHED = """() => performance.getEntriesByType('resource')
    .map(e => e.name.match(/\\/static\\/js\\/([^/.]+)\\.[^/]+\\.js$/)).filter(m => m)
    .map(m => m[1])"""


def one(warm: bool, page_title: str, wait: float) -> dict:
    """One fresh server and browser: the Data page, ``wait`` s, then ``page_title``."""
    from playwright.sync_api import sync_playwright

    with running_app(free_port(), **{SWITCH: "1" if warm else "0"}) as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.add_init_script(OBSERVER)
            main = MainThread(page)
            page.goto(url)
            page.get_by_text("35,868").first.wait_for(timeout=120_000)
            settle(page)
            quiet_since(page)
            m0 = main.now()
            page.wait_for_timeout(wait * 1000)
            m1 = main.now()
            before = set(page.evaluate(BUNDLES_FETCHED))
            t0 = time.time()
            nav_link(page, page_title).click()
            page.get_by_role("heading", name=page_title).first.wait_for(timeout=300_000)
            settle(page, timeout=300)
            end = quiet_since(page)
            m2 = main.now()
            return {"browser": end - t0, "busy": m2["busy"] - m1["busy"],
                    "script": m2["script"] - m1["script"], "waiting": m1["busy"] - m0["busy"],
                    "fetched": sorted(set(page.evaluate(BUNDLES_FETCHED)) - before)}
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--wait", type=float, default=5.0,
                        help="seconds on the Data page before the chart page is opened")
    parser.add_argument("--page", default="Coverage")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        parser.error(f"needs Debian's chromium at {CHROMIUM}")
    print(f"{args.page} after {args.wait:g} s on the Data page; load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    runs: dict[bool, list[dict]] = {True: [], False: []}
    for rep in range(args.repeat):
        for warm in (False, True):
            r = one(warm, args.page, args.wait)
            runs[warm].append(r)
            print(f"  rep {rep + 1} {'warm-up' if warm else 'without'}: {args.page} "
                  f"{r['browser']:.2f} s in the browser, main thread busy {r['busy']:.2f} s "
                  f"(JS {r['script']:.2f}); on the Data page meanwhile {r['waiting']:.2f} s; "
                  f"bundles it fetched: {', '.join(r['fetched']) or 'none'}", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    for key, what in (("browser", "browser time"), ("busy", "main thread busy"),
                      ("waiting", "main thread busy on the Data page")):
        cells = []
        for warm in (False, True):
            values = [r[key] for r in runs[warm]]
            cells.append(f"{'warm-up' if warm else 'without'} best {min(values):.2f} median "
                         f"{statistics.median(values):.2f} s")
        ratio = (statistics.median(r[key] for r in runs[True])
                 / max(statistics.median(r[key] for r in runs[False]), 1e-3))
        print(f"{what:34s} {cells[0]}; {cells[1]}; median ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
