"""Figures of a categorical outcome across cohorts (``methods.md`` s. 7): stacked bars
and lines of the category percentages over ordered cohorts, the spread of the categories."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.columns import COUNT, MAX_PERCENT, PERCENT, SD_PERCENT, N
from analysis.figures.style import QUALITATIVE, paper_layout
from analysis.safe_text import escaped_labels

#: Most panels drawn side by side; more groups are wrapped onto further rows.
PANELS_PER_ROW = 3


def _groups(dist: pd.DataFrame, by: Sequence[str]) -> list[tuple[str, pd.DataFrame]]:
    if not by:
        return [("", dist)]
    keys = dist[list(by)].astype(str).agg(" / ".join, axis=1)
    return [(k, dist[keys == k]) for k in dict.fromkeys(keys)]


def _order(s: pd.Series) -> list[str]:
    if isinstance(s.dtype, pd.CategoricalDtype):
        present = set(s.astype(str))
        return [str(c) for c in s.cat.categories if str(c) in present]
    return list(dict.fromkeys(s.astype(str)))


def _grid(n: int, titles: list[str]):
    cols = min(PANELS_PER_ROW, max(n, 1))
    rows = -(-n // cols)
    return make_subplots(rows=rows, cols=cols, subplot_titles=titles or None,
                         shared_yaxes=True, vertical_spacing=0.12 if rows > 1 else 0.08), cols


@escaped_labels
def distribution_figure(dist: pd.DataFrame, category: str, cohort: str, *,
                        by: Sequence[str] = (), kind: str = "bar",
                        title: str | None = None) -> go.Figure:
    """Category percentages per cohort: stacked bars (``kind="bar"``) or lines
    (``kind="line"``), one panel per ``by`` group.

    Parameters
    ----------
    dist
        :func:`analysis.distribution.category_distribution` output.
    kind
        ``"bar"``: one stacked bar per cohort (bars sum to 100 %). ``"line"``: one line
        per category over the cohorts in their order (for ordered cohorts such as
        decades).
    """
    by = [by] if isinstance(by, str) else list(by)
    groups = _groups(dist, by)
    fig, cols = _grid(len(groups), [g for g, _ in groups if g])
    categories = _order(dist[category])
    cohorts = _order(dist[cohort])
    for i, (_, sub) in enumerate(groups):
        r, c = i // cols + 1, i % cols + 1
        for j, cat in enumerate(categories):
            part = sub[sub[category].astype(str) == cat].set_index(sub[cohort].astype(str)[
                sub[category].astype(str) == cat])
            y = [float(part[PERCENT].get(h, float("nan"))) for h in cohorts]
            counts = [int(part[COUNT].get(h, 0)) for h in cohorts]
            totals = [int(part[N].get(h, 0)) for h in cohorts]
            style = {"name": cat, "legendgroup": cat, "showlegend": i == 0,
                     "customdata": list(zip(counts, totals, strict=True)),
                     "hovertemplate": f"{cohort} = %{{x}}<br>{cat}: %{{y:.1f}} % "
                                      "(%{customdata[0]:,} of %{customdata[1]:,})"
                                      "<extra></extra>"}
            colour = QUALITATIVE[j % len(QUALITATIVE)]
            if kind == "line":
                trace = go.Scatter(x=cohorts, y=y, mode="lines+markers",
                                   line={"color": colour, "width": 2.5}, **style)
            else:
                trace = go.Bar(x=cohorts, y=y, marker_color=colour, **style)
            fig.add_trace(trace, row=r, col=c)
    if kind != "line":
        fig.update_layout(barmode="stack")
    what = "Stacked percentages" if kind != "line" else "Percentages"
    paper_layout(fig, title or f"{what} of {category} by {cohort}")
    fig.update_yaxes(matches="y")  # one percentage scale for every panel
    fig.update_yaxes(title_text="% of rows", col=1)
    fig.update_xaxes(title_text=cohort, row=-(-len(groups) // cols))
    fig.update_layout(legend={"title": {"text": category}},
                      height=max(450, 320 * (-(-len(groups) // cols))))
    return fig


@escaped_labels
def spread_figure(spread: pd.DataFrame, cohort: str, *, by: Sequence[str] = (),
                  title: str | None = None) -> go.Figure:
    """Standard deviation of the category percentages per cohort (grouped bars, one colour
    per ``by`` group).

    Parameters
    ----------
    spread
        :func:`analysis.distribution.frequency_spread` output with ``over="categories"``.
    """
    by = [by] if isinstance(by, str) else list(by)
    fig = go.Figure()
    cohorts = _order(spread[cohort])
    for i, (name, sub) in enumerate(_groups(spread, by)):
        idx = sub.set_index(sub[cohort].astype(str))
        fig.add_trace(go.Bar(
            x=cohorts, y=[float(idx[SD_PERCENT].get(h, float("nan"))) for h in cohorts],
            name=name or "all rows", marker_color=QUALITATIVE[i % len(QUALITATIVE)],
            customdata=[float(idx[MAX_PERCENT].get(h, float("nan"))) for h in cohorts],
            hovertemplate=f"{cohort} = %{{x}}<br>SD = %{{y:.1f}} points<br>largest category "
                          "%{customdata:.1f} %<extra></extra>"))
    fig.update_layout(barmode="group")
    paper_layout(fig, title or f"Spread of the category percentages by {cohort}",
                 x_title=cohort, y_title="SD of category percentages (points)")
    return fig
