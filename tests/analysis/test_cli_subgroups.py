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
    payload = run_json(capsys, "subgroups", results_csv, "--outcome", "biased", "--factors",
                       "a,b", "--level", "2")
    out = payload["subgroups"]
    assert len(out) == 8
    assert payload["settings"]["n_rows"] == 100 and payload["settings"]["test"] == "auto"
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
                   "a,b,model", "--level", "1", "--where", "a=a2")["subgroups"]
    by_name = {(o["a"], o["b"], o["model"]): o for o in out}
    assert len(out) == 3  # a=a2, b=b1, b=b2; model=m has the rows of a=a2
    whole = by_name[("a2", None, None)]
    assert whole["n"] == 70 and whole["log_disparity"] is None  # the whole subset
    assert whole["ld_undefined"] is True and whole["same_rows_as"] == "model = m"
    b1 = by_name[(None, "b1", None)]
    assert b1["log_disparity"] == pytest.approx(math.log(3 * 20 / (27 * 20)))


def test_fisher_option(results_csv, capsys):
    from scipy.stats import fisher_exact

    out = run_json(capsys, "subgroups", results_csv, "--outcome", "biased", "--factors", "a",
                   "--test", "fisher")["subgroups"]
    assert out[0]["test"] == "fisher"
    assert out[0]["p_value"] == pytest.approx(fisher_exact([[12, 18], [23, 47]]).pvalue)


def test_where_duplicates_counted_once_and_exclude(results_csv, capsys):
    from statsmodels.stats.multitest import multipletests

    # --where b=b2 fixes b: "a = ai, b = b2" is "a = ai", and "b = b2" is the whole subset
    payload = run_json(capsys, "subgroups", results_csv, "--outcome", "biased", "--factors",
                       "a,b", "--level", "2", "--where", "b=b2")
    out = payload["subgroups"]
    assert [(o["a"], o["b"]) for o in out] == [
        ("a1", None), ("a2", None), (None, "b2")]
    assert out[0]["same_rows_as"] == "a = a1, b = b2"
    assert payload["settings"]["n_subgroups"] == 5 and payload["settings"]["n_distinct"] == 3
    # a1 10 of 20 vs a2 20 of 40 (b2 rows): equal rates, LD = 0; two tests in the family
    p = [o["p_value"] for o in out if o["p_value"] is not None]
    assert len(p) == 2
    assert [o["p_adjusted"] for o in out[:2]] == pytest.approx(
        multipletests(p, method="fdr_bh")[1])
    # --exclude is the complement of --where
    excluded = run_json(capsys, "subgroups", results_csv, "--outcome", "biased", "--factors",
                        "a,b", "--level", "2", "--exclude", "b=b1")
    assert excluded["subgroups"] == out
    assert excluded["settings"]["n_rows"] == 60


def test_missing_outcome_rows_are_counted(results_csv, tmp_path, capsys):
    frame = pd.read_csv(results_csv)
    frame["biased"] = frame["biased"].astype(float)
    frame.loc[[0, 1, 2], "biased"] = float("nan")
    path = write_csv(tmp_path, frame, "missing.csv")
    payload = run_json(capsys, "subgroups", path, "--outcome", "biased", "--factors", "a")
    assert payload["settings"]["n_missing_outcome"] == 3
    assert payload["subgroups"][0]["n"] == 27  # a1: 30 rows, 3 without an outcome
    assert main(["subgroups", str(path), "--outcome", "biased", "--factors", "a"]) == 0
    assert "3 rows without an outcome are left out" in capsys.readouterr().out


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
    # no --outcome: the suggested one (biased), as the API; a table without any is refused
    assert main(["subgroups", str(results_csv), "--factors", "a"]) == 0
    assert "the deviation is biased = 1, the outcome suggested" in capsys.readouterr().err
    frame = pd.read_csv(results_csv).assign(biased=lambda t: t["biased"] * 0.5)
    frame.to_csv(results_csv, index=False)
    assert main(["subgroups", str(results_csv), "--factors", "a"]) == 2
    assert "none could be suggested from the table" in capsys.readouterr().err
