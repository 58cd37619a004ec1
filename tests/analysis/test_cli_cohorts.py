"""``python -m analysis cohorts``: percentages, spread and chi-square in the JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from analysis.cli import main
from tests.analysis.cli_helpers import write_csv


@pytest.fixture
def results_csv(tmp_path):
    counts = {("m1", "woman"): 10, ("m1", "man"): 30, ("m2", "woman"): 20, ("m2", "man"): 20}
    rows = [{"model": m, "portrays": c, "role": "ceo"} for (m, c), k in counts.items()
            for _ in range(k)]
    return write_csv(tmp_path, rows)


def test_json(results_csv, capsys):
    assert main(["cohorts", str(results_csv), "--category", "portrays", "--cohort", "model",
                 "--by", "role", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    pct = {(r["model"], r["portrays"]): r["percent"] for r in out["distribution"]}
    assert pct[("m1", "woman")] == pytest.approx(25.0)
    assert pct[("m2", "man")] == pytest.approx(50.0)
    spread = {r["model"]: r["sd_percent"] for r in out["spread_within_cohorts"]}
    assert spread["m1"] == pytest.approx(np.std([25, 75], ddof=1))
    assert spread["m2"] == pytest.approx(0.0)
    test = out["homogeneity"][0]
    ref = stats.chi2_contingency(np.array([[30, 10], [20, 20]]), correction=False)
    assert test["statistic"] == pytest.approx(ref.statistic)
    assert test["p_value"] == pytest.approx(ref.pvalue)
    assert test["method"] == "chi-square"


def test_text_and_figure(results_csv, tmp_path, capsys):
    fig = tmp_path / "lines.html"
    assert main(["cohorts", str(results_csv), "--category", "portrays", "--cohort", "model",
                 "--figure", str(fig), "--figure-kind", "line"]) == 0
    assert "Chi-square test of homogeneity" in capsys.readouterr().out
    assert fig.stat().st_size > 1000


def test_error(results_csv, capsys):
    assert main(["cohorts", str(results_csv), "--category", "model", "--cohort", "model"]) == 2
    assert "must all differ" in capsys.readouterr().err


def test_missing_category_rows_counted_and_boolean_categories(tmp_path, capsys):
    rows = ([{"model": "m1", "cot": True}] * 6 + [{"model": "m1", "cot": False}] * 4
            + [{"model": "m2", "cot": True}] * 3 + [{"model": "m2", "cot": False}] * 7
            + [{"model": "m2", "cot": None}] * 2)
    path = write_csv(tmp_path, rows)
    assert main(["cohorts", str(path), "--category", "cot", "--cohort", "model",
                 "--categories", "true,false", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["n_missing_cot"] == 2 and out["settings"]["n_rows"] == 22
    pct = {(r["model"], r["cot"]): r["percent"] for r in out["distribution"]}
    assert pct[("m1", "true")] == pytest.approx(60.0)
    assert pct[("m2", "true")] == pytest.approx(30.0)  # 3 of the 10 with a value
