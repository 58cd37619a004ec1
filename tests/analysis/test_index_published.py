"""LLMBI as published (analysis/index_published.py) against the paper's own figures."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from analysis import index_published as ip
from analysis.columns import (
    ABS_POLARITY,
    DIVERSITY_PENALTY,
    LLMBI,
    LLMBI_SCORE,
    MEAN_ABS_POLARITY,
    N_DIMENSIONS,
    SENTIMENT_TERM,
    VARIANT,
    WEIGHTED_BIAS,
    N,
)
from analysis.errors import AnalysisError
from analysis.features import extract_features
from tests.conftest import REPO

PAPER = REPO.parent / "shared" / "papers" / "llmbi.txt"
#: Scores of the paper's Table 1 whose responses its appendix prints intact.
TABLE_1 = [0.8875, 0.3485, 0.3753, 0.4784, 0.8473, 0.4011, 0.4417, 0.6631, 0.3320, 0.5967,
           0.4347, 0.2738, 0.7112]


def appendix_responses() -> pd.DataFrame:
    """(response, published llmbi_score) pairs from the paper's appendix JSON."""
    text = PAPER.read_text(encoding="utf-8")
    pairs = re.findall(r'"response": "(.*?)",\s*\n\s*(?:\d+\s+)?"llmbi_score": ([0-9.]+)',
                       text, flags=re.S)
    return pd.DataFrame({"response": [r.replace("\\n", "\n") for r, _ in pairs],
                         "published": [float(s) for _, s in pairs]})


def table_1_responses() -> pd.DataFrame:
    """The appendix's responses whose scores the paper's Table 1 prints (intact)."""
    table = appendix_responses()
    # Table 1 rounds to 4 decimals (0.331944 is printed as 0.3320 there)
    near = np.abs(table["published"].to_numpy()[:, None] - np.array(TABLE_1)[None, :])
    keep = near.min(axis=1) < 1.5e-4
    assert keep.sum() == len(TABLE_1)
    return table[keep].reset_index(drop=True)


#: The shipped numbers (tests/data/llmbi/make_table1.py): each Table 1 response's TextBlob
#: polarity and published score; the paper's text is not shipped (issue 42: these tests
#: skipped on a fresh clone).
SHIPPED = REPO / "tests" / "data" / "llmbi" / "table1_polarity.csv"


def shipped_table_1() -> pd.DataFrame:
    """The shipped polarities and scores; with the paper beside the repository, checked
    against TextBlob on the paper's own responses first."""
    table = pd.read_csv(SHIPPED, comment="#")
    if PAPER.is_file():
        featured, _ = extract_features(table_1_responses(), "response", ["polarity_textblob"])
        assert featured["polarity_textblob"].to_numpy() == pytest.approx(
            table["polarity_textblob"].to_numpy(), abs=1e-15)
        assert featured["published"].tolist() == table["published"].tolist()
    return table


def test_reproduces_the_papers_published_scores():
    featured = table = shipped_table_1()
    assert len(featured) == len(TABLE_1)
    index = ip.published_llmbi(featured)
    # every published per-response score, to the paper's full printed precision
    assert index.responses[LLMBI_SCORE].to_numpy() == pytest.approx(
        table["published"].to_numpy(), abs=1e-12)
    assert index.lexicon.startswith("TextBlob")
    # aggregated over the 13 responses: one dimension, so mean of the scores
    total = index.totals.iloc[0]
    assert total[LLMBI] == pytest.approx(table["published"].mean(), abs=1e-12)


def test_per_response_formula_by_hand():
    # 0.2 + 2.5 |p|
    assert ip.llmbi_per_response([0.0, 0.5, -0.4, np.nan]).tolist()[:3] == pytest.approx(
        [0.2, 1.45, 1.2])
    assert np.isnan(ip.llmbi_per_response([np.nan])[0])
    assert ip.llmbi_per_response([-1.0], diversity_penalty=0.0, scale=1.0)[0] == 2.0


