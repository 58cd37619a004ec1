"""Benchmark: the first figure export of a fresh server (issue 44.4).

Run: ``.venv/bin/python benchmarks/bench_first_export.py [--repeat 3]``.

A fresh ``streamlit run app.py`` per run (``tests/app/browsertools.py``), one headless
chromium (Playwright): the first page view (the Data page with the bundled sample), then
the Subgroups page, then its sunburst's PNG button: the time from the click until the
file is saved. Warm: as shipped, the server's first page view starts kaleido's Chrome in
the background (``ui.widgets.start_exporter``); cold: the same with
``BIAS_WORKBENCH_NO_EXPORT_WARM_UP=1``, i.e. the first export starts Chrome (the previous
behaviour). Runs alternate (best and median of ``--repeat``). The PNGs must be valid and
of similar size (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.app.browsertools import (  # noqa: E402
    CHROMIUM,
    FLAGS,
    free_port,
    running_app,
    settle,
    visit,
)
from ui.widgets import NO_EXPORT_WARM_UP  # noqa: E402


def first_export(warm: bool, folder: Path) -> tuple[float, float, int]:
    """(seconds from the first page view to the click, click -> file saved, PNG bytes)."""
    from playwright.sync_api import sync_playwright

    env = {} if warm else {NO_EXPORT_WARM_UP: "1"}
    with running_app(free_port(), **env) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(accept_downloads=True)
        t_view = time.time()
        page.goto(url)
        settle(page)
        problems = visit(page, "Subgroups")
        if problems:
            sys.exit("; ".join(problems))
        button = page.locator(".st-key-subgroups_sunburst_png button").first
        button.scroll_into_view_if_needed()
        t0 = time.time()
        with page.expect_download(timeout=300_000) as download:
            button.click()
        path = folder / f"{'warm' if warm else 'cold'}_{int(t0)}.png"
        download.value.save_as(path)
        took = time.time() - t0
        browser.close()
    return t0 - t_view, took, path.stat().st_size


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    print(f"uptime: {os.popen('uptime').read().strip()}")
    out = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for warm in (True, False):
                before, took, size = first_export(warm, Path(tmp))
                out[warm].append((took, size))
                print(f"  {'warm' if warm else 'cold'}: first page view -> click {before:.2f} s,"
                      f" first PNG {took:.2f} s ({size:,} B)")
    import statistics

    best = {w: min(t for t, _ in v) for w, v in out.items()}
    median = {w: statistics.median(t for t, _ in v) for w, v in out.items()}
    print(f"first export of a fresh server (goal < 1.5 s): warm start {best[True]:.2f} s best"
          f" / {median[True]:.2f} s median, cold {best[False]:.2f} / {median[False]:.2f} s "
          f"(ratio {best[True] / best[False]:.2f} / {median[True] / median[False]:.2f})")
    print(f"uptime: {os.popen('uptime').read().strip()}")
    sizes = [s for v in out.values() for _, s in v]
    if min(sizes) < 10_000 or max(sizes) > 1.5 * min(sizes):
        print(f"FAIL: PNG sizes {sizes}")
        sys.exit(1)


if __name__ == "__main__":
    main()
