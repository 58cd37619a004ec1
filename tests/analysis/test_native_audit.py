"""Audit of the native scores' intervals, their paired deltas and the gate's verdicts
(``analysis/native_scores.py``, ``analysis/gate.py``; ``docs/native_scores.md``): edge cases
of the stratified resampling, and small seeded simulations of the coverage / size with few
templates per category (Monte-Carlo tolerances in each docstring)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.native_scores import CI_HIGH, CI_LOW, native_deltas, native_scores


def bbq_frame(rng: np.random.Generator, categories: int, templates: int, rows: int,
              mu: np.ndarray, conc: float = 20.0) -> pd.DataFrame:
    """A BBQ-like table: ``categories`` x ``templates`` templates, each with ``rows``
    ambiguous and ``rows`` disambiguated rows. A template's chance of a biased answer
    (when it names a group) is Beta(mu_h conc, (1 - mu_h) conc) around its category's
    ``mu_h``; its chance of "unknown" is Beta(0.3 conc, 0.7 conc), independent of it. The
    population scores are then s_DIS = 2 mu - 1 and s_AMB = 0.7 (2 mu - 1) per category
    (their means over the categories overall: equal sizes)."""
    cat = np.repeat(np.arange(categories), templates)
    b = rng.beta(mu[cat] * conc, (1 - mu[cat]) * conc)
    u = rng.beta(0.3 * conc, 0.7 * conc, size=len(cat))
    t = np.repeat(np.arange(len(cat)), 2 * rows)
    cond = np.tile(np.repeat(["ambig", "disambig"], rows), len(cat))
    unknown = rng.random(len(t)) < u[t]
    biased = (rng.random(len(t)) < b[t]).astype(int)
    return pd.DataFrame({
        "template_id": t, "category": [f"c{h}" for h in cat[t]], "context_condition": cond,
        "answer_type": np.where(unknown, "unknown", np.where(biased == 1, "target", "other")),
        "biased_answer": np.where(unknown, 0, biased),
        "correct": np.where(cond == "ambig", unknown.astype(int), 1)})


def test_a_category_of_one_template_does_not_stratify_the_overall_interval():
    """One template per category: resampling within each category would redraw the same
    template every time, so the overall score's interval had zero width (boot SE ~1e-15)
    and the gate could pass a bound at the estimate itself. The overall interval must
    reflect the variation between the templates: the clusters are resampled together."""
    rng = np.random.default_rng(1)
    frame = bbq_frame(rng, 4, 1, 30, np.array([0.5, 0.6, 0.7, 0.8]))
    table = native_scores(frame, n_resamples=200).table
    overall = table[table["scope"] == "overall"].set_index("score").loc[
        ["s_DIS", "s_AMB", "accuracy_amb"]]  # accuracy_dis is 1 on every row here
    assert (overall[CI_HIGH] - overall[CI_LOW] > 0.05).all(), overall
    assert (overall["boot_se"] > 0.01).all()
    assert "within each" not in overall["interval"].iloc[0]
    # one category with two templates and three with one: that one category's templates
    # alone would make the overall interval; not stratified either
    frame = bbq_frame(rng, 4, 2, 30, np.array([0.5, 0.6, 0.7, 0.8]))
    frame = frame[~((frame["category"] != "c0") & (frame["template_id"] % 2 == 1))]
    table = native_scores(frame, n_resamples=200).table
    assert "within each" not in table["interval"].iloc[0]
    # two templates in every category: stratified, as documented
    frame = bbq_frame(rng, 4, 2, 30, np.array([0.5, 0.6, 0.7, 0.8]))
    table = native_scores(frame, n_resamples=200).table
    assert "within each category" in table["interval"].iloc[0]


def test_a_missing_correct_is_left_out_of_the_accuracy_as_in_bias_scores():
    """bias_scores (the one definition) takes the accuracy over the rows whose ``correct``
    is known; the native scores counted a missing one as wrong (and so, through s_AMB's accuracy,
    moved s_AMB). The point estimates must be equal."""
    from analysis.bbq_scores import bias_scores

    frame = bbq_frame(np.random.default_rng(2), 2, 3, 10, np.array([0.5, 0.7]))
    frame = frame.astype({"correct": float})
    frame.loc[frame.index[:7], "correct"] = np.nan  # ambiguous rows of the first template
    frame.loc[frame.index[10:13], "correct"] = np.nan  # disambiguated ones
    want = bias_scores(frame).iloc[0]
    got = native_scores(frame, n_resamples=50).table
    got = got[got["scope"] == "overall"].set_index("score")["estimate"]
    for score in ("s_DIS", "s_AMB", "accuracy_dis", "accuracy_amb"):
        assert got[score] == pytest.approx(want[score], rel=1e-12), score
    amb = frame[frame["context_condition"] == "ambig"]["correct"]
    assert got["accuracy_amb"] == pytest.approx(amb.sum() / amb.notna().sum(), rel=1e-12)


#: The simulated benchmark of the coverage tests: 6 categories x 6 templates x 10 rows per
#: context condition, categories' biased-answer chances 0.5 ... 0.7.
_MU = np.linspace(0.5, 0.7, 6)
_TRUE = {"s_DIS": 2 * _MU - 1, "s_AMB": 0.7 * (2 * _MU - 1)}


def _tails(reps: int, level: float, seed: int) -> dict[str, dict[str, float]]:
    """Per score and scope (``overall``, ``category``), the shares of simulated data sets
    whose interval at ``level`` lies wholly below the true score (a ``max`` bound at the
    truth passes) and wholly above it (a ``min`` bound at the truth passes)."""
    rng = np.random.default_rng(seed)
    count = {(s, w, side): 0 for s in _TRUE for w in ("overall", "category")
             for side in ("below", "above")}
    for i in range(reps):
        table = native_scores(bbq_frame(rng, 6, 6, 10, _MU), n_resamples=300, seed=i,
                              confidence=level).table
        for s, truth in _TRUE.items():
            rows = table[table["score"] == s]
            overall = rows[rows["scope"] == "overall"].iloc[0]
            cat = rows[rows["scope"] == "category"].sort_values("group")
            for w, lo, hi, tv in (("overall", [overall[CI_LOW]], [overall[CI_HIGH]],
                                   [truth.mean()]),
                                  ("category", cat[CI_LOW], cat[CI_HIGH], truth)):
                count[(s, w, "below")] += int((np.asarray(hi) < tv).sum())
                count[(s, w, "above")] += int((np.asarray(lo) > tv).sum())
    return {f"{s} {w} {side}": v / (reps * (6 if w == "category" else 1))
            for (s, w, side), v in count.items()}


def test_gate_bounds_at_the_truth_pass_about_as_often_as_documented_with_few_templates():
    """The gate passes ``max: x`` when the upper end of the two-sided 90 % interval is at
    most x (docs/checks.md: a one-sided 95 % bound), so with x at the true score it should
    pass in at most 5 % of data sets (likewise ``min``). 100 seeded data sets of 6
    categories x 6 templates (the simulated benchmark above), s_DIS and s_AMB, 300
    resamples each. Measured shares of intervals wholly below / above the truth (each a
    bound at the truth passing), per category (6 templates; 600 intervals per share):
    s_DIS 4.3 % / 6.2 %, s_AMB 6.5 % / 5.3 %; overall (36 templates, resampled within the
    categories; 100 per share): s_DIS 4 % / 6 %, s_AMB 6 % / 6 % (600 data sets: 4.3 % /
    6.2 % and 5.7 % / 6.7 %, mean 5.7 %). Per category and overall the error rate is near
    nominal. Before the expansion counted the strata (``expanded_tail(conf, n, H)``) the
    overall shares were about 1.4 x nominal (600 data sets: 7.2 % / 7.2 % and 7.2 % / 6.3 %):
    resampling within 6 categories of 6 shrinks the variance by 5/6, not 35/36
    (docs/native_scores.md; ``test_stratified_interval_equals_a_direct_stratified_bootstrap``
    pins the tails exactly). Bounds (Monte-Carlo SE about 0.9 points per category share, 2.5
    per overall share, 1.3 for the mean of the four overall shares): every category share in
    [0.02, 0.085], the mean overall share at most 0.095. One data set through ``bw.check``:
    its verdicts and interval are these intervals'."""
    from analysis import api as bw
    from analysis.design_model import Design, Factor, Outcome

    tails = _tails(100, 0.9, 20261202)
    for key, share in tails.items():
        if "category" in key:
            assert 0.02 <= share <= 0.085, (key, share)
    overall = np.mean([v for k, v in tails.items() if "overall" in k])
    assert overall <= 0.095, tails
    frame = bbq_frame(np.random.default_rng(0), 6, 6, 10, _MU).assign(deviation=0)
    design = Design((Factor("category", "domain", tuple(f"c{h}" for h in range(6)), "c0"),),
                    Outcome("deviation"), cluster="template_id")
    x = float(_TRUE["s_AMB"][2])
    got = bw.check(frame, design, criteria={"version": 1, "n_resamples": 300, "criteria": [
        {"id": "cat", "metric": "s_AMB", "scope": {"category": "c2"}, "max": x},
        {"id": "all", "metric": "s_AMB", "min": x}]}).table.set_index("id")
    want = native_scores(frame, design, n_resamples=300, confidence=0.9).table
    want = want[want["score"] == "s_AMB"].set_index("group")
    for crit, group in (("cat", "c2"), ("all", "all")):
        assert got.loc[crit, "ci_low"] == pytest.approx(want.loc[group, CI_LOW])
        assert got.loc[crit, "ci_high"] == pytest.approx(want.loc[group, CI_HIGH])
    lo, hi = want.loc["c2", CI_LOW], want.loc["c2", CI_HIGH]
    assert got.loc["cat", "verdict"] == ("pass" if hi <= x else "fail" if lo > x
                                         else "uncertain")


