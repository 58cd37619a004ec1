"""Benchmark: subgroups with the design's cluster against the independent-rows call (issue 44.1).

Run: ``.venv/bin/python benchmarks/bench_clustered_subgroups.py [--rows 1000000]
[--templates 300] [--repeat 3]``.

Each call runs in a fresh process (``--child``) that builds the same table (6 factors
of 2-12 values as Arrow strings, like ``load_results`` gives them; ``template`` with
``--templates`` values, the design's cluster; a prompt id) and then times
``analysis.api.subgroups`` with the design's cluster (the default) or ``cluster=None``
(independent rows): CPU seconds of the call (``resource.getrusage``) and its memory
(the process's peak RSS during the call, ``VmHWM`` reset through ``/proc/self/clear_refs``
once the table is built, and that peak above the table's RSS). The
processes alternate, ``--repeat`` times each; the best CPU and the median memory are
compared. The machine is shared, so CPU seconds, not wall time.

Numbers: the clustered and independent tables must share every count and log disparity;
and each clustered subgroup's per-template counts, recounted by an analyst's pandas
``groupby`` over the rows, must give the same cluster-robust standard error (from the
CI's width) to 1e-9.
Exit 1 otherwise.
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

    frame, design = make_results(rows, templates)
    api.subgroups(frame.head(2000), design)  # imports and first-call costs out of the timing
    table_mb = _status_mb("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:  # the peak (VmHWM) from here on
        fh.write("5")
    t0 = resource.getrusage(resource.RUSAGE_SELF)
    w0 = time.perf_counter()
    res = api.subgroups(frame, design) if mode == "clustered" else \
        api.subgroups(frame, design, cluster=None)
    wall = time.perf_counter() - w0
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    peak = _status_mb("VmHWM")
    if out:
        res.tables["all"].to_pickle(out)
    cpu = (t1.ru_utime + t1.ru_stime) - (t0.ru_utime + t0.ru_stime)
    print(json.dumps({"mode": mode, "cpu": cpu, "wall": wall, "peak_mb": peak,
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--templates", type=int, default=300)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--child", choices=("clustered", "independent"))
    p.add_argument("--out")
    args = p.parse_args()
    if args.child:
        child(args.child, args.rows, args.templates, args.out)
        return
    print(f"uptime: {os.popen('uptime').read().strip()}")
    runs = {"clustered": [], "independent": []}
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    outs = {m: str(tmp / f"bench_clustered_{os.getpid()}_{m}.pkl") for m in runs}
    for i in range(args.repeat):
        for mode in runs:
            r = run_child(mode, args.rows, args.templates, outs[mode] if i == 0 else None)
            runs[mode].append(r)
            print(f"  {mode:11s} CPU {r['cpu']:.2f} s  wall {r['wall']:.2f} s  peak "
                  f"{r['peak_mb']:.0f} MB (table {r['table_mb']:.0f} MB, call "
                  f"+{r['extra_mb']:.0f} MB)")
    best = {m: min(r["cpu"] for r in v) for m, v in runs.items()}
    peak = {m: float(np.median([r["peak_mb"] for r in v])) for m, v in runs.items()}
    extra = {m: float(np.median([r["extra_mb"] for r in v])) for m, v in runs.items()}
    print(f"{args.rows:,} rows, {len(SIZES)} factors, {args.templates} templates, "
          f"{runs['clustered'][0]['subgroups']:,} subgroups (levels 1-2)")
    print(f"CPU: clustered {best['clustered']:.2f} s, independent {best['independent']:.2f} s, "
          f"ratio {best['clustered'] / best['independent']:.2f}x")
    print(f"peak memory: clustered {peak['clustered']:.0f} MB, independent "
          f"{peak['independent']:.0f} MB, ratio {peak['clustered'] / peak['independent']:.2f}x; "
          f"above the table: {extra['clustered']:.0f} / {extra['independent']:.0f} MB")
    clustered = pd.read_pickle(outs["clustered"])
    independent = pd.read_pickle(outs["independent"])
    for path in outs.values():
        Path(path).unlink(missing_ok=True)
    problems = check_numbers(args.rows, args.templates, clustered, independent)
    for line in problems:
        print("FAIL:", line)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
