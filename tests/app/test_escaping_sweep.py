"""Every page with hostile text in every column name and value (issue 26 item 3): nothing
from the data is rendered as Markdown or HTML, so nothing makes the browser fetch an
outside address or shows a link the data wrote.

Each page runs under AppTest with a table whose column names, factor values, category
values and file name are Markdown images, links, HTML tags and emphasis pointing at
``evil.test``. Every text Streamlit renders as Markdown (markdown, captions, alerts,
metric labels and deltas, widget and expander labels, tab names) is rendered with a
CommonMark renderer: no image, link or raw HTML may come from the data.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import judges.answer  # noqa: F401 - the package, before pages/judges.py can shadow it
import judges.categorise  # noqa: F401
import judges.judge  # noqa: F401
from analysis.design import Design, apply_design
from analysis.table_meta import TableMeta
from tests.app.apptools import ROOT, page_test

markdown_it = pytest.importorskip("markdown_it")
HOST = "evil.test"
GROUP = f"![g](http://{HOST}/col.png)"
STYLE = f"<img src=http://{HOST}/style.png>"
VALUES = [f"[login](http://{HOST}/v)", f"![v](http://{HOST}/v.png)", "**bold**",
          f"<a href=http://{HOST}>a</a>"]
STYLES = ["plain", f"https://{HOST}/auto"]
CATEGORY = f"[cat](http://{HOST}/c)"
#: A file name that would close a code span written with single backticks.
FILE_NAME = f"[file](http://{HOST}/f)` ![i](http://{HOST}/i.png) `.csv"
PAGES = sorted(p.name for p in (ROOT / "pages").glob("*.py"))


@pytest.fixture(scope="module")
def hostile() -> tuple[pd.DataFrame, Design]:
    rng = np.random.default_rng(26)
    n = 480
    frame = pd.DataFrame({
        GROUP: rng.choice(VALUES, n), STYLE: rng.choice(STYLES, n),
        "model": rng.choice(["m1", f"[m](http://{HOST}/m)"], n),
        "dev": rng.integers(0, 2, n), "score": rng.normal(size=n).round(3),
        CATEGORY: rng.choice(["stereo", f"![s](http://{HOST}/s.png)", "unknown"], n)})
    design = Design.from_dict({"version": 1, "name": f"[design](http://{HOST}/d)", "factors": [
        {"name": GROUP, "kind": "domain", "reference": VALUES[0], "values": VALUES},
        {"name": STYLE, "kind": "prompt", "reference": "plain", "values": STYLES},
        {"name": "model", "kind": "model", "values": ["m1", f"[m](http://{HOST}/m)"]}],
        "outcome": {"column": "dev", "mapping": "binary"}})
    return apply_design(frame, design), design


def _markdown_texts(at) -> list[str]:
    """Every string of the page Streamlit renders as Markdown."""
    texts = [b.value for b in (*at.markdown, *at.caption, *at.warning, *at.error, *at.info,
                                *at.success, *at.title, *at.header, *at.subheader)]
    for m in at.metric:
        texts += [m.label, str(m.proto.delta or "")]
    for kind in ("selectbox", "multiselect", "radio", "checkbox", "text_input",
                 "number_input", "slider", "select_slider", "button", "toggle", "text_area"):
        texts += [w.label for w in at.get(kind) if getattr(w, "label", None)]
    texts += [e.proto.expandable.label for e in at.get("expandable")]
    texts += [t.label for t in at.tabs]
    return texts


#: A CommonMark code span (shown verbatim): the same run of backticks opens and closes it.
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", re.S)


def _check(texts: list[str], page: str) -> None:
    md = markdown_it.MarkdownIt("commonmark")
    for text in texts:
        if HOST not in text:
            continue
        html = md.render(text)
        assert "<img" not in html and "<a " not in html, (page, text)
        prose = _CODE_SPAN.sub("", text)  # code spans show their text as it is
        assert "http://" not in prose and "https://" not in prose, (page, text)  # autolinks
        assert not re.search(r"(?<!\\)\]\(", prose), (page, text)


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_no_markup_from_the_data(page, hostile, monkeypatch, tmp_path):
    monkeypatch.setenv("BIAS_WORKBENCH_STATE_DIR", str(tmp_path))
    frame, design = hostile
    meta = TableMeta(FILE_NAME, dropped_columns=(f"![d](http://{HOST}/dropped.png)",))
    at = page_test(page, frame=frame, design=design, name=FILE_NAME, meta=meta).run()
    assert not at.exception, (page, at.exception)
    texts = _markdown_texts(at)
    assert texts, page
    _check(texts, page)
    if page == "data.py":  # the free-text columns left out are listed, as text
        assert any("dropped.png" in t for t in texts)
    if page == "disparity.py":  # metric labels and deltas carry group values
        assert at.metric and any(HOST in t for t in texts)


def test_code_span_cannot_be_closed_by_its_text():
    from analysis.safe_text import code_span

    md = markdown_it.MarkdownIt("commonmark")
    for text in (FILE_NAME, "``` ![i](http://evil.test/x.png) ```", "`", "a\nb\x01"):
        html = md.render(code_span(text))
        assert "<img" not in html and html.count("<code>") == 1, (text, html)
    assert md.render(code_span("a\nb\x01")) == "<p><code>a b\ufffd</code></p>\n"
