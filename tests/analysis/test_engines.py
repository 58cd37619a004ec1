"""pandas, DuckDB and Spark give the same cell table, the same statistics and the same errors.

The pandas path (load, apply the design, ``cell_table``) is the reference. DuckDB reads
the same rows from Parquet, CSV, a glob of Parquet parts, a relation; Spark from a Spark
DataFrame. Generated data covers every kind of factor column (text with missing values,
integers, booleans, integral floats with NaN), every outcome mapping, NaN outcomes,
values the design does not declare and ``where`` subsets.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from analysis.cells import cell_table
from analysis.cli import main
from analysis.columns import DEVIATIONS, N
from analysis.design import Design, Factor, Outcome, apply_design, make_factor
from analysis.engines import N_ALL, fine_cells, resolve_engine
from analysis.errors import AnalysisError, EngineError, LoadError
from tests.conftest import SAMPLE_DIR

FACTORS = ["model", "shots", "cot", "temperature", "group"]


def _generated(n: int = 3000, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    group = rng.choice(["a", "b", "c", "none"], n).astype(object)
    group[rng.random(n) < 0.05] = None  # missing factor value -> "(missing)"
    temperature = rng.choice([0.0, 0.7, 1.0], n)
    temperature[rng.random(n) < 0.05] = np.nan
    answer = rng.choice(["yes", "no", "maybe"], n).astype(object)
    answer[rng.random(n) < 0.1] = None  # NaN outcomes drop out of the cell table
    score = np.round(rng.normal(0.5, 0.3, n), 3)
    score[rng.random(n) < 0.05] = np.nan
    flag = rng.integers(0, 2, n).astype(float)
    flag[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "model": rng.choice(["m1", "m2", "m3"], n),
        "shots": rng.choice([0, 1, 5], n),
        "cot": rng.random(n) < 0.5,
        "temperature": temperature,
        "group": group,
        "answer": answer,
        "expected": rng.choice(["Yes ", "no", "MAYBE"], n),
        "score": score,
        "flag": flag,
    })


OUTCOMES = {
    "binary_float_nan": Outcome("flag", "binary"),
    "binary_bool": Outcome("cot", "binary"),
    "values": Outcome("answer", "values", values=("yes", "maybe")),
    "equals": Outcome("answer", "equals", other_column="expected"),
    "below": Outcome("score", "below", threshold=0.4),
    "above": Outcome("score", "above", threshold=0.6),
}


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return _generated()


@pytest.fixture(scope="module")
def files(rows, tmp_path_factory):
    folder = tmp_path_factory.mktemp("engines")
    rows.to_parquet(folder / "rows.parquet", index=False)
    rows.to_csv(folder / "rows.csv", index=False)
    parts = folder / "parts"
    parts.mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(rows)), 3)):
        rows.iloc[chunk].to_parquet(parts / f"part-{i}.parquet", index=False)
    return folder


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.fail("Spark needs Java: install a Java runtime (the CI recipe installs "
                    "default-jre-headless); the Spark tests must run, not be skipped")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("bias-workbench-tests")
               .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _design(rows: pd.DataFrame, outcome: Outcome | None) -> Design:
    return Design(factors=tuple(make_factor(rows, f) for f in FACTORS), outcome=outcome)


def _reference(rows, design, factors, where=None, with_outcome=True) -> pd.DataFrame:
    return cell_table(apply_design(rows, design), factors, where=where, with_outcome=with_outcome)


def _sources(rows, files, spark=None):
    import duckdb

    out = {"duckdb-parquet": (files / "rows.parquet", "duckdb"),
           "duckdb-csv": (files / "rows.csv", "duckdb"),
           "duckdb-glob": (str(files / "parts" / "*.parquet"), "duckdb"),
           "duckdb-folder": (files / "parts", "duckdb"),
           "duckdb-relation": (duckdb.connect().read_parquet(str(files / "rows.parquet")),
                               "auto")}
    if spark is not None:
        out["spark-frame"] = (spark.read.parquet(str(files / "rows.parquet")), "auto")
    return out


@pytest.mark.parametrize("outcome", list(OUTCOMES))
def test_duckdb_cell_tables_equal_pandas_for_every_outcome_mapping(rows, files, outcome):
    design = _design(rows, OUTCOMES[outcome])
    for factors in (FACTORS, ["group", "temperature"], ["cot"]):
        expected = _reference(rows, design, factors)
        assert expected[N].sum() < len(rows) or outcome == "binary_bool"  # NaN outcomes drop
        for label, (source, engine) in _sources(rows, files).items():
            got = cell_table(source, factors, design=design, engine=engine)
            pd.testing.assert_frame_equal(got, expected, obj=f"{label} {factors}")


def test_spark_cell_tables_equal_pandas(rows, files, spark):
    frame = spark.read.parquet(str(files / "rows.parquet"))
    for outcome in ("binary_float_nan", "values", "equals", "below"):  # one Spark job each
        design = _design(rows, OUTCOMES[outcome])
        pd.testing.assert_frame_equal(cell_table(frame, FACTORS, design=design),
                                      _reference(rows, design, FACTORS), obj=outcome)
    design = _design(rows, OUTCOMES["values"])
    # a pandas DataFrame sent to Spark, and Spark reading the CSV file itself
    pd.testing.assert_frame_equal(cell_table(rows, FACTORS, design=design, engine="spark"),
                                  _reference(rows, design, FACTORS))
    pd.testing.assert_frame_equal(
        cell_table(files / "rows.parquet", ["model", "group"], design=design, engine="spark"),
        _reference(rows, design, ["model", "group"]))


def test_where_subsets_and_coverage_counts_are_equal(rows, files, spark):
    design = _design(rows, OUTCOMES["equals"])
    sources = _sources(rows, files, spark)
    for where in ({"model": "m2"}, {"group": ["a", "(missing)"], "shots": "5"},
                  {"temperature": "0.7", "cot": "true"}):
        for with_outcome in (True, False):
            expected = _reference(rows, design, ["group", "shots"], where, with_outcome)
            for label, (source, engine) in sources.items():
                got = cell_table(source, ["group", "shots"], design=design, where=where,
                                 with_outcome=with_outcome, engine=engine)
                pd.testing.assert_frame_equal(got, expected, obj=f"{label} {where}")


def test_fine_cells_sum_to_any_subset(rows, files):
    design = _design(rows, OUTCOMES["values"])
    fine = fine_cells(files / "rows.parquet", design)
    assert fine[N_ALL].sum() == len(rows)
    assert fine[N].sum() == rows["answer"].notna().sum()
    for factors in (["model"], ["temperature", "group"]):
        pd.testing.assert_frame_equal(cell_table(fine, factors),
                                      _reference(rows, design, factors))
        pd.testing.assert_frame_equal(cell_table(fine, factors, with_outcome=False),
                                      _reference(rows, design, factors, with_outcome=False))


def test_without_a_design_factors_come_from_the_data(rows, files):
    frame = rows.assign(deviation=rows["flag"])
    path = files / "with_deviation.parquet"
    frame.to_parquet(path, index=False)
    expected = cell_table(apply_design(frame, Design(
        factors=tuple(make_factor(frame, f) for f in ["group", "temperature"]),
        outcome=Outcome("deviation"))), ["group", "temperature"])
    pd.testing.assert_frame_equal(cell_table(path, ["group", "temperature"], engine="duckdb"),
                                  expected)
    pd.testing.assert_frame_equal(cell_table(path, ["group", "temperature"], engine="pandas"),
                                  expected)


def _errors(call) -> str:
    with pytest.raises(AnalysisError) as info:
        call()
    return f"{type(info.value).__name__}: {info.value}"


def test_design_mismatches_give_the_pandas_messages(rows, files, spark):
    base = _design(rows, OUTCOMES["values"])
    narrow = Factor("model", "model", ("m1", "m2", "m9"), "m1")  # m3 undeclared, m9 unseen
    cases = {
        "undeclared value": Design(factors=(narrow, *base.factors[1:]), outcome=base.outcome),
        "absent reference": Design(factors=(Factor(
            "group", "domain", ("a", "b", "c", "none", "(missing)", "zz"), "zz"),),
            outcome=base.outcome),
        "absent column": Design(factors=(Factor("nope", "domain", ("x",), "x"),),
                                outcome=base.outcome),
        "binary outcome with text": base.with_outcome(Outcome("answer", "binary")),
        "threshold on text": base.with_outcome(Outcome("answer", "below", threshold=1)),
        "no deviating value": base.with_outcome(Outcome("answer", "values", values=("nah",))),
        "absent outcome": base.with_outcome(Outcome("missing_col", "binary")),
        "absent comparison": base.with_outcome(Outcome("answer", "equals", other_column="zz")),
    }
    frame = spark.read.parquet(str(files / "rows.parquet"))
    for label, design in cases.items():
        factors = design.names[:1]
        expected = _errors(lambda d=design, f=factors: cell_table(apply_design(rows, d), f))
        assert expected.startswith("DesignMismatchError"), label
        for source, engine in ((files / "rows.parquet", "duckdb"), (frame, "spark")):
            got = _errors(lambda s=source, e=engine, d=design, f=factors:
                          cell_table(s, f, design=d, engine=e))
            if label in ("binary outcome with text", "threshold on text"):
                # same message; the examples may come in another order
                assert got.split("(")[0] == expected.split("(")[0], (label, engine)
                assert sorted(got.split("(")[1]) == sorted(expected.split("(")[1])
            else:
                assert got == expected, (label, engine)


def test_filter_errors_match(rows, files):
    design = _design(rows, OUTCOMES["values"])
    applied = apply_design(rows, design)
    for where in ({"nope": "x"}, {"model": "m9"}, {"model": "m1", "shots": "1", "group": "zz"}):
        expected = _errors(lambda w=where: cell_table(applied, ["model"], where=w))
        got = _errors(lambda w=where: cell_table(files / "rows.parquet", ["model"],
                                                 design=design, where=w, engine="duckdb"))
        assert got.split("(")[0] == expected.split("(")[0]


def test_bad_sources_get_specific_messages(tmp_path, files):
    with pytest.raises(LoadError, match="no file matches"):
        cell_table(str(tmp_path / "nothing" / "*.parquet"), ["model"], engine="duckdb")
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pd.DataFrame({"model": ["a"], "x": [1]}).to_parquet(mixed / "a.parquet")
    pd.DataFrame({"model": ["a"], "y": [1]}).to_parquet(mixed / "b.parquet")
    with pytest.raises(LoadError, match="different columns: b.parquet has y and lacks x"):
        cell_table(mixed, ["model"], engine="duckdb")
    with pytest.raises(LoadError, match="different columns"):
        cell_table(mixed, ["model"], engine="pandas")
    with pytest.raises(EngineError, match="Unknown engine"):
        resolve_engine(files / "rows.parquet", "polars")
    assert resolve_engine(files / "rows.parquet") == "pandas"  # small file
    assert resolve_engine(files / "parts") == "duckdb"


def test_spark_that_cannot_start_says_so(monkeypatch):
    import sys

    from analysis.engines import spark_engine

    monkeypatch.setitem(sys.modules, "pyspark.sql", None)
    with pytest.raises(EngineError, match="needs pyspark"):
        spark_engine.session()


def test_spark_session_failure_is_an_engine_error(monkeypatch, spark):
    from pyspark.sql import SparkSession

    from analysis.engines import spark_engine

    class Broken:
        def appName(self, _):  # noqa: N802 - the builder's API
            return self

        def master(self, _):
            raise RuntimeError("Java gateway process exited before sending its port number")

    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setattr(SparkSession, "builder", Broken())
    with pytest.raises(EngineError, match="Spark could not start: Java gateway"):
        spark_engine.session()


# --- the CLI: the same JSON from every engine ---------------------------------------------
BBQ = SAMPLE_DIR / "bbq_unifiedqa.csv.gz"
BBQ_DESIGN = SAMPLE_DIR / "bbq_unifiedqa.design.yaml"
SSQA = SAMPLE_DIR / "ssqa_simulated.csv.gz"
SSQA_DESIGN = SAMPLE_DIR / "ssqa_simulated.design.yaml"

COMMANDS = {
    "cells": ["cells", BBQ, "--design", BBQ_DESIGN, "--where", "context_condition=ambig"],
    "coverage": ["coverage", SSQA, "--design", SSQA_DESIGN, "--where", "model=sim-model-B",
                 "--where", "cot=yes"],
    "subgroups": ["subgroups", BBQ, "--design", BBQ_DESIGN, "--factors",
                  "category,context_condition,question_polarity", "--level", "3"],
    "ecdf": ["ecdf", SSQA, "--design", SSQA_DESIGN, "--factors", "stigma,prompt_style",
             "--by", "model"],
    "importance": ["importance", SSQA, "--design", SSQA_DESIGN, "--factors",
                   "model,cot,prompt_style,pachankis_cluster,gender", "--where",
                   "prompt_style=original,positive,doubt"],
    "importance-outcome": ["importance", SSQA, "--factors", "model,cot", "--outcome", "answer",
                           "--deviation-values", "yes", "--reference", "cot=yes"],
    "importance-exclude": ["importance", SSQA, "--design", SSQA_DESIGN, "--factors",
                           "model,cot,prompt_style,gender", "--exclude", "prompt_style=base",
                           "--exclude", "gender=female", "--interaction", "model:cot"],
    "disparity": ["disparity", SSQA, "--feature", "sentiment", "--by", "model",
                  "--permutations", "50"],
    "cohorts": ["cohorts", SSQA, "--category", "answer", "--cohort", "model"],
    "index": ["index", SSQA, "--design", SSQA_DESIGN, "--dimensions", "gender,stigma",
              "--model", "model", "--sentiment", "sentiment"],
}


def _cli_json(capsys, argv) -> object:
    code = main([*map(str, argv), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


@pytest.fixture(scope="module")
def parquet_samples(tmp_path_factory):
    from analysis.io import load_results

    folder = tmp_path_factory.mktemp("samples")
    out = {}
    for path in (BBQ, SSQA):
        target = folder / (path.name.split(".")[0] + ".parquet")
        load_results(path).to_parquet(target, index=False)
        out[path] = target
    return out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_cli_json_is_identical_across_engines(capsys, name, spark, parquet_samples):
    argv = COMMANDS[name]
    parquet = [parquet_samples.get(a, a) for a in argv]
    expected = _cli_json(capsys, [*argv, "--engine", "pandas"])
    assert _cli_json(capsys, [*argv, "--engine", "duckdb"]) == expected
    # on the same Parquet file the three engines print the same bytes, ``file`` included
    # (Spark on Parquet: a gzipped CSV is one slow split)
    printed = {}
    for engine in ("pandas", "duckdb", "spark"):
        assert main([*map(str, parquet), "--engine", engine, "--json"]) == 0
        printed[engine] = capsys.readouterr().out
    assert printed["duckdb"] == printed["pandas"] and printed["spark"] == printed["pandas"]
    got = json.loads(printed["spark"])
    if name == "coverage":  # the input's name, as the engines all give it
        assert got.pop("file") == parquet[1].name and expected.pop("file") == SSQA.name
    assert got == expected


def test_cli_bad_engine_input_exits_2(capsys, tmp_path):
    assert main(["cells", str(tmp_path / "*.parquet"), "--factors", "a"]) == 2
    assert "no file matches" in capsys.readouterr().err
    assert main(["cells", str(BBQ), "--design", str(BBQ_DESIGN), "--engine", "duckdb",
                 "--where", "category=Nope"]) == 2
    assert "Filter category = Nope: no row has that value" in capsys.readouterr().err
    # a bad option value: argparse's usage and reason, and its exit code returned
    assert main(["cells", str(BBQ), "--factors", "category", "--engine", "polars"]) == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "--engine: invalid choice: 'polars'" in err


def test_deviations_column_survives_the_fine_table(rows, files):
    design = _design(rows, OUTCOMES["equals"])
    fine = fine_cells(files / "rows.csv", design, engine="duckdb")
    assert {N, DEVIATIONS, N_ALL} <= set(fine.columns)
    assert fine[DEVIATIONS].dtype == np.int64


@pytest.mark.parametrize("sample", [BBQ, SSQA])
def test_describe_suggests_the_same_design_and_nestings(capsys, sample):
    expected = _cli_json(capsys, ["describe", sample, "--engine", "pandas"])
    got = _cli_json(capsys, ["describe", sample, "--engine", "duckdb"])
    for key in ("file", "n_rows", "suggested_design", "nestings"):
        assert got[key] == expected[key], key
    for mine, theirs in zip(got["columns"], expected["columns"], strict=True):
        assert (mine["column"], mine["n_missing"], mine["suggested_role"]) == (
            theirs["column"], theirs["n_missing"], theirs["suggested_role"])
        if theirs["n_unique"] <= 100:  # exact up to the factor range; estimates above
            assert mine["n_unique"] == theirs["n_unique"]


def test_a_cell_table_is_summed_not_counted(rows):
    design = _design(rows, OUTCOMES["below"])
    applied = apply_design(rows, design)
    fine = cell_table(applied, ["model", "group", "shots"])
    pd.testing.assert_frame_equal(cell_table(fine, ["group"]), cell_table(applied, ["group"]))
    pd.testing.assert_frame_equal(cell_table(fine, ["shots", "model"], where={"group": "a"}),
                                  cell_table(applied, ["shots", "model"], where={"group": "a"}))


# --- the bad-input corpus (tests/data/bad/cases.yaml) through every engine -----------------
#: Loadable corpus files whose encoding DuckDB's CSV reader cannot decode: refused with a
#: message naming the pandas route (docs/engines.md "Text files"), never read wrongly
#: (DuckDB reads big-endian UTF-16 as an empty table without complaint).
DUCKDB_REFUSES = {"utf16be_bom": "UTF-16BE", "utf32le_bom": "UTF-32LE", "cp1252_chosen": "CP1252"}
#: Broken files whose message DuckDB words itself (still exit 2, naming the file).
DUCKDB_OWN_WORDS = {"truncated_gzip", "corrupt_gzip", "corrupt_parquet"}


def _corpus(loads: bool) -> list:
    """Upload cases that load (or fail) with pandas; generated cases only if small."""
    from tests.bad_corpus import CASES

    return [pytest.param(c, id=c.id) for c in CASES if c.kind == "upload"
            and bool(c.get("loads")) == loads and c.generated in (None, "many_values")]


def _run(capsys, argv) -> tuple[int, str, str]:
    """Exit code, stdout and the lines of stderr a user reads (notes, errors)."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse
        code = exc.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    said = [ln for ln in captured.err.splitlines() if ln.startswith(("note:", "error:", "- "))]
    return code, captured.out, "\n".join(said)


