"""The app shows labels, column names, values and file names from data as text
(issue 20 item 6), reads byte-order marks and offers an encoding (issue 12 item 5), and
refuses upload bombs with a message while keeping the previous table (issue 20 item 1)."""

from __future__ import annotations

import re
import time
import zlib

import pytest

from tests.app.apptools import page_test, shown
from tests.conftest import REPO

BAD = REPO / "tests" / "data" / "bad"
GOOD = b"model,stigma,biased\nm1,none,0\nm1,autism,1\nm2,none,1\nm2,autism,0\n"


def _rendered(markdown: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").render(markdown)


def _upload(at, name: str, data: bytes):
    at.file_uploader(key="data_upload").upload(name, data, "text/csv").run()
    assert not at.exception, at.exception
    return at


@pytest.fixture
def upload_page():
    at = page_test("data.py").run()
    at.radio(key="data_source").set_value("Upload a file").run()
    assert not at.exception, at.exception
    return at


def _texts(at) -> list[str]:
    """The Markdown source of every element Streamlit renders as Markdown."""
    blocks = [*at.markdown, *at.caption, *at.warning, *at.error, *at.info, *at.success]
    return [b.value for b in blocks]


def test_column_and_file_names_are_not_rendered(upload_page):
    name = "[click me](http://127.0.0.1:9/).csv"
    at = _upload(upload_page, name, (BAD / "results_markdown_column.csv").read_bytes())
    assert at.session_state["results_name"] == name
    warnings = [w.value for w in at.warning]
    assert any("px" in w for w in warnings), warnings  # the missing-values warning is shown
    for text in _texts(at):
        html = _rendered(text)
        assert "<img" not in html and "<a " not in html, text
        assert not re.search(r"(?<!\\)\[[^\]]*(?<!\\)\]\(", text), text  # no [..](..)
        assert "http://" not in text, text  # escaped as http\:// (no autolink)
    active = next(t for t in _texts(at) if t.startswith("**Active table**"))
    assert "click me" in active and "\\[click me\\]" in active


def test_byte_order_mark_and_encoding_choice(upload_page):
    at = _upload(upload_page, "utf16.csv", (BAD / "results_utf16le_bom.csv").read_bytes())
    assert len(at.error) == 0
    assert at.session_state["results_frame"]["category"].tolist()[0] == "\u00e4"
    latin = (BAD / "results_latin1_no_bom.csv").read_bytes()
    at = _upload(at, "latin.csv", latin)
    assert "is not valid utf-8 text" in shown(at.error[0].value)
    assert at.session_state["results_name"] == "utf16.csv"  # the previous table is kept
    at.selectbox(key="data_encoding").set_value("latin-1").run()
    assert not at.exception and len(at.error) == 0
    assert at.session_state["results_name"] == "latin.csv"
    assert at.session_state["results_frame"]["category"].tolist() == ["caf\u00e9", "b"]


def test_gzip_bomb_upload_is_refused_and_previous_table_kept(upload_page):
    at = _upload(upload_page, "good.csv", GOOD)
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"a,b\n1,2\n" * (1024 * 1024 // 8)
    bomb = b"".join([*(comp.compress(block) for _ in range(256)), comp.flush()])
    start = time.monotonic()
    at = _upload(at, "bomb.csv.gz", bomb)
    assert time.monotonic() - start < 10  # the refusal itself takes < 1 s; AppTest adds a run
    assert "BIAS_WORKBENCH_MAX_COMPRESSION_RATIO" in shown(at.error[0].value)
    assert at.session_state["results_name"] == "good.csv"


def test_design_and_subgroups_pages_show_hostile_factor_names_as_text():
    import pandas as pd

    from analysis.design import suggest_design

    hostile = "![px](http://127.0.0.1:9/x.png)"
    frame = pd.DataFrame({hostile: ["[a](http://127.0.0.1:9/)", "b"] * 6,
                          "model": ["m1"] * 6 + ["m2"] * 6, "biased": [0, 1, 1] * 4})
    design = suggest_design(frame)
    assert hostile in design.names
    for page in ("design.py", "subgroups.py"):
        at = page_test(page, frame=frame, design=design, name="[f](http://127.0.0.1:9/)")
        at.run()
        assert not at.exception, at.exception
        labels = [e.label for e in at.expander] + [m.label for m in at.multiselect]
        assert any("px" in label for label in labels), labels
        for text in [*labels, *_texts(at)]:
            html = _rendered(text)
            assert "<img" not in html and "<a " not in html, (page, text)


def test_no_message_shows_an_exception_unescaped():
    """Exception messages quote column names and values from the data: every st.error /
    warning / info / success / caption / markdown / toast that shows one goes through
    md() (a static check over ui/ and pages/)."""
    import ast

    shows = {"error", "warning", "info", "success", "caption", "markdown", "toast", "write"}
    found = []
    for folder in ("ui", "pages"):
        for path in sorted((REPO / folder).glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in shows and node.args):
                    continue
                arg = node.args[0]
                bare = [n for n in ast.walk(arg) if isinstance(n, ast.Name)
                        and n.id in ("exc", "e", "err", "error")]
                wrapped = [n for n in ast.walk(arg) if isinstance(n, ast.Call)
                           and getattr(n.func, "id", "") in ("md", "escape_markdown")]
                if bare and not wrapped:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not found, found
