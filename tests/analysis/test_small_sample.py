"""The small-sample CR2 kernel (``analysis.clusters.SmallSampleCR2``) against clubSandwich.

Reference numbers: ``tests/reference/clubsandwich_reference.R`` (R 4.2.2, clubSandwich
0.5.8; the versions are stored with the numbers in ``clubsandwich_reference.json``), run
on the seeded data it writes (``clubsandwich_data.csv``): a linear model with unbalanced
clusters (8-45 rows), a logistic glm (through its IRLS working regression, the
Bell-McCaffrey CR2 the workbench computes), coefficients resting on 1, 2, 3 and 6
clusters (``sub``), a balanced 4-value template-level factor (``tier``; a 3-df HTZ test)
and a within-cluster factor ``w``. CI needs no R.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.clusters import SmallSampleCR2

REF = Path(__file__).resolve().parents[1] / "reference"
DATA = pd.read_csv(REF / "clubsandwich_data.csv")
REFERENCE = json.loads((REF / "clubsandwich_reference.json").read_text())
LEVELS = {"sub": ["ref", "one", "two", "three"], "tier": ["t0", "t1", "t2", "t3"],
          "w": ["x", "y"]}


def _matrix(factor: str) -> np.ndarray:
    cols = [np.ones(len(DATA))]
    for f in (factor, "w"):
        cols += [(DATA[f] == v).to_numpy(float) for v in LEVELS[f][1:]]
    return np.column_stack(cols)


def _kernel(kind: str, factor: str) -> tuple[SmallSampleCR2, np.ndarray]:
    """The kernel's pieces from the rows: scores, inverse information, cluster information."""
    X = _matrix(factor)
    groups = pd.factorize(DATA["cluster"], sort=True)[0]
    if kind == "linear":
        y = DATA["score"].to_numpy(float)
        beta = np.linalg.solve(X.T @ X, X.T @ y)
        resid, w = y - X @ beta, np.ones(len(y))
    else:
        y = DATA["deviation"].to_numpy(float)
        beta = np.zeros(X.shape[1])
        for _ in range(50):  # Newton-Raphson to convergence
            mu = 1 / (1 + np.exp(-X @ beta))
            step = np.linalg.solve(X.T @ (X * (mu * (1 - mu))[:, None]), X.T @ (y - mu))
            beta += step
            if np.max(np.abs(step)) < 1e-13:
                break
        mu = 1 / (1 + np.exp(-X @ beta))
        resid, w = y - mu, mu * (1 - mu)
    g = groups.max() + 1
    scores = np.zeros((g, X.shape[1]))
    np.add.at(scores, groups, X * resid[:, None])
    infos = np.stack([(X[groups == j] * w[groups == j, None]).T @ X[groups == j]
                      for j in range(g)])
    return SmallSampleCR2(scores, np.linalg.inv(infos.sum(axis=0)), infos), beta


CASES = [(k, f) for k in ("linear", "logistic") for f in ("sub", "tier")]


def test_reference_names_its_versions():
    assert REFERENCE["clubSandwich_version"] == "0.5.8"
    assert REFERENCE["R_version"].startswith("R version 4.2.2")


