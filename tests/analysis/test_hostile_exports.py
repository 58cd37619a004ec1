"""Exports that hostile labels cannot break (issue 26 item 4): control characters and
bidirectional overrides in labels and cells, path-like and very long factor names in the
report ZIP, and a figure that fails named while the rest is written."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from analysis import report as R
from analysis.design import Design, apply_design
from analysis.export import browser_available, figure_bytes, table_bytes
from analysis.safe_text import clean_controls, escape_figure, escape_markdown
from analysis.safe_write import neutralise_csv_cells

needs_browser = pytest.mark.skipif(not browser_available(), reason="no Chromium here")
CONTROLS = ["a\x01b", "bell\x07", "v\x0btab", "esc\x1b[31m"]
RLO = "\u202eevil"  # shows as "live" reversed without the fix
PATHLIKE = "../../../tmp/x"
LONG = "f" * 300


def _check_entry(name: str) -> None:
    assert ".." not in name and "\\" not in name and not name.startswith("/")
    assert name.count("/") <= 1 and len(name) <= R.ZIP_NAME_MAX
    assert all(ch.isascii() and (ch.isalnum() or ch in "._-/") for ch in name), name


def test_clean_controls_keeps_tab_and_line_breaks_only():
    assert clean_controls("a\x01b\tc\nd\r\x7f\x9f\u202e\u2066e") == \
        "a\ufffdb\tc\nd\r\ufffd\ufffd\ufffd\ufffde"
    assert escape_markdown(RLO) == "\ufffdevil"
    cells = neutralise_csv_cells(pd.DataFrame({"g\x07": [*CONTROLS, RLO, "=1+1"],
                                               "n": [1, 2, 3, 4, 5, 6]}))
    assert list(cells.columns) == ["g\ufffd", "n"]
    assert cells["g\ufffd"].tolist() == ["a\ufffdb", "bell\ufffd", "v\ufffdtab",
                                        "esc\ufffd[31m", "\ufffdevil", "'=1+1"]
    assert cells["n"].tolist() == [1, 2, 3, 4, 5, 6]
    text = table_bytes(pd.DataFrame({"g": CONTROLS})).decode("utf-8")
    assert not any(ch in text for ch in "\x01\x07\x0b\x1b")


@pytest.mark.parametrize("name", [PATHLIKE, LONG, "a\\b/c", "/abs", "..", "", ".hidden",
                                  "ünïcode ☃", "x" * 1000 + "../y"])
def test_zip_entry_names_are_slugs(name):
    used: set[str] = set()
    entries = [R.zip_entry_name("figures", f"01_coverage_{name}", "png", used)
               for _ in range(3)]
    for e in entries:
        _check_entry(e)
    assert len(set(entries)) == 3  # the same name three times: three entries


@needs_browser
def test_figure_with_control_characters_exports_after_escaping():
    fig = go.Figure(go.Bar(x=[*CONTROLS, RLO], y=[1, 2, 3, 4, 5], name="n\x01"))
    fig.update_layout(title="t\x1b")
    png = figure_bytes(escape_figure(fig), "png")
    assert png[:4] == b"\x89PNG"


@needs_browser
def test_report_zip_of_hostile_names_and_labels_is_complete_and_safe():
    rng = np.random.default_rng(5)
    n = 240
    frame = pd.DataFrame({PATHLIKE: rng.choice(CONTROLS, n), LONG: rng.choice([RLO, "ok"], n),
                          "dev": rng.integers(0, 2, n)})
    design = Design.from_dict({"version": 1, "name": "hostile", "factors": [
        {"name": PATHLIKE, "kind": "domain", "values": CONTROLS},
        {"name": LONG, "kind": "prompt", "values": [RLO, "ok"]}],
        "outcome": {"column": "dev", "mapping": "binary"}})
    rep = R.build_report(apply_design(frame, design), design, ["coverage"])
    html_text = R.report_html(rep)
    data = R.report_zip(rep, html_text)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = zf.namelist()
        readme = zf.read("README.txt").decode()
        tables = [n for n in names if n.startswith("tables/")]
        csv_text = b"".join(zf.read(t) for t in tables).decode("utf-8")
    for name in names:
        _check_entry(name)
    figures = [n for n in names if n.startswith("figures/")]
    n_figures = sum(len(s.figures) for s in rep.sections)
    assert n_figures and len(figures) == 3 * n_figures  # PNG, SVG and PDF of each
    assert "not exported" not in readme
    assert tables and not any(ch in csv_text for ch in "\x01\x07\x0b\x1b\u202e")


def test_a_figure_that_fails_is_named_and_the_rest_is_written(monkeypatch):
    import analysis.export as export

    def fail_on_second(fig, fmt):
        if fig.layout.meta == "bad":
            raise R.AnalysisError("The figure could not be exported as png: Error 525")
        return b"IMG"

    monkeypatch.setattr(export, "figure_bytes", fail_on_second)
    good = go.Figure(go.Bar(x=["a"], y=[1]))
    bad = go.Figure(go.Bar(x=["a\x01b"], y=[1]))
    bad.update_layout(meta="bad")
    sec = R.Section(name="coverage", settings={}, figures=[("good", good), ("bad", bad)],
                    tables=[("cells", pd.DataFrame({"n": [1]}))])
    rep = R.Report(source="s.csv", design=None, summary={}, sections=[sec], version="1",
                   created="now")
    with zipfile.ZipFile(io.BytesIO(R.report_zip(rep, "<html></html>"))) as zf:
        names = set(zf.namelist())
        readme = zf.read("README.txt").decode()
    assert {"figures/01_coverage_good.png", "tables/01_coverage_cells.csv",
            "report.html"} <= names
    assert not any("bad" in n for n in names if n.startswith("figures/"))
    assert "Section 'Coverage', figure 'bad': not exported as png" in readme
    assert "Error 525" in readme and "'a\\x01b'" in readme
