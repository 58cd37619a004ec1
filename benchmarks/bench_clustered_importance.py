"""Benchmark: factor importance with the design's cluster (CR2 + Satterthwaite df, HTZ
tests) against the independent-rows fit and statsmodels' clustered GLM (issue 44.1).

Run: ``.venv/bin/python benchmarks/bench_clustered_importance.py [--rows 1000000]
[--templates 300] [--repeat 3] [--skip-cli | --cli-only | --warm]`` (also ``bench_importance.py
--only-clustered``).

The table is ``bench_clustered_subgroups.make_results`` (6 factors of 2-12 values as
Arrow strings, 36 parameters; ``template`` the design's cluster, drawn per row, so
almost every (factor cell, template) pair is observed: ~890k of them at 1M rows).
Each call runs in a fresh process (``--child``) that builds the table and then measures
the call alone: CPU seconds (``resource.getrusage``) and the peak RSS during the call
(``VmHWM`` reset through ``/proc/self/clear_refs``). The modes alternate, ``--repeat``
times each; the best CPU and the median peak are compared (the machine is shared):

- ``clustered``: ``factor_importance(results, design)`` (the default: the design's
  cluster, CR2, Satterthwaite df, HTZ tests, LR tests);
- ``independent``: the same with ``cluster=None``;
- ``glm``: the analyst's script on the rows: ``pd.get_dummies`` and statsmodels'
  ``GLM(y, X, family=Binomial()).fit(cov_type="cluster", cov_kwds={"groups": ...})``
  (CR1 with the normal reference; no Satterthwaite df, no factor tests);
- ``cr1``: ours with ``small_sample="none"`` (what the GLM computes): the numbers compared.

Then ``inprocess``: one process builds the table once and alternates the clustered and
the independent call (``--repeat`` + 1 each, the first pair a warm-up: the allocator's
state after calls of that size, so fewer first-touch page faults than a fresh process's
first call); the best and the median CPU of each, their ratios, and the numbers
compared: the coefficients equal (the logit does not depend on the cluster), every
clustered call's table identical to the first. ``--skip-glm`` leaves out the
statsmodels fit (15-20 s CPU a run) and its comparisons.

Then ``warm`` (also alone: ``--warm``): the page's reruns in one process, the option
changes :data:`WARM_CHANGES` (a reference, alpha, adjust, confidence) cycled, each called
clustered and independent, with an :class:`analysis.importance_parts.ImportanceParts`
store (what the page keeps per table) and without one, interleaved; per option change the
best and median CPU of each, the ratios clustered / independent with and without the
stores, the store's hits, and whether every call with the store equals the call without
it (exit 1 if not).

Then (without ``--skip-cli``) the command line end to end on a Parquet file of the same
rows, ``python -m analysis importance FILE --design D --factors ... --json`` (default
cluster), against a naive script (``pd.read_parquet`` + the GLM above, JSON out), CPU of
each process. Exit 1 when the coefficients or standard errors differ (> 1e-7 relative).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_clustered_subgroups import SIZES, _status_mb, make_results  # noqa: E402

MODES = ("clustered", "independent", "glm", "cr1")
CHILDREN = (*MODES, "inprocess", "warm")
#: ``--warm``: the option changes of a page's reruns, cycled (one option at a time from
#: the defaults, as a visitor changes a widget): a reference not chosen before (a new
#: fit), alpha, the adjustment, the confidence level, a reference chosen before, and
#: back to the defaults.
WARM_CHANGES = ("new reference", "alpha", "adjust", "confidence", "earlier reference",
                "defaults")


def warm_change(label: str, round_: int) -> dict:
    """The options of :data:`WARM_CHANGES`' ``label`` in round ``round_`` (0, 1, ...)."""
    return {"new reference": {"references": {"region": f"region{1 + round_ % 11}"}},
            "alpha": {"alpha": 0.01}, "adjust": {"adjust": "holm"},
            "confidence": {"confidence": 0.9},
            "earlier reference": {"references": {"model": "model2"}}, "defaults": {}}[label]


