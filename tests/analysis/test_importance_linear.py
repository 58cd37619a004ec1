"""Continuous outcomes in factor importance (analysis/importance_linear.py).

Checked against statsmodels on the rows (OLS, cluster-robust OLS, MixedLM) and, on a
real lm-eval DiscrimEval run, against the bias coefficients lm-eval wrote itself.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats

from analysis.design import Design, Outcome, apply_design, make_factor
from analysis.importance import ImportanceRefusal, factor_importance
from analysis.importance_linear import linear_importance
from analysis.importers import import_results
from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

RUN = LM_EVAL_BIAS_FIXTURE / "dummy-bias"


@pytest.fixture(scope="module")
def discrim():
    (path,) = RUN.glob("samples_discrim_eval_explicit_*.jsonl")
    return import_results("lm-eval", [path])


def _lm_eval_results() -> dict:
    (path,) = RUN.glob("results_*.json")
    return json.loads(path.read_text())["results"]["discrim_eval_explicit"]


def _rows_X(frame: pd.DataFrame) -> pd.DataFrame:
    X = pd.DataFrame({"const": 1.0,
                      "asian": (frame["race"] == "asian").astype(float),
                      "black": (frame["race"] == "black").astype(float),
                      "female": (frame["gender"] == "female").astype(float),
                      "age": (frame["age"] - frame["age"].mean()) / frame["age"].std()})
    return X


def test_cr1_normal_linear_model_equals_statsmodels_cluster_robust_ols(discrim):
    """``small_sample="none"`` is statsmodels' cluster-robust OLS (the default before
    issue 38; the default is now CR2 with Satterthwaite df, test_small_sample.py)."""
    frame, design = discrim.frame, discrim.design
    fit = linear_importance(frame, design, factors=["race", "gender"], small_sample="none")
    ref = sm.OLS(frame["logit_yes"], _rows_X(frame)).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(frame["decision_question_id"])[0]})
    assert fit.covariance == "cluster" and fit.n_clusters == 4
    np.testing.assert_allclose(fit.terms["coef"], ref.params, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fit.terms["std_err"], ref.bse, rtol=1e-10)
    np.testing.assert_allclose(fit.terms["p_value"], ref.pvalues, rtol=1e-8)
    np.testing.assert_allclose(fit.terms[["ci_low", "ci_high"]], ref.conf_int(), rtol=1e-8)
    assert fit.r2 == pytest.approx(ref.rsquared)
    assert any("standardised" in n for n in fit.notes)


def test_without_cluster_equals_plain_ols_with_t_tests(discrim):
    frame, design = discrim.frame, discrim.design
    fit = linear_importance(frame, design, factors=["race", "gender"], cluster=None)
    ref = sm.OLS(frame["logit_yes"], _rows_X(frame)).fit()
    np.testing.assert_allclose(fit.terms["std_err"], ref.bse, rtol=1e-10)
    np.testing.assert_allclose(fit.terms["p_value"], ref.pvalues, rtol=1e-8)
    assert fit.residual_std == pytest.approx(np.sqrt(ref.scale))


def test_mixed_model_equals_the_bias_numbers_lm_eval_wrote(discrim):
    frame, design = discrim.frame, discrim.design
    own = _lm_eval_results()
    # lm-eval's model does not converge on the dummy's noise: refused by default ...
    with pytest.raises(ImportanceRefusal, match=r"did not converge.*random-effects "
                                                r"intercept") as info:
        linear_importance(frame, design, factors=["race", "gender"], mixed=True)
    assert info.value.reason == "not_converged"
    # ... and, accepted as lm-eval accepts it, gives lm-eval's numbers
    fit = linear_importance(frame, design, factors=["race", "gender"], mixed=True,
                            accept_unconverged=True)
    coef = dict(zip(fit.terms["term"], fit.terms["coef"], strict=True))
    assert coef["race[black]"] == pytest.approx(own["black_bias,none"], abs=1e-9)
    assert coef["race[asian]"] == pytest.approx(own["asian_bias,none"], abs=1e-9)
    assert coef["gender[female]"] == pytest.approx(own["female_bias,none"], abs=1e-9)
    assert abs(coef["age"]) == pytest.approx(own["age_bias,none"], abs=1e-9)  # lm-eval: |age|
    assert any("did NOT converge" in n for n in fit.notes)
    assert fit.random_effects == ("(intercept)", "race[asian]", "race[black]",
                                  "gender[female]", "age")


def test_random_intercept_mixed_model_equals_statsmodels_mixedlm(discrim):
    frame, design = discrim.frame, discrim.design
    fit = linear_importance(frame, design, factors=["race", "gender"], mixed=True,
                            random_slopes=False)
    data = frame.assign(age_c=(frame["age"] - frame["age"].mean()) / frame["age"].std())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = smf.mixedlm("logit_yes ~ C(race, Treatment('white')) + "
                          "C(gender, Treatment('male')) + age_c", data=data,
                          groups="decision_question_id").fit()
    assert fit.converged
    np.testing.assert_allclose(fit.terms["coef"], ref.fe_params, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(fit.terms["std_err"], ref.bse_fe, rtol=1e-6)


def _simulated(seed: int = 1, n: int = 4000) -> tuple[pd.DataFrame, Design]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.choice(["x", "y", "z"], n), "b": rng.choice(["u", "v"], n),
                          "age": rng.choice([20.0, 40.0, 60.0, 80.0], n),
                          "g": rng.integers(0, 8, n).astype(str)})
    effect = {"x": 0.0, "y": 0.5, "z": -0.3}
    frame["score"] = (1.0 + frame["a"].map(effect) + 0.2 * (frame["b"] == "v")
                      + 0.01 * frame["age"] + rng.normal(0, 1, n)
                      + frame["g"].astype(int) % 3 * 0.1)  # a shift per cluster
    design = Design(factors=(make_factor(frame, "a").__class__(
        name="a", kind="domain", values=("x", "y", "z"), reference="x"),
        make_factor(frame, "b").__class__(name="b", kind="domain", values=("u", "v"),
                                          reference="u")),
                    outcome=Outcome("score", "above", threshold=1.5, type="continuous"),
                    cluster="g", covariates=("age",))
    return frame, design


def test_cells_are_sufficient_statistics_and_raw_covariates_are_per_unit():
    frame, design = _simulated()
    fit = linear_importance(frame, design, standardise=False, small_sample="none")
    assert fit.n_cells < len(frame) / 10  # few cells stand for many rows
    X = pd.DataFrame({"const": 1.0, "y": (frame["a"] == "y") * 1.0,
                      "z": (frame["a"] == "z") * 1.0, "v": (frame["b"] == "v") * 1.0,
                      "age": frame["age"]})
    ref = sm.OLS(frame["score"], X).fit(cov_type="cluster",
                                        cov_kwds={"groups": pd.factorize(frame["g"])[0]})
    np.testing.assert_allclose(fit.terms["coef"], ref.params, rtol=1e-9)
    np.testing.assert_allclose(fit.terms["std_err"], ref.bse, rtol=1e-9)
    # recovery of the simulated effects
    coef = dict(zip(fit.terms["term"], fit.terms["coef"], strict=True))
    assert coef["a[y]"] == pytest.approx(0.5, abs=0.1)
    assert coef["age"] == pytest.approx(0.01, abs=0.003)
    std = linear_importance(frame, design)
    assert std.terms["coef"].iloc[-1] == pytest.approx(coef["age"] * frame["age"].std())


def test_aliased_factors_are_refused_with_the_logistic_fits_fixes():
    frame, design = _simulated(n=600)
    frame["c"] = frame["a"].map({"x": "p", "y": "q", "z": "r"})  # c is a renamed a
    design = Design(factors=(*design.factors, make_factor(frame, "c")),
                    outcome=design.outcome, covariates=("age",))
    with pytest.raises(ImportanceRefusal) as linear:
        linear_importance(frame, design, cluster=None)
    applied = apply_design(frame, design)
    with pytest.raises(ImportanceRefusal) as logistic:
        factor_importance(applied, design, cluster=None)
    assert linear.value.reason == logistic.value.reason == "aliased"
    assert linear.value.fixes == logistic.value.fixes
    assert linear.value.explanation == logistic.value.explanation


def test_covariate_that_follows_a_factor_is_refused():
    frame, design = _simulated(n=600)
    frame["age"] = frame["a"].map({"x": 20.0, "y": 40.0, "z": 60.0})
    with pytest.raises(ImportanceRefusal, match=r"covariate\(s\) age"):
        linear_importance(frame, design, cluster=None)


def test_cli_continuous_outcome_and_refusal(tmp_path, discrim, capsys):
    from analysis.cli import main

    data, design = tmp_path / "d.csv", tmp_path / "d.yaml"
    discrim.frame.to_csv(data, index=False)
    discrim.design.save(design)
    assert main(["importance", str(data), "--design", str(design), "--factors",
                 "race,gender", "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["covariance"] == "cluster"
    assert out["settings"]["covariates"] == ["age"]
    assert main(["importance", str(data), "--design", str(design), "--factors",
                 "race,gender", "--mixed"]) == 2
    assert "did not converge" in capsys.readouterr().err


def test_logistic_fit_with_a_covariate_equals_statsmodels_on_the_rows():
    from analysis.importance_linear import logistic_with_covariates

    frame, design = _simulated(n=3000, seed=3)
    rng = np.random.default_rng(5)
    eta = -0.5 + 0.8 * (frame["a"] == "y") + 0.03 * (frame["age"] - 50)
    frame["bad"] = (rng.random(len(frame)) < 1 / (1 + np.exp(-eta))).astype(int)
    design = Design(factors=design.factors, outcome=Outcome("bad"), cluster="g",
                    covariates=("age",))
    applied = apply_design(frame, design)
    fit = logistic_with_covariates(applied, design, covariates=["age"], cluster=None)
    z = (frame["age"] - frame["age"].mean()) / frame["age"].std()
    X = pd.DataFrame({"const": 1.0, "y": (frame["a"] == "y") * 1.0,
                      "z": (frame["a"] == "z") * 1.0, "v": (frame["b"] == "v") * 1.0, "age": z})
    ref = sm.Logit(frame["bad"], X).fit(disp=0)
    assert fit.n_cells < len(frame) / 10
    np.testing.assert_allclose(fit.terms["coef"], ref.params, rtol=1e-7)
    np.testing.assert_allclose(fit.terms["std_err"], ref.bse, rtol=1e-7)
    assert fit.log_likelihood == pytest.approx(ref.llf)
    assert fit.terms["term"].iloc[-1] == "age" and fit.terms["n"].iloc[-1] == len(frame)
    lr = fit.factor_tests.set_index("factor").loc["age", "lr_statistic"]
    reduced = sm.Logit(frame["bad"], X.drop(columns="age")).fit(disp=0)
    assert lr == pytest.approx(2 * (ref.llf - reduced.llf))
    # recovery: 0.03 per year, standardised by the sd of age
    assert fit.terms["coef"].iloc[-1] / frame["age"].std() == pytest.approx(0.03, abs=0.01)
    robust = logistic_with_covariates(applied, design, covariates=["age"], small_sample="none")
    glm = sm.GLM(frame["bad"], X, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(frame["g"])[0]})
    np.testing.assert_allclose(robust.terms["std_err"], glm.bse, rtol=1e-6)
    # the default is factor_importance's: CR2 covariance, t with each coefficient's
    # Satterthwaite df (issue 38; was G - 1 for all)
    cr2 = logistic_with_covariates(applied, design, covariates=["age"])
    assert cr2.reference_df is None and cr2.df_method == "satterthwaite"
    t = cr2.terms["coef"] / cr2.terms["std_err"]
    np.testing.assert_allclose(cr2.terms["p_value"], 2 * stats.t.sf(t.abs(), cr2.terms["df"]),
                               rtol=1e-9)
    assert not np.allclose(cr2.terms["std_err"], glm.bse, rtol=1e-3)


def test_cli_logistic_with_a_covariate(tmp_path, discrim, capsys):
    from analysis.cli import main
    from analysis.importance_linear import logistic_with_covariates

    data, design = tmp_path / "d.csv", tmp_path / "d.yaml"
    discrim.frame.to_csv(data, index=False)
    discrim.design.save(design)
    assert main(["importance", str(data), "--design", str(design), "--factors", "race,gender",
                 "--outcome-type", "binary", "--covariate", "age", "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    expected = logistic_with_covariates(apply_design(discrim.frame, discrim.design),
                                        discrim.design.subset(["race", "gender"]),
                                        covariates=["age"])
    assert [t["term"] for t in out["terms"]] == expected.terms["term"].tolist()
    np.testing.assert_allclose([t["coef"] for t in out["terms"]], expected.terms["coef"])
    assert out["terms"][0]["n"] == 12  # white men: 4 questions x 3 ages