def _corpus_commands(case, path) -> list[list]:
    """The case's own CLI call, ``describe``, and subgroups / coverage over every column
    with few values (numbers included: decimal commas become factor values), plus a
    threshold outcome on every float column."""
    from analysis.io import load_results

    options = [a for k, v in case.get("options", {}).items() for a in (f"--{k}", v)]
    frame = load_results(path, **case.get("options", {}))
    outcome = "biased" if "biased" in frame.columns else None
    factors = [c for c in frame.columns
               if c != outcome and frame[c].nunique(dropna=False) <= 1000]
    commands = [["describe", path, "--json"]]
    if case.get("cli"):
        commands.append([a.replace("{file}", str(path)) for a in case.get("cli")])
    if factors and outcome:
        commands += [["subgroups", path, "--factors", ",".join(factors), "--outcome", outcome,
                      "--json"], ["coverage", path, "--factors", ",".join(factors), "--json"]]
    for c in frame.columns:
        if pd.api.types.is_float_dtype(frame[c]) and frame[c].notna().any():
            commands.append(["subgroups", path, "--factors",
                             ",".join(f for f in factors if f != c), "--outcome", c,
                             "--deviation-below", str(frame[c].median()), "--json"])
    return [[*cmd, *options] for cmd in commands]


def _same_describe(got: dict, expected: dict) -> None:
    from analysis.engines.describe import EXACT_UP_TO

    for key in ("n_rows", "suggested_design", "nestings"):
        assert got[key] == expected[key], key
    assert [c["column"] for c in got["columns"]] == [c["column"] for c in expected["columns"]]
    for mine, theirs in zip(got["columns"], expected["columns"], strict=True):
        assert (mine["n_missing"], mine["suggested_role"]) == (
            theirs["n_missing"], theirs["suggested_role"]), theirs["column"]
        if theirs["n_unique"] <= EXACT_UP_TO:  # above: HyperLogLog estimates
            assert mine["n_unique"] == theirs["n_unique"], theirs["column"]


