"""Figures of a categorical outcome across cohorts (``methods.md`` s. 7): stacked bars
and lines of the category percentages over ordered cohorts, the spread of the categories."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.columns import COUNT, MAX_PERCENT, PERCENT, SD_PERCENT, N
from analysis.distribution import category_label
from analysis.figures.style import QUALITATIVE, paper_layout
from analysis.safe_text import escape_html_label as esc
from analysis.safe_text import escaped_labels

__all__ = [
    "PANELS_PER_PAGE", "PANELS_PER_ROW", "distribution_figure", "n_pages", "spread_figure",
]


#: Most panels drawn side by side; more groups are wrapped onto further rows.
PANELS_PER_ROW = 3
#: Most panels in one figure: more groups are split into pages (``page=``).
PANELS_PER_PAGE = 12


def _groups(dist: pd.DataFrame, by: Sequence[str]) -> list[tuple[str, pd.DataFrame]]:
    if not by:
        return [("", dist)]
    keys = dist[by[0]].astype(str)  # "a / b": joined column-wise, not row by row
    for b in by[1:]:
        keys = keys + " / " + dist[b].astype(str)
    return [(k, dist[keys == k]) for k in dict.fromkeys(keys)]


def _order(s: pd.Series) -> list[str]:
    if isinstance(s.dtype, pd.CategoricalDtype):
        present = set(s.astype(str))
        return [str(c) for c in s.cat.categories if str(c) in present]
    return list(dict.fromkeys(s.astype(str)))


def _grid(n: int, titles: list[str]):
    cols = min(PANELS_PER_ROW, max(n, 1))
    rows = -(-n // cols)
    # plotly refuses a spacing above 1 / (rows - 1): shrink it with the number of rows
    spacing = min(0.12, 0.6 / (rows - 1)) if rows > 1 else 0.08
    return make_subplots(rows=rows, cols=cols, subplot_titles=titles or None,
                         shared_yaxes=True, vertical_spacing=spacing), cols


def n_pages(dist: pd.DataFrame, by: Sequence[str] = (), *,
            per_page: int = PANELS_PER_PAGE) -> int:
    """How many pages of at most ``per_page`` panels the ``by`` groups of ``dist`` need."""
    by = [by] if isinstance(by, str) else list(by)
    return max(1, -(-len(_groups(dist, by)) // max(int(per_page), 1)))


@escaped_labels
def distribution_figure(dist: pd.DataFrame, category: str, cohort: str, *,
                        by: Sequence[str] = (), kind: str = "bar",
                        title: str | None = None, page: int = 0,
                        per_page: int = PANELS_PER_PAGE) -> go.Figure:
    """Category percentages per cohort: stacked bars (``kind="bar"``) or lines
    (``kind="line"``), one panel per ``by`` group, at most ``per_page`` panels per
    figure (``page`` 0, 1, ... of :func:`n_pages`; the title says which groups).

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
    pages = n_pages(dist, by, per_page=per_page)
    if not 0 <= int(page) < pages:
        from analysis.errors import AnalysisError

        raise AnalysisError(f"Page {page} of the panels does not exist: there are {pages} "
                            f"pages of {per_page} (pages 0 to {pages - 1}).")
    total = len(groups)
    start = int(page) * int(per_page)
    groups = groups[start: start + int(per_page)]
    fig, cols = _grid(len(groups), [esc(g) for g, _ in groups if g])
    categories = _order(dist[category])
    cohorts = _order(dist[cohort])
    traces, rows, columns = [], [], []
    for i, (_, sub) in enumerate(groups):
        # per category, {cohort: value}: (group, cohort, category) is unique in ``dist``
        cats, hs = sub[category].astype(str).to_numpy(), sub[cohort].astype(str).to_numpy()
        percent, count, n = (sub[col].to_numpy() for col in (PERCENT, COUNT, N))
        for j, cat in enumerate(categories):
            here = cats == cat
            pct = dict(zip(hs[here], percent[here], strict=True))
            cnt = dict(zip(hs[here], count[here], strict=True))
            tot = dict(zip(hs[here], n[here], strict=True))
            y = [float(pct.get(h, float("nan"))) for h in cohorts]
            counts = [int(cnt.get(h, 0)) for h in cohorts]
            totals = [int(tot.get(h, 0)) for h in cohorts]
            label = category_label(cat)  # "" and " A" quoted, so they read apart
            style = {"name": label, "legendgroup": cat, "showlegend": i == 0,
                     "customdata": list(zip(counts, totals, strict=True)),
                     "hovertemplate": f"{esc(cohort)} = %{{x}}<br>{esc(label)}: %{{y:.1f}} % "
                                      "(%{customdata[0]:,} of %{customdata[1]:,})"
                                      "<extra></extra>"}
            colour = QUALITATIVE[j % len(QUALITATIVE)]
            if kind == "line":
                trace = go.Scatter(x=cohorts, y=y, mode="lines+markers",
                                   line={"color": colour, "width": 2.5}, **style)
            else:
                trace = go.Bar(x=cohorts, y=y, marker_color=colour, **style)
            traces.append(trace)
            rows.append(i // cols + 1)
            columns.append(i % cols + 1)
    fig.add_traces(traces, rows=rows, cols=columns)  # one call: as add_trace one by one
    if kind != "line":
        fig.update_layout(barmode="stack")
    what = "Stacked percentages" if kind != "line" else "Percentages"
    shown = (f" (groups {start + 1}-{start + len(groups)} of {total})" if pages > 1 else "")
    paper_layout(fig, (title or f"{what} of {esc(category)} by {esc(cohort)}") + shown)
    fig.update_yaxes(matches="y")  # one percentage scale for every panel
    fig.update_yaxes(title_text="% of rows", col=1)
    fig.update_xaxes(title_text=esc(cohort), row=-(-len(groups) // cols))
    fig.update_layout(legend={"title": {"text": esc(category)}},
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
            hovertemplate=f"{esc(cohort)} = %{{x}}<br>SD = %{{y:.1f}} points<br>largest category "
                          "%{customdata:.1f} %<extra></extra>"))
    fig.update_layout(barmode="group")
    paper_layout(fig, title or f"Spread of the category percentages by {esc(cohort)}",
                 x_title=esc(cohort), y_title="SD of category percentages (points)")
    return fig
