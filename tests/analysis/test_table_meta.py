"""Metadata travels as values (issue 37 item 4): the loaders' :class:`TableMeta` and
coverage's :class:`CountedCells` survive the copies, filters, concatenations and pickles
that drop or merge ``DataFrame.attrs`` on the way from the load to the command or page."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from analysis import api as bw
from analysis import coverage as cov
from analysis.cli import main, row_counts
from analysis.columns import N_ROWS, N
from analysis.design import Design, Outcome, apply_design, make_factor
from analysis.engines import fine_cells_from_table, open_table
from analysis.engines.base import fine_cell_meta
from analysis.io import load_results, read_results
from analysis.table_meta import LoadedTable, TableMeta

EU = "model;score;group\n" + "".join(f"m{i % 2};{i % 3},5;g{i % 3}\n" for i in range(12))


def test_read_results_says_what_it_decided_and_load_results_is_its_frame(tmp_path):
    path = tmp_path / "eu.csv"
    path.write_text(EU, encoding="utf-8")
    loaded = read_results(path)
    assert isinstance(loaded, LoadedTable)
    frame, meta = loaded
    assert meta == TableMeta("eu.csv", decimal_comma_columns=("score",))
    assert frame["score"].tolist()[:3] == [0.5, 1.5, 2.5] and not frame.attrs
    pd.testing.assert_frame_equal(load_results(path), frame)


def test_the_metadata_survives_what_drops_attrs(tmp_path):
    """pandas drops attrs on a concat of frames whose attrs differ, and a filter or a copy
    keeps or drops them by rules of its own; the meta is a separate value."""
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text(EU, encoding="utf-8")
    b.write_text(EU.replace(",5", ".5").replace(";", ","), encoding="utf-8")  # dots
    (fa, ma), (fb, mb) = read_results(a), read_results(b)
    both = pd.concat([fa[fa["model"] == "m0"].copy(), fb], ignore_index=True)
    assert len(both) == 6 + 12
    meta = TableMeta.of_sources("a.csv + b.csv", [ma, mb])
    assert meta.decimal_comma_columns == ("score",) and meta.source_name == "a.csv + b.csv"
    assert pickle.loads(pickle.dumps(meta)) == meta  # Streamlit's caches pickle it
    with pytest.raises(AttributeError):
        meta.source_name = "x"  # frozen


def test_the_cli_reads_the_decimal_comma_note_and_file_name_from_the_meta(tmp_path, capsys):
    path = tmp_path / "eu.csv"
    path.write_text(EU, encoding="utf-8")
    assert main(["coverage", str(path), "--factors", "model,group", "--count", "responses",
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["file"] == "eu.csv"
    assert "score" in captured.err and "decimal comma" in captured.err


def test_an_engine_cell_table_counts_its_rows_after_a_filter(tmp_path):
    """row_counts of a fine cell table sums n_all: the meta says it is one, also after
    bw.subset_rows (the subgroups command's --exclude), a copy or a concat."""
    rng = np.random.default_rng(3)
    rows = pd.DataFrame({"model": rng.choice(["a", "b"], 500), "style": rng.choice(
        ["x", "y", "z"], 500), "deviation": rng.integers(0, 2, 500)})
    path = tmp_path / "rows.parquet"
    rows.to_parquet(path, index=False)
    design = Design(factors=(make_factor(rows, "model"), make_factor(rows, "style")),
                    outcome=Outcome("deviation", "binary"))
    table = open_table(path, "duckdb")
    try:
        cells, _ = fine_cells_from_table(table, design)
        meta = fine_cell_meta(table, cells)
    finally:
        table.close()
    assert (meta.engine, meta.n_rows, meta.source_name) == ("duckdb", 500, "rows.parquet")
    assert row_counts(cells, meta=meta)["n_rows"] == 500
    kept = bw.subset_rows(cells, exclude={"style": ["z"]})
    assert row_counts(kept, meta=meta) == {
        "n_rows": int((rows["style"] != "z").sum()),
        "n_missing_outcome": 0}
    twice = pd.concat([cells, cells], ignore_index=True)
    assert row_counts(twice, meta=meta)["n_rows"] == 1000
    assert row_counts(cells)["n_rows"] == len(cells)  # no meta: its rows are rows


def test_coverage_cells_keep_their_unit_and_rows_through_a_cache():
    """The Coverage page caches the counted cells and gives them back as ``cells=``: the
    unit (items) and the rows (not the items) survive a pickle and a copy of the frame."""
    rows = pd.DataFrame({"item": np.repeat(np.arange(6), 3), "g": np.repeat(
        ["a", "b", "a", "b", "a", "a"], 3), "model": ["m1", "m2", "m3"] * 6,
        "deviation": [0, 1, 1] * 6})
    design = Design(factors=(make_factor(rows, "g"),), outcome=Outcome("deviation", "binary"),
                    prompt_unit=("item",))
    applied = apply_design(rows, design)
    direct = bw.coverage(applied, design, applied=True)
    counted = bw.coverage_cells(applied, design, factors=["g"], applied=True)
    assert isinstance(counted, cov.CountedCells) and counted.n_rows == 18
    assert isinstance(direct.raw, cov.CountedCells)  # its raw goes back as cells= too
    pd.testing.assert_frame_equal(bw.coverage(applied, design, applied=True,
                                              cells=direct.raw).table, direct.table)
    assert counted.frame[N].tolist() == [4, 2]  # items, not rows
    back = pickle.loads(pickle.dumps(counted))
    back = cov.CountedCells(back.frame[back.frame[N] >= 0].copy(), back.unit, back.n_rows)
    cached = bw.coverage(applied, design, applied=True, cells=back)
    pd.testing.assert_frame_equal(cached.table, direct.table)
    assert cached.notes == direct.notes and cached.meta["counted"] == direct.meta["counted"]
    assert int(cached.table[N_ROWS].iloc[0]) == 18
    pd.testing.assert_frame_equal(bw.coverage_cells(applied, design, factors=["g"],
                                                    applied=True, with_unit=False),
                                  counted.frame)
    plain = bw.coverage(applied, design, applied=True, cells=counted.frame)
    assert int(plain.table[N_ROWS].iloc[0]) == 6 and plain.meta["count_unit"] is None


def test_compact_reads_flag_the_large_file_source(tmp_path):
    from analysis.engines.server_files import read_compact

    path = tmp_path / "r.parquet"
    pd.DataFrame({"model": ["a", "b"] * 3, "note": [f"t{i}" for i in range(6)]}).to_parquet(
        path, index=False)
    frame, meta = read_compact(str(path), max_values=3, with_meta=True, name="r.parquet")
    assert meta.compact and meta.dropped_columns == ("note",) and list(frame) == ["model"]
    pd.testing.assert_frame_equal(read_compact(str(path), max_values=3), frame)


def test_judge_noise_is_refused_on_an_engine_cell_table_and_runs_on_rows(tmp_path, capsys):
    """The CLI knows an engine's cell table from the load's meta (``needs_rows``); the
    report's judge-noise sections know it from its columns (``n_all``, no ``deviation``)."""
    from analysis.judge_noise import JudgeNoiseError
    from analysis.report import _noise_rows

    rng = np.random.default_rng(5)
    rows = pd.DataFrame({"model": rng.choice(["a", "b"], 400), "style": rng.choice(
        ["x", "y"], 400), "deviation": rng.integers(0, 2, 400)})
    path = tmp_path / "rows.parquet"
    rows.to_parquet(path, index=False)
    argv = ["subgroups", str(path), "--factors", "model,style", "--outcome", "deviation",
            "--judge-noise", "5", "--json"]
    assert main([*argv, "--engine", "duckdb"]) == 2
    assert "needs the rows: add --engine pandas" in capsys.readouterr().err
    assert main([*argv, "--engine", "pandas"]) == 2  # rows: past this check, to the next
    assert "needs the score threshold" in capsys.readouterr().err  # (no judge columns here)
    table = open_table(path, "duckdb")
    try:
        cells, _ = fine_cells_from_table(table, None, factors=["model", "style"])
    finally:
        table.close()
    with pytest.raises(JudgeNoiseError, match="load the table with the pandas engine"):
        _noise_rows(cells)
    _noise_rows(rows)  # rows: nothing to refuse
