"""The "SAGED statistics" of the Disparity page: their widgets (in the page's options) and
their tables (the ``saged_statistics`` and ``saged_disparity`` of ``analysis.api.disparity``).

Session-state keys: ``saged_normalize``, ``saged_bins``, ``saged_tolerance``,
``saged_percentile``, ``saged_mode_width``.
"""

from __future__ import annotations

import streamlit as st

from analysis.api import Result
from analysis.options.disparity import SagedOptions as Opts
from ui.widgets import show_table

__all__ = ["saged_options", "saged_section"]


def saged_options() -> dict:
    """The SAGED statistics' widgets: ``normalization`` (it rescales the feature and the
    baseline before every number of the page), ``bins``, ``precision_tolerance``,
    ``percentile``, ``mode_bin_width``."""
    st.caption("SAGED statistics (the section at the end of the page); the normalisation "
               "rescales the feature for every table.")
    c1, c2, c3, c4, c5 = st.columns(5)
    method = c1.selectbox(Opts.label("normalization"), Opts.choices("normalization"),
                          index=Opts.choices("normalization").index(Opts.default("normalization")),
                          key="saged_normalize",
                          help="z-score or min-max of feature and baseline together")
    bins = c2.number_input(Opts.label("bins"), 1, 1000, Opts.default("bins"), key="saged_bins",
                           help=Opts.help("bins"))
    tolerance = c3.number_input(Opts.label("precision_tolerance"), 0.0,
                                value=Opts.default("precision_tolerance"), step=0.05,
                                key="saged_tolerance", help=Opts.help("precision_tolerance"))
    percentile = c4.number_input(Opts.label("percentile"), 0.0, 100.0,
                                 Opts.default("percentile"), step=5.0, key="saged_percentile")
    width = c5.number_input(Opts.label("mode_bin_width"), 0.001,
                            value=Opts.default("mode_bin_width"), step=0.1,
                            key="saged_mode_width", help=Opts.help("mode_bin_width"))
    return {"normalization": method, "bins": int(bins), "precision_tolerance": tolerance,
            "percentile": percentile, "mode_bin_width": width}


def saged_section(result: Result) -> None:
    """Mode, range, a percentile and, with a baseline, KL / precision / correlation."""
    st.subheader("SAGED statistics")
    baseline = result.settings.get("baseline")
    st.caption("Per group: the mode (midpoint of the fullest bin), range and a chosen "
               "percentile of the feature" + (" - baseline (calibrated)" if baseline else "")
               + (
                   f"; against the baseline {baseline!r} row by row: KL divergence of the "
                   "two histograms (empty bins get probability 1e-10), precision (share "
                   "within the tolerance) and Pearson / Spearman correlation."
                   if baseline else ". Choose a baseline column above for SAGED's "
                                    "baseline comparison (KL divergence, precision, "
                                    "correlation)."))
    table, across = result.tables["saged_statistics"], result.tables["saged_disparity"]
    show_table(table, "saged_statistics", key="saged_statistics")
    with st.expander("Disparity of these statistics across groups"):
        show_table(across, "saged_disparity", key="saged_disparity")
