"""Repeated samples and both orders on the Judges page: the run options and the
position-bias table (logic in judges/samples.py and judges/position.py).

Session-state keys: ``judges_samples`` (K), ``judges_both_orders`` (the checkbox).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.judge_stats import columns as C
from judges.judge import MAX_SAMPLES
from judges.position import has_both_orders, position_bias
from judges.samples import has_samples

__all__ = [
    "sample_browse_columns", "sampling_settings", "show_position_bias", "show_sample_note",
]


def sampling_settings() -> tuple[int, bool]:
    """The K number input and the both-orders checkbox: ``(samples, both_orders)``."""
    a, b = st.columns(2)
    samples = int(a.number_input(
        "Samples per judgment (K)", 1, MAX_SAMPLES, 1, step=1, key="judges_samples",
        help="Ask each (row, metric) K times to measure the judge's own noise: the score is "
             "the mean, with its SD, count and list. Distinct seeds where the provider takes "
             "one; set a temperature above 0, or the samples will be identical."))
    both = b.checkbox(
        "Judge stage-2 pairs in both orders", key="judges_both_orders",
        help="Each story pair is also judged with the stories swapped (story B shown "
             "first); the score is the order-averaged one and the results show how often "
             "the order changed it (position bias). Doubles the stage-2 requests.")
    return samples, bool(both)


def show_sample_note(judged: pd.DataFrame) -> None:
    """A caption on the scores of a file judged with several samples or both orders."""
    if has_samples(judged):
        st.caption("Several samples per judgment: each score is the mean of its scored "
                   "samples (stage 2 in both orders: the mean of the two orders' means); "
                   "<metric>_sd, _n and _scores in the judged rows give the spread.")


def show_position_bias(judged: pd.DataFrame) -> None:
    """The position-bias table of a file judged in both orders (nothing otherwise)."""
    if not has_both_orders(judged):
        return
    st.subheader("Position bias")
    st.caption("Stage-2 pairs judged as given (story A first) and swapped. "
               "position_bias_rate: share of pairs whose two orders' scores differ; "
               "mean_diff: mean of as-given minus swapped; p_sign / p_wilcoxon: two-sided "
               "tests of a systematic preference for one order. The scores used are the "
               "order-averaged ones.")
    st.dataframe(position_bias(judged), hide_index=True)


def sample_browse_columns() -> list[str]:
    """The sample columns shown when browsing judged rows (those present are shown)."""
    return [c for m in C.METRICS for c in C.sample_columns(m, both_orders=True)]
