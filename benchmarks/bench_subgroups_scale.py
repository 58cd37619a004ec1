"""Benchmark: clustered subgroups and importance through DuckDB at 1M-100M rows (issue 44.5).

Usage::

    python benchmarks/bench_subgroups_scale.py [--rows 1M,10M,30M,100M] [--templates 300]
        [--cluster-sweep 100,300,1000] [--sweep-rows 3M] [--baseline-max 10M]
        [--data /tmp/bench_subgroups_scale] [--commands subgroups,importance]
        [--past-grid 3M:1000] [--repeat 3] [--out FOLDER]

    # past the dense grid alone (13,824 combinations x 1,000 templates at 3M rows):
    python benchmarks/bench_subgroups_scale.py --rows '' --cluster-sweep '' --out /tmp/x

    # the issue's 100M check alone (~1 min on the idle 2-core machine, data made once):
    python benchmarks/bench_subgroups_scale.py --rows 1M,100M --cluster-sweep ''

Generates Parquet rows once with DuckDB (``--data``, never the repository): 6 factors of
2-12 values (model 4, cot 2, style 6, gender 3, age 8, region 12) and ``template`` with
``--templates`` values, the design's cluster; a 0/1 deviation whose rate depends on the
model and the template. Each measurement runs in a fresh process: what a user runs,
``python -m analysis subgroups FILE --design D --engine duckdb --json`` with the design's
default cluster (levels 1-2, CR2, each subgroup's Satterthwaite df; ``analysis.cli.main``
in the worker, the JSON written to a file). Printed: wall and CPU seconds of the process
(DuckDB's threads included), its peak resident memory (``ru_maxrss`` of the worker, and
the process tree's RSS sampled every 50 ms), and the growth exponents ``log(CPU_2 /
CPU_1) / log(rows_2 / rows_1)`` over the row sizes and over the cluster counts
(``--cluster-sweep`` at ``--sweep-rows``). The subgroup tables of equal data must not
depend on the engine: the smallest size (if at most 3M rows) is also run through pandas
and compared (exit 1 if not equal), and the CLI's JSON with ``--engine pandas`` must be
the same bytes.

``importance`` (``--commands``) is measured the same way: ``python -m analysis importance
FILE --design D --engine duckdb --json`` with the design's cluster (CR2, small-sample df)
and with ``--no-cluster`` at every size (the coefficients must agree: the cluster changes
only the standard errors), the JSON at the smallest size byte-identical to ``--engine
pandas``'s, and its growth exponents in rows and in clusters printed.

Past the dense grid (``--past-grid ROWS:TEMPLATES``, default 3M rows and 1,000 templates:
13.8M entries, more than ``coded.DENSE_GRID``): each command with the default cluster as
it runs now (DuckDB groups the integer codes of the raw values) against the former path
(DuckDB groups the raw text values, forced in the worker by ``coded.MAX_CODE = 0``),
interleaved ``--repeat`` times in fresh processes; printed: every run, the best and the
median CPU, wall and peak memory of each, their ratios, and whether the two JSON outputs
are the same bytes, and (up to 3M rows) the same bytes as ``--engine pandas``'s (exit 1
if not).

Baselines in the same run: the unclustered command (``--no-cluster``) at every size, and
up to ``--baseline-max`` rows (10M) an analyst's DuckDB ``GROUP BY`` of the same factors x
template cells fetched to pandas (``.df()``: what any cluster-robust script starts from;
~3.5 GB at 30M rows, so not run at 100M by default); the ratios of CPU and peak memory
are printed, and the row counts, subgroup counts and log disparities must agree with
them (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
SIZES = {"model": 4, "cot": 2, "style": 6, "gender": 3, "age": 8, "region": 12}


def _count(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(text[-1:], 1)
    return int(float(text.rstrip("KMG")) * scale)


def generate(path: Path, rows: int, templates: int) -> None:
    """``rows`` generated rows in ``path`` (Parquet), written by DuckDB out of core."""
    import duckdb

    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(config={"memory_limit": "1GB", "threads": 2})
    con.execute("SET enable_progress_bar = false")
    h = "hash(i * 2654435761 + {k})"
    cols = ",\n".join(f"'{f}' || ({h.format(k=k)} % {s}) AS {f}"
                      for k, (f, s) in enumerate(SIZES.items(), start=1))
    partial = path.with_name(path.name + ".partial")
    con.sql(f"""
        COPY (SELECT {cols},
            'template ' || lpad(({h.format(k=20)} % {templates})::VARCHAR, 4, '0') AS template,
            ({h.format(k=21)} % 1000) < 150 + 40 * ({h.format(k=1)} % {SIZES['model']})
                + 3 * ({h.format(k=20)} % 37) AS deviation
        FROM range({rows}) t(i))
        TO '{partial}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)""")
    con.close()
    partial.rename(path)


