"""The "SAGED statistics" section of the Disparity page (calls analysis.saged_stats).

Session-state keys: ``saged_normalize``, ``saged_bins``, ``saged_tolerance``,
``saged_percentile``, ``saged_mode_width``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis import saged_stats as S
from analysis.cells import filter_rows
from analysis.errors import AnalysisError
from analysis.options.disparity import SagedOptions as Opts
from ui.common import per_table, table_download
from ui.widgets import md

__all__ = ["saged_section"]


def _statistics(results: pd.DataFrame, where: dict, feature: str, by: list[str],
                **options: object) -> pd.DataFrame:
    return S.saged_statistics(filter_rows(results, where or None), feature, by, **options)


def saged_section(results: pd.DataFrame, where: dict, options: dict) -> None:
    """Mode, range, a percentile and, with a baseline, KL / precision / correlation."""
    st.subheader("SAGED statistics")
    baseline = options.get("baseline")
    st.caption("Per group: the mode (midpoint of the fullest bin), range and a chosen "
               "percentile of the feature" + (" - baseline (calibrated)" if baseline else "")
               + (
                   f"; against the baseline {baseline!r} row by row: KL divergence of the "
                   "two histograms (empty bins get probability 1e-10), precision (share "
                   "within the tolerance) and Pearson / Spearman correlation."
                   if baseline else ". Choose a baseline column above for SAGED's "
                                    "baseline comparison (KL divergence, precision, "
                                    "correlation)."))
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
    try:
        table = per_table(_statistics, results, st.session_state["design"], where,
                          options["feature"], options["by"], baseline=baseline,
                          normalization=method, bins=int(bins), tolerance=tolerance,
                          percentile=percentile, mode_bin_width=width)  # reads every row
        across = S.saged_disparity(table, conventions=options.get("conventions", "workbench"))
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return
    st.dataframe(table, hide_index=True)
    table_download(table, "saged_statistics", key="saged_statistics")
    with st.expander("Disparity of these statistics across groups"):
        st.dataframe(across, hide_index=True)
        table_download(across, "saged_disparity", key="saged_disparity")
