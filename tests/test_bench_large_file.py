"""The check of ``benchmarks/bench_large_file.py``: the compact table against DuckDB's
``.df()`` of the same columns, compared by ``values_of``.

The benchmark exits 1 when the two differ, so the comparison must find equal what is
equal across the two representations (categoricals against strings, booleans read as
text against DuckDB's booleans, masked integers against floats) and must find a single
changed value. No time is asserted (times belong in benchmarks/).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "bench_large_file", ROOT / "benchmarks" / "bench_large_file.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_equal_values_in_the_two_representations_compare_equal(bench) -> None:
    compact = pd.DataFrame({
        "model": pd.Categorical(["a", "b", None, "a"]),
        "flag": pd.Categorical(["true", "false", "true", None]),
        "n": pd.array([1, None, 3, 4], dtype="Int64"),
        "x": [0.5, 1.5, np.nan, 2.0],
    })
    duck = pd.DataFrame({
        "model": pd.Series(["a", "b", None, "a"], dtype=object),
        "flag": pd.Series([True, False, True, None], dtype="boolean"),
        "n": [1.0, np.nan, 3.0, 4.0],
        "x": [0.5, 1.5, np.nan, 2.0],
    })
    assert bench.values_of(compact) == bench.values_of(duck)


@pytest.mark.parametrize("column, value", [("model", "b"), ("flag", "false"), ("n", 5),
                                           ("x", 2.5)])
def test_one_changed_value_is_found(bench, column: str, value: object) -> None:
    frame = pd.DataFrame({"model": pd.Categorical(["a", "b", "a"]),
                          "flag": pd.Categorical(["true", "false", "true"]),
                          "n": pd.array([1, 2, 3], dtype="Int64"), "x": [0.5, 1.5, 2.0]})
    changed = frame.copy()
    changed.loc[0, column] = value
    before, after = bench.values_of(frame), bench.values_of(changed)
    assert [c for c in before if before[c] != after[c]] == [column]
    assert bench.values_of(frame.iloc[:2]) != before  # a row fewer


def test_read_compact_equals_duckdbs_df_of_its_columns(bench, tmp_path: Path) -> None:
    """The pair the benchmark compares, on a small CSV with text, booleans, a free-text
    column (left out) and missing values."""
    import duckdb

    from analysis.engines.server_files import read_compact

    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({
        "model": rng.choice(["m1", "m2", "m3"], n),
        "ok": rng.choice(["true", "false"], n),
        "score": np.where(rng.random(n) < 0.1, np.nan, rng.integers(0, 5, n)),
        "answer": [f"free text {i}" for i in range(n)],
    })
    path = tmp_path / "results.csv"
    frame.to_csv(path, index=False)
    compact, meta = read_compact(str(path), with_meta=True, max_values=1000)
    assert list(meta.dropped_columns) == ["answer"]
    listed = ", ".join(f'"{c}"' for c in compact.columns)
    duck = duckdb.sql(f"SELECT {listed} FROM read_csv('{path}')").df()
    assert bench.values_of(compact) == bench.values_of(duck)
    duck.loc[7, "model"] = "m1" if duck.loc[7, "model"] != "m1" else "m2"
    assert bench.values_of(compact)["model"] != bench.values_of(duck)["model"]
