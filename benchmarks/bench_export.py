"""Benchmark: figure exports (PNG/SVG/PDF) with the warm exporter, and a batch of figures.

Run: ``PYTHONPATH=. python benchmarks/bench_export.py [--rows 200000] [--repeat 3]``.

1. The first export of a process (kaleido starts Chrome) and then each format of the
   Subgroups sunburst and of the importance coefficient plot (target: < 1.5 s each
   after the first). Every image is checked: PNG signature and the pixel size
   ``export_size`` asked for (scale 2), an SVG document, a PDF header.
2. With ``warm_up()`` called first (as the CLI does for ``--figure``), the time left to
   wait for the first export after a computation of the same length as the warm-up.
3. A report's worth of figures (every figure x PNG/SVG/PDF) one call each (the previous
   path) against one ``figures_bytes`` batch; the PNGs must be byte-identical, the SVGs
   identical up to the random ids plotly.js gives clip paths and traces, and every PDF a PDF.
4. ``report_zip`` of a full report, each in a fresh process: the previous path (one
   figure and format at a time) against the current one (``warm_up()`` once the input
   has loaded, as ``python -m analysis report --zip`` does, so Chrome starts while the
   report is built; one ``figures_bytes`` batch per section); same entries, identical PNGs.
"""

from __future__ import annotations

import argparse
import os
import re
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_subgroups import SIZES, make_results  # noqa: E402

from analysis import export  # noqa: E402
from analysis.cells import cell_table  # noqa: E402
from analysis.design import apply_design  # noqa: E402

FORMATS = ("png", "svg", "pdf")


def check_image(data: bytes, fmt: str, fig) -> None:
    """Fail loudly unless ``data`` is a whole image of the asked kind and size."""
    if fmt == "png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
        width, height = struct.unpack(">II", data[16:24])
        w, h = export.export_size(fig)
        assert (width, height) == (w * export.EXPORT_SCALE, h * export.EXPORT_SCALE), (
            width, height, w, h)
    elif fmt == "svg":
        assert b"<svg" in data[:400] and data.rstrip().endswith(b"</svg>"), "not an SVG"
    else:
        assert data[:5] == b"%PDF-" and b"%%EOF" in data[-1024:], "not a PDF"


def svg_shape(data: bytes) -> bytes:
    """An SVG with plotly.js's random ids (clip paths, gradients, trace uids: runs of 6
    or more hex digits) replaced by one token: two renders of one figure differ only
    there."""
    return re.sub(rb"[0-9a-f]{6,}", b"ID", data)


def figures(rows: int) -> list[tuple[str, object]]:
    from analysis.figures.importance import importance_figure
    from analysis.figures.subgroups import sunburst_figure
    from analysis.importance import factor_importance
    from analysis.subgroups import subgroups

    frame, design = make_results(rows, SIZES)
    results = apply_design(frame, design)
    factors = design.names
    cells = cell_table(results, factors)
    table = subgroups(cells, factors, max_level=3)
    fit = factor_importance(results, design, factors=factors)
    return [("sunburst", sunburst_figure(table, factors)),
            ("coefficients", importance_figure(fit.terms))]


WARM = r"""
import sys, time
import plotly.graph_objects as go
from analysis import export
fig = go.Figure(go.Bar(x=["a", "b", "c"], y=[1, 3, 2]))
if sys.argv[1] == "warm":
    export.warm_up()
time.sleep(float(sys.argv[2]))  # the command's own work
t = time.perf_counter()
assert export.figure_bytes(fig, "png")[:4] == b"\x89PNG"
print(time.perf_counter() - t)
"""


REPORT_ZIP = r"""
import io, json, sys, time, zipfile
sys.path.insert(0, sys.argv[3])
from bench_subgroups import SIZES, make_results
from analysis import export, report
from analysis.design import apply_design
frame, design = make_results(int(sys.argv[2]), SIZES)
start = time.perf_counter()
if sys.argv[1] == "batch":  # as `python -m analysis report ... --zip` once the input loaded
    export.warm_up()
built = report.build_report(apply_design(frame, design), design)
html = report.report_html(built)
if sys.argv[1] == "previous":  # one figure and format at a time, no warm-up
    export.warm_up = lambda: False
    def one_at_a_time(zf, sec, prefix, used, readme):
        for name, fig in sec.figures:
            stem = report.zip_entry_name("figures", f"{prefix}_{name}", "", used)[:-1]
            report._zip_figure(zf, stem, fig, export.IMAGE_FORMATS, sec, name, readme)
    report._zip_section_figures = one_at_a_time
t = time.perf_counter()
data = report.report_zip(built, html)
wall, total = time.perf_counter() - t, time.perf_counter() - start
with zipfile.ZipFile(io.BytesIO(data)) as zf:
    names = zf.namelist()
    pngs = {n: zf.read(n).hex() for n in names if n.endswith(".png")}
print(json.dumps({"wall": wall, "total": total, "names": names, "pngs": pngs,
                  "figures": sum(len(s.figures) for s in built.sections)}))
"""


