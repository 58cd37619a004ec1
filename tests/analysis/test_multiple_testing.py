"""The multiple-testing kernel equals statsmodels' multipletests, method by method."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from analysis.errors import AnalysisError
from analysis.multiple_testing import METHODS, adjust_p, adjusted_label, benjamini_hochberg, holm

STATSMODELS = {"bh": "fdr_bh", "by": "fdr_by", "holm": "holm", "bonferroni": "bonferroni",
               "hommel": "hommel"}


def _families() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out = [rng.uniform(size=n) for n in (1, 2, 5, 40, 500)]
    out.append(np.concatenate([rng.uniform(0, 1e-6, 30), rng.uniform(size=30)]))
    out.append(np.array([0.01, 0.01, 0.04, 0.04, 0.04, 0.2, 1.0, 0.0]))  # ties, 0 and 1
    return out


@pytest.mark.parametrize("method", METHODS)
def test_equals_statsmodels(method):
    for p in _families():
        want = multipletests(p, method=STATSMODELS[method])[1]
        np.testing.assert_allclose(adjust_p(p, method), want, rtol=1e-13, atol=0)


@pytest.mark.parametrize("method", METHODS)
def test_missing_p_values_stay_missing_and_leave_the_family(method):
    p = np.array([0.01, np.nan, 0.03, 0.2, np.nan, 0.04])
    got = adjust_p(p, method)
    assert np.isnan(got[[1, 4]]).all()
    kept = ~np.isnan(p)
    np.testing.assert_allclose(got[kept], multipletests(p[kept], method=STATSMODELS[method])[1],
                               rtol=1e-13)
    assert np.isnan(adjust_p([np.nan, np.nan], method)).all()
    assert adjust_p([], method).shape == (0,)


def test_hand_computed():
    p = [0.01, 0.04, 0.03]
    np.testing.assert_allclose(adjust_p(p, "bonferroni"), [0.03, 0.12, 0.09])
    np.testing.assert_allclose(adjust_p(p, "holm"), [0.03, 0.06, 0.06])  # 3p1, max(2p3), p2
    np.testing.assert_allclose(adjust_p(p, "bh"), [0.03, 0.04, 0.04])
    c = 1 + 1 / 2 + 1 / 3
    np.testing.assert_allclose(adjust_p(p, "by"), [0.03 * c, 0.04 * c, 0.04 * c])


def test_the_old_names_are_the_kernel():
    """Other modules' imports keep working and give the kernel's numbers."""
    from analysis import compare, subgroups

    assert subgroups.benjamini_hochberg is benjamini_hochberg
    assert compare.holm is holm
    p = np.random.default_rng(1).uniform(size=20)
    for method in ("holm", "bh"):
        np.testing.assert_array_equal(compare.adjust_p(p, method), adjust_p(p, method))


def test_unknown_method_and_labels():
    with pytest.raises(AnalysisError, match="Unknown p-value adjustment 'fdr'.*bh, by, holm"):
        adjust_p([0.1], "fdr")
    assert [adjusted_label(m) for m in METHODS] == ["p (BH)", "p (BY)", "p (Holm)",
                                                    "p (Bonferroni)", "p (Hommel)"]


def test_hommel_hand_computed():
    """Hommel on (0.01, 0.02, 0.04): every intersection's Simes p is at most 0.04, so
    p_adj = (0.03, 0.04, 0.04) (Holm gives 0.03, 0.04, 0.04 too; 0.01, 0.025, 0.03 is
    where they part: Hommel 0.03, 0.03, 0.03 against Holm 0.03, 0.05, 0.05)."""
    np.testing.assert_allclose(adjust_p([0.01, 0.02, 0.04], "hommel"), [0.03, 0.04, 0.04])
    np.testing.assert_allclose(adjust_p([0.01, 0.025, 0.03], "hommel"), [0.03, 0.03, 0.03])
    np.testing.assert_allclose(adjust_p([0.01, 0.025, 0.03], "holm"), [0.03, 0.05, 0.05])


@pytest.mark.parametrize("method", METHODS)
def test_decision_levels_hold_every_threshold(method):
    """Between two consecutive levels no adjusted p crosses ``alpha``: for random families,
    moving one p-value within an interval of the levels (others fixed) never changes which
    tests the method rejects at alpha = 0.05."""
    from analysis.multiple_testing import decision_levels

    rng = np.random.default_rng(3)
    alpha, k = 0.05, 4
    edges = [0.0, *decision_levels(method, alpha, k), 1.0]
    for _ in range(60):
        p = rng.uniform(0, 0.1, size=k)
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            seen = set()
            for x in np.linspace(lo, hi, 7)[1:-1]:
                q = p.copy()
                q[0] = x
                seen.add(tuple(adjust_p(q, method) <= alpha))
            assert len(seen) == 1, (method, lo, hi, p)
