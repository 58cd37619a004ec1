"""Subgroups page, answer first: "Top findings" beside the sunburst and the rows behind a
subgroup (a table row or a finding, clicked), paged and exportable (analysis/findings.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from analysis.columns import SUBGROUP
from analysis.findings import FINDING_MAX_P, FINDING_MIN_LD
from analysis.labels import subgroup_where
from ui.widgets import md, table_download

__all__ = [
    "COLOUR_LABELS", "PAGE_ROWS", "TOP_ROWS", "clicked_sector", "colour_choice", "rows_panel",
    "selected_subgroup", "top_findings_panel",
]


#: Rows of one subgroup shown per page; findings listed beside the sunburst.
PAGE_ROWS = 50
TOP_ROWS = 10
COLOUR_LABELS = {"ld": "log disparity (LD)", "rate": "deviation rate"}


def colour_choice(key: str = "subgroups_colour", container=st) -> str:
    """Sunburst colour: log disparity (default) or deviation rate (a radio in ``container``:
    ``st`` or a column)."""
    return container.radio("Colour by", list(COLOUR_LABELS), horizontal=True, key=key,
                           format_func=COLOUR_LABELS.get,
                           help="LD: compared with every row outside the subgroup (red: "
                                "more deviation). Rate: where answers deviate most, "
                                "whatever the rest does")


def top_findings_panel(table: pd.DataFrame, factors: Sequence[str], measure: str,
                       min_n: int, key: str = "subgroups_top", *, adjust: str = "bh"
                       ) -> dict[str, list[str]] | None:
    """Thresholds (|LD|, adjusted p, n) and the subgroups passing them, sorted by
    ``measure``; returns the values of the finding the user clicked, else None
    (``adjust``: the adjustment of the table's p-values, named in the label)."""
    from analysis.multiple_testing import adjusted_label

    st.markdown("**Top findings**")
    c1, c2, c3 = st.columns(3)
    ld = c1.number_input("|LD| at least", 0.0, 10.0, FINDING_MIN_LD, 0.05, key=f"{key}_ld")
    p = c2.number_input(f"{adjusted_label(adjust)} at most", 0.0, 1.0, FINDING_MAX_P, 0.01,
                        key=f"{key}_p", format="%.3f")
    n = c3.number_input("n at least", 0, value=int(min_n), step=5, key=f"{key}_n")
    from analysis import api as bw

    result = bw.findings(table, factors=factors, min_abs_ld=float(ld),
                         max_p_adjusted=float(p), min_n=int(n), measure=measure, adjust=adjust)
    found = result.table
    if found.empty:
        st.caption("No subgroup passes these thresholds: lower |LD| or n, or raise p.")
        return None
    top = found.head(TOP_ROWS)
    lines = {k: result.meta["described"][k] for k in top[SUBGROUP].astype(str)}
    chosen = st.radio(f"{len(found):,} subgroups pass; the first {len(top)} by "
                      f"{COLOUR_LABELS[measure]} (click one to see its responses)",
                      list(lines), index=None, key=f"{key}_pick",
                      format_func=lambda k: md(lines[k]))
    if chosen is None:
        return None
    return result.meta["where"][chosen]


def selected_subgroup(event, table: pd.DataFrame, factors: Sequence[str]
                      ) -> dict[str, list[str]] | None:
    """The values of the subgroup selected in the page's table (an ``on_select`` event)."""
    rows = list(event.selection.rows) if event is not None else []
    return subgroup_where(table.iloc[rows[0]], factors) if rows else None


def clicked_sector(event, fig, table: pd.DataFrame, factors: Sequence[str]
                   ) -> dict[str, list[str]] | None:
    """The values of the sunburst sector clicked (an ``on_select`` event of the chart drawn
    by :func:`analysis.figures.subgroups.sunburst_figure` from ``table``): the point's
    number indexes the trace's ``customdata``, the sector's row position in ``table``."""
    points = list(event.selection.points) if event is not None else []
    number = points[0].get("point_number") if points else None
    trace = fig.data[0] if fig.data else None
    if number is None or trace is None or trace.customdata is None \
            or not 0 <= int(number) < len(trace.customdata) \
            or points[0].get("id") != trace.ids[int(number)]:  # a click on an older figure
        return None
    return subgroup_where(table.iloc[int(trace.customdata[int(number)])], factors)


def rows_panel(results: pd.DataFrame, where: dict, fixed: dict[str, list[str]] | None,
               key: str = "subgroups_rows") -> None:
    """The responses behind the chosen subgroup (prompt and answer first), paged, with a CSV
    of all of them; a hint when nothing is chosen."""
    st.subheader("Responses behind a subgroup")
    if not fixed:
        st.caption("Click a sector of the sunburst, a row of **Top findings** or of the "
                   "table below to see its responses (prompt, answer, outcome and every "
                   "other column).")
        return
    from analysis import api as bw
    from ui.common import per_table

    rows = per_table(bw.rows_behind, results, st.session_state["design"], fixed=fixed,
                     where=where).table  # paging
    label = ", ".join(f"{k} = {v[0]}" for k, v in fixed.items())
    pages = max(1, -(-len(rows) // PAGE_ROWS))
    c1, c2 = st.columns([3, 1])
    c1.markdown(md(f"{label}: {len(rows):,} responses"))
    page = c2.number_input(f"Page (of {pages})", 1, pages, 1, key=f"{key}_page")
    start = (int(page) - 1) * PAGE_ROWS
    st.dataframe(rows.iloc[start:start + PAGE_ROWS], height=300)
    safe = "_".join(f"{k}-{v[0]}" for k, v in fixed.items())
    table_download(rows, f"rows_{safe}"[:80], key=f"{key}_download")