def _design():
    sys.path.insert(0, str(REPO))
    from analysis.design import Design, Factor, Outcome

    factors = tuple(Factor(f, "model" if f == "model" else "domain",
                           tuple(f"{f}{i}" for i in range(s)), f"{f}0")
                    for f, s in SIZES.items())
    return Design(factors, Outcome("deviation"), cluster="template")


def worker(engine: str, path: str, out: str) -> None:
    """One measurement in its own process: the engine's cells, then clustered subgroups."""
    sys.path.insert(0, str(REPO))
    import resource

    from analysis.subgroups import subgroups

    design = _design()
    factors = list(SIZES)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = usage.ru_utime + usage.ru_stime
    started = time.perf_counter()
    if engine.startswith("cli"):  # what a user runs, in this process
        import contextlib

        from analysis.cli import main as cli

        # cli[:importance][:flat|:pandas|:text]: the command (subgroups by default), then
        # --no-cluster, the pandas engine or (past the dense grid) the former path
        parts = engine.split(":")
        if "text" in parts:  # DuckDB groups the raw values as text (before session 12)
            from analysis.engines import coded

            coded.MAX_CODE = 0
        command = "importance" if "importance" in parts else "subgroups"
        flat = "cli_unclustered" in parts or "flat" in parts
        design_file = Path(out).with_suffix(".design.yaml")
        design.save(design_file)
        argv = [command, path, "--design", str(design_file), "--engine",
                "pandas" if "pandas" in parts else "duckdb", "--json",
                *(["--no-cluster"] if flat else [])]
        with open(out, "w") as handle, contextlib.redirect_stdout(handle):
            code = cli(argv)
        seconds = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_SELF)
        with open(out) as handle:
            payload = json.load(handle)
        print(json.dumps({"seconds": seconds, "cells_seconds": float("nan"), "code": code,
                          "cpu": usage.ru_utime + usage.ru_stime - cpu0,
                          "maxrss_mb": usage.ru_maxrss / 1024, "cells": 0,
                          "subgroups": len(payload["terms" if command == "importance"
                                                   else "subgroups"]),
                          "rows": int(payload["settings"]["n_rows"])}))
        return
    cluster = None if engine == "duckdb_unclustered" else "template"
    keys = [*factors, *([cluster] if cluster else [])]
    table = None
    if engine == "sql":  # the baseline: an analyst's DuckDB GROUP BY of the same cells
        import duckdb

        con = duckdb.connect(config={"memory_limit": "2GB"})
        listed = ", ".join(keys)
        cells = con.sql(f"SELECT {listed}, count(*) AS n, sum(deviation::INT) AS deviations "
                        f"FROM read_parquet('{path}') GROUP BY {listed}").df()
    elif engine == "pandas":
        from analysis.cells import cell_table
        from analysis.design import apply_design
        from analysis.io import load_results

        cells = cell_table(apply_design(load_results(path), design), keys)
    else:
        from analysis.engines import cell_table

        cells = cell_table(path, keys, design=design, engine="duckdb")
    t_cells = time.perf_counter() - started
    if engine != "sql":
        table = subgroups(cells, factors, cluster=cluster)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    (cells if table is None else table.drop(columns=["duplicate_of"])).to_pickle(out)
    print(json.dumps({"seconds": seconds, "cells_seconds": t_cells,
                      "cpu": usage.ru_utime + usage.ru_stime - cpu0,
                      "maxrss_mb": usage.ru_maxrss / 1024, "cells": len(cells),
                      "subgroups": 0 if table is None else len(table),
                      "rows": int(cells["n"].sum())}))

