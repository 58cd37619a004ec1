"""Power widgets of the Subgroups page: the effect of interest and the MDE column's
format (the page passes the options to ``analysis.api.subgroups``).

Session-state keys: ``subgroups_grey``, ``subgroups_target_ld``, ``subgroups_power``.
"""

from __future__ import annotations

import streamlit as st

from analysis.columns import BOOT_CI_HIGH, BOOT_CI_LOW, DETECTABLE, MDE_LOG_DISPARITY
from analysis.options.planning import PowerOptions

__all__ = ["COLUMN_CONFIG", "power_widgets"]


COLUMN_CONFIG = {
    BOOT_CI_LOW: st.column_config.NumberColumn("boot CI low", format="%.3f",
                                               help="Bootstrap percentile interval of LD"),
    BOOT_CI_HIGH: st.column_config.NumberColumn("boot CI high", format="%.3f"),
    MDE_LOG_DISPARITY: st.column_config.NumberColumn(
        "MDE |LD|", format="%.3f", help="Smallest |LD| this subgroup detects (both "
                                        "directions) at the chosen power, alpha = 0.05"),
    DETECTABLE: st.column_config.CheckboxColumn(
        "detectable", help="MDE at most the effect of interest"),
}


def power_widgets() -> tuple[bool, dict]:
    """Widgets for the effect of interest: whether to grey out undetectable subgroups and
    the power options (``power``, ``effect`` of
    :class:`analysis.options.subgroups.SubgroupsOptions`)."""
    with st.expander("Power: which subgroups are too small?", expanded=False):
        c1, c2, c3 = st.columns(3)
        grey = c1.checkbox("Grey out subgroups too small to detect", key="subgroups_grey")
        target = c2.number_input("Effect of interest |LD|", 0.01, 5.0, 0.3, 0.05,
                                 key="subgroups_target_ld")
        power = c3.select_slider(PowerOptions.label("power"), [0.5, 0.7, 0.8, 0.9, 0.95],
                                 value=PowerOptions.default("power"), key="subgroups_power")
    return grey, {"power": float(power), "effect": float(target)}
