"""Every CSV the app or the CLIs write goes through the formula-safe writer (issue 12
item 4): no ``to_csv`` outside analysis/safe_write.py, every CSV download button gets
``table_bytes``, and the writers that bypassed it (``plan --out``, the categorical
agreement's confusion matrix) and the report ZIP neutralise cells from the data."""

from __future__ import annotations

import ast
import csv
import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.cli import main
from analysis.safe_write import FORMULA_PREFIXES, csv_bytes

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("analysis", "judges", "ui", "pages")
HOSTILE = ['=HYPERLINK("http://x","click")', "+cmd", "-x", "@SUM(A1)", "\tTAB", "\rCR"]


def _sources():
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            yield path, path.read_text(encoding="utf-8")


def test_no_csv_is_written_outside_the_safe_writer():
    found = []
    for path, text in _sources():
        if path == REPO / "analysis" / "safe_write.py":
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("to_csv", "writer", "DictWriter"):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.func.attr}")
    assert not found, found


def test_every_csv_download_button_uses_table_bytes():
    buttons = 0
    for path, text in _sources():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "download_button":
                call = ast.get_source_segment(text, node) or ""
                if "csv" in call.lower():
                    buttons += 1
                    assert "table_bytes(" in call or "csv_bytes(" in call, (path, call)
    assert buttons >= 3


def _cells(data: bytes) -> list[str]:
    return [c for row in csv.reader(io.StringIO(data.decode("utf-8"), newline=""))
            for c in row]


def _assert_safe(cells: list[str]) -> None:
    live = []
    for c in cells:
        if c.startswith(FORMULA_PREFIXES):
            try:
                float(c)
            except ValueError:
                live.append(c)
    assert not live, live


def test_csv_bytes_with_index_neutralises_the_labels():
    confusion = pd.DataFrame([[1, 2], [3, 4]], index=pd.Index(HOSTILE[:2], name="=judge"),
                             columns=HOSTILE[2:4])
    cells = _cells(csv_bytes(confusion, index=True))
    _assert_safe(cells)
    assert "'" + HOSTILE[0] in cells and "'=judge" in cells and "'@SUM(A1)" in cells
    assert _cells(csv_bytes(pd.DataFrame({"n": [-1]})))[1] == "-1"  # numbers stay numbers


def test_plan_out_is_neutralised(tmp_path):
    out = tmp_path / "runs.csv"
    assert main(["plan", "--new", f"a={HOSTILE[0].replace(',', ' ')},+cmd", "--new",
                 "b=@SUM(A1),-x", "--runs", "4", "--out", str(out)]) == 0
    cells = _cells(out.read_bytes())
    _assert_safe(cells)
    assert "'@SUM(A1)" in cells and "'-x" in cells and "'+cmd" in cells


def test_plan_additions_out_is_neutralised(tmp_path):
    rows = pd.DataFrame({"a": ["=1+1", "=1+1", "ok"], "b": ["@x", "y", "y"],
                         "dev": [0, 1, 0]})
    data = tmp_path / "r.csv"
    rows.to_csv(data, index=False)
    out = tmp_path / "add.csv"
    assert main(["plan", str(data), "--factors", "a,b", "--budget", "3", "--out",
                 str(out)]) == 0
    cells = _cells(out.read_bytes())
    _assert_safe(cells)
    assert "'=1+1" in cells


def test_categorical_agreement_confusion_is_neutralised(tmp_path):
    from judges.cli import main as scale_main

    rng = np.random.default_rng(1)
    cats = ["=evil()", "@home", "plain"]
    judge = rng.choice(cats, 60)
    human = np.where(rng.random(60) < 0.8, judge, rng.choice(cats, 60))
    path = tmp_path / "cat.csv"
    pd.DataFrame({"category": judge, "human_category": human}).to_csv(path, index=False)
    out = tmp_path / "agree.csv"
    assert scale_main(["agreement", str(path), "--categorical", "--ci", "none",
                       "--out", str(out)]) == 0
    for written in (out, tmp_path / "agree.confusion.csv"):
        cells = _cells(written.read_bytes())
        _assert_safe(cells)
        assert "'=evil()" in cells and "'@home" in cells
    confusion = pd.read_csv(tmp_path / "agree.confusion.csv", index_col=0)
    assert confusion.to_numpy().sum() == 60  # counts stay numbers


def test_report_zip_tables_are_neutralised():
    from analysis import report as R
    from analysis.design import Design, apply_design

    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"group": rng.choice(["=HYPERLINK(1)", "+cmd", "ok"], 300),
                          "model": rng.choice(["@m", "m2"], 300),
                          "dev": rng.integers(0, 2, 300),
                          "answer_type": rng.choice(["-a b", "\tb", "c"], 300)})
    design = Design.from_dict({"version": 1, "name": "csv", "factors": [
        {"name": "group", "kind": "domain", "reference": "ok",
         "values": ["=HYPERLINK(1)", "+cmd", "ok"]},
        {"name": "model", "kind": "model", "reference": "m2", "values": ["@m", "m2"]}],
        "outcome": {"column": "dev", "mapping": "binary"}})
    rep = R.build_report(apply_design(frame, design), design, [
        "coverage", ("subgroups", {"factors": ["group", "model"]}), "ecdf",
        ("cohorts", {"category": "answer_type", "cohort": "model"})])
    with zipfile.ZipFile(io.BytesIO(R.report_zip(rep, "<html></html>"))) as zf:
        names = [n for n in zf.namelist() if n.endswith(".csv")]
        assert len(names) >= 6
        every = []
        for n in names:
            cells = _cells(zf.read(n))
            _assert_safe(cells)
            every += cells
    assert "'=HYPERLINK(1)" in every and "'@m" in every and "'+cmd" in every


@pytest.mark.parametrize("value", ["-1.5", "+2", "-3e-4"])
def test_numbers_written_as_text_are_not_prefixed(value):
    assert _cells(csv_bytes(pd.DataFrame({"x": [value]})))[1] == value
