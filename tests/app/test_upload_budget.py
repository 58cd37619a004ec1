"""A server-wide budget for uploads being decoded (issue 43 item 4), and the importer
inputs of the bad-input corpus through the app's Import upload (issue 43 items 2, 7)."""

from __future__ import annotations

import threading

import pytest

from tests.app.apptools import page_test
from tests.app.test_import_prepare import _import
from tests.bad_corpus import CASES, case_path
from ui import upload_budget
from ui.upload_budget import UploadBusy, decoding

GOOD = b"model,stigma,biased\nm1,none,0\nm1,autism,1\nm2,none,1\nm2,autism,0\n"
MB = 2**20


def test_the_budget_refuses_what_would_pass_it_and_frees_on_exit(monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_UPLOAD_BUDGET_MB", "400")
    held, release = threading.Event(), threading.Event()

    def visitor():  # another session decoding 300 MB
        with decoding(300 * MB, "big.csv"):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=visitor)
    thread.start()
    assert held.wait(10)
    try:
        assert upload_budget.in_use() == 300 * MB
        with decoding(100 * MB, "fits.csv"):
            assert upload_budget.in_use() == 400 * MB
        busy = (r"^second\.csv: the server is busy reading other uploads right now \(300 MB "
                r"of the 400 MB .*BIAS_WORKBENCH_UPLOAD_BUDGET_MB\); retry")
        with pytest.raises(UploadBusy, match=busy), decoding(101 * MB, "second.csv"):
            pass
    finally:
        release.set()
        thread.join(10)
    assert upload_budget.in_use() == 0
    with decoding(900 * MB, "alone.csv"):  # larger than the budget, but alone: decoded
        pass
    with pytest.raises(ValueError), decoding(1, "x.csv"):
        raise ValueError("a failed decode frees its share too")
    assert upload_budget.in_use() == 0


def test_data_page_says_busy_and_keeps_the_table_then_loads_on_retry(monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_UPLOAD_BUDGET_MB", "1")
    at = page_test("data.py").run()
    at.radio(key="data_source").set_value("Upload a file").run()
    before = at.session_state["results_name"]
    with decoding(MB, "another visitor's upload"):
        at.file_uploader(key="data_upload").upload("mine.csv", GOOD, "text/csv").run()
        assert not at.exception
        assert any("the server is busy reading other uploads" in e.value for e in at.error)
        assert at.session_state["results_name"] == before
    at.file_uploader(key="data_upload").upload("mine2.csv", GOOD, "text/csv").run()
    assert not at.exception and at.session_state["results_name"] == "mine2.csv"


def test_import_page_says_busy(monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_UPLOAD_BUDGET_MB", "1")
    at = page_test("data.py").run()
    with decoding(MB, "another visitor's upload"):
        _import(at, "bbq", [("preds.jsonl", b'{"example_id": 1}\n')])
    assert [e.value for e in at.error][0].startswith(
        "preds.jsonl: the server is busy reading other uploads right now")


IMPORT_CASES = [pytest.param(c, id=c.id) for c in CASES if c.id.startswith("import_")]


@pytest.mark.parametrize("case", IMPORT_CASES)
def test_importer_corpus_cases_through_the_import_upload(case, tmp_path, monkeypatch):
    """The corpus' importer inputs uploaded on the Data page's Import: the same message
    as the CLI (without the server's temporary folder), no exception, no result."""
    for key, value in case.get("env", {}).items():
        monkeypatch.setenv(key, value)
    path, _ = case_path(case, tmp_path)
    at = page_test("data.py").run()
    _import(at, case.get("cli")[1], [(path.name, path.read_bytes())])
    assert "import_result" not in at.session_state
    [error] = [e.value for e in at.error]
    fragment = case.expect("cli").replace(f"{path.name}: ", "")
    assert fragment.split(": ", 1)[-1][:60] in error.replace("\\", "")
    assert "bias-workbench-import-" not in error
