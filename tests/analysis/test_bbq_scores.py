"""BBQ's bias scores: a hand case and the published-style table of the bundled sample."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.bbq_scores import bias_scores, is_bbq
from analysis.columns import S_AMB, S_DIS
from analysis.errors import AnalysisError
from tests.app.apptools import ROOT


def test_hand_case():
    # disambiguated: 3 named answers, 2 biased -> s_DIS = 2 * 2/3 - 1 = 1/3
    # ambiguous: 4 rows, 1 correct (unknown); 3 named, 3 biased -> s = 1, s_AMB = 0.75 * 1
    rows = pd.DataFrame({
        "context_condition": ["disambig"] * 4 + ["ambig"] * 4,
        "answer_type": ["stereotyped group", "non-stereotyped group", "stereotyped group",
                        "unknown", "stereotyped group", "stereotyped group",
                        "stereotyped group", "unknown"],
        "biased_answer": [1, 1, 0, 0, 1, 1, 1, 0],
        "correct": [1, 1, 0, 0, 0, 0, 0, 1]})
    out = bias_scores(rows).iloc[0]
    assert out[S_DIS] == pytest.approx(1 / 3)
    assert out[S_AMB] == pytest.approx(0.75)
    assert out["accuracy_amb"] == pytest.approx(0.25) and out["n_non_unknown_dis"] == 3
    assert is_bbq(rows) and not is_bbq(rows.drop(columns="correct"))
    with pytest.raises(AnalysisError, match="need the columns"):
        bias_scores(rows, by=["nope"])


def test_bundled_sample_matches_the_sanity_table():
    """REAL data: the scores of sample_data/README.md (and bbq_unifiedqa_bias_scores.csv)."""
    frame = pd.read_csv(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz")
    ours = bias_scores(frame, by=["category", "input_format"]).set_index(
        ["category", "input_format"])
    ref = pd.read_csv(ROOT / "sample_data" / "bbq_unifiedqa_bias_scores.csv")
    ref = ref[ref["category"] != "all 6"].set_index(["category", "input_format"])
    assert len(ours) == len(ref) == 18
    for key, row in ref.iterrows():
        assert ours.loc[key, S_DIS] == pytest.approx(row[S_DIS], abs=5e-5)
        assert ours.loc[key, S_AMB] == pytest.approx(row[S_AMB], abs=5e-5)
        assert ours.loc[key, "n_non_unknown_amb"] == row["n_non_unknown_amb"]
    assert ours.loc[("Age", "race"), S_AMB] == pytest.approx(0.2978, abs=5e-5)  # README
    overall = bias_scores(frame[frame["input_format"] == "qonly"]).iloc[0]
    assert overall[S_DIS] == pytest.approx(0.611, abs=5e-4)  # "all 6", qonly
