"""Power widgets of the Subgroups page: the effect of interest and the MDE column.

Session-state keys: ``subgroups_grey``, ``subgroups_target_ld``, ``subgroups_power``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.columns import DETECTABLE, MDE_LOG_DISPARITY
from analysis.planning import add_power

COLUMN_CONFIG = {
    MDE_LOG_DISPARITY: st.column_config.NumberColumn(
        "MDE |LD|", format="%.3f", help="Smallest |LD| this subgroup detects (both "
                                        "directions) at the chosen power, alpha = 0.05"),
    DETECTABLE: st.column_config.CheckboxColumn(
        "detectable", help="MDE at most the effect of interest"),
}


def with_power(table: pd.DataFrame, total_n: int) -> tuple[pd.DataFrame, bool]:
    """Widgets for the effect of interest; the table with ``mde_log_disparity`` (and
    ``detectable``) and whether to grey out undetectable subgroups."""
    with st.expander("Power: which subgroups are too small?", expanded=False):
        c1, c2, c3 = st.columns(3)
        grey = c1.checkbox("Grey out subgroups too small to detect", key="subgroups_grey")
        target = c2.number_input("Effect of interest |LD|", 0.01, 5.0, 0.3, 0.05,
                                 key="subgroups_target_ld")
        power = c3.select_slider("Power", [0.5, 0.7, 0.8, 0.9, 0.95], value=0.8,
                                 key="subgroups_power")
    return add_power(table, total_n, power=power, target_ld=target), grey
