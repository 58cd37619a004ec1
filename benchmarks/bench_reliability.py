"""Reliability bootstrap speed: weighted sums over rows against the naive resample loop.

Run: ``.venv/bin/python benchmarks/bench_reliability.py [--rows 10000] [--judges 3]
[--n-boot 1000]``

:func:`analysis.judge_stats.reliability.reliability` draws each bootstrap resample as a
count per row and gets alpha's coincidence matrix as a weighted sum (a matrix product per block of
resamples); the ICCs have F intervals and are not resampled. The naive way materialises
every resample (rows repeated) and recomputes alpha from it. Both give the same statistic
for the same resample (``tests/judges/test_reliability.py``); the script prints both times
and the ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.judge_stats.reliability import krippendorff_alpha, reliability, reliability_data  # noqa: E402


def main() -> None:
    """Time both ways on simulated 1-5 scores of several judges."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--judges", type=int, default=3)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--naive-boot", type=int, default=50,
                        help="resamples timed for the naive way (scaled to --n-boot)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, args.rows)
    frame = pd.DataFrame({"id": [f"q{i}" for i in range(args.rows)], "stage": 1})
    for j in range(args.judges):
        scores = np.clip(truth + rng.integers(-1, 2, args.rows), 1, 5).astype(float)
        scores[rng.random(args.rows) < 0.05] = np.nan
        frame[f"ics@j{j}"] = scores
    data = reliability_data([frame])
    start = time.perf_counter()
    table = reliability(data, n_resamples=args.n_boot, seed=0)
    fast = time.perf_counter() - start
    x = data.scores["ics"]
    start = time.perf_counter()
    for _ in range(args.naive_boot):
        sample = x[rng.integers(0, len(x), len(x))]
        krippendorff_alpha(sample, level="ordinal")
    naive = (time.perf_counter() - start) / args.naive_boot * args.n_boot
    print(f"{args.rows:,} rows x {args.judges} judges, {args.n_boot:,} resamples "
          f"(one table row: metric ics, stage 1)")
    print(f"alpha_ordinal {table.iloc[0]['alpha_ordinal']:.4f} "
          f"[{table.iloc[0]['alpha_ordinal_low']:.4f}, {table.iloc[0]['alpha_ordinal_high']:.4f}]")
    print(f"weighted sums: {fast:.2f} s; naive resample loop (scaled from "
          f"{args.naive_boot}): {naive:.2f} s; ratio naive / ours = {naive / fast:.1f}")


if __name__ == "__main__":
    main()
