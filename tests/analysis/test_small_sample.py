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
