"""Paired comparison (analysis/compare.py): McNemar = statsmodels on the BBQ sample's input
formats, paired t / Wilcoxon = scipy, hand-computed intervals and counts, coverage of the
per-subgroup paired difference by simulation, unpaired rows and duplicates, bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from analysis import apply_design, load_results
from analysis.compare import (
    agresti_min_interval,
    compare,
    compare_overall,
    compare_subgroups,
    conditional_odds_ratio,
    durkalski_test,
    holm,
    infer_unit,
    mcnemar_test,
    pair_units,
    paired_bootstrap,
)
from analysis.design import Design, Factor, Outcome
from analysis.errors import PairingError
from analysis.subgroups import subgroups
from tests.app.apptools import ROOT

BBQ = ROOT / "sample_data" / "bbq_unifiedqa.csv.gz"
BBQ_DESIGN = ROOT / "sample_data" / "bbq_unifiedqa.design.yaml"


@pytest.fixture(scope="module")
def bbq():
    design = Design.load(BBQ_DESIGN)
    return apply_design(load_results(BBQ), design), design


def _independent_table(frame: pd.DataFrame, a: str, b: str) -> np.ndarray:
    """The paired 2x2 table of formats a and b, built from the raw rows by example_id."""
    wide = frame.pivot(index="example_id", columns="input_format", values="biased_answer")
    both = wide[[a, b]].dropna()
    xa, xb = both[a].astype(int), both[b].astype(int)
    return np.array([[((xa == 1) & (xb == 1)).sum(), ((xa == 1) & (xb == 0)).sum()],
                     [((xa == 0) & (xb == 1)).sum(), ((xa == 0) & (xb == 0)).sum()]])


@pytest.mark.parametrize("test,exact", [("exact", True), ("chi2", False)])
def test_mcnemar_equals_statsmodels_on_bbq_formats(bbq, test, exact):
    results, design = bbq
    raw = pd.read_csv(BBQ)
    # cluster=None: McNemar assumes independent pairs (a design cluster would give Durkalski)
    pairing = pair_units(results, design, "input_format", cluster=None)
    assert pairing.unit == ["example_id"] and pairing.unit_source == "id column"
    overall = compare_overall(pairing, test=test)
    assert len(overall) == 3
    for r in overall.to_dict(orient="records"):
        table = _independent_table(raw, r["model_a"], r["model_b"])
        assert [[r["both_deviate"], r["only_a"]], [r["only_b"], r["neither_deviates"]]] \
            == table.tolist()
        assert r["n_pairs"] == table.sum()
        ref = mcnemar(table, exact=exact)
        assert r["test"] == f"mcnemar_{test}"
        assert r["statistic"] == pytest.approx(ref.statistic, rel=1e-12)
        assert r["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    holm_ref = multipletests(overall["p_value"], method="holm")[1]
    np.testing.assert_allclose(overall["p_adjusted"], holm_ref, rtol=1e-12)


def test_bbq_formats_unpaired_and_missing_outcomes_are_counted(bbq):
    results, design = bbq
    pairing = pair_units(results, design, "input_format")
    counts = pairing.counts.set_index("input_format")
    # 11,956 examples per format; rows without an outcome leave their example unpaired
    assert (counts["rows"] + counts["missing_outcome"] == 11956).all()
    overall = compare_overall(pairing, reference="race")
    for r in overall.to_dict(orient="records"):
        n_a = counts.loc[r["model_a"], "units"]
        n_b = counts.loc[r["model_b"], "units"]
        assert r["n_pairs"] + r["unpaired_a"] == n_a and r["n_pairs"] + r["unpaired_b"] == n_b
    assert list(overall["model_a"]) == ["race", "race"]


def test_mcnemar_auto_switches_at_25_discordant_pairs():
    assert mcnemar_test(10, 14)[0] == "mcnemar_exact"
    assert mcnemar_test(10, 15)[0] == "mcnemar_chi2"
    name, stat, p = mcnemar_test(10, 14)
    assert p == pytest.approx(mcnemar([[0, 10], [14, 0]], exact=True).pvalue)
    assert mcnemar_test(0, 0, test="chi2") == ("mcnemar_chi2", 0.0, 1.0)  # statsmodels: inf


def test_agresti_min_and_conditional_odds_ratio_by_hand():
    lo, hi = agresti_min_interval(40, 10, 25, 25)
    b, c, n = 10.5, 25.5, 102.0
    d = (c - b) / n
    half = 1.959963984540054 * math.sqrt(((b + c) / n - d ** 2) / n)
    assert (lo, hi) == pytest.approx((d - half, d + half))
    ratio, olo, ohi = conditional_odds_ratio(10, 25)
    plo, phi = proportion_confint(25, 35, method="beta")
    assert ratio == pytest.approx(2.5)
    assert (olo, ohi) == pytest.approx((plo / (1 - plo), phi / (1 - phi)))
    assert conditional_odds_ratio(0, 4)[0] == math.inf


def test_holm_by_hand_and_nan_left_out():
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.2, 0.001])
    # sorted 0.001, 0.01, 0.03, 0.04, 0.2 times 5, 4, 3, 2, 1, then running maximum
    expected = [0.04, 0.09, 0.09, np.nan, 0.2, 0.005]
    np.testing.assert_allclose(holm(p), expected)


def test_holm_bit_identical_to_statsmodels():
    """holm() repeats multipletests' operations (it is not called: it runs gc.collect()):
    the same bits on random p-values with ties, values near 1 and NaNs."""
    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 40, 1000):
        p = rng.uniform(size=n) ** rng.uniform(0.2, 4)
        p[rng.uniform(size=n) < 0.2] = 0.05  # ties
        p[rng.uniform(size=n) < 0.1] = 1.0
        missing = rng.uniform(size=n) < 0.1
        p[missing] = np.nan
        ours = holm(p)
        assert np.isnan(ours[missing]).all()
        if (~missing).any():
            ref = multipletests(p[~missing], method="holm")[1]
            np.testing.assert_array_equal(ours[~missing], ref)
    assert holm([]).shape == (0,)
    assert np.isnan(holm([np.nan, np.nan])).all()


def test_durkalski_by_hand():
    stat, p = durkalski_test([3, 0, 2, 1], [1, 2, 0, 0])
    d = np.array([2, -2, 2, 1])
    assert stat == pytest.approx(d.sum() ** 2 / (d ** 2).sum())
    assert p == pytest.approx(stats.chi2.sf(stat, 1))


def _score_table(seed: int = 3, n: int = 80) -> tuple[pd.DataFrame, Design]:
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    rows = []
    for m, shift in (("m1", 0.0), ("m2", 0.3), ("m3", -0.1)):
        score = base + shift + rng.normal(scale=0.8, size=n)
        rows.append(pd.DataFrame({"prompt_id": np.arange(n), "model": m,
                                  "topic": np.where(np.arange(n) % 2, "x", "y"),
                                  "score": score, "biased": (score > 0).astype(int)}))
    frame = pd.concat(rows, ignore_index=True)
    design = Design((Factor("model", "model", ("m1", "m2", "m3"), "m1"),
                     Factor("topic", "domain", ("x", "y"), "x")), Outcome("biased"))
    return apply_design(frame, design), design


def test_score_paired_t_and_wilcoxon_equal_scipy():
    results, design = _score_table()
    pairing = pair_units(results, design, "model", score="score")
    assert pairing.outcome == "score" and pairing.unit == ["prompt_id"]
    overall = compare_overall(pairing, reference="m1", adjust="bh")
    wide = results.pivot(index="prompt_id", columns="model", values="score")
    for r in overall.to_dict(orient="records"):
        xa, xb = wide[r["model_a"]], wide[r["model_b"]]
        t = stats.ttest_rel(xb, xa)
        w = stats.wilcoxon(xb, xa)
        assert r["statistic"] == pytest.approx(t.statistic) and r["p_value"] == pytest.approx(
            t.pvalue)
        assert r["wilcoxon_statistic"] == pytest.approx(w.statistic)
        assert r["wilcoxon_p_value"] == pytest.approx(w.pvalue)
        ci = stats.t.interval(0.95, len(xa) - 1, loc=(xb - xa).mean(), scale=stats.sem(xb - xa))
        assert (r["ci_low"], r["ci_high"]) == pytest.approx(ci)
    np.testing.assert_allclose(overall["p_adjusted"],
                               multipletests(overall["p_value"], method="fdr_bh")[1])


def test_subgroup_point_estimates_by_hand(bbq):
    results, design = bbq
    pairing = pair_units(results, design, "input_format", factors=["category",
                                                                   "context_condition"])
    table = compare_subgroups(pairing, "race", "qonly", max_level=2, n_resamples=200)
    paired = pairing.paired("race", "qonly")
    row = table[table["subgroup"] == "category = Religion"].iloc[0]
    sel = paired[paired["category"] == "Religion"]
    assert row["n"] == len(sel)
    race, qonly = sel["__outcome_a__"], sel["__outcome_b__"]
    assert row["difference"] == pytest.approx((qonly - race).mean())
    assert row["only_a"] == ((race == 1) & (qonly == 0)).sum()
    # each model's LD = analysis.subgroups' LD on the paired prompts of that model
    for model, col in (("__outcome_a__", "ld_a"), ("__outcome_b__", "ld_b")):
        cells = (paired.assign(deviation=paired[model]).groupby(
            ["category", "context_condition"], observed=True)["deviation"]
            .agg(n="size", deviations="sum").reset_index())
        ref = subgroups(cells, ["category", "context_condition"], max_level=2, test="wald")
        own = ref.set_index("subgroup")["log_disparity"]
        np.testing.assert_allclose(table.set_index("subgroup")[col].loc[own.index], own)
    assert row["ld_difference"] == pytest.approx(row["ld_b"] - row["ld_a"])
    lo, hi = row["ci_low"], row["ci_high"]
    assert lo < row["difference"] < hi and row["ld_ci_low"] < row["ld_difference"] < \
        row["ld_ci_high"]
    assert table["verdicts_differ"].equals(table["significant_a"] != table["significant_b"])
    again = compare_subgroups(pairing, "race", "qonly", max_level=2, n_resamples=200)
    pd.testing.assert_frame_equal(table, again)  # seeded


# --- coverage of the per-subgroup paired difference ------------------------------------
_PA, _PB, _SHARE = np.array([0.3, 0.45, 0.6]), np.array([0.4, 0.45, 0.5]), [.5, .3, .2]


def _independent_prompts(rng: np.random.Generator, n: int = 600):
    """Prompts in 3 subgroups; b's answer follows a's (same uniform) except 30 % redrawn."""
    g = rng.choice(3, n, p=_SHARE)
    u = rng.random(n)
    xa, xb = (u < _PA[g]).astype(int), (u < _PB[g]).astype(int)
    redraw = rng.random(n) < 0.3
    xb[redraw] = rng.random(redraw.sum()) < _PB[g][redraw]
    kinds = np.bincount((g * 2 + xa) * 2 + xb, minlength=12)
    keep = np.flatnonzero(kinds)  # the distinct (subgroup, a, b) triples, as compare_subgroups
    n_ec = np.zeros((len(keep), 3))
    n_ec[np.arange(len(keep)), keep // 4] = 1
    return n_ec, n_ec * ((keep // 2) % 2)[:, None], n_ec * (keep % 2)[:, None], kinds[keep] / n, n


def _clustered_prompts(rng: np.random.Generator, g_clusters: int = 50, m: int = 12):
    """50 templates of 12 prompts; a template shifts both models (s) and b alone (d)."""
    c = np.repeat(np.arange(g_clusters), m)
    g = rng.choice(3, len(c), p=_SHARE)
    s, d = (rng.uniform(-0.15, 0.15, g_clusters)[c] for _ in range(2))
    u = rng.random(len(c))
    xa, xb = (u < _PA[g] + s).astype(float), (u < _PB[g] + s + d).astype(float)
    redraw = rng.random(len(c)) < 0.3
    xb[redraw] = rng.random(redraw.sum()) < (_PB[g] + s + d)[redraw]
    flat = c * 3 + g
    size = g_clusters * 3
    return (np.bincount(flat, minlength=size).reshape(-1, 3).astype(float),
            np.bincount(flat, weights=xa, minlength=size).reshape(-1, 3),
            np.bincount(flat, weights=xb, minlength=size).reshape(-1, 3), None, None)


@pytest.mark.parametrize("simulate", [_independent_prompts, _clustered_prompts],
                         ids=["prompts", "clusters"])
def test_subgroup_difference_interval_covers_95_percent(simulate):
    rng = np.random.default_rng(20261127)
    truth = _PB - _PA
    hits = []
    for i in range(400):
        n_ec, a_ec, b_ec, p, draws = simulate(rng)
        res = paired_bootstrap(n_ec, a_ec, b_ec, np.eye(3), probabilities=p, draws=draws,
                               n_resamples=300, seed=i, log_disparity=False)
        hits.append((res["ci_low"] <= truth) & (truth <= res["ci_high"]))
    coverage = np.mean(hits)
    assert 0.93 <= coverage <= 0.97, coverage


def test_compare_subgroups_uses_paired_bootstrap_on_clusters():
    results, design = _score_table()
    results["template"] = results["prompt_id"] // 8
    pairing = pair_units(results, design.with_cluster("template"), "model", factors=["topic"])
    assert pairing.cluster == "template"
    table = compare_subgroups(pairing, "m1", "m2", n_resamples=100, seed=5)
    assert pairing.resampled == "clusters of template" and not table.attrs
    paired = pairing.paired("m1", "m2")
    codes = paired["__cluster__"].to_numpy() * 2 + paired["topic"].cat.codes.to_numpy()
    n_ec = np.bincount(codes, minlength=20).reshape(10, 2).astype(float)
    a_ec = np.bincount(codes, weights=paired["__outcome_a__"], minlength=20).reshape(10, 2)
    b_ec = np.bincount(codes, weights=paired["__outcome_b__"], minlength=20).reshape(10, 2)
    direct = paired_bootstrap(n_ec, a_ec, b_ec, np.eye(2), n_resamples=100, seed=5,
                              clustered=True)
    assert (table["n_clusters"] == direct["n_clusters"]).all()
    np.testing.assert_allclose(table["ci_low"], direct["ci_low"])
    np.testing.assert_allclose(table["ld_difference"], direct["ld_difference"])
    overall = compare_overall(pairing)
    assert set(overall["test"]) == {"durkalski"} and (overall["n_clusters"] == 10).all()
    both = compare_overall(pair_units(results, design, "model", score="biased"))
    assert both.loc[0, "test"] == "paired_t"  # a 0/1 column named as score: a score
    binary = compare_overall(pair_units(results, design.with_cluster("template"), "model"))
    r = binary.iloc[0]
    assert r["test"] == "durkalski"
    assert r["mcnemar_p_value"] == pytest.approx(mcnemar_test(r["only_a"], r["only_b"])[2])


def test_a_design_cluster_that_does_not_fit_is_set_aside_with_a_note():
    results, design = _score_table()
    results["seed"] = np.arange(len(results)) % 7  # varies within a prompt
    pairing = pair_units(results, design.with_cluster("seed"), "model")
    assert pairing.cluster is None
    assert "The design's cluster 'seed' takes several values within one prompt unit" in \
        pairing.notes[0]
    with pytest.raises(PairingError, match="The cluster 'seed' takes several values"):
        pair_units(results, design, "model", cluster="seed")


# --- unpaired rows, duplicates, bad input -------------------------------------------------
def _small(rows: list[tuple]) -> tuple[pd.DataFrame, Design]:
    frame = pd.DataFrame(rows, columns=["item_id", "model", "biased"])
    models = tuple(sorted(frame["model"].unique()))
    design = Design((Factor("model", "model", models, models[0]),), Outcome("biased"))
    return apply_design(frame, design), design


def test_unpaired_rows_are_counted_and_reported():
    results, design = _small([(1, "a", 1), (1, "b", 0), (2, "a", 0), (2, "b", 0),
                              (3, "a", 1), (4, "b", 1), (5, "b", 0)])
    c = compare(results, design, "model")
    r = c.overall.iloc[0]
    assert (r["n_pairs"], r["unpaired_a"], r["unpaired_b"]) == (2, 1, 2)
    assert any("1 prompts answered only under a and 2 only under b are left out" in n
               for n in c.notes)


def test_rows_without_a_unit_are_counted_not_lumped():
    results, design = _small([(1, "a", 1), (1, "b", 0), (None, "a", 1), (None, "b", 1),
                              (None, "b", 0)])
    pairing = pair_units(results, design, "model", unit=["item_id"])
    counts = pairing.counts.set_index("model")
    assert counts["missing_unit"].tolist() == [1, 2] and counts["units"].tolist() == [1, 1]
    assert "3 rows have no item_id (no prompt to pair them on) and are left out." in \
        pairing.notes
    assert compare_overall(pairing).iloc[0]["n_pairs"] == 1


def test_duplicates_are_averaged_or_refused():
    rows = [(1, "a", 1), (1, "a", 0), (1, "b", 1), (2, "a", 1), (2, "b", 0)]
    results, design = _small(rows)
    pairing = pair_units(results, design, "model")
    assert pairing.counts.set_index("model").loc["a", "duplicate_units"] == 1
    assert pairing.outcome == "score"  # 0.5 is a share: compared as a score, and said so
    assert any("with the mean of its outcomes" in n for n in pairing.notes)
    assert pairing.paired("a", "b")["__outcome_a__"].tolist() == [0.5, 1.0]
    with pytest.raises(PairingError, match="1 prompt units are answered more than once by "
                                           "the same value of 'model'"):
        pair_units(results, design, "model", duplicates="refuse")


def test_bad_input_messages():
    results, design = _small([(1, "a", 1), (2, "b", 0)])
    with pytest.raises(PairingError, match="share no prompt"):
        pair_units(results, design, "model")
    one, one_design = _small([(1, "a", 1), (2, "a", 0)])
    with pytest.raises(PairingError, match="has a single value in these rows"):
        pair_units(one, one_design, "model")
    results, design = _small([(1, "a", 1), (1, "b", 0)])
    with pytest.raises(PairingError, match="The reference 'z' is not among the values"):
        compare(results, design, "model", reference="z")
    results["topic"] = ["x", "y"]
    with pytest.raises(PairingError, match="factor 'topic' takes several values within one "
                                           "prompt unit"):
        pair_units(results, design, "model", factors=["topic"])


def _log_disparity(p: np.ndarray) -> np.ndarray:
    """Population LD of each of the three subgroups against the other two (shares _SHARE)."""
    share = np.asarray(_SHARE)
    out = []
    for g in range(3):
        rest = np.delete(np.arange(3), g)
        r = (share[rest] * p[rest]).sum() / share[rest].sum()
        out.append(np.log(p[g] / (1 - p[g])) - np.log(r / (1 - r)))
    return np.array(out)


def test_subgroup_ld_difference_interval_covers_95_percent():
    # 1,000 replicates: with a few hundred the percentile ends of LD are too noisy (~93 %)
    rng = np.random.default_rng(7)
    truth = _log_disparity(_PB) - _log_disparity(_PA)
    hits = []
    for i in range(400):
        n_ec, a_ec, b_ec, p, draws = _independent_prompts(rng)
        res = paired_bootstrap(n_ec, a_ec, b_ec, np.eye(3), probabilities=p, draws=draws,
                               n_resamples=1000, seed=i)
        hits.append((res["ld_ci_low"] <= truth) & (truth <= res["ld_ci_high"]))
    coverage = np.mean(hits)
    assert 0.93 <= coverage <= 0.97, coverage


def test_durkalski_with_one_pair_per_cluster_is_mcnemar_without_correction():
    only_a = np.array([1] * 30 + [0] * 18 + [0] * 50)
    only_b = np.array([0] * 30 + [1] * 18 + [0] * 50)
    stat, p = durkalski_test(only_a, only_b)
    ref = mcnemar([[50, 30], [18, 0]], exact=False, correction=False)
    assert stat == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)


def test_cluster_robust_difference_equals_statsmodels_cluster_ols():
    import statsmodels.api as sm

    from analysis.compare import cluster_mean_difference

    rng = np.random.default_rng(11)
    clusters = np.repeat(np.arange(15), 7)
    d = rng.normal(0.2, 1, 15)[clusters] + rng.normal(size=len(clusters))
    mean, lo, hi, p, g = cluster_mean_difference(d, clusters)
    fit = sm.OLS(d, np.ones(len(d))).fit(cov_type="cluster", cov_kwds={"groups": clusters},
                                         use_t=True)
    assert g == 15 and mean == pytest.approx(fit.params[0])
    t = stats.t.ppf(0.975, 14)
    assert (hi - mean) / t == pytest.approx(fit.bse[0])
    assert p == pytest.approx(2 * stats.t.sf(abs(fit.tvalues[0]), 14))


def test_pair_units_with_the_unit_already_inferred_is_the_same(bbq):
    """The app passes infer_unit's answer (kept per table and compared factor): the same
    pairing, note and tables as inferring it inside."""
    results, design = bbq
    inferred = infer_unit(results, design, "input_format")
    assert inferred[1] == "id column"
    inside = pair_units(results, design, "input_format", factors=["category"])
    given = pair_units(results, design, "input_format", factors=["category"],
                       inferred=inferred)
    assert (given.unit, given.unit_source, given.note) == (inside.unit, inside.unit_source,
                                                           inside.note)
    pd.testing.assert_frame_equal(given.outcomes, inside.outcomes)
    pd.testing.assert_frame_equal(given.wide, inside.wide)
    pd.testing.assert_frame_equal(given.counts, inside.counts)


@pytest.mark.parametrize("seed", range(4))
def test_id_candidates_and_unit_codes_by_their_definitions(seed):
    """The id-like columns (issue 44 item 3: distinct values per group from a boolean
    table of the pairs seen) are those a per-group ``nunique`` picks, in the same order;
    the prompt units are numbered as ``pd.factorize`` of the rows' tuples numbers them."""
    from analysis.compare import _ID_NAME, _id_candidates, _unit_codes

    rng = np.random.default_rng(seed)
    n = 6_000
    item = rng.integers(0, 2_000, n)
    frame = pd.DataFrame({
        "model": rng.choice(["m1", "m2", "m3", None], n).tolist(),
        "example_id": pd.array([f"e{i}" for i in item], dtype="str"),
        "row_id": np.arange(n),
        "template_id": rng.integers(0, 40, n),  # few values per model: not an id
        "prompt_id": pd.array([f"p{i // 2}" for i in item], dtype="str"),
        "gap_id": pd.array(rng.choice(["a", None], n).tolist(), dtype="str"),
    })
    ours = _id_candidates(frame, "model", {"model"})
    grouped = frame[frame["model"].notna()]
    found = []
    for col in frame.columns:
        if col == "model" or not _ID_NAME.search(col) or frame[col].isna().any():
            continue
        per = grouped.groupby("model")[col].nunique()
        if (per < 0.5 * grouped.groupby("model").size()).any():
            continue
        total = frame[col].nunique()
        found.append((total == len(frame), -total, col))
    assert ours == [c for *_, c in sorted(found)] and "example_id" in ours
    for unit in (["example_id"], ["model", "template_id"], []):
        codes, first = _unit_codes(frame, unit)
        want = pd.factorize(pd.Series(list(zip(*(frame[c].astype(object).where(
            frame[c].notna(), None) for c in unit), strict=True)) if unit else [()] * n,
            dtype=object))[0]
        assert (codes == want).all()
        assert (first == [int(np.flatnonzero(want == u)[0]) for u in range(want.max() + 1)]
                ).all()


