"""The pooled-estimates switch of the Subgroups and eCDF pages and what it shows
(``analysis/pooling.py``, ``docs/pooling.md``)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from analysis.pooling import POOLED_COLOUR_TITLE, POOLED_LABEL, pooled_ecdf_title, swap_pooled
from ui.widgets import md

__all__ = ["POOLED_COLUMNS_CONFIG", "colour_title", "ecdf_title", "pooled_notes",
           "pooled_toggle", "shown"]

#: Column help of the pooled columns in the pages' tables.
POOLED_COLUMNS_CONFIG = {
    "rate_pooled": st.column_config.NumberColumn(
        "rate_pooled", format="%.3f",
        help="Partially pooled deviation rate: the subgroup's own rate shrunk towards what "
             "the factor structure predicts, the more the thinner the subgroup"),
    "ld_pooled": st.column_config.NumberColumn(
        "ld_pooled", format="%.3f", help="Log disparity from the pooled rate"),
    "pooling_weight": st.column_config.NumberColumn(
        "pooling_weight", format="%.2f",
        help="Weight of the subgroup's own estimate in the pooled one (1 = not pooled)"),
}


def pooled_toggle(cls: Any, prefix: str) -> bool:
    """The labelled switch of the ``pooled`` option (key ``<prefix>_option_pooled``, the
    prefix of the page's other options)."""
    return bool(st.checkbox(cls.label("pooled"), value=cls.default("pooled"),
                            key=f"{prefix}_option_pooled", help=cls.help("pooled")))


def shown(table: pd.DataFrame, pooled: bool) -> pd.DataFrame:
    """The table the figure and the top findings read: the pooled values when on."""
    return swap_pooled(table) if pooled else table


def colour_title(pooled: bool) -> str | None:
    """The sunburst's colour-bar title (None: the figure's own)."""
    return POOLED_COLOUR_TITLE if pooled else None


def ecdf_title(by: str, pooled: bool) -> str | None:
    """The eCDF figure's title (None: the figure's own)."""
    return pooled_ecdf_title(by) if pooled else None


def pooled_notes(result: Any, what: str) -> None:
    """With pooled estimates: which values ``what`` uses, the model's notes and its terms
    and variances."""
    if not result.settings.get("pooled"):
        return
    st.caption(md(f"{what}: {POOLED_LABEL}; the raw values stay beside them in the table. "
                  + " ".join(result.meta.get("pooling_notes", []))))
    with st.expander("Pooling model: terms and variances"):
        st.dataframe(result.tables["pooling"], hide_index=True)
