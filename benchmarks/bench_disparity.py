"""Benchmark: permutation tests of group statistics, vectorised against the naive loop.

Run: ``.venv/bin/python benchmarks/bench_disparity.py [--rows 41440] [--groups 6]
[--permutations 200]``.

The naive way recomputes every group's statistic and the statistic of the rest of the
rows with a pandas groupby / boolean masks per permutation. ``permutation_test`` uses
power sums (``np.bincount``) for moments and a single sort for quantiles (shuffled labels
over sorted values keep each group sorted; the complement's order statistics come from a
binary search), so a permutation costs a few O(rows) passes. Both give the same p-values
(same seed, same shuffles); the script checks that before timing.

Also timed: the full ``disparity_report`` (999 permutations) on the bundled SSQA
simulation, what the Disparity page computes on first load; and adaptive against fixed
permutations at 200,000 rows (``--adaptive-rows``): with 999 at most, a group stops once
its p-value is clearly above or below alpha, so clear-cut groups need 99-199 shuffles.

And the table path against the row path (``--table-rows``, default 1M rows, 6 groups): a
0/1 answer and a 1-5 score, 199 fixed shuffles each way. The observed statistics must be
identical and the p-values agree within Monte Carlo error (the table path draws the same
permutation distribution from another random stream; ``docs/disparity.md``); the script
fails otherwise. ``--only-table`` runs this part alone.
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

from analysis.columns import GROUP, P_VALUE  # noqa: E402
from analysis.disparity import disparity_report, permutation_test  # noqa: E402

STATS = {"mean": lambda x: x.mean(), "median": lambda x: np.median(x),
         "variance": lambda x: x.var(ddof=1), "skewness": None}


def naive(x: np.ndarray, codes: np.ndarray, k: int, statistic: str, m: int, seed: int
          ) -> np.ndarray:
    """Per permutation: pandas groupby for the groups, masks for the complements."""
    from scipy import stats

    def stat(v: np.ndarray) -> float:
        if statistic == "skewness":
            return float(stats.skew(v, bias=False))
        return float(STATS[statistic](v))

    def t_of(lab: np.ndarray) -> np.ndarray:
        s = pd.Series(x).groupby(lab)
        own = {"mean": s.mean, "median": s.median, "variance": s.var,
               "skewness": s.skew}[statistic]().to_numpy()
        rest = np.array([stat(x[lab != g]) for g in range(k)])
        return own - rest

    t_obs = t_of(codes)
    rng = np.random.default_rng(seed)
    b = np.zeros(k)
    for _ in range(m):
        b += np.abs(t_of(rng.permutation(codes))) >= np.abs(t_obs) - 1e-12 * np.maximum(
            1, np.abs(t_obs))
    return (b + 1) / (m + 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=41_440)
    ap.add_argument("--groups", type=int, default=6)
    ap.add_argument("--permutations", type=int, default=200)
    ap.add_argument("--adaptive-rows", type=int, default=200_000)
    ap.add_argument("--only-adaptive", action="store_true",
                    help="skip the naive comparison; time adaptive against fixed only")
    ap.add_argument("--table-rows", type=int, default=1_000_000)
    ap.add_argument("--only-table", action="store_true", help="table against row path only")
    args = ap.parse_args()
    table_vs_rows(args.table_rows)
    if args.only_table:
        return
    adaptive_vs_fixed(args.adaptive_rows)
    if args.only_adaptive:
        return
    rng = np.random.default_rng(0)
    labels = [f"g{i}" for i in range(args.groups)]
    codes = rng.integers(0, args.groups, args.rows)
    x = rng.normal(0, 0.2, args.rows) + 0.02 * codes
    frame = pd.DataFrame({"g": pd.Categorical.from_codes(codes, labels), "f": x})
    m = args.permutations
    print(f"{args.rows:,} rows, {args.groups} groups, {m} permutations, each group "
          "against the rest")
    print(f"{'statistic':<10} {'naive (s)':>10} {'vectorised (s)':>15} {'speed-up':>9}  "
          "same p-values")
    for statistic in STATS:
        t0 = time.perf_counter()
        p_naive = naive(x, codes, args.groups, statistic, m, seed=1)
        t_naive = time.perf_counter() - t0
        t0 = time.perf_counter()
        fast = permutation_test(frame, "f", "g", statistic=statistic, n_resamples=m,
                                seed=1, adaptive=False)
        t_fast = time.perf_counter() - t0
        same = np.allclose(fast[P_VALUE].to_numpy(), p_naive)
        print(f"{statistic:<10} {t_naive:>10.2f} {t_fast:>15.3f} {t_naive / t_fast:>8.0f}x  "
              f"{same}")
        assert list(fast[GROUP]) == labels

    ssqa = pd.read_csv(ROOT / "sample_data" / "ssqa_simulated.csv.gz")
    for statistic in ("mean", "median"):
        t0 = time.perf_counter()
        disparity_report(ssqa, "sentiment", "pachankis_cluster", statistic=statistic,
                         n_resamples=999)
        print(f"disparity_report on the SSQA sample ({len(ssqa):,} rows, 6 clusters, "
              f"{statistic}, 999 permutations): {time.perf_counter() - t0:.2f} s")


def adaptive_vs_fixed(rows: int, m: int = 999) -> None:
    """Time 999 fixed shuffles against adaptive stopping on a 200k-row, 8-group table:
    four groups shifted clearly, four not at all (all p-values clear of 0.05)."""
    rng = np.random.default_rng(3)
    k = 8
    codes = rng.integers(0, k, rows)
    shift = np.array([0.0, 0.0, 0.0, 0.0, 0.05, -0.05, 0.08, -0.08])
    frame = pd.DataFrame({"g": pd.Categorical.from_codes(codes, [f"g{i}" for i in range(k)]),
                          "f": rng.normal(0, 1, rows) + shift[codes]})
    import scipy.stats  # noqa: F401 - imported once, outside the timings

    print(f"\nAdaptive permutations: {rows:,} rows, {k} groups, at most {m}")
    for statistic in ("mean", "median"):
        t0 = time.perf_counter()
        fixed = permutation_test(frame, "f", "g", statistic=statistic, n_resamples=m,
                                 seed=0, adaptive=False)
        t_fixed = time.perf_counter() - t0
        t0 = time.perf_counter()
        adaptive = permutation_test(frame, "f", "g", statistic=statistic, n_resamples=m,
                                    seed=0, adaptive=True)
        t_adaptive = time.perf_counter() - t0
        same = ((fixed[P_VALUE] < 0.05) == (adaptive[P_VALUE] < 0.05)).all()
        used = adaptive["n_permutations"].tolist()
        print(f"{statistic:<8} fixed {t_fixed:6.2f} s, adaptive {t_adaptive:6.2f} s "
              f"({t_fixed / t_adaptive:.1f}x); shuffles used {used}; same verdicts at "
              f"0.05: {same}")


def table_vs_rows(rows: int, m: int = 199) -> None:
    """The permutation test of a few-valued feature drawn as tables against the rows."""
    from analysis import disparity as dsp

    rng = np.random.default_rng(5)
    k = 6
    codes = rng.integers(0, k, rows)
    frame = pd.DataFrame({
        "g": pd.Categorical.from_codes(codes, [f"g{i}" for i in range(k)]),
        "answer": (rng.random(rows) < 0.3 + 0.002 * codes).astype(float),
        "score": rng.choice(5, rows, p=[0.1, 0.2, 0.4, 0.2, 0.1]) + 1.0 + (codes == 5)
        * (rng.random(rows) < 0.004)})
    print(f"\nTable path against row path: {rows:,} rows, {k} groups, {m} fixed shuffles")
    failures = []
    for feature, statistic in (("answer", "mean"), ("score", "mean"), ("score", "median"),
                               ("score", "variance")):
        times, cpu, out = [], [], []
        for cells in (dsp.TABLE_CELLS, 0):  # 0: every feature takes the row path
            dsp.TABLE_CELLS = cells
            t0, c0 = time.perf_counter(), time.process_time()
            out.append(permutation_test(frame, feature, "g", statistic=statistic,
                                        n_resamples=m, seed=1, adaptive=False,
                                        return_path=True))
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        dsp.TABLE_CELLS = 4096
        (table, by_table), (rows_, by_rows) = out
        paths = (by_table, by_rows)
        same = all(np.array_equal(table[c], rows_[c], equal_nan=True)
                   for c in ("observed", "compared_with", "difference"))
        p, q = table[P_VALUE].to_numpy(), rows_[P_VALUE].to_numpy()
        se = np.sqrt(np.maximum(p * (1 - p), 1 / m) * 2 / m)
        close = bool(np.all(np.abs(p - q) <= 4.5 * se))
        print(f"{feature:<7} {statistic:<9} table {times[0]:6.3f} s (CPU {cpu[0]:.3f}), rows "
              f"{times[1]:6.2f} s (CPU {cpu[1]:.2f}): {times[1] / times[0]:5.0f}x; paths "
              f"{paths}; observed identical {same}; p-values within MC error {close}")
        if paths != ("table", "rows") or not same or not close:
            failures.append(f"{feature} {statistic}")
    if failures:
        raise SystemExit(f"table path differs from the row path: {', '.join(failures)}")


if __name__ == "__main__":
    main()