@pytest.mark.parametrize("seed", range(3))
def test_unit_codes_of_categoricals_and_wide_keys_by_their_definition(seed):
    """The units numbered by first appearance from marks (few combined codes) and by
    ``pd.factorize`` (many; a key renumbered before it passes 2^62) as ``pd.factorize``
    of the rows' tuples numbers them: categoricals with unused and missing values, floats
    with missing values, and five columns of 20,000 values each."""
    from analysis.compare import _unit_codes

    rng = np.random.default_rng(seed)
    n = 30_000
    cats = pd.Categorical(rng.choice(["a", "b", "c", None], n).tolist(),
                          categories=["z", "c", "b", "a"])
    wide = {f"w{i}": rng.integers(0, 20_000, n) for i in range(5)}
    frame = pd.DataFrame({"cat": cats, "cat2": pd.Categorical(rng.integers(0, 7, n)),
                          "score": np.where(rng.random(n) < 0.1, np.nan,
                                            rng.integers(0, 50, n).astype(float)),
                          **wide})
    for unit in (["cat"], ["cat", "cat2", "score"], ["score", "cat"], list(wide),
                 ["cat", *wide]):
        codes, first = _unit_codes(frame, unit)
        want = pd.factorize(pd.Series(list(zip(*(frame[c].astype(object).where(
            frame[c].notna(), None) for c in unit), strict=True)), dtype=object))[0]
        assert (codes == want).all()
        assert (first == [int(np.flatnonzero(want == u)[0]) for u in range(want.max() + 1)]
                ).all()
