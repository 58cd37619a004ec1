"""Sunburst of subgroups coloured by log disparity (``methods.md`` s. 2)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from analysis.columns import (
    CI_HIGH,
    CI_LOW,
    DETECTABLE,
    DEVIATION_RATE,
    LEVEL,
    LOG_DISPARITY,
    MDE_LOG_DISPARITY,
    P_ADJUSTED,
    N,
)
from analysis.errors import AnalysisError
from analysis.figures.style import DIVERGING, FONT_SIZE, paper_layout
from analysis.safe_text import escape_html_label as esc
from analysis.safe_text import escaped_labels

__all__ = ["GREY_OUT", "RATE_SCALE", "SECTOR_COLOURS", "SECTOR_SIZES", "sunburst_figure"]


#: Colour of subgroups too small to detect the effect of interest.
GREY_OUT = "#d9d9d9"


def _fmt(x: float, spec: str = ".2f") -> str:
    return "undefined" if x is None or np.isnan(x) else format(x, spec)


#: Sector sizes of the sunburst: by n, or equal among siblings (the paper's look).
SECTOR_SIZES = ("n", "equal")


#: What the sunburst's colour shows: log disparity (diverging) or the deviation rate.
SECTOR_COLOURS: tuple[str, ...] = ("ld", "rate")
#: Sequential scale of the deviation rate (white: none deviate, dark red: the most).
RATE_SCALE = "Reds"


@escaped_labels
def sunburst_figure(table: pd.DataFrame, factors: Sequence[str], *,
                    title: str | None = None, grey_undetectable: bool = False,
                    sizes: str = "n", colour: str = "ld",
                    colour_title: str | None = None,
                    hover: Callable[[pd.Series], str] | None = None) -> go.Figure:
    """Sunburst: ring k holds the subgroups fixing the first k factors.

    Parameters
    ----------
    table
        Output of :func:`analysis.subgroups.subgroups` for ``factors``.
    factors
        The chosen factors in ring order (inner ring = first factor).
    title
        Figure title (default names the factors).
    grey_undetectable
        Draw subgroups whose ``detectable`` column (:func:`analysis.planning.add_power`)
        is False in grey: too small to detect the effect the analyst cares about.
    sizes
        ``"n"``: sector size = n (each parent the sum of its children); ``"equal"``:
        siblings share their parent's angle equally, whatever their n (every value is
        equally visible, as in the method paper's figures; n stays in the hover text).
    colour
        ``"ld"`` (log disparity, diverging around 0), ``"rate"`` (the subgroup's
        deviation rate on a sequential scale from 0 to the highest rate: where answers
        deviate most, whatever the rest does), or the name of another column of
        ``table`` drawn on the diverging scale (the Compare page colours by the
        difference in LD between two models).
    colour_title, hover
        The colour bar's title (default names the measure), and the hover lines after
        the subgroup's values (default: n, rate, LD with CI, adjusted p);
        ``hover(row)`` returns HTML whose data parts it escapes itself.

    Notes
    -----
    Each sector's ``customdata`` is its row position in ``table`` (a click on the sector,
    ``st.plotly_chart(on_select=...)``'s ``point_number``, leads back to its row).
    Colour = log disparity on
    the shared diverging scale centred at 0 (``cmid=0``; red = more deviation than
    the rest, blue = less). Subgroups whose LD is undefined are drawn white (colour
    value 0) and say so in the hover text.
    """
    factors = list(factors)
    if colour not in SECTOR_COLOURS and colour not in table.columns:
        raise AnalysisError(f"Colour by {' or '.join(SECTOR_COLOURS)} (or a column of the "
                            f"table), not {colour!r}.")
    if colour_title is None:
        colour_title = ("Log disparity<br>(red: more deviation)" if colour == "ld"
                        else esc(str(colour)))
    if sizes not in SECTOR_SIZES:
        raise AnalysisError(f"Sector sizes are {' or '.join(SECTOR_SIZES)}, not {sizes!r}.")
    missing = [f for f in factors if f not in table.columns]
    if missing:
        raise AnalysisError(f"The subgroup table has no column {', '.join(missing)}.")
    if grey_undetectable and DETECTABLE not in table.columns:
        raise AnalysisError("Greying out undetectable subgroups needs the 'detectable' "
                            "column of analysis.planning.add_power.")
    fixed = table[factors].notna().to_numpy()
    grey: list[bool] = []
    depth = int(table[LEVEL].max()) if len(table) else 0
    ids, labels, parents, values, colours, lines = [], [], [], [], [], []
    at: list[int] = []  # each sector's row position in `table` (customdata: click -> rows)
    for k in range(1, min(depth, len(factors)) + 1):
        # the prefix subgroups: exactly the first k factors fixed
        want = np.zeros(len(factors), dtype=bool)
        want[:k] = True
        mask = (fixed == want).all(axis=1)
        rows = table[mask]
        at.extend(int(i) for i in np.flatnonzero(mask))
        keys = [rows[f].astype(str).to_numpy() for f in factors[:k]]
        for i, (_, r) in enumerate(rows.iterrows()):
            path = [f"{f}={keys[j][i]}" for j, f in enumerate(factors[:k])]
            ids.append("/".join(path))
            parents.append("/".join(path[:-1]))
            labels.append(keys[k - 1][i])
            values.append(int(r[N]))
            ld = float(r[LOG_DISPARITY]) if LOG_DISPARITY in r else float("nan")
            if colour == "rate":
                colours.append(float(r[DEVIATION_RATE]))
            else:
                value = ld if colour == "ld" else float(r[colour])
                colours.append(0.0 if np.isnan(value) else value)
            grey.append(grey_undetectable and not bool(r[DETECTABLE]))
            head = "<br>".join(f"{esc(f)} = {esc(keys[j][i])}" for j, f in enumerate(factors[:k]))
            if hover is not None:
                lines.append(head + hover(r))
                continue
            lines.append(
                head + f"<br>n = {int(r[N]):,}<br>deviation rate = {r[DEVIATION_RATE]:.3f}"
                + f"<br>log disparity = {_fmt(ld)} "
                + f"[{_fmt(float(r[CI_LOW]))}, {_fmt(float(r[CI_HIGH]))}]"
                + f"<br>adjusted p = {_fmt(float(r[P_ADJUSTED]), '.3g')}"
                + (f"<br>minimum detectable |LD| = {_fmt(float(r[MDE_LOG_DISPARITY]))}"
                   if MDE_LOG_DISPARITY in r else "")
            )
    branch = "total"
    if sizes == "equal":
        values, branch = _equal_shares(ids, parents), "remainder"
    marker = {"colors": colours, "colorscale": DIVERGING, "cmid": 0,
              "line": {"color": "white", "width": 1},
              "colorbar": {"title": {"text": colour_title},
                           "thickness": 16}}
    if colour == "rate":
        marker = {"colors": colours, "colorscale": RATE_SCALE, "cmin": 0.0,
                  "cmax": max(colours, default=1.0) or 1.0,
                  "line": {"color": "white", "width": 1},
                  "colorbar": {"title": {"text": "Deviation rate"}, "thickness": 16}}
    if any(grey):  # explicit colours: the scale in use, grey where undetectable
        from plotly.colors import sample_colorscale

        top = max(float(np.max(np.abs(colours))), 1e-12)
        scaled = (sample_colorscale(RATE_SCALE, [c / top for c in colours]) if colour == "rate"
                  else sample_colorscale(DIVERGING, [0.5 + c / (2 * top) for c in colours]))
        marker = {"colors": [GREY_OUT if g else c for g, c in zip(grey, scaled, strict=True)],
                  "line": {"color": "white", "width": 1}}
    fig = go.Figure(go.Sunburst(
        ids=ids, labels=labels, parents=parents, values=values, branchvalues=branch,
        marker=marker, customdata=at,
        # per-point templates: our <br> stays markup, the (escaped) labels stay text
        hovertemplate=[h.replace("%{", "%\u200b{") + "<extra></extra>" for h in lines],
        insidetextorientation="radial",
        textfont={"size": FONT_SIZE - 2},
    ))
    size_text = "size = n" if sizes == "n" else "equal sectors"
    # two lines: the title fits a figure drawn beside the top findings (Subgroups page)
    title = title or (f"Subgroups of {' > '.join(esc(f) for f in factors[:depth])}<br>"
                      f"{size_text}, "
                      + {"rate": "colour = deviation rate", "ld": "colour = log disparity"}
                      .get(colour, f"colour = {esc(str(colour))}")
                      + ("; grey = too small to detect the effect" if any(grey) else ""))
    paper_layout(fig, title)
    fig.update_layout(margin={"l": 20, "r": 20, "t": 70, "b": 20})
    return fig


def _equal_shares(ids: list[str], parents: list[str]) -> list[float]:
    """Leaf values giving every sector an equal share of its parent (inner sectors 0,
    drawn with ``branchvalues="remainder"`` so rounding can never hide a sector)."""
    children: dict[str, int] = {}
    for parent in parents:
        children[parent] = children.get(parent, 0) + 1
    share: dict[str, float] = {"": 1.0}
    for node, parent in zip(ids, parents, strict=True):  # parents come before children
        share[node] = share[parent] / children[parent]
    return [0.0 if node in children else share[node] for node in ids]