def _assert_parity(capsys, cmd, engine) -> None:
    code, out, said = _run(capsys, [*cmd, "--engine", "pandas"])
    got_code, got_out, got_said = _run(capsys, [*cmd, "--engine", engine])
    assert (got_code, got_said) == (code, said), cmd  # same notes, or the same error
    if code != 0 or "--json" not in cmd:
        return
    expected, got = json.loads(out), json.loads(got_out)
    if cmd[0] == "describe":
        _same_describe(got, expected)
        return
    for payload in (expected, got):
        if isinstance(payload, dict):
            payload.pop("file", None)
    assert got == expected, cmd


@pytest.mark.parametrize("past_the_grid", [False, True], ids=["grid", "codes"])
@pytest.mark.parametrize("case", _corpus(loads=True))
def test_corpus_files_that_load_give_duckdb_the_same_json(case, capsys, tmp_path_factory,
                                                          monkeypatch, past_the_grid):
    """Every loadable upload of the corpus: DuckDB's JSON and notes equal pandas', or a
    refusal naming the pandas route for an encoding DuckDB cannot decode; ``codes``:
    the same with every aggregate past the dense grid (DuckDB groups the integer codes,
    ``analysis.engines.coded._grouped``)."""
    from analysis.engines import coded
    from tests.bad_corpus import case_path

    if past_the_grid:
        monkeypatch.setattr(coded, "DENSE_GRID", 1)
    path, _ = case_path(case, tmp_path_factory.getbasetemp())
    for cmd in _corpus_commands(case, path):
        if past_the_grid and cmd[0] == "describe":  # no aggregate of the factors
            continue
        if case.id in DUCKDB_REFUSES:
            code, _, said = _run(capsys, [*cmd, "--engine", "duckdb"])
            assert code == 2, cmd
            assert said.startswith(f"error: {case.name} is ") and "DuckDB cannot read" in said
            assert "--engine pandas" in said and DUCKDB_REFUSES[case.id] in said, said
            continue
        _assert_parity(capsys, cmd, "duckdb")


