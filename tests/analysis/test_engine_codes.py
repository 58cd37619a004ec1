"""DuckDB's integer-coded aggregate (analysis/engines/coded.py) equals the string GROUP BY.

Four paths build the same aggregate: the engine regrouping by factor-value strings
(``sql.aggregate_query``, still Spark's), the raw groups dictionary-coded by Arrow
(``coded_frame``: past ``MAX_CODE`` combinations), the rows streamed as one integer each
and counted into the dense grid (``streamed_frame``), and past the dense grid the same
integers grouped by DuckDB (``streamed_frame(dense_grid=...)``, ``coded._grouped``). The
data holds every case where raw values print alike (NULL and NaN, 0.0 and -0.0, ``True``
and ``true``, NULL and a literal ``"(missing)"``), so the merging by codes is exercised;
the refusals keep their messages.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.design import Outcome
from analysis.engines import base, coded, sql
from analysis.engines.duckdb_engine import DuckDBTable
from analysis.errors import AnalysisError

KEYS = ["text", "number", "real", "flag", "yesno"]


def _rows(n: int = 4000, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    text = rng.choice(["a", "b", "(missing)", "c"], n).astype(object)
    text[rng.random(n) < 0.1] = None  # NULL and the literal "(missing)": one value
    real = rng.choice([0.0, -0.0, 7.0, 2.5], n)
    real[rng.random(n) < 0.1] = np.nan  # NaN (and NULL below) print as "(missing)"
    yesno = rng.choice(["True", "true", "FALSE", "false", "maybe"], n).astype(object)
    return pd.DataFrame({
        "text": text,
        "number": rng.integers(-2, 3, n),
        "real": real,
        "flag": rng.random(n) < 0.3,
        "yesno": yesno,
        "outcome": np.where(rng.random(n) < 0.1, np.nan, (rng.random(n) < 0.4) * 1.0),
        "answer": rng.choice(["x", "y", "z"], n),
    })


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> DuckDBTable:
    rows = _rows()
    path = tmp_path_factory.mktemp("codes") / "rows.csv"
    rows.to_csv(path, index=False)
    t = DuckDBTable(path)  # the CSV's empty cells are NULL: NaN too, for some rows
    t.relation = t.connection.sql(
        f"SELECT * REPLACE (CASE WHEN number = 2 AND real IS NULL THEN 'nan'::DOUBLE "
        f"ELSE real END AS real) FROM read_csv('{path}', header=true, "
        "types={'yesno': 'VARCHAR'})")
    t.kinds["yesno"] = "csvbool"
    return t


def _by_strings(table: DuckDBTable, keys, outcome) -> pd.DataFrame:
    text = sql.aggregate_query(table.dialect, "{table}", keys, table.kinds, outcome)
    return table.query(text)


def _canonical(frame: pd.DataFrame, keys) -> pd.DataFrame:
    out = frame.copy()
    for k in keys:
        out[k] = out[k].astype(str)
    for c in coded.SUMS:
        out[c] = out[c].astype(float)
    return out.sort_values(list(keys)).reset_index(drop=True)[[*keys, *coded.SUMS]]


OUTCOMES = [None, Outcome("outcome", "binary"), Outcome("answer", "values", values=("x",)),
            Outcome("real", "below", threshold=3.0)]


@pytest.mark.parametrize("outcome", OUTCOMES, ids=["none", "binary", "values", "below"])
def test_streamed_and_coded_equal_the_string_group_by(table, outcome):
    expected = _canonical(_by_strings(table, KEYS, outcome), KEYS)
    assert {"(missing)", "0", "7", "2.5"} <= set(expected["real"])  # the cases are there
    assert set(expected["yesno"]) == {"true", "false", "maybe"}
    streamed = coded.streamed_frame(table.connection, table.relation, "results_",
                                    table.dialect, KEYS, table.kinds, outcome)
    assert streamed is not None
    text = sql.aggregate_query(table.dialect, "results_", KEYS, table.kinds, outcome,
                               regroup=False)
    raw = table.relation.query("results_", text).arrow().read_all()
    assert raw.num_rows > len(expected)  # raw groups that print alike were merged
    by_codes = coded.coded_frame(raw, KEYS)
    grouped = coded.streamed_frame(table.connection, table.relation, "results_",
                                   table.dialect, KEYS, table.kinds, outcome, dense_grid=4)
    for got in (streamed, by_codes, grouped):
        assert all(isinstance(got[k].dtype, pd.CategoricalDtype) for k in KEYS)
        assert all(list(got[k].cat.categories) == sorted(got[k].cat.categories)
                   for k in KEYS)
        pd.testing.assert_frame_equal(_canonical(got, KEYS), expected)


#: Past the dense grid: DuckDB groups the integer codes ("codes"), or, past MAX_CODE
#: too, the raw values with Arrow-coded strings ("text").
PAST_THE_GRID = {"codes": {"DENSE_GRID": 4}, "text": {"DENSE_GRID": 4, "MAX_CODE": 4}}


@pytest.mark.parametrize("past", list(PAST_THE_GRID))
def test_aggregate_takes_the_grid_or_the_group_by_with_the_same_cells(table, monkeypatch,
                                                                      past):
    outcome = Outcome("outcome", "binary")
    dense = table.aggregate(KEYS, outcome)
    for name, value in PAST_THE_GRID[past].items():
        monkeypatch.setattr(coded, name, value)
    grouped = table.aggregate(KEYS, outcome)
    pd.testing.assert_frame_equal(_canonical(dense, KEYS), _canonical(grouped, KEYS))
    expected = _canonical(_by_strings(table, KEYS, outcome), KEYS)
    pd.testing.assert_frame_equal(_canonical(dense, KEYS), expected)


@pytest.mark.parametrize("past", list(PAST_THE_GRID))
def test_too_many_groups_refused_on_every_path(table, monkeypatch, past):
    monkeypatch.setattr(base, "MAX_GROUPS", 5)
    with pytest.raises(AnalysisError, match="more than 5 combinations of text, number"):
        table.aggregate(["text", "number"], None)
    for name, value in PAST_THE_GRID[past].items():
        monkeypatch.setattr(coded, name, value)
    with pytest.raises(AnalysisError, match="more than 5 combinations of text, number"):
        table.aggregate(["text", "number"], None)


def test_many_raw_values_fall_back_to_the_group_by(table, monkeypatch):
    monkeypatch.setattr(coded, "MAX_ENUM", 3)
    assert coded.streamed_frame(table.connection, table.relation, "results_",
                                table.dialect, KEYS, table.kinds, None) is None
    got = table.aggregate(KEYS, None)
    pd.testing.assert_frame_equal(_canonical(got, KEYS),
                                  _canonical(_by_strings(table, KEYS, None), KEYS))


# --- dictionary-encoded Parquet: keys coded by list_position (issue 44.5) ----------------
def _write_parquet(frame: pd.DataFrame, path, **options) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, **options)


def test_dictionary_columns_read_from_the_parquet_metadata(tmp_path):
    import duckdb

    n = 3000
    frame = pd.DataFrame({"low": [f"v{i % 7}" for i in range(n)],
                          "many": [f"id{i:06d}" for i in range(n)],
                          "plain": [f"p{i % 5}" for i in range(n)]})
    # a tiny dictionary page: "many" falls back to PLAIN pages; "plain" never uses one
    _write_parquet(frame, tmp_path / "a.parquet", dictionary_pagesize_limit=2000,
                   use_dictionary=["low", "many"], data_page_size=4096)
    con = duckdb.connect()
    columns = ["low", "many", "plain"]
    assert coded.dictionary_columns(con, [str(tmp_path / "a.parquet")], columns) == {"low"}
    # one file storing "low" plain: not dictionary-only in every file
    _write_parquet(frame, tmp_path / "b.parquet", use_dictionary=False)
    files = [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]
    assert coded.dictionary_columns(con, files, columns) == set()
    assert coded.dictionary_columns(con, files[:1], ["absent"]) == set()


@pytest.fixture(scope="module")
def parquet_table(tmp_path_factory) -> DuckDBTable:
    rows = _rows(seed=5)
    rows["cluster"] = [f"c{i % 37:02d}" for i in range(len(rows))]
    path = tmp_path_factory.mktemp("codes_pq") / "rows.parquet"
    _write_parquet(rows, path)
    return DuckDBTable(path)


@pytest.mark.parametrize("outcome", OUTCOMES, ids=["none", "binary", "values", "below"])
def test_list_position_codes_equal_the_enum_codes(parquet_table, outcome):
    t, keys = parquet_table, [*KEYS, "cluster"]
    listed = t._dictionary_columns(keys)
    assert {"text", "cluster"} <= listed  # the text keys are dictionary-encoded
    expected = _canonical(_by_strings(t, keys, outcome), keys)
    assert "(missing)" in set(expected["text"])  # NULL and the literal, merged
    by_list = coded.streamed_frame(t.connection, t.relation, "results_", t.dialect, keys,
                                   t.kinds, outcome, dictionary=listed)
    by_enum = coded.streamed_frame(t.connection, t.relation, "results_", t.dialect, keys,
                                   t.kinds, outcome)
    for got in (by_list, by_enum):
        pd.testing.assert_frame_equal(_canonical(got, keys), expected)
    pd.testing.assert_frame_equal(_canonical(t.aggregate(keys, outcome), keys), expected)


@pytest.mark.parametrize("outcome", OUTCOMES[:2], ids=["none", "binary"])
def test_small_batches_gathered_into_buffers_count_the_same(parquet_table, monkeypatch,
                                                            outcome):
    """Batches are gathered into buffers of twice the grid before each bincount; with
    tiny buffers every path (flush, a batch larger than the buffer) counts the same."""
    t, keys = parquet_table, ["text", "number"]
    expected = _canonical(_by_strings(t, keys, outcome), keys)
    for rows in (7, 64):
        monkeypatch.setattr(coded, "BATCH_ROWS", rows)
        got = coded.streamed_frame(t.connection, t.relation, "results_", t.dialect, keys,
                                   t.kinds, outcome, dictionary=t._dictionary_columns(keys))
        pd.testing.assert_frame_equal(_canonical(got, keys), expected)


# the design's declared values as a text key's list: no query per key (issue 44.5)
DECLARED_CASES = {
    "complete": {"text": ["a", "b", "c", "(missing)"], "cluster": [f"c{i:02d}" for i in range(37)]},
    "unused values too": {"text": ["z", "c", "b", "a", "(missing)"]},
    "a value undeclared": {"text": ["a", "b", "(missing)"]},
    "NULL undeclared": {"text": ["a", "b", "c"]},
    "a cluster undeclared": {"cluster": [f"c{i:02d}" for i in range(36)]},
}


@pytest.mark.parametrize("case", list(DECLARED_CASES))
@pytest.mark.parametrize("outcome", OUTCOMES[:2], ids=["none", "binary"])
def test_declared_values_count_the_same_cells_as_the_queried_ones(parquet_table, monkeypatch,
                                                                  case, outcome):
    """Declared lists equal the data's values (or hold more): one stream; a value or a
    NULL outside them: the stream stops and the distinct values are queried. Either way
    the cells equal the string GROUP BY's, on the list_position and the ENUM codes."""
    t, keys = parquet_table, [*KEYS, "cluster"]
    declared = DECLARED_CASES[case]
    expected = _canonical(_by_strings(t, keys, outcome), keys)
    streams = []
    original = coded._streamed

    def counted(*args):
        streams.append(dict(args[-1]))
        return original(*args)

    monkeypatch.setattr(coded, "_streamed", counted)
    for listed, grid in [(t._dictionary_columns(keys), None), ((), None),
                         (t._dictionary_columns(keys), 4), ((), 4)]:  # 4: grouped codes
        streams.clear()
        got = coded.streamed_frame(t.connection, t.relation, "results_", t.dialect, keys,
                                   t.kinds, outcome, dictionary=listed, declared=declared,
                                   dense_grid=grid)
        pd.testing.assert_frame_equal(_canonical(got, keys), expected)
        fits = case in ("complete", "unused values too")
        assert streams == ([declared] if fits else [declared, {}])
    # through Table.aggregate: the same frame as without the hint
    pd.testing.assert_frame_equal(_canonical(t.aggregate(keys, outcome, declared=declared),
                                             keys), expected)


