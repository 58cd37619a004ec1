"""Reliability cases of issue 20 item 7 and issue 12 item 5: the CLI exits 2 with a
specific message, the API raises a typed error. Fixture files: ``tests/data/bad/``
(its README lists every case and the expected message)."""

from __future__ import annotations

import os
import stat

import pandas as pd
import pytest

from analysis.cli import main
from analysis.design import Design, apply_design, check_design, suggest_design
from analysis.errors import AnalysisError, DesignError, LoadError, OutputError
from analysis.io import detect_bom, load_results
from tests.conftest import REPO

BAD = REPO / "tests" / "data" / "bad"
GOOD_CSV = "model,category,biased\nm1,a,1\nm1,b,0\nm2,a,0\nm2,b,1\n"


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "results.csv"
    path.write_text(GOOD_CSV)
    return path


def _cli(capsys, argv) -> str:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("design, fragment", [
    ("design_latin1.yaml", "is not UTF-8 text"),
    ("design_billion_laughs.yaml", "aliases are not allowed in design files"),
    ("design_python_tag.yaml", "not valid YAML or JSON"),
])
def test_bad_design_files_exit_2(capsys, good, design, fragment):
    err = _cli(capsys, ["cells", good, "--design", BAD / design])
    assert fragment in err and design in err


def test_design_path_that_is_a_folder_or_fifo(capsys, good, tmp_path):
    assert "is a folder, not a design file" in _cli(capsys, ["cells", good, "--design",
                                                             tmp_path])
    fifo = tmp_path / "design.yaml"
    os.mkfifo(fifo)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert "is a FIFO" in _cli(capsys, ["cells", good, "--design", fifo])


@pytest.mark.parametrize("out, fragment", [
    ("missing/cells.csv", "does not exist"),
    (".", "is a folder"),
])
def test_bad_output_paths_exit_2_before_work(capsys, good, tmp_path, out, fragment):
    err = _cli(capsys, ["cells", good, "--factors", "model", "--out", tmp_path / out])
    assert fragment in err
    err = _cli(capsys, ["subgroups", good, "--factors", "model", "--outcome", "biased",
                        "--level", "1", "--figure", tmp_path / out])
    assert fragment in err


@pytest.mark.parametrize("argv, fragment", [
    (["--sep", ";;"], "must be one character"),
    (["--encoding", "klingon"], "is not a known text encoding"),
    (["--level", "0"], "must be at least 1, not 0"),
    (["--confidence", "1.5"], "must be less than 1"),
    (["--confidence", "nan"], "expected a finite number"),
    (["--min-n", "x"], "expected a whole number, not 'x'"),
])
def test_bad_options_exit_2(capsys, good, argv, fragment):
    try:  # argparse refuses a bad number itself (usage + message); the loader the rest
        code = main(["subgroups", str(good), "--factors", "model", "--outcome", "biased",
                     *argv])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and "Traceback" not in err, err


def test_multi_character_sep_api():
    with pytest.raises(LoadError, match="must be one character"):
        load_results(GOOD_CSV.encode(), name="r.csv", sep="::")
    assert load_results(GOOD_CSV.replace(",", "\t").encode(), name="r.txt",
                        sep="\\t").shape == (4, 3)


@pytest.mark.parametrize("name, fragment", [
    ("results_ragged_short_row.csv", "line 3: a row has fewer fields than the header"),
    ("results_ragged_long_row.csv", "line 3: a row has more fields than the header"),
    ("results_latin1_no_bom.csv", "is not valid utf-8 text"),
    ("results_header_only.csv", "has a header but no rows"),
    ("results_empty.csv", "is empty"),
    ("results_truncated.csv.gz", "truncated"),
])
def test_bad_results_files(capsys, name, fragment):
    with pytest.raises(LoadError, match=None) as info:
        load_results(BAD / name)
    assert fragment in str(info.value)
    assert fragment in _cli(capsys, ["describe", BAD / name])


@pytest.mark.parametrize("name, encoding", [
    ("results_utf8_bom.csv", "utf-8"),
    ("results_utf16le_bom.csv", "utf-16-le"),
    ("results_utf16be_bom.csv", "utf-16-be"),
    ("results_utf32le_bom.csv", "utf-32-le"),
])
def test_byte_order_mark_names_the_encoding(name, encoding):
    data = (BAD / name).read_bytes()
    assert detect_bom(data) == encoding
    frame = load_results(BAD / name)
    assert list(frame.columns) == ["model", "category", "biased"]
    assert len(frame) == 4 and frame["biased"].sum() == 2
    if name == "results_utf16le_bom.csv":
        assert frame["category"].tolist()[0] == "\u00e4"


def test_latin1_loads_with_the_encoding_chosen():
    frame = load_results(BAD / "results_latin1_no_bom.csv", encoding="latin-1")
    assert frame["category"].tolist() == ["caf\u00e9", "b"]


def test_apply_design_argument_checks():
    frame = load_results(GOOD_CSV.encode(), name="r.csv")
    design = suggest_design(frame)
    with pytest.raises(AnalysisError, match="needs the results table as a pandas DataFrame"):
        apply_design(GOOD_CSV, design)  # type: ignore[arg-type]
    with pytest.raises(DesignError, match="A design .* is needed, not nothing"):
        apply_design(frame, None)  # type: ignore[arg-type]
    with pytest.raises(DesignError, match="not dict"):
        check_design({"factors": []}, frame)  # type: ignore[arg-type]
    with pytest.raises(AnalysisError, match="has no rows"):
        apply_design(frame.iloc[:0], design)
    with pytest.raises(LoadError, match="has columns but no rows"):
        load_results(pd.DataFrame({"a": []}))
    with pytest.raises(LoadError, match="has no columns"):
        load_results(pd.DataFrame())
    with pytest.raises(LoadError, match="Cannot read a results table from a int"):
        load_results(3)  # type: ignore[arg-type]


def test_design_save_to_bad_path_is_typed(tmp_path):
    design = Design.from_text("factors: [{name: f, values: [a, b]}]")
    with pytest.raises(OutputError, match="does not exist"):
        design.save(tmp_path / "no" / "d.yaml")
    with pytest.raises(OutputError, match="is a folder"):
        design.save(tmp_path)


def test_formula_labels_are_neutralised_in_out(capsys, tmp_path):
    out = tmp_path / "cells.csv"
    assert main(["cells", str(BAD / "results_formula_labels.csv"), "--factors", "model",
                 "--outcome", "biased", "--out", str(out)]) == 0
    text = out.read_text()
    assert "'=HYPERLINK" in text and "'+cmd" in text and "'@SUM(A1)" in text
    assert "\n=" not in text and "\n+" not in text and "\n@" not in text
    assert "\n-1.5," in text  # a number stays a number
