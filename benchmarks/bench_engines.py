"""Cell table from generated Parquet rows: pandas against DuckDB (and Spark local mode).

Usage::

    python benchmarks/bench_engines.py [--rows 10M,100M] [--data /tmp/bench_engines]
                                       [--spark-rows 10M] [--pandas-max 10M]

Generates the rows once with DuckDB (``--data``, never the repository): a benchmark-like
sweep with eight models, nine categories, forty templates, four prompt styles, chain of
thought on/off, two temperatures and a yes / no / unknown answer (5 % missing) whose
deviation is ``answer = 'yes'``. Each measurement runs in a fresh process; the parent
samples the resident memory of that process and its children (the JVM for Spark) every
50 ms and prints the time, the peak memory, the ratio against pandas and whether the
cell table equals the pandas one (or, where pandas does not run, DuckDB's). CPU seconds
(user + system of the measuring process) are printed too: on a shared machine the wall
time mostly measures the wait for a core.
Goals (issue 11): 100M rows -> cell table in under 60 s and 3 GB; at 10M rows DuckDB
no slower than pandas.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FACTORS = ["model", "category", "template", "prompt_style", "cot", "temperature"]


def _count(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(text[-1:], 1)
    return int(float(text.rstrip("KMG")) * scale)


def generate(path: Path, rows: int) -> None:
    """Write ``rows`` generated rows to ``path`` (Parquet) with DuckDB, out of core."""
    import duckdb

    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(config={"memory_limit": "2GB", "threads": 2})
    con.execute("SET enable_progress_bar = false")
    partial = path.with_name(path.name + ".partial")
    h = "hash(i * 2654435761 + {k})"
    con.sql(f"""
        COPY (SELECT
            'model-' || ({h.format(k=1)} % 8) AS model,
            'category-' || ({h.format(k=2)} % 9) AS category,
            ({h.format(k=3)} % 40)::BIGINT AS template,
            ['original', 'positive', 'doubt', 'none'][1 + ({h.format(k=4)} % 4)::INT]
                AS prompt_style,
            ({h.format(k=5)} % 2) = 1 AS cot,
            CASE WHEN {h.format(k=6)} % 2 = 0 THEN 0.0 ELSE 0.7 END::DOUBLE AS temperature,
            CASE WHEN {h.format(k=7)} % 100 < 5 THEN NULL
                 WHEN {h.format(k=8)} % 100 < 20 + 3 * ({h.format(k=1)} % 8) THEN 'yes'
                 WHEN {h.format(k=8)} % 2 = 0 THEN 'no' ELSE 'unknown' END AS answer,
            'response text ' || i AS completion
        FROM range({rows}) t(i))
        TO '{partial}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)""")
    con.close()
    partial.rename(path)


def _design():
    sys.path.insert(0, str(REPO))
    from analysis.design import Design, Factor, Outcome

    return Design(factors=(
        Factor("model", "model", tuple(f"model-{i}" for i in range(8)), "model-0"),
        Factor("category", "domain", tuple(f"category-{i}" for i in range(9)), "category-0"),
        Factor("template", "prompt", tuple(str(i) for i in range(40)), "0"),
        Factor("prompt_style", "prompt", ("original", "positive", "doubt", "none"), "none"),
        Factor("cot", "prompt", ("false", "true"), "false"),
        Factor("temperature", "model", ("0", "0.7"), "0"),
    ), outcome=Outcome("answer", "values", values=("yes",)))


