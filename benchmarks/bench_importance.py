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
4. Many factors (4, 8, 12 factors of 4 values; 12 make ~970k cells of 1M rows: the cell
   table no longer compresses): ``factor_importance`` with its LR tests vs
   ``smf.logit`` on the rows (the fit alone, and with one refit per factor for the same
   LR tests), peak memory, estimates and LR statistics compared, and the growth exponent
   of time in cells (over the factor counts, and over 250k-1M rows at 12 factors).
   Target at 12 factors: >= 5x the naive fit, < 1 GB (``--only-many`` runs only this).
5. With the design's cluster (``--only-clustered`` runs only this; issue 44.1):
   ``bench_clustered_importance.py`` in fresh processes: the default clustered fit (CR2,
   Satterthwaite df, HTZ and LR tests) vs ``cluster=None`` and vs statsmodels'
   ``GLM(...).fit(cov_type="cluster")`` on the rows (coefficients and CR1 standard errors
   compared), then the CLI end to end with the default cluster vs a naive pandas +
   statsmodels GLM script. Targets: <= 2x the independent fit, >= 20x the GLM and the
   naive script.
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


def simulate(n_rows: int, seed: int = SEED, sizes: dict[str, int] = SIZES) -> pd.DataFrame:
    """Rows with categorical factors (6 by default) and a 0/1 deviation drawn from a
    logistic model."""
    rng = np.random.default_rng(seed)
    eta = np.full(n_rows, -0.8)
    columns = {}
    for name, size in sizes.items():
        codes = rng.integers(0, size, n_rows)
        effects = np.concatenate([[0.0], rng.normal(0, 0.4, size - 1)])
        eta += effects[codes]
        columns[name] = pd.Categorical.from_codes(codes, [f"{name}_{i}" for i in range(size)])
    columns["deviation"] = (rng.random(n_rows) < 1 / (1 + np.exp(-eta))).astype(np.int8)
    return pd.DataFrame(columns)


def design(sizes: dict[str, int] = SIZES) -> Design:
    return Design(tuple(Factor(name, "domain", tuple(f"{name}_{i}" for i in range(size)),
                               f"{name}_0") for name, size in sizes.items()),
                  Outcome("deviation"))


def many_sizes(n_factors: int) -> dict[str, int]:
    """``n_factors`` factors of 4 values (12 of them make ~970k cells of 1M rows)."""
    return {f"f{j:02d}": 4 for j in range(n_factors)}


def formula(sizes: dict[str, int], leave_out: str | None = None) -> str:
    """The naive script's formula (treatment coding against each ``name_0``)."""
    return "deviation ~ " + " + ".join(
        f"C({name}, Treatment('{name}_0'))" for name in sizes if name != leave_out)


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
    start = time.perf_counter()
    naive = smf.logit(formula(SIZES), data=results).fit(disp=0)
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
    assert len(json.loads(done.stdout)["terms"]) == 1 + sum(s - 1 for s in SIZES.values())
    print(f"   python -m analysis importance ... --json: {wall:.2f} s "
          f"(naive fit alone {t_naive:.2f} s: ratio {t_naive / wall:.1f}x)")


MANY_CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
from bench_importance import design, many_sizes, simulate
from analysis.design import apply_design
from analysis.importance import factor_importance
sizes = many_sizes({n_factors})
d = design(sizes)
results = apply_design(simulate({n_rows}, seed={seed}, sizes=sizes), d)
factor_importance(results.head(2000), d)  # imports
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
cpu0, start = time.process_time(), time.perf_counter()
fit = factor_importance(results, d)
wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
terms = fit.terms
print(json.dumps({{"wall": wall, "cpu": cpu, "n_cells": fit.n_cells, "before_gb": before,
                  "max_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                  "coef": terms["coef"].tolist(), "se": terms["std_err"].tolist(),
                  "lr": fit.factor_tests.set_index("factor")["lr_statistic"].to_dict()}}))
"""

NAIVE_CHILD = """
import json, sys, time
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
import statsmodels.formula.api as smf
from bench_importance import design, formula, many_sizes, simulate
from analysis.design import apply_design
sizes = many_sizes({n_factors})
rows = apply_design(simulate({n_rows}, seed={seed}, sizes=sizes), design(sizes))
cpu0, start = time.process_time(), time.perf_counter()
full = smf.logit(formula(sizes), data=rows).fit(disp=0)
t_full, cpu = time.perf_counter() - start, time.process_time() - cpu0
out = {{"full": t_full, "cpu": cpu, "coef": full.params.tolist(), "se": full.bse.tolist(),
       "refits": {{}}}}
for name in list(sizes)[:{refits}]:
    start = time.perf_counter()
    reduced = smf.logit(formula(sizes, leave_out=name), data=rows).fit(disp=0)
    out["refits"][name] = [time.perf_counter() - start, 2 * (full.llf - reduced.llf)]
