"""Data -> "Large file on this machine": ``read_compact`` against the former several-pass read.

Usage::

    python benchmarks/bench_large_file.py [--files synthetic-csv,bbq-parquet,bbq-csv]
        [--rows 1000000] [--repeat 3] [--before] [--data /tmp/bench_large_file]

The first file is the bad-input corpus' generated CSV (``tests/data/bad/generate.py``
``big_csv``: model, category, a 0/1 ``biased`` and a constant ``note``; 44 MiB is 1M
rows, 300 MB 6.8M). With ``--before`` it is read into the compact table twice, each in a
fresh process whose time, CPU seconds and peak memory are printed:

* **several passes** (the implementation before this benchmark, kept below as
  :func:`read_compact_several_passes`): DuckDB parses the CSV once for approximate distinct
  counts, once more per kept text column to build its ENUM type, and once for the final
  select converted to pandas;
* **one pass** (:func:`analysis.engines.server_files.read_compact`): distinct counts on
  the first 100,000 rows, then a single streamed pass, dictionary-encoded per Arrow batch.

It prints whether the two tables are the same (columns, dtypes, values and
the left-out columns; category order aside: the several-pass categories come in DuckDB's
DISTINCT order, the one-pass categories sorted).

Baseline (issue 44.4: the open within 2x of it): **DuckDB reading the same columns**
(those the compact table keeps) from the same file into pandas with
``duckdb.sql("SELECT ... FROM read_csv|read_parquet(...)").df()``, in a fresh process,
alternating with ``read_compact`` ``--repeat`` times (best and median of each). Its values
are compared with the compact table's, column by column (text as strings, booleans read
as text as ``true``/``false``, numbers as float64): exit 1 if any column or the row count
differs. Beside it, the stricter Arrow table of the same query (``to_arrow_table()``: no
Python string per value; compared the same way, converted to pandas after the timing).

``--files`` picks the files (each about ``--rows`` rows, default 1M; written once under
``--data``): ``synthetic-csv``, the bad-input corpus' CSV above (4 narrow columns, all
kept; ``--mb`` overrides its size); ``bbq-parquet`` and ``bbq-csv``, the bundled BBQ sample
(23 columns, free text included: ``context`` and ``example_id`` are left out) repeated to
``--rows`` rows, as the app benchmarks build it. The several-pass read of before runs
once per file with ``--before``. ``--app`` adds the Data page's whole open under AppTest
(typing the path: ``read_compact``, the session state, the wait of up to 2 s for the
suggested design, the page's render), its table compared the same way.
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


def values_of(frame) -> dict:  # noqa: ANN001 - a DataFrame
    """Per column a hash of its values in a common form (text and categoricals as strings,
    booleans as ``true``/``false``, numbers as float64; missing as ``<NA>`` / NaN), and the
    rows: the compact table and DuckDB's ``.df()`` of the same columns compare equal."""
    import numpy as np
    import pandas as pd

    out = {"rows": len(frame)}
    for c in frame.columns:
        s = frame[c]
        if pd.api.types.is_bool_dtype(s.dtype):
            s = s.map({True: "true", False: "false"}).astype(object)
        if pd.api.types.is_numeric_dtype(s.dtype):
            v = pd.Series(s.to_numpy(dtype=np.float64, na_value=np.nan))
        else:
            v = s.astype(object).where(s.notna(), "<NA>").astype(str)
        out[c] = int(pd.util.hash_pandas_object(v, index=False).sum() % 2**61)
    return out