def measure(engine: str, path: Path, out: Path) -> dict:
    """:func:`worker` in a fresh process (``bench_engines.measure``: the peak memory of
    the process tree sampled every 50 ms)."""
    from bench_engines import measure as run

    result = run(engine, path, out, script=__file__)
    if "error" in result:
        sys.exit(f"{engine} on {path} failed: {result['error']}")
    result["peak_mb"] = result["peak_gb"] * 1024
    return result


def line(label: str, r: dict, what: str = "subgroups") -> str:
    cells = f"{r['cells']:>9,} cells  " if r["cells"] else ""
    return (f"  {label:28s} {r['seconds']:6.2f} s wall  CPU {r['cpu']:6.2f} s  "
            f"peak {r['maxrss_mb']:6.0f} MB (ru_maxrss; tree {r['peak_mb']:6.0f} MB)  "
            f"{cells}{r['subgroups']} {what}  [load {os.getloadavg()[0]:.1f}]")


def importance_run(size: str, path: Path, data: Path, problems: list[str], pandas: bool
                   ) -> dict:
    """The CLI ``importance`` with the design's cluster and with ``--no-cluster`` on
    ``path``: printed, the coefficients compared (the cluster changes only the standard
    errors), and with ``pandas`` the JSON compared byte for byte with ``--engine
    pandas``'s. Returns the clustered run's measurement."""
    import numpy as np

    r = measure("cli:importance", path, data / "out_imp.json")
    print(line(f"importance {size} rows", r, "terms"))
    flat = measure("cli:importance:flat", path, data / "out_imp_flat.json")
    print(line("  the same, --no-cluster", flat, "terms"))
    print(f"  clustered / unclustered: CPU {r['cpu'] / flat['cpu']:.2f}x, memory "
          f"{r['maxrss_mb'] / flat['maxrss_mb']:.2f}x")
    ours = json.loads((data / "out_imp.json").read_text())["terms"]
    plain = json.loads((data / "out_imp_flat.json").read_text())["terms"]
    same = [t["term"] for t in ours] == [t["term"] for t in plain] and np.allclose(
        [t["coef"] for t in ours], [t["coef"] for t in plain], rtol=0, atol=1e-9) and \
        r["rows"] == flat["rows"] == _count(size)
    print(f"  rows and coefficients equal the unclustered command's: {same}")
    if not same:
        problems.append(f"importance {size}: coefficients differ from the unclustered fit's")
    if pandas:
        ref = measure("cli:importance:pandas", path, data / "out_imp_pandas.json")
        print(line(f"importance {size} rows through pandas", ref, "terms"))
        equal = (data / "out_imp.json").read_bytes() == \
            (data / "out_imp_pandas.json").read_bytes()
        print(f"  DuckDB's importance JSON equals pandas' byte for byte: {equal}")
        if not equal:
            problems.append("DuckDB's and pandas' importance JSON differ")
    return r