print(json.dumps(out))
"""


def _child(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def part_four(n_rows: int, factor_counts: list[int], row_counts: list[int],
              naive_refits: int) -> None:
    """Many factors: cells approach rows, where the cell table stops compressing."""
    print(f"\n4. many factors (4 values each) on {n_rows:,} rows, LR tests included; "
          "each run in a fresh process (peak memory)")
    bench = str(ROOT / "benchmarks")
    runs = []
    for n_factors in factor_counts:
        ours = _child(MANY_CHILD.format(root=str(ROOT), bench=bench, n_factors=n_factors,
                                        n_rows=n_rows, seed=SEED + n_factors))
        naive = _child(NAIVE_CHILD.format(root=str(ROOT), bench=bench, n_factors=n_factors,
                                          n_rows=n_rows, seed=SEED + n_factors,
                                          refits=naive_refits))
        d_coef = np.max(np.abs(np.subtract(ours["coef"], naive["coef"])))
        d_se = np.max(np.abs(np.subtract(ours["se"], naive["se"])))
        d_lr = max([abs(ours["lr"][name] - lr) for name, (_, lr) in naive["refits"].items()],
                   default=0.0)
        refit = np.mean([t for t, _ in naive["refits"].values()]) if naive["refits"] else 0
        naive_lr = naive["full"] + n_factors * refit
        ok = max(d_coef, d_se) <= 1e-6 and d_lr <= 1e-4
        print(f"   {n_factors:2d} factors, {ours['n_cells']:>9,} cells: factor_importance "
              f"{ours['wall']:6.2f} s ({ours['cpu']:.2f} s CPU), peak "
              f"{ours['max_rss_gb']:.2f} GB (table and imports {ours['before_gb']:.2f} GB)")
        print(f"      smf.logit fit alone {naive['full']:6.2f} s ({naive['cpu']:.2f} s CPU): "
              f"ratio {naive['full'] / ours['wall']:5.1f}x, in CPU time "
              f"{naive['cpu'] / ours['cpu']:5.1f}x (target >= 5x at 12 factors); with one "
              f"refit per factor ({n_factors} x {refit:.2f} s, "
              f"{len(naive['refits'])} measured) {naive_lr:6.1f} s: ratio "
              f"{naive_lr / ours['wall']:5.1f}x")
        print(f"      max |coef diff| {d_coef:.1e}, |SE diff| {d_se:.1e}, |LR diff| "
              f"{d_lr:.1e} (statsmodels' default tolerance): {'ok' if ok else 'FAILED'}")
        runs.append((ours["n_cells"], ours["wall"], ours["cpu"]))
    if len(runs) > 1:
        print(f"   growth over {', '.join(map(str, factor_counts))} factors: "
              + _growth(runs))
    big = max(factor_counts)
    series = []
    for rows in row_counts:
        r = _child(MANY_CHILD.format(root=str(ROOT), bench=bench, n_factors=big,
                                     n_rows=rows, seed=SEED + big))
        series.append((r["n_cells"], r["wall"], r["cpu"]))
        print(f"   {big} factors, {rows:>9,} rows, {r['n_cells']:>9,} cells: {r['wall']:6.2f} s "
              f"({r['cpu']:.2f} s CPU)")
    if len(series) > 1:
        print(f"   growth at {big} factors: {_growth(series)} (the issue's previous path: "
              "exponent 1.1)")


def _growth(runs: list[tuple[int, float, float]]) -> str:
    """Exponents of wall and CPU time in cells (least squares on logs)."""
    cells = np.log([c for c, _, _ in runs])
    wall = np.polyfit(cells, np.log([w for _, w, _ in runs]), 1)[0]
    cpu = np.polyfit(cells, np.log([c for _, _, c in runs]), 1)[0]
    return f"wall time ~ cells^{wall:.2f}, CPU time ~ cells^{cpu:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--big-rows", type=int, default=10_000_000)
    parser.add_argument("--skip-10m", action="store_true")
    parser.add_argument("--only-many", action="store_true", help="only part 4")
    parser.add_argument("--only-clustered", action="store_true", help="only part 5")
    parser.add_argument("--factors", default="4,8,12", help="part 4's factor counts")
    parser.add_argument("--many-rows", default="250000,500000",
                        help="part 4's extra row counts at the most factors ('' for none)")
    parser.add_argument("--naive-refits", type=int, default=2,
                        help="refits the naive script measures per factor count (the rest "
                             "are estimated from their mean)")
    args = parser.parse_args()
    many = ([int(x) for x in args.factors.split(",")],
            [int(x) for x in args.many_rows.split(",") if x] + [args.rows], args.naive_refits)
    if args.only_many:
        part_four(args.rows, *many)
        return
    if args.only_clustered:
        sys.exit(part_five(args.rows))
    t_naive = part_one(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_10m:
            part_two(args.big_rows, Path(tmp))
        part_three(args.rows, Path(tmp), t_naive)
    part_four(args.rows, *many)
    sys.exit(part_five(args.rows))


def part_five(n_rows: int) -> int:
    """The design's cluster (``bench_clustered_importance.py``); its exit status."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_clustered_importance import main as clustered

    print(f"\n5. {n_rows:,} rows with the design's cluster (300 templates)")
    return clustered(["--rows", str(n_rows)])


if __name__ == "__main__":
    main()
