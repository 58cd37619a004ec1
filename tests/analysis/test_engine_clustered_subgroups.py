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


@pytest.mark.parametrize("command", ["subgroups", "importance"])
def test_past_the_dense_grid_the_json_is_the_pandas_json(files, capsys, monkeypatch, command):
    """Factors x clusters past the dense grid (1,000 templates x 27,648 combinations in
    the benchmark; here the grid lowered to 64 entries): DuckDB groups the integer codes
    (``coded._grouped``) and the command's JSON is the pandas engine's, byte for byte
    (the ``file`` field included: one file, named by its file name)."""
    from analysis.engines import coded

    grouped = []
    original = coded._grouped
    monkeypatch.setattr(coded, "_grouped", lambda *a: grouped.append(a) or original(*a))
    argv = [command, files / "rows.parquet", "--design", files / "design.yaml", "--json"]
    assert main([*map(str, argv), "--engine", "pandas"]) == 0
    ref = capsys.readouterr().out
    assert main([*map(str, argv), "--engine", "duckdb"]) == 0
    dense = capsys.readouterr().out
    assert not grouped  # 3 x 5 x 2 x 40 = 1,200 entries: the dense grid
    monkeypatch.setattr(coded, "DENSE_GRID", 64)
    assert main([*map(str, argv), "--engine", "duckdb"]) == 0
    past = capsys.readouterr().out
    assert len(grouped) == 1
    assert past == ref == dense
    payload = json.loads(past)
    if command == "subgroups":  # (importance counts the rows with an outcome)
        assert payload["settings"]["n_rows"] == 4000
        assert pd.DataFrame(payload["subgroups"])["n_clusters"].max() == 40
    else:
        assert len(payload["terms"]) > 5
