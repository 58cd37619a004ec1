"""Figures of numeric-feature disparity (``methods.md`` s. 5): group statistics, the
feature's distribution per group, selection rates against the four-fifths line."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.columns import (
    GROUP,
    IMPACT_RATIO,
    N_SELECTED,
    PASSES_FOUR_FIFTHS,
    SELECTION_RATE,
    STANDARD,
    VALUE,
    N,
)
from analysis.disparity import FOUR_FIFTHS
from analysis.errors import AnalysisError
from analysis.figures.style import (
    NEUTRAL_GREY,
    PROTECTIVE_BLUE,
    RISK_RED,
    hline_label,
    paper_layout,
)
from analysis.safe_text import escape_html_label as esc
from analysis.safe_text import escaped_labels

__all__ = [
    "OVERALL_TRACE", "SELECTION_TRACE", "STATISTIC_TRACE", "box_figure", "box_statistics",
    "grouping_box_figure", "selection_figure", "statistic_figure",
]


#: Trace names the tests and legends rely on.
STATISTIC_TRACE, OVERALL_TRACE, SELECTION_TRACE = "groups", "all rows", "selection rate"


@escaped_labels
def statistic_figure(summary: pd.DataFrame, statistic: str, *, feature: str,
                     overall: float | None = None, title: str | None = None) -> go.Figure:
    """Bars of one summary statistic per group.

    Parameters
    ----------
    summary
        :func:`analysis.disparity.group_summary` output.
    statistic
        Which of its statistic columns to draw.
    overall
        The statistic over all rows, drawn as a dashed line when given.
    """
    if statistic not in summary.columns:
        raise AnalysisError(f"The summary has no statistic {statistic!r}.")
    y = summary[statistic].to_numpy(dtype=float)
    fig = go.Figure(go.Bar(
        x=summary[GROUP].astype(str), y=y, name=STATISTIC_TRACE, marker_color=PROTECTIVE_BLUE,
        customdata=summary[N].to_numpy(),
        hovertemplate=f"%{{x}}<br>{esc(statistic)} = %{{y:.4g}}<br>n = %{{customdata:,}}"
                      "<extra></extra>"))
    if overall is not None and not math.isnan(overall):
        fig.add_hline(y=overall, line={"dash": "dash", "color": NEUTRAL_GREY, "width": 1.5})
    paper_layout(fig, title or f"{esc(statistic)} of {esc(feature)} per group", x_title="Group",
                 y_title=f"{esc(statistic)} of {esc(feature)}")
    if overall is not None and not math.isnan(overall):
        hline_label(fig, overall, f"all rows:<br>{overall:.4g}")
    return fig


def _interp(values: np.ndarray, q: float) -> float:
    """plotly.js' ``Lib.interp`` of sorted ``values`` at ``q``: position ``q n - 0.5``,
    clamped to the ends, linear between neighbours."""
    t = q * len(values) - 0.5
    if t < 0:
        return float(values[0])
    if t > len(values) - 1:
        return float(values[-1])
    r = t % 1
    return float(r * values[math.ceil(t)] + (1 - r) * values[math.floor(t)])


def box_statistics(values: np.ndarray) -> dict[str, float]:
    """The box plotly.js draws for ``values`` (quartile method "linear", whiskers at the
    most extreme values within 1.5 IQR of the box: plotly.js' ``box/calc.js``), so a
    figure can carry five numbers per box instead of every value.

    Returns
    -------
    dict
        ``q1``, ``median``, ``q3``, ``lowerfence``, ``upperfence`` (NaN values ignored;
        an empty input gives an empty dict).
    """
    x = np.sort(np.asarray(values, dtype=float))
    x = x[~np.isnan(x)]
    n = len(x)
    if n == 0:
        return {}
    q1, med, q3 = _interp(x, 0.25), _interp(x, 0.5), _interp(x, 0.75)
    # plotly.js' findBin nudges the limit by 1e-9 of the mean spacing of the sorted values
    nudge = 1e-9 * ((x[-1] - x[0]) / (n - 1) if n > 1 else 1.0)
    low = np.searchsorted(x, 2.5 * q1 - 1.5 * q3 - nudge, side="left")  # first >= limit
    high = np.searchsorted(x, 2.5 * q3 - 1.5 * q1 + nudge, side="right") - 1  # last <=
    return {"q1": q1, "median": med, "q3": q3,
            "lowerfence": min(q1, float(x[min(low, n - 1)])),
            "upperfence": max(q3, float(x[max(high, 0)]))}


@escaped_labels
def box_figure(values: pd.DataFrame, *, feature: str, title: str | None = None) -> go.Figure:
    """Box plot of the feature per group (whiskers at 1.5 IQR, no individual points).

    Each box is given by its five statistics (:func:`box_statistics`, computed as
    plotly.js computes them from the values), so the figure does not carry every row's
    value (a million at 1M rows: seconds for the browser to receive and draw).

    Parameters
    ----------
    values
        :func:`analysis.disparity.grouped_values` output.
    """
    groups = values[GROUP]
    if isinstance(groups.dtype, pd.CategoricalDtype):  # codes: no string per row
        order, codes = list(groups.cat.categories), groups.cat.codes.to_numpy()
    else:
        text = groups.astype(str)
        order = sorted(text.unique())
        codes = pd.Categorical(text, categories=order).codes
    x = values[VALUE].to_numpy(dtype=float)
    return _boxes(order, (x[codes == i] for i in range(len(order))), feature, title)


def _boxes(order: list, values: Any, feature: str, title: str | None) -> go.Figure:
    """The box figure of groups ``order`` with their values (an iterable of arrays)."""
    fig = go.Figure()
    for name, x in zip(order, values, strict=True):
        box = box_statistics(x)
        stats = {k: [v] for k, v in box.items()} if box else {"y": []}
        fig.add_trace(go.Box(x=[str(name)] if box else None, name=str(name),
                             boxpoints=False, marker_color=PROTECTIVE_BLUE,
                             showlegend=False, **stats))
    paper_layout(fig, title or f"{esc(feature)} per group", x_title="Group", y_title=esc(feature))
    return fig


def grouping_box_figure(grouping: Any, *, feature: str, title: str | None = None
                        ) -> go.Figure:
    """:func:`box_figure` of the rows of an :class:`analysis.disparity.Grouping` (the
    ``meta["grouping"]`` of :func:`analysis.api.disparity`): the feature as analysed
    (subset, calibrated by the baseline, normalised) per group."""
    # each group's values from the grouping (one sort of its codes, shared with the SAGED
    # statistics), not a mask of every row per group: the same boxes (issue 44)
    return escaped_labels(_boxes)(grouping.groups.labels, grouping.values_by_group(),
                                  feature, title)


@escaped_labels
def selection_figure(selection: pd.DataFrame, *, feature: str, title: str | None = None
                     ) -> go.Figure:
    """Selection rate per group with the four-fifths line (0.8 x the highest rate).

    Bars under the line (impact ratio < 0.8) are red. The title states the overall
    impact ratio ``min SR / max SR`` and the verdict.

    Parameters
    ----------
    selection
        :func:`analysis.disparity.selection_rates` output.
    """
    sr = selection[SELECTION_RATE].to_numpy(dtype=float)
    ratio = selection[IMPACT_RATIO].to_numpy(dtype=float)
    colours = [RISK_RED if not ok else PROTECTIVE_BLUE
               for ok in selection[PASSES_FOUR_FIFTHS].to_numpy(dtype=bool)]
    custom = np.column_stack([selection[N_SELECTED].to_numpy(), selection[N].to_numpy(),
                              ratio])
    fig = go.Figure(go.Bar(
        x=selection[GROUP].astype(str), y=sr, name=SELECTION_TRACE, marker_color=colours,
        customdata=custom,
        hovertemplate="%{x}<br>selection rate = %{y:.3f} (%{customdata[0]:,} of "
                      "%{customdata[1]:,})<br>impact ratio = %{customdata[2]:.3f}"
                      "<extra></extra>"))
    top = float(np.nanmax(sr)) if len(sr) and not np.isnan(sr).all() else math.nan
    ir = float(np.nanmin(ratio)) if not np.isnan(ratio).all() else math.nan
    if not math.isnan(top):
        fig.add_hline(y=FOUR_FIFTHS * top, line={"dash": "dash", "color": "black", "width": 1.5})
    std = float(selection[STANDARD].iloc[0]) if len(selection) else math.nan
    verdict = ("undefined" if math.isnan(ir) else
               "passes the four-fifths rule" if ir >= FOUR_FIFTHS else
               "fails the four-fifths rule")
    head = title or f"Selection rate of {esc(feature)} per group"
    paper_layout(fig, f"{head}<br><sup>impact ratio {ir:.3f}: {verdict}; standard "
                      f"{std:.4g}</sup>", x_title="Group", y_title="Selection rate")
    fig.update_yaxes(range=[0, max(1.0, top * 1.05) if not math.isnan(top) else 1.0])
    if not math.isnan(top):
        hline_label(fig, FOUR_FIFTHS * top, f"{FOUR_FIFTHS:g} x highest<br>rate (four-<br>"
                                             "fifths rule)")
    return fig