@pytest.mark.parametrize("grid", ["dense", "codes"])
def test_an_undeclared_value_keeps_the_design_check_message(tmp_path, monkeypatch, grid):
    """A Parquet value the design does not declare: the fallback counts it, and the
    design check names it with the words and type it has without the declared lists
    (in the dense grid, and past it: DuckDB grouping the codes)."""
    from analysis.design import Design, Factor
    from analysis.engines import fine_cells

    if grid == "codes":
        monkeypatch.setattr(coded, "DENSE_GRID", 1)
    rows = pd.DataFrame({"m": ["a", "b", "q"] * 20, "deviation": [0, 1, 1] * 20})
    path = tmp_path / "rows.parquet"
    _write_parquet(rows, path)
    design = Design((Factor("m", "domain", ("a", "b"), "a"),), Outcome("deviation"))
    with pytest.raises(AnalysisError) as hinted:
        fine_cells(str(path), design, engine="duckdb")
    original = coded._streamed
    monkeypatch.setattr(coded, "_streamed", lambda *args: original(*args[:-1], {}))
    with pytest.raises(AnalysisError) as queried:
        fine_cells(str(path), design, engine="duckdb")
    assert "q" in str(hinted.value)
    assert (type(hinted.value), str(hinted.value)) == (type(queried.value),
                                                        str(queried.value))


