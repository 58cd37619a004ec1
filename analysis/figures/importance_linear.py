"""Coefficient plot of a linear (or mixed) factor-importance fit (continuous outcome).

One horizontal interval per term (coefficient with its confidence interval, on the
outcome's own scale), model order from the top, values with a higher mean score than the
reference in one colour, lower in another, non-significant ones grey; the no-effect line
at 0.
"""

from __future__ import annotations

import pandas as pd

from analysis.columns import CI_HIGH, CI_LOW, COEF, EFFECT, FACTOR, P_VALUE, TERM, VALUE, N
from analysis.figures.style import NEUTRAL_GREY, PROTECTIVE_BLUE, RISK_RED, paper_layout
from analysis.formatting import interval_header
from analysis.safe_text import escaped_labels

__all__ = ["EFFECT_COLOURS", "linear_importance_figure"]


#: Effect label -> colour (``analysis.importance_linear`` labels).
EFFECT_COLOURS = {"higher": RISK_RED, "lower": PROTECTIVE_BLUE,
                  "not significant": NEUTRAL_GREY, "baseline": "#000000",
                  "not estimable": "#c8c8c8"}  # on fewer than 2 clusters (issue 38)


def _label(row: pd.Series) -> str:
    if row[FACTOR] is None or pd.isna(row[FACTOR]):
        return "intercept (all references)"
    if row[VALUE] is None or pd.isna(row[VALUE]):
        return f"{row[FACTOR]} (covariate)"
    return f"{row[FACTOR]} = {row[VALUE]}"


@escaped_labels
def linear_importance_figure(terms: pd.DataFrame, *, outcome: str = "score",
                             include_intercept: bool = False, confidence: float = 0.95):
    """Horizontal coefficient plot of :func:`analysis.importance_linear.linear_importance`.

    Returns
    -------
    plotly.graph_objects.Figure
        One scatter trace per effect label present, y categories ``factor = value``.
    """
    import plotly.graph_objects as go

    shown = terms if include_intercept else terms[terms[FACTOR].notna()]
    fig = go.Figure()
    paper_layout(fig, f"Factor importance: difference in mean {outcome}",
                 x_title=f"coefficient, {outcome} vs reference "
                         f"({interval_header({'confidence': confidence}, '')})")
    order = [_label(r) for _, r in shown.iterrows()]
    for effect, colour in EFFECT_COLOURS.items():
        part = shown[shown[EFFECT] == effect]
        if part.empty:
            continue
        x = part[COEF].to_numpy(dtype=float)
        fig.add_trace(go.Scatter(
            x=x, y=[_label(r) for _, r in part.iterrows()], mode="markers", name=effect,
            marker={"color": colour, "size": 9},
            error_x={"type": "data", "symmetric": False, "color": colour, "thickness": 1.6,
                     "array": part[CI_HIGH].to_numpy(dtype=float) - x,
                     "arrayminus": x - part[CI_LOW].to_numpy(dtype=float)},
            customdata=part[[TERM, N, P_VALUE]].to_numpy(),
            hovertemplate=("%{customdata[0]}<br>%{x:.3g}<br>p = %{customdata[2]:.3g}"
                           "<br>%{customdata[1]:,} rows<extra>" + effect + "</extra>")))
    fig.add_vline(x=0, line={"color": "#444", "width": 1, "dash": "dash"})
    fig.update_yaxes(categoryorder="array", categoryarray=order[::-1], title_text=None)
    fig.update_layout(height=max(320, 130 + 26 * len(order)), legend_title_text="effect")
    return fig
