"""FairMonitor's two figures of judge results (its Figures 4 and 5), from plain tables.

- :func:`stage_score_box`: per model, a box plot of the judge's scores, one panel per stage
  (stage 2 pools its three metrics unless ``metric`` is chosen);
- :func:`stage_bars`: per stage (and metric), one bar per model: the share of fair
  judgments (the stage metric) or the mean score.

The inputs are tables with ``stage``, a model column, ``metric`` and ``score`` (the long
scores of ``analysis.judge_stats.metrics.scores_by``) or ``share_fair`` / ``mean_score``
(the stage metrics of ``analysis.judge_stats.metrics.stage_metrics``); this module imports
nothing from ``judges``.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.figures.style import QUALITATIVE, paper_layout

__all__ = ["STAGE_NAMES", "stage_bars", "stage_score_box"]


STAGE_NAMES = {1: "1 direct inquiry", 2: "2 implicit association", 3: "3 decision making",
               4: "4 unknown situation"}


def _stage_name(stage) -> str:
    try:
        return STAGE_NAMES.get(int(stage), str(stage))
    except (TypeError, ValueError):
        return str(stage)


def _models(frame: pd.DataFrame, model: str) -> list[str]:
    return list(dict.fromkeys(frame[model].astype(str)))


def stage_score_box(scores: pd.DataFrame, *, model: str = "model",
                    title: str | None = None) -> go.Figure:
    """Box plot of the scores per model, one panel per stage (FairMonitor Figure 4).

    ``scores``: columns ``stage``, ``model`` (``model``), ``score``; unscored (NaN) rows are
    left out. A box's points are exactly the scores of that model and stage.
    """
    data = scores[scores["score"].notna()]
    stages = sorted(pd.unique(data["stage"]), key=lambda s: (str(type(s)), s))
    models = _models(data, model)
    fig = make_subplots(rows=1, cols=max(len(stages), 1), shared_yaxes=True,
                        subplot_titles=[_stage_name(s) for s in stages] or [""])
    for j, stage in enumerate(stages, start=1):
        part = data[data["stage"] == stage]
        for i, name in enumerate(models):
            y = part.loc[part[model].astype(str) == name, "score"].to_numpy(dtype=float)
            fig.add_trace(go.Box(y=y, name=name, legendgroup=name, showlegend=j == 1,
                                 marker_color=QUALITATIVE[i % len(QUALITATIVE)],
                                 boxpoints="all", jitter=0.3, pointpos=0,
                                 meta={"stage": str(stage)}), row=1, col=j)
    fig.update_yaxes(range=[0.5, 5.5], dtick=1)
    return paper_layout(fig, title or "Judge scores per model and stage", y_title="score")


def stage_bars(metrics: pd.DataFrame, *, model: str = "model", value: str = "share_fair",
               title: str | None = None) -> go.Figure:
    """Grouped bars: per stage and metric, one bar per model (FairMonitor Figure 5).

    ``metrics``: the stage metrics (``stage``, ``model``, ``metric``, ``value``), one row
    per (stage, model, metric) (sum them first over other grouping columns). ``value`` is
    ``share_fair`` (default: the share of fair judgments, the stage metric) or
    ``mean_score``.
    """
    table = metrics[metrics[value].notna()]
    keys = list(dict.fromkeys(zip(table["stage"], table["metric"], strict=True)))
    labels = [f"{_stage_name(s)}: {m}" for s, m in keys]
    fig = go.Figure()
    for i, name in enumerate(_models(table, model)):
        part = table[table[model].astype(str) == name]
        by_key = {(s, m): v for s, m, v in zip(part["stage"], part["metric"], part[value],
                                               strict=True)}
        fig.add_trace(go.Bar(x=labels, y=[by_key.get(k) for k in keys], name=name,
                             marker_color=QUALITATIVE[i % len(QUALITATIVE)]))
    fig.update_layout(barmode="group")
    y_title = "share of fair judgments" if value == "share_fair" else value.replace("_", " ")
    if value == "share_fair":
        fig.update_yaxes(range=[0, 1])
    return paper_layout(fig, title or "Stages compared across models", y_title=y_title)