def test_grouped_codes_sum_the_flags_and_refuse_what_the_grid_refuses():
    """``coded._grouped`` (past the dense grid): the sums per code from the (code, flags)
    pairs, by hand; a NULL code (a value missing from its list) is an undeclared value
    or "the data changed"; more codes than ``max_groups`` raise ``TooManyGroups``."""
    import duckdb

    con = duckdb.connect()
    # code, flags: dev 0/1 (2 = unknown) in bits 0-1, bad in bit 2, hit in bit 3
    rows = [(5, 1), (5, 1), (5, 0), (5, 2), (9, 0), (9, 4 + 1), (2, 8 + 0), (2, 2 + 4)]
    relation = con.sql("SELECT * FROM (VALUES " + ", ".join(f"({k}, {f})" for k, f in rows)
                       + ") t(c, g)")
    keys, sums = coded._grouped(relation, "v", "CAST(c AS BIGINT)", "CAST(g AS UTINYINT)",
                                10, False)
    assert keys.tolist() == [2, 5, 9]
    assert {c: v.tolist() for c, v in sums.items()} == {
        sql.N_ALL: [2, 4, 2], sql.N_KNOWN: [1, 3, 2], sql.DEV_SUM: [0, 2, 1],
        sql.N_BAD: [1, 0, 1], sql.N_HIT: [1, 0, 0]}
    with pytest.raises(coded.TooManyGroups):
        coded._grouped(relation, "v", "CAST(c AS BIGINT)", "CAST(g AS UTINYINT)", 2, False)
    missing = "CAST(CASE WHEN c = 9 THEN NULL ELSE c END AS BIGINT)"
    with pytest.raises(AnalysisError, match="The data changed while it was read"):
        coded._grouped(relation, "v", missing, "CAST(g AS UTINYINT)", 10, False)
    with pytest.raises(coded._Undeclared):
        coded._grouped(relation, "v", missing, "CAST(g AS UTINYINT)", 10, True)
