"""One look for every figure: readable at paper size, diverging colours centred at 0."""

from __future__ import annotations

__all__ = [
    "DIVERGING", "FONT_FAMILY", "FONT_SIZE", "NEUTRAL_GREY", "PROTECTIVE_BLUE", "QUALITATIVE",
    "RISK_RED", "hline_label", "paper_layout",
]


#: Red = disadvantaged (more deviation), blue = advantaged; white at 0.
DIVERGING = [[0.0, "#2166ac"], [0.25, "#92c5de"], [0.5, "#f7f7f7"], [0.75, "#f4a582"],
             [1.0, "#b2182b"]]
RISK_RED = "#b2182b"
PROTECTIVE_BLUE = "#2166ac"
NEUTRAL_GREY = "#8c8c8c"
#: Qualitative colours for models / cohorts (colour-blind safe, Okabe-Ito).
QUALITATIVE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
               "#000000"]
FONT_FAMILY = "Arial, Helvetica, sans-serif"
FONT_SIZE = 14


def paper_layout(fig, title: str, *, x_title: str | None = None, y_title: str | None = None):
    """Apply the shared layout (white template, title, fonts, axis titles); returns ``fig``."""
    fig.update_layout(
        template="plotly_white",
        title={"text": title, "x": 0.01, "xanchor": "left", "font": {"size": FONT_SIZE + 4}},
        font={"family": FONT_FAMILY, "size": FONT_SIZE},
        margin={"l": 70, "r": 30, "t": 70, "b": 60},
        legend={"title": {"font": {"size": FONT_SIZE}}},
    )
    if x_title is not None:
        fig.update_xaxes(title_text=x_title)
    if y_title is not None:
        fig.update_yaxes(title_text=y_title)
    return fig


def hline_label(fig, y: float, text: str, *, right_margin: int = 150):
    """The label of a horizontal reference line in the right margin, at the line's height,
    so it never sits on a bar or point (issue 42); ``text`` may hold ``<br>``. Returns
    ``fig``."""
    fig.add_annotation(x=1, xref="paper", xanchor="left", xshift=6, y=y, yref="y",
                       yanchor="middle", text=text, showarrow=False, align="left",
                       font={"size": FONT_SIZE - 2})
    margin = fig.layout.margin.r or 0
    fig.update_layout(margin={"r": max(margin, right_margin)})
    return fig