def past_grid(spec: str, data: Path, out: Path, commands: list[str], repeat: int,
              problems: list[str], pandas: bool = True) -> None:
    """Each command past the dense grid (``ROWS:TEMPLATES``): the integer codes grouped
    by DuckDB against the raw text values grouped (the former path), interleaved; with
    ``pandas`` the JSON is also compared with ``--engine pandas``'s (one run)."""
    import statistics

    from analysis.engines.coded import DENSE_GRID

    size, templates = spec.split(":")
    path = data / f"rows_{size}_t{int(templates)}.parquet"
    generate(path, _count(size), int(templates))
    entries = math.prod(SIZES.values()) * int(templates)
    print(f"past the dense grid: {size} rows, {templates} templates = {entries:,} entries "
          f"(dense grid {DENSE_GRID:,}); {repeat} interleaved runs of each")
    for command in commands:
        base = "cli:importance" if command == "importance" else "cli"
        what = "terms" if command == "importance" else "subgroups"
        runs: dict[str, list[dict]] = {"codes": [], "text": []}
        for _ in range(repeat):
            for label, engine in (("codes", base), ("text", f"{base}:text")):
                r = measure(engine, path, out / f"past_{command}_{label}.json")
                runs[label].append(r)
                print(line(f"{command}: {label} grouped", r, what))
        summary = {}
        for label, rs in runs.items():
            summary[label] = {k: (min(r[k] for r in rs), statistics.median(r[k] for r in rs))
                              for k in ("cpu", "seconds", "maxrss_mb", "peak_mb")}
            b = summary[label]
            print(f"  {command}, {label} grouped: CPU best {b['cpu'][0]:.2f} s median "
                  f"{b['cpu'][1]:.2f} s; wall best {b['seconds'][0]:.2f} s median "
                  f"{b['seconds'][1]:.2f} s; peak (ru_maxrss) best {b['maxrss_mb'][0]:.0f} "
                  f"median {b['maxrss_mb'][1]:.0f} MB (tree {b['peak_mb'][1]:.0f} MB)")
        new, old = summary["codes"], summary["text"]
        print(f"  {command}: codes / text: CPU {new['cpu'][0] / old['cpu'][0]:.2f}x best, "
              f"{new['cpu'][1] / old['cpu'][1]:.2f}x median; peak memory "
              f"{new['maxrss_mb'][1] / old['maxrss_mb'][1]:.2f}x median")
        same_json(out, command, "text", problems, "the two paths' JSON are the same bytes",
                  "the former path's")
        if pandas:
            ref = measure(f"{base}:pandas", path, out / f"past_{command}_pandas.json")
            print(line(f"{command}: --engine pandas", ref, what))
            same_json(out, command, "pandas", problems,
                      "the JSON equals --engine pandas' byte for byte", "pandas'")


def same_json(out: Path, command: str, other: str, problems: list[str], said: str,
              differs: str) -> None:
    """Print whether the grouped codes' JSON past the grid is the same bytes as
    ``other``'s; a problem when not."""
    equal = (out / f"past_{command}_codes.json").read_bytes() == \
        (out / f"past_{command}_{other}.json").read_bytes()
    print(f"  {command}: {said}: {equal}")
    if not equal:
        problems.append(f"{command} past the dense grid: the JSON differs from {differs}")


