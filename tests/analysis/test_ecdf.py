"""eCDF and deviation metric (methods.md s. 3): area identity, KS against scipy, hand cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats
from statsmodels.stats.multitest import multipletests

from analysis.cells import cell_table
from analysis.columns import (
    DEVIATION_METRIC,
    DEVIATION_RATE,
    DEVIATIONS,
    GROUP_A,
    GROUP_B,
    MEAN_RATE,
    N_A,
    N_B,
    N_SUBGROUPS,
    P_ADJUSTED,
    P_VALUE,
    SHARE_ABOVE_CUTOFF,
    STATISTIC,
    SUBGROUP,
    N,
)
from analysis.design import Design, Outcome, apply_design, make_factor
from analysis.ecdf import (
    deviation_metric,
    ecdf_steps,
    ecdf_summary,
    ks_permutation_pvalue,
    ks_tests,
    subgroup_rates,
)
from analysis.errors import AnalysisError
from analysis.figures.ecdf import ecdf_figure


def area_by_integration(values, ideal):
    """methods.md s. 3 literally: int_0^p+ (C - Q) dp + int_p+^1 (Q - C) dp, Q the quantiles."""
    x = np.sort(np.asarray(values, dtype=float))
    m = len(x)

    def q(p):  # left-continuous empirical quantile function
        return x[min(max(math.ceil(p * m) - 1, 0), m - 1)]

    p_plus = np.count_nonzero(x <= ideal) / m  # Q(p) <= C exactly for p <= p+
    breaks = list(np.arange(1, m) / m)
    lower = integrate.quad(lambda p: ideal - q(p), 0, p_plus,
                           points=[b for b in breaks if b < p_plus] or None, limit=500)[0]
    upper = integrate.quad(lambda p: q(p) - ideal, p_plus, 1,
                           points=[b for b in breaks if b > p_plus] or None, limit=500)[0]
    return lower + upper


@pytest.mark.parametrize("ideal", [0.0, 0.1, 0.2, 0.35, 1.0])
def test_deviation_metric_equals_area_between_ecdf_and_ideal(ideal):
    rng = np.random.default_rng(int(ideal * 100))
    values = np.round(rng.beta(2, 5, size=23), 2)  # rounded: ties included
    values[:4] = 0.0
    dm = deviation_metric(values, ideal=ideal)
    assert dm == pytest.approx(np.mean(np.abs(values - ideal)), rel=1e-12)
    assert dm == pytest.approx(area_by_integration(values, ideal), rel=1e-7, abs=1e-10)


def test_deviation_metric_for_c_zero_is_area_over_the_ecdf():
    values = np.array([0.1, 0.1, 0.3, 0.6])
    ux, fx = ecdf_steps(values)
    # int_0^1 (1 - F(x)) dx for the step function F
    area = integrate.quad(lambda t: 1 - fx[np.searchsorted(ux, t, side="right") - 1]
                          if t >= ux[0] else 1.0, 0, 1, points=list(ux), limit=200)[0]
    assert deviation_metric(values) == pytest.approx(area, rel=1e-9)
    assert deviation_metric(values) == pytest.approx(0.275)


def test_deviation_metric_single_value_and_errors():
    assert deviation_metric([0.3], ideal=0.5) == pytest.approx(0.2)
    assert deviation_metric([0.3]) == pytest.approx(0.3)
    with pytest.raises(AnalysisError, match="at least one"):
        deviation_metric([])
    with pytest.raises(AnalysisError, match="missing"):
        deviation_metric([0.1, np.nan])


def test_ecdf_steps_with_ties():
    ux, fx = ecdf_steps([0.2, 0.0, 0.2, 0.5])
    np.testing.assert_allclose(ux, [0.0, 0.2, 0.5])
    np.testing.assert_allclose(fx, [0.25, 0.75, 1.0])


def hand_cells() -> pd.DataFrame:
    """model x g cells: m1: 1/10, 4/10, 0/5; m2: 6/10, 2/4 (m2 has no g3)."""
    return pd.DataFrame({
        "model": pd.Categorical(["m1", "m1", "m1", "m2", "m2"], categories=["m1", "m2", "m3"],
                                ordered=True),
        "g": pd.Categorical(["g1", "g2", "g3", "g1", "g2"], ordered=True),
        N: [10, 10, 5, 10, 4],
        DEVIATIONS: [1, 4, 0, 6, 2],
    })


def test_hand_rates_summary_and_ks():
    rates = subgroup_rates(hand_cells(), ["g"], by="model")
    assert rates[SUBGROUP].tolist() == ["g = g1", "g = g2", "g = g3", "g = g1", "g = g2"]
    np.testing.assert_allclose(rates[DEVIATION_RATE], [0.1, 0.4, 0.0, 0.6, 0.5])
    summary = ecdf_summary(rates, by="model", ideal=0.0, cutoff=0.2)
    assert summary["model"].tolist() == ["m1", "m2"]  # m3 has no rows: no curve
    assert summary[N_SUBGROUPS].tolist() == [3, 2]
    np.testing.assert_allclose(summary[DEVIATION_METRIC], [0.5 / 3, 0.55])
    np.testing.assert_allclose(summary[MEAN_RATE], [0.5 / 3, 0.55])  # unweighted
    np.testing.assert_allclose(summary[SHARE_ABOVE_CUTOFF], [1 / 3, 1.0])
    summary_c = ecdf_summary(rates, by="model", ideal=0.5)
    np.testing.assert_allclose(summary_c[DEVIATION_METRIC], [(0.4 + 0.1 + 0.5) / 3, 0.05])
    ks = ks_tests(rates, by="model")
    assert ks[[GROUP_A, GROUP_B, N_A, N_B]].values.tolist() == [["m1", "m2", 3, 2]]
    assert ks[STATISTIC].iloc[0] == pytest.approx(1.0)  # every m2 rate above every m1 rate
    assert ks[P_VALUE].iloc[0] == pytest.approx(stats.ks_2samp([0.1, 0.4, 0.0],
                                                               [0.6, 0.5]).pvalue)


def simulated_cells(seed: int = 0):
    rng = np.random.default_rng(seed)
    n = 6000
    frame = pd.DataFrame({
        "model": rng.choice(["A", "B", "C"], n),
        "f1": rng.choice([f"a{i}" for i in range(6)], n),
        "f2": rng.choice([f"b{i}" for i in range(5)], n),
    })
    shift = frame["model"].map({"A": -1.5, "B": -0.5, "C": -1.4})
    noise = frame["f1"].map({f"a{i}": 0.3 * i for i in range(6)})
    frame["deviation"] = (rng.random(n) < 1 / (1 + np.exp(-(shift + noise)))).astype(int)
    factors = ["model", "f1", "f2"]
    design = Design(tuple(make_factor(frame, f) for f in factors), Outcome("deviation"))
    results = apply_design(frame, design)
    return results, cell_table(results, factors)


def test_rates_match_raw_rows_and_levels():
    results, cells = simulated_cells()
    rates = subgroup_rates(cells, ["f1", "f2"], by="model")
    raw = results.groupby(["model", "f1", "f2"], observed=True)["deviation"].mean()
    mine = rates.set_index(["model", "f1", "f2"])[DEVIATION_RATE]
    assert mine.to_dict() == pytest.approx(raw.to_dict())
    level1 = subgroup_rates(cells, ["f1", "f2"], by="model", level=1)
    assert len(level1) == 3 * (6 + 5)
    raw1 = results.groupby(["model", "f2"], observed=True)["deviation"].mean()
    mine1 = level1[level1["f2"].notna()].set_index(["model", "f2"])[DEVIATION_RATE]
    assert mine1.to_dict() == pytest.approx(raw1.to_dict())


def test_pairwise_ks_equals_scipy_and_hand_statistic():
    _, cells = simulated_cells(seed=1)
    rates = subgroup_rates(cells, ["f1", "f2"], by="model")
    ks = ks_tests(rates, by="model")
    assert ks[[GROUP_A, GROUP_B]].values.tolist() == [["A", "B"], ["A", "C"], ["B", "C"]]
    for r in ks.to_dict(orient="records"):
        xa = rates.loc[rates["model"] == r[GROUP_A], DEVIATION_RATE].to_numpy()
        xb = rates.loc[rates["model"] == r[GROUP_B], DEVIATION_RATE].to_numpy()
        ref = stats.ks_2samp(xa, xb)
        assert r[STATISTIC] == pytest.approx(ref.statistic)
        if r["method"].startswith("permutation"):  # tied rates: sequential random splits
            perm = stats.permutation_test(
                (xa, xb), lambda a, b: stats.ks_2samp(a, b).statistic, n_resamples=2000,
                alternative="greater", rng=np.random.default_rng(3))
            if r["method"] == "permutation (ties)":  # at most 9,999, stopped when clear
                assert r[P_VALUE] == pytest.approx(perm.pvalue, abs=max(0.02, 4 * r["mc_se"]))
                assert 99 <= r["n_resamples"] <= 9999
            else:  # an upper bound already below every BH threshold: no split drawn
                assert r["n_resamples"] == 0 and r["mc_se"] == 0
                assert r[P_VALUE] < 0.05 / 3  # the smallest of the 3 BH thresholds
                bound = r[P_VALUE]  # >= the exact p-value, which 2,000 splits estimate
                assert perm.pvalue <= bound + 4 * math.sqrt(bound * (1 - bound) / 2000)
        else:
            assert r["method"] == "exact"
            assert r[P_VALUE] == pytest.approx(ref.pvalue)
        grid = np.union1d(xa, xb)  # sup |F_a - F_b| over the pooled values, by hand
        fa = np.searchsorted(np.sort(xa), grid, side="right") / len(xa)
        fb = np.searchsorted(np.sort(xb), grid, side="right") / len(xb)
        assert r[STATISTIC] == pytest.approx(np.max(np.abs(fa - fb)))
    np.testing.assert_allclose(ks[P_ADJUSTED], multipletests(ks[P_VALUE], method="fdr_bh")[1])
    # model B deviates far more than A (effect 1.0 on the logit scale)
    assert ks.set_index([GROUP_A, GROUP_B]).loc[("A", "B"), P_VALUE] <= 1e-4


def _exact_split_pvalue(xa, xb):
    """Brute force: D over every split of the pooled values, by the eCDF definition."""
    import itertools

    pooled = np.concatenate([xa, xb])
    grid = np.unique(pooled)

    def d(a, b):
        fa = np.searchsorted(np.sort(a), grid, side="right") / len(a)
        fb = np.searchsorted(np.sort(b), grid, side="right") / len(b)
        return np.max(np.abs(fa - fb))

    d_obs = d(xa, xb)
    idx = range(len(pooled))
    ds = [d(pooled[list(c)], pooled[[i for i in idx if i not in c]])
          for c in itertools.combinations(idx, len(xa))]
    return d_obs, np.mean(np.array(ds) >= d_obs - 1e-12)


def test_ks_with_ties_uses_the_exact_permutation_distribution():
    xa, xb = np.array([0.0, 0.0, 0.0, 0.0, 0.1]), np.array([0.0, 0.0, 0.1, 0.2, 0.3, 0.4])
    d, p, method, used = ks_permutation_pvalue(xa, xb)
    d_ref, p_ref = _exact_split_pvalue(xa, xb)
    assert method == "exact permutation (ties)" and used == 462  # C(11, 5)
    assert d == pytest.approx(d_ref) and p == pytest.approx(p_ref, rel=1e-12)
    assert d == pytest.approx(0.5)  # at 0.1: F_a = 5/5, F_b = 3/6
    assert p == pytest.approx(102 / 462)  # 102 of the 462 splits reach D >= 0.5: 0.2208
    # the continuous-data p-value (no ties assumed) is conservative here: 0.3571
    assert stats.ks_2samp(xa, xb).pvalue == pytest.approx(0.3571, abs=5e-5)
    rates = pd.DataFrame({"model": ["m1"] * 5 + ["m2"] * 6, DEVIATION_RATE: np.r_[xa, xb]})
    ks = ks_tests(rates, by="model").iloc[0]
    assert ks["method"] == "exact permutation (ties)" and ks[P_VALUE] == pytest.approx(p)


def test_a_curve_with_one_subgroup_is_refused():
    rates = pd.DataFrame({"model": ["m1", "m2", "m2", "m3", "m3"],
                          DEVIATION_RATE: [0.1, 0.2, 0.3, 0.5, 0.6]})
    ks = ks_tests(rates, by="model").set_index([GROUP_A, GROUP_B])
    assert ks.loc[("m1", "m2"), "method"] == "refused"
    assert np.isnan(ks.loc[("m1", "m2"), STATISTIC]) and "single subgroup" in ks.loc[
        ("m1", "m2"), "note"]
    assert ks.loc[("m2", "m3"), STATISTIC] == pytest.approx(1.0)
    assert ks.loc[("m2", "m3"), P_VALUE] == pytest.approx(
        stats.ks_2samp([0.2, 0.3], [0.5, 0.6], method="exact").pvalue)  # 1/3
    assert ks.loc[("m2", "m3"), P_ADJUSTED] == ks.loc[("m2", "m3"), P_VALUE]  # one test
    one_each = pd.DataFrame({"model": ["m1", "m2"], DEVIATION_RATE: [0.1, 0.9]})
    with pytest.raises(AnalysisError, match="single subgroup"):
        ks_tests(one_each, by="model")


def test_one_curve_gives_no_ks_rows():
    rates = subgroup_rates(hand_cells()[lambda c: c["model"] == "m1"], ["g"], by="model")
    ks = ks_tests(rates, by="model")
    assert len(ks) == 0 and list(ks.columns)[:2] == [GROUP_A, GROUP_B]


def test_by_among_factors_is_refused():
    with pytest.raises(AnalysisError, match="also among"):
        subgroup_rates(hand_cells(), ["g", "model"], by="model")


def test_ecdf_figure_traces_cutoff_and_legend():
    rates = subgroup_rates(hand_cells(), ["g"], by="model")
    summary = ecdf_summary(rates, by="model")
    ks = ks_tests(rates, by="model")
    fig = ecdf_figure(rates, summary, by="model", ks=ks)
    assert len(fig.data) == 2
    m1 = fig.data[0]
    assert m1.line.shape == "hv"
    assert list(m1.x) == [0.0, 0.0, 0.1, 0.4, 1.0] and list(m1.y) == pytest.approx(
        [0, 1 / 3, 2 / 3, 1, 1])
    assert "DM 0.167" in m1.name and "3 subgroups" in m1.name
    assert [s.x0 for s in fig.layout.shapes] == [0.2]
    assert "Kolmogorov-Smirnov" in fig.layout.title.text
    assert fig.layout.xaxis.title.text == "Subgroup deviation rate"
    fig_c = ecdf_figure(rates, summary, by="model", ideal=0.5, cutoff=0.3)
    assert sorted(s.x0 for s in fig_c.layout.shapes) == [0.3, 0.5]
