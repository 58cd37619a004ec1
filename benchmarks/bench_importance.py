"""Factor importance: cell-table logistic regression vs the naive row-level logit.

Run from the repository root::

    .venv/bin/python benchmarks/bench_importance.py            # all three parts
    .venv/bin/python benchmarks/bench_importance.py --skip-10m  # without the 10M-row part

Prints measured times and ratios (it is not a timed test):

1. 1M rows, 6 factors (2, 3, 4, 5, 8, 10 values: 27 parameters): ``factor_importance`` on
   the applied results table vs ``statsmodels.formula.api.logit`` with treatment coding on
   the same DataFrame; the largest coefficient and standard-error differences.
   Target: >= 50x faster, coefficients equal to 1e-8.
2. 10M rows from Parquet, end to end (read, apply the design, cell table, fit, LR tests)
   in a fresh process; wall time and peak memory (ru_maxrss). Target: < 15 s, < 3 GB.
3. The command line on a 1M-row CSV (process start, imports, CSV parse, fit, JSON out)
   vs the naive fit alone. Target: a wide margin.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.design import Design, Factor, Outcome, apply_design  # noqa: E402
from analysis.importance import factor_importance  # noqa: E402

SIZES = {"model": 2, "cot": 3, "style": 4, "cluster": 5, "gender": 8, "template": 10}
SEED = 20240101


def simulate(n_rows: int, seed: int = SEED) -> pd.DataFrame:
    """Rows with 6 string factors and a 0/1 deviation drawn from a logistic model."""
    rng = np.random.default_rng(seed)
    eta = np.full(n_rows, -0.8)
    columns = {}
    for name, size in SIZES.items():
        codes = rng.integers(0, size, n_rows)
        effects = np.concatenate([[0.0], rng.normal(0, 0.4, size - 1)])
        eta += effects[codes]
        columns[name] = pd.Categorical.from_codes(codes, [f"{name}_{i}" for i in range(size)])
    columns["deviation"] = (rng.random(n_rows) < 1 / (1 + np.exp(-eta))).astype(np.int8)
    return pd.DataFrame(columns)


def design() -> Design:
    return Design(tuple(Factor(name, "domain", tuple(f"{name}_{i}" for i in range(size)),
                               f"{name}_0") for name, size in SIZES.items()),
                  Outcome("deviation"))


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def part_one(n_rows: int) -> float:
    import statsmodels.formula.api as smf

    print(f"1. {n_rows:,} rows, {len(SIZES)} factors, "
          f"{1 + sum(s - 1 for s in SIZES.values())} parameters")
    d = design()
    results = apply_design(simulate(n_rows), d)
    factor_importance(results.head(5000), d, likelihood_ratio=False)  # imports, warm-up
    t_fast, fit = best_of(lambda: factor_importance(results, d, likelihood_ratio=False), 3)
    t_lr, _ = best_of(lambda: factor_importance(results, d), 3)
    formula = "deviation ~ " + " + ".join(
        f"C({name}, Treatment('{name}_0'))" for name in SIZES)
    start = time.perf_counter()
    naive = smf.logit(formula, data=results).fit(disp=0)
    t_naive = time.perf_counter() - start
    d_coef = np.max(np.abs(naive.params.to_numpy() - fit.terms["coef"].to_numpy()))
    d_se = np.max(np.abs(naive.bse.to_numpy() - fit.terms["std_err"].to_numpy()))
    d_p = np.max(np.abs(naive.pvalues.to_numpy() - fit.terms["p_value"].to_numpy()))
    print(f"   naive smf.logit (patsy + Newton on rows): {t_naive:8.2f} s")
    print(f"   factor_importance (cells + fit):          {t_fast:8.3f} s   "
          f"ratio {t_naive / t_fast:6.1f}x")
    print(f"   factor_importance with LR tests (7 fits): {t_lr:8.3f} s   "
          f"ratio {t_naive / t_lr:6.1f}x")
    print(f"   {fit.n_cells:,} cells; max |coef diff| {d_coef:.1e}, max |SE diff| {d_se:.1e}, "
          f"max |p diff| {d_p:.1e}  (target <= 1e-8: "
          f"{'ok' if max(d_coef, d_se, d_p) <= 1e-8 else 'FAILED'})")
    return t_naive


CHILD = """
import json, resource, sys, time
start = time.perf_counter()
sys.path.insert(0, {root!r})
from analysis.io import load_results
from analysis.design import Design
from analysis.importance import factor_importance
t_import = time.perf_counter() - start
d = Design.from_text({design!r})
t0 = time.perf_counter()
frame = load_results({path!r})
t1 = time.perf_counter()
from analysis.design import apply_design
results = apply_design(frame, d)
del frame
t2 = time.perf_counter()
fit = factor_importance(results, d)
t3 = time.perf_counter()
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"imports": t_import, "read": t1 - t0, "apply": t2 - t1, "fit": t3 - t2,
                  "total": t3 - start, "n_rows": fit.n_rows, "n_cells": fit.n_cells,
                  "cpu": usage.ru_utime + usage.ru_stime,
                  "max_rss_gb": usage.ru_maxrss / 2**20}}))
"""


def part_two(n_rows: int, tmp: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    print(f"\n2. {n_rows:,} rows from Parquet, end to end in a fresh process")
    frame = simulate(n_rows, seed=SEED + 1)
    table = pa.table({c: (pa.array(frame[c]).cast(pa.string()) if c != "deviation"
                          else pa.array(frame[c].to_numpy())) for c in frame.columns})
    path = tmp / "results_10m.parquet"
    pq.write_table(table, path)
    del frame, table
    print(f"   file: {path.stat().st_size / 2**20:.0f} MB (string factor columns)")
    code = CHILD.format(root=str(ROOT), design=design().to_json(), path=str(path))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    wall = time.perf_counter() - start
    r = json.loads(done.stdout)
    print(f"   read {r['read']:.2f} s, apply design {r['apply']:.2f} s, cells + fit + LR tests "
          f"{r['fit']:.2f} s; in-process total {r['total']:.2f} s (imports {r['imports']:.2f} s)")
    print(f"   CPU time of the process (user + sys): {r['cpu']:.2f} s; machine load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall time grows with it)")
    print(f"   wall time with interpreter start: {wall:.2f} s (target < 15 s: "
          f"{'ok' if wall < 15 else 'FAILED'}); peak memory {r['max_rss_gb']:.2f} GB "
          f"(target < 3 GB: {'ok' if r['max_rss_gb'] < 3 else 'FAILED'})")


def part_three(n_rows: int, tmp: Path, t_naive: float) -> None:
    print(f"\n3. command line on a {n_rows:,}-row CSV vs the naive fit alone")
    path = tmp / "results_1m.csv"
    simulate(n_rows, seed=SEED + 2).to_csv(path, index=False)
    refs = [f"--reference={name}={name}_0" for name in SIZES]
    argv = [sys.executable, "-m", "analysis", "importance", str(path), "--outcome",
            "deviation", "--factors", ",".join(SIZES), *refs, "--json"]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    assert len(json.loads(done.stdout)) == 1 + sum(s - 1 for s in SIZES.values())
    print(f"   python -m analysis importance ... --json: {wall:.2f} s "
          f"(naive fit alone {t_naive:.2f} s: ratio {t_naive / wall:.1f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--big-rows", type=int, default=10_000_000)
    parser.add_argument("--skip-10m", action="store_true")
    args = parser.parse_args()
    t_naive = part_one(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_10m:
            part_two(args.big_rows, Path(tmp))
        part_three(args.rows, Path(tmp), t_naive)


if __name__ == "__main__":
    main()
