"""Native scores with cluster-bootstrap intervals and their paired deltas
(``analysis/native_scores.py``, ``docs/native_scores.md``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.bbq_scores import bias_scores
from analysis.bootstrap import expanded_tail
from analysis.design import Design
from analysis.importers import import_results
from analysis.native_scores import (
    CI_HIGH,
    CI_LOW,
    DELTA,
    ESTIMATE,
    N_CLUSTERS,
    native_deltas,
    native_scores,
    with_intervals,
)
from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

SAMPLE = "sample_data/bbq_unifiedqa.csv.gz"
DESIGN = "sample_data/bbq_unifiedqa.design.yaml"


@pytest.fixture(scope="module")
def bbq():
    return pd.read_csv(SAMPLE), Design.load(DESIGN)


@pytest.fixture(scope="module")
def bbq_native(bbq):
    return native_scores(*bbq, n_resamples=300)


def _lm_eval_results() -> dict:
    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("results_*.json")
    return json.loads(path.read_text(encoding="utf-8"))["results"]


def test_bbq_point_estimates_equal_the_one_implementation(bbq, bbq_native):
    frame, _ = bbq
    table = bbq_native.table
    own = bias_scores(frame, by=["input_format", "category"])
    cat = table[table["scope"] == "category"]
    for score in ("s_DIS", "s_AMB", "accuracy_dis", "accuracy_amb"):
        mine = cat[cat["score"] == score].set_index(["input_format", "group"])[ESTIMATE]
        theirs = own.set_index(["input_format", "category"])[score]
        pd.testing.assert_series_equal(mine.sort_index(), theirs.sort_index(),
                                       check_names=False, rtol=1e-12)
    overall = bias_scores(frame, by=["input_format"]).set_index("input_format")
    top = table[(table["scope"] == "overall") & (table["score"] == "s_AMB")]
    np.testing.assert_allclose(top.set_index("input_format")[ESTIMATE].sort_index(),
                               overall["s_AMB"].sort_index(), rtol=1e-12)
    sub = table[(table["scope"] == "subcategory") & (table["score"] == "s_DIS")]
    own_sub = bias_scores(frame, by=["input_format", "subcategory"])
    assert len(sub) == len(own_sub)


def test_bbq_intervals_resample_templates_within_category(bbq_native):
    table = bbq_native.table
    cat = table[(table["scope"] == "category") & (table["score"] == "s_AMB")]
    # 25 templates per category, 150 overall; the interval holds the estimate
    assert set(cat[N_CLUSTERS]) == {25}
    top = table[(table["scope"] == "overall") & (table["score"] == "s_AMB")]
    assert set(top[N_CLUSTERS]) == {150}
    assert ((cat[CI_LOW] <= cat[ESTIMATE]) & (cat[ESTIMATE] <= cat[CI_HIGH])).all()
    assert "within each category" in cat["interval"].iloc[0]
    # the overall score rests on 6 x as many templates: a narrower interval
    width = (cat[CI_HIGH] - cat[CI_LOW]).groupby(cat["input_format"]).median()
    top_width = (top[CI_HIGH] - top[CI_LOW]).set_axis(top["input_format"])
    assert (top_width < width.reindex(top_width.index)).all()


def test_interval_equals_a_direct_cluster_bootstrap_of_the_scores():
    """An independent implementation: each replicate rebuilt from whole templates (each
    drawn w times) and scored with analysis.bbq_scores; the same draws."""
    frame = pd.read_csv(SAMPLE)
    frame = frame[(frame["category"] == "Religion") & (frame["input_format"] == "race")]
    frame = frame.drop(columns=["input_format"]).reset_index(drop=True)
    n_boot, conf = 60, 0.9
    got = native_scores(frame, cluster="template_id", n_resamples=n_boot, confidence=conf,
                        breakdowns=[]).table.set_index("score")
    clusters = np.array(sorted(frame["template_id"].astype(str).unique()))
    rng = np.random.default_rng(0)
    w = rng.multinomial(len(clusters), np.full(len(clusters), 1 / len(clusters)), size=n_boot)
    groups = {c: frame[frame["template_id"].astype(str) == c] for c in clusters}
    reps = []
    for row in w:
        rows = pd.concat([groups[c] for c, k in zip(clusters, row, strict=True) for _ in range(k)])
        reps.append(bias_scores(rows).iloc[0])
    reps = pd.DataFrame(reps)
    tail = expanded_tail(conf, len(clusters))
    for score in ("s_DIS", "s_AMB"):
        assert got.loc[score, CI_LOW] == pytest.approx(reps[score].quantile(tail), rel=1e-9)
        assert got.loc[score, CI_HIGH] == pytest.approx(reps[score].quantile(1 - tail),
                                                        rel=1e-9)
        assert got.loc[score, "boot_se"] == pytest.approx(reps[score].std(ddof=1), rel=1e-9)
        assert got.loc[score, ESTIMATE] == pytest.approx(bias_scores(frame)[score].iloc[0])


def test_lm_eval_bias_tasks_native_scores_equal_lm_evals_numbers():
    result = import_results("lm-eval", [LM_EVAL_BIAS_FIXTURE])
    own = _lm_eval_results()
    table = result.extras["native_scores"]
    top = table[table["scope"] == "overall"].set_index(["task", "score"])[ESTIMATE]
    assert top[("bbq", "s_DIS")] == pytest.approx(own["bbq"]["disamb_bias_score,none"])
    assert top[("bbq", "s_AMB")] == pytest.approx(own["bbq"]["amb_bias_score,none"])
    assert top[("bbq", "accuracy_amb")] == pytest.approx(own["bbq"]["accuracy_amb,none"])
    assert top[("crows_pairs_english", "pct_stereotype")] == pytest.approx(
        own["crows_pairs_english"]["pct_stereotype,none"])
    assert top[("winogender_all", "acc")] == pytest.approx(own["winogender_all"]["acc,none"])
    assert top[("toxigen", "acc_norm")] == pytest.approx(own["toxigen"]["acc_norm,none"])
    assert top[("simple_cooccurrence_bias", "pct_male_preferred")] == pytest.approx(
        own["simple_cooccurrence_bias"]["pct_male_preferred,none"])
    # CrowS-Pairs per bias type: the share of its pairs, resampled pair by pair
    crows = result.frame[result.frame["task"] == "crows_pairs_english"]
    per = table[(table["scope"] == "bias_type") & (table["score"] == "pct_stereotype")]
    expect = crows.groupby("bias_type")["pct_stereotype"].mean()
    np.testing.assert_allclose(per.set_index("group")[ESTIMATE].sort_index(), expect.sort_index())
    assert (per[N_CLUSTERS].to_numpy() == crows.groupby("bias_type").size().sort_index()
            .to_numpy()).all()
    # BBQ's templates: category x question_index (8 in the fixture)
    bbq = table[(table["task"] == "bbq") & (table["scope"] == "overall")]
    assert set(bbq[N_CLUSTERS]) == {8}


def test_scores_out_gains_the_interval_columns(tmp_path, bbq):
    from analysis.cli import main

    out, scores = tmp_path / "r.csv", tmp_path / "s.csv"
    run = next((LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_bbq_*.jsonl"))
    assert main(["import", "lm-eval", str(run), "--out", str(out), "--scores-out",
                 str(scores)]) in (0, None)
    table = pd.read_csv(scores)
    assert {"s_DIS_ci_low", "s_DIS_ci_high", "s_AMB_ci_low", "s_AMB_ci_high",
            "n_clusters_dis", "n_clusters_amb"} <= set(table.columns)
    row = table[table["category"] == "Religion"].iloc[0]
    assert row["s_DIS_ci_low"] <= row["s_DIS"] <= row["s_DIS_ci_high"]
    crows = next((LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_crows_*.jsonl"))
    assert main(["import", "lm-eval", str(crows), "--out", str(out), "--scores-out",
                 str(scores)]) in (0, None)
    long = pd.read_csv(scores)
    assert {"score", "estimate", "ci_low", "ci_high"} <= set(long.columns)
    # and the BBQ importer's table: the bundled sample's layout plus the intervals
    frame, _ = bbq
    from analysis.importers.bbq import bias_scores as importer_scores

    wide = with_intervals(importer_scores(frame), native_scores(frame, n_resamples=50).table)
    assert wide["s_AMB_ci_low"].notna().all() and (wide["n_clusters_amb"] > 0).all()
    assert wide.loc[wide["category"] == "all 6", "n_clusters_amb"].eq(150).all()


def test_paired_deltas_of_the_three_input_formats(bbq):
    frame, design = bbq
    result = native_deltas(frame, design, by="input_format", reference="race",
                           n_resamples=300)
    table = result.table
    pairs = set(zip(table["model_a"], table["model_b"], strict=True))
    assert pairs == {("race", "arc"), ("race", "qonly")}
    one = table[(table["model_b"] == "arc") & (table["scope"] == "overall")
                & (table["score"] == "s_AMB")].iloc[0]
    assert one[DELTA] == pytest.approx(one["estimate_b"] - one["estimate_a"])
    # the estimates are each format's score on the examples both answered
    from analysis.compare import pair_units
    from analysis.design import apply_design

    pairing = pair_units(apply_design(frame, design), design, "input_format", cluster=None)
    shared = set(pairing.paired("race", "arc")["example_id"])
    arc = frame[(frame["input_format"] == "arc") & frame["example_id"].isin(shared)]
    assert one["estimate_b"] == pytest.approx(bias_scores(arc)["s_AMB"].iloc[0])
    # pairing removes the templates' shared difficulty: the SE of the difference is below
    # what two independent intervals would give
    single = native_scores(frame, design, n_resamples=300).table
    se = single[(single["scope"] == "overall") & (single["score"] == "s_AMB")].set_index(
        "input_format")["boot_se"]
    assert one["boot_se"] < np.hypot(se["race"], se["arc"])
    assert one[CI_LOW] > 0 and one["p_value"] < 0.05  # arc is more biased on ambiguous items
    assert (table["p_adjusted"].dropna() >= table["p_value"].dropna()).all()


def test_bad_input_is_a_clear_error():
    from analysis.errors import AnalysisError, PairingError

    with pytest.raises(AnalysisError, match="No native score"):
        native_scores(pd.DataFrame({"x": [1, 2]}))
    frame = pd.read_csv(SAMPLE).head(200)
    with pytest.raises(AnalysisError, match="cluster column 'nope'"):
        native_scores(frame, cluster="nope")
    with pytest.raises(PairingError):
        native_deltas(frame, Design.load(DESIGN), by="nope")


def test_report_sections_native_scores_and_checks(bbq, tmp_path):
    from analysis import report as R
    from analysis.design import apply_design

    frame, design = bbq
    rows = apply_design(frame, design)
    crit = tmp_path / "c.yaml"
    crit.write_text("version: 1\nn_resamples: 100\ncriteria:\n  - id: amb\n    metric: s_AMB\n"
                    "    scope: {input_format: race}\n    max: 0.05\n", encoding="utf-8")
    rep = R.build_report(rows, design, [("native", {"n_resamples": 100}),
                                        ("checks", {"criteria": str(crit)})])
    native, checks = rep.sections
    assert native.skipped is None and checks.skipped is None
    tables = dict(native.tables)
    assert {"native_scores", "native_deltas"} <= set(tables)
    # the section's numbers are bw.native_scores' (same seed and resamples)
    same = native_scores(frame, design, n_resamples=100).table
    got = tables["native_scores"]
    assert got["ci_low"].to_numpy() == pytest.approx(same["ci_low"].to_numpy(), nan_ok=True)
    assert any(n.startswith("s_AMB: arc - race = +0.119") for n in native.notes)
    assert dict(checks.tables)["checks"]["verdict"].tolist() == ["fail"]
    assert checks.notes[0].startswith("Gate: FAIL (bias-workbench check would exit 1")
    html = R.report_html(rep)
    assert "Native scores" in html and "Checks" in html
    # a table without a native score, no criteria: both skipped with the reason
    plain = R.build_report(rows.drop(columns=["answer_type"]), design, ["native", "checks"])
    assert "no native score" in plain.sections[0].skipped
    assert "no criteria file" in plain.sections[1].skipped


def test_cli_native_scores_and_compare_native_scores(capsys):
    from analysis.cli import main

    assert main(["native-scores", SAMPLE, "--design", DESIGN, "--native-resamples", "100",
                 "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    scores = pd.DataFrame(payload["scores"])
    assert {"estimate", "ci_low", "ci_high", "n_clusters"} <= set(scores.columns)
    assert main(["compare", SAMPLE, "--design", DESIGN, "--by", "input_format", "--reference",
                 "race", "--native-scores", "--native-resamples", "100", "--json"]) == 0
    deltas = pd.DataFrame(json.loads(capsys.readouterr().out)["scores"])
    row = deltas[(deltas["model_b"] == "arc") & (deltas["score"] == "s_AMB")
                 & (deltas["scope"] == "overall")].iloc[0]
    api = native_deltas(pd.read_csv(SAMPLE), Design.load(DESIGN), by="input_format",
                        reference="race", n_resamples=100).table
    same = api[(api["model_b"] == "arc") & (api["score"] == "s_AMB")
               & (api["scope"] == "overall")].iloc[0]
    assert row["delta"] == pytest.approx(same["delta"])
    assert row["ci_low"] == pytest.approx(same["ci_low"])


def test_interval_coverage_with_few_clusters_simulated():
    """120 seeded data sets of 12 clusters x 20 rows, cluster rates ~ Beta (mean 0.3,
    intra-cluster correlation 0.1): the expanded percentile interval covers the true
    rate in 92 % of 200 such data sets (measured; a plain percentile interval covers
    less with 12 clusters); Monte-Carlo SE at 120 about 2.5 points: 0.85 to 0.99."""
    rng = np.random.default_rng(7)
    a, b = 0.3 * 9, 0.7 * 9  # ICC = 1 / (a + b + 1) = 0.1
    hits = 0
    reps = 120
    for i in range(reps):
        p = rng.beta(a, b, size=12)
        y = rng.binomial(1, np.repeat(p, 20)).astype(float)
        frame = pd.DataFrame({"acc": y, "doc_id": np.repeat(np.arange(12), 20)})
        row = native_scores(frame, cluster="doc_id", n_resamples=200, seed=i).table.iloc[0]
        hits += row[CI_LOW] <= 0.3 <= row[CI_HIGH]
    assert 0.85 <= hits / reps <= 0.99, hits / reps


def test_sparse_sums_of_many_clusters_equal_the_dense_ones(monkeypatch, bbq):
    import analysis.native_scores as N

    frame, design = bbq
    part = frame[frame["category"].isin(["Religion", "Age"])]
    dense = native_scores(part, design, n_resamples=50).table
    paired = native_deltas(part, design, by="input_format", reference="race",
                           n_resamples=50).table
    monkeypatch.setattr(N, "_DENSE_MAX", 1)
    sparse = native_scores(part, design, n_resamples=50).table
    pd.testing.assert_frame_equal(dense, sparse)
    pd.testing.assert_frame_equal(paired, native_deltas(part, design, by="input_format",
                                                        reference="race", n_resamples=50).table)


def test_inspect_bbq_logs_get_native_scores_equal_their_bias_scores():
    pytest.importorskip("inspect_ai")
    from tests.analysis.importers.harness_runs import INSPECT_BBQ_FIXTURE

    result = import_results("inspect", [INSPECT_BBQ_FIXTURE])
    native = result.extras["native_scores"]
    scores = result.extras["bias_scores"]
    for model in scores["model"].unique():
        want = scores[(scores["model"] == model) & (scores["category"] == "all")].iloc[0]
        got = native[(native["model"] == model) & (native["scope"] == "overall")
                     & (native["score"] == "s_AMB")]
        assert got[ESTIMATE].iloc[0] == pytest.approx(want["s_AMB"], nan_ok=True)


def test_paired_deltas_of_two_models_in_inspect_logs():
    pytest.importorskip("inspect_ai")
    from tests.analysis.importers.harness_runs import INSPECT_BBQ_FIXTURE

    result = import_results("inspect", [INSPECT_BBQ_FIXTURE])
    frame = result.frame
    deltas = native_deltas(frame, result.design, by="model", n_resamples=100).table
    row = deltas[(deltas["scope"] == "overall") & (deltas["score"] == "accuracy_amb")].iloc[0]
    b = frame[frame["model"] == row["model_b"]]
    a = frame[frame["model"] == row["model_a"]]
    want = bias_scores(b)["accuracy_amb"].iloc[0] - bias_scores(a)["accuracy_amb"].iloc[0]
    assert row[DELTA] == pytest.approx(want)  # every item answered by both models
    assert row[N_CLUSTERS] == 8  # the 8 templates (question_index) of the fixture's items


def test_discrim_eval_coefficients_equal_lm_evals_with_a_cluster_bootstrap():
    """lm-eval's mixed-model coefficients (its results JSON) from the least-squares sums
    (equal on DiscrimEval's crossed design), and the interval equal to an independent
    bootstrap: each replicate rebuilt from whole decision questions, age re-standardised,
    fitted with statsmodels OLS; the same draws."""
    import statsmodels.formula.api as smf

    run = LM_EVAL_BIAS_FIXTURE / "dummy-bias"
    result = import_results("lm-eval", list(run.glob("samples_discrim_eval_*.jsonl")))
    frame = result.frame
    own = _lm_eval_results()["discrim_eval_explicit"]
    n_boot, conf = 40, 0.9
    table = native_scores(frame, result.design, n_resamples=n_boot, confidence=conf).table
    got = table.set_index("score")
    for name in ("black_bias", "asian_bias", "female_bias", "age_bias"):
        assert got.loc[name, ESTIMATE] == pytest.approx(own[f"{name},none"], abs=1e-12)
    assert (got["family"] == "discrim_eval").all() and (got[N_CLUSTERS] == 4).all()
    clusters = np.array(sorted(frame["decision_question_id"].astype(str).unique()))
    rng = np.random.default_rng(0)
    w = rng.multinomial(len(clusters), np.full(len(clusters), 1 / len(clusters)), size=n_boot)
    parts = {c: frame[frame["decision_question_id"].astype(str) == c] for c in clusters}
    reps = []
    formula = ("logit_yes ~ age_c + C(race, Treatment('white')) + "
               "C(gender, Treatment('male'))")
    for row in w:
        rows = pd.concat([parts[c] for c, k in zip(clusters, row, strict=True)
                          for _ in range(k)])
        rows = rows.assign(age_c=(rows["age"] - rows["age"].mean()) / rows["age"].std())
        fit = smf.ols(formula, data=rows).fit()
        reps.append({"black_bias": fit.params["C(race, Treatment('white'))[T.black]"],
                     "age_bias": abs(fit.params["age_c"])})
    reps = pd.DataFrame(reps)
    tail = expanded_tail(conf, len(clusters))
    for name in ("black_bias", "age_bias"):
        assert got.loc[name, CI_LOW] == pytest.approx(reps[name].quantile(tail), rel=1e-8)
        assert got.loc[name, CI_HIGH] == pytest.approx(reps[name].quantile(1 - tail), rel=1e-8)


def test_discrim_eval_paired_deltas_see_a_shift_of_one_group_exactly():
    """A second 'model' whose logit_yes is the first's + 0.1 for black applicants only:
    the paired delta of black_bias is 0.1 in every replicate (same questions, same
    draws), the other coefficients' deltas are 0."""
    from analysis.design import make_factor

    run = LM_EVAL_BIAS_FIXTURE / "dummy-bias"
    result = import_results("lm-eval", list(run.glob("samples_discrim_eval_*.jsonl")))
    one = result.frame
    two = one.assign(model="shifted", logit_yes=one["logit_yes"] + 0.1 * (one["race"] == "black"))
    both = pd.concat([one, two], ignore_index=True)
    d = result.design
    design = Design(factors=tuple(make_factor(both, n) if n == "model" else d.factor(n)
                                  for n in d.names), outcome=d.outcome, cluster=d.cluster,
                    covariates=d.covariates)
    table = native_deltas(both, design, by="model", n_resamples=50).table.set_index("score")
    assert table.loc["black_bias", DELTA] == pytest.approx(0.1)
    assert table.loc["black_bias", CI_LOW] == pytest.approx(0.1)
    assert table.loc["black_bias", CI_HIGH] == pytest.approx(0.1)
    for name in ("asian_bias", "female_bias", "age_bias"):
        assert table.loc[name, DELTA] == pytest.approx(0.0, abs=1e-12)


def test_options_are_checked_once_and_the_level_is_named(bbq):
    """The API checks the options by ``NativeOptions`` (the message every front-end
    gives: the CLI's ``--native-resamples`` refuses the same value) and the interval's
    method names its level as given: 0.999 is 99.9%, not the 100% of ``.0%``."""
    from analysis import api as bw
    from analysis.cli import main
    from analysis.options import OptionError

    frame, design = bbq
    with pytest.raises(OptionError, match="^n_resamples: must be at least 20, not 10$"):
        bw.native_scores(frame, design, n_resamples=10)
    assert main(["native-scores", SAMPLE, "--design", DESIGN, "--native-resamples", "10"]) == 2
    head = frame[frame["category"] == "Age"]
    res = bw.native_scores(head, design, n_resamples=20, confidence=0.999)
    assert res.settings["confidence"] == 0.999
    assert set(res.table["interval"].str.rsplit(", ", n=1).str[1]) == {"99.9%"}
    deltas = bw.native_deltas(head, design, by="input_format", reference="race",
                              n_resamples=20, confidence=0.999)
    assert set(deltas.table["interval"].str.rsplit(", ", n=1).str[1]) == {"99.9%"}


def test_compare_native_scores_takes_the_comparisons_cluster_and_seed(bbq, capsys):
    """``compare --native-scores`` has one ``--cluster`` / ``--no-cluster`` and one
    ``--seed``, the comparison's, which the deltas use too (NativeDeltasOptions' flags but
    those two)."""
    from analysis import api as bw
    from analysis.cli import main

    frame, design = bbq
    head = frame[frame["category"].isin(["Age", "Religion"])]
    path = "sample_data/bbq_unifiedqa.csv.gz"
    for flags, options in ((["--no-cluster", "--seed", "5"], {"cluster": None, "seed": 5}),
                           (["--cluster", "category"], {"cluster": "category"})):
        assert main(["compare", path, "--design", DESIGN, "--by", "input_format",
                     "--reference", "race", "--native-scores", "--native-resamples", "30",
                     "--where", "category=Age,Religion", *flags, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        api = bw.native_deltas(head, design, by="input_format", reference="race",
                               n_resamples=30, **options)
        assert out["settings"]["cluster"] == api.settings["cluster"] == options["cluster"]
        np.testing.assert_allclose(pd.DataFrame(out["scores"])["ci_low"], api.table["ci_low"],
                                   rtol=1e-12, equal_nan=True)


def test_expanded_tail_with_strata_uses_the_designs_degrees_of_freedom():
    """Resampling n clusters within H strata keeps (n - H) / n of the variance (equal
    strata): the expansion is sqrt(n / (n - H)) with t on n - H df; H = 1 is Hesterberg's."""
    from scipy import stats

    for n, h, conf in ((36, 6, 0.9), (150, 6, 0.95), (12, 1, 0.95), (8, 4, 0.8)):
        want = stats.norm.cdf(-np.sqrt(n / (n - h)) * stats.t.ppf(1 - (1 - conf) / 2, n - h))
        assert expanded_tail(conf, n, h) == pytest.approx(want, rel=1e-12)
    assert expanded_tail(0.95, 12) == expanded_tail(0.95, 12, 1)
    assert expanded_tail(0.9, 36, 6) < expanded_tail(0.9, 36)  # wider than without strata
    assert expanded_tail(0.95, 4, 4) == pytest.approx(0.025)  # no df left: the plain tail


def test_stratified_interval_equals_a_direct_stratified_bootstrap_of_the_scores():
    """Two categories' templates resampled within their category (the same draws as
    ``native_scores``: a multinomial per category, in the order of the sorted clusters'
    categories), each replicate rebuilt from whole templates and scored with
    analysis.bbq_scores. The overall score rests on both categories: its percentiles are
    at ``expanded_tail(conf, n, 2)``; a category's at ``expanded_tail(conf, n_h, 1)``."""
    frame = pd.read_csv(SAMPLE)
    frame = frame[frame["category"].isin(["Religion", "Nationality"])
                  & (frame["input_format"] == "race")]
    frame = frame.drop(columns=["input_format"]).reset_index(drop=True)
    n_boot, conf = 60, 0.9
    got = native_scores(frame, cluster="template_id", n_resamples=n_boot, confidence=conf,
                        breakdowns=["category"]).table
    assert "within each category" in got["interval"].iloc[0]
    clusters = np.array(sorted(frame["template_id"].astype(str).unique()))
    of = frame.groupby(frame["template_id"].astype(str))["category"].first()
    assert (frame.groupby("template_id")["category"].nunique() == 1).all()
    codes = pd.factorize(of.reindex(clusters).to_numpy())[0]
    rng = np.random.default_rng(0)
    w = np.zeros((n_boot, len(clusters)), dtype=int)
    for s in np.unique(codes):
        idx = np.flatnonzero(codes == s)
        w[:, idx] = rng.multinomial(len(idx), np.full(len(idx), 1 / len(idx)), size=n_boot)
    groups = {c: frame[frame["template_id"].astype(str) == c] for c in clusters}
    reps, per_cat = [], []
    for row in w:
        rows = pd.concat([groups[c] for c, k in zip(clusters, row, strict=True) for _ in range(k)])
        reps.append(bias_scores(rows).iloc[0])
        per_cat.append(bias_scores(rows, by=["category"]).set_index("category")["s_DIS"])
    reps, per_cat = pd.DataFrame(reps), pd.DataFrame(per_cat)
    overall = got[got["scope"] == "overall"].set_index("score")
    tail = expanded_tail(conf, len(clusters), 2)
    for score in ("s_DIS", "s_AMB"):
        assert overall.loc[score, N_CLUSTERS] == len(clusters)
        assert overall.loc[score, CI_LOW] == pytest.approx(reps[score].quantile(tail), rel=1e-9)
        assert overall.loc[score, CI_HIGH] == pytest.approx(reps[score].quantile(1 - tail),
                                                            rel=1e-9)
    cat = got[(got["scope"] == "category") & (got["score"] == "s_DIS")].set_index("group")
    assert len(cat) == 2
    for name, n_h in cat[N_CLUSTERS].items():  # a category is one stratum: H = 1
        t_h = expanded_tail(conf, int(n_h), 1)
        assert cat.loc[name, CI_LOW] == pytest.approx(per_cat[name].quantile(t_h), rel=1e-9)
        assert cat.loc[name, CI_HIGH] == pytest.approx(per_cat[name].quantile(1 - t_h),
                                                       rel=1e-9)