def glm_fit(frame):
    """The analyst's clustered GLM on the rows: coefficients and SEs by term name."""
    import pandas as pd
    import statsmodels.api as sm

    dummies = pd.get_dummies(frame[list(SIZES)], drop_first=True, dtype=float)
    X = np.column_stack([np.ones(len(frame)), dummies.to_numpy()])
    groups = pd.factorize(frame["template"])[0]
    fit = sm.GLM(frame["deviation"].to_numpy(dtype=float), X,
                 family=sm.families.Binomial()).fit(cov_type="cluster",
                                                     cov_kwds={"groups": groups})
    names = ["(intercept)"] + [f"{c.split('_', 1)[0]}[{c.split('_', 1)[1]}]"
                               for c in dummies.columns]
    return dict(zip(names, fit.params.tolist(), strict=True)), \
        dict(zip(names, fit.bse.tolist(), strict=True))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def in_process(results, design, repeat: int) -> dict:
    """Alternate the clustered and the independent call in this process (the first
    pair a warm-up): CPU seconds of each call, and whether the numbers agree."""
    from analysis.importance import factor_importance

    cpu: dict[str, list[float]] = {"clustered": [], "independent": []}
    fits: dict[str, list] = {"clustered": [], "independent": []}
    for _ in range(repeat + 1):
        for mode, kw in (("clustered", {}), ("independent", {"cluster": None})):
            t0 = _cpu()
            fits[mode].append(factor_importance(results, design, **kw))
            cpu[mode].append(_cpu() - t0)
    first = fits["clustered"][0]
    same = all(f.terms.equals(first.terms) and f.factor_tests.equals(first.factor_tests)
               for f in fits["clustered"][1:])
    coef = np.abs(first.terms["coef"].to_numpy()
                  - fits["independent"][0].terms["coef"].to_numpy()).max()
    return {"cpu": cpu, "repeatable": bool(same), "coef_diff": float(coef)}


def warm_calls(results, design, repeat: int) -> dict:
    """The page's reruns in one process: the option changes :data:`WARM_CHANGES`, each
    called clustered and independent, with an :class:`ImportanceParts` store (the page's)
    and without one (a new store, as before it existed), the four interleaved; after one
    warm-up round (the store's first parts: the cells). CPU seconds per call by option
    change, and whether every call with the store printed the call without it."""
    from analysis.importance import factor_importance
    from analysis.importance_parts import ImportanceParts

    stores = {"clustered": ImportanceParts(), "independent": ImportanceParts()}
    kinds = {"clustered": {}, "independent": {"cluster": None}}
    cpu: dict[str, dict[str, list[float]]] = {}
    same = True
    for i in range(repeat + 1):
        for label in WARM_CHANGES:
            change = warm_change(label, i)
            for mode, kw in kinds.items():
                fits = {}
                for store in ("store", "none"):
                    parts = stores[mode] if store == "store" else None
                    t0 = _cpu()
                    fits[store] = factor_importance(results, design, parts=parts, **kw,
                                                    **change)
                    if i:
                        cpu.setdefault(f"{mode} {store}", {}).setdefault(label, []).append(
                            _cpu() - t0)
                same &= (fits["store"].terms.equals(fits["none"].terms)
                         and fits["store"].factor_tests.equals(fits["none"].factor_tests)
                         and fits["store"].notes == fits["none"].notes)
    return {"cpu": cpu, "same": bool(same),
            "hits": {m: s.hits for m, s in stores.items()},
            "misses": {m: s.misses for m, s in stores.items()},
            "store_mb": {m: s.bytes / 2**20 for m, s in stores.items()}}


