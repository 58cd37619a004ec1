"""Honest uncertainty where rows are clustered (issue 24 item 2, issue 31 items 1 and 4).

Simulated benchmarks with known template effects: the size of the default cluster-robust
tests at 5 % and the coverage of their intervals for G = 12 and G = 40 templates; the
bias-reduced (CR2) covariance against a brute-force row-level Bell-McCaffrey computation;
CR1 against statsmodels; the bundled BBQ sample's defaults; bad cluster columns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from analysis.cells import cell_table
from analysis.clusters import ClusterError
from analysis.columns import COEF, P_VALUE, STD_ERR, TERM
from analysis.design import Design, apply_design
from analysis.importance import factor_importance
from analysis.subgroups import ld_cluster_variance, subgroups
from tests.app.apptools import ROOT

SD = 0.8  # template random intercept (logit scale)
ROWS = 30  # rows per template, half with w = x, half with w = y


def _simulate(rng: np.random.Generator, g: int, r: int, *, effect: float = 0.0):
    """r benchmarks of g templates: a template-level factor ``tier`` (odd templates; no
    effect) and a within-template factor ``w`` (effect ``effect`` on the logit).
    Returns per benchmark and template the deviations with w = x and with w = y."""
    u = rng.normal(0, SD, (r, g))
    kx = rng.binomial(ROWS // 2, 1 / (1 + np.exp(-(-0.3 + u))))
    ky = rng.binomial(ROWS // 2, 1 / (1 + np.exp(-(-0.3 + u + effect))))
    return kx, ky


def _subgroup_arrays(kx, ky, which: str):
    g = kx.shape[1]
    d, t = kx + ky, np.full(kx.shape, ROWS)
    if which == "tier":  # the rows of the odd templates
        tier = np.arange(g) % 2 == 1
        return np.where(tier, d, 0), np.where(tier, t, 0), d, t
    return ky, np.full(kx.shape, ROWS // 2), d, t  # the rows with w = y


def _marginal_ld(effect: float) -> float:
    """Population LD of w = y against w = x: logit E[p_y] - logit E[p_x] over the
    template intercepts (Gauss-Hermite quadrature)."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    py = float(w @ (1 / (1 + np.exp(-(-0.3 + SD * x + effect)))))
    px = float(w @ (1 / (1 + np.exp(-(-0.3 + SD * x)))))
    # rows with w = y against all other rows (w = x): the subgroup's LD
    return np.log(py / (1 - py)) - np.log(px / (1 - px))


@pytest.mark.parametrize("g", [12, 40])
@pytest.mark.parametrize("which", ["tier", "within"])
def test_size_of_the_default_test_at_5_percent(g, which):
    """4,000 benchmarks without any effect: the default (CR2, t on G - 1 df) rejects
    LD = 0 at 5 % within 3 Monte Carlo standard errors (1.0 point) of 5 %, for a
    template-level factor and a within-template one; the CR1 sandwich with the normal
    reference over-rejects the template-level factor with 12 templates (about 9 %)."""
    rng = np.random.default_rng(20240 + g)
    r = 4000
    a, n, d, t = _subgroup_arrays(*_simulate(rng, g, r), which)
    ld, var, inside, outside = ld_cluster_variance(a, n, d, t)
    assert (inside >= 2).all() and (outside >= 2).all()
    crit = stats.t.ppf(0.975, g - 1)
    size = float(np.mean(np.abs(ld) / np.sqrt(var) > crit))
    mc = 3 * np.sqrt(0.05 * 0.95 / r)
    assert abs(size - 0.05) < mc, size
    if which == "tier" and g == 12:
        ld1, var1, *_ = ld_cluster_variance(a, n, d, t, small_sample="none")
        assert np.mean(np.abs(ld1) / np.sqrt(var1) > 1.96) > 0.075


