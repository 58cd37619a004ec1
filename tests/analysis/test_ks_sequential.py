"""The eCDF's sequential KS permutation test with ties (issue 44.2): the same decisions
as the previous fixed 9,999-split test, p-values within Monte Carlo error, its size
under the null, and the tail bound that decides clear differences without splits."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.columns import DEVIATION_RATE, MC_SE, N_RESAMPLES, P_ADJUSTED, P_VALUE
from analysis.ecdf import ks_permutation_pvalue, ks_tail_bound, ks_tests
from tests.analysis.test_ecdf import _exact_split_pvalue


def previous_pvalue(xa, xb, n_resamples=9999, seed=0):
    """The previous implementation's random-split p-value (argsort of uniforms, fixed m)."""
    n_a, n = len(xa), len(xa) + len(xb)
    pooled = np.concatenate([xa, xb])
    order = np.argsort(pooled, kind="stable")
    z = pooled[order]
    last = np.flatnonzero(np.r_[z[1:] != z[:-1], True])

    def d(labels):
        ca = np.cumsum(labels, axis=-1)[..., last]
        return np.max(np.abs(ca / n_a - ((last + 1) - ca) / (n - n_a)), axis=-1)

    d_obs = d((order < n_a).astype(np.int64))
    rng = np.random.default_rng(seed)
    hits, left = 0, n_resamples
    while left > 0:
        m = min(left, 2000)
        labels = (np.argsort(rng.random((m, n)), axis=1) < n_a).astype(np.int64)
        hits += int(np.sum(d(labels) >= d_obs - 1e-12))
        left -= m
    return (hits + 1) / (n_resamples + 1)


def tied_pair(rng, n_a, n_b, shift):
    """Subgroup rates on a grid of 0.05 (many ties), curve b shifted."""
    xa = np.round(rng.beta(2, 6, n_a) * 20) / 20
    xb = np.round(np.clip(rng.beta(2, 6, n_b) + shift, 0, 1) * 20) / 20
    return xa, xb


# 0.055, 0.058: near 0.05 (499 and 1,199 splits); 0.06-0.3: decided by the tail bound
@pytest.mark.parametrize("shift", [0.0, 0.02, 0.055, 0.058, 0.06, 0.1, 0.3])
def test_same_decision_and_p_within_monte_carlo_error_of_the_previous_test(shift):
    rng = np.random.default_rng(int(shift * 100) + 11)
    xa, xb = tied_pair(rng, 120, 150, shift)
    old = previous_pvalue(xa, xb)
    d, p, method, used = ks_permutation_pvalue(xa, xb, stop_at=[0.05])
    if method == "permutation bound (ties)":
        assert used == 0 and p < 0.05 and old <= p + 4 * math.sqrt(old * (1 - old) / 9999)
    else:
        assert method == "permutation (ties)" and 99 <= used <= 9999
        se = math.sqrt(p * (1 - p) / used + old * (1 - old) / 9999)
        assert abs(p - old) <= 4 * se + 1 / (used + 1)
    assert (p < 0.05) == (old < 0.05)
    _, fixed, _, m = ks_permutation_pvalue(xa, xb)  # no stopping: all 9,999 splits
    assert m == 9999 and abs(fixed - old) <= 4 * math.sqrt(2 * old * (1 - old) / 9999) + 2e-4


def test_clear_null_stops_at_99_splits_and_clear_effect_needs_none():
    rng = np.random.default_rng(2)
    xa, xb = tied_pair(rng, 300, 300, 0.0)
    xb = rng.permutation(np.r_[xa, xb])[:300]  # the same distribution
    _, p, method, used = ks_permutation_pvalue(xa, xb, stop_at=[0.05])
    if p > 0.3:
        assert (method, used) == ("permutation (ties)", 99)
    xa, xb = tied_pair(rng, 300, 300, 0.3)
    _, p, method, used = ks_permutation_pvalue(xa, xb, stop_at=[0.05])
    assert method == "permutation bound (ties)" and used == 0 and p < 1e-10


def test_the_first_splits_do_not_depend_on_the_maximum():
    """A stopped test's p-value is the fixed-m test's p-value at its stopping point."""
    rng = np.random.default_rng(4)
    xa, xb = tied_pair(rng, 80, 90, 0.03)
    _, p, _, used = ks_permutation_pvalue(xa, xb, stop_at=[0.05], seed=7)
    _, p_fixed, _, m = ks_permutation_pvalue(xa, xb, n_resamples=used, seed=7)
    assert m == used and p == p_fixed


