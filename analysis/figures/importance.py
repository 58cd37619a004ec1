"""Coefficient plot of a factor-importance fit (``docs/methods.md`` §4).

One horizontal interval per term (point estimate with its confidence interval), terms
grouped by factor (alternate bands) in model order from the top, risk values red,
protective values blue, non-significant ones grey. On the odds-ratio scale the x axis is
logarithmic with the no-effect line at 1; on the coefficient (log-odds) scale the line is
at 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import pandas as pd

from analysis.columns import (
    CI_HIGH,
    CI_LOW,
    COEF,
    COEF_CI_HIGH,
    COEF_CI_LOW,
    DEVIATIONS,
    EFFECT,
    FACTOR,
    ODDS_RATIO,
    P_VALUE,
    TERM,
    VALUE,
    N,
)
from analysis.errors import AnalysisError
from analysis.figures.style import NEUTRAL_GREY, PROTECTIVE_BLUE, RISK_RED, paper_layout
from analysis.formatting import level_text
from analysis.safe_text import escaped_labels

__all__ = ["EFFECT_COLOURS", "Scale", "importance_figure"]


Scale = Literal["odds_ratio", "coef"]
#: Effect label -> colour; the order is the legend order.
EFFECT_COLOURS = {"risk": RISK_RED, "protective": PROTECTIVE_BLUE,
                  "not significant": NEUTRAL_GREY, "baseline": "#000000",
                  # rests on fewer than 2 clusters: no interval (issue 38)
                  "not estimable": "#c8c8c8"}
_BAND = "rgba(0, 0, 0, 0.045)"


def _label(row: pd.Series) -> str:
    if row[FACTOR] is None or pd.isna(row[FACTOR]):
        return "intercept (all references)"
    if ":" in row[FACTOR]:  # interaction a:b with value x:y
        parts = zip(row[FACTOR].split(":"), str(row[VALUE]).split(":", 1), strict=False)
        return " \u00d7 ".join(f"{f} = {v}" for f, v in parts)
    return f"{row[FACTOR]} = {row[VALUE]}"


def _log_ticks(low: float, high: float) -> list[float]:
    """Readable odds-ratio ticks between ``low`` and ``high`` (1 always included)."""
    nice = [m * 10.0 ** e for e in range(-4, 5) for m in (1, 2, 5)]
    low, high = min(low, 1.0), max(high, 1.0)
    ticks = [t for t in nice if low / 1.05 <= t <= high * 1.05]
    if len(ticks) < 4:
        extra = [m * 10.0 ** e for e in range(-4, 5) for m in (1.5, 3, 7)]
        ticks = sorted(ticks + [t for t in extra if low / 1.05 <= t <= high * 1.05])
    return ticks


@escaped_labels
def importance_figure(
    terms: pd.DataFrame,
    *,
    scale: Scale = "odds_ratio",
    max_p: float | None = None,
    p_column: str = P_VALUE,
    include_intercept: bool = False,
    confidence: float = 0.95,
    title: str | None = None,
    references: Mapping[str, str] | None = None,
):
    """Horizontal coefficient (or odds-ratio) plot with confidence intervals.

    Parameters
    ----------
    terms
        ``ImportanceResult.terms`` from :func:`analysis.importance.factor_importance`.
    scale
        ``"odds_ratio"`` (log x axis, reference line at 1) or ``"coef"`` (log-odds,
        reference line at 0).
    max_p
        Show only terms whose ``p_column`` is at most this (None: all).
    p_column
        ``p_value`` or ``p_adjusted``.
    include_intercept
        Also draw the intercept (the odds, or log-odds, at all references).
    confidence
        Only used in the axis title: the level the intervals were computed at.
    title
        Figure title (a default names the scale).

    Returns
    -------
    plotly.graph_objects.Figure
        One scatter trace per effect label present (``risk``, ``protective``,
        ``not significant``, ``baseline``, ``not estimable``: a point without an
        interval), y categories ``factor = value``.
    """
    import plotly.graph_objects as go

    if scale not in ("odds_ratio", "coef"):
        raise AnalysisError(f"Unknown scale {scale!r}: use 'odds_ratio' or 'coef'.")
    shown = terms if include_intercept else terms[terms[FACTOR].notna()]
    if max_p is not None:
        shown = shown[(shown[p_column] <= max_p) | shown[FACTOR].isna()
                      | (shown[EFFECT] == "not estimable")]
    x_col, lo_col, hi_col = ((ODDS_RATIO, CI_LOW, CI_HIGH) if scale == "odds_ratio"
                             else (COEF, COEF_CI_LOW, COEF_CI_HIGH))
    level = level_text(confidence)
    axis = (f"odds ratio vs reference ({level} CI, log scale)" if scale == "odds_ratio"
            else f"coefficient, log-odds vs reference ({level} CI)")
    fig = go.Figure()
    head = title or ("Factor importance: odds ratios" if scale == "odds_ratio"
                     else "Factor importance: coefficients")
    if references:  # what each value is compared against (issue 42)
        from analysis.safe_text import escape_html_label

        head += "<br><sup>references: " + escape_html_label(
            ", ".join(f"{k} = {v}" for k, v in references.items())) + "</sup>"
    paper_layout(fig, head, x_title=axis)
    if shown.empty:
        fig.add_annotation(text=f"No term with {p_column} <= {max_p:g}" if max_p is not None
                           else "No term to show", showarrow=False, x=0.5, y=0.5,
                           xref="paper", yref="paper")
        return fig
    labels = [_label(r) for _, r in shown.iterrows()]
    order = list(dict.fromkeys(labels))
    for effect, colour in EFFECT_COLOURS.items():
        part = shown[shown[EFFECT] == effect]
        if part.empty:
            continue
        x = part[x_col].to_numpy(dtype=float)
        fig.add_trace(go.Scatter(
            x=x, y=[_label(r) for _, r in part.iterrows()], mode="markers", name=effect,
            marker={"color": colour, "size": 9, "symbol": "diamond" if effect == "baseline"
                    else "circle"},
            error_x={"type": "data", "symmetric": False, "color": colour, "thickness": 1.6,
                     "array": part[hi_col].to_numpy(dtype=float) - x,
                     "arrayminus": x - part[lo_col].to_numpy(dtype=float)},
            customdata=part[[TERM, N, DEVIATIONS, lo_col, hi_col, p_column]].to_numpy(),
            hovertemplate=("%{customdata[0]}<br>%{x:.3g} [%{customdata[3]:.3g}, "
                           "%{customdata[4]:.3g}]<br>" + p_column + " = %{customdata[5]:.3g}"
                           "<br>%{customdata[2]:,} deviations in %{customdata[1]:,} rows"
                           "<extra>" + effect + "</extra>"),
        ))
    # factor groups: alternate shaded bands, top to bottom in model order
    factors = [("intercept" if pd.isna(f) else f) for f in shown[FACTOR]]
    first = list(dict.fromkeys(factors))
    position = {lab: len(order) - 1 - i for i, lab in enumerate(order)}
    for g, name in enumerate(first):
        if g % 2:
            ys = [position[lab] for lab, f in zip(labels, factors, strict=True) if f == name]
            fig.add_hrect(y0=min(ys) - 0.5, y1=max(ys) + 0.5, fillcolor=_BAND, line_width=0,
                          layer="below")
    fig.add_vline(x=1 if scale == "odds_ratio" else 0, line={"color": "#444", "width": 1,
                                                              "dash": "dash"})
    fig.update_yaxes(categoryorder="array", categoryarray=order[::-1], title_text=None)
    if scale == "odds_ratio":
        ticks = _log_ticks(float(shown[lo_col].min()), float(shown[hi_col].max()))
        fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    fig.update_layout(height=max(320, 130 + 26 * len(order)), legend_title_text="effect")
    return fig
