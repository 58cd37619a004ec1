"""Byte-order marks and the encoding choice on every upload of the app (issue 12 item 5):
the Data page (a mark wins over the choice, also inside gzip), the Judges page and the
judge tools' uploads (an encoding choice there too; before, a Latin-1 four-stage file
was refused with "choose its encoding" and no choice on the page)."""

from __future__ import annotations

import codecs
import gzip

import pandas as pd
import pytest

from judges.answer import questions_sample_path
from judges.fourstage import load_fourstage, sample_path
from tests.app.apptools import page_test, shown
from tests.conftest import REPO

BAD = REPO / "tests" / "data" / "bad"


def _fourstage(encoding: str, bom: bytes = b"") -> bytes:
    frame = pd.read_csv(sample_path())
    frame.loc[0, "answer_a"] = "Un caf\u00e9 cr\u00e8me"
    return bom + frame.to_csv(index=False).encode(encoding, errors="replace")


@pytest.fixture
def upload_page():
    at = page_test("data.py").run()
    at.radio(key="data_source").set_value("Upload a file").run()
    return at


def _upload(at, key: str, name: str, data: bytes):
    at.file_uploader(key=key).upload(name, data, "text/csv").run()
    assert not at.exception, at.exception
    return at


def test_a_byte_order_mark_wins_over_the_chosen_encoding(upload_page):
    at = upload_page
    at.selectbox(key="data_encoding").set_value("latin-1").run()
    at = _upload(at, "data_upload", "utf16.csv", (BAD / "results_utf16le_bom.csv").read_bytes())
    assert not at.error
    assert at.session_state["results_frame"]["category"].tolist()[0] == "\u00e4"


def test_a_byte_order_mark_inside_gzip(upload_page):
    data = gzip.compress((BAD / "results_utf16be_bom.csv").read_bytes())
    at = _upload(upload_page, "data_upload", "utf16.csv.gz", data)
    assert not at.error
    assert list(at.session_state["results_frame"].columns) == ["model", "category", "biased"]


def test_api_reads_fourstage_files_by_mark_or_by_choice():
    text = load_fourstage(_fourstage("utf-16-le", codecs.BOM_UTF16_LE), name="f.csv")
    assert text["answer_a"].iloc[0] == "Un caf\u00e9 cr\u00e8me"
    latin = _fourstage("latin-1")
    with pytest.raises(ValueError, match="not valid utf-8 text"):
        load_fourstage(latin, name="f.csv")
    frame = load_fourstage(latin, name="f.csv", encoding="latin-1")
    assert frame["answer_a"].iloc[0] == "Un caf\u00e9 cr\u00e8me"


def test_judges_page_upload_has_an_encoding_choice():
    at = page_test("judges.py").run()
    at.radio(key="judges_source").set_value("Upload a file").run()
    assert at.selectbox(key="judges_encoding").value == "utf-8"
    at = _upload(at, "judges_upload", "utf16.csv", _fourstage("utf-16-be", codecs.BOM_UTF16_BE))
    assert not at.error  # the mark names the encoding
    at = _upload(at, "judges_upload", "latin.csv", _fourstage("latin-1"))
    message = shown(at.error[0].value)
    assert "is not valid utf-8 text" in message and "choose its encoding" in message
    at.selectbox(key="judges_encoding").set_value("latin-1").run()
    assert not at.exception and not at.error
    assert any("quantity" in d.value.columns for d in at.dataframe)  # the estimate is shown


def test_judge_tools_upload_has_an_encoding_choice():
    frame = pd.read_csv(questions_sample_path())
    frame.loc[0, "scenario"] = "caf\u00e9"
    latin = frame.to_csv(index=False).encode("latin-1", errors="replace")
    at = page_test("judges_tools.py").run()
    at.radio(key="tools_answers_source").set_value("Upload a file").run()
    at = _upload(at, "tools_answers_upload", "questions.csv", latin)
    assert "is not valid utf-8 text" in shown(at.error[0].value)
    at.selectbox(key="tools_answers_encoding").set_value("cp1252").run()
    assert not at.exception and not at.error
    assert at.text_input(key="tools_at") is not None  # the answers settings now show
