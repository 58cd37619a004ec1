"""``python -m analysis ecdf``: JSON shape, deviation metric and KS numbers, figure, errors."""

from __future__ import annotations

import pytest
from scipy import stats

from analysis.cli import main
from tests.analysis.cli_helpers import deviation_rows, run_json, write_csv


@pytest.fixture
def results_csv(tmp_path):
    """model x g: m1 rates 1/10, 4/10, 0/5; m2 rates 6/10, 2/4; m3 rate 3/6 (g1 only)."""
    cells = [("m1", "g1", 10, 1), ("m1", "g2", 10, 4), ("m1", "g3", 5, 0),
             ("m2", "g1", 10, 6), ("m2", "g2", 4, 2), ("m3", "g1", 6, 3)]
    return write_csv(tmp_path, deviation_rows(cells, ["model", "g"], "dev", other="x"))


def test_two_groups_json(results_csv, capsys):
    out = run_json(capsys, "ecdf", results_csv, "--outcome", "dev", "--factors", "g",
                   "--by", "model", "--where", "model=m1,m2")
    assert set(out["groups"]) == {"m1", "m2"}
    assert out["groups"]["m1"]["deviation_metric"] == pytest.approx(0.5 / 3)
    assert out["groups"]["m1"]["n_subgroups"] == 3
    assert out["groups"]["m2"]["deviation_metric"] == pytest.approx(0.55)
    ref = stats.ks_2samp([0.1, 0.4, 0.0], [0.6, 0.5])
    assert out["ks"] == {"statistic": pytest.approx(ref.statistic),
                         "p_value": pytest.approx(ref.pvalue), "method": "exact",
                         "n_resamples": 0, "mc_se": 0.0, "note": ""}
    assert out["settings"]["n_rows"] == 39 and out["settings"]["n_missing_outcome"] == 0


def test_ideal_value(results_csv, capsys):
    out = run_json(capsys, "ecdf", results_csv, "--outcome", "dev", "--factors", "g",
                   "--by", "model", "--ideal", "0.5")
    assert out["groups"]["m1"]["deviation_metric"] == pytest.approx((0.4 + 0.1 + 0.5) / 3)
    assert out["groups"]["m3"]["deviation_metric"] == pytest.approx(0.0)  # one subgroup


def test_three_groups_pairwise_list(results_csv, capsys):
    out = run_json(capsys, "ecdf", results_csv, "--outcome", "dev", "--factors", "g,other",
                   "--by", "model")
    assert isinstance(out["ks"], list) and len(out["ks"]) == 3
    assert [(k["group_a"], k["group_b"]) for k in out["ks"]] == [
        ("m1", "m2"), ("m1", "m3"), ("m2", "m3")]
    assert {"statistic", "p_value", "p_adjusted", "n_a", "n_b"} <= set(out["ks"][0])
    assert out["groups"]["m3"]["n_subgroups"] == 1
    m3 = [k for k in out["ks"] if "m3" in (k["group_a"], k["group_b"])]
    assert all(k["method"] == "refused" and k["p_value"] is None for k in m3)


def test_one_subgroup_per_curve_exits_2(results_csv, capsys):
    assert main(["ecdf", str(results_csv), "--outcome", "dev", "--factors", "other",
                 "--by", "model"]) == 2
    assert "single subgroup" in capsys.readouterr().err


def test_text_output_and_figure(results_csv, tmp_path, capsys):
    fig = tmp_path / "ecdf.html"
    assert main(["ecdf", str(results_csv), "--outcome", "dev", "--factors", "g", "--by",
                 "model", "--figure", str(fig)]) == 0
    printed = capsys.readouterr().out
    assert "deviation_metric" in printed and "Kolmogorov-Smirnov" in printed
    assert "0.2 cutoff" in fig.read_text(encoding="utf-8")


def test_by_in_factors_is_an_error(results_csv, capsys):
    assert main(["ecdf", str(results_csv), "--outcome", "dev", "--factors", "g,model",
                 "--by", "model"]) == 2
    assert "--by model" in capsys.readouterr().err
