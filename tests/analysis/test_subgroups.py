"""Subgroups and log disparity (methods.md s. 2): hand cases, statsmodels, scipy, raw rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import Table2x2
from statsmodels.stats.multitest import multipletests

from analysis.cells import cell_table
from analysis.columns import (
    CI_HIGH,
    CI_LOW,
    CONTINUITY_CORRECTED,
    DEVIATION_RATE,
    DEVIATIONS,
    DUPLICATE_OF,
    LD_UNDEFINED,
    LEVEL,
    LOG_DISPARITY,
    P_ADJUSTED,
    P_VALUE,
    RATE_OUTSIDE,
    SAME_ROWS_AS,
    SMALL_N,
    SUBGROUP,
    TEST,
    N,
)
from analysis.design import Design, Outcome, apply_design, make_factor
from analysis.errors import AnalysisError
from analysis.figures.style import DIVERGING
from analysis.figures.subgroups import sunburst_figure
from analysis.subgroups import (
    benjamini_hochberg,
    disparity_stats,
    distinct_subgroups,
    fisher_exact_pvalues,
    subgroup_counts,
    subgroups,
)


def hand_cells() -> pd.DataFrame:
    """a x b cells: (a1,b1) 2/10, (a1,b2) 10/20, (a2,b1) 3/30, (a2,b2) 20/40; 35/100 overall."""
    return pd.DataFrame({
        "a": pd.Categorical(["a1", "a1", "a2", "a2"], categories=["a1", "a2"], ordered=True),
        "b": pd.Categorical(["b1", "b2", "b1", "b2"], categories=["b1", "b2"], ordered=True),
        N: [10, 20, 30, 40],
        DEVIATIONS: [2, 10, 3, 20],
    })


def random_results(seed: int = 0, n: int = 4000) -> tuple[pd.DataFrame, list[str]]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "model": rng.choice(["m1", "m2", "m3"], n),
        "style": rng.choice(["plain", "cot"], n, p=[0.7, 0.3]),
        "group": rng.choice(["g1", "g2", "g3", "g4"], n),
    })
    logit = -1 + 0.8 * (frame["model"] == "m2") - 0.5 * (frame["style"] == "cot") + 0.6 * (
        frame["group"] == "g4")
    frame["deviation"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    factors = ["model", "style", "group"]
    design = Design(tuple(make_factor(frame, f) for f in factors), Outcome("deviation"))
    return apply_design(frame, design), factors


def test_hand_computed_small_case():
    table = subgroups(hand_cells(), ["a", "b"], max_level=2)
    assert table[SUBGROUP].tolist() == [
        "a = a1", "a = a2", "b = b1", "b = b2",
        "a = a1, b = b1", "a = a1, b = b2", "a = a2, b = b1", "a = a2, b = b2"]
    assert table[LEVEL].tolist() == [1, 1, 1, 1, 2, 2, 2, 2]
    assert table[N].tolist() == [30, 70, 40, 60, 10, 20, 30, 40]
    assert table[DEVIATIONS].tolist() == [12, 23, 5, 30, 2, 10, 3, 20]
    a1 = table.iloc[0]
    assert a1["a"] == "a1" and pd.isna(a1["b"])
    assert a1[DEVIATION_RATE] == pytest.approx(0.4)
    assert a1[RATE_OUTSIDE] == pytest.approx(23 / 70)
    # logit(12/30) - logit(23/70) = log(12 * 47 / (18 * 23))
    assert a1[LOG_DISPARITY] == pytest.approx(math.log(12 * 47 / (18 * 23)))
    se = math.sqrt(1 / 12 + 1 / 18 + 1 / 23 + 1 / 47)
    z = 1.959963984540054
    assert a1[CI_LOW] == pytest.approx(math.log(12 * 47 / (18 * 23)) - z * se)
    assert a1[CI_HIGH] == pytest.approx(math.log(12 * 47 / (18 * 23)) + z * se)
    # the two level-1 subgroups of a two-valued factor are each other's complement
    assert table.iloc[1][LOG_DISPARITY] == pytest.approx(-a1[LOG_DISPARITY])
    assert table.iloc[1][P_VALUE] == pytest.approx(a1[P_VALUE])
    # (a1, b1): 2 of 10 against 33 of 90
    cell = table.iloc[4]
    assert cell[LOG_DISPARITY] == pytest.approx(math.log(2 * 57 / (8 * 33)))
    assert cell[SMALL_N]  # n = 10 < 30
    assert not table[CONTINUITY_CORRECTED].any() and not table[LD_UNDEFINED].any()


def test_ld_ci_p_equal_statsmodels_table2x2():
    results, factors = random_results()
    cells = cell_table(results, factors)
    table = subgroups(cells, factors, max_level=3)
    total_n, total_d = len(results), int(results["deviation"].sum())
    assert len(table) == 3 + 2 + 4 + 3 * 2 + 3 * 4 + 2 * 4 + 3 * 2 * 4
    for r in table.to_dict(orient="records"):
        a, n = r[DEVIATIONS], r[N]
        t = Table2x2(np.array([[a, n - a], [total_d - a, total_n - n - total_d + a]]),
                     shift_zeros=False)
        assert r[LOG_DISPARITY] == pytest.approx(t.log_oddsratio, rel=1e-12)
        lo, hi = t.log_oddsratio_confint(alpha=0.05, method="normal")
        assert (r[CI_LOW], r[CI_HIGH]) == pytest.approx((lo, hi), rel=1e-12)
        assert r[P_VALUE] == pytest.approx(t.log_oddsratio_pvalue(), rel=1e-9)
        # Wald chi-square with 1 df gives the same p
        assert r[P_VALUE] == pytest.approx(
            stats.chi2.sf((t.log_oddsratio / t.log_oddsratio_se) ** 2, 1), rel=1e-9)


def test_p_below_alpha_exactly_when_ci_excludes_zero():
    results, factors = random_results(seed=3)
    for confidence in (0.9, 0.95, 0.99):
        table = subgroups(cell_table(results, factors), factors, max_level=3,
                          confidence=confidence)
        excludes = (table[CI_LOW] > 0) | (table[CI_HIGH] < 0)
        assert ((table[P_VALUE] < 1 - confidence) == excludes).all()


def test_counts_equal_groupby_over_raw_rows():
    results, factors = random_results(seed=1)
    table = subgroups(cell_table(results, factors), factors, max_level=3)
    for combo in (["style"], ["model", "group"], ["model", "style", "group"]):
        raw = results.groupby(combo, observed=True)["deviation"].agg(["size", "sum"])
        mine = table[table[factors].notna().sum(axis=1).eq(len(combo))
                     & table[combo].notna().all(axis=1)].set_index(combo)
        assert mine[N].to_dict() == raw["size"].to_dict()
        assert mine[DEVIATIONS].to_dict() == raw["sum"].astype(int).to_dict()


def test_haldane_anscombe_correction_and_flag():
    cells = hand_cells()
    cells.loc[0, DEVIATIONS] = 0  # (a1, b1): 0 of 10 deviate
    table = subgroups(cells, ["a", "b"], max_level=2, test="wald")
    r = table[table[SUBGROUP] == "a = a1, b = b1"].iloc[0]
    assert r[CONTINUITY_CORRECTED] and r[DEVIATION_RATE] == 0
    a, b, c, d = 0.5, 10.5, 33.5, 57.5  # 0.5 added to all four cells
    assert r[LOG_DISPARITY] == pytest.approx(math.log(a * d / (b * c)))
    t = Table2x2(np.array([[a, b], [c, d]]), shift_zeros=False)
    assert (r[CI_LOW], r[CI_HIGH]) == pytest.approx(t.log_oddsratio_confint(), rel=1e-12)
    assert r[P_VALUE] == pytest.approx(t.log_oddsratio_pvalue(), rel=1e-9)
    assert r[P_VALUE] == pytest.approx(0.0871, abs=5e-5)
    # the default test is Fisher's exact test on the uncorrected table for this row
    auto = subgroups(cells, ["a", "b"], max_level=2)
    r = auto[auto[SUBGROUP] == "a = a1, b = b1"].iloc[0]
    assert r[TEST] == "fisher"
    assert r[P_VALUE] == pytest.approx(stats.fisher_exact([[0, 10], [33, 57]]).pvalue,
                                       rel=1e-12)
    assert r[P_VALUE] == pytest.approx(0.0281, abs=5e-5)
    assert r[LOG_DISPARITY] == pytest.approx(math.log(a * d / (b * c)))  # LD unchanged
    # only the subgroup with a zero cell is corrected
    assert table[CONTINUITY_CORRECTED].sum() == 1


def test_subgroup_equal_to_whole_table_has_undefined_ld():
    cells = hand_cells()
    cells["c"] = pd.Categorical(["only"] * 4)
    table = subgroups(cells, ["a", "c"], max_level=2)
    whole = table[table[SUBGROUP] == "c = only"].iloc[0]
    assert whole[N] == 100 and whole[LD_UNDEFINED]
    assert np.isnan([whole[LOG_DISPARITY], whole[CI_LOW], whole[CI_HIGH], whole[P_VALUE],
                     whole[P_ADJUSTED], whole[RATE_OUTSIDE]]).all()
    # the family of the BH adjustment leaves it out
    defined = table[~table[LD_UNDEFINED]]
    expected = multipletests(defined[P_VALUE], method="fdr_bh")[1]
    np.testing.assert_allclose(defined[P_ADJUSTED], expected, rtol=1e-12)


def test_constant_outcome_leaves_ld_undefined():
    cells = hand_cells()
    cells[DEVIATIONS] = 0
    table = subgroups(cells, ["a", "b"], max_level=1)
    assert table[LD_UNDEFINED].all() and table[LOG_DISPARITY].isna().all()
    assert (table[DEVIATION_RATE] == 0).all() and not table[CONTINUITY_CORRECTED].any()


def test_benjamini_hochberg_equals_statsmodels():
    rng = np.random.default_rng(7)
    p = np.concatenate([rng.uniform(size=200), rng.uniform(0, 1e-3, size=30), [0.5, 0.5]])
    np.testing.assert_allclose(benjamini_hochberg(p), multipletests(p, method="fdr_bh")[1],
                               rtol=1e-12)
    with_nan = p.copy()
    with_nan[[3, 50]] = np.nan
    got = benjamini_hochberg(with_nan)
    assert np.isnan(got[[3, 50]]).all()
    keep = ~np.isnan(with_nan)
    np.testing.assert_allclose(got[keep], multipletests(with_nan[keep], method="fdr_bh")[1],
                               rtol=1e-12)
    results, factors = random_results(seed=2)
    table = subgroups(cell_table(results, factors), factors, max_level=2)
    np.testing.assert_allclose(table[P_ADJUSTED],
                               multipletests(table[P_VALUE], method="fdr_bh")[1], rtol=1e-12)


def test_fisher_exact_pvalues_equal_scipy():
    rng = np.random.default_rng(11)
    tables = np.column_stack([rng.integers(0, 30, 400), rng.integers(0, 30, 400),
                              rng.integers(0, 3000, 400), rng.integers(0, 3000, 400)])
    tables[:20, 0] = 0
    tables[20:40, 1] = 0
    tables[40] = [5, 5, 5, 5]  # observed table at the mode: p = 1
    got = fisher_exact_pvalues(*tables.T)
    want = [stats.fisher_exact([[a, b], [c, d]]).pvalue for a, b, c, d in tables]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-300)
    assert got[40] == 1.0


def test_fisher_option_in_subgroups():
    results, factors = random_results(seed=4, n=300)
    table = subgroups(cell_table(results, factors), factors, max_level=2, test="fisher")
    total_n, total_d = len(results), int(results["deviation"].sum())
    for r in table.to_dict(orient="records"):
        a, n = r[DEVIATIONS], r[N]
        want = stats.fisher_exact([[a, n - a], [total_d - a, total_n - n - total_d + a]]).pvalue
        assert r[P_VALUE] == pytest.approx(want, rel=1e-10)
    np.testing.assert_allclose(table[P_ADJUSTED],
                               multipletests(table[P_VALUE], method="fdr_bh")[1], rtol=1e-12)


def test_small_n_flag_uses_n_and_expected_counts():
    # n = 50 >= 30 but the outcome is rare: expected deviations 50 * 4 / 1000 = 0.2 < 5
    st = disparity_stats(np.array([1, 20, 3]), np.array([50, 500, 20]), total_deviations=40,
                         total_n=1000)
    assert st[SMALL_N].tolist() == [True, False, True]
    st = disparity_stats(np.array([3]), np.array([20]), total_deviations=40, total_n=1000,
                         min_n=10)
    assert st[SMALL_N].tolist() == [True]  # n = 20 >= 10, but expected 0.8 < 5


def test_recovers_simulated_effects():
    """SSQA simulation: doubt prompts and sim-model-B raise deviation, positive prompts lower it."""
    frame = pd.read_csv("sample_data/ssqa_simulated.csv.gz")
    factors = ["model", "prompt_style", "cot"]
    design = Design(tuple(make_factor(frame, f) for f in factors), Outcome("deviation"))
    results = apply_design(frame, design)
    table = subgroups(cell_table(results, factors), factors, max_level=1).set_index(SUBGROUP)
    assert table.loc["model = sim-model-B", CI_LOW] > 0
    assert table.loc["prompt_style = doubt", CI_LOW] > 0
    assert table.loc["prompt_style = positive", CI_HIGH] < 0
    assert table.loc["cot = yes", CI_HIGH] < 0
    assert table.loc["cot = yes", P_ADJUSTED] < 1e-10


def test_subgroup_counts_within_a_comparison_factor():
    results, factors = random_results(seed=5)
    cells = cell_table(results, factors)
    out = subgroup_counts(cells, ["style", "group"], levels=[1], within="model")
    assert out["model"].notna().all()
    assert len(out) == 3 * (2 + 4)
    raw = results.groupby(["model", "group"], observed=True).size()
    mine = out[out["group"].notna()].set_index(["model", "group"])[N]
    assert mine.to_dict() == raw.to_dict()


@pytest.mark.parametrize("kwargs, message", [
    ({"max_level": 3}, "between 1 and 2"),
    ({"max_level": 0}, "between 1 and 2"),
    ({"test": "chi2"}, "Unknown test"),
    ({"confidence": 1.5}, "confidence"),
])
def test_bad_options_raise(kwargs, message):
    with pytest.raises(AnalysisError, match=message):
        subgroups(hand_cells(), ["a", "b"], **kwargs)


def test_bad_tables_raise():
    with pytest.raises(AnalysisError, match="lacks deviations"):
        subgroups(hand_cells().drop(columns=[DEVIATIONS]), ["a"])
    with pytest.raises(AnalysisError, match="Not columns"):
        subgroups(hand_cells(), ["a", "nope"])
    with pytest.raises(AnalysisError, match="at least one factor"):
        subgroups(hand_cells(), [], max_level=1)
    with pytest.raises(AnalysisError, match="also among"):
        subgroup_counts(hand_cells(), ["a", "b"], levels=[1], within="a")


def test_sunburst_rings_sizes_and_colours():
    table = subgroups(hand_cells(), ["a", "b"], max_level=2)
    fig = sunburst_figure(table, ["a", "b"])
    trace = fig.data[0]
    assert list(trace.ids) == ["a=a1", "a=a2", "a=a1/b=b1", "a=a1/b=b2", "a=a2/b=b1",
                               "a=a2/b=b2"]
    assert list(trace.parents) == ["", "", "a=a1", "a=a1", "a=a2", "a=a2"]
    assert list(trace.values) == [30, 70, 10, 20, 30, 40]  # parents = sum of children
    assert trace.branchvalues == "total"
    assert trace.marker.cmid == 0
    assert [list(c) for c in trace.marker.colorscale] == [list(c) for c in DIVERGING]
    by_id = dict(zip(trace.ids, trace.marker.colors, strict=True))
    assert by_id["a=a1"] == pytest.approx(math.log(12 * 47 / (18 * 23)))  # LD > 0: red side
    assert by_id["a=a2"] < 0
    hover = trace.hovertemplate[0]  # one template per sector, lines broken by <br>
    assert "log disparity" in hover and "<br>n = 30<br>" in hover and "&lt;" not in hover
    assert fig.layout.title.text.startswith("Subgroups of a > b")


def test_dense_and_sparse_counting_agree(monkeypatch):
    """The dense-marginal path (small grids) and the sparse grouping path give one table."""
    import analysis.subgroups as sg

    rng = np.random.default_rng(9)
    frame = pd.DataFrame({f: rng.choice([f"{f}{i}" for i in range(20)], 60) for f in "xyz"})
    frame["deviation"] = rng.integers(0, 2, 60)
    design = Design(tuple(make_factor(frame, f) for f in "xyz"), Outcome("deviation"))
    cells = cell_table(apply_design(frame, design), list("xyz"))
    dense = subgroups(cells, list("xyz"), max_level=3)
    monkeypatch.setattr(sg, "_DENSE_LIMIT", 0)  # 20^3 = 8000 > 4 * 60 cells: np.unique path
    sparse = subgroups(cells, list("xyz"), max_level=3)
    pd.testing.assert_frame_equal(dense, sparse)
    raw = frame.groupby(list("xyz")).size()
    level3 = sparse[sparse[LEVEL] == 3].set_index(list("xyz"))[N]
    assert level3.to_dict() == raw.to_dict()


# --- the test per row, identical subgroups ---------------------------------------------------
def test_auto_test_uses_fisher_for_small_subgroups_and_wald_elsewhere():
    # hand cells: a1 has n = 30 (2 + 10 deviations), b1 has 40; (a1, b1) has n = 10 -> small
    table = subgroups(hand_cells(), ["a", "b"], max_level=2).set_index(SUBGROUP)
    small = table.loc["a = a1, b = b1"]
    assert small[SMALL_N] and small[TEST] == "fisher"
    # 2 of 10 vs 33 of 90 outside
    assert small[P_VALUE] == pytest.approx(stats.fisher_exact([[2, 8], [33, 57]]).pvalue,
                                           rel=1e-12)
    big = table.loc["b = b2"]  # n = 60, 30 of 60 vs 5 of 40: expected counts >= 5
    assert not big[SMALL_N] and big[TEST] == "wald"
    t = Table2x2(np.array([[30, 30], [5, 35]]))
    assert big[P_VALUE] == pytest.approx(t.log_oddsratio_pvalue(), rel=1e-9)
    # BH over the p-values actually reported (no duplicates here)
    expected = multipletests(table[P_VALUE].to_numpy(), method="fdr_bh")[1]
    assert table[P_ADJUSTED].to_numpy() == pytest.approx(expected, rel=1e-12)
    wald = subgroups(hand_cells(), ["a", "b"], max_level=2, test="wald")
    assert (wald[TEST] == "wald").all()
    with pytest.raises(AnalysisError, match="Unknown test"):
        subgroups(hand_cells(), ["a", "b"], test="exact")


def test_identical_subgroups_are_one_test_in_the_bh_family():
    # b has one value (as after --where b=b1): "a = ai, b = b1" is "a = ai" and
    # "b = b1, c = cj" is "c = cj"; the a x c pairs are distinct
    cells = pd.DataFrame({
        "a": pd.Categorical(["a1", "a1", "a2", "a2", "a3", "a3"], ordered=True),
        "b": pd.Categorical(["b1"] * 6, ordered=True),
        "c": pd.Categorical(["c1", "c2"] * 3, ordered=True),
        N: [20, 20, 25, 25, 30, 30], DEVIATIONS: [3, 7, 12, 8, 5, 10]})
    table = subgroups(cells, ["a", "b", "c"], max_level=2)
    assert len(table) == (3 + 1 + 2) + (3 + 6 + 2)  # levels 1 and 2
    dup = table.set_index(SUBGROUP)[DUPLICATE_OF]
    assert dup["a = a2, b = b1"] == "a = a2" and pd.isna(dup["a = a2"])
    assert dup["b = b1, c = c2"] == "c = c2"
    assert pd.isna(dup["b = b1"])  # no other subgroup has all 150 rows
    assert table[DUPLICATE_OF].notna().sum() == 5
    reported = table[DUPLICATE_OF].isna() & table[P_VALUE].notna()
    assert reported.sum() == 11  # 3 + 2 + 6 distinct tests, not 16
    bh = multipletests(table.loc[reported, P_VALUE].to_numpy(), method="fdr_bh")[1]
    assert table.loc[reported, P_ADJUSTED].to_numpy() == pytest.approx(bh, rel=1e-12)
    # counting the duplicates would give other adjusted p-values
    naive = subgroups(cells, ["a", "b", "c"], max_level=2)
    naive_bh = multipletests(naive[P_VALUE].dropna().to_numpy(), method="fdr_bh")[1]
    first = table.set_index(SUBGROUP).loc["a = a1", P_ADJUSTED]
    naive_first = naive_bh[list(naive[P_VALUE].dropna().index).index(0)]
    assert first != pytest.approx(naive_first, rel=1e-6)
    same = table.set_index(SUBGROUP).loc[["a = a1, b = b1", "a = a1"], [P_VALUE, P_ADJUSTED]]
    assert (same.iloc[0] == same.iloc[1]).all()
    shown = distinct_subgroups(table).set_index(SUBGROUP)
    assert len(shown) == 12 and SAME_ROWS_AS in shown.columns
    assert shown.loc["a = a3", SAME_ROWS_AS] == "a = a3, b = b1"
    assert shown.loc["b = b1", SAME_ROWS_AS] == ""


def test_identical_level_one_subgroups_of_nested_factors():
    # c is a relabelling of a (a1 <-> c1, a2 <-> c2): "c = c1" has the rows of "a = a1"
    # even at level 1, where no pair subgroup links them
    cells = pd.DataFrame({
        "a": pd.Categorical(["a1", "a1", "a2", "a2"], ordered=True),
        "c": pd.Categorical(["c1", "c1", "c2", "c2"], ordered=True),
        "b": pd.Categorical(["b1", "b2", "b1", "b2"], ordered=True),
        N: [10, 20, 30, 40], DEVIATIONS: [2, 10, 3, 20]})
    table = subgroups(cells, ["a", "c", "b"], max_level=1)
    dup = table.set_index(SUBGROUP)[DUPLICATE_OF]
    assert dup["c = c1"] == "a = a1" and dup["c = c2"] == "a = a2"
    assert dup[["a = a1", "b = b1", "b = b2"]].isna().all()
    assert table[DUPLICATE_OF].notna().sum() == 2
def test_sunburst_equal_sectors_split_each_parent_evenly():
    from analysis.figures.subgroups import sunburst_figure
    from analysis.subgroups import subgroups as subgroup_table

    # a = x has b in {p, q, r}; a = y has only b = p: leaves x/* 1/6 each, y/p 1/2
    cells = pd.DataFrame({"a": ["x", "x", "x", "y"], "b": ["p", "q", "r", "p"],
                          "n": [10, 20, 30, 40], "deviations": [1, 5, 9, 20]})
    table = subgroup_table(cells, ["a", "b"], max_level=2)
    trace = sunburst_figure(table, ["a", "b"], sizes="equal").data[0]
    values = dict(zip(trace.ids, trace.values, strict=True))
    assert values["a=x/b=p"] == pytest.approx(1 / 6)
    assert values["a=x/b=r"] == pytest.approx(1 / 6)
    assert values["a=y/b=p"] == pytest.approx(1 / 2)
    assert values["a=x"] == values["a=y"] == 0 and trace.branchvalues == "remainder"
    by_n = sunburst_figure(table, ["a", "b"]).data[0]
    assert dict(zip(by_n.ids, by_n.values, strict=True))["a=x"] == 60
    with pytest.raises(AnalysisError, match="Sector sizes"):
        sunburst_figure(table, ["a", "b"], sizes="area")
