"""Benchmark: applying the design on 1M rows against the raw columnar read of the file.

Run: ``PYTHONPATH=. python benchmarks/bench_loading.py [--rows 1000000] [--repeat 3]``.

The baseline is ``pyarrow.parquet.read_table`` of the file (the raw columnar read, no
pandas). Measured beside it: ``load_results`` (the Parquet file into pandas), then
``apply_design`` on the loaded table (string columns: one hash of each value per row) and
on the same file read with its dictionary-encoded factor columns as categoricals (the codes
straight from Arrow, no Python strings: ``factor_values``' categorical path), and, as the
previous path, ``apply_design`` on object-dtype columns. All three applied tables must be
identical (``assert_frame_equal``); the script exits 1 if not. CPU seconds of this
process are printed beside wall times (the machine may be shared).
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
        w_dict, c_dict, dict_frame = best(
            lambda: pd.read_parquet(io.BytesIO(data), read_dictionary=factors), r)
        w_capp, c_capp, applied_cat = best(lambda: apply_design(dict_frame, design), r)
        as_object = loaded.astype({f: object for f in factors})
        w_obj, c_obj, applied_obj = best(lambda: apply_design(as_object, design), r)
    pd.testing.assert_frame_equal(applied_cat, applied)
    pd.testing.assert_frame_equal(applied_obj[applied.columns], applied)
    for f in factors:
        assert (applied[f].astype(str) == frame[f]).all(), f
    np.testing.assert_array_equal(applied["deviation"].to_numpy(), frame["deviation"])

    def line(label: str, wall: float, cpu: float, note: str = "") -> None:
        print(f"  {label:52s} {wall:6.3f} s / {cpu:6.3f} s  {note}")

    print(f"{args.rows:,} rows, {len(factors)} factors + outcome + a text column with 5 % "
          f"missing (best of {r}; wall / CPU seconds)")
    line("raw columnar read (pyarrow read_table)", w_raw, c_raw, "1.00x (baseline)")
    line("load_results (Parquet -> pandas)", w_load, c_load, f"{c_load / c_raw:.2f}x CPU")
    line("apply_design on the loaded table (string columns)", w_app, c_app,
         f"{c_app / c_raw:.2f}x CPU of the raw read (target <= 2x)")
    line("read with dictionary columns as categoricals", w_dict, c_dict,
         f"{c_dict / c_raw:.2f}x CPU")
    line("apply_design on the categoricals (codes from Arrow)", w_capp, c_capp,
         f"{c_capp / c_raw:.2f}x CPU; {c_app / c_capp:.1f}x faster than on strings")
    line("apply_design on object columns (previous dtype)", w_obj, c_obj,
         f"{c_obj / c_raw:.2f}x CPU")
    print("  the three applied tables are identical")
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
