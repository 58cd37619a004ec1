"""AppTest of the Data page's "Large file on this machine" source (DuckDB, no upload)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.engines.server_files import DATA_DIR_ENV
from tests.app.apptools import metric_values, page_test


@pytest.fixture
def folder(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    rows = pd.DataFrame({"model": rng.choice(["m1", "m2"], 1500),
                         "style": rng.choice(["plain", "doubt", "none"], 1500),
                         "biased": rng.integers(0, 2, 1500),
                         "completion": [f"free text answer {i}" for i in range(1500)]})
    runs = tmp_path / "data" / "runs"
    runs.mkdir(parents=True)
    for i in range(3):
        rows.iloc[i * 500:(i + 1) * 500].to_parquet(runs / f"part-{i}.parquet", index=False)
    (tmp_path / "secret.parquet").write_bytes(b"PAR1")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    return tmp_path


def _open_large_source():
    at = page_test("data.py").run()
    at.radio(key="data_source").set_value("Large file on this machine").run()
    assert not at.exception, at.exception
    return at


def test_a_glob_under_the_folder_opens_without_upload(folder):
    at = _open_large_source()
    at.text_input(key="data_server_path").input("runs/*.parquet").run()
    assert not at.exception, at.exception
    assert len(at.error) == 0
    frame = at.session_state["results_frame"]
    assert at.session_state["results_name"] == "runs/*.parquet"
    assert len(frame) == 1500 and "completion" not in frame.columns  # free text left out
    assert isinstance(frame["model"].dtype, pd.CategoricalDtype)
    assert metric_values(at)["Rows"] == "1,500"
    assert any("Left out (free text): completion" in c.value for c in at.caption)
    design = at.session_state["design"]
    assert {"model", "style"} <= set(design.names) and design.outcome.column == "biased"


@pytest.mark.parametrize("path", ["../secret.parquet", "{root}/secret.parquet", "runs/*.csv"])
def test_refusals_keep_the_previous_table(folder, path):
    at = _open_large_source()
    before = at.session_state["results_name"]
    at.text_input(key="data_server_path").input(path.format(root=folder)).run()
    assert not at.exception, at.exception
    message = at.error[0].value
    assert ("outside the data folder" in message) if "secret" in path else (
        "no file matches" in message)
    assert at.session_state["results_name"] == before


def test_without_a_folder_the_source_says_how_to_enable_it(monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    at = _open_large_source()
    assert at.text_input(key="data_server_path").disabled
    assert any(DATA_DIR_ENV in c.value for c in at.caption)


# --- read_compact itself: one pass, the same table as pandas reads ---------------------------
def _kinds_of_columns(n: int = 3000) -> pd.DataFrame:
    """Every kind of column the compact table treats differently."""
    rng = np.random.default_rng(1)
    shots = pd.array(rng.integers(0, 5, n), dtype="Int64")
    shots[::7] = pd.NA
    temp = rng.normal(size=n)
    temp[::5] = np.nan
    cot = pd.array(rng.random(n) < 0.5, dtype="boolean")
    cot[::9] = pd.NA
    model = rng.choice(["m2", "m1", "m10"], n).astype(object)
    model[::11] = None
    return pd.DataFrame({
        "model": model, "shots": shots, "temp": temp, "cot": cot,
        "biased": rng.integers(0, 2, n),
        "answer": [f"free text {i}" for i in range(n)],  # many values from the start
        # 3 values in the first 1,000 rows, 1,003 over all: left out on the way
        "late": ["a", "b", "c"] * 333 + ["a"] + [f"id{i}" for i in range(n - 1000)],
        "tag": rng.choice(["x", "y"], n)})


@pytest.mark.parametrize("sample_rows, batch_rows", [(100_000, 1_000_000), (500, 2048), (500, 256)])
def test_read_compact_equals_the_pandas_table(tmp_path, monkeypatch, sample_rows, batch_rows):
    """Against pandas' own reading of the Parquet parts: text columns with at most
    ``max_values`` values as categoricals (sorted categories, missing kept), the others
    left out in file order; numbers and booleans with their dtypes and missing values.
    Small samples and batches exercise the other ways out: a batch with too many values
    (2,048 rows), or batches that are fine alone but not together (256 rows)."""
    from analysis.engines import server_files

    monkeypatch.setattr(server_files, "SAMPLE_ROWS", sample_rows)
    monkeypatch.setattr(server_files, "BATCH_ROWS", batch_rows)
    rows = _kinds_of_columns()
    for i in range(3):
        rows.iloc[i * 1000:(i + 1) * 1000].to_parquet(tmp_path / f"part-{i}.parquet",
                                                       index=False)
    expected = pd.concat([pd.read_parquet(tmp_path / f"part-{i}.parquet") for i in range(3)],
                         ignore_index=True)
    frame, meta = server_files.read_compact(str(tmp_path / "*.parquet"), max_values=1000,
                                            with_meta=True)
    assert meta.dropped_columns == ("answer", "late") and meta.compact
    assert list(frame.columns) == ["model", "shots", "temp", "cot", "biased", "tag"]
    for c in ("model", "tag"):
        assert isinstance(frame[c].dtype, pd.CategoricalDtype) and not frame[c].cat.ordered
        assert list(frame[c].cat.categories) == sorted(expected[c].dropna().unique())
        assert frame[c].astype(object).fillna("<NA>").tolist() == \
            expected[c].astype(object).fillna("<NA>").tolist()
    for c in ("shots", "temp", "cot", "biased"):
        pd.testing.assert_series_equal(frame[c], expected[c], check_names=True)
    one, meta = server_files.read_compact(str(tmp_path / "part-0.parquet"), max_values=500,
                                          with_meta=True)
    assert meta.dropped_columns == ("answer",)  # 1,000 values; 'late' has 3 here
    assert list(one["late"].cat.categories) == ["a", "b", "c"]


def test_read_compact_reads_text_as_the_pandas_loader_does(tmp_path):
    """A semicolon file with decimal commas and True/False text: numbers, ``"true"`` /
    ``"false"`` categories, and the decimal-comma note for the Data page."""
    from analysis.engines.server_files import read_compact
    from analysis.io import read_results

    path = tmp_path / "eu.csv"
    path.write_text("model;score;flag;note\n" + "".join(
        f"m{i % 3};{i % 4},5;{['True', 'FALSE', 'true'][i % 3]};text {i}\n"
        for i in range(1200)), encoding="utf-8")
    frame, meta = read_compact(str(path), max_values=1000, with_meta=True)
    pandas, pandas_meta = read_results(path)
    assert meta.decimal_comma_columns == pandas_meta.decimal_comma_columns == ("score",)
    assert frame["score"].tolist() == pandas["score"].tolist()
    assert list(frame["flag"].cat.categories) == ["false", "true"]
    assert frame["flag"].astype(str).tolist() == pandas["flag"].astype(str).str.lower().tolist()
    assert meta.dropped_columns == ("note",)


# --- issue 26: a FIFO, a 300-character name, a symbolic link added after the check --------
def test_a_fifo_in_the_folder_is_refused_at_once(folder):
    import os

    os.mkfifo(folder / "data" / "pipe.csv")
    at = _open_large_source()
    at.text_input(key="data_server_path").input("pipe.csv").run()  # used to block forever
    assert not at.exception, at.exception
    assert "is a FIFO (named pipe), not a regular file" in at.error[0].value


def test_a_300_character_name_is_a_message_not_a_traceback(folder):
    at = _open_large_source()
    before = at.session_state["results_name"]
    at.text_input(key="data_server_path").input("x" * 300 + ".csv").run()
    assert not at.exception, at.exception
    message = at.error[0].value
    assert "cannot be opened: File name too long" in message
    assert str(folder) not in message and "Traceback" not in message
    assert at.session_state["results_name"] == before


def test_files_added_after_the_check_are_not_read(folder):
    from analysis.engines.server_files import read_compact, resolve_under

    data = folder / "data"
    _, files = resolve_under("runs/*.parquet", data.resolve())
    # between the check and the read, a link matching the glob appears, pointing outside
    outside = pd.DataFrame({"model": ["leak"] * 7, "style": ["x"] * 7, "biased": [1] * 7,
                            "completion": ["secret"] * 7})
    outside.to_parquet(folder / "outside.parquet", index=False)
    (data / "runs" / "part-9.parquet").symlink_to(folder / "outside.parquet")
    frame = read_compact(files, name="runs/*.parquet")
    assert len(frame) == 1500 and "leak" not in set(frame["model"].astype(str))
