"""Coverage's first render at 1M rows with its count unit read late or early (issue 44.3).

Run: ``PYTHONPATH=. python benchmarks/bench_coverage_count_unit.py``.

The bundled BBQ sample x 28 (1,004,304 rows) and its design (no inferred item id: the
Coverage page reads the table's structure in the background worker,
``ui/coverage.py::counted_for``). "late": a fresh Coverage page submits the job and waits
its 2 s; "early": the Data page ran first (``ui.coverage.start_count_unit``), the job
finished while the visitor was there, then the Coverage page's first run. Printed: wall
and CPU seconds of this process (the worker's CPU apart) and whether the first run
already counts the items (else the design's prompt unit meanwhile, and a rerun later).
Two rounds, interleaved, under AppTest (the page caches and the job registry cleared
between scenarios).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_app_pages as b  # noqa: E402
from bench_subgroups_page_step import sample_and_design  # noqa: E402


def main() -> None:
    import streamlit.logger

    from tests.app.apptools import page_test
    from ui import common, coverage, inference_pool
    from ui.common import _applied, token_of

    sample, design = sample_and_design()
    big, warm = b.tiled(sample, 28 * len(sample)), b.tiled(sample, 5000)
    streamlit.logger.set_log_level("error")
    for f in (warm, big):
        _applied(token_of(f), design.to_json(), f, design)
    b.components()
    b.bench_page("coverage", warm, design, 0, False)  # the page's imports

    def first_run(page: str) -> tuple[float, float, object]:
        at = page_test(page, frame=big, design=design, timeout=900)
        at._bidi_component_manager = b.components()
        c, t = time.process_time(), time.perf_counter()
        at.run()
        assert not at.exception, at.exception
        return time.perf_counter() - t, time.process_time() - c, at

    def items(at: object) -> bool:
        return any("distinct items" in o for o in at.radio(key="coverage_count").options)

    def fresh() -> None:
        inference_pool._jobs.clear()
        for cache in (coverage._coverage_cells, common._cells, common._result,
                      common._per_table):
            cache.clear()

    for _ in range(2):
        fresh()
        w, c, at = first_run("coverage.py")
        print(f"late : Coverage first run {w:.2f} s wall, {c:.2f} s CPU; "
              f"items counted at once: {items(at)}")
        fresh()
        dw, dc, _ = first_run("data.py")
        job = inference_pool.job(f"{token_of(big)}|coverage|{design.to_json()}")
        t = time.perf_counter()
        job.wait(120)
        jw = time.perf_counter() - t
        w, c, at = first_run("coverage.py")
        print(f"early: Data page {dw:.2f} s wall, {dc:.2f} s CPU; the job done "
              f"{jw:.2f} s after it; Coverage first run {w:.2f} s "
              f"wall, {c:.2f} s CPU; items counted at once: {items(at)}")


if __name__ == "__main__":
    main()
