"""Benchmark: eCDF + KS with the API's defaults against pandas + scipy (issue 44.2).

Run: ``.venv/bin/python benchmarks/bench_ecdf.py [--rows 1000000] [--repeat 3]``.

The table: 6 factors of 2-12 values as Arrow strings (``model`` with 4 values is the
comparison factor, the API's default ``by``), 300 templates (the design's cluster: the
API's defaults use it only for ``ci="bootstrap"`` and ``pooled``, both off by default; the
KS test compares subgroup rates), a 0/1 deviation. Timed in one process, alternating,
best and median of ``--repeat``, CPU seconds (``resource.getrusage``: the machine is
shared):

- ours: ``analysis.api.ecdf(frame, design)`` with every default: the design applied,
  the cell table, one rate per subgroup (all 5 other factors) per model, the deviation
  metric, and the KS test of the 6 pairs of models: with tied rates the sequential
  permutation test (at most 9,999 random splits, stopping once the decision at 0.05
  and at the Benjamini-Hochberg thresholds is clear);
- the baseline an analyst would write: ``groupby([model, *factors])`` over the rows for
  the rates, then ``scipy.stats.ks_2samp(..., method="asymp")`` per pair;
- for reference, ``analysis.ecdf.ks_tests`` with ``adaptive=False`` (all 9,999 splits
  per pair, the previous behaviour) on the same rates.

Numbers: the subgroup rates and every pair's D must equal the baseline's (1e-12); the
p-values are printed beside scipy's asymptotic ones (which assume no ties, so they are
larger) and the fixed-split ones, whose decisions at 0.05 must be the same, and, where
the sequential test drew splits, whose p-values must agree within 4 Monte Carlo SEs.
Exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_clustered_subgroups import SIZES, make_results  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def baseline(frame: pd.DataFrame, factors: list[str]) -> tuple[pd.DataFrame, list]:
    from scipy import stats

    g = frame.groupby(["model", *factors], observed=True)["deviation"].mean()
    rates = g.rename("deviation_rate").reset_index()
    curves = {m: x["deviation_rate"].to_numpy() for m, x in rates.groupby("model", sort=True)}
    tests = [(a, b, stats.ks_2samp(curves[a], curves[b], method="asymp"))
             for a, b in itertools.combinations(sorted(curves), 2)]
    return rates, tests


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    import analysis.api as api
    from analysis.ecdf import ks_tests

    print(f"uptime: {os.popen('uptime').read().strip()}")
    frame, design = make_results(args.rows, 300)
    factors = [f for f in SIZES if f != "model"]
    api.ecdf(frame.head(5000), design)  # imports out of the timing
    baseline(frame.head(5000), factors)
    times = {"ours": [], "baseline": []}
    for _ in range(args.repeat):
        t = cpu()
        res = api.ecdf(frame, design)
        times["ours"].append(cpu() - t)
        t = cpu()
        rates, tests = baseline(frame, factors)
        times["baseline"].append(cpu() - t)
    t = cpu()
    fixed = ks_tests(res.tables["rates"], by="model", adaptive=False)
    fixed_cpu = cpu() - t
    import statistics

    ours, base = min(times["ours"]), min(times["baseline"])
    ours_m, base_m = statistics.median(times["ours"]), statistics.median(times["baseline"])
    ks = res.tables["ks"]
    per_curve = res.table["n_subgroups"].tolist()
    print(f"{args.rows:,} rows, {len(SIZES)} factors; {len(ks)} pairs of models, "
          f"{per_curve} subgroups per curve")
    print(f"CPU: api.ecdf {ours:.2f} s (runs {', '.join(f'{x:.2f}' for x in times['ours'])}), "
          f"pandas + scipy asymp {base:.2f} s "
          f"({', '.join(f'{x:.2f}' for x in times['baseline'])}): ratio {ours / base:.2f}x best, "
          f"{ours_m / base_m:.2f}x median (goal <= 2x)")
    settings = res.settings
    print(f"defaults used: ks_resamples {settings['ks_resamples']}, adjust {settings['adjust']}, "
          f"ci {settings['ci']}, pooled {settings['pooled']}, cluster {settings['cluster']}")
    print(f"for reference: ks_tests with all 9,999 splits per pair {fixed_cpu:.2f} s CPU")
    problems = []
    def in_order(t: pd.DataFrame) -> np.ndarray:
        keys = t[["model", *factors]].astype(str)
        return t["deviation_rate"].to_numpy()[np.lexsort(keys.to_numpy().T[::-1])]

    mine, theirs = in_order(res.tables["rates"]), in_order(rates)
    if len(mine) != len(theirs) or np.max(np.abs(mine - theirs)) > 1e-12:
        problems.append("subgroup rates differ from the pandas groupby")
    print(f"{'pair':16s} {'D':>8s} {'p (ours)':>9s} {'mc_se':>7s} {'splits':>6s} "
          f"{'p all splits':>12s} {'p scipy asymp':>13s}")
    for (a, b, ref), (_, r), (_, f) in zip(tests, ks.iterrows(), fixed.iterrows(), strict=True):
        if (r["group_a"], r["group_b"]) != (a, b):
            problems.append(f"pair order {r['group_a']}/{r['group_b']} vs {a}/{b}")
        if abs(r["statistic"] - ref.statistic) > 1e-12:
            problems.append(f"D of {a}/{b}: {r['statistic']} vs scipy's {ref.statistic}")
        if (r["p_adjusted"] < 0.05) != (f["p_adjusted"] < 0.05):
            problems.append(f"decision of {a}/{b} differs from the all-splits test")
        # the all-splits p has its own Monte Carlo error (9,999 splits): both within 4 SEs
        se = np.hypot(r["mc_se"], np.sqrt(f["p_value"] * (1 - f["p_value"]) / 9999))
        if r["n_resamples"] > 0 and abs(r["p_value"] - f["p_value"]) > 4 * se:
            problems.append(f"p of {a}/{b}: {r['p_value']:.4f} vs all splits' "
                            f"{f['p_value']:.4f}, beyond 4 Monte Carlo SEs ({se:.4f})")
        print(f"{a + ' / ' + b:16s} {r['statistic']:8.4f} {r['p_value']:9.3g} "
              f"{r['mc_se']:7.4f} {r['n_resamples']:6d} {f['p_value']:12.4f} "
              f"{ref.pvalue:13.3g}")
    for line in problems:
        print("FAIL:", line)
    print(f"uptime: {os.popen('uptime').read().strip()}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
