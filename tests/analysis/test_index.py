"""Composite bias index (LLMBI): components by hand, the formula's identities, recovery."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.columns import (
    COMPONENT,
    CONTRIBUTION,
    DIVERSITY_PENALTY,
    LLMBI,
    MODEL,
    RANK,
    SCORE,
    SENTIMENT_TERM,
    WEIGHTED_BIAS,
)
from analysis.coverage import gini_index
from analysis.design import Design, Outcome, apply_design, make_factor
from analysis.errors import AnalysisError
from analysis.index import Dimension, bias_index, dimension_score, sentiment_bias
from tests.app.apptools import ROOT


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


@pytest.fixture(scope="module")
def small():
    """Two models; gender a/b/c with known deviation counts; a numeric sentiment."""
    rows = []
    counts = {  # (model, gender): (n, deviations)
        ("m1", "a"): (10, 2), ("m1", "b"): (10, 5), ("m1", "c"): (20, 4),
        ("m2", "a"): (10, 1), ("m2", "b"): (10, 1), ("m2", "c"): (10, 1),
    }
    for (model, gender), (n, d) in counts.items():
        for i in range(n):
            rows.append({"model": model, "gender": gender, "style": "s1" if i % 2 else "s2",
                         "deviation": int(i < d), "sentiment": float(i % 5) - (gender == "b")})
    frame = pd.DataFrame(rows)
    design = Design(tuple(make_factor(frame, f) for f in ["model", "gender", "style"]),
                    Outcome("deviation"))
    return apply_design(frame, design), design


def test_deviation_metric_is_mean_abs_rate_distance(small):
    results, _ = small
    m1 = results[results["model"] == "m1"]
    score, _ = dimension_score(m1, "gender", score="deviation_metric")
    assert score == pytest.approx(np.mean([0.2, 0.5, 0.2]))
    score_c, _ = dimension_score(m1, "gender", score="deviation_metric", ideal=0.3)
    assert score_c == pytest.approx(np.mean([0.1, 0.2, 0.1]))


def test_max_abs_log_disparity_by_hand(small):
    results, _ = small
    m1 = results[results["model"] == "m1"]
    score, note = dimension_score(m1, "gender", score="max_abs_log_disparity")
    # b: 5/10 against the rest 6/30
    expected = abs(_logit(0.5) - _logit(6 / 30))
    assert score == pytest.approx(expected)
    assert "gender = b" in note


def test_one_minus_impact_ratio_uses_favourable_rates(small):
    results, _ = small
    m1 = results[results["model"] == "m1"]
    score, _ = dimension_score(m1, "gender", score="one_minus_impact_ratio")
    assert score == pytest.approx(1 - 0.5 / 0.8)  # favourable rates 0.8, 0.5, 0.8
    m2 = results[results["model"] == "m2"]
    assert dimension_score(m2, "gender", score="one_minus_impact_ratio")[0] == pytest.approx(0)


def test_one_value_has_no_disparity(small):
    results, _ = small
    only_a = results[results["gender"] == "a"]
    score, note = dimension_score(only_a, "gender", score="max_abs_log_disparity")
    assert math.isnan(score) and "one observed value" in note


def test_index_identities_and_weighting(small):
    results, design = small
    dims = [Dimension("gender", "deviation_metric", 1.0),
            Dimension("style", "one_minus_impact_ratio", 3.0)]
    out = bias_index(results, design, dimensions=dims, model="model", penalty_value=0.1,
                     sentiment="sentiment", sentiment_by="gender", sentiment_scale=0.5)
    totals = out.totals.set_index(MODEL)
    comps = out.components
    # contributions of a model add up to its index
    sums = comps.groupby(MODEL)[CONTRIBUTION].sum()
    assert totals[LLMBI].to_dict() == pytest.approx(sums.to_dict())
    # weighted mean with the weights as given: sum w B / sum w
    for model in ("m1", "m2"):
        rows = results[results["model"] == model]
        b = [dimension_score(rows, d.factor, score=d.score)[0] for d in dims]
        assert totals.loc[model, WEIGHTED_BIAS] == pytest.approx((1 * b[0] + 3 * b[1]) / 4)
        s, _ = sentiment_bias(rows, "sentiment", "gender")
        assert totals.loc[model, SENTIMENT_TERM] == pytest.approx(0.5 * s)
        assert totals.loc[model, DIVERSITY_PENALTY] == 0.1
    literal = bias_index(results, design, dimensions=dims, model="model",
                         normalize_weights=False).totals.set_index(MODEL)
    rows = results[results["model"] == "m1"]
    b = [dimension_score(rows, d.factor, score=d.score)[0] for d in dims]
    assert literal.loc["m1", WEIGHTED_BIAS] == pytest.approx((1 * b[0] + 3 * b[1]) / 2)
    assert literal.loc["m1", LLMBI] == pytest.approx(literal.loc["m1", WEIGHTED_BIAS])
    # ranking: lower index first
    low, high = totals[LLMBI].idxmin(), totals[LLMBI].idxmax()
    assert low != high and totals.loc[low, RANK] == 1 and totals.loc[high, RANK] == 2


def test_sentiment_score_by_hand(small):
    results, _ = small
    rows = results[results["model"] == "m2"]
    # sentiment i % 5 minus 1 for gender b; mean over m2's 30 rows
    x = rows["sentiment"].to_numpy()
    sel = {g: np.mean(x[(rows["gender"] == g).to_numpy()] > x.mean()) for g in "abc"}
    s, _ = sentiment_bias(rows, "sentiment", "gender")
    assert s == pytest.approx(1 - min(sel.values()) / max(sel.values()))
    r, _ = sentiment_bias(rows, "sentiment", "gender", score="range_of_means")
    means = [x[(rows["gender"] == g).to_numpy()].mean() for g in "abc"]
    assert r == pytest.approx(max(means) - min(means))


def test_coverage_gini_penalty_counts_empty_cells(small):
    results, design = small
    dropped = results[~((results["model"] == "m2") & (results["gender"] == "c")
                        & (results["style"] == "s1"))]
    out = bias_index(dropped, design, dimensions=[Dimension("gender")], model="model",
                     penalty_kind="coverage_gini", penalty_value=2.0,
                     penalty_factors=["gender", "style"])
    m2 = dropped[dropped["model"] == "m2"]
    dense = pd.crosstab(m2["gender"], m2["style"], dropna=False).reindex(
        index=["a", "b", "c"], columns=["s1", "s2"], fill_value=0).to_numpy().ravel()
    assert 0 in dense
    comp = out.components.set_index([MODEL, COMPONENT])
    assert comp.loc[("m2", DIVERSITY_PENALTY), SCORE] == pytest.approx(gini_index(dense))
    assert out.totals.set_index(MODEL).loc["m2", DIVERSITY_PENALTY] == pytest.approx(
        2.0 * gini_index(dense))


def test_undefined_component_makes_the_index_undefined(small):
    results, design = small
    only_a = results[results["gender"] == "a"]
    out = bias_index(only_a, design, dimensions=[Dimension("gender", "max_abs_log_disparity")])
    assert math.isnan(out.totals[LLMBI].iloc[0]) and pd.isna(out.totals[RANK].iloc[0])


def test_bad_inputs_raise(small):
    results, design = small
    with pytest.raises(AnalysisError, match="at least one"):
        bias_index(results, design, dimensions=[])
    with pytest.raises(AnalysisError, match="cannot also be a bias dimension"):
        bias_index(results, design, dimensions=[Dimension("model")], model="model")
    with pytest.raises(AnalysisError, match="unknown score"):
        Dimension("gender", "nonsense")  # type: ignore[arg-type]
    with pytest.raises(AnalysisError, match="weight"):
        Dimension("gender", weight=-1)
    with pytest.raises(AnalysisError, match="outcome"):
        dimension_score(results.drop(columns="deviation"), "gender")


def test_recovers_the_simulated_ordering_of_models():
    """sim-model-B has +0.6 log-odds of deviating everywhere: every deviation-based
    component and the index are larger for it (sample_data/ssqa_simulated_effects.yaml)."""
    frame = pd.read_csv(ROOT / "sample_data" / "ssqa_simulated.csv.gz")
    design = Design(tuple(make_factor(frame, f) for f in
                          ["model", "pachankis_cluster", "prompt_style"]), Outcome("deviation"))
    results = apply_design(frame, design)
    out = bias_index(results, design, model="model",
                     dimensions=[Dimension("pachankis_cluster"), Dimension("prompt_style")],
                     penalty_kind="coverage_gini", penalty_value=1.0)
    totals = out.totals.set_index(MODEL)
    assert totals.loc["sim-model-A", RANK] == 1 and totals.loc["sim-model-B", RANK] == 2
    # both models answered the same prompts: identical coverage penalty
    assert totals.loc["sim-model-A", DIVERSITY_PENALTY] == pytest.approx(
        totals.loc["sim-model-B", DIVERSITY_PENALTY])


def test_printed_equation_has_no_one_over_n(small):
    """The LLMBI paper prints LLMBI = sum_i w_i B_i + P(D) + lambda S; its code divides the
    weighted sum by n (the default here, with normalize_weights=False)."""
    results, design = small
    dims = [Dimension("gender", "deviation_metric", 2.0),
            Dimension("style", "one_minus_impact_ratio", 1.0)]
    code = bias_index(results, design, dimensions=dims, model="model",
                      normalize_weights=False, penalty_value=0.2)
    printed = bias_index(results, design, dimensions=dims, model="model",
                         printed_equation=True, penalty_value=0.2)
    m1 = results[results["model"] == "m1"]
    b = [dimension_score(m1, "gender")[0],
         dimension_score(m1, "style", score="one_minus_impact_ratio")[0]]
    total = printed.totals.set_index("model").loc["m1"]
    assert total[WEIGHTED_BIAS] == pytest.approx(2 * b[0] + 1 * b[1])
    assert total[LLMBI] == pytest.approx(2 * b[0] + b[1] + 0.2)
    assert code.totals.set_index("model").loc["m1", WEIGHTED_BIAS] == pytest.approx(
        (2 * b[0] + b[1]) / 2)


def test_cli_printed_equation_is_n_times_the_code(capsys):
    from tests.analysis.cli_helpers import run_json

    args = ["index", ROOT / "sample_data" / "ssqa_simulated.csv.gz", "--design",
            ROOT / "sample_data" / "ssqa_simulated.design.yaml", "--dimensions",
            "gender,stigma", "--weights", "1,2", "--model", "model"]
    code = run_json(capsys, *args, "--no-normalize")["totals"]
    printed = run_json(capsys, *args, "--printed-equation")["totals"]
    assert [r[WEIGHTED_BIAS] for r in printed] == pytest.approx(
        [2 * r[WEIGHTED_BIAS] for r in code])