def test_aggregation_with_dimensions_and_weights_by_hand():
    frame = pd.DataFrame({"model": ["A", "A", "A", "B", "B"],
                          "bias_type": ["gender", "gender", "race", "gender", "race"],
                          "p": [0.2, -0.4, 0.6, 0.0, None]})
    index = ip.published_llmbi(frame, polarity="p", by=["model"], dimension="bias_type",
                               weights={"race": 2.0})
    a, b = index.totals.iloc[0], index.totals.iloc[1]
    # A: B_gender = (0.2 + 0.4)/2 = 0.3, B_race = 0.6; (1*0.3 + 2*0.6)/2 = 0.75;
    #    S = (0.2+0.4+0.6)/3 = 0.4; LLMBI = 0.75 + 0.2 + 1.5*0.4 = 1.55
    assert (a[N], a[N_DIMENSIONS]) == (3, 2)
    assert a[WEIGHTED_BIAS] == pytest.approx(0.75)
    assert a[MEAN_ABS_POLARITY] == pytest.approx(0.4)
    assert a[SENTIMENT_TERM] == pytest.approx(0.6)
    assert a[DIVERSITY_PENALTY] == 0.2
    assert a[LLMBI] == pytest.approx(1.55)
    # B: one scored response (the None is left out), |p| = 0 -> just the penalty
    assert (b[N], b[N_DIMENSIONS], b[LLMBI]) == (1, 1, pytest.approx(0.2))
    assert set(index.totals[VARIANT]) == {ip.PUBLISHED}
    assert index.responses[ABS_POLARITY].tolist()[:4] == pytest.approx([0.2, 0.4, 0.6, 0.0])


def test_bad_input_is_refused():
    frame = pd.DataFrame({"p": [0.5, 3.0], "t": ["a", "b"]})
    with pytest.raises(AnalysisError, match=r"outside \[-1, 1\]"):
        ip.published_llmbi(frame, polarity="p")
    with pytest.raises(AnalysisError, match="No polarity column 'q'"):
        ip.published_llmbi(frame, polarity="q")
    with pytest.raises(AnalysisError, match="not numbers"):
        ip.published_llmbi(frame, polarity="t")
    with pytest.raises(AnalysisError, match="never takes: x"):
        ip.published_llmbi(frame.assign(p=[0.1, 0.2], d=["u", "v"]), polarity="p",
                           dimension="d", weights={"x": 2})


def test_cli_scores_texts_and_aggregates(tmp_path, capsys):
    from textblob import TextBlob

    from analysis.cli import main
    from tests.analysis.cli_helpers import run_json

    texts = ["I love this wonderful place.", "This is a terrible idea.", "It is a table."]
    path = tmp_path / "r.csv"
    pd.DataFrame({"model": ["A", "A", "B"], "response": texts}).to_csv(path, index=False)
    out = run_json(capsys, "index-published", path, "--text-col", "response", "--by", "model",
                   "--responses")
    p = [abs(TextBlob(t).sentiment.polarity) for t in texts]
    assert out["variant"] == "as published" and out["lexicon"].startswith("TextBlob")
    assert [r["llmbi_score"] for r in out["responses"]] == pytest.approx(
        [0.2 + 2.5 * x for x in p])
    assert [t["llmbi"] for t in out["totals"]] == pytest.approx(
        [0.2 + 2.5 * (p[0] + p[1]) / 2, 0.2 + 2.5 * p[2]])
    assert main(["index-published", str(path), "--polarity", "response"]) == 2
    assert "not numbers" in capsys.readouterr().err


def test_the_flat_api_scores_the_papers_responses():
    from analysis import api as bw

    table = shipped_table_1()
    result = bw.index_published(table, polarity="polarity_textblob")
    assert result.tables["responses"][LLMBI_SCORE].to_numpy() == pytest.approx(
        table["published"].to_numpy(), abs=1e-12)
    assert np.round(table["published"], 4).tolist() == pytest.approx(TABLE_1, abs=1.5e-4)
    if PAPER.is_file():  # from the texts: TextBlob's polarity, the same scores
        texts = table_1_responses()
        result = bw.index_published(texts, text_column="response")
        assert result.tables["responses"][LLMBI_SCORE].to_numpy() == pytest.approx(
            texts["published"].to_numpy(), abs=1e-12)
        assert result.notes[0].startswith("Polarity: TextBlob")


def test_the_flat_api_options_by_hand():
    from analysis import api as bw
    from analysis.options import OptionError

    frame = pd.DataFrame({"g": ["a", "a", "b"], "p": [0.5, -0.5, 0.2]})
    result = bw.index_published(frame, polarity="p", by="g", scale="2",
                                diversity_penalty="0.1")
    # per response: |p| + P(D) + lambda |p| = 0.5 + 0.1 + 1.0; b: 0.2 + 0.1 + 0.4
    assert result.tables["responses"][LLMBI_SCORE].tolist() == pytest.approx([1.6, 1.6, 0.7])
    assert result.table.set_index("g")[LLMBI].to_dict() == pytest.approx({"a": 1.6, "b": 0.7})
    with pytest.raises(OptionError, match="has no option 'penalty'.*diversity_penalty"):
        bw.index_published(frame, polarity="p", penalty=0.1)
    with pytest.raises(AnalysisError, match="either polarity= .* or text_column="):
        bw.index_published(frame)
