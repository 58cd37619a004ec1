"""The eCDF page's render helpers (``pages/ecdf.py`` arranges them)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.multiple_testing import NAMES as ADJUSTMENT_NAMES
from ui.subgroups import COLUMN_CONFIG, adjusted_column
from ui.widgets import md, show_table

__all__ = ["ks_section"]


def ks_section(ks: pd.DataFrame, by: str, adjust: str) -> None:
    """The pairwise two-sample KS tests of the curves (``analysis.ecdf.ks_tests``' table,
    adjusted by ``adjust``), with how each p-value was computed and a CSV download."""
    st.subheader("Kolmogorov-Smirnov")
    if not len(ks):
        st.info(f"Only one value of {md(by)} has subgroups in this subset: nothing to compare.")
        return
    st.caption("Two-sample KS test of the subgroup rates; column method: scipy's exact or "
               "asymptotic p without ties, a permutation p-value given the ties when rates "
               "are tied (exact when the splits can be enumerated, else seeded random "
               "splits, at most the option's count, stopping once the decision at 0.05 and "
               "at the adjustment's thresholds is clear; mc_se: its Monte Carlo "
               "standard error; a clear difference is decided by an upper bound of the "
               "p-value without splits); a curve with one subgroup is not compared. "
               "Adjusted p: "
               f"{ADJUSTMENT_NAMES[adjust]} over the tested pairs.")
    show_table(ks, "ecdf_ks", key="ecdf_ks",
               column_config=COLUMN_CONFIG | adjusted_column(adjust, "the tested pairs"))
