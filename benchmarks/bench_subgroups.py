"""Benchmark: all 1..3-level subgroups of 7 factors on 1M rows, and page reruns in the app.

Run: ``.venv/bin/python benchmarks/bench_subgroups.py [--rows 1000000] [--no-app]``.

1. Subgroups from the cell table (one pass over the rows, then sums over cells) against
   the naive way, a loop of pandas groupbys over the raw rows (one per factor
   combination), with the same statistics on top. Both must agree exactly.
2. The Subgroups and eCDF pages under AppTest with a 1M-row table: the first run (applying
   the design, counting cells) and reruns after widget changes (cells cached).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.cells import cell_table  # noqa: E402
from analysis.columns import DEVIATIONS, LOG_DISPARITY, N  # noqa: E402
from analysis.design import Design, Factor, Outcome, apply_design  # noqa: E402
from analysis.subgroups import benjamini_hochberg, disparity_stats, subgroups  # noqa: E402

SIZES = {"model": 4, "cot": 2, "style": 4, "stigma": 10, "gender": 3, "age": 5, "region": 8}
#: A near-saturated design: 2M possible combinations, ~790k of them observed in 1M rows,
#: so the cell table hardly compresses the rows (a hard case for the cells approach).
SATURATED = {"model": 10, "cot": 10, "style": 10, "stigma": 10, "gender": 10, "age": 5,
             "region": 4}
KINDS = {"model": "model", "cot": "prompt", "style": "prompt"}


def make_results(rows: int, sizes: dict[str, int], seed: int = 0
                 ) -> tuple[pd.DataFrame, Design]:
    rng = np.random.default_rng(seed)
    columns, logit = {}, np.full(rows, -1.0)
    factors = []
    for name, size in sizes.items():
        codes = rng.integers(0, size, rows)
        values = [f"{name}{i}" for i in range(size)]
        columns[name] = np.array(values, dtype=object)[codes]
        logit += rng.normal(0, 0.4, size)[codes]
        factors.append(Factor(name, KINDS.get(name, "domain"), tuple(values), values[0]))
    columns["deviation"] = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int8)
    return pd.DataFrame(columns), Design(tuple(factors), Outcome("deviation"))


def best_of(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def naive(results: pd.DataFrame, factors: list[str], max_level: int) -> pd.DataFrame:
    """One pandas groupby over the raw rows per factor combination."""
    total_n, total_d = len(results), int(results["deviation"].sum())
    parts = []
    for k in range(1, max_level + 1):
        for combo in itertools.combinations(factors, k):
            g = results.groupby(list(combo), observed=True)["deviation"].agg(["size", "sum"])
            st = disparity_stats(g["sum"].to_numpy(), g["size"].to_numpy(),
                                 total_deviations=total_d, total_n=total_n)
            st[N], st[DEVIATIONS] = g["size"].to_numpy(), g["sum"].to_numpy().astype(int)
            parts.append(st)
    out = pd.concat(parts, ignore_index=True)
    out["p_adjusted"] = benjamini_hochberg(out["p_value"].to_numpy())
    return out


def bench_analysis(rows: int, sizes: dict[str, int]) -> tuple[pd.DataFrame, Design]:
    frame, design = make_results(rows, sizes)
    factors = design.names
    t = time.perf_counter()
    results = apply_design(frame, design)
    print(f"{rows:,} rows, factors {', '.join(f'{k}({v})' for k, v in sizes.items())}")
    print(f"  apply_design (once per upload, cached in the app): {time.perf_counter() - t:.2f} s")

    t_cells, cells = best_of(lambda: cell_table(results, factors), 3)
    t_sub, table = best_of(lambda: subgroups(cells, factors, max_level=3), 3)
    t_naive, ref = best_of(lambda: naive(results, factors, 3), 1)
    n_combos = sum(1 for k in (1, 2, 3) for _ in itertools.combinations(factors, k))
    assert len(table) == len(ref)
    assert (table[N].to_numpy() == ref[N].to_numpy()).all()
    assert (table[DEVIATIONS].to_numpy() == ref[DEVIATIONS].to_numpy()).all()
    np.testing.assert_allclose(table[LOG_DISPARITY], ref[LOG_DISPARITY], rtol=1e-12)
    total = t_cells + t_sub
    print(f"  {len(table):,} subgroups of levels 1..3 ({n_combos} factor combinations), "
          f"{len(cells):,} observed cells")
    print(f"  cell table:                    {t_cells:6.3f} s")
    print(f"  subgroups from the cells:      {t_sub:6.3f} s")
    print(f"  total (cells + subgroups):     {total:6.3f} s   (target < 3 s)")
    print(f"  naive ({n_combos} pandas groupbys): {t_naive:6.3f} s")
    print(f"  speed-up total vs naive:       {t_naive / total:6.1f} x  (target >= 5 x)")
    print(f"  speed-up with cells cached:    {t_naive / t_sub:6.1f} x")
    t_fisher, _ = best_of(lambda: subgroups(cells, factors, max_level=3, test="fisher"), 1)
    print(f"  same with Fisher exact p:      {t_fisher:6.3f} s (vectorised)")
    return frame, design


def timed_run(at, label: str, action=None) -> float:
    t = time.perf_counter()
    (action(at) if action else at).run()
    dt = time.perf_counter() - t
    problems = [e.value for e in at.exception] + [e.value for e in at.error]
    assert not problems, problems
    print(f"    {label:58s} {dt:6.3f} s")
    return dt


def bench_app(frame: pd.DataFrame, design: Design) -> None:
    from tests.app.apptools import page_test

    print("\nApp reruns on the same table (AppTest, one process; first run fills the caches)")
    at = page_test("subgroups.py", frame=frame, design=design, timeout=600)
    print("  Subgroups page")
    timed_run(at, "first run (apply design, cell table)")
    timed_run(at, "factors -> stigma, gender, style (new cell table)",
              lambda a: a.multiselect(key="subgroups_factors").set_value(
                  ["stigma", "gender", "style"]))
    rows_shown = [m.value for m in at.metric if m.label == "Rows in subset"]
    assert rows_shown == [f"{len(frame):,}"], rows_shown
    reruns = [
        timed_run(at, "level 2 -> 3", lambda a: a.radio(key="subgroups_level").set_value(3)),
        timed_run(at, "p-value Wald -> Fisher",
                  lambda a: a.selectbox(key="subgroups_test").set_value("fisher")),
        timed_run(at, "view filter gender = gender1",
                  lambda a: a.multiselect(key="subgroups_show_gender").set_value(["gender1"])),
        timed_run(at, "small-n threshold 30 -> 50",
                  lambda a: a.number_input(key="subgroups_min_n").set_value(50)),
    ]
    shown = at.dataframe[0].value
    assert set(shown["level"]) == {1, 2, 3} and set(shown["gender"].dropna()) == {"gender1"}
    timed_run(at, "subset model = model1 (new cell table, first time)",
              lambda a: a.multiselect(key="subgroups_where_model").set_value(["model1"]))
    reruns.append(timed_run(at, "subset back to all (cached cell table)",
                            lambda a: a.multiselect(key="subgroups_where_model").set_value([])))
    print(f"  slowest widget rerun with cached cells: {max(reruns):.3f} s (target < 1 s)")

    print("  eCDF page")
    at = page_test("ecdf.py", frame=frame, design=design, timeout=600)
    timed_run(at, "first run (design cached; cell table of model, stigma, gender)")
    reruns = [
        timed_run(at, "ideal C 0 -> 0.1", lambda a: a.number_input(key="ecdf_ideal")
                  .set_value(0.1)),
        timed_run(at, "cutoff 0.2 -> 0.3", lambda a: a.number_input(key="ecdf_cutoff")
                  .set_value(0.3)),
        timed_run(at, "level 2 -> 1", lambda a: a.selectbox(key="ecdf_level_2").set_value(1)),
    ]
    print(f"  slowest widget rerun with cached cells: {max(reruns):.3f} s (target < 1 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--no-app", action="store_true", help="skip the AppTest reruns")
    args = parser.parse_args()
    frame, design = bench_analysis(args.rows, SIZES)
    print()
    bench_analysis(args.rows, SATURATED)
    if not args.no_app:
        bench_app(frame, design)


if __name__ == "__main__":
    main()
