"""Variance components at 1e5 rows (issue 39): the REML fit's time against a baseline in
the same run.

Run: ``PYTHONPATH=. python benchmarks/bench_variance_components.py [--rows 100000]``.

The table: ``--rows`` rows of a simulated benchmark (100 templates, 5 seeds, 3 judges,
3 models, a 20-value domain factor; 0/1 outcome). The **baseline** is the same fit on a
tenth of the rows: the fit works on the cells' sufficient statistics, so the ratio says
what ten times the rows cost (the target: the fit of 1e5 rows in seconds, and a ratio
well under 10). The bootstrap (``--n-boot``) is timed apart: each draw is one more fit
on the same cells.
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


def table(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"template": rng.integers(0, 100, rows), "seed": rng.integers(0, 5, rows),
                      "judge": rng.integers(0, 3, rows), "model": rng.integers(0, 3, rows),
                      "domain": rng.integers(0, 20, rows)})
    p = 0.3 + rng.normal(0, 0.1, 100)[d["template"]] + 0.05 * d["model"]
    d["y"] = (rng.random(rows) < np.clip(p, 0.01, 0.99)).astype(int)
    return d


def fit(d: pd.DataFrame, n_boot: int) -> float:
    from analysis.variance_components import fit_components

    start = time.perf_counter()
    fit_components(d, "y", fixed=["model", "domain"], facets=["template", "seed", "judge"],
                   model="model", n_resamples=n_boot)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--n-boot", type=int, default=20)
    args = parser.parse_args()
    fit(table(1000), 0)  # imports and first calls apart
    base = fit(table(args.rows // 10), 0)
    big = fit(table(args.rows), 0)
    print(f"fit, {args.rows // 10:,} rows (baseline): {base:.2f} s")
    print(f"fit, {args.rows:,} rows: {big:.2f} s (ratio {big / base:.2f})")
    boot = fit(table(args.rows), args.n_boot) - big
    print(f"bootstrap, {args.n_boot} draws: {boot:.2f} s ({boot / max(args.n_boot, 1):.3f} s "
          f"per draw)")


if __name__ == "__main__":
    main()