def test_tail_bound_is_never_below_the_exact_permutation_pvalue():
    rng = np.random.default_rng(9)
    ratios = []
    for _ in range(60):
        n_a, n_b = rng.integers(3, 8, 2)
        xa = rng.integers(0, 4, n_a) / 4
        xb = (rng.integers(0, 4, n_b) + rng.integers(0, 3)) / 4
        pooled = np.concatenate([xa, xb])
        order = np.argsort(pooled, kind="stable")
        z = pooled[order]
        last = np.flatnonzero(np.r_[z[1:] != z[:-1], True])
        bound = ks_tail_bound(order < n_a, last, n_a, n_b)
        exact = _exact_split_pvalue(xa, xb)[1]
        assert bound >= exact - 1e-12
        ratios.append(bound / exact)
    assert min(ratios) < 1.5  # and not uselessly loose everywhere


def test_size_under_the_null_with_ties():
    """300 seeded null data sets (two curves of 40 tied rates from one distribution):
    the sequential test at 0.05 rejects at most 0.05 + 3 Monte Carlo SEs (0.088)."""
    rng = np.random.default_rng(20261201)
    rejections, splits = 0, []
    for _ in range(300):
        pooled = np.round(rng.beta(2, 6, 80) * 10) / 10
        _, p, method, used = ks_permutation_pvalue(pooled[:40], pooled[40:], stop_at=[0.05],
                                                   seed=int(rng.integers(1 << 30)))
        rejections += p < 0.05
        splits.append(used)
    rate = rejections / 300
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 300)
    assert rate >= 0.005  # a test, not a constant
    assert np.median(splits) <= 199  # clear nulls stop early


def test_ks_tests_reports_monte_carlo_error_and_bh_thresholds():
    rng = np.random.default_rng(6)
    curves = {"m1": tied_pair(rng, 200, 1, 0)[0], "m2": tied_pair(rng, 200, 1, 0)[0],
              "m3": tied_pair(rng, 1, 200, 0.25)[1]}
    rates = pd.DataFrame({"model": np.repeat(list(curves), 200),
                          DEVIATION_RATE: np.concatenate(list(curves.values()))})
    ks = ks_tests(rates, by="model")
    fixed = ks_tests(rates, by="model", adaptive=False)
    assert (fixed[N_RESAMPLES] == 9999).all()
    assert ((ks[P_ADJUSTED] < 0.05) == (fixed[P_ADJUSTED] < 0.05)).all()
    for r in ks.to_dict(orient="records"):
        if r["method"] == "permutation (ties)":
            assert r[MC_SE] == pytest.approx(math.sqrt(r[P_VALUE] * (1 - r[P_VALUE])
                                                       / r[N_RESAMPLES]))
        else:
            assert r["method"] == "permutation bound (ties)" and r[MC_SE] == 0
            assert r[P_VALUE] < 0.05 / 3 and "no random splits" in r["note"]
    assert ks[N_RESAMPLES].sum() < fixed[N_RESAMPLES].sum() / 10
    with pytest.raises(Exception, match="alpha"):
        ks_tests(rates, by="model", alpha=1.5)


def test_ks_tests_hommel_sequential_decisions_match_the_fixed_splits():
    """With ``adjust="hommel"`` the sequential splits stop on Hommel's thresholds
    (``c alpha / j``) and reject the same pairs as all 9999 splits; ``p_adjusted`` is
    statsmodels' hommel of the p-values."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(6)
    curves = {"m1": tied_pair(rng, 200, 1, 0)[0], "m2": tied_pair(rng, 200, 1, 0)[0],
              "m3": tied_pair(rng, 1, 200, 0.25)[1]}
    rates = pd.DataFrame({"model": np.repeat(list(curves), 200),
                          DEVIATION_RATE: np.concatenate(list(curves.values()))})
    ks = ks_tests(rates, by="model", adjust="hommel")
    fixed = ks_tests(rates, by="model", adjust="hommel", adaptive=False)
    assert ((ks[P_ADJUSTED] < 0.05) == (fixed[P_ADJUSTED] < 0.05)).all()
    np.testing.assert_allclose(ks[P_ADJUSTED], multipletests(ks[P_VALUE], method="hommel")[1],
                               rtol=1e-12)
