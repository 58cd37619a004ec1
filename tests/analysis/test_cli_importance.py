"""``python -m analysis importance``: JSON shape and numbers, references, filters, refusals,
figure and table output."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from analysis.cli import main
from analysis.design import Design, apply_design
from analysis.export import browser_available
from analysis.importance import factor_importance
from tests.analysis.cli_helpers import deviation_rows, run_json, write_csv
from tests.app.apptools import ROOT

SSQA = ROOT / "sample_data" / "ssqa_simulated.csv.gz"
SSQA_DESIGN = ROOT / "sample_data" / "ssqa_simulated.design.yaml"
KEYS = ["term", "factor", "value", "coef", "std_err", "z", "p_value", "odds_ratio", "ci_low",
        "ci_high"]


@pytest.fixture
def results_csv(tmp_path):
    """Factor a (a0, a1, a2) x b (b0, b1) with known counts per cell."""
    cells = [("a0", "b0", 100, 30), ("a0", "b1", 80, 40), ("a1", "b0", 90, 20),
             ("a1", "b1", 70, 45), ("a2", "b0", 60, 10), ("a2", "b1", 50, 30)]
    return write_csv(tmp_path, deviation_rows(cells, ["a", "b"], "biased", model="m"))


def test_json_array_one_object_per_term(results_csv, capsys):
    payload = run_json(capsys, "importance", results_csv, "--outcome", "biased", "--factors",
                       "a,b", "--reference", "a=a0", "--reference", "b=b0")
    assert set(payload) == {"terms", "tests", "notes", "settings"}
    out = payload["terms"]
    assert [o["term"] for o in out] == ["(intercept)", "a[a1]", "a[a2]", "b[b1]"]
    assert all(set(KEYS) <= set(o) for o in out)
    intercept = out[0]
    assert intercept["factor"] is None and intercept["value"] is None
    assert intercept["p_adjusted"] is None  # NaN -> null
    assert out[1]["factor"] == "a" and out[1]["value"] == "a1"
    for o in out:
        assert o["odds_ratio"] == pytest.approx(math.exp(o["coef"]))
        assert o["ci_low"] < o["odds_ratio"] < o["ci_high"]
        assert o["z"] == pytest.approx(o["coef"] / o["std_err"])


def test_json_equals_the_api_on_the_ssqa_sample(capsys):
    out = run_json(capsys, "importance", SSQA, "--design", SSQA_DESIGN, "--factors",
                   "model,cot,prompt_style,pachankis_cluster,gender", "--exclude",
                   "prompt_style=base", "--interaction", "model:cot")["terms"]
    design = Design.load(SSQA_DESIGN)
    results = apply_design(pd.read_csv(SSQA), design)
    fit = factor_importance(results, design,
                            factors=["model", "cot", "prompt_style", "pachankis_cluster",
                                     "gender"],
                            exclude={"prompt_style": ["base"]}, interactions=["model:cot"])
    assert [o["term"] for o in out] == fit.terms["term"].tolist()
    for o, (_, row) in zip(out, fit.terms.iterrows(), strict=True):
        for key in ("coef", "std_err", "p_value", "ci_low", "ci_high"):
            assert o[key] == pytest.approx(row[key], rel=1e-12, abs=1e-300)
    assert out[-1]["term"] == "model[sim-model-B]:cot[yes]"
    assert out[-1]["factor"] == "model:cot"


def test_json_has_the_likelihood_ratio_tests_settings_and_missing_rows(results_csv, tmp_path,
                                                                       capsys):
    from scipy import stats

    frame = pd.read_csv(results_csv)
    frame["biased"] = frame["biased"].astype(float)
    frame.loc[:2, "biased"] = np.nan  # three rows without an outcome
    path = tmp_path / "missing.csv"
    frame.to_csv(path, index=False)
    payload = run_json(capsys, "importance", path, "--outcome", "biased", "--factors", "a,b",
                       "--reference", "a=a0", "--reference", "b=b0")
    settings = payload["settings"]
    assert settings["n_missing_outcome"] == 3
    assert settings["n_rows"] == len(frame) - 3
    assert settings["references"] == {"a": "a0", "b": "b0"}
    tests = {t["factor"]: t for t in payload["tests"]}
    assert set(tests) == {"a", "b"}
    # LR test of b: twice the log-likelihood gain over the fit without b (statsmodels),
    # on the rows with an outcome
    kept = frame.dropna(subset=["biased"])
    full = sm_loglik(kept, ["a", "b"])
    reduced = sm_loglik(kept, ["a"])
    lr = 2 * (full - reduced)
    assert tests["b"]["lr_statistic"] == pytest.approx(lr, rel=1e-8)
    assert tests["b"]["df"] == 1
    assert tests["b"]["p_value"] == pytest.approx(stats.chi2.sf(lr, 1), rel=1e-8)


def sm_loglik(frame, factors):
    """Log-likelihood of the main-effects logistic fit, by statsmodels."""
    import statsmodels.formula.api as smf

    formula = "biased ~ " + " + ".join(f"C({f})" for f in factors)
    return float(smf.logit(formula, frame).fit(disp=0).llf)


def test_reference_option_recodes_the_comparison(results_csv, capsys):
    default = run_json(capsys, "importance", results_csv, "--outcome", "biased", "--factors",
                       "a,b", "--reference", "a=a0", "--reference", "b=b0")["terms"]
    flipped = run_json(capsys, "importance", results_csv, "--outcome", "biased", "--factors",
                       "a,b", "--reference", "a=a0", "--reference", "b=b1")["terms"]
    assert flipped[-1]["term"] == "b[b0]"
    assert flipped[-1]["coef"] == pytest.approx(-default[-1]["coef"], abs=1e-10)
    assert flipped[-1]["std_err"] == pytest.approx(default[-1]["std_err"], abs=1e-10)


def test_where_filter_with_a_factor_outside_the_model(results_csv, capsys):
    out = run_json(capsys, "importance", results_csv, "--outcome", "biased", "--factors", "a",
                   "--reference", "a=a0", "--where", "b=b1")["terms"]
    # a1 vs a0 among b1 rows: 45/70 vs 40/80
    assert out[1]["coef"] == pytest.approx(math.log((45 / 25) / (40 / 40)), abs=1e-10)


def test_refusal_exits_2_with_command_line_fixes(capsys):
    code = main(["importance", str(SSQA), "--design", str(SSQA_DESIGN), "--factors",
                 "model,cot,prompt_style,pachankis_cluster,gender"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: These factors cannot all be in one model")
    assert "prompt_style = 'base', pachankis_cluster = 'no stigma'" in err
    assert "--exclude prompt_style=base" in err


def test_separation_option(results_csv, tmp_path, capsys):
    frame = pd.read_csv(results_csv)
    frame.loc[frame["a"] == "a2", "biased"] = 0
    path = tmp_path / "sep.csv"
    frame.to_csv(path, index=False)
    argv = ["importance", str(path), "--outcome", "biased", "--factors", "a,b",
            "--reference", "a=a0", "--reference", "b=b0"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "a = 'a2': no deviation in 110 rows" in err and "--on-separation drop" in err
    payload = run_json(capsys, *argv, "--on-separation", "drop")
    assert [o["term"] for o in payload["terms"]] == ["(intercept)", "a[a1]", "b[b1]"]
    assert any("a2" in note for note in payload["notes"])  # the dropped value is named


def test_table_output_figure_and_csv(results_csv, tmp_path, capsys):
    figure, table = tmp_path / "importance.html", tmp_path / "terms.csv"
    assert main(["importance", str(results_csv), "--outcome", "biased", "--factors", "a,b",
                 "--reference", "a=a0", "--reference", "b=b0", "--figure", str(figure),
                 "--out", str(table), "--scale", "coef"]) == 0
    text = capsys.readouterr().out
    assert "Deviation probability at all references" in text
    assert "Likelihood-ratio test per factor" in text
    assert "not adjusted for multiple testing" in text
    assert "<html" in figure.read_text()[:500].lower()
    saved = pd.read_csv(table)
    assert saved["term"].tolist() == ["(intercept)", "a[a1]", "a[a2]", "b[b1]"]
    assert "p_adjusted" in saved.columns


def test_module_entry_point_runs_in_a_fresh_process(results_csv):
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "importance", str(results_csv), "--outcome",
         "biased", "--factors", "a,b", "--reference", "a=a0", "--reference", "b=b0",
         "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 4


@pytest.mark.skipif(not browser_available(), reason="image export needs chromium")
def test_figure_as_svg(results_csv, tmp_path, capsys):
    figure = tmp_path / "importance.svg"
    assert main(["importance", str(results_csv), "--outcome", "biased", "--factors", "a,b",
                 "--reference", "a=a0", "--reference", "b=b0", "--figure", str(figure)]) == 0
    assert figure.read_text()[:200].lstrip().startswith("<svg")


def test_adjust_option_sets_p_adjusted_settings_and_sentence(results_csv, capsys):
    """``--adjust holm``: p_adjusted is Holm over the terms (statsmodels
    ``multipletests``), the JSON settings say so, the table output's sentence names it."""
    from statsmodels.stats.multitest import multipletests

    payload = run_json(capsys, "importance", results_csv, "--outcome", "biased", "--factors",
                       "a,b", "--adjust", "holm")
    assert payload["settings"]["adjust"] == "holm"
    terms = payload["terms"][1:]
    expected = multipletests([t["p_value"] for t in terms], method="holm")[1]
    np.testing.assert_allclose([t["p_adjusted"] for t in terms], expected, rtol=1e-12)
    assert main(["importance", str(results_csv), "--outcome", "biased", "--factors", "a,b",
                 "--adjust", "bonferroni"]) == 0
    assert "p_adjusted is the Bonferroni adjustment over the terms" in capsys.readouterr().out