def child(mode: str, rows: int, templates: int, repeat: int = 3) -> None:
    from analysis.design import apply_design
    from analysis.importance import factor_importance

    frame, design = make_results(rows, templates)
    results = apply_design(frame, design)
    factor_importance(results.head(3000), design)  # imports, first-call costs
    if mode == "inprocess":
        print(json.dumps(in_process(results, design, repeat)))
        return
    if mode == "warm":
        print(json.dumps(warm_calls(results, design, repeat)))
        return
    table_mb = _status_mb("VmRSS")
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    t0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    if mode == "glm":
        coef, se = glm_fit(frame)
    else:
        kw = {"clustered": {}, "independent": {"cluster": None},
              "cr1": {"small_sample": "none", "likelihood_ratio": False}}[mode]
        fit = factor_importance(results, design, **kw)
        coef = dict(zip(fit.terms["term"], fit.terms["coef"], strict=True))
        se = dict(zip(fit.terms["term"], fit.terms["std_err"], strict=True))
    wall = time.perf_counter() - w0
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"mode": mode, "wall": wall, "peak_mb": _status_mb("VmHWM"),
                      "table_mb": table_mb, "coef": coef, "se": se,
                      "cpu": (t1.ru_utime + t1.ru_stime) - (t0.ru_utime + t0.ru_stime)}))


