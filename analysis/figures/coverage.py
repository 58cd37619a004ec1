"""Coverage figures: a factor x factor heatmap of row counts and a per-factor bar chart.

Empty combinations are what a benchmark author must see first, so both figures draw
them in a separate, saturated colour (:data:`EMPTY_COLOUR`) on top of the count
scale instead of leaving them as the palest shade of it (``docs/methods.md`` §1).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.columns import FACTOR, VALUE, N
from analysis.errors import AnalysisError
from analysis.figures.style import NEUTRAL_GREY, RISK_RED, paper_layout
from analysis.safe_text import escape_html_label as esc
from analysis.safe_text import escaped_labels

__all__ = [
    "COUNTS_TRACE", "COUNT_SCALE", "EMPTY_COLOUR", "EMPTY_TRACE", "coverage_heatmap",
    "marginal_bar",
]


#: Empty cells / unseen values.
EMPTY_COLOUR = RISK_RED
#: Sequential scale for counts: light blue (few, still visible against white) to dark blue.
COUNT_SCALE = [[0.0, "#c6dbef"], [0.5, "#4292c6"], [1.0, "#08306b"]]
#: Names of the heatmap traces (tests and legends rely on them).
COUNTS_TRACE, EMPTY_TRACE = "rows", "empty"


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


@escaped_labels
def coverage_heatmap(pairs: pd.DataFrame, row_factor: str, col_factor: str, *,
                     title: str | None = None, counted: str = "rows") -> go.Figure:
    """Heatmap of rows per combination of two factors, empty combinations highlighted.

    Parameters
    ----------
    pairs
        :func:`analysis.coverage.pair_counts` output: every declared combination, in
        declared order, with ``n``.
    counted
        What ``n`` counts (:func:`analysis.coverage.counted_noun`: ``items``, ``prompts``
        or ``rows``): the colour bar, the hover text and the title say it.

    Returns
    -------
    plotly.graph_objects.Figure
        Two heatmap traces on the same axes: ``"rows"`` (the counts; empty combinations
        are gaps) and ``"empty"`` (1 where a combination is empty, else gaps), drawn in
        :data:`EMPTY_COLOUR`. Rows of the map = values of ``row_factor``.
    """
    for col in (row_factor, col_factor, N):
        if col not in pairs.columns:
            raise AnalysisError(f"The pair table has no column {col!r}.")
    rows = _categories(pairs[row_factor])
    cols = _categories(pairs[col_factor])
    grid = (pairs.pivot_table(index=row_factor, columns=col_factor, values=N, aggfunc="sum",
                              observed=False)
            .reindex(index=rows, columns=cols).fillna(0).to_numpy(dtype=float))
    counts = np.where(grid > 0, grid, np.nan)
    empty = np.where(grid > 0, np.nan, 1.0)
    n_empty = int((grid == 0).sum())
    fig = go.Figure()
    fig.add_trace(go.Heatmap(
        z=counts, x=cols, y=rows, name=COUNTS_TRACE, colorscale=COUNT_SCALE, zmin=0,
        colorbar={"title": {"text": esc(counted)}}, hoverongaps=False,
        hovertemplate=f"{esc(row_factor)}=%{{y}}<br>{esc(col_factor)}=%{{x}}<br>"
                      f"{esc(counted)}=%{{z:,}}<extra></extra>",
    ))
    fig.add_trace(go.Heatmap(
        z=empty, x=cols, y=rows, name=EMPTY_TRACE, showscale=False, hoverongaps=False,
        colorscale=[[0.0, EMPTY_COLOUR], [1.0, EMPTY_COLOUR]], zmin=0, zmax=1,
        hovertemplate=f"{esc(row_factor)}=%{{y}}<br>{esc(col_factor)}=%{{x}}<br><b>no rows</b>"
                      "<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category")
    default = (f"{_upper_first(esc(counted))} per {esc(row_factor)} x {esc(col_factor)} "
               f"({n_empty:,} of {grid.size:,} combinations empty, in red)")
    return paper_layout(fig, title or default, x_title=esc(col_factor), y_title=esc(row_factor))


@escaped_labels
def marginal_bar(marginals: pd.DataFrame, factor: str, *, title: str | None = None,
                 counted: str = "rows") -> go.Figure:
    """Bar chart of rows per declared value of one factor; unseen values marked in red.

    Parameters
    ----------
    marginals
        :func:`analysis.coverage.marginal_counts` output (``factor``, ``value``, ``n``).

    Returns
    -------
    plotly.graph_objects.Figure
        One bar trace ``"rows"``; bars of values without rows carry a red marker at 0.
    """
    mine = marginals[marginals[FACTOR] == factor]
    if mine.empty:
        raise AnalysisError(f"No marginal counts for factor {factor!r}.")
    values = mine[VALUE].astype(str).tolist()
    counts = mine[N].to_numpy()
    fig = go.Figure(go.Bar(x=values, y=counts, name=COUNTS_TRACE, marker_color=NEUTRAL_GREY,
                           hovertemplate=f"{esc(factor)}=%{{x}}<br>{esc(counted)}=%{{y:,}}"
                                         "<extra></extra>"))
    unseen = [v for v, n in zip(values, counts, strict=True) if n == 0]
    if unseen:
        fig.add_trace(go.Scatter(x=unseen, y=[0] * len(unseen), mode="markers",
                                 name=EMPTY_TRACE, marker={"color": EMPTY_COLOUR, "size": 10,
                                                           "symbol": "x"},
                                 hovertemplate=f"{esc(factor)}=%{{x}}<br><b>no rows</b>"
                                               "<extra></extra>"))
    fig.update_xaxes(type="category")
    default = f"{_upper_first(esc(counted))} per value of {esc(factor)}" + (
        f" ({len(unseen)} never seen, in red)" if unseen else "")
    return paper_layout(fig, title or default, x_title=esc(factor), y_title=esc(counted))


def _categories(s: pd.Series) -> list[str]:
    if isinstance(s.dtype, pd.CategoricalDtype):
        return [str(c) for c in s.cat.categories]
    return [str(v) for v in pd.unique(s)]
