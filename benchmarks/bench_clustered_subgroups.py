"""Benchmark: subgroups with the design's cluster against the independent-rows call (issue 44.1).

Run: ``.venv/bin/python benchmarks/bench_clustered_subgroups.py [--rows 1000000]
[--templates 300] [--repeat 5] [--cli] [--cli-repeat 3]``.

1. Each call runs in a fresh process (``--child``) that builds the same table (6 factors
   of 2-12 values as Arrow strings, like ``load_results`` gives them; ``template`` with
   ``--templates`` values, the design's cluster; a prompt id) and then times
   ``analysis.api.subgroups`` with the design's cluster (the default; the rows'
   integer codes, ``analysis/subgroup_codes.py``), the same through the previous
   factors x cluster cell table (``cellpath``: ``cluster_grid`` disabled) and
   ``cluster=None`` (independent rows): CPU seconds of the call (``resource.getrusage``,
   user + sys) and its memory (the process's peak RSS during the call, ``VmHWM`` reset
   through ``/proc/self/clear_refs`` once the table is built, and that peak above the
   table's RSS). The processes alternate, ``--repeat`` times each; the ratios of the
   best and of the median CPU, and of the median peak, are printed; and of the same
   call run again in the process (``again``: the allocator's state after a call of
   that size, not after the small warm-up). The machine is
   shared, so CPU seconds, not wall time.
2. ``--cli``: ``python -m analysis subgroups FILE.parquet --design D --json`` (the
   design's cluster, CR2 with Satterthwaite df: the defaults) against an analyst's
   vectorised pandas + statsmodels script (``benchmarks/baselines/
   clustered_subgroups_naive.py``: one groupby per factor combination over the
   subgroup x cluster, the CR1 sandwich written out, normal reference, BH by
   ``multipletests``), fresh processes, interleaved, CPU of each child.

Numbers: the clustered and independent tables share every count and log disparity;
the new and the cell-path tables are equal (every column, 1e-12); each clustered
subgroup's per-template counts, recounted by an analyst's pandas ``groupby`` over the
rows, give the same cluster-robust standard error (from the CI's width) to 1e-9. With
``--cli``: the CLI with ``--small-sample none`` (statsmodels' sandwich and reference)
equals the baseline script (n, deviations, LD, CI, p, BH-adjusted p; 1e-9), and the
baseline's standard errors equal ``statsmodels.api.GLM(...).fit(cov_type="cluster")``
on the rows for 3 subgroups. Exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = {"model": 4, "cot": 2, "style": 6, "gender": 3, "age": 8, "region": 12}
KINDS = {"model": "model", "cot": "prompt", "style": "prompt"}


def make_results(rows: int, templates: int, seed: int = 0):
    """The benchmark's table (string columns) and its design (cluster: ``template``)."""
    from analysis.design import Design, Factor, Outcome

    rng = np.random.default_rng(seed)
    cols, logit, factors = {}, np.full(rows, -1.0), []
    tmpl = rng.integers(0, templates, rows)
    logit += rng.normal(0, 0.5, templates)[tmpl]
    for name, size in SIZES.items():
        codes = rng.integers(0, size, rows)
        values = [f"{name}{i}" for i in range(size)]
        cols[name] = pd.Series(np.array(values, dtype=object)[codes], dtype="str")
        logit += rng.normal(0, 0.4, size)[codes]
        factors.append(Factor(name, KINDS.get(name, "domain"), tuple(values), values[0]))
    names = np.array([f"template {i:04d}" for i in range(templates)], dtype=object)
    cols["template"] = pd.Series(names[tmpl], dtype="str")
    cols["prompt_id"] = rng.integers(0, rows // 4, rows)
    cols["deviation"] = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int8)
    return (pd.DataFrame(cols),
            Design(tuple(factors), Outcome("deviation"), cluster="template"))


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(mode: str, rows: int, templates: int, out: str | None) -> None:
    import analysis.api as api

    if mode == "cellpath":  # the previous implementation: a factors x cluster cell table
        import analysis.subgroup_codes as sc
        from tests.oracles.subgroup_cells import CellPathGrid

        sc.cluster_grid = lambda *a, **k: None
        sc.cell_grid = lambda cells, factors, cluster, **k: CellPathGrid(cells, factors, cluster)
    frame, design = make_results(rows, templates)
    api.subgroups(frame.head(2000), design)  # imports and first-call costs out of the timing
    table_mb = _status_mb("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:  # the peak (VmHWM) from here on
        fh.write("5")
    def call():
        return api.subgroups(frame, design, cluster=None) if mode == "independent" else \
            api.subgroups(frame, design)

    t0 = resource.getrusage(resource.RUSAGE_SELF)
    w0 = time.perf_counter()
    res = call()
    wall = time.perf_counter() - w0
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    peak = _status_mb("VmHWM")
    if out:
        res.tables["all"].to_pickle(out)
    cpu = (t1.ru_utime + t1.ru_stime) - (t0.ru_utime + t0.ru_stime)
    # the same call again: the allocator's state after a call of this size (glibc raises
    # its mmap threshold after freeing a large block, so the first call's CPU depends on
    # what ran before it: e.g. the previous path's 33 MB grid in the warm-up call)
    t1b = resource.getrusage(resource.RUSAGE_SELF)
    call()
    t2 = resource.getrusage(resource.RUSAGE_SELF)
    again = (t2.ru_utime + t2.ru_stime) - (t1b.ru_utime + t1b.ru_stime)
    print(json.dumps({"mode": mode, "cpu": cpu, "again": again, "wall": wall, "peak_mb": peak,
                      "faults": t1.ru_minflt - t0.ru_minflt,
                      "extra_mb": peak - table_mb, "table_mb": table_mb,
                      "subgroups": len(res.tables["all"])}))


def run_child(mode: str, rows: int, templates: int, out: str | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, "--rows", str(rows),
           "--templates", str(templates)] + (["--out", out] if out else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode:
        sys.exit(f"{mode} child failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_numbers(rows: int, templates: int, clustered: pd.DataFrame,
                  independent: pd.DataFrame) -> list[str]:
    """Counts and LD shared; robust SEs from pandas-recounted per-template counts."""
    from scipy import stats

    from analysis.columns import CI_HIGH, CI_LOW, DEVIATIONS, LOG_DISPARITY, SUBGROUP, N
    from analysis.subgroups import ld_cluster_variance

    problems = []
    for col in (SUBGROUP, N, DEVIATIONS, LOG_DISPARITY):
        if not clustered[col].equals(independent[col]):
            problems.append(f"column {col} differs between the clustered and independent calls")
    frame, _ = make_results(rows, templates)
    per_t = frame.groupby("template", sort=True)["deviation"].agg(["size", "sum"])
    t_n, t_d = per_t["size"].to_numpy(float), per_t["sum"].to_numpy(float)
    values = {f: frame[f].to_numpy(dtype=object) for f in SIZES}
    worst = 0.0
    picks = clustered.sample(min(40, len(clustered)), random_state=1)
    for pos, row in picks.iterrows():
        fixed = {f: row[f] for f in SIZES if pd.notna(row[f])}
        mask = np.logical_and.reduce([values[f] == v for f, v in fixed.items()])
        g = frame[mask].groupby("template", sort=True)["deviation"].agg(["size", "sum"])
        g = g.reindex(per_t.index, fill_value=0)
        _, var, _, _ = ld_cluster_variance(g["sum"].to_numpy(float), g["size"].to_numpy(float),
                                           t_d, t_n)
        se = float(np.sqrt(var))
        # the default CI: 95 %, CR2, t on the subgroup's own Satterthwaite df (column df)
        crit = stats.t.ppf(0.975, clustered.loc[pos, "df"])
        ours = float(clustered.loc[pos, CI_HIGH] - clustered.loc[pos, CI_LOW]) / (2 * crit)
        if np.isfinite(ours):
            worst = max(worst, abs(se - ours) / se)
    print(f"robust SE of 40 subgroups from pandas-recounted template counts: max relative "
          f"difference {worst:.1e}")
    if worst > 1e-9:
        problems.append(f"robust SEs differ from the pandas recount by {worst:.1e}")
    return problems


def same_tables(ours: pd.DataFrame, theirs: pd.DataFrame) -> float:
    """Largest relative difference between two subgroup tables (inf if their columns,
    rows or non-float columns differ)."""
    if list(ours.columns) != list(theirs.columns) or len(ours) != len(theirs):
        return float("inf")
    worst = 0.0
    for col in ours.columns:
        a, b = ours[col], theirs[col]
        if pd.api.types.is_float_dtype(a):
            x, y = a.to_numpy(float), b.to_numpy(float)
            if not np.array_equal(np.isnan(x), np.isnan(y)):
                return float("inf")
            ok = ~np.isnan(x)
            scale = np.maximum(np.abs(y[ok]), 1e-300)
            worst = max(worst, float(np.max(np.abs(x[ok] - y[ok]) / scale, initial=0.0)))
        elif not a.equals(b):
            return float("inf")
    return worst


def bench_calls(args: argparse.Namespace) -> list[str]:
    modes = ("clustered", "cellpath", "independent")
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    outs = {m: str(tmp / f"bench_clustered_{os.getpid()}_{m}.pkl") for m in runs}
    print(f"1. api.subgroups, {args.rows:,} rows, fresh process per call, interleaved")
    for i in range(args.repeat):
        for mode in modes:
            r = run_child(mode, args.rows, args.templates, outs[mode] if i == 0 else None)
            runs[mode].append(r)
            print(f"  {mode:11s} CPU {r['cpu']:.2f} s (again {r['again']:.2f} s)  wall "
                  f"{r['wall']:.2f} s  peak "
                  f"{r['peak_mb']:.0f} MB (table {r['table_mb']:.0f} MB, call "
                  f"+{r['extra_mb']:.0f} MB), {r['faults']:,} page faults")
    best = {m: min(r["cpu"] for r in v) for m, v in runs.items()}
    med = {m: float(np.median([r["cpu"] for r in v])) for m, v in runs.items()}
    again = {m: float(np.median([r["again"] for r in v])) for m, v in runs.items()}
    peak = {m: float(np.median([r["peak_mb"] for r in v])) for m, v in runs.items()}
    extra = {m: float(np.median([r["extra_mb"] for r in v])) for m, v in runs.items()}
    print(f"{args.rows:,} rows, {len(SIZES)} factors, {args.templates} templates, "
          f"{runs['clustered'][0]['subgroups']:,} subgroups (levels 1-2)")
    for m in ("clustered", "cellpath"):
        print(f"CPU {m} / independent: best {best[m]:.2f} / {best['independent']:.2f} s = "
              f"{best[m] / best['independent']:.2f}x, median {med[m]:.2f} / "
              f"{med['independent']:.2f} s = {med[m] / med['independent']:.2f}x (goal 1.5x); "
              f"the call again in the same process, median {again[m]:.2f} / "
              f"{again['independent']:.2f} s = {again[m] / again['independent']:.2f}x")
        print(f"peak memory {m} / independent: {peak[m]:.0f} / {peak['independent']:.0f} MB "
              f"= {peak[m] / peak['independent']:.2f}x; above the table "
              f"{extra[m]:.0f} / {extra['independent']:.0f} MB")
    tables = {m: pd.read_pickle(outs[m]) for m in modes}
    for path in outs.values():
        Path(path).unlink(missing_ok=True)
    problems = check_numbers(args.rows, args.templates, tables["clustered"],
                             tables["independent"])
    diff = same_tables(tables["clustered"], tables["cellpath"])
    print(f"integer-code table against the cell path's: {len(tables['clustered']):,} rows x "
          f"{tables['clustered'].shape[1]} columns, largest relative difference {diff:.1e}")
    if diff > 1e-12:
        problems.append(f"the integer-code table differs from the cell path's ({diff:.1e})")
    return problems


def statsmodels_se(frame: pd.DataFrame, fixed: dict) -> float:
    """The SE of "in the subgroup" from statsmodels' GLM with ``cov_type="cluster"``."""
    import statsmodels.api as sm

    inside = np.logical_and.reduce([frame[f].to_numpy(dtype=object) == v
                                    for f, v in fixed.items()]).astype(float)
    groups = pd.factorize(frame["template"])[0]
    fit = sm.GLM(frame["deviation"].to_numpy(float), sm.add_constant(inside),
                 family=sm.families.Binomial()).fit(cov_type="cluster",
                                                    cov_kwds={"groups": groups})
    return float(fit.bse[1])


def bench_cli(args: argparse.Namespace) -> list[str]:
    import tempfile

    py = sys.executable
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    baseline = ROOT / "benchmarks" / "baselines" / "clustered_subgroups_naive.py"
    problems = []
    frame, design = make_results(args.rows, args.templates)
    with tempfile.TemporaryDirectory() as tmp:
        data, design_path = Path(tmp) / "results.parquet", Path(tmp) / "design.yaml"
        frame.to_parquet(data, index=False)
        design.save(design_path)
        ours_cmd = [py, "-m", "analysis", "subgroups", str(data), "--design",
                    str(design_path), "--json"]
        base_cmd = [py, str(baseline), str(data), str(design_path), "2"]
        cpu: dict[str, list[float]] = {"ours": [], "baseline": []}
        print(f"\n2. CLI end to end, {args.rows:,} rows of Parquet, the design's cluster "
              f"(CR2, Satterthwaite df), levels 1-2, fresh processes, interleaved")
        outputs = {}
        for _ in range(args.cli_repeat):
            for name, cmd in (("ours", ours_cmd), ("baseline", base_cmd)):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                w0 = time.perf_counter()
                done = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                      cwd=str(ROOT), check=False)
                wall = time.perf_counter() - w0
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if done.returncode:
                    sys.exit(f"{name} failed:\n{done.stderr[-2000:]}")
                c = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                cpu[name].append(c)
                outputs[name] = done.stdout
                print(f"  {name:9s} CPU {c:.2f} s  wall {wall:.2f} s")
        b = {k: min(v) for k, v in cpu.items()}
        m = {k: float(np.median(v)) for k, v in cpu.items()}
        print(f"CPU baseline / ours: best {b['baseline']:.2f} / {b['ours']:.2f} s = "
              f"{b['baseline'] / b['ours']:.2f}x, median {m['baseline']:.2f} / "
              f"{m['ours']:.2f} s = {m['baseline'] / m['ours']:.2f}x (goal >= 3x)")
        # numbers: the same statistic (CR1 sandwich, normal reference) from both
        same = subprocess.run([*ours_cmd, "--small-sample", "none"], capture_output=True,
                              text=True, env=env, cwd=str(ROOT), check=True).stdout
        ours_rows = json.loads(same)["subgroups"]
        base_rows = json.loads(outputs["baseline"])
        key = list(SIZES)
        ref = {tuple(r.get(f) for f in key): r for r in base_rows}
        worst = 0.0
        if len(ours_rows) != len(ref):
            problems.append(f"{len(ours_rows)} subgroups against the baseline's {len(ref)}")
        for r in ours_rows:
            other = ref.get(tuple(r.get(f) for f in key))
            if other is None or (r["n"], r["deviations"]) != (other["n"], other["deviations"]):
                problems.append(f"subgroup {r} has other counts in the baseline")
                break
            for col in ("log_disparity", "ci_low", "ci_high", "p_value", "p_adjusted"):
                worst = max(worst, abs(r[col] - other[col]) / max(abs(other[col]), 1e-300))
        print(f"--small-sample none against the baseline: {len(ours_rows)} subgroups, n and "
              f"deviations equal, LD / CI / p / BH p largest relative difference {worst:.1e}")
        if worst > 1e-9:
            problems.append(f"the CLI differs from the baseline by {worst:.1e}")
        # the baseline's sandwich is statsmodels' cov_type="cluster"
        z = 1.959963984540054
        sm_worst = 0.0
        for r in base_rows[:: max(1, len(base_rows) // 3)][:3]:
            fixed = {f: r[f] for f in key if r.get(f) is not None}
            se = (r["ci_high"] - r["ci_low"]) / (2 * z)
            sm_worst = max(sm_worst, abs(se - statsmodels_se(frame, fixed)) / se)
        print(f"baseline SEs against statsmodels GLM(cov_type='cluster') on the rows, "
              f"3 subgroups: largest relative difference {sm_worst:.1e}")
        if sm_worst > 1e-6:
            problems.append(f"the baseline's SEs differ from statsmodels' by {sm_worst:.1e}")
    return problems


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--templates", type=int, default=300)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--cli", action="store_true", help="also the CLI end to end (part 2)")
    p.add_argument("--cli-only", action="store_true", help="only part 2")
    p.add_argument("--cli-repeat", type=int, default=3)
    p.add_argument("--child", choices=("clustered", "cellpath", "independent"))
    p.add_argument("--out")
    args = p.parse_args()
    if args.child:
        child(args.child, args.rows, args.templates, args.out)
        return
    print(f"uptime: {os.popen('uptime').read().strip()}")
    problems = [] if args.cli_only else bench_calls(args)
    if args.cli or args.cli_only:
        problems += bench_cli(args)
    print(f"uptime at the end: {os.popen('uptime').read().strip()}")
    for line in problems:
        print("FAIL:", line)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