def run(cmd: list[str]) -> tuple[dict | str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"{' '.join(cmd[:4])} failed:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return done.stdout, cpu


def _max_rel(a: dict, b: dict) -> float:
    return max(abs(a[k] - b[k]) / max(abs(b[k]), 1e-300) for k in b)


NAIVE_SCRIPT = """
import json, sys
import numpy as np, pandas as pd, statsmodels.api as sm
frame = pd.read_parquet(sys.argv[1])
factors = sys.argv[2].split(",")
dummies = pd.get_dummies(frame[factors], drop_first=True, dtype=float)
X = np.column_stack([np.ones(len(frame)), dummies.to_numpy()])
fit = sm.GLM(frame["deviation"].to_numpy(dtype=float), X, family=sm.families.Binomial()).fit(
    cov_type="cluster", cov_kwds={"groups": pd.factorize(frame["template"])[0]})
names = ["(intercept)"] + [f"{c.split('_', 1)[0]}[{c.split('_', 1)[1]}]" for c in dummies]
print(json.dumps({"coef": dict(zip(names, fit.params.tolist())),
                  "se": dict(zip(names, fit.bse.tolist()))}))
"""


def cli_part(rows: int, templates: int, repeat: int) -> list[str]:
    frame, design = make_results(rows, templates)
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        path, dpath = Path(tmp) / "rows.parquet", Path(tmp) / "design.yaml"
        frame.to_parquet(path)
        design.save(dpath)
        script = Path(tmp) / "naive.py"
        script.write_text(NAIVE_SCRIPT)
        factors = ",".join(SIZES)
        cli = [sys.executable, "-m", "analysis", "importance", str(path), "--design",
               str(dpath), "--factors", factors, "--json"]
        naive = [sys.executable, str(script), str(path), factors]
        cpu = {"cli": [], "naive": []}
        # the project's modules from bytecode, as an installed package has them (this
        # machine sets PYTHONDONTWRITEBYTECODE: a worktree would compile at every start)
        compileall.compile_dir(ROOT / "analysis", quiet=1)
        for i in range(repeat):
            out, c = run(cli)
            cpu["cli"].append(c)
            ours = json.loads(out)
            out, c = run(naive)
            cpu["naive"].append(c)
            theirs = json.loads(out)
            print(f"  run {i + 1}: CLI {cpu['cli'][-1]:.2f} s, naive script "
                  f"{cpu['naive'][-1]:.2f} s CPU (load {os.getloadavg()[0]:.1f})")
        cr1, _ = run(cli + ["--small-sample", "none"])
        cr1 = json.loads(cr1)
        d_coef = _max_rel({t["term"]: t["coef"] for t in ours["terms"]}, theirs["coef"])
        d_se = _max_rel({t["term"]: t["std_err"] for t in cr1["terms"]}, theirs["se"])
        best = {k: min(v) for k, v in cpu.items()}
        print(f"CLI end to end (default cluster, CR2, LR tests) CPU {best['cli']:.2f} s; naive "
              f"pandas + statsmodels GLM cluster script {best['naive']:.2f} s: ratio "
              f"{best['naive'] / best['cli']:.1f}x (goal >= 20x); medians "
              f"{np.median(cpu['cli']):.2f} / {np.median(cpu['naive']):.2f} s: "
              f"{np.median(cpu['naive']) / np.median(cpu['cli']):.1f}x")
        print(f"   coefficients vs the script: max rel diff {d_coef:.1e}; CLI "
              f"--small-sample none SEs vs the GLM's CR1: {d_se:.1e}")
        if max(d_coef, d_se) > 1e-7:
            problems.append(f"CLI numbers differ from the naive script ({d_coef:.1e}, {d_se:.1e})")
    return problems


def in_process_part(args) -> list[str]:
    """The ``inprocess`` child: both calls alternating in one process; ratios printed."""
    out, _ = run([sys.executable, str(Path(__file__).resolve()), "--child", "inprocess",
                  "--rows", str(args.rows), "--templates", str(args.templates),
                  "--repeat", str(args.repeat)])
    r = json.loads(out.strip().splitlines()[-1])
    c, u = (np.array(r["cpu"][m][1:]) for m in ("clustered", "independent"))
    print(f"in one process, alternating ({len(c)} calls each after a warm-up pair; "
          f"load {os.getloadavg()[0]:.1f}): clustered CPU best {c.min():.3f} / median "
          f"{np.median(c):.3f} s, independent best {u.min():.3f} / median {np.median(u):.3f}"
          f" s: ratio {c.min() / u.min():.2f}x best, {np.median(c) / np.median(u):.2f}x "
          f"median (goal <= 2x); first calls {r['cpu']['clustered'][0]:.3f} / "
          f"{r['cpu']['independent'][0]:.3f} s")
    print(f"   numbers: coefficients clustered = independent to {r['coef_diff']:.1e}; "
          f"every clustered call identical: {r['repeatable']}")
    if r["coef_diff"] > 1e-9 or not r["repeatable"]:
        return ["in-process numbers differ"]
    return []


def warm_part(args) -> list[str]:
    """The ``warm`` child: the page's reruns with and without the store; ratios printed
    (per option change: the best and the median CPU over the repeats)."""
    out, _ = run([sys.executable, str(Path(__file__).resolve()), "--child", "warm",
                  "--rows", str(args.rows), "--templates", str(args.templates),
                  "--repeat", str(args.repeat)])
    r = json.loads(out.strip().splitlines()[-1])
    cpu = {k: {c: np.array(v) for c, v in d.items()} for k, d in r["cpu"].items()}
    print(f"warm reruns in one process ({args.repeat} rounds of {len(WARM_CHANGES)} option "
          f"changes after a warm-up round; load {os.getloadavg()[0]:.1f}): CPU s per call, "
          "best / median")
    print(f"  {'option changed':22s} {'clustered+store':>16s} {'indep.+store':>14s} "
          f"{'clustered':>12s} {'independent':>12s}  ratio clustered/indep. (store; none)")
    for label in cpu["clustered store"]:
        cells = [cpu[k][label] for k in ("clustered store", "independent store",
                                         "clustered none", "independent none")]
        text = " ".join(f"{c.min():6.3f}/{np.median(c):5.3f}" for c in cells)
        print(f"  {label:22s} {text}  {cells[0].min() / cells[1].min():.2f}x; "
              f"{cells[2].min() / cells[3].min():.2f}x")
    total = {k: sum(np.median(v) for v in d.values()) for k, d in cpu.items()}
    print(f"  over the cycle (sum of medians): clustered {total['clustered store']:.3f} s with "
          f"the store, {total['clustered none']:.3f} s without "
          f"({total['clustered none'] / total['clustered store']:.1f}x less); ratio "
          f"clustered/independent {total['clustered store'] / total['independent store']:.2f}x"
          f" with stores, {total['clustered none'] / total['independent none']:.2f}x without")
    print(f"  store hits / misses: {r['hits']} / {r['misses']}; kept "
          + ", ".join(f"{m} {mb:.0f} MB" for m, mb in r["store_mb"].items())
          + f"; every call with the store identical to the call without: {r['same']}")
    return [] if r["same"] else ["warm calls with the store differ from those without"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--templates", type=int, default=300)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--skip-cli", action="store_true")
    p.add_argument("--skip-glm", action="store_true")
    p.add_argument("--cli-only", action="store_true", help="only the CLI end to end")
    p.add_argument("--warm", action="store_true",
                   help="only the warm reruns in one process, with and without the store")
    p.add_argument("--child", choices=CHILDREN)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.rows, args.templates, args.repeat)
        return 0
    print(f"uptime: {os.popen('uptime').read().strip()}")
    if args.cli_only or args.warm:
        problems = (warm_part(args) if args.warm
                    else cli_part(args.rows, args.templates, args.repeat))
        for line in problems:
            print("FAIL:", line)
        print(f"uptime: {os.popen('uptime').read().strip()}")
        return 1 if problems else 0
    modes = [m for m in MODES if not (args.skip_glm and m in ("glm", "cr1"))]
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    for i in range(args.repeat):
        for mode in modes:
            if mode in ("glm", "cr1") and i > 0 and mode == "cr1":
                continue  # numbers only: once is enough
            out, _ = run([sys.executable, str(Path(__file__).resolve()), "--child", mode,
                          "--rows", str(args.rows), "--templates", str(args.templates)])
            r = json.loads(out.strip().splitlines()[-1])
            runs[mode].append(r)
            print(f"  {mode:11s} CPU {r['cpu']:6.2f} s  wall {r['wall']:6.2f} s  peak "
                  f"{r['peak_mb']:.0f} MB (table {r['table_mb']:.0f} MB)")
    best = {m: min(r["cpu"] for r in v) for m, v in runs.items()}
    peak = {m: float(np.median([r["peak_mb"] - r["table_mb"] for r in v]))
            for m, v in runs.items()}
    print(f"{args.rows:,} rows, {len(SIZES)} factors, {args.templates} templates (the design's "
          "cluster)")
    print(f"clustered (CR2 + Satterthwaite + HTZ + LR) CPU {best['clustered']:.3f} s vs "
          f"independent rows {best['independent']:.3f} s: ratio "
          f"{best['clustered'] / best['independent']:.2f}x (goal <= 2x); memory above the "
          f"table {peak['clustered']:.0f} / {peak['independent']:.0f} MB")
    clustered, independent = runs["clustered"][0], runs["independent"][0]
    d_coef = _max_rel(clustered["coef"], independent["coef"])
    d_glm = d_se = 0.0
    if not args.skip_glm:
        print(f"statsmodels GLM cluster on the rows {best['glm']:.2f} s CPU: "
              f"{best['glm'] / best['clustered']:.1f}x the clustered call (goal >= 20x), "
              f"{best['glm'] / best['cr1']:.1f}x ours with the same CR1 covariance; memory "
              f"above the table {peak['glm']:.0f} MB")
        glm, cr1 = runs["glm"][0], runs["cr1"][0]
        d_glm = _max_rel(cr1["coef"], glm["coef"])
        d_se = _max_rel(cr1["se"], glm["se"])
        print(f"numbers: coefficients clustered = independent to {d_coef:.1e}; ours (CR1) = "
              f"GLM cluster: coefficients {d_glm:.1e}, standard errors {d_se:.1e} "
              "(relative)")
    else:
        print(f"numbers: coefficients clustered = independent to {d_coef:.1e}")
    problems = [] if max(d_coef, d_glm, d_se) <= 1e-7 else ["numbers differ"]
    problems += in_process_part(args)
    problems += warm_part(args)
    if not args.skip_cli:
        problems += cli_part(args.rows, args.templates, args.repeat)
    for line in problems:
        print("FAIL:", line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