def pair_frame(rng: np.random.Generator, categories: int, templates: int, rows: int,
               mu: np.ndarray, conc: float = 20.0) -> pd.DataFrame:
    """Two input formats ``a`` and ``b`` answering the same prompts (``example_id``) of
    :func:`bbq_frame`'s templates with the *same* chances (the null of no delta): a
    template's chances are shared by both formats, the answers drawn independently."""
    cat = np.repeat(np.arange(categories), templates)
    b = rng.beta(mu[cat] * conc, (1 - mu[cat]) * conc)
    u = rng.beta(0.3 * conc, 0.7 * conc, size=len(cat))
    t = np.repeat(np.arange(len(cat)), 2 * rows)
    cond = np.tile(np.repeat(["ambig", "disambig"], rows), len(cat))
    parts = []
    for fmt in ("a", "b"):
        unknown = rng.random(len(t)) < u[t]
        biased = (rng.random(len(t)) < b[t]).astype(int)
        parts.append(pd.DataFrame({
            "template_id": t, "category": [f"c{h}" for h in cat[t]],
            "context_condition": cond, "answer_type": np.where(
                unknown, "unknown", np.where(biased == 1, "target", "other")),
            "biased_answer": np.where(unknown, 0, biased),
            "correct": np.where(cond == "ambig", unknown.astype(int), 1),
            "example_id": np.arange(len(t)), "input_format": fmt}))
    return pd.concat(parts, ignore_index=True).assign(deviation=0)


