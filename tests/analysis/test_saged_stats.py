"""SAGED's baseline statistics (analysis/saged_stats.py): by hand and against scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from analysis import saged_stats as S
from analysis.columns import (
    GROUP,
    KL_DIVERGENCE,
    MODE,
    N_PAIRED,
    PEARSON,
    PERCENTILE,
    PRECISION,
    RANGE,
    SPEARMAN,
    N,
)
from analysis.errors import AnalysisError


def test_kl_divergence_by_hand_and_with_scipy_entropy():
    # x, baseline on [0, 1], 2 bins [0, .5), [.5, 1]: P = (3/4, 1/4), Q = (1/4, 3/4)
    x, b = np.array([0.0, 0.1, 0.2, 1.0]), np.array([0.0, 0.6, 0.7, 1.0])
    expected = 0.75 * np.log(3) + 0.25 * np.log(1 / 3)
    assert S.kl_divergence(x, b, bins=2) == pytest.approx(expected, abs=1e-15)
    assert S.kl_divergence(x, b, bins=2) == pytest.approx(
        scipy.stats.entropy([0.75, 0.25], [0.25, 0.75]), abs=1e-15)
    assert S.kl_divergence(x, x, bins=10) == 0.0
    # 10 bins over the pooled range, against scipy on the same histograms
    rng = np.random.default_rng(1)
    x, b = rng.normal(0.2, 1, 300), rng.normal(0, 1, 200)
    edges = np.linspace(min(x.min(), b.min()), max(x.max(), b.max()), 11)
    p = np.histogram(x, edges)[0] / 300
    q = np.histogram(b, edges)[0] / 200
    p, q = np.where(p > 0, p, 1e-10), np.where(q > 0, q, 1e-10)
    assert S.kl_divergence(x, b) == pytest.approx(float(np.sum(p * np.log(p / q))), abs=1e-12)
    # stated smoothing: an empty baseline bin costs p * log(p / 1e-10)
    one = S.kl_divergence(np.array([0.0, 1.0]), np.array([0.0, 0.0]), bins=2)
    assert one == pytest.approx(0.5 * np.log(0.5 / 1e-10) + 0.5 * np.log(0.5 / 1.0))


def test_precision_correlation_mode_percentile_by_hand():
    x = np.array([0.1, 0.3, 0.5, np.nan, 0.9])
    b = np.array([0.1, 0.1, 0.6, 0.2, np.nan])
    # complete pairs: |0|, |0.2|, |0.1| -> within 0: 1/3; within 0.1: 2/3; within 0.2: 3/3
    assert S.precision(x, b) == pytest.approx(1 / 3)
    assert S.precision(x, b, tolerance=0.1) == pytest.approx(2 / 3)
    assert S.precision(x, b, tolerance=0.2) == 1.0
    rng = np.random.default_rng(2)
    u = rng.normal(size=40)
    v = u + rng.normal(size=40)
    v[::5] = v[1]  # ties for Spearman
    assert S.correlation(u, v) == pytest.approx(scipy.stats.pearsonr(u, v)[0], abs=1e-12)
    assert S.correlation(u, v, "spearman") == pytest.approx(scipy.stats.spearmanr(u, v)[0],
                                                            abs=1e-12)
    # mode: bins of 0.5 from min 0: [0,.5) 2 values, [.5,1) 3 values -> midpoint 0.75
    assert S.binned_mode(np.array([0.0, 0.2, 0.6, 0.7, 0.9, 1.6])) == pytest.approx(0.75)
    assert S.binned_mode(np.array([1.0, 1.1, 2.0, 2.2]), bin_width=0.5) == pytest.approx(1.25)


def test_table_per_group_with_baseline_and_normalisation():
    frame = pd.DataFrame({"g": ["a"] * 4 + ["b"] * 3,
                          "f": [0.0, 0.5, 1.0, 1.0, 2.0, 3.0, 4.0],
                          "base": [0.0, 0.5, 0.0, 1.0, 2.0, 2.0, None]})
    t = S.saged_statistics(frame, "f", "g", baseline="base", tolerance=0.0, percentile=25)
    a, b = t.iloc[0], t.iloc[1]
    assert (a[GROUP], a[N], a[N_PAIRED], b[N], b[N_PAIRED]) == ("a", 4, 4, 3, 2)
    # mode, range and percentile of the calibrated f - base: a 0, 0, 1, 0; b (paired) 0, 1
    assert a[RANGE] == 1.0 and b[RANGE] == 1.0
    assert a[PERCENTILE] == pytest.approx(0.0) and b[PERCENTILE] == pytest.approx(0.25)
    assert a[PRECISION] == pytest.approx(3 / 4) and b[PRECISION] == pytest.approx(1 / 2)
    assert a[PEARSON] == pytest.approx(scipy.stats.pearsonr([0, .5, 1, 1], [0, .5, 0, 1])[0])
    assert a[SPEARMAN] == pytest.approx(scipy.stats.spearmanr([0, .5, 1, 1], [0, .5, 0, 1])[0])
    assert a[MODE] == pytest.approx(0.25)  # [0, .5): 3 calibrated values
    # without the baseline: the feature itself (0, .5, 1, 1: [1, 1.5) holds 2 values)
    plain = S.saged_statistics(frame, "f", "g", percentile=25).iloc[0]
    assert plain[MODE] == pytest.approx(1.25) and plain[PERCENTILE] == pytest.approx(0.375)
    # the KL of group b uses its 2 complete pairs: P = {2, 3}, Q = {2, 2}
    assert b[KL_DIVERGENCE] == pytest.approx(S.kl_divergence(np.array([2.0, 3.0]),
                                                             np.array([2.0, 2.0])))
    # z-scores pooled over feature and baseline (ddof 0), like scipy.stats.zscore
    z = S.normalize(frame, ["f", "base"], "zscore")
    pooled = np.concatenate([frame["f"], frame["base"].dropna()])
    assert z["f"].to_numpy() == pytest.approx(scipy.stats.zscore(pooled)[:7])
    m = S.normalize(frame, ["f"], "minmax")
    assert m["f"].tolist() == pytest.approx([0, 0.125, 0.25, 0.25, 0.5, 0.75, 1.0])
    # normalising both columns the same way keeps precision (tolerance 0) unchanged
    tz = S.saged_statistics(frame, "f", "g", baseline="base", normalization="zscore")
    assert tz[PRECISION].tolist() == pytest.approx(t[PRECISION].tolist())
    assert tz[PEARSON].tolist() == pytest.approx(t[PEARSON].tolist(), nan_ok=True)
    assert np.isnan(t[PEARSON].iloc[1])  # group b's baseline is constant (2, 2)
    assert S.saged_statistics(frame, "f", "g").columns.tolist() == [
        "g", GROUP, N, MODE, RANGE, PERCENTILE]


def test_bad_input():
    frame = pd.DataFrame({"g": ["a", "b"], "f": [1.0, 1.0], "t": ["x", "y"]})
    with pytest.raises(AnalysisError, match="nothing to rescale"):
        S.normalize(frame, ["f"], "zscore")
    with pytest.raises(AnalysisError, match="not numbers"):
        S.saged_statistics(frame, "t", "g")
    with pytest.raises(AnalysisError, match="0-100"):
        S.saged_statistics(frame, "f", "g", percentile=120)
    with pytest.raises(AnalysisError, match="Normalisation is one of"):
        S.normalize(frame, ["f"], "robust")
    with pytest.raises(AnalysisError, match="must differ"):
        S.saged_statistics(frame, "f", "g", baseline="f")


@pytest.mark.parametrize("seed", range(4))
def test_statistics_of_a_grouping_equal_those_of_the_rows(seed):
    """``saged_statistics`` of the Disparity page's grouping (each group's values by one
    sort of its codes; issue 44) equals the rows' call exactly, with missing feature
    values, an unobserved category, two factors, integer and continuous features; the box
    figure of the grouping is the box figure of ``grouped_values`` (same JSON)."""
    from analysis import disparity as dsp
    from analysis.figures.disparity import box_figure, grouping_box_figure

    rng = np.random.default_rng(seed)
    n = 3000
    t = pd.DataFrame({
        "a": pd.Categorical(rng.choice(["x", "y", "z<b>"], n),
                            categories=["z<b>", "x", "y", "unused"]),
        "b": pd.Categorical(rng.choice(["p", "q"], n)),
        "f": rng.normal(size=n) if seed % 2 else rng.integers(0, 5, n).astype(float)})
    t.loc[rng.random(n) < 0.1, "f"] = np.nan
    by = ["a", "b"] if seed > 1 else ["a"]
    g = dsp.grouping(t, "f", by)
    pd.testing.assert_frame_equal(S.saged_statistics(g, "f", by, percentile=30),
                                  S.saged_statistics(t, "f", by, percentile=30),
                                  check_exact=True)
    assert grouping_box_figure(g, feature="f<i>").to_json() == \
        box_figure(dsp.grouped_values(g, "f", by), feature="f<i>").to_json()
    with pytest.raises(AnalysisError, match="give the rows"):
        S.saged_statistics(g, "f", by, normalization="zscore")
    with pytest.raises(AnalysisError, match="give the rows"):
        S.saged_statistics(g, "f", ["a"] if len(by) == 2 else ["b"])
