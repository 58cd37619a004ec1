"""DiscrimEval with few decision questions (issue 38): no degenerate Wald test is printed.

lm-eval's discrim_eval has a handful of decision questions (the clusters) and a race factor
with up to 5 values inside each: the cluster-robust covariance of the race columns then has
a rank below their number (at most G for CR2, G - 1 for CR1), and a chi-square of its
pseudo-inverse printed 1.0e15 / NaN; an unconverged mixed fit gave a negative chi-square.
Such tests are now refused with the reason. The design the importer writes runs as it is.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from analysis.design import Design, apply_design
from analysis.importance_linear import _wald_tests, linear_importance
from tests.analysis.cli_helpers import run_json
from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

RACES = ["white", "asian", "black", "hispanic", "native american"]


def _few_questions(seed: int = 3, g: int = 3):
    rng = np.random.default_rng(seed)
    rows = 60
    q = np.repeat(np.arange(g), rows)
    race = rng.choice(RACES, g * rows)
    frame = pd.DataFrame({"decision_question_id": q.astype(str), "race": race,
                          "logit_yes": rng.normal(0, 1, g)[q] + rng.normal(0, 1, g * rows)})
    design = Design.from_dict({
        "factors": [{"name": "race", "values": RACES, "reference": "white"}],
        "outcome": {"column": "logit_yes", "type": "continuous", "mapping": "below",
                    "threshold": 0.0}, "cluster": "decision_question_id"})
    return apply_design(frame, design), design


@pytest.mark.parametrize("small_sample", ["cr2", "cr1", "none"])
def test_a_four_column_race_test_over_three_questions_is_refused(small_sample):
    results, design = _few_questions()
    fit = linear_importance(results, design, small_sample=small_sample)
    row = fit.factor_tests.set_index("factor").loc["race"]
    assert row["df"] == 4 and math.isnan(row["p_value"]) and math.isnan(row["statistic"])
    rank = 3 if small_sample == "cr2" else 2  # CR2: at most G; CR1 scores sum to 0
    assert f"rank {rank} for 4" in row["reason"]
    assert any("no Wald test of race" in n or "no test of all 4" in n for n in fit.notes)
    # the single coefficients keep their (Satterthwaite / G - 1 / z) tests
    assert fit.terms["p_value"].iloc[1:].notna().all()


def test_a_non_positive_definite_covariance_is_never_a_chi_square():
    """An unconverged mixed fit's covariance with a negative eigenvalue: refused, not a
    negative chi-square with p NaN."""
    from analysis.importance import _Term

    terms = [_Term("(intercept)", None, None, ()), _Term("f[b]", "f", "b", (("f", 1),)),
             _Term("f[c]", "f", "c", (("f", 2),))]
    cov = np.array([[1.0, 0, 0], [0, 1.0, 2.0], [0, 2.0, 1.0]])  # eigenvalues 3, -1
    out = _wald_tests(["(intercept)", "f[b]", "f[c]"], terms, np.array([0.1, 0.5, -0.2]),
                      cov, ["f"], [])
    row = out.set_index("factor").loc["f"]
    assert math.isnan(row["statistic"]) and math.isnan(row["p_value"])
    assert "not positive definite" in row["reason"]


def test_the_imported_discrim_eval_design_runs_as_it_is(tmp_path, capsys):
    """``import lm-eval`` leaves the one-valued ``model`` factor out of the design it
    writes (with a note); ``importance --design`` fits the linear model (CR2,
    Satterthwaite df), with no degenerate test: every factor test has a finite p-value or
    a reason. (A one-valued factor in a hand-written design is left out by importance with
    a note: ``test_a_one_valued_design_factor_is_left_out_with_a_note``.)"""
    from analysis.cli import main

    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_discrim_eval_explicit_*")
    data, design = tmp_path / "de.csv", tmp_path / "de.yaml"
    assert main(["import", "lm-eval", str(path), "--out", str(data),
                 "--design-out", str(design)]) == 0
    capsys.readouterr()
    assert "model" not in Design.load(design).names
    out = run_json(capsys, "importance", data, "--design", design)
    assert "model" not in {t["factor"] for t in out["terms"]}
    assert out["settings"]["df_method"] == "satterthwaite"
    for test in out["tests"]:
        ok = test["p_value"] is not None and 0 <= test["p_value"] <= 1
        assert ok or test["reason"]
        assert test["statistic"] is None or abs(test["statistic"]) < 1e6
    assert all(t["df"] > 0 and t["n_clusters"] == 4 for t in out["terms"])
    mixed = run_json(capsys, "importance", data, "--design", design, "--mixed",
                     "--accept-unconverged")
    for test in mixed["tests"]:
        assert (test["p_value"] is not None and test["statistic"] >= 0) or test["reason"]


def test_a_one_valued_design_factor_is_left_out_with_a_note(tmp_path, capsys):
    """A design that names a factor with one value in the table (the imported design with
    ``model`` put back, as older importers wrote it) runs: importance leaves the factor
    out and says so, and fits the other factors."""
    from dataclasses import replace

    from analysis.cli import main
    from analysis.design import Factor

    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_discrim_eval_explicit_*")
    data, design = tmp_path / "de.csv", tmp_path / "de.yaml"
    assert main(["import", "lm-eval", str(path), "--out", str(data),
                 "--design-out", str(design)]) == 0
    capsys.readouterr()
    model = str(pd.read_csv(data)["model"].iloc[0])
    d = Design.load(design)
    d = replace(d, factors=(*d.factors, Factor("model", "model", (model,), model)))
    d.save(design)
    assert "model" in Design.load(design).names
    assert main(["importance", str(data), "--design", str(design), "--json"]) in (0, None)
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "model" not in {t["factor"] for t in out["terms"]}
    assert {"gender", "race"} <= {t["factor"] for t in out["terms"]}
    assert (f"factor model takes only the value {model!r} in the table: left out of the "
            "model") in captured.err
