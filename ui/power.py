"""Power and bootstrap widgets of the Subgroups page: the effect of interest, the MDE
column, (cluster-)bootstrap intervals of LD.

Session-state keys: ``subgroups_grey``, ``subgroups_target_ld``, ``subgroups_power`` and
those of :func:`ui.uncertainty.bootstrap_options` with prefix ``subgroups``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.columns import BOOT_CI_HIGH, BOOT_CI_LOW, DETECTABLE, MDE_LOG_DISPARITY
from analysis.options.planning import PowerOptions
from analysis.planning import add_power

__all__ = ["COLUMN_CONFIG", "with_bootstrap", "with_power"]


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


def with_power(table: pd.DataFrame, total_n: int) -> tuple[pd.DataFrame, bool, dict]:
    """Widgets for the effect of interest; the table with ``mde_log_disparity`` (and
    ``detectable``), whether to grey out undetectable subgroups and the settings
    (``power``, ``target_ld``) for "Copy as CLI / Python"."""
    with st.expander("Power: which subgroups are too small?", expanded=False):
        c1, c2, c3 = st.columns(3)
        grey = c1.checkbox("Grey out subgroups too small to detect", key="subgroups_grey")
        target = c2.number_input("Effect of interest |LD|", 0.01, 5.0, 0.3, 0.05,
                                 key="subgroups_target_ld")
        power = c3.select_slider(PowerOptions.label("power"), [0.5, 0.7, 0.8, 0.9, 0.95],
                                 value=PowerOptions.default("power"), key="subgroups_power")
    settings = {"power": float(power), "target_ld": float(target)}
    return add_power(table, total_n, **settings), grey, settings


def with_bootstrap(table: pd.DataFrame, results: pd.DataFrame, design, factors: list[str],
                   where: dict, level: int, cluster: str | None = None, *,
                   seed: int | None = None, confidence: float | None = None
                   ) -> tuple[pd.DataFrame, dict | None]:
    """The subgroup table with (cluster-)bootstrap intervals of LD when asked for, and the
    bootstrap settings (None when off: ``cluster``, ``n_resamples``, ``seed``,
    ``confidence``); ``cluster`` (the page's) is resampled; ``seed`` and ``confidence``:
    the page's (None: the options' defaults)."""
    from analysis.bootstrap import bootstrap_log_disparity
    from analysis.cells import filter_rows
    from analysis.options.subgroups import SubgroupsOptions
    from ui.uncertainty import bootstrap_options

    boot = bootstrap_options(results, design, "subgroups", cluster=cluster, seed=seed)
    if not boot:
        return table, None
    boot["confidence"] = float(SubgroupsOptions.default("confidence") if confidence is None
                               else confidence)
    from ui.widgets import md

    rows = filter_rows(results, {k: v for k, v in where.items() if v} or None)
    out = bootstrap_log_disparity(rows, factors, max_level=level, table=table, **boot)
    for note in out.attrs["bootstrap"].get("notes", []):
        st.warning(md(note))
    return out, boot