@pytest.mark.parametrize("g", [12, 40])
def test_coverage_of_the_default_intervals(g):
    """A within-template effect of 0.5 on the logit: the default 95 % interval of LD
    covers the population LD in 93-97 % of 4,000 benchmarks."""
    rng = np.random.default_rng(7 + g)
    a, n, d, t = _subgroup_arrays(*_simulate(rng, g, 4000, effect=0.5), "within")
    ld, var, *_ = ld_cluster_variance(a, n, d, t)
    half = stats.t.ppf(0.975, g - 1) * np.sqrt(var)
    truth = _marginal_ld(0.5)
    coverage = float(np.mean(np.abs(ld - truth) <= half))
    assert 0.93 <= coverage <= 0.97, coverage


def _frame(seed: int = 3, g: int = 8, rows: int = 24) -> tuple[pd.DataFrame, Design]:
    rng = np.random.default_rng(seed)
    cluster = np.repeat(np.arange(g), rows)
    tier = np.where(cluster % 2 == 0, "a", "b")
    w = rng.choice(["x", "y", "z"], g * rows)
    eta = -0.4 + rng.normal(0, 0.9, g)[cluster] + 0.3 * (w == "y")
    frame = pd.DataFrame({"tier": tier, "w": w, "t": cluster.astype(str),
                          "deviation": (rng.random(g * rows) < 1 / (1 + np.exp(-eta)))
                          .astype(int)})
    design = Design.from_dict({"factors": [
        {"name": "tier", "values": ["a", "b"], "reference": "a"},
        {"name": "w", "values": ["x", "y", "z"], "reference": "x"}],
        "outcome": {"column": "deviation", "mapping": "binary"}, "cluster": "t"})
    return apply_design(frame, design), design


