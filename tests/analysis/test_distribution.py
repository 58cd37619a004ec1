"""Category distributions across cohorts: tables by hand, chi-square against scipy, real BBQ."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.stats.contingency import association

from analysis import distribution as dm
from analysis.columns import (
    COUNT,
    CRAMERS_V,
    DF,
    MAX_PERCENT,
    METHOD,
    N_RESAMPLES,
    NOTE,
    P_VALUE,
    PERCENT,
    SD_PERCENT,
    STATISTIC,
    N,
)
from analysis.design import Design, apply_design, make_factor
from analysis.errors import AnalysisError
from tests.app.apptools import ROOT


def _frame(table: dict[str, dict[str, int]], role: str = "ceo") -> pd.DataFrame:
    rows = [{"decade": d, "portrays": c, "role": role}
            for d, counts in table.items() for c, k in counts.items() for _ in range(k)]
    return pd.DataFrame(rows)


CEO = {"1950s": {"woman": 4, "man": 30, "non-binary": 0, "unclassified": 16},
       "1990s": {"woman": 6, "man": 18, "non-binary": 1, "unclassified": 25},
       "2010s": {"woman": 11, "man": 21, "non-binary": 1, "unclassified": 17}}


@pytest.fixture(scope="module")
def ceo():
    frame = _frame(CEO)
    design = Design((make_factor(frame, "decade"), make_factor(frame, "role")))
    return apply_design(frame, design)


def test_percentages_by_hand_with_zero_categories(ceo):
    dist = dm.category_distribution(ceo, "portrays", "decade")
    assert len(dist) == 3 * 4  # every category listed in every cohort, zeros included
    row = dist[(dist["decade"] == "1950s") & (dist["portrays"] == "non-binary")].iloc[0]
    assert row[COUNT] == 0 and row[N] == 50 and row[PERCENT] == 0
    man = dist[dist["portrays"] == "man"].set_index("decade")[PERCENT]
    assert man.to_dict() == pytest.approx({"1950s": 60.0, "1990s": 36.0, "2010s": 42.0})
    assert dist.groupby("decade", observed=True)[PERCENT].sum().to_numpy() == pytest.approx(100)
    assert list(dist["decade"].cat.categories) == ["1950s", "1990s", "2010s"]


def test_kept_categories_keep_the_left_out_answers_unless_renormalised(ceo):
    """The time-capsule shares: 'unclassified' is hidden but still in the denominator."""
    dist = dm.category_distribution(ceo, "portrays", "decade",
                                    categories=["woman", "man", "non-binary"])
    woman = dist[dist["portrays"] == "woman"].set_index("decade")[PERCENT]
    assert woman["1950s"] == pytest.approx(100 * 4 / 50)       # the paper's 8 %
    assert dist[N].unique().tolist() == [50]
    assert dist.groupby("decade", observed=True)[PERCENT].sum()["1950s"] == pytest.approx(68)
    renorm = dm.category_distribution(ceo, "portrays", "decade",
                                      categories=["woman", "man", "non-binary"],
                                      renormalise=True)
    woman = renorm[renorm["portrays"] == "woman"].set_index("decade")[PERCENT]
    assert woman["1950s"] == pytest.approx(100 * 4 / 34)
    # The chi-square test sees the left-out answers as one more column ("other").
    test = dm.homogeneity_test(dist, "portrays", "decade", method="chi2").iloc[0]
    full = np.array([[CEO[d][c] for c in ("woman", "man", "non-binary", "unclassified")]
                     for d in CEO])
    assert test[STATISTIC] == pytest.approx(
        stats.chi2_contingency(full, correction=False).statistic)
    only = dm.homogeneity_test(renorm, "portrays", "decade", method="chi2").iloc[0]
    assert only[STATISTIC] == pytest.approx(
        stats.chi2_contingency(full[:, :3], correction=False).statistic)
    assert list(dist["portrays"].cat.categories) == ["woman", "man", "non-binary"]
    with pytest.raises(AnalysisError, match="not found"):
        dm.category_distribution(ceo, "portrays", "decade", categories=["robot"])


def test_wide_table(ceo):
    dist = dm.category_distribution(ceo, "portrays", "decade")
    wide = dm.percentage_table(dist, "portrays", "decade").set_index("decade")
    assert wide.loc["2010s", "woman"] == pytest.approx(22.0)
    assert wide.loc["1990s", N] == 50


def test_frequency_spread_by_hand(ceo):
    dist = dm.category_distribution(ceo, "portrays", "decade")
    within = dm.frequency_spread(dist, "portrays", "decade").set_index("decade")
    assert within.loc["1950s", SD_PERCENT] == pytest.approx(np.std([8, 60, 0, 32], ddof=1))
    assert within.loc["1950s", MAX_PERCENT] == 60
    pop = dm.frequency_spread(dist, "portrays", "decade", ddof=0).set_index("decade")
    assert pop.loc["2010s", SD_PERCENT] == pytest.approx(np.std([22, 42, 2, 34]))
    across = dm.frequency_spread(dist, "portrays", "decade", over="cohorts").set_index(
        "portrays")
    assert across.loc["woman", SD_PERCENT] == pytest.approx(np.std([8, 12, 22], ddof=1))
    assert across.loc["woman", "n_cohorts"] == 3


def test_chi_square_matches_scipy():
    frame = _frame({"A": {"x": 30, "y": 20, "z": 50}, "B": {"x": 45, "y": 25, "z": 30},
                    "C": {"x": 20, "y": 30, "z": 40}})
    dist = dm.category_distribution(frame, "portrays", "decade")
    out = dm.homogeneity_test(dist, "portrays", "decade").iloc[0]
    table = np.array([[30, 20, 50], [45, 25, 30], [20, 30, 40]])
    ref = stats.chi2_contingency(table, correction=False)
    assert out[STATISTIC] == pytest.approx(ref.statistic)
    assert out[P_VALUE] == pytest.approx(ref.pvalue)
    assert out[DF] == ref.dof == 4
    assert out[METHOD] == "chi-square" and out[N_RESAMPLES] == 0 and out[NOTE] == ""
    assert out[CRAMERS_V] == pytest.approx(association(table, method="cramer"))
    # forcing Monte Carlo on a large table gives (nearly) the asymptotic p-value
    mc = dm.homogeneity_test(dist, "portrays", "decade", method="monte_carlo",
                             n_resamples=4999, seed=3).iloc[0]
    assert mc[METHOD] == "Monte Carlo" and mc[STATISTIC] == pytest.approx(ref.statistic)
    assert mc[P_VALUE] == pytest.approx(ref.pvalue, abs=0.01)


def test_small_expected_counts_switch_to_monte_carlo(ceo):
    dist = dm.category_distribution(ceo, "portrays", "decade")
    auto = dm.homogeneity_test(dist, "portrays", "decade").iloc[0]
    # non-binary: 2 rows in all -> expected counts 0.67 per cohort
    assert auto["min_expected"] == pytest.approx(2 * 50 / 150)
    assert auto[METHOD] == "Monte Carlo" and auto[N_RESAMPLES] == dm.DEFAULT_RESAMPLES
    assert "Cochran" in auto[NOTE]
    again = dm.homogeneity_test(dist, "portrays", "decade").iloc[0]
    assert again[P_VALUE] == auto[P_VALUE]  # seeded
    assert auto[P_VALUE] >= 1 / (dm.DEFAULT_RESAMPLES + 1)
    forced = dm.homogeneity_test(dist, "portrays", "decade", method="chi2").iloc[0]
    assert forced[METHOD] == "chi-square" and "unreliable" in forced[NOTE]
    assert forced[P_VALUE] == pytest.approx(stats.chi2_contingency(
        np.array([[4, 30, 0, 16], [6, 18, 1, 25], [11, 21, 1, 17]]),
        correction=False).pvalue)


def test_one_test_per_group_and_degenerate_groups():
    frame = pd.concat([_frame(CEO, "ceo"),
                       _frame({"1950s": {"woman": 5}, "1990s": {"woman": 7}}, "nurse")])
    dist = dm.category_distribution(frame, "portrays", "decade", by="role")
    out = dm.homogeneity_test(dist, "portrays", "decade", by="role").set_index("role")
    assert list(out.index) == ["ceo", "nurse"]
    assert np.isnan(out.loc["nurse", P_VALUE]) and "two categories" in out.loc["nurse", NOTE]
    nurse = dist[dist["role"] == "nurse"]
    # the nurse role never saw the 2010s cohort: no rows for it, not a row of zeros
    assert set(nurse["decade"].astype(str)) == {"1950s", "1990s"}


def test_bad_columns_raise(ceo):
    with pytest.raises(AnalysisError, match="must all differ"):
        dm.category_distribution(ceo, "decade", "decade")
    with pytest.raises(AnalysisError, match="Not columns"):
        dm.category_distribution(ceo, "nope", "decade")
    many = ceo.assign(portrays=[f"t{i}" for i in range(len(ceo))])
    with pytest.raises(AnalysisError, match="free text"):
        dm.category_distribution(many, "portrays", "decade")


def test_real_bbq_answer_types_across_input_formats():
    """REAL data (BBQ, UnifiedQA-T5-11B predictions): without the context (qonly) the model
    answers 'unknown' far more often than with it."""
    frame = pd.read_csv(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz")
    dist = dm.category_distribution(frame, "answer_type", "input_format")
    counts = pd.crosstab(frame["input_format"], frame["answer_type"])
    shown = dist.set_index(["input_format", "answer_type"])[COUNT]
    for (fmt, kind), k in counts.stack().items():
        assert shown[(fmt, kind)] == k
    unknown = dist[dist["answer_type"] == "unknown"].set_index("input_format")[PERCENT]
    assert unknown["qonly"] > unknown["race"] > unknown["arc"]
    four = dm.category_distribution(frame, "answer_type", "input_format",
                                    categories=["stereotyped", "anti-stereotyped", "unknown",
                                                "unmatched"], renormalise=True)
    test = dm.homogeneity_test(four, "answer_type", "input_format").iloc[0]
    assert test[METHOD] == "Monte Carlo"  # 3 unmatched rows: expected counts ~1
    kept = dm.category_distribution(frame, "answer_type", "input_format",
                                    categories=["stereotyped", "anti-stereotyped", "unknown"],
                                    renormalise=True)
    chi2 = dm.homogeneity_test(kept, "answer_type", "input_format").iloc[0]
    assert chi2[METHOD] == "chi-square" and chi2[P_VALUE] < 1e-100


def test_absent_categories_follow_one_rule_in_spread_and_test():
    # role "nurse" never shows "unclassified": left out of its spread and of its test
    frame = pd.concat([_frame(CEO, "ceo"), _frame(
        {"1950s": {"woman": 6, "man": 4}, "1990s": {"woman": 3, "man": 7}}, "nurse")])
    dist = dm.category_distribution(frame, "portrays", "decade", by="role")
    spread = dm.frequency_spread(dist, "portrays", "decade", by="role").set_index(
        ["role", "decade"])
    nurse = spread.loc[("nurse", "1950s")]
    assert nurse["n_categories"] == 2  # woman 60 %, man 40 %
    assert nurse[SD_PERCENT] == pytest.approx(np.std([60, 40], ddof=1))  # 14.142
    assert nurse[SD_PERCENT] == pytest.approx(14.1421356)
    assert nurse[NOTE] == "no row in this group, left out: non-binary, unclassified"
    ceo = spread.loc[("ceo", "1950s")]  # non-binary: 0 in the 1950s, seen in the role
    assert ceo["n_categories"] == 4 and ceo[NOTE] == ""
    test = dm.homogeneity_test(dist, "portrays", "decade", by="role").set_index("role")
    assert test.loc["nurse", "n_categories"] == nurse["n_categories"]
    assert test.loc["ceo", "n_categories"] == ceo["n_categories"]
    across = dm.frequency_spread(dist, "portrays", "decade", by="role", over="cohorts")
    assert set(across[across["role"] == "nurse"]["portrays"].astype(str)) == {"woman", "man"}


def test_bbq_disability_spread_leaves_out_the_unmatched_category():
    """REAL data: 'unmatched' occurs only in Age; the audit found 19.05 (counted as 0 %)
    against the chi-square's table without it; the one rule gives 11.29."""
    frame = pd.read_csv(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz")
    dist = dm.category_distribution(frame, "answer_type", "input_format", by="category")
    spread = dm.frequency_spread(dist, "answer_type", "input_format", by="category")
    row = spread.set_index(["category", "input_format"]).loc[("Disability_status", "arc")]
    sub = frame[(frame["category"] == "Disability_status") & (frame["input_format"] == "arc")]
    pct = 100 * sub["answer_type"].value_counts(normalize=True)
    assert row["n_categories"] == len(pct) == 3
    assert row[SD_PERCENT] == pytest.approx(np.std(pct.to_numpy(), ddof=1))
    assert row[SD_PERCENT] == pytest.approx(11.29, abs=0.005)
    assert "unmatched" in row[NOTE]


def test_distribution_figure_pages_never_break_plotly():
    from analysis.figures.distribution import distribution_figure, n_pages

    frame = pd.concat([_frame({"1950s": {"woman": 1 + i % 3, "man": 2},
                               "1990s": {"woman": 2, "man": 1 + i % 2}}, f"r{i:02d}")
                       for i in range(40)])
    dist = dm.category_distribution(frame, "portrays", "decade", by="role")
    assert n_pages(dist, "role") == 4  # 40 groups, 12 per page: 12 + 12 + 12 + 4
    last = distribution_figure(dist, "portrays", "decade", by="role", page=3)
    assert len({t.xaxis for t in last.data}) == 4
    # all 40 panels on one page: 14 rows; the spacing shrinks below 1 / (rows - 1)
    one = distribution_figure(dist, "portrays", "decade", by="role", per_page=40)
    assert len({t.xaxis for t in one.data}) == 40
    with pytest.raises(AnalysisError, match="pages 0 to 3"):
        distribution_figure(dist, "portrays", "decade", by="role", page=4)


@pytest.mark.parametrize("kind", ["bar", "line"])
def test_distribution_figure_traces_carry_the_table(kind):
    """Each panel's trace of a category holds that group's percentages, counts and n per
    cohort in the cohort order (NaN / 0 where the cohort has no row in the group), the
    panels in group order: checked against the table by hand lookups."""
    from analysis.figures.distribution import distribution_figure

    nurse = {"1950s": {"woman": 9, "man": 1}, "2010s": {"woman": 5, "man": 4, "non-binary": 2}}
    pilot = {"1990s": {"woman": 2, "man": 7}}  # one cohort only: the others are NaN
    frame = pd.concat([_frame(CEO), _frame(nurse, "nurse"), _frame(pilot, "pilot")])
    design = Design((make_factor(frame, "decade"), make_factor(frame, "role")))
    results = apply_design(frame, design)
    dist = dm.category_distribution(results, "portrays", "decade", by="role")
    fig = distribution_figure(dist, "portrays", "decade", by="role", kind=kind)
    cohorts = ["1950s", "1990s", "2010s"]
    categories = [str(c) for c in dist["portrays"].cat.categories]
    assert len(fig.data) == 3 * len(categories)
    for t, (i, role) in zip(fig.data, [(i, r) for i, r in enumerate(["ceo", "nurse", "pilot"])
                                      for _ in categories], strict=True):
        assert t.xaxis == ("x" if i == 0 else f"x{i + 1}")
        assert list(t.x) == cohorts and t.showlegend == (i == 0)
        for h, y, (count, n) in zip(cohorts, t.y, t.customdata, strict=True):
            row = dist[(dist["role"] == role) & (dist["decade"] == h)
                       & (dist["portrays"] == t.legendgroup)]
            if row.empty:
                assert np.isnan(y) and (count, n) == (0, 0)
            else:
                assert y == row[PERCENT].iloc[0]
                assert (count, n) == (row[COUNT].iloc[0], row[N].iloc[0])
    pilot_woman = [t for t in fig.data if t.xaxis == "x3" and t.name == "woman"][0]
    assert [list(c) for c in pilot_woman.customdata] == [[0, 0], [2, 9], [0, 0]]


@pytest.mark.parametrize("levels", [3, 50])
def test_category_distribution_counts_match_groupby(levels):
    """Counts and n per (group, cohort, category) equal pandas' groupby of the rows, with
    few possible groups (counted per possible key) and with more possible groups than
    rows (3 factors of 50 values: the keys are sorted instead)."""
    rng = np.random.default_rng(levels)
    n = 3000
    frame = pd.DataFrame({f"g{i}": rng.integers(0, levels, n).astype(str) for i in range(3)})
    frame["decade"] = rng.choice(["1950s", "1990s", "2010s"], n)
    frame["portrays"] = rng.choice(["woman", "man", "neither", None], n, p=[.4, .3, .2, .1])
    by = ["g0", "g1", "g2"]
    for renormalise in (False, True):
        dist = dm.category_distribution(frame, "portrays", "decade", by=by,
                                        categories=["woman", "man"], renormalise=renormalise)
        rows = frame.dropna(subset=["portrays"])
        denominator = rows[rows["portrays"].isin(["woman", "man"])] if renormalise else rows
        keys = [*by, "decade"]
        expected_n = denominator.groupby(keys).size()
        expected = rows.groupby([*keys, "portrays"]).size()
        assert len(dist) == 2 * len(expected_n)
        for r in dist.itertuples(index=False):
            key = tuple(str(getattr(r, c)) for c in keys)
            assert getattr(r, N) == expected_n[key]
            assert getattr(r, COUNT) == expected.get((*key, str(r.portrays)), 0)


@pytest.mark.parametrize("seed", range(3))
def test_counts_and_n_equal_a_pandas_count_with_missing_and_left_out_categories(seed):
    """``category_distribution``'s counts and n (the rows masked only when some are
    missing or left out; issue 44) equal a pandas ``groupby`` count, with and without
    missing categories, every category or some, renormalised or not."""
    rng = np.random.default_rng(seed)
    n = 2000
    cat = rng.choice(["a", "b", "c"], n).astype(object)
    if seed:
        cat[rng.random(n) < 0.1] = None
    t = pd.DataFrame({"cat": pd.array(cat.tolist(), dtype="str"),
                      "coh": pd.Categorical(rng.choice(["x", "y", "z"], n)),
                      "g": pd.Categorical(rng.choice(["p", "q"], n))})
    for kept in (["a", "b", "c"], ["c", "a"]):
        for renormalise in (False, True):
            out = dm.category_distribution(t, "cat", "coh", by=["g"], categories=kept,
                                          renormalise=renormalise)
            known = t[t["cat"].notna()]
            base = known[known["cat"].isin(kept)] if renormalise else known
            n_ref = base.groupby(["g", "coh"], observed=True).size()
            count_ref = base[base["cat"].isin(kept)].groupby(
                ["g", "coh", "cat"], observed=True).size()
            for row in out.itertuples(index=False):
                assert row.n == n_ref[(row.g, row.coh)]
                assert row.count == count_ref.get((row.g, row.coh, row.cat), 0)
            assert len(out) == len(n_ref) * len(kept)