@pytest.mark.parametrize(("kind", "factor"), CASES)
def test_satterthwaite_t_tests_equal_clubsandwich(kind, factor):
    ref = REFERENCE["cases"][f"{kind}_{factor}"]["coefficients"]
    kernel, beta = _kernel(kind, factor)
    out = kernel.t_tests(beta)
    np.testing.assert_allclose(out["estimate"], ref["estimate"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(out["std_err"], ref["std_err"], rtol=1e-8)
    np.testing.assert_allclose(out["t"], ref["t"], rtol=1e-8)
    np.testing.assert_allclose(out["df"], ref["df"], rtol=1e-8)
    np.testing.assert_allclose(out["p_value"], ref["p_value"], rtol=1e-8)


@pytest.mark.parametrize(("kind", "factor"), CASES)
def test_htz_tests_equal_clubsandwich(kind, factor):
    case = REFERENCE["cases"][f"{kind}_{factor}"]
    kernel, beta = _kernel(kind, factor)
    for name, cols in ((factor, [1, 2, 3]), ("w", [4])):
        ref = case["htz"][name if name == "w" else "factor"]
        test = kernel.htz(beta, np.eye(len(beta))[cols])
        assert test.reason == "" and test.q == ref["df_num"] == len(cols)
        assert test.statistic == pytest.approx(ref["Fstat"], rel=1e-8)
        assert test.df == pytest.approx(ref["df_denom"], rel=1e-8)
        assert test.p_value == pytest.approx(ref["p_value"], rel=1e-8)


def test_a_one_row_htz_test_is_the_satterthwaite_t_test():
    """HTZ of one contrast is t^2 on the contrast's Satterthwaite df (clubSandwich's
    Wald_test of ``sub[one] - sub[two]``), and the kernel's t test of that contrast."""
    ref = REFERENCE["cases"]["linear_sub"]["contrast"]
    kernel, beta = _kernel("linear", "sub")
    c = np.array(ref["contrast"], dtype=float)
    test = kernel.htz(beta, c)
    assert test.statistic == pytest.approx(ref["Fstat"], rel=1e-8)
    assert test.df == pytest.approx(ref["df_denom"], rel=1e-8)
    assert test.p_value == pytest.approx(ref["p_value"], rel=1e-8)
    row = kernel.t_tests(beta, c[None, :]).iloc[0]
    assert row["t"] ** 2 == pytest.approx(ref["Fstat"], rel=1e-8)
    assert row["df"] == pytest.approx(ref["df_denom"], rel=1e-8)


def test_clusters_supporting_each_coefficient():
    """sub[one] rests on 1 cluster, sub[two] on 2, sub[three] on 3; w and the intercept
    on all 12. The 1-cluster value's df is not small (4.7: it comes from the reference's
    6 clusters): the count, not the df, says that value's own cluster effect is not
    estimated."""
    kernel, _ = _kernel("linear", "sub")
    assert kernel.n_clusters(np.eye(5)).tolist() == [12, 1, 2, 3, 12]
    assert REFERENCE["cases"]["linear_sub"]["coefficients"]["df"][1] > 4


def test_the_glm_working_regression_is_close_to_clubsandwich_glm():
    """clubSandwich's vcovCR.glm takes another square root of the CR2 adjustment
    (``D' B^(-1/2) D`` with ``D = chol(V(mu))``), equal to the Bell-McCaffrey one only
    when the working weights are constant inside each cluster; on these data the two
    standard errors differ by less than 1.5 % and the df by less than 1.5 %."""
    for factor in ("sub", "tier"):
        case = REFERENCE["cases"][f"logistic_{factor}"]
        ours, theirs = case["coefficients"], case["clubsandwich_glm"]
        np.testing.assert_allclose(ours["estimate"], theirs["estimate"], rtol=1e-6)
        np.testing.assert_allclose(ours["std_err"], theirs["std_err"], rtol=0.015)
        np.testing.assert_allclose(ours["df"], theirs["df"], rtol=0.015)


# --- the importance fits against the same reference --------------------------------------
def _design(factor: str, outcome: dict):
    from analysis.design import Design

    return Design.from_dict({"factors": [
        {"name": factor, "values": LEVELS[factor], "reference": LEVELS[factor][0]},
        {"name": "w", "values": LEVELS["w"], "reference": "x"}],
        "outcome": outcome, "cluster": "cluster"})


@pytest.mark.parametrize("factor", ["sub", "tier"])
def test_logistic_importance_defaults_equal_clubsandwich(factor):
    """factor_importance with the design's cluster: CR2 SEs, Satterthwaite df and p per
    coefficient and the HTZ factor test equal clubSandwich (the working regression); the
    coefficient on 1 cluster (sub = one) has no p-value, interval or label, and a note
    says why; the LR test stays as p_value_lr."""
    from analysis.design import apply_design
    from analysis.importance import NOT_ESTIMABLE, factor_importance

    design = _design(factor, {"column": "deviation", "mapping": "binary"})
    fit = factor_importance(apply_design(DATA, design), design)
    ref = REFERENCE["cases"][f"logistic_{factor}"]
    t = fit.terms
    np.testing.assert_allclose(t["coef"], ref["estimate"], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(t["std_err"], ref["coefficients"]["std_err"], rtol=1e-7)
    np.testing.assert_allclose(t["df"], ref["coefficients"]["df"], rtol=1e-7)
    ok = t["n_clusters"] >= 2
    np.testing.assert_allclose(t.loc[ok, "p_value"],
                               np.asarray(ref["coefficients"]["p_value"])[ok], rtol=1e-6)
    assert fit.df_method == "satterthwaite" and fit.reference_df is None
    tests = fit.factor_tests.set_index("factor")
    assert "p_value_lr" in tests.columns and "robust_p_value" not in tests.columns
    w = ref["htz"]["w"]
    assert tests.loc["w", "robust_wald_statistic"] == pytest.approx(w["Fstat"], rel=1e-6)
    assert tests.loc["w", "robust_wald_df_denominator"] == pytest.approx(w["df_denom"],
                                                                          rel=1e-6)
    assert tests.loc["w", "p_value"] == pytest.approx(w["p_value"], rel=1e-6)
    if factor == "tier":
        h = ref["htz"]["factor"]
        assert tests.loc["tier", "robust_wald_statistic"] == pytest.approx(h["Fstat"], rel=1e-6)
        assert tests.loc["tier", "p_value"] == pytest.approx(h["p_value"], rel=1e-6)
        assert ok.all()
    else:
        one = t.set_index("term").loc["sub[one]"]
        assert one["n_clusters"] == 1 and one["effect"] == NOT_ESTIMABLE
        assert np.isnan(one["p_value"]) and np.isnan(one["ci_low"])
        assert any("sub = 'one' occurs in 1 of 12 values of cluster" in n for n in fit.notes)
        assert np.isnan(tests.loc["sub", "p_value"]) and "sub[one]" in tests.loc["sub",
                                                                                  "reason"]
        assert t.set_index("term").loc["sub[two]", "n_clusters"] == 2


def test_bbq_subcategories_on_one_or_two_templates_are_not_labelled():
    """Issue 38's table on the bundled BBQ sample (subcategory instead of category, the
    model the aliasing refusal suggests): the subcategories on 1 template (SkinAppearance,
    Strabismus) are not estimable; those on 2 templates have about 1 df and none is
    labelled or below p = 0.01 (Dwarfism was p = 1.1e-18 "protective" on G - 1 df); the
    issue's Satterthwaite numbers (Dwarfism df 1.01, p 0.061; Obesity, 6 templates,
    df 4.45, p 0.074) are reproduced."""
    from analysis.design import Design, apply_design
    from analysis.importance import NOT_ESTIMABLE, NOT_SIGNIFICANT, factor_importance

    root = Path(__file__).resolve().parents[2] / "sample_data"
    design = Design.load(root / "bbq_unifiedqa.design.yaml")
    results = apply_design(pd.read_csv(root / "bbq_unifiedqa.csv.gz"), design)
    fit = factor_importance(results, design, factors=["subcategory", "question_polarity",
                                                      "context_condition"])
    t = fit.terms[fit.terms["factor"] == "subcategory"].set_index("value")
    few = t[t["n_clusters"] <= 2]
    assert set(t.index[t["n_clusters"] == 1]) == {"SkinAppearance", "Strabismus"}
    assert (t.loc[["SkinAppearance", "Strabismus"], "effect"] == NOT_ESTIMABLE).all()
    assert not (few["p_value"] < 0.01).any()
    assert few["effect"].isin([NOT_ESTIMABLE, NOT_SIGNIFICANT]).all()
    assert t.loc["Dwarfism", "df"] == pytest.approx(1.01, abs=0.005)
    assert t.loc["Dwarfism", "p_value"] == pytest.approx(0.061, abs=0.001)
    assert t.loc["Obesity", "df"] == pytest.approx(4.45, abs=0.005)
    assert t.loc["Obesity", "p_value"] == pytest.approx(0.074, abs=0.001)
    assert (t["effect"] == NOT_SIGNIFICANT).sum() + (t["effect"] == NOT_ESTIMABLE).sum() \
        == len(t)  # none of the subcategories survives (the issue: smallest honest p 0.061)


@pytest.mark.parametrize("factor", ["sub", "tier"])
def test_linear_importance_defaults_equal_clubsandwich(factor):
    """linear_importance with the design's cluster (default CR2): SEs, Satterthwaite df,
    p per coefficient and the HTZ factor tests equal clubSandwich's lm; sub = one (1
    cluster) is not estimable and blocks the joint test of sub."""
    from analysis.design import apply_design
    from analysis.importance import NOT_ESTIMABLE
    from analysis.importance_linear import linear_importance

    design = _design(factor, {"column": "score", "type": "continuous", "mapping": "above",
                              "threshold": 0.0})
    fit = linear_importance(apply_design(DATA, design), design)
    ref = REFERENCE["cases"][f"linear_{factor}"]
    t = fit.terms
    assert fit.df_method == "satterthwaite"
    np.testing.assert_allclose(t["coef"], ref["coefficients"]["estimate"], rtol=1e-9)
    np.testing.assert_allclose(t["std_err"], ref["coefficients"]["std_err"], rtol=1e-8)
    np.testing.assert_allclose(t["df"], ref["coefficients"]["df"], rtol=1e-8)
    ok = (t["n_clusters"] >= 2).to_numpy()
    np.testing.assert_allclose(t.loc[ok, "p_value"],
                               np.asarray(ref["coefficients"]["p_value"])[ok], rtol=1e-8)
    tests = fit.factor_tests.set_index("factor")
    w = ref["htz"]["w"]
    assert tests.loc["w", "statistic"] == pytest.approx(w["Fstat"], rel=1e-8)
    assert tests.loc["w", "robust_wald_df_denominator"] == pytest.approx(w["df_denom"],
                                                                          rel=1e-8)
    assert tests.loc["w", "p_value"] == pytest.approx(w["p_value"], rel=1e-8)
    if factor == "tier":
        h = ref["htz"]["factor"]
        assert tests.loc["tier", "statistic"] == pytest.approx(h["Fstat"], rel=1e-8)
        assert tests.loc["tier", "p_value"] == pytest.approx(h["p_value"], rel=1e-8)
    else:
        assert t.set_index("term").loc["sub[one]", "effect"] == NOT_ESTIMABLE
        assert np.isnan(tests.loc["sub", "p_value"]) and tests.loc["sub", "reason"]


LMER = json.loads((REF / "lmertest_reference.json").read_text())


@pytest.mark.parametrize("case", ["intercept", "slopes"])
def test_mixed_model_satterthwaite_df_equal_lmertest(case):
    """linear_importance(mixed=True): t tests on each fixed effect's Satterthwaite df,
    equal to lmerTest's summary() (``tests/reference/lmertest_reference.R``, lme4 1.1.31,
    lmerTest 3.1.3) to 2e-5 (both take finite-difference derivatives); the REML deviance
    at the optimum equals lme4's REMLcrit to 1e-9."""
    from analysis.design import apply_design
    from analysis.importance_linear import linear_importance
    from analysis.mixed_df import satterthwaite_mixed

    ref = LMER["cases"][case]
    assert LMER["lmerTest_version"] == "3.1.3"
    design = _design("tier", {"column": "score", "type": "continuous", "mapping": "above",
                              "threshold": 0.0})
    if case == "intercept":  # linear_importance's slopes model has a slope per column
        fit = linear_importance(apply_design(DATA, design), design, mixed=True,
                                random_slopes=False)
        t = fit.terms
        np.testing.assert_allclose(t["df"], ref["df"], rtol=2e-5)
        np.testing.assert_allclose(t["coef"], ref["estimate"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(t["std_err"], ref["std_err"], rtol=1e-3)
        np.testing.assert_allclose(t["p_value"], 2 * __import__("scipy").stats.t.sf(
            np.abs(t["coef"] / t["std_err"]), t["df"]), rtol=1e-9)
        assert any("Satterthwaite df (lmerTest's convention)" in n for n in fit.notes)
    X = _matrix("tier")
    Z = X[:, :1] if case == "intercept" else X[:, [0, 4]]
    groups = pd.factorize(DATA["cluster"], sort=True)[0]
    theta = np.atleast_1d(np.array(ref["theta"], dtype=float))
    lam = np.zeros((Z.shape[1],) * 2)  # lme4's relative Cholesky factor, column-major
    cells = [(i, j) for j in range(Z.shape[1]) for i in range(j, Z.shape[1])]
    for (i, j), v in zip(cells, theta, strict=True):
        lam[i, j] = v
    sigma = ref["sigma"]
    out = satterthwaite_mixed(DATA["score"].to_numpy(float), X, Z, groups,
                              sigma**2 * lam @ lam.T, sigma**2)
    assert out.deviance == pytest.approx(ref["reml_criterion"], rel=1e-9)
    np.testing.assert_allclose(out.df, ref["df"], rtol=2e-5)
    np.testing.assert_allclose(np.sqrt(np.diag(out.cov)), ref["std_err"], rtol=1e-6)
    # the multi-df tests: lmerTest's contestMD / anova(ddf = "Satterthwaite") per factor
    # (tier: 3 columns, w: 1), the F on Satterthwaite denominator df
    for name, cols in (("tier", [1, 2, 3]), ("w", [4])):
        want = ref["f_tests"][name]
        test = out.f_test(np.eye(X.shape[1])[cols])
        assert test.df == want["num_df"] == len(cols) and test.reason == ""
        assert test.statistic == pytest.approx(want["F"], rel=1e-6)
        assert test.df_denominator == pytest.approx(want["den_df"], rel=2e-5)
        assert test.p_value == pytest.approx(want["p_value"], rel=1e-4)
    anova = ref["f_tests"]["anova"]  # anova()'s table is the same contestMD per factor
    assert anova["den_df"] == [ref["f_tests"]["tier"]["den_df"], ref["f_tests"]["w"]["den_df"]]
    if case == "intercept":  # linear_importance's factor tests are those F tests
        tests = fit.factor_tests.set_index("factor")
        for name in ("tier", "w"):
            want = ref["f_tests"][name]
            assert tests.loc[name, "df"] == want["num_df"]
            assert tests.loc[name, "df_denominator"] == pytest.approx(want["den_df"], rel=1e-4)
            assert tests.loc[name, "statistic"] == pytest.approx(want["F"], rel=1e-3)
            assert tests.loc[name, "p_value"] == pytest.approx(want["p_value"], rel=1e-3)
        assert any("F tests on Satterthwaite denominator df" in n for n in fit.notes)
