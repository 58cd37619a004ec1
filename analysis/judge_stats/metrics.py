"""Stage metrics of a judged four-stage file (``docs/methods.md`` section 8).

Stages 1 and 4 report the share of ICS scores 3-5, stage 3 the share of SBAS scores
4-5, stage 2 the three consistency scores (TCS, PCS, ETCS) side by side, each with the
mean score and the share at or above 3. Unscored judgments are counted, never folded
into a score. Rows scored by the embedding scorer contribute the mean ``similarity``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.judge_stats import columns as C
from analysis.judge_stats.errors import JudgesError

__all__ = [
    "DEFAULT_BY", "judged_long", "scores_by", "stage_figures", "stage_metrics",
    "unscored_reasons",
]


DEFAULT_BY: tuple[str, ...] = (C.STAGE, C.SENSITIVE_FACTOR, C.MODEL)
_EMBEDDING_PREFIX = "embedding:"


def _require_judged(judged: pd.DataFrame, by: Sequence[str]) -> None:
    needed = [C.STAGE, C.JUDGE, *by]
    missing = [c for c in dict.fromkeys(needed) if c not in judged.columns]
    if not any(c in judged.columns for c in (*C.METRICS, C.SIMILARITY)):
        missing.append(f"any of {', '.join((*C.METRICS, C.SIMILARITY))}")
    if missing:
        raise JudgesError(f"This is not a judged four-stage file: column(s) "
                          f"{', '.join(missing)} missing. Judge the file first "
                          "(python -m judges score ...).")


def judged_long(judged: pd.DataFrame) -> pd.DataFrame:
    """One row per applicable (row, metric) of a judged file.

    Returns
    -------
    pandas.DataFrame
        Columns ``row`` (position in ``judged``), ``metric`` (``ics`` ... ``sbas``, or
        ``similarity`` for embedding-scored rows), ``score`` (float, NaN if unscored),
        ``threshold`` (the stage's fair threshold; NaN for similarity) and
        ``unscored_reason`` (this metric's reason, ``""`` if scored). A metric column
        absent from the file counts as unscored for the stages it applies to.
    """
    _require_judged(judged, ())
    stages = pd.to_numeric(judged[C.STAGE]).astype(int).to_numpy()
    embedded = judged[C.JUDGE].astype(str).str.startswith(_EMBEDDING_PREFIX).to_numpy()
    raw = judged[C.UNSCORED_REASON] if C.UNSCORED_REASON in judged.columns else pd.Series(
        [""] * len(judged))
    reasons = raw.astype(object).where(raw.notna(), "")  # a CSV round trip makes "" NaN
    parts: list[pd.DataFrame] = []
    for metric in C.METRICS:
        stages_of = [s for s, ms in C.STAGE_METRICS.items() if metric in ms]
        mask = np.isin(stages, stages_of) & ~embedded
        if not mask.any():
            continue
        rows = np.flatnonzero(mask)
        if metric not in judged.columns:  # a file without this metric: all unscored
            score = np.full(len(rows), np.nan)
        else:
            score = pd.to_numeric(judged[metric], errors="coerce").to_numpy(dtype=float)[rows]
        own = [_reason_for(str(reasons.iloc[r]), metric) for r in rows]
        parts.append(pd.DataFrame({
            "row": rows, C.METRIC: metric, C.SCORE: score,
            C.THRESHOLD: [float(C.STAGE_THRESHOLDS[int(stages[r])]) for r in rows],
            C.UNSCORED_REASON: own}))
    if embedded.any() and C.SIMILARITY in judged.columns:
        rows = np.flatnonzero(embedded)
        score = pd.to_numeric(judged[C.SIMILARITY], errors="coerce").to_numpy(dtype=float)[rows]
        parts.append(pd.DataFrame({"row": rows, C.METRIC: C.SIMILARITY, C.SCORE: score,
                                   C.THRESHOLD: np.nan, C.UNSCORED_REASON: ""}))
    if not parts:
        return pd.DataFrame(columns=["row", C.METRIC, C.SCORE, C.THRESHOLD, C.UNSCORED_REASON])
    order = {m: i for i, m in enumerate((*C.METRICS, C.SIMILARITY))}
    long = pd.concat(parts, ignore_index=True)
    long["_order"] = long[C.METRIC].map(order)
    return long.sort_values(["row", "_order"], kind="stable").drop(columns="_order").reset_index(
        drop=True)


def _reason_for(text: str, metric: str) -> str:
    for part in text.split(" | "):
        if part.startswith(f"{metric}: "):
            return part[len(metric) + 2:]
    return ""


def stage_metrics(judged: pd.DataFrame, *, by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Stage metrics per group (by default stage x sensitive factor x model).

    Parameters
    ----------
    judged
        A judged file (:func:`judges.judge.judge_frame` or the embedding scorer).
    by
        Grouping columns; ``stage`` is added first if left out.

    Returns
    -------
    pandas.DataFrame
        One row per group and metric, sorted by the group columns and metric order:
        the ``by`` columns, ``metric``, ``n`` (judgments), ``n_scored``, ``n_unscored``,
        ``mean_score`` (mean of scored judgments; mean cosine similarity for
        ``similarity``), ``threshold`` (3 for ICS and stage 2, 4 for SBAS, NaN for
        similarity) and ``share_fair`` (share of scored judgments at or above the
        threshold: the stage metric of stages 1, 3 and 4; NaN when nothing is scored).
    """
    by = list(dict.fromkeys([C.STAGE, *by]))
    table = scores_by(judged, by)
    table["_scored"] = table[C.SCORE].notna()
    table["_fair"] = np.where(table["_scored"], table[C.SCORE] >= table[C.THRESHOLD], np.nan)
    grouped = table.groupby([*by, C.METRIC], sort=False, dropna=False)
    out = grouped.agg(**{
        C.N_ROWS: (C.SCORE, "size"),
        C.N_SCORED: ("_scored", "sum"),
        C.MEAN_SCORE: (C.SCORE, "mean"),
        C.THRESHOLD: (C.THRESHOLD, "first"),
        C.SHARE_FAIR: ("_fair", "mean"),
    }).reset_index()
    out[C.N_SCORED] = out[C.N_SCORED].astype("int64")
    out[C.N_ROWS] = out[C.N_ROWS].astype("int64")
    out.insert(out.columns.get_loc(C.N_SCORED) + 1, C.N_UNSCORED, out[C.N_ROWS] - out[C.N_SCORED])
    out.loc[out[C.METRIC] == C.SIMILARITY, C.SHARE_FAIR] = np.nan
    order = {m: i for i, m in enumerate((*C.METRICS, C.SIMILARITY))}
    out["_order"] = out[C.METRIC].map(order)
    out = out.sort_values([*by, "_order"], kind="stable").drop(columns="_order")
    return out.reset_index(drop=True)


def scores_by(judged: pd.DataFrame, by: Sequence[str] = (C.STAGE, C.MODEL)) -> pd.DataFrame:
    """:func:`judged_long` with the ``by`` columns of each judgment's row (the input of the
    stage figures, ``analysis.figures.judges``).

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns, ``metric``, ``score`` (NaN if unscored), ``threshold``.
    """
    by = list(by)
    _require_judged(judged, by)
    long = judged_long(judged)
    keys = judged[by].reset_index(drop=True).iloc[long["row"].to_numpy()].reset_index(drop=True)
    return pd.concat([keys, long[[C.METRIC, C.SCORE, C.THRESHOLD]]], axis=1)


def stage_figures(judged: pd.DataFrame) -> dict[str, Any]:
    """FairMonitor's Figures 4 and 5 of a judged file: ``{"judge_scores_box": box plot of
    the scores per model and stage, "judge_stage_bars": share of fair judgments per stage,
    metric and model}`` (``analysis.figures.judges``); ``{}`` without a ``model`` column."""
    from analysis.figures.judges import stage_bars, stage_score_box

    if C.MODEL not in judged.columns:
        return {}
    scores = scores_by(judged, (C.STAGE, C.MODEL))
    if scores[C.SCORE].notna().sum() == 0:
        return {}
    return {"judge_scores_box": stage_score_box(scores),
            "judge_stage_bars": stage_bars(stage_metrics(judged, by=(C.STAGE, C.MODEL)))}


def unscored_reasons(judged: pd.DataFrame) -> pd.DataFrame:
    """How often each reason left a judgment unscored.

    Returns
    -------
    pandas.DataFrame
        Columns ``metric``, ``unscored_reason``, ``n``; most frequent first.
    """
    long = judged_long(judged)
    long = long[long[C.SCORE].isna()]
    if long.empty:
        return pd.DataFrame({C.METRIC: [], C.UNSCORED_REASON: [], C.N_ROWS: []})
    counts = (long.groupby([C.METRIC, C.UNSCORED_REASON]).size().rename(C.N_ROWS)
              .reset_index().sort_values(C.N_ROWS, ascending=False, kind="stable"))
    return counts.reset_index(drop=True)
