"""Paired comparison per subgroup with a cluster (issue 38 items 4 and 7).

Seeded simulations of paired benchmarks: G templates (clusters) of 20 prompts answered by
two models, a template effect shared by both and a template-specific model difference
(so the pairs of a template are correlated). A template-level subgroup rests on k = 2, 3,
5 or all G templates. The default cluster interval (bootstrap spread expanded by
sqrt(k / (k - 1)), t on k - 1 df) covers the population difference in deviation rate and
in LD in 93-97 % of benchmarks, or more on few templates (conservative: t on 1-4 df
with a bootstrap spread); the plain percentile interval it
replaces covers ~50 % at k = 2. 200 benchmarks x 300 cluster resamples per setting:
Monte Carlo SE of a coverage 1.5 points, so the bounds are 95 % +- 2 and the lower bound
is relaxed to 91 % at k = 2 (t on 1 df). A subgroup on one template gets no interval.
"""

from __future__ import annotations

import numpy as np
import pytest

from analysis.compare import paired_bootstrap

SD, TAU, M = 0.8, 0.5, 20
SHIFT = 0.4  # model b's extra log-odds inside the subgroup


def _expit(x):
    return 1 / (1 + np.exp(-x))


def _truth(rng) -> tuple[float, float]:
    """Population difference in rate (b - a) inside the subgroup and LD_b - LD_a."""
    u, t, v = rng.normal(0, SD, 400_000), rng.normal(0, TAU, 400_000), rng.normal(0, .5, 400_000)
    pa = _expit(-0.3 + u + v).mean()
    pb_in = _expit(-0.3 + u + v + 0.3 + t + SHIFT).mean()
    pb_out = _expit(-0.3 + u + v + 0.3 + t).mean()
    logit = np.log
    ld_b = logit(pb_in / (1 - pb_in)) - logit(pb_out / (1 - pb_out))
    return pb_in - pa, ld_b - 0.0  # model a: no LD (same law inside and outside)


def _benchmark(rng, g: int, k: int):
    u, tau = rng.normal(0, SD, g), rng.normal(0, TAU, g)
    n_ec, a_ec, b_ec = (np.zeros((g, 2)) for _ in range(3))
    for c in range(g):
        cell = 1 if c < k else 0
        v = rng.normal(0, 0.5, M)
        xa = rng.random(M) < _expit(-0.3 + u[c] + v)
        xb = rng.random(M) < _expit(-0.3 + u[c] + v + 0.3 + tau[c] + SHIFT * cell)
        n_ec[c, cell], a_ec[c, cell], b_ec[c, cell] = M, xa.sum(), xb.sum()
    return n_ec, a_ec, b_ec


@pytest.mark.parametrize("g", [8, 12, 40])
def test_cluster_intervals_cover_per_subgroup(g):
    rng = np.random.default_rng(380 + g)
    diff_truth, ld_truth = _truth(rng)
    member = np.array([[0.0, 1.0]])
    for k in (2, 3, 5, g):
        hits = {"difference": [], "ld": [], "plain": []}
        for r in range(200):
            n_ec, a_ec, b_ec = _benchmark(rng, g, k)
            res = paired_bootstrap(n_ec, a_ec, b_ec, member, n_resamples=300, seed=r,
                                   clustered=True)
            assert res["n_clusters"][0] == k
            hits["difference"].append(res["ci_low"][0] <= diff_truth <= res["ci_high"][0])
            if k < g:  # LD needs rows outside the subgroup
                hits["ld"].append(res["ld_ci_low"][0] <= ld_truth <= res["ld_ci_high"][0])
            plain = paired_bootstrap(n_ec, a_ec, b_ec, member, n_resamples=300, seed=r,
                                     log_disparity=False)
            hits["plain"].append(plain["ci_low"][0] <= diff_truth <= plain["ci_high"][0])
        low = 0.91 if k == 2 else 0.93
        for name in ("difference", "ld"):
            if hits[name]:
                cover = float(np.mean(hits[name]))
                print(g, k, name, cover)
                assert cover >= low, (g, k, name, cover)
                if k == g:  # spread over every template: near the nominal level
                    assert cover <= 0.98, (g, k, name, cover)
        if k == 2:
            assert np.mean(hits["plain"]) < 0.7


