"""Data -> "Large file on this machine": ``read_compact`` against the former several-pass read.

Usage::

    python benchmarks/bench_large_file.py [--mb 300] [--data /tmp/bench_large_file]

Writes the bad-input corpus' generated CSV once (``tests/data/bad/generate.py``
``big_csv``: model, category, a 0/1 ``biased`` and a constant ``note``; 300 MB is 6.8M
rows) and reads it into the compact table twice, each in a fresh process whose time, CPU
seconds and peak memory are printed:

* **several passes** (the implementation before this benchmark, kept below as
  :func:`read_compact_several_passes`): DuckDB parses the CSV once for approximate distinct
  counts, once more per kept text column to build its ENUM type, and once for the final
  select converted to pandas;
* **one pass** (:func:`analysis.engines.server_files.read_compact`): distinct counts on
  the first 100,000 rows, then a single streamed pass, dictionary-encoded per Arrow batch.

It prints the ratio and whether the two tables are the same (columns, dtypes, values and
the left-out columns; category order aside: the several-pass categories come in DuckDB's
DISTINCT order, the one-pass categories sorted).

Baseline (issue 44.4: the open within 2x of it): **DuckDB reading the same columns**
(those the compact table keeps) from the same file into pandas with ``.df()``, in a
fresh process, its rows counted against the compact table's. ``--mb 44`` is about 1M
rows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def read_compact_several_passes(source: str, *, max_values: int = 1000):  # noqa: ANN201
    """The former ``read_compact``: approximate counts, one ENUM pass per text column, the
    final select (every pass parses the CSV again)."""
    from analysis.engines import sql
    from analysis.engines.duckdb_engine import DuckDBTable

    table = DuckDBTable(source)
    try:
        q = table.dialect.quote
        text_cols = [c for c, k in table.kinds.items() if k in ("string", "csvbool", "other")]
        counts = {}
        if text_cols:
            stats = table.query("SELECT " + ", ".join(
                f"approx_count_distinct({q(c)}) AS c{i}" for i, c in enumerate(text_cols))
                + " FROM {table}")
            counts = {c: int(stats[f"c{i}"].iloc[0]) for i, c in enumerate(text_cols)}
        keep_text = [c for c in text_cols if counts[c] <= max_values * 1.1]
        dropped = [c for c in text_cols if c not in keep_text]
        view = "bias_workbench_large"
        table.relation.create_view(view, replace=True)
        connection = table.connection
        selects = []
        for i, (c, kind) in enumerate(table.kinds.items()):
            if c in dropped:
                continue
            if c in keep_text:
                enum = f"bw_enum_{i}"
                value = q(c) if kind == "string" else (
                    f"(CASE WHEN {q(c)} IS NULL THEN NULL "
                    f"ELSE {sql.value_text(sql.DUCKDB, c, kind)} END)")
                connection.execute(f"CREATE OR REPLACE TYPE {enum} AS ENUM (SELECT DISTINCT "
                                   f"{value} FROM {view} WHERE {q(c)} IS NOT NULL)")
                selects.append(f"CAST({value} AS {enum}) AS {q(c)}")
            else:
                selects.append(q(c))
        frame = connection.sql(f"SELECT {', '.join(selects)} FROM {view}").df()
    finally:
        table.close()
    for c in keep_text:
        frame[c] = frame[c].cat.as_unordered()
        if len(frame[c].cat.categories) > max_values:
            frame = frame.drop(columns=c)
            dropped.append(c)
    frame.attrs["dropped_columns"] = dropped
    return frame


def fingerprint(frame, dropped) -> dict:  # noqa: ANN001 - a DataFrame, column names
    """Columns, dtypes (categoricals as 'category'), a hash of each column's values and
    the left-out columns: equal fingerprints mean the same table."""
    import pandas as pd

    out = {"columns": list(frame.columns), "dropped": sorted(dropped),
           "rows": len(frame)}
    for c in frame.columns:
        s = frame[c]
        cat = isinstance(s.dtype, pd.CategoricalDtype)
        values = s.astype(object).fillna("<NA>").astype(str) if cat else s
        out[c] = ["category" if cat else str(s.dtype),
                  int(pd.util.hash_pandas_object(values, index=False).sum() % 2**61)]
    return out


def _child(which: str, path: str, *columns: str) -> None:
    import resource

    from analysis.engines.server_files import read_compact

    start, cpu = time.perf_counter(), time.process_time()
    if which == "duckdb":  # the baseline: DuckDB reads the kept columns into pandas
        import duckdb

        listed = ", ".join(f'"{c}"' for c in columns)
        frame = duckdb.sql(f"SELECT {listed} FROM read_csv('{path}')").df()
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(json.dumps({"wall": wall, "cpu": cpu, "rows": len(frame),
                          "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
        return
    if which == "one":
        frame, meta = read_compact(path, with_meta=True)
        dropped = list(meta.dropped_columns)
    else:
        frame = read_compact_several_passes(path)
        dropped = frame.attrs["dropped_columns"]  # this script's own reader
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"wall": wall, "cpu": cpu, "fingerprint": fingerprint(frame, dropped),
                      "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


def _measure(which: str, path: Path, *columns: str) -> dict:
    run = subprocess.run([sys.executable, __file__, "--child", which, str(path), *columns],
                         capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=300)
    parser.add_argument("--data", default="/tmp/bench_large_file")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    import importlib.util

    path = Path(args.data) / f"big_{args.mb:g}mb.csv"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        spec = importlib.util.spec_from_file_location("generate",
                                                      REPO / "tests/data/bad/generate.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        module.big_csv(path, args.mb)
    import os

    print(f"{path} ({path.stat().st_size / 2**20:,.0f} MiB), load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    old = _measure("several", path)
    new = _measure("one", path)
    for label, m in (("several passes (before)", old), ("one pass (read_compact)", new)):
        print(f"{label:26s} wall {m['wall']:6.1f} s  CPU {m['cpu']:6.1f} s  "
              f"peak {m['maxrss_kb'] / 2**20:5.2f} GB")
    print(f"one pass is {old['wall'] / new['wall']:.2f}x faster (wall), "
          f"{old['cpu'] / new['cpu']:.2f}x less CPU; same table: "
          f"{'yes' if old['fingerprint'] == new['fingerprint'] else 'NO'}")
    base = _measure("duckdb", path, *new["fingerprint"]["columns"])
    kept = len(new["fingerprint"]["columns"])
    print(f"{'baseline: DuckDB .df()':26s} wall {base['wall']:6.1f} s  CPU {base['cpu']:6.1f} s  "
          f"peak {base['maxrss_kb'] / 2**20:5.2f} GB  (the same {kept} columns, "
          f"{base['rows']:,} rows: "
          f"{'equal' if base['rows'] == new['fingerprint']['rows'] else 'NOT EQUAL'})")
    print(f"the open (read_compact) / DuckDB reading the same columns: "
          f"{new['wall'] / base['wall']:.2f}x wall, {new['cpu'] / base['cpu']:.2f}x CPU "
          "(goal <= 2x)")


if __name__ == "__main__":
    main()
