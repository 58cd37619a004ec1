"""``python -m analysis subgroups``: JSON shape and numbers, figure output, errors."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.cli import main
from analysis.export import browser_available
from tests.analysis.cli_helpers import deviation_rows, run_json, write_csv


@pytest.fixture
def results_csv(tmp_path):
    """a x b with deviations: (a1,b1) 2/10, (a1,b2) 10/20, (a2,b1) 3/30, (a2,b2) 20/40."""
    cells = [("a1", "b1", 10, 2), ("a1", "b2", 20, 10), ("a2", "b1", 30, 3),
             ("a2", "b2", 40, 20)]
    return write_csv(tmp_path, deviation_rows(cells, ["a", "b"], "biased", model="m"))


def test_json_array_with_factor_keys_and_numbers(results_csv, capsys):
    out = run_json(capsys, "subgroups", results_csv, "--outcome", "biased", "--factors",
                   "a,b", "--level", "2")
    assert len(out) == 8
    keys = {"a", "b", "level", "n", "deviations", "deviation_rate", "log_disparity", "ci_low",
            "ci_high", "p_value", "p_adjusted"}
    assert all(keys <= set(o) for o in out)
    a1 = out[0]
    assert (a1["a"], a1["b"], a1["level"], a1["n"], a1["deviations"]) == ("a1", None, 1, 30, 12)
    assert a1["deviation_rate"] == pytest.approx(0.4)
    assert a1["log_disparity"] == pytest.approx(math.log(12 * 47 / (18 * 23)))
    pair = out[4]
    assert (pair["a"], pair["b"], pair["level"], pair["n"]) == ("a1", "b1", 2, 10)
    assert pair["log_disparity"] == pytest.approx(math.log(2 * 57 / (8 * 33)))
    assert pair["small_n"] is True


def test_level_one_and_where_subset(results_csv, capsys):
    out = run_json(capsys, "subgroups", results_csv, "--outcome", "biased", "--factors",
                   "a,b,model", "--level", "1", "--where", "a=a2")
    by_name = {(o["a"], o["b"], o["model"]): o for o in out}
    assert len(out) == 4  # a=a2, b=b1, b=b2, model=m
    whole = by_name[("a2", None, None)]
    assert whole["n"] == 70 and whole["log_disparity"] is None  # the whole subset
    assert by_name[(None, None, "m")]["ld_undefined"] is True
    b1 = by_name[(None, "b1", None)]
    assert b1["log_disparity"] == pytest.approx(math.log(3 * 20 / (27 * 20)))


def test_fisher_option(results_csv, capsys):
    from scipy.stats import fisher_exact

    out = run_json(capsys, "subgroups", results_csv, "--outcome", "biased", "--factors", "a",
                   "--test", "fisher")
    assert out[0]["p_value"] == pytest.approx(fisher_exact([[12, 18], [23, 47]]).pvalue)


def test_table_output_and_csv(results_csv, tmp_path, capsys):
    out_csv = tmp_path / "sub.csv"
    assert main(["subgroups", str(results_csv), "--outcome", "biased", "--factors", "a,b",
                 "--out", str(out_csv)]) == 0
    printed = capsys.readouterr().out
    assert "a = a1, b = b1" in printed and "log_disparity" in printed
    assert len(pd.read_csv(out_csv)) == 8


def test_html_figure(results_csv, tmp_path, capsys):
    path = tmp_path / "sunburst.html"
    run_json(capsys, "subgroups", results_csv, "--outcome", "biased", "--factors", "a,b",
             "--figure", path)
    text = path.read_text(encoding="utf-8")
    assert '"type":"sunburst"' in text and "a=a1\\u002fb=b1" in text


@pytest.mark.browser
@pytest.mark.skipif(not browser_available(), reason="needs a Chrome/Chromium for kaleido")
def test_svg_figure(results_csv, tmp_path, capsys):
    path = tmp_path / "sunburst.svg"
    run_json(capsys, "subgroups", results_csv, "--outcome", "biased", "--factors", "a,b",
             "--figure", path)
    assert path.read_text(encoding="utf-8").lstrip().startswith("<svg")


def test_errors_exit_2(results_csv, capsys):
    assert main(["subgroups", str(results_csv), "--outcome", "biased", "--factors", "a,b",
                 "--level", "3"]) == 2
    assert "between 1 and 2" in capsys.readouterr().err
    assert main(["subgroups", str(results_csv), "--factors", "a"]) == 2
    assert "needs an outcome" in capsys.readouterr().err
