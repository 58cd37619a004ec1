"""Position bias of the paired stage: does the judge's score change when the stories swap?

A run with ``JudgeConfig(both_orders=True)`` (``judges score --both-orders``) judges each
stage-2 story pair twice per sample: as given (``story_a`` shown first, in the block
labelled ``STORY A``) and swapped (``story_b`` shown first). TCS, PCS and ETCS measure how
consistent the two stories are, a property that does not depend on which comes first, so
an unbiased judge gives both orders the same score up to its own sampling noise. The
judged file keeps each order's mean in ``<metric>_ab`` and ``<metric>_ba``
(:mod:`judges.samples`); :func:`position_bias` summarises them per metric.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis.judge_stats import columns as C
from judges.errors import JudgesError

__all__ = ["TOLERANCE", "has_both_orders", "position_bias"]


#: Two order means closer than this count as equal (means of whole-number scores).
TOLERANCE = 1e-9


def has_both_orders(judged: pd.DataFrame) -> bool:
    """Whether ``judged`` holds the per-order columns of a both-orders run."""
    return any(C.order_column(m, C.ORDER_AB) in judged.columns
               and C.order_column(m, C.ORDER_BA) in judged.columns for m in C.PAIRED_METRICS)


def position_bias(judged: pd.DataFrame) -> pd.DataFrame:
    """Per stage-2 metric: how often and in which direction the order changes the score.

    Parameters
    ----------
    judged
        A judged file of a both-orders run (columns ``<metric>_ab`` and ``<metric>_ba``).

    Returns
    -------
    pandas.DataFrame
        One row per metric of TCS, PCS, ETCS present, columns:

        - ``metric``;
        - ``n_pairs``: stage-2 pairs scored in both orders;
        - ``n_differ``: pairs whose two orders' (mean) scores differ;
        - ``position_bias_rate``: ``n_differ / n_pairs`` (NaN without pairs);
        - ``mean_diff``: mean of ``ab - ba`` over the pairs (positive: higher scores with
          the stories as given, ``story_a`` first);
        - ``n_ab_higher``, ``n_ba_higher``: pairs scored higher as given / swapped;
        - ``p_sign``: two-sided exact sign test (binomial, p = 1/2) of ``n_ab_higher``
          among the pairs that differ: a systematic preference for one order;
        - ``p_wilcoxon``: two-sided Wilcoxon signed-rank test of the differences (zero
          differences dropped, scipy's default); NaN when no pair differs.

    Raises
    ------
    JudgesError
        The file has no per-order columns (judge it with ``--both-orders``).
    """
    if not has_both_orders(judged):
        raise JudgesError("This judged file has no per-order scores (<metric>_ab, "
                          "<metric>_ba): judge it with --both-orders first.")
    stage2 = pd.to_numeric(judged[C.STAGE], errors="coerce").to_numpy() == 2
    rows = []
    for m in C.PAIRED_METRICS:
        ab_col, ba_col = C.order_column(m, C.ORDER_AB), C.order_column(m, C.ORDER_BA)
        if ab_col not in judged.columns or ba_col not in judged.columns:
            continue
        ab = pd.to_numeric(judged[ab_col], errors="coerce").to_numpy(dtype=float)[stage2]
        ba = pd.to_numeric(judged[ba_col], errors="coerce").to_numpy(dtype=float)[stage2]
        both = ~np.isnan(ab) & ~np.isnan(ba)
        diff = ab[both] - ba[both]
        differ = np.abs(diff) > TOLERANCE
        n, k = int(both.sum()), int(differ.sum())
        higher = int((diff > TOLERANCE).sum())
        p_sign = p_wilcoxon = float("nan")
        if k:
            p_sign = float(stats.binomtest(higher, k, 0.5).pvalue)
            p_wilcoxon = float(stats.wilcoxon(diff[differ]).pvalue)
        rows.append({
            C.METRIC: m, "n_pairs": n, "n_differ": k,
            "position_bias_rate": k / n if n else float("nan"),
            "mean_diff": float(diff.mean()) if n else float("nan"),
            "n_ab_higher": higher, "n_ba_higher": k - higher,
            "p_sign": p_sign, "p_wilcoxon": p_wilcoxon,
        })
    return pd.DataFrame(rows, columns=[C.METRIC, "n_pairs", "n_differ", "position_bias_rate",
                                       "mean_diff", "n_ab_higher", "n_ba_higher", "p_sign",
                                       "p_wilcoxon"])
