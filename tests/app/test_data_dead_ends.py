"""No dead ends on the Data page (issue 29 item 5): missing importers marked before any
upload, harness files pointed to their importer, errors of every file without server
paths, the uploader emptied between attempts, the table downloadable, the Source radio
naming where the active table came from, the import command in Copy as CLI."""

from __future__ import annotations

import gzip

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.app.apptools import ROOT

HARNESS = ROOT / "tests" / "data" / "harness"
LM_EVAL = sorted((HARNESS / "lm_eval_output" / "dummy-bbq").iterdir())
INSPECT = sorted((HARNESS / "inspect_logs").iterdir())
PREDS_AGE = ROOT / "tests" / "data" / "bbq" / "preds_Age.jsonl.gz"


def test_uploads_are_recognised_by_their_first_record():
    from ui.data_help import looks_like

    samples = next(p for p in LM_EVAL if p.name.startswith("samples_"))
    assert looks_like(samples.read_bytes(), samples.name) == "lm-eval"
    assert looks_like(gzip.decompress(PREDS_AGE.read_bytes()), "preds_Age.jsonl") == "bbq"
    assert looks_like(INSPECT[0].read_bytes(), INSPECT[0].name) == "inspect"
    assert looks_like(b"model,answer\nm,1\n", "mine.csv") is None
    assert looks_like(b'{"model": "m", "answer": 1}\n', "mine.jsonl") is None


def test_messages_leave_out_the_server_folder():
    from ui.data_help import without_paths

    folder = "/tmp/bias-workbench-import-abc123"
    text = without_paths(f"{folder}/samples_x.jsonl: no results file next to it in {folder}; "
                         "pass --model", folder)
    assert "/tmp" not in text and text.startswith("samples_x.jsonl: ")
    assert "the model box above" in text


def _data_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "data.py"), default_timeout=120)
    at.run()
    assert not at.exception
    return at


def test_an_importer_whose_extra_is_missing_is_marked_before_any_upload(monkeypatch):
    import ui.data_help as help_

    monkeypatch.setattr(help_, "importer_problem", lambda s: (
        "The inspect importer needs the package 'inspect_ai', which is not installed."
        if s == "inspect" else None))
    at = _data_page()
    at.radio(key="data_source").set_value("Import from ...").run()
    box = at.selectbox(key="import_source")
    assert "not installed" in box.format_func("inspect")
    assert "not installed" not in box.format_func("bbq")
    box.set_value("inspect").run()
    assert not at.get("file_uploader")  # no upload offered, the install command instead
    assert 'pip install -e ".[harnesses]"' in at.warning[0].value


def test_a_bbq_file_uploaded_as_a_table_points_to_the_importer_and_every_error_shows():
    at = _data_page()
    at.radio(key="data_source").set_value("Upload a file").run()
    data = gzip.decompress(PREDS_AGE.read_bytes())
    at.file_uploader(key="data_upload").set_value([("preds_Age.jsonl", data, "text/plain")])
    at.run()
    assert any("BBQ predictions" in i.value and "Import from" in i.value for i in at.info)

    at.radio(key="data_source").set_value("Import from ...").run()
    at.selectbox(key="import_source").set_value("bbq").run()
    at.file_uploader(key="import_files_0").set_value(
        [("a.jsonl", b"not json\n", "text/plain"), ("b.jsonl", b"[1, 2]\n", "text/plain")])
    at.run()
    at.button(key="import_run").click().run()
    error = at.error[0].value
    assert "a.jsonl" in error and "b.jsonl" in error and "/tmp" not in error
    assert at.session_state["import_round"] == 1  # the next attempt starts empty
    assert at.file_uploader(key="import_files_1").value in (None, [])


def test_an_import_is_downloadable_named_in_the_source_radio_and_rebuilt_by_the_cli():
    at = _data_page()
    at.radio(key="data_source").set_value("Import from ...").run()
    at.selectbox(key="import_source").set_value("bbq").run()
    at.file_uploader(key="import_files_0").set_value(
        [("preds_Age.jsonl.gz", PREDS_AGE.read_bytes(), "application/gzip")])
    at.run()
    at.button(key="import_run").click().run()
    at.button(key="import_use").click().run()
    assert not at.exception
    frame = at.session_state["results_frame"]
    assert at.session_state["results_rebuild"] == (
        "python -m analysis import bbq preds_Age.jsonl.gz --out results.parquet")
    labels = [b.label for b in at.get("download_button")]
    assert "Download this table (CSV)" in labels and "Parquet" in labels

    # the radio's key is gone after a visit elsewhere: it names the import again
    again = AppTest.from_file(str(ROOT / "pages" / "data.py"), default_timeout=120)
    for key in ("results_frame", "results_name", "results_token", "design",
                "results_rebuild"):
        again.session_state[key] = at.session_state[key]
    again.run()
    assert again.radio(key="data_source").value == "Import from ..."

    sub = AppTest.from_file(str(ROOT / "pages" / "subgroups.py"), default_timeout=120)
    for key in ("results_frame", "results_name", "results_token", "design",
                "results_rebuild"):
        sub.session_state[key] = at.session_state[key]
    sub.run()
    cli = next(c.value for c in sub.code if "python -m analysis subgroups" in c.value)
    first, second = cli.splitlines()[:2]
    assert first.startswith("python -m analysis import bbq preds_Age.jsonl.gz")
    assert second.startswith("python -m analysis subgroups results.parquet")
    assert len(frame) == 11_040


@pytest.mark.parametrize("imported", [True, False])
def test_columns_an_importer_left_empty_are_no_warning(imported):
    from ui.common import token_of

    frame = pd.DataFrame({"model": ["a", "b"] * 10, "answer": [0, 1] * 10,
                          "model_args": [None] * 20})
    frame.loc[0, "answer"] = None
    at = AppTest.from_file(str(ROOT / "pages" / "data.py"), default_timeout=120)
    at.session_state["results_frame"] = frame
    at.session_state["results_name"] = "x.csv"
    at.session_state["results_token"] = token_of(frame)
    if imported:
        at.session_state["results_rebuild"] = "python -m analysis import lm-eval x.jsonl"
    at.run()
    warned = [w.value for w in at.warning]
    assert any("**answer**" in w for w in warned)  # a real gap is still a warning
    assert any("model_args" in w for w in warned) is not imported
    assert any("model_args" in c.value for c in at.caption) is imported