def _brute_force_cr2(rows: pd.DataFrame, X: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bell & McCaffrey's CR2 on the rows: B sum_g X_g' W_g^1/2 (I - H_gg)^-1/2
    W_g^-1/2 (y_g - mu_g) (...)' B, with explicit row-level matrices."""
    mu = 1 / (1 + np.exp(-X @ b))
    w = mu * (1 - mu)
    bread = np.linalg.inv(X.T @ (X * w[:, None]))
    meat = np.zeros_like(bread)
    y = rows["deviation"].to_numpy(float)
    for _, idx in rows.groupby("t").indices.items():
        z = X[idx] * np.sqrt(w[idx])[:, None]
        h = z @ bread @ z.T
        lam, vec = np.linalg.eigh(np.eye(len(idx)) - h)
        root = (vec / np.sqrt(lam)) @ vec.T
        u = z.T @ root @ ((y[idx] - mu[idx]) / np.sqrt(w[idx]))
        meat += np.outer(u, u)
    return np.sqrt(np.diag(bread @ meat @ bread))


def test_cr2_equals_a_brute_force_row_level_computation():
    results, design = _frame()
    fit = factor_importance(results, design)  # default: the design's cluster, CR2
    X = np.column_stack([np.ones(len(results)), results["tier"] == "b", results["w"] == "y",
                         results["w"] == "z"]).astype(float)
    se = _brute_force_cr2(results, X, fit.terms[COEF].to_numpy())
    np.testing.assert_allclose(fit.terms[STD_ERR], se, rtol=1e-8)
    # issue 38: t on each coefficient's Satterthwaite df (was G - 1 = 7 for every term)
    assert fit.reference_df is None and fit.df_method == "satterthwaite"
    assert fit.cluster == "t" and (fit.terms["n_clusters"] == [8, 4, 8, 8]).all()
    df = fit.terms["df"].to_numpy()
    assert 2 < df[1] < 7  # the template-level factor: fewer df than G - 1
    np.testing.assert_allclose(fit.terms[P_VALUE], 2 * stats.t.sf(
        np.abs(fit.terms[COEF] / se), df), rtol=1e-8)
    assert any("few clusters: only 8 values of t" in n for n in fit.notes)
    assert any("t with Satterthwaite df per contrast" in n for n in fit.notes)


def test_subgroup_test_equals_the_importance_term_of_its_indicator():
    """LD of a subgroup is the coefficient of its indicator: the subgroup's robust p-value
    equals factor_importance's on that single factor for CR1 and CR1-normal, and for CR2
    it is t on the subgroup's Satterthwaite df of importance's CR2 SE; CR1 equals
    statsmodels' GLM with cov_type='cluster' (use_t for the t reference)."""
    results, design = _frame(seed=11, g=10)
    cells = cell_table(results, ["tier", "t"])
    one = design.subset(["tier"])
    rows = results
    X = sm.add_constant((rows["tier"] == "b").astype(float))
    for small, use_t in (("cr2", None), ("cr1", True), ("none", False)):
        table, info = subgroups(cells, ["tier"], max_level=1, cluster="t",
                                small_sample=small, return_info=True)
        fit = factor_importance(results, one, factors=["tier"], small_sample=small,
                                likelihood_ratio=False)
        row = table.set_index("subgroup").loc["tier = b"]
        p_sub = row[P_VALUE]
        term = fit.terms.set_index(TERM).loc["tier[b]"]
        # the same covariance and, with CR2, the same Satterthwaite df (issue 38): the
        # subgroup's closed form equals importance's kernel
        if small == "cr2":
            assert row["df"] < 9
            assert row["df"] == pytest.approx(term["df"], rel=1e-8)
        assert p_sub == pytest.approx(term[P_VALUE], rel=1e-8)
        if use_t is not None:
            ref = sm.GLM(rows["deviation"].astype(float), X, family=sm.families.Binomial()
                         ).fit(cov_type="cluster", cov_kwds={"groups": rows["t"].to_numpy()},
                               use_t=use_t)
            assert p_sub == pytest.approx(float(ref.pvalues.iloc[1]), rel=1e-7)
    assert info.cluster == "t" and info.n_clusters == 10 and not table.attrs


def test_p_value_and_interval_agree_and_template_subgroups_have_no_test():
    """The p-value and the interval printed beside it come from the same SE and t, so
    p < 0.05 exactly when the 95 % interval excludes 0. A subgroup inside one template
    (the cluster chosen as a factor) has no cluster-robust test."""
    results, design = _frame(seed=5, g=12)
    cells = cell_table(results, ["tier", "w", "t"])
    table, info = subgroups(cells, ["tier", "w", "t"], max_level=2, cluster="t",
                            return_info=True)
    tested = table[table[P_VALUE].notna()]
    assert len(tested) > 10
    excludes = (tested["ci_low"] > 0) | (tested["ci_high"] < 0)
    assert ((tested[P_VALUE] < 0.05) == excludes).all()
    single = table[table["subgroup"].str.contains("t = ")]
    assert single[P_VALUE].isna().all() and (single["n_clusters"] == 1).all()
    assert any("not estimable: t = 0 occurs in 1 of 12 values of t" in n
               and "no cluster-robust test" in n for n in info.notes)
    assert (table.loc[table[P_VALUE].notna(), "test"] == "cluster t").all()


def test_robust_wald_test_on_a_singular_covariance_is_refused_with_the_reason():
    """5 clusters and an 8-level within-cluster factor (issue 31 item 4): the robust
    covariance of its 7 columns is singular (rank G - 1 = 4 for CR1, G = 5 for CR2); the
    test is refused with the reason (issue 38), the LR test stays."""
    rng = np.random.default_rng(2)
    n = 5 * 160
    frame = pd.DataFrame({"f": rng.choice([f"v{i}" for i in range(8)], n),
                          "t": np.repeat(np.arange(5), 160).astype(str)})
    frame["deviation"] = (rng.random(n) < 0.4).astype(int)
    design = Design.from_dict({"factors": [{"name": "f", "values": [f"v{i}" for i in range(8)],
                                            "reference": "v0"}],
                               "outcome": {"column": "deviation", "mapping": "binary"},
                               "cluster": "t"})
    results = apply_design(frame, design)
    for small, rank in (("cr1", 4), ("cr2", 5)):  # CR1 scores sum to 0: rank <= G - 1
        fit = factor_importance(results, design, small_sample=small)
        row = fit.factor_tests.set_index("factor").loc["f"]
        # issue 38: a test of 7 contrasts on a rank-`rank` covariance is refused with
        # the reason (it was a chi-square of the pseudo-inverse on `rank` df)
        assert row["robust_wald_df"] == 7 and row["df"] == 7
        assert np.isnan(row["p_value"]) and np.isnan(row["robust_wald_statistic"])
        assert f"singular (rank {rank} for 7" in row["reason"]
        assert any(f"no cluster-robust test of f: its cluster-robust covariance is singular "
                   f"(rank {rank}" in n for n in fit.notes)
        assert np.isfinite(row["p_value_lr"])


# --- bad cluster columns -----------------------------------------------------------------------
def test_bad_cluster_columns_give_notes_not_silent_changes():
    results, design = _frame()
    constant = results.assign(t="same")
    fit = factor_importance(constant, design)
    assert fit.cluster is None and fit.covariance == "naive"
    assert any("'t' has the single value 'same'" in n for n in fit.notes)
    single = results.assign(t=np.arange(len(results)).astype(str))
    fit = factor_importance(single, design)
    assert fit.cluster is None
    assert any("every value of the cluster column 't' marks a single row" in n
               for n in fit.notes)
    missing = results.drop(columns="t")
    fit = factor_importance(missing, design)
    assert fit.cluster is None
    assert any("design's cluster column 't' is not in the table" in n for n in fit.notes)
    # a named cluster that is absent cannot be used: a typed error
    with pytest.raises(ClusterError, match="'nope' is not in the table"):
        factor_importance(results, design, cluster="nope")
    cells = cell_table(constant, ["tier", "t"])
    table, info = subgroups(cells, ["tier"], cluster="t", return_info=True)
    assert info.cluster is None and "wald" in set(table["test"])
    assert any("'t' has the single value 'same'" in n for n in info.notes)
    pd.testing.assert_frame_equal(subgroups(cells, ["tier"], cluster="t"), table)
    with pytest.raises(ClusterError):
        subgroups(cell_table(results, ["tier"]), ["tier"], cluster="t")
    with pytest.raises(Exception, match="Fisher's exact test assumes independent rows"):
        subgroups(cell_table(results, ["tier", "t"]), ["tier"], cluster="t", test="fisher")


# --- the bundled BBQ sample ---------------------------------------------------------------------
def test_bbq_sample_defaults_are_cluster_robust_and_say_so(capsys):
    """Issue 24's example: Physical_appearance had p = 1.1e-07 next to a cluster-bootstrap
    interval containing 0. By default now (the design's template_id, 150 templates), its
    p-value is cluster-robust, agrees with its interval, and the output says so."""
    from tests.analysis.cli_helpers import run_json

    data = ROOT / "sample_data" / "bbq_unifiedqa.csv.gz"
    dfile = ROOT / "sample_data" / "bbq_unifiedqa.design.yaml"
    out = run_json(capsys, "subgroups", data, "--design", dfile, "--factors", "category",
                   "--level", "1", "--power", "0.8")
    assert out["settings"]["cluster"] == "template_id"
    assert out["settings"]["n_clusters"] == 150
    assert "cluster-robust over 150 values of template_id" in out["settings"]["uncertainty"]
    row = {r["category"]: r for r in out["subgroups"]}["Physical_appearance"]
    assert row["test"] == "cluster t" and row["p_value"] > 0.05
    assert row["ci_low"] < 0 < row["ci_high"] and row["design_effect"] > 3
    plain = run_json(capsys, "subgroups", data, "--design", dfile, "--factors", "category",
                     "--level", "1", "--power", "0.8", "--no-cluster")
    prow = {r["category"]: r for r in plain["subgroups"]}["Physical_appearance"]
    assert prow["p_value"] < 1e-6 and prow["test"] == "wald"
    assert plain["settings"]["uncertainty"] == ("independent rows (no clustering); the "
                                                "design's cluster template_id is not used")
    # the MDE accounts for the clustering: larger by about the design effect
    assert row["mde_log_disparity"] > 3 * prow["mde_log_disparity"]
    imp = run_json(capsys, "importance", data, "--design", dfile, "--factors",
                   "category,context_condition")
    assert imp["settings"]["cluster"] == "template_id"
    assert imp["settings"]["covariance"] == "cluster" and imp["settings"]["reference_df"] is None
    assert imp["settings"]["df_method"] == "satterthwaite"  # issue 38 (was G - 1 = 149)
    assert all(t["design_effect"] > 1 for t in imp["terms"])
    assert any("cluster-robust over the 150 values of template_id" in n for n in imp["notes"])


def test_expanded_percentile_cluster_bootstrap_covers_with_16_clusters():
    """Issue 31 item 1: the plain percentile cluster bootstrap of LD covers ~92 % with 16
    templates; the expanded percentile interval used with a cluster (Hesterberg 2015)
    covers 93-97 %. 1,000 benchmarks x 400 cluster resamples, drawn as in
    analysis.bootstrap (multinomial cluster counts), intervals by its _interval."""
    from analysis.bootstrap import BOOT_CI_HIGH, BOOT_CI_LOW, _interval, expanded_tail

    g, r, b = 16, 1000, 400
    rng = np.random.default_rng(16)
    a, n, d, t = _subgroup_arrays(*_simulate(rng, g, r, effect=0.5), "within")
    w = rng.multinomial(g, np.full(g, 1 / g), size=(r, b)).astype(float)
    big_a, big_n, big_d, big_t = (np.einsum("rbg,rg->rb", w, x) for x in (a, n, d, t))
    p1, p0 = big_a / big_n, (big_d - big_a) / (big_t - big_n)
    ld = np.log(p1 / (1 - p1)) - np.log(p0 / (1 - p0))  # (r, b); no zero cells here
    truth = _marginal_ld(0.5)
    covered = {}
    for name, tail in (("plain", None), ("expanded", expanded_tail(0.95, g))):
        iv = _interval(np.zeros(r), ld.T, 0.95, tail)
        covered[name] = float(np.mean((iv[BOOT_CI_LOW] <= truth) & (truth <= iv[BOOT_CI_HIGH])))
    assert expanded_tail(0.95, g) == pytest.approx(
        stats.norm.cdf(-np.sqrt(16 / 15) * stats.t.ppf(0.975, 15)), rel=1e-12)
    assert covered["plain"] < 0.935
    assert 0.93 <= covered["expanded"] <= 0.97, covered


def test_cluster_bootstraps_carry_a_few_clusters_note():
    from analysis.bootstrap import bootstrap_ecdf, bootstrap_log_disparity, expanded_tail

    results, _ = _frame(seed=4, g=12)
    boot, info = bootstrap_log_disparity(results, ["w"], max_level=1, cluster="t",
                                         n_resamples=200, return_info=True)
    assert info.interval == "expanded percentile" and "bootstrap" not in boot.attrs
    tail = expanded_tail(0.95, 12)
    assert any("only 12 values of t" in n and f"percentiles {tail:.4f}" in n
               for n in info.notes)
    _, rows = bootstrap_log_disparity(results, ["w"], max_level=1, n_resamples=200,
                                      return_info=True)
    assert rows.interval == "percentile"
    assert not rows.notes
    _, ecdf = bootstrap_ecdf(results, ["w"], by="tier", cluster="t", n_resamples=50,
                             return_info=True)
    assert any("only 12 values of t" in n for n in ecdf.notes)
    assert ecdf.as_dict() == {"cluster": "t", "n_boot": 50, "seed": 0, "confidence": 0.95,
                              "interval": "percentile", "notes": list(ecdf.notes)}