@pytest.mark.parametrize("case", _corpus(loads=False))
def test_corpus_files_that_fail_give_duckdb_the_same_error(case, capsys):
    """Every broken upload: exit 2 from DuckDB too, with the pandas loader's message
    (read from the file's first megabyte: analysis.engines.text_files)."""
    from tests.bad_corpus import BAD

    args = [a.replace("{file}", str(BAD / case.file)) for a in
            (case.get("cli") or ["describe", "{file}"])]
    args += [a for k, v in case.get("options", {}).items() for a in (f"--{k}", v)]
    code, _, said = _run(capsys, [*args, "--engine", "pandas"])
    got_code, _, got_said = _run(capsys, [*args, "--engine", "duckdb"])
    assert code == got_code == 2
    if case.id in DUCKDB_OWN_WORDS:
        assert got_said.startswith("error: ") and case.file in got_said
        assert "DuckDB cannot read it" in got_said
    else:
        assert got_said == said


#: Spark is slow to start: three corpus files in the session the other Spark tests use.
SPARK_CASES = ("decimal_commas", "semicolon_sniffed", "quoted_newlines")


@pytest.mark.parametrize("case_id", SPARK_CASES)
def test_corpus_files_give_spark_the_same_json(case_id, capsys, spark, tmp_path_factory):
    from tests.bad_corpus import CASES, case_path

    case = next(c for c in CASES if c.id == case_id)
    path, _ = case_path(case, tmp_path_factory.getbasetemp())
    for cmd in _corpus_commands(case, path):
        if cmd[0] != "describe":  # Spark's describe types differ (docs/engines.md)
            _assert_parity(capsys, cmd, "spark")


