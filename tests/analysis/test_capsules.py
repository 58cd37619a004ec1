"""The time-capsule statistics per demographic (analysis/capsules.py): shares that keep
"neither", Kruskal-Wallis against scipy, spreads within each demographic, the paper's
table shape."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import capsules as cp
from analysis.columns import COUNT, P_VALUE, PERCENT, SD_PERCENT, STATISTIC, N
from analysis.errors import AnalysisError

DEMOGRAPHICS = "gender=woman,man,non-binary;race=White,Asian,Black"
#: A small labelled sample in the study's layout: 50 answers per decade and prompt.
GENDER_CEO = {"1950s": {"woman": 4, "man": 30, "non-binary": 0, "neither": 16},
              "1990s": {"woman": 6, "man": 18, "non-binary": 1, "neither": 25},
              "2010s": {"woman": 11, "man": 21, "non-binary": 1, "neither": 17}}
RACE_MATH = {"1950s": {"White": 10, "Asian": 1, "Black": 14, "neither": 25},
             "1990s": {"White": 10, "Asian": 2, "Black": 13, "neither": 25},
             "2010s": {"White": 3, "Asian": 4, "Black": 24, "neither": 19}}


def sample() -> pd.DataFrame:
    rows = []
    for demographic, prompt, table in (("gender", "ceo", GENDER_CEO),
                                       ("race", "mathematician", RACE_MATH)):
        for decade, counts in table.items():
            for label, k in counts.items():
                rows += [{"decade": decade, "label": label, "demographic": demographic,
                          "prompt": prompt}] * k
    frame = pd.DataFrame(rows)
    frame.loc[len(frame)] = {"decade": "1950s", "label": None, "demographic": "gender",
                             "prompt": "ceo"}          # an unclassified (unscored) answer
    return frame


@pytest.fixture(scope="module")
def dist() -> pd.DataFrame:
    return cp.capsule_distribution(sample(), "label", "decade", demographics=DEMOGRAPHICS,
                                   demographic_col="demographic", by="prompt")


def test_shares_keep_the_neither_answers_and_stay_in_their_demographic(dist):
    assert len(dist) == 3 * 3 + 3 * 3        # each demographic's own 3 subcategories only
    gender = dist[dist["demographic"] == "gender"]
    assert set(gender["label"].astype(str)) == {"woman", "man", "non-binary"}
    ceo50 = gender[gender["decade"] == "1950s"].assign(label=lambda d: d["label"].astype(str))
    ceo50 = ceo50.set_index("label")
    assert ceo50[PERCENT].to_dict() == pytest.approx({"woman": 8.0, "man": 60.0,
                                                      "non-binary": 0.0})
    assert ceo50[N].unique().tolist() == [50] and ceo50["n_other"].iloc[0] == 16
    renorm = cp.capsule_distribution(sample(), "label", "decade", demographics=DEMOGRAPHICS,
                                     demographic_col="demographic", by="prompt",
                                     renormalise=True)
    r = renorm[(renorm["decade"] == "1950s") & (renorm["label"] == "woman")].iloc[0]
    assert r[PERCENT] == pytest.approx(100 * 4 / 34) and r["n_other"] == 0


def test_spread_is_within_each_demographics_own_subcategories(dist):
    spread = cp.capsule_spread(dist, "label", "decade", by="prompt")
    g50 = spread[(spread["demographic"] == "gender") & (spread["decade"] == "1950s")].iloc[0]
    assert g50["n_categories"] == 3                     # not 6 with race's at 0 %
    assert g50[SD_PERCENT] == pytest.approx(np.std([8, 60, 0], ddof=1))
    pooled = spread[(spread["demographic"] == "race") & (spread["decade"] == "all")].iloc[0]
    race = [20, 2, 28, 20, 4, 26, 6, 8, 48]
    assert pooled["n_categories"] == 9
    assert pooled[SD_PERCENT] == pytest.approx(np.std(race, ddof=1))


@pytest.mark.parametrize("seed", range(6))
def test_kruskal_from_counts_equals_scipy(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 60, rng.integers(2, 6))
    ones = [int(rng.integers(0, s + 1)) for s in sizes]
    h, df = cp.kruskal_binary(ones, sizes)
    groups = [np.r_[np.ones(m), np.zeros(s - m)] for m, s in zip(ones, sizes, strict=True)]
    ref = stats.kruskal(*groups)
    assert h == pytest.approx(ref.statistic, rel=1e-10) and df == len(sizes) - 1
    assert stats.chi2.sf(h, df) == pytest.approx(ref.pvalue, rel=1e-9)
    assert np.isnan(cp.kruskal_binary([0, 0], [5, 7])[0])      # all alike: no test


def test_tests_side_by_side_each_with_its_question(dist):
    tests = cp.capsule_tests(dist, "label", "decade", by="prompt", method="chi2")
    kw = tests[tests["test"] == "Kruskal-Wallis"].set_index("label")
    assert len(kw) == 6 and kw["question"].str.contains("this subcategory's share").all()
    # woman in the CEO prompt: answers of all three decades, 1 = woman, by hand with scipy.
    groups = [np.r_[np.ones(c["woman"]), np.zeros(50 - c["woman"])] for c in GENDER_CEO.values()]
    assert kw.loc["woman", STATISTIC] == pytest.approx(stats.kruskal(*groups).statistic)
    assert kw.loc["woman", COUNT] == 21 and kw.loc["woman", N] == 150
    chi = tests[(tests["test"] == "chi-square") & (tests["demographic"] == "race")].iloc[0]
    table = np.array([[c[k] for k in ("White", "Asian", "Black", "neither")]
                      for c in RACE_MATH.values()])
    assert chi[STATISTIC] == pytest.approx(stats.chi2_contingency(table,
                                                                  correction=False).statistic)
    assert "whole distribution" in chi["question"] and chi["label"] == "(all)"


def test_the_papers_table_shape_from_a_labelled_sample(dist):
    """Rows: decades; columns: demographic > prompt > subcategory; percentages of all the
    answers (rows need not add up to 100); * where Kruskal-Wallis finds the share differs."""
    tests = cp.capsule_tests(dist, "label", "decade", by="prompt", method="chi2")
    table = cp.capsule_table(dist, "label", "decade", by="prompt", tests=tests)
    assert table.index.tolist() == ["1950s", "1990s", "2010s"]
    assert table.columns.names == ["demographic", "prompt", "label"]
    assert [c[:2] for c in table.columns] == [("gender", "ceo")] * 3 + [
        ("race", "mathematician")] * 3
    kw = tests[tests["test"] == "Kruskal-Wallis"].set_index("label")[P_VALUE]
    expected = [f"{c}*" if kw[c] < 0.05 else c
                for c in ("woman", "man", "non-binary", "White", "Asian", "Black")]
    assert [c[2] for c in table.columns] == expected
    assert "Black*" in expected and "non-binary" in expected      # 24/50 vs 14/50; 0-1 of 50
    assert table.iloc[0].tolist() == pytest.approx([8, 60, 0, 20, 2, 28])
    assert table.loc["1950s", ("gender", "ceo")].sum() == pytest.approx(68)   # neither kept


def test_demographics_are_checked():
    with pytest.raises(AnalysisError, match="name the column that says which demographic"):
        cp.capsule_distribution(sample(), "label", "decade", demographics=DEMOGRAPHICS)
    with pytest.raises(AnalysisError, match="belongs to one demographic"):
        cp.parse_demographics("gender=woman,man;other=man,robot")
    with pytest.raises(AnalysisError, match="write name=cat1,cat2"):
        cp.parse_demographics("woman,man")
    one = cp.capsule_distribution(sample().query("demographic == 'gender'"), "label",
                                  "decade", demographics="gender=woman,man,non-binary")
    assert one[N].unique().tolist() == [50]


#: The time-capsule paper's Table 4 (Llama 3 70B, 50 answers per decade and prompt): the
#: percentages of CEO (gender), women_fiance (sexual orientation), mathematician (race) and
#: defacing_monument (religion), rebuilt as labelled answers.
TABLE4_PROMPTS = {"ceo": ("gender", ["woman", "man", "non-binary"]),
                  "women_fiance": ("orientation", ["heterosexual", "homosexual", "skoliosexual"]),
                  "mathematician": ("race", ["White", "Asian", "Black"]),
                  "defacing_monument": ("religion", ["Christianity", "Islam", "Judaism",
                                                     "Buddhism"])}
TABLE4 = {"1950s": [8, 60, 0, 74, 2, 0, 20, 2, 28, 14, 22, 16, 0],
          "1960s": [4, 50, 2, 68, 0, 0, 20, 12, 26, 10, 34, 12, 4],
          "1970s": [8, 62, 2, 80, 0, 0, 24, 2, 28, 26, 18, 18, 0],
          "1980s": [4, 62, 0, 58, 0, 2, 12, 8, 22, 10, 36, 6, 2],
          "1990s": [12, 36, 2, 68, 6, 2, 20, 4, 28, 6, 26, 8, 4],
          "2000s": [12, 36, 0, 60, 10, 0, 18, 4, 14, 14, 38, 0, 4],
          "2010s": [22, 42, 2, 60, 12, 0, 10, 8, 6, 2, 48, 0, 0]}


def table4() -> tuple[pd.DataFrame, str]:
    rows = []
    for decade, percents in TABLE4.items():
        i = 0
        for prompt, (demographic, cats) in TABLE4_PROMPTS.items():
            counts = {c: percents[i + j] // 2 for j, c in enumerate(cats)}  # % of 50
            i += len(cats)
            counts["neither"] = 50 - sum(counts.values())
            for label, k in counts.items():
                rows += [{"decade": decade, "label": label, "demographic": demographic,
                          "prompt": prompt}] * k
    spec = ";".join(f"{d}={','.join(c)}" for d, c in TABLE4_PROMPTS.values())
    return pd.DataFrame(rows), spec


def test_table4_claim_is_the_among_subcategories_test():
    """The paper: every subcategory differs from the others in the same prompt
    (Kruskal-Wallis). Among the subcategories of each prompt (their 7 decade percentages as
    observations) p < 0.003 for all four prompts, = scipy on the printed percentages; the
    per-subcategory test across decades stars fewer."""
    frame, spec = table4()
    dist = cp.capsule_distribution(frame, "label", "decade", demographics=spec,
                                   demographic_col="demographic", by="prompt")
    tests = cp.capsule_tests(dist, "label", "decade", by="prompt", method="chi2")
    among = tests[tests["test"] == cp.KRUSKAL_AMONG].set_index("prompt")
    assert len(among) == 4 and (among[P_VALUE] < 0.003).all()
    i = 0
    for prompt, (_, cats) in TABLE4_PROMPTS.items():
        cols = [[TABLE4[d][i + j] for d in TABLE4] for j in range(len(cats))]
        i += len(cats)
        ref = stats.kruskal(*cols)
        assert among.loc[prompt, STATISTIC] == pytest.approx(ref.statistic, rel=1e-12)
        assert among.loc[prompt, P_VALUE] == pytest.approx(ref.pvalue, rel=1e-12)
    across = tests[tests["test"] == cp.KRUSKAL]
    starred = (across[P_VALUE] < 0.05).sum()
    assert starred == 7  # the across-decades reading stars 7 of 13, not "all subcategories"
    # BH over the 13 across-decades tests: the adjusted column, = statsmodels' fdr_bh
    from statsmodels.stats.multitest import multipletests

    ok = across[P_VALUE].notna()
    want = multipletests(across.loc[ok, P_VALUE], method="fdr_bh")[1]
    assert across.loc[ok, "p_adjusted"].to_numpy() == pytest.approx(want)
    table = cp.capsule_table(dist, "label", "decade", by="prompt", tests=tests)
    labels = [c[2] for c in table.columns]
    assert sum(lab.endswith(("*", "*" + cp.BH_MARK)) for lab in labels) == starred
    assert sum(lab.endswith(cp.BH_MARK) for lab in labels) == int(
        (across["p_adjusted"] < 0.05).sum()) == 4  # 3 of the 7 stars go under BH
    paper = cp.capsule_table(dist, "label", "decade", by="prompt", tests=tests,
                             star="among_subcategories")
    assert all(c[2].endswith("*" + cp.BH_MARK) for c in paper.columns)  # all 13, as printed


@pytest.mark.parametrize("dtype", [object, "category", "str"])
def test_counts_match_groupby_whatever_the_demographic_column(dtype):
    """n and counts per (demographic, prompt, decade, subcategory) equal a groupby of the
    rows whose demographic column reads as the demographic's name (missing: no
    demographic), for a text, categorical or Arrow text column; rows without a label are
    left out."""
    rng = np.random.default_rng(3)
    frame = sample()
    frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    frame.loc[frame.index[::9], "demographic"] = None
    frame["demographic"] = frame["demographic"].astype(dtype)
    dist = cp.capsule_distribution(frame, "label", "decade", demographics=DEMOGRAPHICS,
                                   demographic_col="demographic", by="prompt")
    for (name, prompt, decade), part in dist.groupby(["demographic", "prompt", "decade"],
                                                     observed=True):
        rows = frame[(frame["demographic"].astype(str) == name) & frame["label"].notna()
                     & (frame["prompt"] == prompt) & (frame["decade"] == decade)]
        assert (part[N] == len(rows)).all()
        for label, count in zip(part["label"].astype(str), part[COUNT], strict=True):
            assert count == (rows["label"] == label).sum()