def worker(engine: str, path: str, out: str) -> None:
    """One measurement (in its own process): source -> cell table, written to ``out``."""
    sys.path.insert(0, str(REPO))
    import resource

    design = _design()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = usage.ru_utime + usage.ru_stime
    started = time.perf_counter()
    if engine == "pandas":
        from analysis.cells import cell_table
        from analysis.design import apply_design
        from analysis.io import load_results

        cells = cell_table(apply_design(load_results(path), design), FACTORS)
    elif engine == "duckdb":
        from analysis.engines import cell_table

        cells = cell_table(path, FACTORS, design=design, engine="duckdb")
    else:
        from pyspark.sql import SparkSession

        from analysis.engines import cell_table

        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.driver.host", "127.0.0.1")
                 .config("spark.driver.memory", "2g")
                 .config("spark.sql.shuffle.partitions", "4").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        ready = time.perf_counter()
        cells = cell_table(spark.read.parquet(path), FACTORS, design=design)
        print(json.dumps({"startup": ready - started}), flush=True)
        started = ready
        spark.stop()
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)  # this process (DuckDB's threads too;
    cpu = usage.ru_utime + usage.ru_stime - cpu0        # not Spark's JVM)
    cells.to_parquet(out)
    print(json.dumps({"seconds": seconds, "cpu": cpu, "cells": len(cells),
                      "rows": int(cells["n"].sum())}))


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        proc = psutil.Process(pid)
        total = proc.memory_info().rss
        for child in proc.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += child.memory_info().rss
        return total
    except psutil.Error:
        return 0


def measure(engine: str, path: Path, out: Path, script: str = __file__) -> dict:
    """Run ``script --worker ENGINE PATH OUT`` (default: this one's :func:`worker`) in a
    fresh process; its time and the peak memory of its tree."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, script, "--worker", engine, str(path), str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.05)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    stdout, stderr = proc.communicate()
    thread.join()
    if proc.returncode != 0:
        return {"error": (stderr.strip().splitlines() or ["?"])[-1]}
    result = {}
    for line in stdout.strip().splitlines():
        result.update(json.loads(line))
    result["peak_gb"] = peak[0] / 2**30
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="10M,100M")
    parser.add_argument("--spark-rows", default="10M", help="sizes Spark runs on ('' = none)")
    parser.add_argument("--pandas-max", default="10M", help="largest size pandas runs on")
    parser.add_argument("--data", default="/tmp/bench_engines")
    parser.add_argument("--worker", nargs=3, metavar=("ENGINE", "PATH", "OUT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    import pandas as pd

    data = Path(args.data)
    spark_sizes = {_count(s) for s in args.spark_rows.split(",") if s.strip()}
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    for size_text in args.rows.split(","):
        rows = _count(size_text)
        path = data / f"rows_{size_text.strip()}.parquet"
        t = time.perf_counter()
        generate(path, rows)
        print(f"\n{rows:,} rows: {path} ({path.stat().st_size / 2**20:,.0f} MiB; "
              f"generated/present in {time.perf_counter() - t:.1f} s)")
        engines = ["duckdb"]
        if rows <= _count(args.pandas_max):
            engines.insert(0, "pandas")
        if rows in spark_sizes:
            engines.append("spark")
        results, tables = {}, {}
        for engine in engines:
            out = data / f"cells_{engine}_{size_text.strip()}.parquet"
            results[engine] = r = measure(engine, path, out)
            if "error" not in r:
                tables[engine] = pd.read_parquet(out)
        reference = "pandas" if "pandas" in tables else "duckdb"
        base = results.get("pandas", {}).get("seconds")
        for engine, r in results.items():
            if "error" in r:
                print(f"  {engine:7s} failed: {r['error']}")
                continue
            same = tables[engine].astype(str).equals(tables[reference].astype(str))
            ratio = f"{base / r['seconds']:5.2f}x pandas speed" if base else "pandas not run"
            extra = f" (+{r['startup']:.1f} s session start)" if "startup" in r else ""
            cpu = f"cpu {r['cpu']:6.1f} s" if engine != "spark" else "cpu (JVM) n/a"
            print(f"  {engine:7s} {r['seconds']:7.2f} s{extra}  {cpu}  "
                  f"peak {r['peak_gb']:5.2f} GB  {ratio}  {r['cells']:,} cells  "
                  f"equal to {reference}: {same}")
        print(f"  load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
