"""The flat API's features (analysis.api.features) against the libraries and
extract_features, its options (strings, bad names) and the one default."""

from __future__ import annotations

import inspect

import pandas as pd
import pytest

from analysis import api as bw
from analysis import features as F
from analysis.options import OptionError
from analysis.options.features import FEATURES, FeaturesOptions


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({"g": ["a", "b", "a"],
                         "text": ["I love this.", "This is terrible.", None]})


def test_features_api_scores_like_the_libraries(frame):
    from textblob import TextBlob
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    got = bw.features(frame, text_column="text", features="sentiment_vader,polarity_textblob",
                      prefix="r_")
    data = got.tables["data"]
    vader = SentimentIntensityAnalyzer()
    assert data["r_sentiment_vader"].tolist()[:2] == [
        vader.polarity_scores(t)["compound"] for t in frame["text"][:2]]
    assert data["r_polarity_textblob"].tolist()[:2] == [
        TextBlob(t).sentiment.polarity for t in frame["text"][:2]]
    assert pd.isna(data["r_polarity_textblob"].iloc[2])
    assert got.table["n_scored"].tolist() == [2, 2] and got.table["available"].all()
    want, report = F.extract_features(frame, "text", ["sentiment_vader", "polarity_textblob"],
                                      prefix="r_")
    pd.testing.assert_frame_equal(data, want)
    pd.testing.assert_frame_equal(got.table, report)
    assert got.settings["features"] == ["sentiment_vader", "polarity_textblob"]


def test_features_defaults_and_bad_options(frame):
    params = inspect.signature(F.extract_features).parameters
    for name in ("features", "model", "prefix", "skip_unavailable"):
        assert params[name].default == FeaturesOptions.default(name), name
    assert FEATURES == F.FEATURES
    with pytest.raises(OptionError, match="has no option 'lexicon'.*features"):
        bw.features(frame, text_column="text", lexicon="vader")
    with pytest.raises(OptionError, match="skip_unavailable is True or False"):
        bw.features(frame, text_column="text", skip_unavailable="sometimes")
    with pytest.raises(F.AnalysisError, match="sentiment_afinn"):
        bw.features(frame, text_column="text", features=["sentiment_afinn"])
