"""eCDF curves of subgroup deviation rates, one per comparison value (``methods.md`` s. 3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.columns import DEVIATION_METRIC, N_SUBGROUPS, P_VALUE, STATISTIC
from analysis.ecdf import CUTOFF, curve_values, ecdf_steps
from analysis.figures.style import NEUTRAL_GREY, QUALITATIVE, paper_layout
from analysis.safe_text import escape_html_label as esc
from analysis.safe_text import escaped_labels

__all__ = ["ecdf_figure"]


@escaped_labels
def ecdf_figure(
    rates: pd.DataFrame,
    summary: pd.DataFrame,
    *,
    by: str,
    ideal: float = 0.0,
    cutoff: float = CUTOFF,
    ks: pd.DataFrame | None = None,
    title: str | None = None,
) -> go.Figure:
    """Step curves of the eCDF of subgroup deviation rates, one per value of ``by``.

    Parameters
    ----------
    rates, summary, ks
        Outputs of :func:`analysis.ecdf.subgroup_rates`, :func:`~analysis.ecdf.ecdf_summary`
        and (optionally) :func:`~analysis.ecdf.ks_tests` for the same ``by``.
    ideal
        Ideal value C; drawn as a dotted line when it is not 0.
    cutoff
        The "no bias" cutoff, drawn as a dashed vertical line.
    title
        Figure title.

    Notes
    -----
    Legend entries carry the deviation metric and the number of subgroups of each curve;
    with exactly two curves the KS statistic and p-value are in the subtitle.
    """
    metric = {str(r[by]): r for r in summary.to_dict(orient="records")}
    fig = go.Figure()
    lo = min(0.0, float(ideal))
    hi = max(1.0, float(ideal))
    for i, (key, x) in enumerate(curve_values(rates, by)):
        ux, fx = ecdf_steps(x)
        xs = np.concatenate([[lo], ux, [hi]])
        ys = np.concatenate([[0.0], fx, [1.0]])
        s = metric[key]
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines", line={"shape": "hv", "width": 2.5,
                                            "color": QUALITATIVE[i % len(QUALITATIVE)]},
            name=f"{key} (DM {s[DEVIATION_METRIC]:.3f}, {s[N_SUBGROUPS]} subgroups)",
            hovertemplate=f"{esc(by)} = {esc(key)}<br>rate = %{{x:.3f}}<br>"
                          "share <= rate = %{y:.2f}<extra></extra>",
        ))
    # the lines' labels sit above the plot area, where no curve can pass (issue 42: the
    # "0.2 cutoff" label was drawn on a curve); ideal and cutoff extend away from each other
    fig.add_vline(x=cutoff, line={"dash": "dash", "color": NEUTRAL_GREY, "width": 1.5})
    fig.add_annotation(x=cutoff, xref="x", y=1, yref="paper", yanchor="bottom",
                       xanchor="left" if cutoff >= ideal else "right", showarrow=False,
                       text=f"{cutoff:g} cutoff", font={"color": NEUTRAL_GREY})
    if ideal != 0:
        fig.add_vline(x=ideal, line={"dash": "dot", "color": "black", "width": 1.5})
        fig.add_annotation(x=ideal, xref="x", y=1, yref="paper", yanchor="bottom",
                           xanchor="right" if cutoff >= ideal else "left", showarrow=False,
                           text=f"ideal C = {ideal:g}")
    title = title or f"eCDF of subgroup deviation rates by {esc(by)}"
    if ks is not None and len(ks) == 1:
        r = ks.iloc[0]
        title += (f"<br><sup>Kolmogorov-Smirnov D = {r[STATISTIC]:.3f}, "
                  f"p = {r[P_VALUE]:.3g}</sup>")
    paper_layout(fig, title, x_title="Subgroup deviation rate",
                 y_title="Share of subgroups with rate <= x")
    fig.update_xaxes(range=[lo - 0.02, hi + 0.02])
    fig.update_yaxes(range=[0, 1.02])
    # the legend right of the plot, one entry per line: a horizontal legend below the plot
    # wrapped into rows that ran over the export's context line (issue 42)
    fig.update_layout(legend={"title": {"text": by}, "orientation": "v", "y": 1,
                              "yanchor": "top", "x": 1.02, "xanchor": "left"},
                      margin={"t": 90})
    return fig
