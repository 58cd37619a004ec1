"""``python -m analysis disparity``: JSON numbers equal the API and hand values; options."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.cli import main
from analysis.export import browser_available
from tests.analysis.cli_helpers import run_json, write_csv


@pytest.fixture
def results_csv(tmp_path):
    """Groups A: 1 2 6 7, B: 3 4 8 9 10 (mean of all rows 50/9); baseline 1 in every row."""
    df = pd.DataFrame({"g": ["A"] * 4 + ["B"] * 5, "h": ["x", "y"] * 4 + ["x"],
                       "f": [1, 2, 6, 7, 3, 4, 8, 9, 10], "base": [1.0] * 9})
    return write_csv(tmp_path, df)


def test_json_numbers(results_csv, capsys):
    out = run_json(capsys, "disparity", results_csv, "--feature", "f", "--by", "g",
                   "--permutations", "99", "--seed", "3")
    summary = {r["group"]: r for r in out["summary"]}
    assert summary["A"]["mean"] == pytest.approx(4.0)
    assert summary["B"]["median"] == pytest.approx(8.0)
    assert summary["B"]["variance"] == pytest.approx(np.var([3, 4, 8, 9, 10], ddof=1))
    sel = {r["group"]: r for r in out["selection"]}
    assert sel["A"]["selection_rate"] == pytest.approx(0.5)
    assert sel["B"]["selection_rate"] == pytest.approx(0.6)
    assert out["impact_ratio"] == pytest.approx(0.5 / 0.6)
    assert out["passes_four_fifths"] is True
    metrics = {(r["quantity"], r["metric"]): r for r in out["metrics"]}
    assert metrics[("mean", "range")]["value"] == pytest.approx(6.8 - 4.0)
    assert metrics[("mean", "min_max_ratio")]["value"] == pytest.approx(4.0 / 6.8)
    assert out["dixon"]["note"].startswith("Dixon's Q test not applicable")  # 2 groups
    perm = out["permutation"]
    assert [r["n_permutations"] for r in perm] == [99, 99]
    assert all(1 / 100 <= r["p_value"] <= 1 for r in perm)
    assert out["settings"]["random_state"] == 3


def test_baseline_statistic_and_selection_options(results_csv, capsys):
    out = run_json(capsys, "disparity", results_csv, "--feature", "f", "--by", "g,h",
                   "--baseline", "base", "--statistic", "median", "--standard", "value",
                   "--value", "2", "--direction", "below", "--permutations", "0")
    summary = {r["group"]: r for r in out["summary"]}
    assert summary["A / x"]["mean"] == pytest.approx(np.mean([1, 6]) - 1)  # calibrated
    sel = {r["group"]: r["n_selected"] for r in out["selection"]}
    assert sel == {"A / x": 1, "A / y": 1, "B / x": 1, "B / y": 0}  # f - 1 <= 2
    assert out["settings"]["selection_rule"] == "x <= standard"
    assert out["permutation"] is None
    assert out["settings"]["statistic"] == "median"


def test_strict_comparison_and_polarity(results_csv, capsys):
    strict = run_json(capsys, "disparity", results_csv, "--feature", "f", "--by", "g,h",
                      "--baseline", "base", "--standard", "value", "--value", "2",
                      "--direction", "below", "--comparison", "strict", "--permutations", "0")
    sel = {r["group"]: r["n_selected"] for r in strict["selection"]}
    assert sel == {"A / x": 1, "A / y": 1, "B / x": 0, "B / y": 0}  # f - 1 < 2
    # harmful: selected (favourable) = at or below the mean 50/9 -> A 2/4, B 2/5
    harmful = run_json(capsys, "disparity", results_csv, "--feature", "f", "--by", "g",
                       "--polarity", "harmful", "--permutations", "0")
    assert harmful["settings"]["direction"] == "below"
    assert {r["group"]: r["selection_rate"] for r in harmful["selection"]} == pytest.approx(
        {"A": 0.5, "B": 0.4})
    assert harmful["impact_ratio"] == pytest.approx(0.8)


def test_seed_reproducible(results_csv, capsys):
    a = run_json(capsys, "disparity", results_csv, "--feature", "f", "--by", "g",
                 "--permutations", "49", "--seed", "8")
    b = run_json(capsys, "disparity", results_csv, "--feature", "f", "--by", "g",
                 "--permutations", "49", "--seed", "8")
    assert a["permutation"] == b["permutation"]


def test_text_output_and_csv(results_csv, tmp_path, capsys):
    out_csv = tmp_path / "summary.csv"
    assert main(["disparity", str(results_csv), "--feature", "f", "--by", "g",
                 "--permutations", "9", "--out", str(out_csv)]) == 0
    text = capsys.readouterr().out
    assert "impact ratio 0.833: passes the four-fifths rule" in text
    assert list(pd.read_csv(out_csv)["group"]) == ["A", "B"]


def test_errors_exit_2(results_csv, capsys):
    assert main(["disparity", str(results_csv), "--feature", "g", "--by", "h"]) == 2
    assert "must hold numbers" in capsys.readouterr().err
    assert main(["disparity", str(results_csv), "--feature", "f", "--by", "g",
                 "--quantiles", "0.9"]) == 2
    assert "two numbers" in capsys.readouterr().err


def test_html_figure(results_csv, tmp_path):
    path = tmp_path / "sel.html"
    assert main(["disparity", str(results_csv), "--feature", "f", "--by", "g",
                 "--permutations", "0", "--figure", str(path)]) == 0
    assert "four-fifths" in path.read_text()


@pytest.mark.skipif(not browser_available(), reason="needs a Chrome for kaleido")
def test_png_figure(results_csv, tmp_path):
    path = tmp_path / "box.png"
    assert main(["disparity", str(results_csv), "--feature", "f", "--by", "g",
                 "--permutations", "0", "--figure", str(path), "--figure-kind", "box"]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_saged_statistics_in_the_json(tmp_path, capsys):
    import scipy.stats

    # A: f 1 2 6 7 vs base 1 2 5 9; B: f 3 4 8 vs base 3 5 8
    df = pd.DataFrame({"g": ["A"] * 4 + ["B"] * 3, "f": [1, 2, 6, 7, 3, 4, 8],
                       "base": [1, 2, 5, 9, 3, 5, 8]})
    path = write_csv(tmp_path, df)
    out = run_json(capsys, "disparity", path, "--feature", "f", "--by", "g", "--baseline",
                   "base", "--permutations", "0", "--precision-tolerance", "1",
                   "--percentile", "90")
    stats = {r["group"]: r for r in out["saged_statistics"]}
    # |f - base|: A 0 0 1 2 -> 3/4 within 1; B 0 1 0 -> 3/3
    assert stats["A"]["precision"] == pytest.approx(0.75)
    assert stats["B"]["precision"] == pytest.approx(1.0)
    assert stats["A"]["pearson"] == pytest.approx(scipy.stats.pearsonr([1, 2, 6, 7],
                                                                       [1, 2, 5, 9])[0])
    assert stats["B"]["spearman"] == pytest.approx(1.0)
    # on the calibrated f - base (A: 0 0 1 -2), like the mean and the selection rate
    assert stats["A"]["range"] == 3 and stats["A"]["percentile"] == pytest.approx(0.7)
    assert stats["A"]["kl_divergence"] >= 0
    quantities = {r["quantity"] for r in out["saged_disparity"]}
    assert {"kl_divergence", "precision", "pearson", "mode"} <= quantities
    # z-score normalisation first: the calibrated means are divided by the pooled std
    z = run_json(capsys, "disparity", path, "--feature", "f", "--by", "g", "--baseline",
                 "base", "--permutations", "0", "--normalize", "zscore")
    pooled = np.concatenate([df["f"], df["base"]]).astype(float)
    means = {r["group"]: r["mean"] for r in z["summary"]}
    assert means["A"] == pytest.approx(np.mean([0, 0, 1, -2]) / pooled.std())
    assert z["normalization"] == "zscore"
