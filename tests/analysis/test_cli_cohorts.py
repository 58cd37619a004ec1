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


def test_time_capsule_options(tmp_path, capsys):
    """--demographics: shares of all answers, Kruskal-Wallis beside chi-square, the table."""
    rows = []
    for decade, counts in {"1950s": {"woman": 4, "man": 30, "neither": 16},
                           "2010s": {"woman": 20, "man": 14, "neither": 16}}.items():
        rows += [{"decade": decade, "label": c, "demographic": "gender", "prompt": "ceo"}
                 for c, k in counts.items() for _ in range(k)]
    rows += [{"decade": d, "label": c, "demographic": "race", "prompt": "maths"}
             for d in ("1950s", "2010s") for c in ("White", "Black", "neither") for _ in range(5)]
    path = write_csv(tmp_path, rows)
    assert main(["cohorts", str(path), "--category", "label", "--cohort", "decade", "--by",
                 "prompt", "--demographics", "gender=woman,man,non-binary;race=White,Black",
                 "--demographic-col", "demographic", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    table = {r["decade"]: r for r in out["capsule_table"]}
    # * p < 0.05, and still after Benjamini-Hochberg over the 5 subcategory tests: *†
    assert table["1950s"]["gender / ceo / woman*†"] == pytest.approx(8.0)
    assert table["1950s"]["gender / ceo / non-binary"] == 0.0
    kinds = {t["test"] for t in out["capsule_tests"]}
    assert kinds == {"Kruskal-Wallis", "Kruskal-Wallis among subcategories", "chi-square"}
    woman = next(t for t in out["capsule_tests"] if t["label"] == "woman")
    groups = [np.r_[np.ones(4), np.zeros(46)], np.r_[np.ones(20), np.zeros(30)]]
    assert woman["statistic"] == pytest.approx(stats.kruskal(*groups).statistic)
    # Plain --categories keeps the left-out answers unless --renormalise.
    assert main(["cohorts", str(path), "--category", "label", "--cohort", "decade",
                 "--categories", "woman,man", "--by", "prompt", "--renormalise", "--json"]) == 0
    pct = {(r["prompt"], r["decade"], r["label"]): r["percent"]
           for r in json.loads(capsys.readouterr().out)["distribution"]}
    assert pct[("ceo", "1950s", "woman")] == pytest.approx(100 * 4 / 34)
    assert main(["cohorts", str(path), "--category", "label", "--cohort", "decade",
                 "--demographics", "gender=woman,man;race=White,Black"]) == 2
    assert "--demographic-col" in capsys.readouterr().err
