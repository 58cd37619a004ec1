"""Benchmark: judge-noise survival (``analysis/judge_noise.py``) against the naive loop.

Run: ``.venv/bin/python benchmarks/bench_judge_noise.py [--rows 100000] [--replicates 200]``.

1. The bundled four-stage sample (32 results rows) judged with synthetic K = 5 samples:
   R replicates of subgroups (stage x model, level 2) and of factor importance (model,
   cluster-robust on pair_id), in seconds.
2. A synthetic judged table (``--rows`` rows, 3 factors, K = 5): ``subgroup_noise`` (one
   vectorised draw per block, per-cell sums through a sparse matrix, distinct replicates
   analysed once, replicates with the same total deviations in one ``disparity_stats``
   call) against the naive way: per replicate, redraw every row in Python-level numpy,
   rebuild the cell table and call ``analysis.subgroups.subgroups``. Both give the same
   shares for the same seed (checked), and the script prints the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis import judge_noise as jn  # noqa: E402
from analysis.cells import cell_table  # noqa: E402
from analysis.columns import DEVIATION, LOG_DISPARITY, P_ADJUSTED  # noqa: E402
from analysis.design import Design, Outcome, apply_design, make_factor  # noqa: E402
from analysis.subgroups import distinct_subgroups, subgroups  # noqa: E402


def fourstage() -> tuple[pd.DataFrame, Design]:
    """The judged four-stage sample of the page tests (synthetic K = 5 samples)."""
    from tests.app.test_judge_noise_page import judged_results

    results, design = judged_results()
    return apply_design(results, design), design


def synthetic(rows: int, k: int = 5, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"model": rng.choice(["m1", "m2", "m3"], rows),
                          "stage": rng.choice(["1", "2", "3", "4"], rows),
                          "group": rng.choice([f"g{i}" for i in range(8)], rows)})
    centre = 3.2 - 0.4 * (frame["model"] == "m2") + 0.1 * frame["group"].str[1:].astype(int) / 8
    samples = np.clip(np.rint(centre.to_numpy()[:, None] + rng.normal(0, 1, (rows, k))), 1, 5)
    frame["score_samples"] = [json.dumps(s) for s in samples.astype(int).tolist()]
    frame["score"] = samples.mean(axis=1)
    frame["threshold"] = 3.0
    frame["deviation"] = (frame["score"] < 3).astype(float)
    design = Design(factors=tuple(make_factor(frame, f) for f in ("model", "stage", "group")),
                    outcome=Outcome(DEVIATION, "binary"))
    return apply_design(frame, design)


def naive(results: pd.DataFrame, factors: list[str], replicates: int, seed: int,
          alpha: float = 0.05) -> pd.DataFrame:
    """Per replicate: the same draws (same rule and stream), a new cell table, subgroups()."""
    deviations = jn.replicate_deviations(results, n_resamples=replicates, mode="mean",
                                         seed=seed)
    original = distinct_subgroups(subgroups(cell_table(results, factors), factors,
                                            max_level=2))
    same = np.zeros((replicates, len(original)))
    sig = np.zeros_like(same)
    for r in range(replicates):
        rep = results.assign(**{DEVIATION: deviations[r]})
        table = distinct_subgroups(subgroups(cell_table(rep, factors), factors, max_level=2))
        same[r] = np.sign(table[LOG_DISPARITY]) == np.sign(original[LOG_DISPARITY])
        sig[r] = table[P_ADJUSTED] < alpha
    original[jn.SURVIVES] = ((same == 1) & (sig == 1)).mean(axis=0)
    return original


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--replicates", type=int, default=200)
    args = parser.parse_args()
    r = args.replicates
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    results, design = fourstage()
    jn.subgroup_noise(results, ["stage", "model"], n_resamples=5)  # imports, warm-up
    t = time.perf_counter()
    jn.subgroup_noise(results, ["stage", "model"], max_level=2, n_resamples=r)
    t_sub = time.perf_counter() - t
    t = time.perf_counter()
    jn.importance_noise(results, design, n_resamples=r, factors=["model"])
    t_imp = time.perf_counter() - t
    print(f"four-stage sample ({len(results)} rows), R = {r}: subgroups {t_sub:.2f} s, "
          f"importance (cluster-robust) {t_imp:.2f} s")

    big = synthetic(args.rows)
    factors = ["model", "stage", "group"]
    t = time.perf_counter()
    fast = jn.subgroup_noise(big, factors, max_level=2, n_resamples=r, mode="mean", seed=1)
    t_fast = time.perf_counter() - t
    t = time.perf_counter()
    slow = naive(big, factors, r, seed=1)
    t_slow = time.perf_counter() - t
    agree = np.array_equal(fast[jn.SURVIVES].to_numpy(), slow[jn.SURVIVES].to_numpy())
    print(f"{args.rows:,} rows, {len(fast)} subgroups, R = {r}: subgroup_noise {t_fast:.2f} s, "
          f"naive loop {t_slow:.2f} s (x{t_slow / t_fast:.1f}); same shares: {agree}")


if __name__ == "__main__":
    main()