def test_decimal_commas_are_numbers_for_every_engine_and_dots_stay_numbers(tmp_path):
    """A semicolon file: ``0,5`` columns become numbers (listed), a column mixing ``0,5``
    with words stays text, and ``0.5`` stays a number (DuckDB's decimal_separator=','
    would make it text, which is why the engines convert after reading)."""
    from analysis.engines import open_table

    path = tmp_path / "eu.csv"
    path.write_text("model;score;mixed;dot;biased\nm1;0,5;1,5;0.25;1\nm2; -2,0 ;n/a x;1.5;0\n"
                    "m1;3;2;NA;1\n", encoding="utf-8")
    table = open_table(path, "duckdb")
    try:
        assert table.decimal_comma_columns == ["score"]
        assert (table.kinds["score"], table.kinds["mixed"], table.kinds["dot"]) == (
            "float", "string", "float")
        got = table.collect(["score", "dot"])
    finally:
        table.close()
    assert got["score"].tolist() == [0.5, -2.0, 3.0]
    assert table.meta().decimal_comma_columns == ("score",)
    expected = cell_table(apply_design(*_loaded_with_design(path)), ["score"])
    got_cells = fine_cells(path, _loaded_with_design(path)[1], engine="duckdb")
    pd.testing.assert_frame_equal(cell_table(got_cells, ["score"]), expected)


