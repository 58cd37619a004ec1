"""Figure of the composite bias index (``methods.md`` s. 6): its components per model."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analysis.columns import COMPONENT, CONTRIBUTION, FACTOR, LLMBI, MODEL
from analysis.figures.style import QUALITATIVE, paper_layout
from analysis.safe_text import escape_html_label as esc
from analysis.safe_text import escaped_labels

__all__ = ["TOTAL_TRACE", "index_figure"]


#: Name of the marker trace holding the totals.
TOTAL_TRACE = "LLMBI"


def _label(row: pd.Series) -> str:
    if row[COMPONENT] == "dimension":
        return f"dimension: {row[FACTOR]}"
    if row[COMPONENT] == "sentiment":
        return "sentiment term"
    return "diversity penalty"


@escaped_labels
def index_figure(components: pd.DataFrame, totals: pd.DataFrame, *,
                 title: str | None = None) -> go.Figure:
    """Contributions of every component per model (relative bars), the total as a marker.

    Parameters
    ----------
    components, totals
        :class:`analysis.index.BiasIndex` tables. Contributions of a model add up to
        its LLMBI; negative contributions (a negative lambda) draw below 0.
    """
    comp = components.copy()
    comp["label"] = comp.apply(_label, axis=1)
    models = totals[MODEL].astype(str).tolist()
    fig = go.Figure()
    for i, label in enumerate(dict.fromkeys(comp["label"])):
        part = comp[comp["label"] == label].set_index(comp[MODEL].astype(str)[
            comp["label"] == label])
        fig.add_trace(go.Bar(
            x=models, y=[float(part[CONTRIBUTION].get(m, float("nan"))) for m in models],
            name=label, marker_color=QUALITATIVE[i % len(QUALITATIVE)],
            hovertemplate=f"%{{x}}<br>{esc(label)}: %{{y:.4f}}<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=models, y=totals[LLMBI].to_numpy(dtype=float), name=TOTAL_TRACE, mode="markers+text",
        marker={"symbol": "diamond", "size": 13, "color": "black"},
        text=[f"{v:.3f}" for v in totals[LLMBI]], textposition="top center",
        hovertemplate="%{x}<br>LLMBI = %{y:.4f}<extra></extra>"))
    fig.update_layout(barmode="relative")
    paper_layout(fig, title or "Composite bias index (LLMBI) and its components",
                 x_title="Model", y_title="Contribution to the index")
    return fig
