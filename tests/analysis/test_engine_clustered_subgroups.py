"""`subgroups` with the design's cluster: DuckDB (dictionary-coded keys streamed into the
dense grid, issue 44.5) gives the JSON of the in-memory pandas path, number for number.

A few thousand generated rows written as Parquet (dictionary-encoded text columns, so the
keys are coded by ``list_position``; one key with missing values, an outcome with missing
values), 3 factors and 40 clusters; and the same rows as CSV (ENUM codes).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.cli import main
from analysis.design import Design, Factor, Outcome


def _rows(n: int = 4000, seed: int = 11) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    template = rng.integers(0, 40, n)
    model = rng.choice(["m0", "m1", "m2"], n)
    style = rng.choice(["plain", "polite", "rude", "terse"], n).astype(object)
    style[rng.random(n) < 0.05] = None  # "(missing)", a declared value
    rate = 0.2 + 0.1 * (model == "m2") + 0.01 * (template % 7)
    deviation = (rng.random(n) < rate).astype(float)
    deviation[rng.random(n) < 0.05] = np.nan  # rows without an outcome
    return pd.DataFrame({"model": model, "style": style,
                         "cot": rng.choice(["no", "yes"], n),
                         "template": [f"t{t:02d}" for t in template],
                         "deviation": deviation})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clustered")
    rows = _rows()
    rows.to_parquet(folder / "rows.parquet", index=False)
    rows.to_csv(folder / "rows.csv", index=False)
    design = Design(
        factors=(Factor("model", "model", ("m0", "m1", "m2"), "m0"),
                 Factor("style", "domain", ("plain", "polite", "rude", "terse", "(missing)"),
                        "plain"),
                 Factor("cot", "domain", ("no", "yes"), "no")),
        outcome=Outcome("deviation", "binary"), cluster="template")
    design.save(folder / "design.yaml")
    return folder


def _json(capsys, *argv) -> dict:
    code = main([*map(str, argv), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


@pytest.mark.parametrize("source", ["rows.parquet", "rows.csv"])
def test_clustered_subgroups_through_duckdb_equal_pandas(files, capsys, source):
    from analysis.engines.duckdb_engine import DuckDBTable

    keys = ["model", "style", "cot", "template"]
    listed = DuckDBTable(files / source)._dictionary_columns(keys)
    assert listed == (set(keys) if source.endswith(".parquet") else set())
    argv = ["subgroups", files / source, "--design", files / "design.yaml"]
    duck = _json(capsys, *argv, "--engine", "duckdb")
    ref = _json(capsys, *argv, "--engine", "pandas")
    table = pd.DataFrame(duck["subgroups"])
    expected = pd.DataFrame(ref["subgroups"])
    assert len(table) > 20 and table["n_clusters"].max() == 40  # clustered, every level
    assert (table["test"] == "cluster t").all()
    pd.testing.assert_frame_equal(table, expected, check_exact=False, rtol=1e-12, atol=0)
    assert duck["settings"]["n_rows"] == ref["settings"]["n_rows"] == 4000
