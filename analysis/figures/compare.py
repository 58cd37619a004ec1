"""Figures of a paired comparison (``analysis/compare.py``): where two models differ."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.columns import SUBGROUP, N
from analysis.compare import (
    CI_HIGH,
    CI_LOW,
    DIFFERENCE,
    DIFFERS,
    LD_CI_HIGH,
    LD_CI_LOW,
    LD_DIFFERENCE,
    LD_P_ADJUSTED,
    MEAN_A,
    MEAN_B,
    MODEL_A,
    MODEL_B,
    P_ADJUSTED,
    RATE_A,
    RATE_B,
)
from analysis.errors import AnalysisError
from analysis.figures.style import NEUTRAL_GREY, QUALITATIVE, paper_layout
from analysis.safe_text import escape_html_label as esc
from analysis.safe_text import escaped_labels

__all__ = ["MAX_ROWS", "difference_sunburst", "dumbbell_figure"]


#: Subgroups shown by the dumbbell chart at most (the largest |difference| first).
MAX_ROWS = 40


def _fmt(x: float, spec: str = "+.3f") -> str:
    return "undefined" if x is None or np.isnan(x) else format(x, spec)


@escaped_labels
def dumbbell_figure(table: pd.DataFrame, *, max_rows: int = MAX_ROWS,
                    title: str | None = None) -> go.Figure:
    """Per subgroup, model a's and model b's rate joined by a line, sorted by b - a.

    Parameters
    ----------
    table
        Output of :func:`analysis.compare.compare_subgroups` (one pair).
    max_rows
        Show the subgroups with the largest |difference| (at most this many).
    title
        Figure title (default names the pair).

    Notes
    -----
    The line is solid and dark where the difference is significant (``differs``), light
    grey otherwise; the hover text gives n, both rates, the difference with its interval
    and the adjusted p-value.
    """
    if len(table) == 0:
        raise AnalysisError("There are no subgroups to draw.")
    a, b = str(table[MODEL_A].iloc[0]), str(table[MODEL_B].iloc[0])
    ra, rb = (RATE_A, RATE_B) if RATE_A in table else (MEAN_A, MEAN_B)
    shown = table.reindex(table[DIFFERENCE].abs().sort_values(ascending=False).index)
    shown = shown.head(max_rows).sort_values(DIFFERENCE)
    labels = [str(s) for s in shown[SUBGROUP]]
    fig = go.Figure()
    for label, r in zip(labels, shown.to_dict(orient="records"), strict=True):
        fig.add_trace(go.Scatter(
            x=[r[ra], r[rb]], y=[label, label], mode="lines", showlegend=False,
            line={"color": "#404040" if r[DIFFERS] else "#cccccc", "width": 3},
            hoverinfo="skip"))
    hover = [f"{esc(lab)}<br>n = {int(r[N]):,}<br>{esc(a)}: {r[ra]:.3f}<br>{esc(b)}: "
             f"{r[rb]:.3f}<br>difference = {_fmt(r[DIFFERENCE])} [{_fmt(r[CI_LOW])}, "
             f"{_fmt(r[CI_HIGH])}]<br>adjusted p = {_fmt(r[P_ADJUSTED], '.3g')}"
             for lab, r in zip(labels, shown.to_dict(orient="records"), strict=True)]
    hover = [h.replace("%{", "%\u200b{") + "<extra></extra>" for h in hover]
    for name, col, colour in ((a, ra, QUALITATIVE[0]), (b, rb, QUALITATIVE[1])):
        fig.add_trace(go.Scatter(x=shown[col], y=labels, mode="markers", name=name,
                                 marker={"color": colour, "size": 11},
                                 hovertemplate=hover))
    what = "deviation rate" if ra == RATE_A else "mean score"
    title = title or (f"{esc(a)} vs {esc(b)}: {what} per subgroup, sorted by the difference "
                      f"({esc(b)} - {esc(a)}); dark line = significant")
    paper_layout(fig, title, x_title=what)
    fig.update_yaxes(categoryorder="array", categoryarray=labels, automargin=True)
    fig.update_layout(height=max(320, 28 * len(labels) + 160),
                      margin={"t": 110},
                      legend={"orientation": "h", "y": 1.0, "x": 0, "yanchor": "bottom"})
    fig.add_annotation(text=f"{len(table) - len(shown)} more subgroups in the table"
                       if len(table) > len(shown) else "", showarrow=False, xref="paper",
                       yref="paper", x=1, y=-0.08, font={"color": NEUTRAL_GREY})
    return fig


def difference_sunburst(table: pd.DataFrame, factors: Sequence[str], *, sizes: str = "n"
                        ) -> go.Figure:
    """Sunburst of the subgroups coloured by the difference in log disparity (b - a):
    red where the subgroup stands out more (against the other prompts) under b than
    under a, blue where less (:func:`analysis.figures.subgroups.sunburst_figure`)."""
    from analysis.figures.subgroups import sunburst_figure

    if LD_DIFFERENCE not in table:
        raise AnalysisError("The sunburst of the difference in log disparity needs a 0/1 "
                            "outcome.")
    a, b = str(table[MODEL_A].iloc[0]), str(table[MODEL_B].iloc[0])

    def hover(r: pd.Series) -> str:
        return (f"<br>n = {int(r[N]):,}<br>rate {esc(a)} = {r[RATE_A]:.3f}, {esc(b)} = "
                f"{r[RATE_B]:.3f}<br>LD {esc(a)} = {_fmt(r['ld_a'], '.2f')}, {esc(b)} = "
                f"{_fmt(r['ld_b'], '.2f')}<br>difference in LD = {_fmt(r[LD_DIFFERENCE])} "
                f"[{_fmt(r[LD_CI_LOW])}, {_fmt(r[LD_CI_HIGH])}]<br>adjusted p = "
                f"{_fmt(r[LD_P_ADJUSTED], '.3g')}")

    title = (f"{esc(a)} vs {esc(b)}: subgroups of {' > '.join(esc(f) for f in factors)}, "
             f"colour = LD({esc(b)}) - LD({esc(a)})")
    return sunburst_figure(table, factors, title=title, sizes=sizes, colour=LD_DIFFERENCE,
                           colour_title=f"LD difference<br>(red: more under {esc(b)})",
                           hover=hover)