def bench_report_zip(rows: int) -> None:
    """The report ZIP from a fresh process (Chrome not started yet), as the CLI and a new
    app session pay it: one figure and format at a time (the previous path) against the
    warm-up plus one batch per section."""
    import json
    import subprocess

    print("\n4. the report ZIP (every section's figures x PNG/SVG/PDF), fresh process "
          "each (wall seconds)")
    out = {}
    for mode in ("previous", "batch", "previous", "batch"):
        done = subprocess.run([sys.executable, "-c", REPORT_ZIP, mode, str(rows),
                               str(ROOT / "benchmarks")], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        r = json.loads(done.stdout)
        out.setdefault(mode, []).append(r)
    prev, batch = out["previous"], out["batch"]
    if prev[0]["names"] != batch[0]["names"] or prev[0]["pngs"] != batch[0]["pngs"]:
        sys.exit("FAIL: the batched ZIP's entries or PNGs differ from the previous path's")
    n_images = sum(n.endswith((".png", ".svg", ".pdf")) for n in batch[0]["names"])
    print(f"   {batch[0]['figures']} figures, {n_images} images (best of two; the ZIP alone "
          "/ building the report + its HTML + the ZIP)")
    t_prev, t_batch = (min(r["wall"] for r in runs) for runs in (prev, batch))
    a_prev, a_batch = (min(r["total"] for r in runs) for runs in (prev, batch))
    print(f"   one at a time (previous path):           {t_prev:6.2f} s / {a_prev:6.2f} s  "
          "(1.00x)")
    print(f"   warm-up at load + one batch per section: {t_batch:6.2f} s / {a_batch:6.2f} s  "
          f"({t_prev / t_batch:.2f}x / {a_prev / a_batch:.2f}x faster); same entries, "
          "PNGs byte-identical")


def bench_warm_up(compute: float) -> None:
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    waits = {}
    for mode in ("cold", "warm"):
        done = subprocess.run([sys.executable, "-c", WARM, mode, str(compute)],
                              capture_output=True, text=True, env=env, check=True)
        waits[mode] = float(done.stdout.split()[-1])
    print(f"\n2. first export after {compute:g} s of other work in a fresh process")
    print(f"   without warm_up(): {waits['cold']:6.2f} s to wait")
    print(f"   with warm_up() at the start (the CLI with --figure): {waits['warm']:6.2f} s "
          f"({waits['cold'] / waits['warm']:.1f}x less)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--report-rows", type=int, default=20_000)
    parser.add_argument("--only-report", action="store_true", help="only part 4")
    args = parser.parse_args()
    if args.only_report:
        bench_report_zip(args.report_rows)
        return
    if not export.browser_available():
        sys.exit("no Chrome/Chromium: image export cannot be measured here")
    print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")
    figs = figures(args.rows)

    print("1. one export at a time (wall seconds)")
    name, fig = figs[0]
    t = time.perf_counter()
    check_image(export.figure_bytes(fig, "png"), "png", fig)
    first = time.perf_counter() - t
    print(f"   first export of the process ({name} png, starts Chrome): {first:6.2f} s")
    worst = 0.0
    for name, fig in figs:
        for fmt in FORMATS:
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                data = export.figure_bytes(fig, fmt)
                times.append(time.perf_counter() - t)
                check_image(data, fmt, fig)
            worst = max(worst, max(times))
            print(f"   {name:12s} {fmt}: best {min(times):5.2f} s, worst {max(times):5.2f} s"
                  f"  ({len(data):,} bytes)")
    print(f"   slowest export after the first: {worst:.2f} s (target < 1.5 s)")
    bench_warm_up(max(2 * first, 6.0))

    print("\n3. a report's figures, every figure x PNG/SVG/PDF (wall seconds)")
    items = [(fig, fmt) for _, fig in figs for _ in range(4) for fmt in FORMATS]
    t = time.perf_counter()
    one_by_one = [export.figure_bytes(fig, fmt) for fig, fmt in items]
    t_one = time.perf_counter() - t
    t = time.perf_counter()
    batch = export.figures_bytes(items)
    t_batch = time.perf_counter() - t
    for (fig, fmt), a, b in zip(items, one_by_one, batch, strict=True):
        check_image(b, fmt, fig)
        if fmt == "png":
            assert a == b, "batch PNG differs from the one-by-one PNG"
        elif fmt == "svg":
            assert svg_shape(a) == svg_shape(b), "batch SVG differs"
    print(f"   {len(items)} images one call each (previous path): {t_one:6.2f} s  (1.00x)")
    print(f"   {len(items)} images in one figures_bytes batch:    {t_batch:6.2f} s  "
          f"({t_one / t_batch:.2f}x faster)")
    print("   PNGs byte-identical, SVGs identical but for plotly.js's random ids")
    bench_report_zip(args.report_rows)
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
