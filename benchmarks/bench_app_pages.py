"""Every analysis page at 1M rows: first render and widget changes (issue 32 item 3).

Run: ``PYTHONPATH=. python benchmarks/bench_app_pages.py [--rows 1000000] [--pages a,b]``.

The pages run under Streamlit's AppTest in this process: the time of Streamlit's own work
(the script run, the statistics, building the figures and tables), apart from the
browser's drawing. The table is the bundled BBQ sample (35,868 real rows and its curated
design) repeated to ``--rows`` rows; the **baseline in the same run** is the same page on
``--baseline-rows`` rows of the sample (default 10,000: issue 44's "1M-row first render
within 1.5x the 10k one"; 0: the whole sample), by default every row of evenly spaced
example ids (``--baseline spread``: the same categories, templates and pairs as the large
table; ``--baseline first``, the sample's first rows, has one category), so the ratio
says what the 100x larger table costs a page.

As the app does when a table is loaded, the design is applied once first (cached per
table, printed apart). Then, per page: the **first render** (a fresh session on the loaded
table: its cell tables are not cached yet; Streamlit's discovery of installed components,
which a server does once at its start and AppTest on every new test, is done once and
printed apart) and **widget changes**: every radio, selectbox,
toggle and checkbox of the page with a ``key=`` set in turn to another value (at most
``--widgets`` per page), each timed; p95 over all changes of all pages is printed against
the targets (first render < 1 s, widget change < 0.5 s at p95).

By default (``--early-jobs``) the large table's loading also submits the Coverage page's
count-unit job as the app does (every page's ``ensure_data``, from
``ui.coverage.EARLY_COUNT_ROWS`` rows: the count unit and the cell table the page sums)
and waits for it before the pages (its time printed apart): the first render of a visitor
who opens Coverage after that job ended. With ``--no-early-jobs`` Coverage submits the job
itself and waits for it up to ``BIAS_WORKBENCH_INFERENCE_WAIT`` seconds within its first
render (a visitor who opens Coverage within seconds of loading 1M rows).

With ``--repeat N`` each page's first render is timed N times at both sizes, Streamlit's
caches cleared and the design applied again before each repetition (the load-time job's
result stays, as on a server that keeps running); the best and median ratios (wall and
CPU) are printed: the ratios of pages that take 0.1-0.5 s vary by 0.3-0.5 between single
runs on a shared machine.

The numbers checked: the large table is whole copies of the sample (28 x 35,868 =
1,004,304 rows by default), so with the whole sample as the baseline (``--baseline-rows 0``)
the Subgroups page must show the same subgroups with the same deviation rates and n times
the copies; no page may show an exception box at either size
(a page's own message about a setting is counted as an answer).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGES = ["coverage", "subgroups", "ecdf", "compare", "importance", "disparity",
         "bias_index", "cohorts"]
SAMPLE = "bbq_unifiedqa.csv.gz"


def spread(frame: pd.DataFrame, rows: int, unit: str = "example_id") -> pd.DataFrame:
    """About ``rows`` rows of ``frame``: every row of evenly spaced ``unit`` values (in
    order of first appearance), so the smaller table has the same factor values, templates
    and pairs as the whole one (the sample's first rows hold one category only)."""
    ids = frame[unit].unique()
    keep = ids[np.linspace(0, len(ids) - 1, round(len(ids) * rows / len(frame))).round()
               .astype(int)]
    return frame[frame[unit].isin(keep)].reset_index(drop=True)


def tiled(frame: pd.DataFrame, rows: int) -> pd.DataFrame:
    """``frame`` repeated to ``rows`` rows (the last copy cut)."""
    reps = -(-rows // len(frame))
    return frame.iloc[np.tile(np.arange(len(frame)), reps)[:rows]].reset_index(drop=True)


def numbers_of(table: pd.DataFrame) -> pd.DataFrame:
    """Of a Subgroups table: subgroup (the index, sorted), n and deviation rate."""
    from analysis.columns import DEVIATION_RATE, SUBGROUP, N

    return table[[SUBGROUP, N, DEVIATION_RATE]].set_index(SUBGROUP).sort_index()


def subgroup_numbers(at) -> pd.DataFrame:
    """The Subgroups page's table: subgroup, n and deviation rate."""
    return numbers_of(at.dataframe(key="subgroups_table").value)


def copies_agree(small: pd.DataFrame | None, big: pd.DataFrame | None, copies: int) -> bool:
    """Whether ``big`` (:func:`numbers_of` a table of ``copies`` whole copies of the sample)
    has the sample's subgroups, ``copies`` x their n and the same deviation rates."""
    return (small is not None and big is not None and len(small) > 0
            and small.index.equals(big.index)
            and (big.iloc[:, 0].to_numpy() == copies * small.iloc[:, 0].to_numpy()).all()
            and np.allclose(big.iloc[:, 1], small.iloc[:, 1], rtol=1e-12))


def problems(at) -> list[str]:
    """Exception boxes (a page's own ``st.error`` about a setting is an answer, not one)."""
    return [str(e.value)[:200] for e in at.exception]


def timed(at, action=None) -> float:
    t = time.perf_counter()
    (action(at) if action else at).run()
    return time.perf_counter() - t


def changes(at, limit: int) -> list[tuple[str, str, str, object]]:
    """(description, key, kind, new value or option index) for the page's keyed radios,
    selectboxes, toggles and checkboxes."""
    out = []
    for kind in ("radio", "selectbox", "toggle", "checkbox"):
        for w in getattr(at, kind):
            key = getattr(w, "key", None)
            if not key:
                continue
            if kind in ("toggle", "checkbox"):
                out.append((f"{kind} {key}", key, kind, not w.value))
                continue
            others = [i for i in range(len(w.options)) if i != w.index]
            if others:
                out.append((f"{kind} {key} -> {w.options[others[0]][:20]}", key, kind,
                            others[0]))
    return out[:limit]


def apply_change(at, key: str, kind: str, new):
    """Set the widget as a click in the browser would (a radio or selectbox by the index of
    its option: AppTest's ``set_value`` needs the raw value behind a ``format_func``)."""
    w = getattr(at, kind)(key=key)
    if kind in ("toggle", "checkbox"):
        return w.set_value(new)
    w.__class__ = type(f"Forced{type(w).__name__}", (type(w),),
                       {"index": property(lambda self: new)})
    return w.set_value(w.value)


_COMPONENTS: list = []
#: CPU seconds of this process (every thread: the script's, a job's sending) during each
#: first render, in order (a loaded machine stretches wall times; the background
#: worker's own process is not counted, nor the time a page waits for it).
FIRST_CPU: list[float] = []


def components():  # noqa: ANN201 - streamlit's BidiComponentManager
    """One discovery of the installed Streamlit components for every AppTest of the run.

    Each new AppTest scans every installed package's metadata for components on its first
    run (0.2-1 s, the same at any table size); a server does that once, when it starts, so
    it is no part of a page's first render. Timed and printed once instead."""
    if not _COMPONENTS:
        from streamlit.components.v2.component_manager import BidiComponentManager

        t, c = time.perf_counter(), time.process_time()
        manager = BidiComponentManager()
        manager.discover_and_register_components(start_file_watching=False)
        print(f"Streamlit's component discovery (once per server; AppTest repeats it on every "
              f"new test, left out of the first renders): {time.perf_counter() - t:.2f} s "
              f"({time.process_time() - c:.2f} s CPU)")
        _COMPONENTS.append(manager)
    return _COMPONENTS[0]


def bench_page(page: str, frame: pd.DataFrame, design, widgets: int, verbose: bool
               ) -> tuple[float, list[float], int, list[str]]:
    from tests.app.apptools import page_test

    at = page_test(f"{page}.py", frame=frame, design=design, timeout=900)
    if hasattr(at, "_bidi_component_manager"):  # what a server discovers once, at its start
        at._bidi_component_manager = components()
    cpu = time.process_time()
    first = timed(at)
    FIRST_CPU.append(time.process_time() - cpu)
    bad = problems(at)
    numbers = subgroup_numbers(at) if page == "subgroups" and not bad else None
    times = []
    for label, key, kind, new in changes(at, widgets):
        try:
            dt = timed(at, lambda a, k=key, kd=kind, v=new: apply_change(a, k, kd, v))
        except Exception as exc:  # noqa: BLE001 - a widget AppTest cannot set: skipped
            if verbose:
                print(f"      ({label}: not settable under AppTest: {exc!r:.80})")
            continue
        bad += [f"{label}: {p}" for p in problems(at)]
        times.append(dt)
        if verbose:
            print(f"      {label:48s} {dt:6.3f} s")
    return first, times, numbers, bad


def early_jobs(frame: pd.DataFrame, design) -> None:
    """The background job the app submits when a large table is loaded (``ui.coverage.
    start_count_unit``, from every page's ``ensure_data``: the same key, applied table and
    design), waited for and timed."""
    from analysis.names import clash_free
    from ui.common import _applied, token_of
    from ui.coverage import EARLY_COUNT_ROWS, _count_unit_job

    if len(frame) < EARLY_COUNT_ROWS:
        return
    _, pages_design, _ = clash_free(frame.iloc[:0], design)
    applied = _applied(token_of(frame), design.to_json(), frame, design)  # cached at load
    t, c = time.perf_counter(), time.process_time()
    job = _count_unit_job(applied, pages_design, token=token_of(frame))
    if job is not None:
        job.wait(600)
        print(f"The load-time job (Coverage's count unit, the cells, BBQ scores), submitted "
              f"at load as the app does and "
              f"finished before the pages: {time.perf_counter() - t:.2f} s wall "
              f"({time.process_time() - c:.2f} s CPU of this process)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--pages", default=",".join(PAGES))
    parser.add_argument("--widgets", type=int, default=6, help="widget changes per page")
    parser.add_argument("--verbose", action="store_true", help="each widget change")
    parser.add_argument("--repeat", type=int, default=1,
                        help="first renders per page and size (Streamlit's caches cleared "
                             "and the design applied again before each repetition; the "
                             "load-time job's result stays, as on a server): the best and "
                             "median ratios are printed")
    parser.add_argument("--early-jobs", action=argparse.BooleanOptionalAction, default=True,
                        help="as the app does from EARLY_COUNT_ROWS rows (the default), "
                             "submit the Coverage page's count-unit job when the large table "
                             "is loaded and let it finish before the pages (its time printed "
                             "apart): a visitor who opens Coverage after it ended; "
                             "--no-early-jobs: one who opens Coverage at once (the page "
                             "submits the job and waits for it)")
    parser.add_argument("--baseline-rows", type=int, default=10_000,
                        help="rows of the baseline table (issue 44's 10k-row first render; "
                             "0: the whole 35,868-row sample, whose numbers the Subgroups "
                             "check compares)")
    parser.add_argument("--baseline", choices=("spread", "first"), default="spread",
                        help="spread (the default): every row of evenly spaced example ids, "
                             "so the baseline shows the same groups, panels and templates as "
                             "the large table; first: the sample's first rows (one category "
                             "only: fewer groups than at 1M; the sessions 9-10 measure)")
    args = parser.parse_args()

    from analysis.design import Design, apply_design

    sample = pd.read_csv(ROOT / "sample_data" / SAMPLE)
    design = Design.load(ROOT / "sample_data" / SAMPLE.replace(".csv.gz", ".design.yaml"))
    copies = max(1, round(args.rows / len(sample)))
    big = tiled(sample, copies * len(sample))  # whole copies: the numbers can be compared
    t = time.perf_counter()
    apply_design(big, design)
    print(f"{len(big):,} rows (BBQ sample x {copies}); applying the "
          f"design once (cached per table in the app): {time.perf_counter() - t:.2f} s")

    import streamlit as st
    import streamlit.logger

    from ui.common import _applied, token_of

    streamlit.logger.set_log_level("error")  # the cache calls below run outside a script
    warm = tiled(sample, 5_000)  # imports paid before timing (fresh caches: other token)
    base = sample
    if 0 < args.baseline_rows < len(sample):
        base = (spread(sample, args.baseline_rows) if args.baseline == "spread"
                else tiled(sample, args.baseline_rows))
    for frame in (warm, base, big):  # what loading the table does, once per table
        _applied(token_of(frame), design.to_json(), frame, design)
    if args.early_jobs:
        early_jobs(big, design)

    components()  # once, before the pages (printed apart)
    print(f"\n{'page':12s} {'first render':>22s}   {'widget changes p95 (max), n':>30s}")
    print(f"baseline: {len(base):,} rows ({'the sample' if base is sample else args.baseline})")
    print(f"{'':12s} {'large':>8s} {'base':>7s} {'ratio':>5s}   {'large':>17s} {'base':>12s}"
          f"   {'CPU: large':>10s} {'base':>5s} {'ratio':>5s}")
    all_big, firsts, failures = [], {}, []
    ratios: dict[str, list[tuple[float, float]]] = {}  # page: (wall, CPU) ratio per repetition
    pages = [(rep, page) for rep in range(args.repeat) for page in args.pages.split(",")]
    for rep, page in pages:
        if rep and page == pages[0][1]:  # a fresh start: every cached step computed again
            st.cache_resource.clear()
            st.cache_data.clear()
            for frame in (base, big):
                _applied(token_of(frame), design.to_json(), frame, design)
            print(f"-- repetition {rep + 1} (load {os.getloadavg()[0]:.1f})")
        if not rep:
            bench_page(page, warm, design, args.widgets, False)  # the imports of its modules
        f_small, t_small, c_small, bad_small = bench_page(page, base, design, args.widgets,
                                                          False)
        cpu_small = FIRST_CPU[-1]
        if args.verbose:
            print(f"  {page}")
        f_big, t_big, c_big, bad_big = bench_page(page, big, design, args.widgets,
                                                  args.verbose)
        cpu_big = FIRST_CPU[-1]
        failures += [f"{page} (baseline): {p}" for p in bad_small]
        failures += [f"{page} (1M): {p}" for p in bad_big]
        # whole copies of the sample: the same rates, n x copies
        if page == "subgroups" and base is sample and not copies_agree(c_small, c_big, copies):
            failures.append(f"subgroups: the table at {len(big):,} rows is not the "
                            f"sample's with n x {copies}")
        firsts[page] = min(f_big, firsts.get(page, f_big))
        all_big += t_big
        ratios.setdefault(page, []).append((f_big / f_small, cpu_big / cpu_small))

        def p95(ts: list[float]) -> str:
            if not ts:
                return "-"
            q = np.quantile(ts, 0.95) if len(ts) > 1 else ts[0]
            return f"{q:.3f} ({max(ts):.2f}), {len(ts)}"

        print(f"{page:12s} {f_big:8.3f} {f_small:7.3f} {f_big / f_small:5.1f}   "
              f"{p95(t_big):>17s} {p95(t_small):>12s}   {cpu_big:10.3f} {cpu_small:5.3f} "
              f"{cpu_big / cpu_small:5.1f}", flush=True)

    if args.repeat > 1:
        print(f"\nratios 1M / baseline over {args.repeat} repetitions: best, median")
        for page, rs in ratios.items():
            wall, cpu = zip(*rs, strict=True)
            print(f"{page:12s} wall {min(wall):4.2f} {statistics.median(wall):4.2f}   "
                  f"CPU {min(cpu):4.2f} {statistics.median(cpu):4.2f}   "
                  f"(CPU: {' '.join(f'{c:.2f}' for c in cpu)})")
    q = float(np.quantile(all_big, 0.95)) if all_big else float("nan")
    worst = max(firsts, key=firsts.get)
    print(f"\nfirst render at {len(big):,} rows: median {statistics.median(firsts.values()):.3f}"
          f" s, slowest {firsts[worst]:.3f} s ({worst})   target < 1 s")
    print(f"widget changes at {len(big):,} rows: p95 {q:.3f} s over {len(all_big)} changes"
          f"   target < 0.5 s")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
