"""Benchmark: CLI start-up, ``subgroups`` and ``importance`` end to end on a 1M-row
Parquet file.

Run: ``PYTHONPATH=. python benchmarks/bench_cli.py [--rows 1000000] [--repeat 3]
[--before /path/to/an/older/checkout]``.

1. ``python -m analysis --help``: wall time against ``python -c pass`` and
   ``python -c "import pandas"`` in the same run, and which heavy packages it imported
   (read from ``-X importtime``: it must be none of pandas, numpy, scipy, streamlit).
2. ``python -m analysis subgroups FILE.parquet --design D --level 3 --test wald --json``
   against a naive pandas + statsmodels script (one groupby per factor combination,
   ``Table2x2`` per subgroup, ``multipletests`` for Benjamini-Hochberg), each a fresh
   process (both pay for their imports). Every subgroup's n, deviations, log disparity,
   Woolf CI, p-value and adjusted p-value must agree (the script exits 1 if not).
   With ``--before``, the same command run from an older checkout is a second baseline
   (its JSON must be identical).
3. ``python -m analysis importance FILE.parquet --design D --json`` (with its
   likelihood-ratio tests) against a naive script reading the file with pandas and
   fitting ``smf.logit`` (treatment coding, the fit alone), each a fresh process; every
   coefficient and standard error must agree to 1e-6. Target: >= 25x (issue #32).

Wall times on a shared machine mostly measure the wait for a core: the CPU seconds of the
child processes (user + sys) are printed beside them, and the ratios are what counts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_subgroups import SIZES, make_results  # noqa: E402

from analysis.design import Design  # noqa: E402

HEAVY = ("pandas", "numpy", "scipy", "streamlit", "plotly", "pyarrow", "statsmodels")

NAIVE = r'''
import itertools, json, sys
import numpy as np, pandas as pd, yaml
from statsmodels.stats.contingency_tables import Table2x2
from statsmodels.stats.multitest import multipletests
path, design_path, level = sys.argv[1], sys.argv[2], int(sys.argv[3])
factors = [f["name"] for f in yaml.safe_load(open(design_path))["factors"]]
df = pd.read_parquet(path)
total_n, total_d = len(df), int(df["deviation"].sum())
out = []
for k in range(1, level + 1):
    for combo in itertools.combinations(factors, k):
        g = df.groupby(list(combo), observed=True)["deviation"].agg(["size", "sum"])
        for key, (n, d) in g.iterrows():
            key = key if isinstance(key, tuple) else (key,)
            t = Table2x2(np.array([[d, n - d], [total_d - d, total_n - n - total_d + d]]))
            lo, hi = t.log_oddsratio_confint(0.05)
            out.append({**dict(zip(combo, key)), "level": k, "n": int(n),
                        "deviations": int(d), "log_disparity": t.log_oddsratio,
                        "ci_low": lo, "ci_high": hi, "p_value": t.log_oddsratio_pvalue()})
adjusted = multipletests([r["p_value"] for r in out], method="fdr_bh")[1]
for r, a in zip(out, adjusted):
    r["p_adjusted"] = float(a)
json.dump(out, sys.stdout)
'''

NAIVE_LOGIT = r'''
import json, sys
import pandas as pd, statsmodels.formula.api as smf, yaml
path, design_path = sys.argv[1], sys.argv[2]
factors = yaml.safe_load(open(design_path))["factors"]
df = pd.read_parquet(path)
formula = "deviation ~ " + " + ".join(
    f"C({f['name']}, Treatment({f['values'][0]!r}))" for f in factors)
fit = smf.logit(formula, data=df).fit(disp=0)
json.dump({"coef": fit.params.to_dict(), "se": fit.bse.to_dict()}, sys.stdout)
'''


def run(cmd: list[str], *, env: dict[str, str]) -> tuple[float, float, str, str]:
    """Wall and CPU seconds (user + sys of the child) of one process; stdout, stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    # run from the tree's folder: ``python -m`` puts the working directory first on the path
    done = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          cwd=env.get("PYTHONPATH") or None)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout, done.stderr


def best(cmd: list[str], repeat: int, env: dict[str, str]) -> tuple[float, float, str, str]:
    runs = [run(cmd, env=env) for _ in range(repeat)]
    wall = min(r[0] for r in runs)
    cpu = min(r[1] for r in runs)
    return wall, cpu, runs[-1][2], runs[-1][3]


def env_for(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}


def imported(importtime_stderr: str) -> set[str]:
    """Top-level package names in ``-X importtime`` output."""
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def bench_help(repeat: int, env: dict[str, str]) -> None:
    py = sys.executable
    print(f"1. start-up (best of {repeat}; wall / CPU seconds)")
    w0, c0, _, _ = best([py, "-c", "pass"], repeat, env)
    wp, cp, _, _ = best([py, "-c", "import pandas"], repeat, env)
    wh, ch, out, _ = best([py, "-m", "analysis", "--help"], repeat, env)
    assert "subgroups" in out and "importance" in out, out
    _, _, _, err = run([py, "-X", "importtime", "-m", "analysis", "--help"], env=env)
    heavy = sorted(imported(err) & set(HEAVY))
    print(f"   python -c pass                {w0:6.3f} s / {c0:5.3f} s")
    print(f"   python -c 'import pandas'     {wp:6.3f} s / {cp:5.3f} s")
    print(f"   python -m analysis --help     {wh:6.3f} s / {ch:5.3f} s   (target < 0.3 s; "
          f"{wp / wh:.1f}x faster than importing pandas)")
    print(f"   heavy packages imported by --help: {heavy or 'none'}")
    if heavy:
        sys.exit("FAIL: --help imports " + ", ".join(heavy))


