"""Benchmark: applying the design on 1M rows against the raw columnar read of the file.

Run: ``PYTHONPATH=. python benchmarks/bench_loading.py [--rows 1000000] [--repeat 3]``.

The baseline is ``pyarrow.parquet.read_table`` of the file (the raw columnar read, no
pandas). Measured beside it: ``load_results`` (the Parquet file into pandas: a large
table's repetitive text columns arrive as categoricals, straight from Arrow's dictionary
codes, :mod:`analysis.bounded`), then ``apply_design`` on that table (the design's codes
from the categorical codes, no Python strings), on the same factors as pandas text
(``str``: one hash of each value per row) and, as the previous path, on object-dtype
columns. The design's columns of the three applied tables must be identical
(``assert_frame_equal``) and the other columns hold the same values; the script exits 1
if not. CPU seconds of this process are printed beside wall times (the machine may be
shared).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_subgroups import SIZES, make_results  # noqa: E402

from analysis.design import apply_design  # noqa: E402
from analysis.io import load_results  # noqa: E402


def best(fn, repeat: int):
    """(wall, CPU) seconds of the fastest of ``repeat`` calls, and the last result."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")
    frame, design = make_results(args.rows, SIZES)
    rng = np.random.default_rng(1)
    frame["answer"] = np.where(rng.random(args.rows) < 0.05, None,
                               np.where(frame["deviation"] == 1, "yes", "no"))
    factors = design.names
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.parquet"
        frame.to_parquet(path, index=False)  # pyarrow writes dictionary-encoded columns
        data = path.read_bytes()
        r = args.repeat
        w_raw, c_raw, _ = best(lambda: pq.read_table(io.BytesIO(data)), r)
        w_load, c_load, loaded = best(lambda: load_results(path), r)
        w_app, c_app, applied = best(lambda: apply_design(loaded, design), r)
        as_str = loaded.astype({f: "str" for f in factors})
        w_str, c_str, applied_str = best(lambda: apply_design(as_str, design), r)
        as_object = loaded.astype({f: object for f in factors})
        w_obj, c_obj, applied_obj = best(lambda: apply_design(as_object, design), r)
    # the design's columns are identical; the others pass through as each reader gave
    # them, with the same values
    designed = [*factors, "deviation"]
    pd.testing.assert_frame_equal(applied_str[designed], applied[designed])
    pd.testing.assert_frame_equal(applied_obj[designed], applied[designed])
    assert list(applied_str.columns) == list(applied.columns) == list(applied_obj.columns)
    for c in applied.columns.difference(designed):
        for other in (applied_str, applied_obj):
            pd.testing.assert_series_equal(other[c].astype(object), applied[c].astype(object))
    for f in factors:
        assert (applied[f].astype(str) == frame[f]).all(), f
    np.testing.assert_array_equal(applied["deviation"].to_numpy(), frame["deviation"])

    def line(label: str, wall: float, cpu: float, note: str = "") -> None:
        print(f"  {label:52s} {wall:6.3f} s / {cpu:6.3f} s  {note}")

    print(f"{args.rows:,} rows, {len(factors)} factors + outcome + a text column with 5 % "
          f"missing (best of {r}; wall / CPU seconds)")
    line("raw columnar read (pyarrow read_table)", w_raw, c_raw, "1.00x (baseline)")
    line("load_results (Parquet -> pandas)", w_load, c_load, f"{c_load / c_raw:.2f}x CPU")
    line("apply_design on it (its text as categoricals: Arrow's codes)", w_app, c_app,
         f"{c_app / c_raw:.2f}x CPU of the raw read (target <= 2x)")
    line("apply_design on the factors as pandas text (str)", w_str, c_str,
         f"{c_str / c_raw:.2f}x CPU; {c_str / c_app:.1f}x the categoricals'")
    line("apply_design on object columns (pandas 2's dtype)", w_obj, c_obj,
         f"{c_obj / c_raw:.2f}x CPU; {c_obj / c_app:.1f}x the categoricals'")
    print("  the three applied tables are identical (the design's columns; the others hold "
          "the same values)")
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