def test_paired_deltas_size_and_coverage_under_the_null_with_few_templates():
    """Two formats with the same chances on the same prompts (no delta): 60 seeded data
    sets of 6 categories x 6 templates, 300 resamples; s_DIS, s_AMB, accuracy_amb
    (accuracy_dis is 1 on every row). The p-value is the bootstrap t (delta / boot SE on
    G - 1 df), the interval the expanded percentile one. Measured here: per category (6
    templates; 1,080 deltas) p < 0.05 in 5.7 %, interval covers 0 in 92.9 %; overall (36
    templates; 180) 11.1 % and 92.8 % (88.9 % before the strata were counted). With 400
    data sets (seed 99): per category 5.6-6.9 % and 92.8-93.2 %, overall 5.3-7.0 % and
    95.0-96.3 % (93.3-94.8 % before the expansion counted the 6 strata): the p-value a
    little liberal with 6 templates per category (the boot SE is not expanded;
    docs/native_scores.md). Bounds (Monte-Carlo SE about 0.8 points per category, 2.3
    overall, the scores of one data set correlated):
    per category size <= 0.09 and coverage >= 0.90; overall size <= 0.17."""
    from analysis.design_model import Design, Factor, Outcome

    design = Design((Factor("input_format", "prompt", ("a", "b"), "a"),), Outcome("deviation"),
                    cluster="template_id")
    rng = np.random.default_rng(20261203)
    rejected, covered, n = {}, {}, {}
    for i in range(60):
        table = native_deltas(pair_frame(rng, 6, 6, 10, _MU), design, by="input_format",
                              reference="a", n_resamples=300, seed=i).table
        table = table[table["score"] != "accuracy_dis"]
        for scope, part in table.groupby("scope"):
            rejected[scope] = rejected.get(scope, 0) + int((part["p_value"] < 0.05).sum())
            covered[scope] = covered.get(scope, 0) + int(
                ((part[CI_LOW] <= 0) & (part[CI_HIGH] >= 0)).sum())
            n[scope] = n.get(scope, 0) + len(part)
    assert n == {"category": 1080, "overall": 180}
    size = {k: rejected[k] / n[k] for k in n}
    coverage = {k: covered[k] / n[k] for k in n}
    assert size["category"] <= 0.09 and coverage["category"] >= 0.90, (size, coverage)
    assert size["overall"] <= 0.17, (size, coverage)