def test_one_cluster_subgroup_has_no_interval():
    rng = np.random.default_rng(1)
    n_ec, a_ec, b_ec = _benchmark(rng, 8, 1)
    res = paired_bootstrap(n_ec, a_ec, b_ec, np.array([[0.0, 1.0]]), n_resamples=100,
                           clustered=True)
    assert res["n_clusters"][0] == 1
    assert np.isnan(res["ci_low"][0]) and np.isnan(res["p_value"][0])
    assert np.isnan(res["ld_ci_low"][0]) and np.isnan(res["ld_p_value"][0])


@pytest.mark.parametrize("g", [8, 12, 40])
def test_cluster_odds_ratio_interval_covers(g):
    """The conditional odds ratio only_b / only_a with template-to-template variation in
    the discordant split (log-odds SD 0.6): the CR2 / Satterthwaite interval covers the
    population odds ratio E[p] / E[1 - p] in 93-98 % of 400 benchmarks; the exact
    (Clopper-Pearson) interval, which treats the pairs as independent, covers less."""
    from analysis.compare import cluster_odds_ratio, conditional_odds_ratio

    rng = np.random.default_rng(4 + g)
    p_all = _expit(0.3 + rng.normal(0, 0.6, 1_000_000))
    truth = p_all.mean() / (1 - p_all.mean())
    robust, exact = [], []
    for _ in range(400):
        m = rng.poisson(12, g) + 1
        c = rng.binomial(m, _expit(0.3 + rng.normal(0, 0.6, g)))
        lo, hi, df, k = cluster_odds_ratio(m - c, c)
        assert k == g and 1 <= df <= g - 1 + 1e-9
        robust.append(lo <= truth <= hi)
        _, elo, ehi = conditional_odds_ratio(int((m - c).sum()), int(c.sum()))
        exact.append(elo <= truth <= ehi)
    cover = float(np.mean(robust))
    assert 0.93 <= cover <= 0.98, cover
    assert np.mean(exact) < cover


def test_mcnemar_with_equal_discordant_counts_gives_p_one():
    """R: mcnemar.test(matrix(c(10, 30, 30, 5), 2)) gives statistic 0, p-value 1 (Yates'
    correction is applied only when the discordant counts differ)."""
    from analysis.compare import mcnemar_test

    assert mcnemar_test(30, 30, test="chi2") == ("mcnemar_chi2", 0.0, 1.0)
    # R: mcnemar.test(matrix(c(10, 30, 40, 5), 2)): McNemar's chi-squared = 1.1571, p 0.282
    name, stat, p = mcnemar_test(30, 40, test="chi2")
    assert stat == pytest.approx(81 / 70) and p == pytest.approx(0.28205, abs=1e-5)


def test_cluster_mean_difference_is_cr2_with_satterthwaite_df():
    """Unequal clusters: the SE is Bell-McCaffrey's CR2 of the intercept-only regression,
    ``sum_g e_g^2 / (1 - n_g / n) / n^2``, and the df ``1 / (sum a_g^2 + (sum u_g^2)^2 -
    sum u_g^4)`` with ``a_g = n_g / n``, ``u_g = a_g / sqrt(1 - a_g)`` (hand formulas);
    equal clusters give statsmodels' cluster OLS with t on G - 1
    (test_compare.py::test_cluster_robust_difference_equals_statsmodels_cluster_ols)."""
    from scipy import stats

    from analysis.compare import cluster_mean_difference

    rng = np.random.default_rng(12)
    sizes = np.array([3, 30, 5, 12, 8, 2, 40])
    clusters = np.repeat(np.arange(len(sizes)), sizes)
    d = rng.normal(0.1, 1, len(sizes))[clusters] + rng.normal(size=len(clusters))
    mean, lo, hi, p, g = cluster_mean_difference(d, clusters)
    n = len(d)
    e = np.bincount(clusters, weights=d - d.mean())
    a = sizes / n
    se = np.sqrt(np.sum(e**2 / (1 - a)) / n**2)
    u2 = a**2 / (1 - a)
    df = 1 / (np.sum(a**2) + u2.sum() ** 2 - np.sum(u2**2))
    assert g == 7 and df < 6
    assert (hi - mean) == pytest.approx(stats.t.ppf(0.975, df) * se, rel=1e-9)
    assert p == pytest.approx(2 * stats.t.sf(abs(mean) / se, df), rel=1e-9)