def peak_kb() -> int:
    """This process's peak resident memory in kB (``VmHWM``: unlike ``ru_maxrss``, which
    Linux carries over from the parent through fork and exec, it starts afresh at exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _child(which: str, path: str, *columns: str) -> None:
    from analysis.engines.server_files import read_compact

    start, cpu = time.perf_counter(), time.process_time()
    if which in ("duckdb", "arrow"):  # the baselines: DuckDB reads the kept columns
        import duckdb

        listed = ", ".join(f'"{c}"' for c in columns)
        reader = "read_parquet" if path.endswith(".parquet") else "read_csv"
        relation = duckdb.sql(f"SELECT {listed} FROM {reader}('{path}')")
        # an Arrow table, read in full (DuckDB 1.4+'s .arrow() is a lazy batch reader)
        frame = relation.df() if which == "duckdb" else (
            relation.to_arrow_table() if hasattr(relation, "to_arrow_table")
            else relation.fetch_arrow_table())
        wall, cpu, peak = time.perf_counter() - start, time.process_time() - cpu, peak_kb()
        if which == "arrow":  # untimed: to pandas for the comparison
            frame = frame.to_pandas()
        print(json.dumps({"wall": wall, "cpu": cpu, "values": values_of(frame),
                          "maxrss_kb": peak}))
        return
    if which == "app":  # the Data page's whole open under AppTest (the design's wait too)
        import os

        from analysis.engines.server_files import DATA_DIR_ENV
        from tests.app.apptools import page_test

        os.environ[DATA_DIR_ENV] = str(Path(path).parent)
        at = page_test("data.py").run()
        at.radio(key="data_source").set_value("Large file on this machine").run()
        start, cpu = time.perf_counter(), time.process_time()
        at.text_input(key="data_server_path").input(Path(path).name).run()
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        if at.exception or at.error:
            sys.exit(f"the Data page failed: {at.exception or at.error[0].value}")
        frame = at.session_state["results_frame"]
        print(json.dumps({"wall": wall, "cpu": cpu, "values": values_of(frame),
                          "maxrss_kb": peak_kb()}))
        return
    if which == "one":
        frame, meta = read_compact(path, with_meta=True)
        dropped = list(meta.dropped_columns)
    else:
        frame = read_compact_several_passes(path)
        dropped = frame.attrs["dropped_columns"]  # this script's own reader
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"wall": wall, "cpu": cpu, "fingerprint": fingerprint(frame, dropped),
                      "values": values_of(frame),
                      "maxrss_kb": peak_kb()}))


def _measure(which: str, path: Path, *columns: str) -> dict:
    run = subprocess.run([sys.executable, __file__, "--child", which, str(path), *columns],
                         capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(run.stdout.strip().splitlines()[-1])


def write_file(kind: str, rows: int, mb: float | None, folder: Path) -> Path:
    """The benchmark's file of ``kind`` (module docstring), written once into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "synthetic-csv":
        size = mb if mb is not None else round(44 * rows / 1_023_840, 1)  # 44 MiB: 1,023,840 rows
        path = folder / f"big_{size:g}mb.csv"
        if not path.exists():
            import importlib.util

            spec = importlib.util.spec_from_file_location(
                "generate", REPO / "tests/data/bad/generate.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            module.big_csv(path, size)
        return path
    import pandas as pd

    sample = pd.read_csv(REPO / "sample_data" / "bbq_unifiedqa.csv.gz")
    copies = max(1, round(rows / len(sample)))
    suffix = "parquet" if kind == "bbq-parquet" else "csv"
    path = folder / f"bbq_unifiedqa_x{copies}.{suffix}"
    if not path.exists():
        sys.path.insert(0, str(REPO / "benchmarks"))
        from bench_app_pages import tiled

        big = tiled(sample, copies * len(sample))
        tmp = path.with_suffix(".tmp")
        big.to_parquet(tmp, index=False) if suffix == "parquet" else big.to_csv(tmp, index=False)
        tmp.rename(path)
    return path


FILES = ("synthetic-csv", "bbq-parquet", "bbq-csv")


def _stats(runs: list[dict], key: str) -> tuple[float, float]:
    import statistics

    values = [r[key] for r in runs]
    return min(values), statistics.median(values)


def bench_file(path: Path, repeat: int, before: bool, app: bool = False) -> list[str]:
    """Print one file's measurements; the problems found (numbers that differ)."""
    import os

    print(f"\n{path.name} ({path.stat().st_size / 2**20:,.0f} MiB), load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    problems = []
    if before:
        old, new = _measure("several", path), _measure("one", path)
        print(f"several passes (before): wall {old['wall']:.2f} s, CPU {old['cpu']:.2f} s, "
              f"peak {old['maxrss_kb'] / 2**20:.2f} GB; same table as read_compact: "
              f"{'yes' if old['fingerprint'] == new['fingerprint'] else 'NO'}")
        if old["fingerprint"] != new["fingerprint"]:
            problems.append(f"{path.name}: the several-pass table differs")
    ours, base, arrow, page = [], [], [], []
    for _ in range(repeat):
        ours.append(_measure("one", path))
        columns = ours[-1]["fingerprint"]["columns"]
        base.append(_measure("duckdb", path, *columns))
        arrow.append(_measure("arrow", path, *columns))
        if app:
            page.append(_measure("app", path))
            print(f"  the Data page's open (AppTest) wall {page[-1]['wall']:.2f} s, CPU of "
                  f"the app's process {page[-1]['cpu']:.2f} s", flush=True)
        for label, other in ((".df()", base[-1]), ("Arrow table", arrow[-1]),
                             *((("the Data page's table", page[-1]),) if app else ())):
            if other["values"] != ours[-1]["values"]:
                differ = [c for c in ["rows", *columns]
                          if other["values"].get(c) != ours[-1]["values"].get(c)]
                problems.append(f"{path.name}: DuckDB's {label} differs in {differ}")
        print(f"  read_compact wall {ours[-1]['wall']:.2f} s CPU {ours[-1]['cpu']:.2f} s | "
              f"DuckDB .df() wall {base[-1]['wall']:.2f} s CPU {base[-1]['cpu']:.2f} s | "
              f"Arrow wall {arrow[-1]['wall']:.2f} s CPU {arrow[-1]['cpu']:.2f} s  "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)
    kept = ours[-1]["fingerprint"]
    print(f"{kept['rows']:,} rows; kept {len(kept['columns'])} columns, left out "
          f"{kept['dropped'] or 'none'}; DuckDB's values equal: "
          f"{'yes' if not problems else 'NO'}")
    for label, runs in (("read_compact (the open)", ours), ("DuckDB .df() (baseline)", base),
                        ("DuckDB to Arrow", arrow)):
        (wb, wm), (cb, cm) = _stats(runs, "wall"), _stats(runs, "cpu")
        peak = max(r["maxrss_kb"] for r in runs) / 2**20
        print(f"{label:24s} wall best {wb:.2f} / median {wm:.2f} s, CPU best {cb:.2f} / "
              f"median {cm:.2f} s, peak {peak:.2f} GB")
    (ow, owm), (bw, bwm) = _stats(ours, "wall"), _stats(base, "wall")
    (oc, ocm), (bc, bcm) = _stats(ours, "cpu"), _stats(base, "cpu")
    print(f"ratio to .df() (goal <= 2x): wall {ow / bw:.2f}x best / {owm / bwm:.2f}x median, "
          f"CPU {oc / bc:.2f}x best / {ocm / bcm:.2f}x median")
    (aw, awm), (ac, acm) = _stats(arrow, "wall"), _stats(arrow, "cpu")
    print(f"ratio to the Arrow table (no Python strings): wall {ow / aw:.2f}x best / "
          f"{owm / awm:.2f}x median, CPU {oc / ac:.2f}x best / {ocm / acm:.2f}x median")
    if app:
        (pw, pwm), (pc, pcm) = _stats(page, "wall"), _stats(page, "cpu")
        print(f"the Data page's open (AppTest: read_compact, the page's state, up to "
              f"{os.environ.get('BIAS_WORKBENCH_INFERENCE_WAIT', 2)} s for the suggested design, "
              f"the page's render) wall best {pw:.2f} / median {pwm:.2f} s, CPU {pc:.2f} / "
              f"{pcm:.2f} s: {pw / bw:.2f}x / {pwm / bwm:.2f}x the .df() wall")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", default=",".join(FILES),
                        help=f"comma-separated, among {', '.join(FILES)}")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--mb", type=float, default=None,
                        help="size of the synthetic CSV (default: --rows' worth)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", action="store_true",
                        help="also the several-pass read of before, once per file")
    parser.add_argument("--app", action="store_true",
                        help="also the Data page's whole open under AppTest")
    parser.add_argument("--data", default="/tmp/bench_large_file")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    kinds = args.files.split(",")
    if set(kinds) - set(FILES):
        parser.error(f"unknown --files {sorted(set(kinds) - set(FILES))}")
    paths = [write_file(k, args.rows, args.mb, Path(args.data)) for k in kinds]
    problems = [p for path in paths for p in bench_file(path, args.repeat, args.before, args.app)]
    for line in problems:
        print("FAIL:", line)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
