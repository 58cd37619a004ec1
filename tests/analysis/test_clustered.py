"""Clustered rows (issue 13, item 1): the design's cluster column, cluster-robust factor
importance equal to statsmodels' row-level binomial GLM with ``cov_type="cluster"``, GEE,
and the robust Wald tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from analysis.cells import cell_table
from analysis.columns import (
    CI_HIGH,
    CI_LOW,
    COEF,
    DESIGN_EFFECT,
    NAIVE_STD_ERR,
    P_VALUE,
    ROBUST_WALD_STATISTIC,
    STD_ERR,
    Z,
)
from analysis.design import Design, apply_design
from analysis.errors import AnalysisError, DesignError
from analysis.importance import factor_importance
from tests.app.apptools import ROOT

F = ["model", "cot", "prompt_style", "gender"]
NO_BASE = {"prompt_style": ["base"]}


@pytest.fixture(scope="module")
def ssqa():
    frame = pd.read_csv(ROOT / "sample_data" / "ssqa_simulated.csv.gz")
    design = Design.load(ROOT / "sample_data" / "ssqa_simulated.design.yaml")
    return apply_design(frame, design), design


def _row_matrix(rows: pd.DataFrame, design: Design, factors: list[str]) -> pd.DataFrame:
    cols = [pd.Series(1.0, index=rows.index, name="const")]
    for f in factors:
        ref = design.factor(f).reference
        for v in design.factor(f).values:
            if v != ref and (rows[f] == v).any():
                cols.append((rows[f] == v).astype(float).rename(f"{f}[{v}]"))
    return pd.concat(cols, axis=1)


def test_design_cluster_round_trips_and_old_files_load(tmp_path, ssqa):
    _, bundled = ssqa
    assert bundled.cluster == "template"  # the bundled design declares its cluster
    design = bundled.with_cluster(None)
    assert design.cluster is None and "cluster" not in design.to_dict()
    clustered = design.with_cluster("template")
    for name in ("d.yaml", "d.json"):
        clustered.save(tmp_path / name)
        back = Design.load(tmp_path / name)
        assert back.cluster == "template" and back == clustered
    assert clustered != design
    with pytest.raises(DesignError, match="name of one column"):
        Design.from_dict({**design.to_dict(), "cluster": ["a", "b"]})


def test_cluster_column_missing_from_table_is_named(ssqa):
    """A declared cluster absent from the table: a warning of the design check, and the
    analyses say they treat the rows as independent (never a silent change)."""
    from analysis.design import check_design

    results, design = ssqa
    warnings = check_design(design.with_cluster("prompt_id"), results)
    assert [w for w in warnings if "prompt_id" in w] == [
        "The design's cluster column 'prompt_id' is not in the table: rows are treated as "
        "independent (standard errors and p-values assume no clustering)."]
    applied = apply_design(results.drop(columns="deviation"), design.with_cluster("prompt_id"))
    fit = factor_importance(applied, design.with_cluster("prompt_id"), factors=F,
                            exclude=NO_BASE)
    assert fit.cluster is None and fit.covariance == "naive"
    assert any("'prompt_id' is not in the table: rows are treated as independent" in n
               for n in fit.notes)


@pytest.mark.parametrize("interaction", [(), ("model:cot",)])
def test_robust_terms_equal_statsmodels_glm_cluster(ssqa, interaction):
    results, design = ssqa
    fit = factor_importance(results, design, factors=F, exclude=NO_BASE, cluster="template",
                            interactions=interaction, small_sample="none")
    rows = results[results["prompt_style"] != "base"]
    X = _row_matrix(rows, design, F)
    if interaction:
        X["model[sim-model-B]:cot[yes]"] = X["model[sim-model-B]"] * X["cot[yes]"]
    ref = sm.GLM(rows["deviation"].astype(float), X, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": rows["template"].to_numpy()})
    t = fit.terms
    np.testing.assert_allclose(t[COEF], ref.params, atol=1e-6)
    np.testing.assert_allclose(t[STD_ERR], ref.bse, atol=1e-6)
    np.testing.assert_allclose(t[Z], ref.tvalues, atol=1e-6)
    np.testing.assert_allclose(t[P_VALUE], ref.pvalues, atol=1e-6, rtol=1e-6)
    ci = ref.conf_int(0.05)
    np.testing.assert_allclose(np.log(t[CI_LOW]), ci[0], atol=1e-6)
    np.testing.assert_allclose(np.log(t[CI_HIGH]), ci[1], atol=1e-6)
    naive = sm.GLM(rows["deviation"].astype(float), X, family=sm.families.Binomial()).fit()
    np.testing.assert_allclose(t[NAIVE_STD_ERR], naive.bse, atol=1e-6)
    np.testing.assert_allclose(t[DESIGN_EFFECT], ref.bse / naive.bse, atol=1e-6)
    assert fit.n_clusters == 37 and fit.covariance == "cluster"
    assert fit.summary()["cluster"] == "template"
    # the robust Wald test of a factor equals statsmodels' (chi-square form)
    cols = [c for c in X.columns if c.startswith("prompt_style[")]
    R = np.array([[1.0 if c == k else 0.0 for c in X.columns] for k in cols])
    wald = ref.wald_test(R, scalar=True, use_f=False)
    row = fit.factor_tests.set_index("factor").loc["prompt_style"]
    assert row[ROBUST_WALD_STATISTIC] == pytest.approx(float(wald.statistic), rel=1e-6)
    assert row[P_VALUE] == pytest.approx(float(wald.pvalue), rel=1e-6, abs=1e-300)


def test_cr1_t_reference_equals_statsmodels_use_t_and_scipy(ssqa):
    """``small_sample="cr1"``: t with G - 1 = 36 df for the terms (statsmodels'
    ``use_t=True`` with cluster groups, and scipy's t by hand), F(rank, G - 1) for the
    robust Wald tests (statsmodels' ``wald_test(use_f=True)``)."""
    from scipy import stats

    results, design = ssqa
    fit = factor_importance(results, design, factors=F, exclude=NO_BASE, cluster="template",
                            small_sample="cr1")
    assert fit.reference_df == 36 and fit.summary()["reference_df"] == 36
    rows = results[results["prompt_style"] != "base"]
    X = _row_matrix(rows, design, F)
    ref = sm.GLM(rows["deviation"].astype(float), X, family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": rows["template"].to_numpy()}, use_t=True)
    t = fit.terms
    np.testing.assert_allclose(t[STD_ERR], ref.bse, atol=1e-6)
    np.testing.assert_allclose(t[P_VALUE], ref.pvalues, rtol=1e-6, atol=1e-12)
    by_hand = 2 * stats.t.sf(np.abs(t[Z].to_numpy()), df=36)
    np.testing.assert_allclose(t[P_VALUE], by_hand, rtol=1e-10)
    assert t[P_VALUE].iloc[-1] == pytest.approx(0.026872832318849505, rel=1e-6)
    ci = ref.conf_int(0.05)
    np.testing.assert_allclose(np.log(t[CI_LOW]), ci[0], atol=1e-6)
    np.testing.assert_allclose(np.log(t[CI_HIGH]), ci[1], atol=1e-6)
    cols = [c for c in X.columns if c.startswith("prompt_style[")]
    R = np.array([[1.0 if c == k else 0.0 for c in X.columns] for k in cols])
    wald = ref.wald_test(R, scalar=True, use_f=True)
    row = fit.factor_tests.set_index("factor").loc["prompt_style"]
    assert row["robust_wald_df"] == len(cols) and row["robust_wald_df_denominator"] == 36
    assert row[P_VALUE] == pytest.approx(float(wald.pvalue), rel=1e-6, abs=1e-300)
    # robust_wald_statistic is the F statistic of its F(q, G - 1) reference (issue 38)
    assert row[P_VALUE] == pytest.approx(
        stats.f.sf(row[ROBUST_WALD_STATISTIC], len(cols), 36), rel=1e-9)
    assert any("CR1 sandwich, t with 36 df (G - 1)" in n for n in fit.notes)


def test_cell_table_with_cluster_key_gives_the_row_fit(ssqa):
    results, design = ssqa
    cells = cell_table(results, [*F, "template"])
    a = factor_importance(cells, design, factors=F, exclude=NO_BASE, cluster="template")
    b = factor_importance(results, design.with_cluster("template"), factors=F, exclude=NO_BASE)
    np.testing.assert_allclose(a.terms[STD_ERR], b.terms[STD_ERR], atol=1e-12)
    assert b.cluster == "template"
    plain = factor_importance(results, design.with_cluster("template"), factors=F,
                              exclude=NO_BASE, cluster=None)
    assert NAIVE_STD_ERR not in plain.terms and plain.covariance == "naive"
    np.testing.assert_allclose(plain.terms[STD_ERR], b.terms[NAIVE_STD_ERR], atol=1e-12)


def test_gee_equals_statsmodels_gee(ssqa):
    results, design = ssqa
    fit = factor_importance(results, design, factors=F, exclude=NO_BASE, cluster="template",
                            gee=True, likelihood_ratio=False)
    rows = results[results["prompt_style"] != "base"]
    X = _row_matrix(rows, design, F)
    ref = sm.GEE(rows["deviation"].astype(float), X, groups=rows["template"].to_numpy(),
                 family=sm.families.Binomial(), cov_struct=sm.cov_struct.Exchangeable()).fit()
    np.testing.assert_allclose(fit.terms[COEF], ref.params, atol=1e-6)
    np.testing.assert_allclose(fit.terms[STD_ERR], ref.bse, atol=1e-6)
    assert fit.covariance == "gee" and fit.gee_correlation == pytest.approx(
        float(ref.model.cov_struct.dep_params), abs=1e-6)


def test_clustered_simulation_inflates_standard_errors():
    """Rows sharing a cluster effect: the robust SE of a within-cluster factor is close to
    naive, that of a cluster-level factor is clearly larger (design effect > 1.5)."""
    rng = np.random.default_rng(3)
    g, m = 60, 40
    cluster = np.repeat(np.arange(g), m)
    level = np.where(cluster % 2 == 0, "a", "b")  # constant within a cluster
    within = rng.choice(["x", "y"], size=g * m)
    eta = -0.5 + rng.normal(0, 1.0, g)[cluster] + 0.3 * (level == "b") + 0.3 * (within == "y")
    frame = pd.DataFrame({"level": level, "within": within, "cluster": cluster,
                          "deviation": (rng.random(g * m) < 1 / (1 + np.exp(-eta))).astype(int)})
    design = Design.from_dict({"factors": [
        {"name": "level", "values": ["a", "b"], "reference": "a"},
        {"name": "within", "values": ["x", "y"], "reference": "x"}],
        "outcome": {"column": "deviation", "mapping": "binary"}, "cluster": "cluster"})
    fit = factor_importance(apply_design(frame, design), design)
    deff = fit.terms.set_index("term")[DESIGN_EFFECT]
    assert deff["level[b]"] > 1.5 * deff["within[y]"]
    assert deff["level[b]"] > 2


def test_bad_cluster_requests(ssqa):
    results, design = ssqa
    with pytest.raises(AnalysisError, match="also a factor"):
        factor_importance(results, design, factors=F, exclude=NO_BASE, cluster="model")
    with pytest.raises(AnalysisError, match="'prompt_id' is not in the table"):
        factor_importance(results, design, factors=F, exclude=NO_BASE, cluster="prompt_id")
    with pytest.raises(AnalysisError, match="GEE fit needs a cluster"):
        factor_importance(results, design.with_cluster(None), factors=F, exclude=NO_BASE,
                          gee=True)


def test_cli_cluster_json_carries_the_robust_values(ssqa, capsys):
    from analysis.cli import main
    from tests.analysis.cli_helpers import run_json

    results, design = ssqa
    args = ["importance", ROOT / "sample_data" / "ssqa_simulated.csv.gz", "--design",
            ROOT / "sample_data" / "ssqa_simulated.design.yaml", "--factors", ",".join(F),
            "--exclude", "prompt_style=base", "--cluster", "template"]
    out = run_json(capsys, *args)
    terms = out["terms"] if isinstance(out, dict) else out
    fit = factor_importance(results, design, factors=F, exclude=NO_BASE, cluster="template")
    np.testing.assert_allclose([t["std_err"] for t in terms], fit.terms[STD_ERR], rtol=1e-12)
    np.testing.assert_allclose([t["p_value"] for t in terms], fit.terms[P_VALUE], rtol=1e-9)
    assert all(t["design_effect"] > 0 for t in terms)
    gee = run_json(capsys, *args, "--gee", "--no-lr")
    gee = gee["terms"] if isinstance(gee, dict) else gee
    assert gee[1]["coef"] != terms[1]["coef"]
    assert main([*map(str, args[:-1]), "prompt_id", "--json"]) == 2
    assert "'prompt_id' is not in the table" in capsys.readouterr().err
