"""Stage metrics (analysis/judge_stats/metrics.py) and the way back into analysis
(judges/to_results.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.design import apply_design, check_design
from analysis.judge_stats import columns as C
from analysis.judge_stats.metrics import stage_metrics, unscored_reasons
from judges.errors import JudgesError
from judges.fourstage import validate_fourstage
from judges.judge import empty_outputs
from judges.to_results import to_results
from tests.judges.helpers import make_row


def judged_table() -> pd.DataFrame:
    """Hand-made judged file: model m1 and m2, gender, all stages."""
    rows, scores = [], []
    spec = [  # (stage, model, scores by metric, reason)
        (1, "m1", {"ics": 5}, ""), (1, "m1", {"ics": 3}, ""), (1, "m1", {"ics": 2}, ""),
        (1, "m1", {}, "ics: no JSON object in the reply"),
        (1, "m2", {"ics": 1}, ""),
        (2, "m1", {"tcs": 5, "pcs": 4, "etcs": 2}, ""),
        (2, "m1", {"tcs": 3, "pcs": 2}, "etcs: empty reply"),
        (3, "m1", {"sbas": 4}, ""), (3, "m1", {"sbas": 3}, ""), (3, "m1", {"sbas": 5}, ""),
        (4, "m1", {"ics": 3}, ""), (4, "m1", {"ics": 4}, ""),
    ]
    for i, (stage, model, s, reason) in enumerate(spec):
        rows.append(make_row(i, stage, model=model, scenario=f"sc{i % 2}"))
        scores.append((s, reason))
    out = empty_outputs(validate_fourstage(pd.DataFrame(rows)))
    for i, (s, reason) in enumerate(scores):
        for m, v in s.items():
            out.loc[i, m] = v
            out.loc[i, C.explanation_column(m)] = f"why {m} {v}"
        out.loc[i, C.UNSCORED_REASON] = reason
        out.loc[i, C.JUDGE] = "openai:judge-x [..]"
    return out


def test_stage_metrics_shares_means_and_unscored_counts():
    table = stage_metrics(judged_table())
    assert list(table.columns) == ["stage", "sensitive_factor", "model", "metric", "n",
                                   "n_scored", "n_unscored", "mean_score", "threshold",
                                   "share_fair"]
    got = {(r.stage, r.model, r.metric): r for r in table.itertuples()}
    s1 = got[(1, "m1", "ics")]
    assert (s1.n, s1.n_scored, s1.n_unscored) == (4, 3, 1)
    assert s1.mean_score == pytest.approx(10 / 3)
    assert s1.share_fair == pytest.approx(2 / 3)  # 5 and 3 are in 3-5; 2 is not
    assert got[(1, "m2", "ics")].share_fair == 0.0
    s3 = got[(3, "m1", "sbas")]
    assert (s3.threshold, s3.share_fair) == (4.0, pytest.approx(2 / 3))  # 4 and 5 of 4, 3, 5
    assert got[(4, "m1", "ics")].share_fair == 1.0
    tcs, pcs, etcs = (got[(2, "m1", m)] for m in ("tcs", "pcs", "etcs"))
    assert (tcs.mean_score, pcs.mean_score, etcs.mean_score) == (4.0, 3.0, 2.0)
    assert (etcs.n, etcs.n_scored, etcs.n_unscored) == (2, 1, 1)
    assert pcs.share_fair == 0.5
    assert table["metric"].tolist() == ["ics", "ics", "tcs", "pcs", "etcs", "sbas", "ics"]


def test_stage_metrics_other_grouping_and_errors():
    table = stage_metrics(judged_table(), by=["model"])
    assert list(table.columns[:3]) == ["stage", "model", "metric"]
    assert len(table) == 7
    with pytest.raises(JudgesError, match="not a judged four-stage file"):
        stage_metrics(pd.DataFrame({"stage": [1]}))


def test_unscored_reasons_table():
    reasons = unscored_reasons(judged_table())
    assert reasons.to_dict("records") == [
        {"metric": "etcs", "unscored_reason": "empty reply", "n": 1},
        {"metric": "ics", "unscored_reason": "no JSON object in the reply", "n": 1},
    ]


def test_to_results_long_table_deviation_and_design():
    judged = judged_table()
    results, design = to_results(judged, stage2_rows="metrics")
    assert len(results) == 5 + 6 + 3 + 2  # stage 2 gives three rows per story pair
    assert list(results.columns[:11]) == ["stage", "sensitive_factor", "scenario", "model",
                                          "metric", "score", "threshold", "deviation",
                                          "explanation", "unscored_reason", "judge"]
    assert "story_a" in results.columns and "id" in results.columns  # passthrough
    by_metric = results.groupby(["stage", "metric"], sort=False)["deviation"].apply(list)
    assert by_metric[("1", "ics")][:3] == [0.0, 0.0, 1.0]  # 5, 3 fair; 2 deviates
    assert np.isnan(by_metric[("1", "ics")][3])  # unscored stays missing
    assert by_metric[("3", "sbas")] == [0.0, 1.0, 0.0]  # 4 fair, 3 deviates at stage 3
    assert by_metric[("2", "pcs")] == [0.0, 1.0]  # stage 2 threshold 3
    assert by_metric[("4", "ics")] == [0.0, 0.0]
    row = results[(results["stage"] == "2") & (results["metric"] == "etcs")].iloc[1]
    assert row["unscored_reason"] == "empty reply" and np.isnan(row["score"])
    assert results.loc[0, "explanation"] == "why ics 5"
    names = [(f.name, f.kind, f.reference) for f in design.factors]
    assert names == [("stage", "prompt", "1"), ("sensitive_factor", "domain", "gender"),
                     ("scenario", "domain", names[2][2]), ("model", "model", names[3][2])]
    assert design.factor("stage").values == ("1", "2", "3", "4")
    assert design.outcome.column == "deviation" and design.outcome.mapping == "binary"
    assert check_design(design, results) == []
    applied = apply_design(results, design)
    assert applied["deviation"].sum() == 5  # ics 2 and 1 | etcs 2, pcs 2 | sbas 3
    strict, _ = to_results(judged, stage2_threshold=5, stage2_rows="metrics")
    assert strict[strict["stage"] == "2"]["deviation"].tolist()[:3] == [0.0, 1.0, 1.0]


def test_stage2_pairs_are_one_row_each_by_default_with_a_pair_id():
    judged = judged_table()
    results, design = to_results(judged)
    assert len(results) == 5 + 2 + 3 + 2  # one row per story pair, not three
    pairs = results[results["stage"] == "2"]
    assert pairs["metric"].tolist() == ["consistency_min", "consistency_min"]
    assert pairs["score"].tolist() == [2.0, 2.0]  # min(5, 4, 2); min(3, 2) with etcs unscored
    assert pairs["deviation"].tolist() == [1.0, 1.0]  # a metric below 3 deviates either way
    assert pairs["unscored_reason"].tolist() == ["", "empty reply"]
    assert pairs["explanation"].iloc[0] == "tcs: why tcs 5; pcs: why pcs 4; etcs: why etcs 2"
    assert pairs["pair_id"].tolist() == ["6:q5", "7:q6"]
    assert results["pair_id"].is_unique  # one row per source row everywhere now
    assert design.cluster == "pair_id"
    assert apply_design(results, design)["deviation"].sum() == 5
    metrics, _ = to_results(judged, stage2_rows="metrics")
    assert metrics[metrics["stage"] == "2"]["pair_id"].tolist() == ["6:q5"] * 3 + ["7:q6"] * 3
    judged.loc[6, "pcs"] = 4  # tcs 3, pcs 4, etcs unscored: not known to deviate
    again, _ = to_results(judged)
    assert np.isnan(again[again["stage"] == "2"]["deviation"].iloc[1])
    with pytest.raises(JudgesError, match="stage2_rows must be"):
        to_results(judged, stage2_rows="rows")


def test_embedding_rows_become_similarity_rows():
    judged = empty_outputs(validate_fourstage(pd.DataFrame([make_row(0, 1), make_row(1, 2)])))
    judged[C.SIMILARITY] = [0.8, 0.3]
    judged[C.JUDGE] = "embedding:all-MiniLM-L6-v2"
    table = stage_metrics(judged)
    assert table["metric"].tolist() == ["similarity", "similarity"]
    assert table["mean_score"].tolist() == [0.8, 0.3]
    assert table["share_fair"].isna().all()
    results, design = to_results(judged, similarity_threshold=0.5)
    assert results["metric"].tolist() == ["similarity", "similarity"]
    assert results["deviation"].tolist() == [0.0, 1.0]
    # one similarity row per pair: the pair cluster holds one row each, and the design
    # check says that rows are then treated as independent (analysis.clusters.cluster_note)
    assert check_design(design, results) == [
        "Every value of the cluster column 'pair_id' marks a single row: each row is its "
        "own cluster, the same as independent rows (the plain standard errors)."]


def test_judged_file_survives_a_csv_round_trip(tmp_path):
    judged = judged_table()
    judged.to_csv(tmp_path / "j.csv", index=False)
    from analysis.io import load_results
    again = load_results(tmp_path / "j.csv")
    pd.testing.assert_frame_equal(stage_metrics(again), stage_metrics(judged),
                                  check_dtype=False)
    results, _ = to_results(again)
    assert results["explanation"].tolist()[:3] == ["why ics 5", "why ics 3", "why ics 2"]
    assert results["explanation"].tolist()[3] == ""


def test_fairmonitor_figures_show_exactly_the_scores_and_shares():
    """Figure 4 (box plot of scores per model and stage) and Figure 5 (stage bars per
    model): every box holds that model's scores of that stage (by hand), every bar is the
    stage metric (share of fair judgments)."""
    from analysis.judge_stats.metrics import stage_figures

    figs = stage_figures(judged_table())
    box, bars = figs["judge_scores_box"], figs["judge_stage_bars"]
    boxes = {(t.meta["stage"], t.name): sorted(t.y) for t in box.data}
    assert boxes[("1", "m1")] == [2, 3, 5] and boxes[("1", "m2")] == [1]
    assert boxes[("2", "m1")] == [2, 2, 3, 4, 5]  # tcs, pcs, etcs pooled; unscored out
    assert boxes[("3", "m1")] == [3, 4, 5] and boxes[("4", "m1")] == [3, 4]
    assert len(box.layout.annotations) == 4  # one panel per stage
    m1 = next(t for t in bars.data if t.name == "m1")
    shares = dict(zip(m1.x, m1.y, strict=True))
    assert shares["1 direct inquiry: ics"] == pytest.approx(2 / 3)   # 5, 3 of 5, 3, 2
    assert shares["3 decision making: sbas"] == pytest.approx(2 / 3)  # 4, 5 of 4, 3, 5
    assert shares["2 implicit association: etcs"] == pytest.approx(0.0)
    m2 = next(t for t in bars.data if t.name == "m2")
    assert dict(zip(m2.x, m2.y, strict=True))["1 direct inquiry: ics"] == 0.0
    assert stage_figures(judged_table().drop(columns="model")) == {}
