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
    args = parser.parse_args()
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
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