def _loaded_with_design(path) -> tuple[pd.DataFrame, Design]:
    from analysis.io import read_results

    frame, meta = read_results(path)
    assert meta.decimal_comma_columns == ("score",)
    return frame, Design(factors=(make_factor(frame, "score"),), outcome=Outcome("biased",
                                                                                 "binary"))


def test_an_empty_outcome_column_is_named_by_every_engine(tmp_path):
    path = tmp_path / "empty_outcome.parquet"
    pd.DataFrame({"model": ["m1", "m2", "m1"], "score": [np.nan] * 3}).to_parquet(path)
    design = Design(factors=(Factor("model", "model", ("m1", "m2"), "m1"),),
                    outcome=Outcome("score", "below", threshold=0.5))
    messages = []
    for engine in ("pandas", "duckdb"):
        with pytest.raises(AnalysisError) as info:
            from analysis.engines import cell_table as engine_cells

            engine_cells(path, ["model"], design=design, engine=engine)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "Outcome column 'score' is empty: all 3 values are missing" in messages[0]


def test_a_glob_of_text_files_must_share_encoding_and_delimiter(tmp_path):
    """Semicolon parts with decimal commas and a byte-order mark on one of them: the same
    cell table as pandas reading the parts one by one; a part with commas is refused."""
    from analysis.engines.pandas_engine import read_rows

    lines = [f"m{i % 2};{i % 3},5;{i % 2}\n" for i in range(300)]
    (tmp_path / "a.csv").write_bytes(("model;score;biased\n" + "".join(lines[:150])).encode())
    (tmp_path / "b.csv").write_bytes(b"\xef\xbb\xbf" + ("model;score;biased\n"
                                                       + "".join(lines[150:])).encode())
    glob = str(tmp_path / "*.csv")
    rows = read_rows(glob)
    design = Design(factors=(make_factor(rows, "model"), make_factor(rows, "score")),
                    outcome=Outcome("biased", "binary"))
    expected = cell_table(apply_design(rows, design), ["model", "score"])
    got = cell_table(fine_cells(glob, design, engine="duckdb"), ["model", "score"])
    pd.testing.assert_frame_equal(got, expected)
    assert list(design.factors[1].values) == ["0.5", "1.5", "2.5"]
    (tmp_path / "c.csv").write_text("model,score,biased\nm1,1,1\n", encoding="utf-8")
    with pytest.raises(LoadError, match="must share encoding and delimiter"):
        fine_cells(glob, None, factors=["model"], engine="duckdb")