def compare(ours: list[dict], naive: list[dict], factors: list[str]) -> None:
    """Every subgroup's counts and statistics agree (keyed by the values it fixes)."""
    def key(r: dict) -> tuple:
        return tuple(r.get(f) for f in factors)

    ref = {key(r): r for r in naive}
    assert len(ours) == len(ref), (len(ours), len(ref))
    for r in ours:
        n = ref[key(r)]
        assert (r["n"], r["deviations"]) == (n["n"], n["deviations"]), (r, n)
        for col in ("log_disparity", "ci_low", "ci_high", "p_value", "p_adjusted"):
            np.testing.assert_allclose(r[col], n[col], rtol=1e-9, atol=1e-300, err_msg=col)


@contextlib.contextmanager
def parquet_input(rows: int) -> Iterator[tuple[Path, Path, Design]]:
    """The simulated results as a Parquet file and its design as YAML, in a temporary
    folder: (data path, design path, design)."""
    frame, design = make_results(rows, SIZES)
    with tempfile.TemporaryDirectory() as tmp:
        data, design_path = Path(tmp) / "results.parquet", Path(tmp) / "design.yaml"
        frame.to_parquet(data, index=False)
        design.save(design_path)
        del frame
        yield data, design_path, design


def bench_subgroups(rows: int, repeat: int, env: dict[str, str], before: Path | None) -> None:
    py = sys.executable
    with parquet_input(rows) as (data, design_path, design):
        cmd = [py, "-m", "analysis", "subgroups", str(data), "--design", str(design_path),
               "--level", "3", "--test", "wald", "--json"]
        print(f"\n2. subgroups end to end: {rows:,} rows of Parquet, {len(SIZES)} factors, "
              f"levels 1..3 (best of {repeat}; wall / CPU seconds)")
        wo, co, out, _ = best(cmd, repeat, env)
        wn, cn, naive_out, _ = best([py, "-c", NAIVE, str(data), str(design_path), "3"],
                                    1, env)
        ours = json.loads(out)["subgroups"]
        compare(ours, json.loads(naive_out), design.names)
        print(f"   naive pandas + statsmodels    {wn:6.2f} s / {cn:5.2f} s   (1.00x)")
        print(f"   python -m analysis subgroups  {wo:6.2f} s / {co:5.2f} s   "
              f"({wn / wo:.1f}x wall, {cn / co:.1f}x CPU; target >= 3x)")
        print(f"   {len(ours):,} subgroups, every number equal to the naive script's")
        if before is not None:
            wb, cb, out_b, _ = best(cmd, repeat, env_for(before))
            same = out_b == out
            print(f"   same command from {before}: {wb:6.2f} s / {cb:5.2f} s   "
                  f"({wb / wo:.1f}x wall, {cb / co:.1f}x CPU); identical JSON: {same}")
            if not same:
                sys.exit("FAIL: the JSON differs from the older checkout's")


def compare_logit(terms: list[dict], naive: dict) -> float:
    """Largest |difference| of coefficients and standard errors, matched by term."""
    worst = 0.0
    for t in terms:
        name = ("Intercept" if t["factor"] is None else
                f"C({t['factor']}, Treatment('{t['factor']}0'))[T.{t['value']}]")
        worst = max(worst, abs(t["coef"] - naive["coef"][name]),
                    abs(t["std_err"] - naive["se"][name]))
    assert len(terms) == len(naive["coef"]), (len(terms), len(naive["coef"]))
    return worst


def bench_importance(rows: int, repeat: int, env: dict[str, str]) -> None:
    py = sys.executable
    with parquet_input(rows) as (data, design_path, _):
        cmd = [py, "-m", "analysis", "importance", str(data), "--design", str(design_path),
               "--json"]
        print(f"\n3. importance end to end: {rows:,} rows of Parquet, {len(SIZES)} factors "
              f"(ours with the LR tests; best of {repeat}; wall / CPU seconds)")
        wo, co, out, _ = best(cmd, repeat, env)
        wn, cn, naive_out, _ = best([py, "-c", NAIVE_LOGIT, str(data), str(design_path)],
                                    1, env)
        payload = json.loads(out)
        worst = compare_logit(payload["terms"], json.loads(naive_out))
        print(f"   naive pandas + smf.logit       {wn:6.2f} s / {cn:5.2f} s   (1.00x)")
        print(f"   python -m analysis importance  {wo:6.2f} s / {co:5.2f} s   "
              f"({wn / wo:.1f}x wall, {cn / co:.1f}x CPU; target >= 25x)")
        print(f"   {len(payload['terms'])} terms and {len(payload['tests'])} LR tests; "
              f"largest |coef or SE difference| {worst:.1e}")
        if worst > 1e-6:
            sys.exit("FAIL: the coefficients differ from statsmodels'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, help="an older checkout to compare with")
    parser.add_argument("--only", default="subgroups,importance",
                        help="which end-to-end parts to run (comma-separated)")
    args = parser.parse_args()
    print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores")
    env = env_for(ROOT)
    bench_help(max(args.repeat, 5), env)
    if "subgroups" in args.only:
        bench_subgroups(args.rows, args.repeat, env, args.before)
    if "importance" in args.only:
        bench_importance(args.rows, args.repeat, env)
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
