"""Numeric-feature disparity: every statistic pinned to numpy/scipy or a hand computation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import disparity as dsp
from analysis.columns import (
    GROUP,
    IMPACT_RATIO,
    METRIC,
    N_PERMUTATIONS,
    N_SELECTED,
    NOTE,
    P_VALUE,
    PASSES_FOUR_FIFTHS,
    SELECTION_RATE,
    SELECTION_RULE,
    STANDARD,
    VALUE,
    N,
)
from analysis.design import Design, apply_design, make_factor
from analysis.errors import AnalysisError
from tests.app.apptools import ROOT
from tests.oracles.dixon import simulate_dixon_critical

CLASSIC = [0.189, 0.167, 0.187, 0.183, 0.186, 0.182, 0.181, 0.184, 0.181, 0.177]


def _reference(x: np.ndarray, name: str, quantiles=(0.25, 0.75)) -> float:
    """The statistic computed the obvious way (numpy / scipy)."""
    if name == "mean":
        return float(np.mean(x))
    if name == "median":
        return float(np.median(x))
    if name == "variance":
        return float(np.var(x, ddof=1)) if len(x) > 1 else math.nan
    if name == "std":
        return float(np.std(x, ddof=1)) if len(x) > 1 else math.nan
    if name == "skewness":
        return float(stats.skew(x, bias=False)) if len(x) > 2 else math.nan
    if name == "kurtosis":
        return float(stats.kurtosis(x, bias=False)) if len(x) > 3 else math.nan
    return float(np.quantile(x, quantiles[1]) - np.quantile(x, quantiles[0]))


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(7)
    n = 400
    return pd.DataFrame({
        "g": rng.choice(["a", "b", "c", "d"], n, p=[0.4, 0.3, 0.2, 0.1]),
        "h": rng.choice(["x", "y"], n),
        "f": np.round(rng.gamma(2.0, 1.0, n), 2),  # skewed, with ties
        "base": rng.normal(0, 0.5, n),
    })


@pytest.fixture(scope="module")
def ssqa():
    frame = pd.read_csv(ROOT / "sample_data" / "ssqa_simulated.csv.gz")
    design = Design(tuple(make_factor(frame, f) for f in ["model", "pachankis_cluster"]))
    return apply_design(frame, design)


# --- summary statistics --------------------------------------------------------------------
def test_group_summary_matches_numpy_and_scipy(frame):
    out = dsp.group_summary(frame, "f", ["g", "h"], quantiles=(0.1, 0.9))
    assert len(out) == frame.groupby(["g", "h"]).ngroups
    for row in out.to_dict(orient="records"):
        x = frame.loc[(frame.g == row["g"]) & (frame.h == row["h"]), "f"].to_numpy()
        assert row[N] == len(x)
        assert row[GROUP] == f"{row['g']} / {row['h']}"
        for name in dsp.STATISTICS:
            assert row[name] == pytest.approx(_reference(x, name, (0.1, 0.9)), rel=1e-9,
                                              abs=1e-12), name


def test_small_groups_give_nan_where_a_statistic_is_undefined():
    df = pd.DataFrame({"g": ["one", "two", "two", "three", "three", "three"],
                       "f": [1.0, 1.0, 3.0, 1.0, 2.0, 4.0]})
    out = dsp.group_summary(df, "f", "g").set_index(GROUP)
    assert math.isnan(out.loc["one", "variance"]) and out.loc["one", "mean"] == 1.0
    assert out.loc["two", "variance"] == 2.0 and math.isnan(out.loc["two", "skewness"])
    assert out.loc["three", "skewness"] == pytest.approx(stats.skew([1, 2, 4], bias=False))
    assert math.isnan(out.loc["three", "kurtosis"])
    const = dsp.group_summary(pd.DataFrame({"g": ["a"] * 5, "f": [2.0] * 5}), "f", "g")
    assert const["variance"].iloc[0] == 0 and math.isnan(const["skewness"].iloc[0])


def test_baseline_calibration_is_feature_minus_baseline_per_row(frame):
    df = frame.copy()
    df.loc[[3, 10], "base"] = np.nan
    out = dsp.group_summary(df, "f", "g", baseline="base").set_index(GROUP)
    manual = df.assign(cal=df.f - df.base).dropna(subset=["cal"])
    ref = manual.groupby("g")["cal"].agg(["mean", "median", "count"])
    assert out["mean"].to_dict() == pytest.approx(ref["mean"].to_dict())
    assert out["median"].to_dict() == pytest.approx(ref["median"].to_dict())
    assert out[N].to_dict() == ref["count"].to_dict()
    assert dsp.grouping(df, "f", "g", baseline="base").n_missing == 2
    assert dsp.disparity_report(df, "f", "g", baseline="base").settings["n_missing"] == 2


def test_bad_feature_columns_raise_named_errors(frame):
    df = frame.assign(text=["x"] * len(frame))
    with pytest.raises(AnalysisError, match="'text' must hold numbers"):
        dsp.group_summary(df, "text", "g")
    with pytest.raises(AnalysisError, match="no feature column 'nope'"):
        dsp.group_summary(df, "nope", "g")
    with pytest.raises(AnalysisError, match="cannot also group"):
        dsp.group_summary(df, "f", ["f"])
    with pytest.raises(AnalysisError, match="infinite"):
        dsp.group_summary(df.assign(f=np.inf), "f", "g")
    with pytest.raises(AnalysisError, match="missing in every row"):
        dsp.group_summary(df.assign(f=np.nan), "f", "g")


# --- selection rates -------------------------------------------------------------------------
SEL = pd.DataFrame({"g": ["A"] * 4 + ["B"] * 5, "f": [1, 2, 6, 7, 3, 4, 8, 9, 10]})


def test_selection_rate_above_the_mean_by_hand():
    out = dsp.selection_rates(SEL, "f", "g").set_index(GROUP)
    assert out[STANDARD].iloc[0] == pytest.approx(50 / 9)  # mean of all rows
    assert out[N_SELECTED].to_dict() == {"A": 2, "B": 3}  # 6, 7 / 8, 9, 10
    assert out[SELECTION_RATE].to_dict() == pytest.approx({"A": 0.5, "B": 0.6})
    assert out[IMPACT_RATIO].to_dict() == pytest.approx({"A": 0.5 / 0.6, "B": 1.0})
    assert out[PASSES_FOUR_FIFTHS].all()  # 0.833 >= 0.8


def test_selection_rate_standards_and_directions():
    below = dsp.selection_rates(SEL, "f", "g", standard="median", direction="below")
    # median of all rows = 6: x <= 6 -> A {1, 2, 6}, B {3, 4}
    assert below.set_index(GROUP)[SELECTION_RATE].to_dict() == pytest.approx(
        {"A": 0.75, "B": 0.4})
    assert (below[SELECTION_RULE] == "x <= standard").all()
    strict = dsp.selection_rates(SEL, "f", "g", standard="median", direction="below",
                                 comparison="strict")
    # x < 6 -> A {1, 2}, B {3, 4}
    assert strict.set_index(GROUP)[SELECTION_RATE].to_dict() == pytest.approx(
        {"A": 0.5, "B": 0.4})
    assert (strict[SELECTION_RULE] == "x < standard").all()
    fixed = dsp.selection_rates(SEL, "f", "g", standard="value", value=2.5)
    assert fixed.set_index(GROUP)[SELECTION_RATE].to_dict() == pytest.approx(
        {"A": 0.5, "B": 1.0})
    assert not fixed.set_index(GROUP).loc["A", PASSES_FOUR_FIFTHS]  # 0.5 < 0.8
    q = dsp.selection_rates(SEL, "f", "g", standard="quantile", quantile=0.75)
    assert q[STANDARD].iloc[0] == pytest.approx(np.quantile(SEL.f, 0.75))  # 8
    within = dsp.selection_rates(SEL, "f", "g", standard="value", value=5,
                                 direction="within", tolerance=1.5)
    # |x - 5| <= 1.5: A {6}, B {4}
    assert within.set_index(GROUP)[N_SELECTED].to_dict() == {"A": 1, "B": 1}
    none = dsp.selection_rates(SEL, "f", "g", standard="value", value=100)
    assert none[IMPACT_RATIO].isna().all()
    with pytest.raises(AnalysisError, match="tolerance"):
        dsp.selection_rates(SEL, "f", "g", direction="within")
    with pytest.raises(AnalysisError, match="needs a number"):
        dsp.selection_rates(SEL, "f", "g", standard="value")


def test_selection_counts_ties_with_the_standard_as_saged():
    # integer scores, the median (2) as standard: SAGED's x >= 2 gives A 1/2, B 2/2, IR 0.5;
    # the strict x > 2 gives A 0/2, B 1/2, IR 0.0
    df = pd.DataFrame({"g": ["A", "A", "B", "B"], "f": [1, 2, 2, 3]})
    inclusive = dsp.selection_rates(df, "f", "g", standard="median")
    assert inclusive[STANDARD].iloc[0] == 2
    assert inclusive[SELECTION_RATE].tolist() == [0.5, 1.0]
    assert inclusive[IMPACT_RATIO].min() == 0.5
    assert (inclusive[SELECTION_RULE] == "x >= standard").all()
    strict = dsp.selection_rates(df, "f", "g", standard="median", comparison="strict")
    assert strict[SELECTION_RATE].tolist() == [0.0, 0.5]
    assert strict[IMPACT_RATIO].min() == 0.0
    with pytest.raises(AnalysisError, match="Unknown comparison"):
        dsp.selection_rates(df, "f", "g", comparison="lenient")


# --- Dixon's Q -------------------------------------------------------------------------------
def test_dixon_classic_example_r11_and_r10():
    # sorted: 0.167 0.177 0.181 0.181 0.182 0.183 0.184 0.186 0.187 0.189; suspect 0.167
    r11 = dsp.dixon_q_test(CLASSIC, alpha=0.10)
    assert r11.variant == "r11" and r11.n == 10
    assert r11.statistic == pytest.approx((0.177 - 0.167) / (0.187 - 0.167))  # 0.5
    assert r11.suspect_value == 0.167 and r11.suspect_end == "low" and r11.suspect == "1"
    assert r11.critical == 0.4779 and r11.significant
    assert dsp.dixon_q_test(CLASSIC, alpha=0.05).significant is False  # 0.5 < 0.5346
    r10 = dsp.dixon_q_test(CLASSIC, alpha=0.10, variant="r10")
    assert r10.statistic == pytest.approx(0.010 / 0.022)  # 0.4545
    assert r10.critical == 0.4119 and r10.significant  # exact; Rorabacher's Q90: 0.412
    r10_95 = dsp.dixon_q_test(CLASSIC, alpha=0.05, variant="r10")
    assert r10_95.critical == 0.4656 and not r10_95.significant
    assert r10.source.startswith("exact")


@pytest.mark.parametrize(("values", "alpha", "q", "critical", "significant", "end"), [
    ([1.0, 1.1, 2.0], 0.10, 0.9, 0.9413, False, "high"),            # n=3: 0.9 / 1.0
    ([1.0, 1.01, 2.0], 0.05, 0.99 / 1.0, 0.9702, True, "high"),
    ([1.0, 1.01, 2.0], 0.01, 0.99, 0.9940, False, "high"),
    ([10, 10.1, 10.2, 12], 0.05, 1.8 / 2.0, 0.8298, True, "high"),   # n=4
    ([10, 10.1, 10.2, 12], 0.01, 0.9, 0.9207, False, "high"),
    ([2.1, 2.2, 2.3, 2.4, 3.5], 0.05, 1.1 / 1.4, 0.7102, True, "high"),   # n=5
    ([0.5, 2.0, 2.1, 2.2, 2.3, 2.4], 0.01, 1.5 / 1.9, 0.7427, True, "low"),  # n=6
    ([5, 5.1, 5.2, 5.3, 5.4, 5.5, 5.9], 0.10, 0.4 / 0.9, 0.5073, False, "high"),  # n=7
])
def test_dixon_r10_small_samples_by_hand(values, alpha, q, critical, significant, end):
    rng = np.random.default_rng(len(values))
    shuffled = list(rng.permutation(values))  # order must not matter
    res = dsp.dixon_q_test(shuffled, alpha=alpha)
    assert res.variant == "r10"
    assert res.statistic == pytest.approx(q)
    assert res.critical == critical
    assert res.significant is significant
    assert res.suspect_end == end


def test_dixon_sub_range_ratios_for_larger_samples():
    eleven = list(range(1, 11)) + [20]  # r21 high end: (20 - 9) / (20 - 2)
    r21 = dsp.dixon_q_test(eleven, alpha=0.10)
    assert r21.variant == "r21" and r21.statistic == pytest.approx(11 / 18)
    assert r21.significant and not dsp.dixon_q_test(eleven, alpha=0.05).significant
    fourteen = list(range(1, 14)) + [30]  # r22 high end: (30 - 12) / (30 - 3)
    r22 = dsp.dixon_q_test(fourteen, alpha=0.05)
    assert r22.variant == "r22" and r22.statistic == pytest.approx(18 / 27)
    assert r22.critical == 0.5908 and r22.significant
    assert not dsp.dixon_q_test(fourteen, alpha=0.01).significant  # 0.667 < 0.6724
    # r11 ignores a second outlier at the other end: (x2 - x1) / (x(n-1) - x1)
    r11 = dsp.dixon_q_test([0, 10, 10.1, 10.2, 10.3, 10.4, 10.5, 30], alpha=0.05)
    assert r11.variant == "r11"
    assert r11.statistic == pytest.approx(max(10 / 10.5, 19.5 / 20))


def test_dixon_outside_the_tables_says_so():
    many = dsp.dixon_q_test(np.arange(26.0))
    assert many.critical is None and many.significant is None
    assert "stop at 25" in many.note
    few = dsp.dixon_q_test([1.0, 2.0])
    assert few.critical is None and "fewer than 3" in few.note
    flat = dsp.dixon_q_test([3.0] * 5)
    assert math.isnan(flat.statistic) and "equal" in flat.note
    assert dsp.dixon_critical(5, 0.05, "r22") is None  # r22 needs 6 values
    assert dsp.dixon_critical(9, 0.05, "r22") == 0.7817  # every ratio, every n up to 25
    with pytest.raises(AnalysisError, match="alpha"):
        dsp.dixon_q_test(CLASSIC, alpha=0.02)


def test_dixon_tables_are_monotone():
    for variant, table in dsp.DIXON_CRITICAL.items():
        ns = sorted(table)
        for alpha_i in range(3):
            col = [table[n][alpha_i] for n in ns]
            assert all(a > b for a, b in zip(col, col[1:], strict=False)), variant
        for n in ns:
            assert table[n][0] < table[n][1] < table[n][2], (variant, n)


@pytest.mark.parametrize(("variant", "n"), [("r10", 3), ("r10", 5), ("r10", 10), ("r11", 9),
                                            ("r21", 12), ("r22", 14), ("r22", 20),
                                            ("r22", 25)])
def test_dixon_table_agrees_with_simulation(variant, n):
    simulated = simulate_dixon_critical(variant, n, n_draws=150_000, seed=n)
    tabulated = dsp.DIXON_CRITICAL[variant][n]
    # Monte Carlo error ~0.002 (~0.004 at alpha 0.01); published r10 values differ from
    # exact ones by up to 0.005 at alpha 0.01 (docs/disparity.md)
    for sim, tab, tol in zip(simulated, tabulated, (0.006, 0.006, 0.012), strict=True):
        assert sim == pytest.approx(tab, abs=tol)


def test_dixon_exact_values_from_the_integration():
    from tests.reference.dixon_exact import DixonDistribution, exact_dixon_critical

    # the audit's numbers: r10, n = 4, alpha 0.01 is 0.9207 (published 0.926); the
    # published n = 6 value 0.625 at alpha 0.05 has actual size 0.0515
    assert exact_dixon_critical("r10", 4, 0.01) == pytest.approx(0.92066, abs=1e-5)
    assert 2 * DixonDistribution("r10", 6).sf(0.625) == pytest.approx(0.0515, abs=5e-5)
    # n = 3, r10 in closed form: the residuals of three normals point in a uniform
    # direction of a plane, each ordering is a 60-degree sector, and within it
    # r = sin(t) / (sin(t) + sin(60 deg - t)), so G(r) = (3 / pi) arctan(sqrt(3) r / (2 - r))
    three = DixonDistribution("r10", 3)
    for r in (0.1, 0.3, 0.7, 0.9, 0.99):
        assert three.cdf(r) == pytest.approx(
            3 / math.pi * math.atan(math.sqrt(3) * r / (2 - r)), abs=1e-12)
    t = math.tan(0.95 * math.pi / 3)  # G(r) = 0.95 -> r = 2t / (sqrt(3) + t) = 0.94126
    assert exact_dixon_critical("r10", 3, 0.10) == pytest.approx(2 * t / (math.sqrt(3) + t),
                                                                 abs=1e-9)
    dist = DixonDistribution("r22", 25)
    assert dist.cdf(1.0) == pytest.approx(1.0, abs=1e-10)  # a proper distribution
    # the table holds the rounded exact values
    for variant, n in [("r10", 7), ("r11", 10), ("r21", 13), ("r22", 18)]:
        for alpha, tab in zip(dsp.DIXON_ALPHAS, dsp.DIXON_CRITICAL[variant][n], strict=True):
            assert tab == pytest.approx(exact_dixon_critical(variant, n, alpha), abs=5e-5)


@pytest.mark.parametrize(("variant", "n"), [("r10", 4), ("r10", 6), ("r11", 8), ("r21", 11),
                                            ("r22", 25)])
def test_dixon_table_agrees_with_dixonstat(variant, n):
    dixonstat = pytest.importorskip("dixonstat")  # McBane's Gauss-Hermite method (dev extra)
    ref = getattr(dixonstat, variant)(n)
    for alpha, tab in zip(dsp.DIXON_ALPHAS, dsp.DIXON_CRITICAL[variant][n], strict=True):
        # dixonstat's quadrature is coarser: it agrees within 2e-4 (1.4e-4 at r22, n = 25)
        assert tab == pytest.approx(float(ref.ppf(1 - alpha / 2)), abs=2e-4)


# --- disparity metrics -----------------------------------------------------------------------
def test_disparity_metrics_by_hand():
    s = pd.Series([0.2, 0.4, 0.5, 0.9], index=["w", "x", "y", "z"])
    out = dsp.disparity_metrics(s, quantity="mean").set_index(METRIC)
    assert out.loc["min", VALUE] == 0.2 and out.loc["min", GROUP] == "w"
    assert out.loc["max", GROUP] == "z"
    assert out.loc["min_max_ratio", VALUE] == pytest.approx(0.2 / 0.9)
    assert out.loc["range", VALUE] == pytest.approx(0.7)
    assert out.loc["mean", VALUE] == pytest.approx(0.5)
    sd = np.std(s.to_numpy(), ddof=1)
    assert out.loc["std", VALUE] == pytest.approx(sd)
    assert out.loc["max_z", VALUE] == pytest.approx(0.4 / sd)
    assert out.loc["max_z", GROUP] == "z"
    assert out.loc["dixon_q", VALUE] == pytest.approx(0.4 / 0.7)  # r10, high end
    assert (out["quantity"] == "mean").all()
    neg = dsp.disparity_metrics(pd.Series([-1.0, 2.0, 3.0])).set_index(METRIC)
    assert math.isnan(neg.loc["min_max_ratio", VALUE])
    assert "positive" in neg.loc["min_max_ratio", NOTE]


def test_max_z_respects_shiffler_bound():
    rng = np.random.default_rng(3)
    for k in range(2, 12):
        v = rng.standard_normal(k)
        v[0] = 50.0  # one extreme value: the bound is approached
        z = dsp.disparity_metrics(v).set_index(METRIC).loc["max_z", VALUE]
        assert z <= (k - 1) / math.sqrt(k) + 1e-12
        assert z == pytest.approx(np.max(np.abs(stats.zscore(v, ddof=1))))


# --- permutation tests -----------------------------------------------------------------------
def _naive_permutation(frame, feature, by, statistic, m, seed, compare="rest"):
    """The definition, group by group with numpy, shuffling the same codes with the same rng."""
    summary = dsp.group_summary(frame, feature, by)
    labels = summary[GROUP].tolist()
    keys = frame[by].astype(str).agg(" / ".join, axis=1) if isinstance(by, list) else \
        frame[by].astype(str)
    codes = keys.map({lab: i for i, lab in enumerate(labels)}).to_numpy(dtype=np.int64)
    x = frame[feature].to_numpy(dtype=float)

    def t_of(lab):
        out = []
        for g in range(len(labels)):
            own = _reference(x[lab == g], statistic)
            other = (_reference(x[lab != g], statistic) if compare == "rest"
                     else _reference(x, statistic))
            out.append(own - other)
        return np.array(out)

    t_obs = t_of(codes)
    rng = np.random.default_rng(seed)
    b = np.zeros(len(labels))
    for _ in range(m):
        b += np.abs(t_of(rng.permutation(codes))) >= np.abs(t_obs) - 1e-12
    return t_obs, (b + 1) / (m + 1)


def test_the_naive_comparisons_run_on_the_row_path(frame):
    """The same-stream comparisons below hold for the row path (a shuffle of the rows'
    codes); the feature here has too many distinct values for the table path."""
    for by in ("g", ["g", "h"]):
        out, path = dsp.permutation_test(frame, "f", by, n_resamples=9, return_path=True)
        assert path == "rows" and not out.attrs


@pytest.mark.parametrize("statistic", dsp.STATISTICS)
def test_permutation_p_values_match_the_naive_definition(frame, statistic):
    out = dsp.permutation_test(frame, "f", "g", statistic=statistic, n_resamples=60,
                               seed=11, adaptive=False)
    t_obs, p = _naive_permutation(frame, "f", "g", statistic, 60, 11)
    assert out["difference"].to_numpy() == pytest.approx(t_obs, rel=1e-9, abs=1e-12)
    assert out[P_VALUE].to_numpy() == pytest.approx(p)
    assert (out["n_permutations"] == 60).all()


def test_permutation_against_all_rows_and_two_factors(frame):
    out = dsp.permutation_test(frame, "f", ["g", "h"], statistic="median", compare="overall",
                               n_resamples=40, seed=5, adaptive=False)
    t_obs, p = _naive_permutation(frame, "f", ["g", "h"], "median", 40, 5, compare="overall")
    assert out["compared_with"].to_numpy() == pytest.approx(np.median(frame.f))
    assert out[P_VALUE].to_numpy() == pytest.approx(p)


def test_permutation_is_reproducible_with_a_seed(frame):
    a = dsp.permutation_test(frame, "f", "g", n_resamples=199, seed=42, adaptive=False)
    b = dsp.permutation_test(frame, "f", "g", n_resamples=199, seed=42, adaptive=False)
    c = dsp.permutation_test(frame, "f", "g", n_resamples=199, seed=43, adaptive=False)
    pd.testing.assert_frame_equal(a, b)
    assert not np.array_equal(a[P_VALUE], c[P_VALUE])
    assert (a[P_VALUE] >= 1 / 200).all() and (a[P_VALUE] <= 1).all()


def test_permutation_agrees_with_scipy_for_two_groups():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": ["a"] * 40 + ["b"] * 60,
                       "f": np.concatenate([rng.normal(0.3, 1, 40), rng.normal(0, 1, 60)])})
    ours = dsp.permutation_test(df, "f", "g", n_resamples=4999, seed=1, adaptive=False)
    ref = stats.permutation_test(
        (df.f[df.g == "a"].to_numpy(), df.f[df.g == "b"].to_numpy()),
        lambda a, b: abs(np.mean(a) - np.mean(b)), permutation_type="independent",
        alternative="greater", n_resamples=4999, rng=np.random.default_rng(2))
    assert ours[P_VALUE].iloc[0] == pytest.approx(ref.pvalue, abs=0.03)
    assert ours[P_VALUE].iloc[0] == ours[P_VALUE].iloc[1]  # two groups: the same test


def test_one_sided_alternatives(frame):
    greater = dsp.permutation_test(frame, "f", "g", alternative="greater", n_resamples=99,
                                   adaptive=False)
    less = dsp.permutation_test(frame, "f", "g", alternative="less", n_resamples=99,
                                adaptive=False)
    # with a continuous statistic the two one-sided counts add up to m (+2 for the +1s)
    total = (greater[P_VALUE] + less[P_VALUE]) * 100
    assert total.to_numpy() == pytest.approx(np.full(len(total), 101.0))


# --- recovery of the stated simulation ----------------------------------------------------
def test_recovers_the_stated_sentiment_shifts(ssqa):
    """sentiment = 0.1 + shift[model] + shift[cluster] + N(0, 0.2): stated in
    sample_data/ssqa_simulated_effects.yaml."""
    out = dsp.group_summary(ssqa, "sentiment", ["model", "pachankis_cluster"]).set_index(GROUP)
    shifts = {"Innocuous Persistent": 0.0, "Sociodemographic": 0.0, "Awkward": -0.10,
              "Threatening": -0.35, "Unappealing Persistent": -0.20}
    for model, m_shift in (("sim-model-A", 0.0), ("sim-model-B", -0.05)):
        for cluster, c_shift in shifts.items():
            row = out.loc[f"{model} / {cluster}"]
            se = 0.2 / math.sqrt(row[N])
            assert row["mean"] == pytest.approx(0.1 + m_shift + c_shift, abs=4 * se)
            assert row["std"] == pytest.approx(0.2, abs=0.01)
    report = dsp.disparity_report(ssqa, "sentiment", "pachankis_cluster", n_resamples=99)
    metrics = report.metrics.set_index([report.metrics["quantity"], METRIC])
    assert metrics.loc[("mean", "min"), GROUP] == "Threatening"
    assert report.passes_four_fifths is False
    perm = report.permutation.set_index(GROUP)
    assert perm.loc["Threatening", P_VALUE] == pytest.approx(1 / 100)  # no shuffle as extreme
    assert report.settings["n_permutations"] == 99


def test_report_needs_two_groups():
    with pytest.raises(AnalysisError, match="Only one group"):
        dsp.disparity_report(pd.DataFrame({"g": ["a"] * 3, "f": [1.0, 2, 3]}), "f", "g")


def test_moments_stay_accurate_when_groups_are_far_apart():
    rng = np.random.default_rng(9)
    a, b = rng.gamma(2.0, 1.0, 50), 1e7 + rng.gamma(2.0, 1.0, 50)
    df = pd.DataFrame({"g": ["a"] * 50 + ["b"] * 50, "f": np.concatenate([a, b])})
    out = dsp.group_summary(df, "f", "g").set_index(GROUP)
    for name in ("variance", "skewness", "kurtosis"):
        assert out.loc["a", name] == pytest.approx(_reference(a, name), rel=1e-6)
        assert out.loc["b", name] == pytest.approx(_reference(b, name), rel=1e-6)


# --- adaptive permutations, polarity, id-like columns ------------------------------------------
def test_stopping_rule_is_the_clopper_pearson_interval():
    # b = 0 of 99: upper 99.9 % bound 1 - 0.0005 ** (1 / 99) = 0.0739 > 0.05, undecided;
    # 0 of 199: 0.0375 < 0.05, decided; 50 of 99: lower bound 0.33 > 0.05, decided
    high_99 = stats.binomtest(0, 99).proportion_ci(0.999, "exact").high
    assert high_99 == pytest.approx(0.07390, abs=1e-5)
    assert stats.binomtest(0, 199).proportion_ci(0.999, "exact").high == pytest.approx(
        1 - 0.0005 ** (1 / 199))
    decided = dsp._decided(np.array([0, 0, 50, 9]), np.array([99, 199, 99, 199]), 0.05)
    assert decided.tolist() == [False, True, True, False]  # 9/199 = 0.045: too close


def test_adaptive_permutations_stop_early_with_the_fixed_m_p_values():
    rng = np.random.default_rng(0)
    shifted = pd.DataFrame({"g": ["A"] * 300 + ["B"] * 300,
                            "f": np.r_[rng.normal(0, 1, 300), rng.normal(1, 1, 300)]})
    out = dsp.permutation_test(shifted, "f", "g", n_resamples=999, adaptive=True,
                               seed=2)
    # no shuffle reaches a difference of ~1 SD: 0 of 199 -> stop, p = 1 / 200
    assert out[N_PERMUTATIONS].tolist() == [199, 199]
    assert out[P_VALUE].tolist() == pytest.approx([0.005, 0.005])
    assert out["stopped_early"].all()
    null = pd.DataFrame({"g": ["A", "B"] * 300, "f": rng.normal(0, 1, 600)})
    adaptive = dsp.permutation_test(null, "f", "g", n_resamples=999, adaptive=True,
                                    seed=4)
    fixed = dsp.permutation_test(null, "f", "g", n_resamples=99, seed=4, adaptive=False)
    assert adaptive[N_PERMUTATIONS].tolist() == [99, 99]  # clearly above 0.05 at m = 99
    assert adaptive[P_VALUE].tolist() == fixed[P_VALUE].tolist()  # same shuffles
    assert fixed[P_VALUE].min() > 0.2
    full = dsp.permutation_test(null, "f", "g", n_resamples=999, seed=4, adaptive=False)
    assert full[N_PERMUTATIONS].tolist() == [999, 999] and not full["stopped_early"].any()


def test_harmful_feature_selects_the_favourable_side():
    # deviation-like 0/1 feature: A deviates 1 of 4, B 3 of 4; mean 0.5
    df = pd.DataFrame({"g": ["A"] * 4 + ["B"] * 4, "biased": [1, 0, 0, 0, 1, 1, 1, 0]})
    naive = dsp.disparity_report(df, "biased", "g", n_resamples=0)
    assert naive.settings["direction"] == "above"  # selection = deviating
    assert naive.selection[SELECTION_RATE].tolist() == [0.25, 0.75]
    assert naive.selection[PASSES_FOUR_FIFTHS].tolist() == [False, True]  # A "fails"
    harmful = dsp.disparity_report(df, "biased", "g", polarity="harmful", n_resamples=0)
    assert harmful.settings["direction"] == "below"  # x <= 0.5: not deviating
    assert harmful.selection[SELECTION_RATE].tolist() == [0.75, 0.25]
    assert harmful.selection[PASSES_FOUR_FIFTHS].tolist() == [True, False]  # B fails
    assert harmful.impact_ratio == pytest.approx(1 / 3)


def test_feature_polarity_from_the_design():
    from analysis.design import Design, Factor, Outcome

    f = Factor("g", "domain", ("A", "B"), "A")
    d = Design((f,), Outcome("biased", "binary"), polarity={"sentiment": "favourable"})
    assert dsp.feature_polarity(d, "biased") == "harmful"
    assert dsp.feature_polarity(d, "deviation") == "harmful"
    assert dsp.feature_polarity(d, "sentiment") == "favourable"
    assert dsp.feature_polarity(d, "other") is None
    correct = Design((f,), Outcome("correct", "values", values=("0",)))
    assert dsp.feature_polarity(correct, "correct") == "favourable"
    low = Design((f,), Outcome("score", "below", threshold=3))
    assert dsp.feature_polarity(low, "score") == "favourable"
    again = Design.from_text(d.to_yaml())
    assert again.polarity == (("sentiment", "favourable"),) and again == d
    old = Design.from_text("factors: [{name: g, values: [A, B]}]")  # no polarity key
    assert old.polarity == () and dsp.feature_polarity(old, "x") is None
    with pytest.raises(AnalysisError, match="harmful or favourable"):
        Design((f,), polarity={"x": "bad"})


def test_id_like_columns_are_never_the_default_feature():
    n = 50
    df = pd.DataFrame({"row_in_ssqa": np.arange(n), "example_id": np.arange(n) * 3,
                       "question_index": np.tile([1, 2, 3, 4, 5], 10),
                       "serial": np.arange(100, 100 + n), "score": np.tile([1, 2, 3, 4, 5], 10),
                       "sentiment": np.linspace(-1, 1, n), "bias_index": np.linspace(0, 1, n),
                       "g": ["a", "b"] * 25})
    assert dsp.is_id_like(df["row_in_ssqa"]) and dsp.is_id_like(df["example_id"])
    assert dsp.is_id_like(df["question_index"])  # an integer "index"
    assert dsp.is_id_like(df["serial"])  # 50 distinct consecutive integers in 50 rows
    assert dsp.is_id_like(pd.Series(["u1", "u2"], name="exampleId"))
    assert not dsp.is_id_like(df["score"])  # 5 values in 50 rows
    assert not dsp.is_id_like(df["sentiment"]) and not dsp.is_id_like(df["bias_index"])
    from analysis.design import Design, Factor

    design = Design((Factor("g", "domain", ("a", "b"), "a"),))
    cols = dsp.numeric_columns(df, design)
    assert cols[:3] == ["sentiment", "bias_index", "score"]
    assert set(cols[3:]) == {"row_in_ssqa", "example_id", "question_index", "serial"}


#: Dixon's (1951) one-sided tables as texts (and the SAGED library's source) print them:
#: n -> (alpha 0.05, 0.005) one-sided, i.e. two-sided 0.10 and 0.01.
PRINTED_ONE_SIDED = {"r11": {8: (0.554, 0.724), 9: (0.512, 0.675), 10: (0.477, 0.637)},
                     "r21": {11: (0.575, 0.708), 12: (0.546, 0.676), 13: (0.522, 0.649)},
                     "r22": {14: (0.546, 0.672), 15: (0.524, 0.648), 16: (0.505, 0.630),
                             17: (0.489, 0.611), 18: (0.475, 0.594), 19: (0.462, 0.581),
                             20: (0.450, 0.568), 25: (0.406, 0.517)}}


@pytest.mark.parametrize("variant", list(PRINTED_ONE_SIDED))
def test_dixon_r11_r21_r22_equal_the_printed_one_sided_tables(variant):
    """docs/disparity.md: with the one-sided labels read as two-sided 2 alpha, the printed
    values agree with the exact ones within 0.0017; read at the same label they do not."""
    from analysis.disparity import dixon_critical

    for n, (p10, p01) in PRINTED_ONE_SIDED[variant].items():
        assert dixon_critical(n, 0.10, variant) == pytest.approx(p10, abs=1e-3)
        assert dixon_critical(n, 0.01, variant) == pytest.approx(p01, abs=1.8e-3)
        assert dixon_critical(n, 0.05, variant) - p10 > 0.038  # the label mismatch
