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