def exponent(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(CPU) on log(size)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / \
        sum((x - mx) ** 2 for x in xs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", default="1M,10M,30M,100M")
    p.add_argument("--templates", type=int, default=300)
    p.add_argument("--cluster-sweep", default="100,300,1000")
    p.add_argument("--sweep-rows", default="3M")
    p.add_argument("--baseline-max", default="10M",
                   help="largest size the analyst's GROUP BY baseline runs on")
    p.add_argument("--data", default="/tmp/bench_subgroups_scale")
    p.add_argument("--commands", default="subgroups,importance",
                   help="the CLI commands measured (subgroups, importance or both)")
    p.add_argument("--past-grid", default="3M:1000",
                   help="ROWS:TEMPLATES past the dense grid, new against former path ('' = no)")
    p.add_argument("--repeat", type=int, default=3,
                   help="interleaved runs of each path past the dense grid")
    p.add_argument("--out", default=None,
                   help="folder of the outputs (default: --data)")
    p.add_argument("--worker", nargs=3, metavar=("ENGINE", "PATH", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    import numpy as np
    import pandas as pd

    data = Path(args.data)
    out = Path(args.out) if args.out else data
    out.mkdir(parents=True, exist_ok=True)
    print(f"uptime: {os.popen('uptime').read().strip()}")
    by_rows, problems = [], []
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    imp_rows, imp_clusters = [], []
    sizes = [s.strip() for s in args.rows.split(",") if s.strip()]
    for k, size in enumerate(sizes):
        path = data / f"rows_{size}_t{args.templates}.parquet"
        generate(path, _count(size), args.templates)
        if "importance" in commands:
            r = importance_run(size, path, out, problems,
                               pandas=k == 0 and _count(size) <= 3 * 10**6)
            imp_rows.append((_count(size), r["cpu"]))
        if "subgroups" not in commands:
            continue
        r = measure("cli", path, out / "out_cli.json")
        print(line(f"{size} rows, {args.templates} templates", r))
        by_rows.append((_count(size), r["cpu"]))
        flat = measure("cli_unclustered", path, out / "out_flat.json")
        print(line("  the same, --no-cluster", flat))
        print(f"  clustered / unclustered: CPU {r['cpu'] / flat['cpu']:.2f}x, memory "
              f"{r['maxrss_mb'] / flat['maxrss_mb']:.2f}x")
        ours = pd.DataFrame(json.loads((out / "out_cli.json").read_text())["subgroups"])
        flat_table = pd.DataFrame(json.loads((out / "out_flat.json").read_text())["subgroups"])
        same_ld = np.allclose(ours["log_disparity"], flat_table["log_disparity"],
                              rtol=0, atol=1e-10, equal_nan=True) and \
            ours["n"].equals(flat_table["n"]) and r["rows"] == flat["rows"] == _count(size)
        print(f"  rows, counts and LD equal the unclustered command's: {same_ld}")
        if not same_ld:
            problems.append(f"{size}: numbers differ from the unclustered command's")
        if _count(size) <= _count(args.baseline_max):
            base = measure("sql", path, out / "out_sql.pkl")
            print(line("  baseline: DuckDB GROUP BY", base))
            print(f"  clustered / analyst's GROUP BY of the same cells: CPU "
                  f"{r['cpu'] / base['cpu']:.2f}x, memory "
                  f"{r['maxrss_mb'] / base['maxrss_mb']:.2f}x")
            if base["rows"] != r["rows"]:
                problems.append(f"{size}: the GROUP BY counts other rows")
        if k == 0 and _count(size) <= 3 * 10**6:  # pandas holds every row in memory
            ref = measure("pandas", path, out / "out_pandas.pkl")
            print(line(f"{size} rows through pandas", ref))
            a = ours.drop(columns=["duplicate_of"], errors="ignore")
            b = pd.read_pickle(out / "out_pandas.pkl")
            cols = ["n", "deviations", "log_disparity", "ci_low", "ci_high", "p_value",
                    "p_adjusted", "design_effect", "n_clusters", "df"]
            names = [*SIZES, "level"]
            same = len(a) == len(b) and np.allclose(
                a[cols].to_numpy(float), b[cols].to_numpy(float), rtol=1e-9, atol=1e-12,
                equal_nan=True) and a[names].astype(str).replace("nan", "").equals(
                b[names].astype(str).replace("nan", ""))
            print(f"  DuckDB's subgroups (the factors, {', '.join(cols)}) equal pandas': "
                  f"{same}")
            if not same:
                problems.append("DuckDB's and pandas' subgroup tables differ")
            measure("cli:pandas", path, out / "out_cli_pandas.json")
            equal = (out / "out_cli.json").read_bytes() == \
                (out / "out_cli_pandas.json").read_bytes()
            print(f"  DuckDB's subgroups JSON equals pandas' (the CLI) byte for byte: {equal}")
            if not equal:
                problems.append("DuckDB's and pandas' subgroups JSON differ")
    by_clusters = []
    for t in [int(x) for x in args.cluster_sweep.split(",") if x.strip()]:
        path = data / f"rows_{args.sweep_rows}_t{t}.parquet"
        generate(path, _count(args.sweep_rows), t)
        if "importance" in commands:
            r = measure("cli:importance", path, out / "out_imp.json")
            print(line(f"importance {args.sweep_rows} rows, {t} templates", r, "terms"))
            imp_clusters.append((t, r["cpu"]))
        if "subgroups" in commands:
            r = measure("cli", path, out / "out_cli.json")
            print(line(f"{args.sweep_rows} rows, {t} templates", r))
            by_clusters.append((t, r["cpu"]))
    if args.past_grid:
        past_grid(args.past_grid, data, out, commands, args.repeat, problems,
                  pandas=_count(args.past_grid.split(":")[0]) <= 3 * 10**6)
    for name, rows_, clusters_ in (("subgroups", by_rows, by_clusters),
                                   ("importance", imp_rows, imp_clusters)):
        if len(rows_) > 1:
            print(f"{name}: growth in rows: CPU ~ rows^{exponent(rows_):.2f}")
        if len(clusters_) > 1:
            print(f"{name}: growth in clusters: CPU ~ clusters^{exponent(clusters_):.2f}")
    print(f"uptime: {os.popen('uptime').read().strip()}")
    for msg in problems:
        print("FAIL:", msg)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
