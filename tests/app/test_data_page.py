"""AppTest runs of the Data page: the bundled sample, uploads, a bad upload."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.design import Design, describe_columns, suggest_design
from analysis.io import load_results
from tests.app.apptools import metric_values, page_test
from tests.conftest import BBQ_SAMPLE, SAMPLE_DIR

needs_sample = pytest.mark.skipif(not BBQ_SAMPLE.is_file(),
                                  reason=f"bundled sample missing: {BBQ_SAMPLE}")

GOOD = b"model,stigma,score,biased\nm1,none,1.5,0\nm1,autism,,1\nm2,none,2.5,1\nm2,autism,0.5,0\n"


def _upload(at, name: str, data: bytes, mime: str = "text/csv"):
    at.file_uploader(key="data_upload").upload(name, data, mime).run()
    assert not at.exception, at.exception
    return at


@pytest.fixture
def opened():
    at = page_test("data.py").run()
    assert not at.exception, at.exception
    return at


@needs_sample
def test_opens_on_the_bundled_sample(opened):
    at = opened
    frame = load_results(BBQ_SAMPLE)
    assert at.session_state["results_name"] == "bbq_unifiedqa.csv.gz"
    assert metric_values(at) == {"Rows": f"{len(frame):,}", "Columns": str(frame.shape[1])}
    assert at.session_state["design"] == Design.load(SAMPLE_DIR / "bbq_unifiedqa.design.yaml")
    assert len(at.error) == 0
    assert at.caption[1].value.startswith("Real data: BBQ")
    preview, columns, structure = at.dataframe
    roles = dict(zip(structure.value["column"], structure.value["role"], strict=True))
    assert roles["template_id"] == "cluster" and roles["ans0"] == "item text"  # last wins
    assert len(preview.value) == 200
    pd.testing.assert_frame_equal(columns.value.reset_index(drop=True), describe_columns(frame),
                                  check_dtype=False)


@needs_sample
def test_switch_to_another_sample(opened):
    at = opened
    at.selectbox(key="data_sample").set_value("ssqa_simulated.csv.gz").run()
    assert not at.exception
    assert at.session_state["results_name"] == "ssqa_simulated.csv.gz"
    assert at.session_state["design"] == Design.load(SAMPLE_DIR / "ssqa_simulated.design.yaml")
    frame = load_results(SAMPLE_DIR / "ssqa_simulated.csv.gz")
    assert metric_values(at)["Rows"] == f"{len(frame):,}"
    assert "SIMULATED" in at.caption[1].value


@needs_sample
def test_upload_then_bad_upload_keeps_the_previous_table(opened):
    at = opened
    at.radio(key="data_source").set_value("Upload a file").run()
    assert at.file_uploader(key="data_upload") is not None

    _upload(at, "mine.csv", GOOD)
    assert at.session_state["results_name"] == "mine.csv"
    assert metric_values(at) == {"Rows": "4", "Columns": "4"}
    assert len(at.error) == 0
    assert at.session_state["design"] == suggest_design(load_results(GOOD, name="mine.csv"))
    assert [w.value for w in at.warning] == [
        "Column **score** has 1 missing values (25.0% of rows)."]
    assert at.dataframe[0].value["stigma"].tolist() == ["none", "autism", "none", "autism"]

    bad = "model,stigma\nm1,none\nm2,café\n".encode("latin-1")
    _upload(at, "broken.csv", bad)
    (error,) = at.error
    assert error.value.startswith("broken.csv is not valid utf-8 text")
    assert "(line 3)" in error.value
    # the previous table stays active, and the page says so
    assert at.session_state["results_name"] == "mine.csv"
    assert metric_values(at) == {"Rows": "4", "Columns": "4"}
    assert any("still the previous one" in c.value for c in at.caption)

    _upload(at, "ragged.csv", b"a,b\n1,2\n3,4,5\n")
    assert "a row has more fields than the header" in at.error[0].value
    assert at.session_state["results_name"] == "mine.csv"

    # a good upload clears the error; a design that still fits is kept
    smaller = b"model,stigma,score,biased\nm1,none,1,0\nm2,none,2,1\n"
    kept = at.session_state["design"]
    _upload(at, "smaller.csv", smaller)
    assert len(at.error) == 0
    assert at.session_state["results_name"] == "smaller.csv"
    assert metric_values(at) == {"Rows": "2", "Columns": "4"}
    assert at.session_state["design"] == kept
    assert not any("still the previous one" in c.value for c in at.caption)


@needs_sample
def test_upload_formats(opened, tmp_path):
    at = opened
    at.radio(key="data_source").set_value("Upload a file").run()
    frame = load_results(GOOD, name="x.csv")
    frame.to_parquet(tmp_path / "x.parquet", index=False)
    _upload(at, "x.parquet", (tmp_path / "x.parquet").read_bytes(), "application/octet-stream")
    assert at.session_state["results_name"] == "x.parquet"
    assert metric_values(at) == {"Rows": "4", "Columns": "4"}
    jsonl = (b'{"m": "a", "r": {"x": 1}, "tags": ["p", "q"]}\n'
             b'{"m": "b", "r": {"x": 2}, "tags": []}\n')
    _upload(at, "x.jsonl", jsonl, "application/json")
    assert metric_values(at) == {"Rows": "2", "Columns": "3"}
    assert list(at.dataframe[0].value.columns) == ["m", "tags", "r.x"]
    assert at.dataframe[1].value["column"].tolist() == ["m", "tags", "r.x"]


@needs_sample
def test_back_to_the_sample(opened):
    at = opened
    at.radio(key="data_source").set_value("Upload a file").run()
    _upload(at, "mine.csv", GOOD)
    at.radio(key="data_source").set_value("Bundled sample").run()
    assert at.session_state["results_name"] == "mine.csv"  # nothing replaced yet
    at.button(key="data_load_sample").click().run()
    assert at.session_state["results_name"] == "bbq_unifiedqa.csv.gz"
    assert at.session_state["design"] == Design.load(SAMPLE_DIR / "bbq_unifiedqa.design.yaml")


@needs_sample
def test_an_upload_applies_its_design_while_loading(monkeypatch):
    """The design is applied on the Data page (part of loading), so the first analysis
    page opened finds it cached and applies nothing (issue 32, docs/performance.md)."""
    import ui.common

    calls = []
    real = ui.common.apply_design
    monkeypatch.setattr(ui.common, "apply_design",
                        lambda frame, design: calls.append(len(frame)) or real(frame, design))
    ui.common._applied.clear()
    at = page_test("data.py")
    at.session_state["data_source"] = "Upload a file"
    at.run()
    _upload(at, "fresh.csv", GOOD)
    # the bundled sample the app opens on (35,868 rows), then the upload's 4 rows: each
    # applied once while loading
    assert calls == [35_868, 4]
    design = at.session_state["design"]
    page = page_test("coverage.py", frame=at.session_state["results_frame"], design=design)
    page.session_state["results_token"] = at.session_state["results_token"]
    page.run()
    assert not page.exception, page.exception
    assert calls == [35_868, 4]  # the analysis page found it applied
