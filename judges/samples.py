"""Repeated samples of a judgment, summarised into the judged file's sample columns.

A run with ``JudgeConfig(samples=K)`` asks each (row, metric) K times; with
``both_orders=True`` each stage-2 pair is also judged with the stories swapped. For every
metric the judged file then holds (``docs/judges.md``, "Repeated samples and both orders"):

- ``<metric>``: the mean of the scored samples (float; NaN if none is scored). For a
  stage-2 metric judged in both orders it is the **order-averaged** score: the mean of
  ``<metric>_ab`` and ``<metric>_ba`` (the one available when an order has no scored
  sample), so an order with more scored samples does not weigh more;
- ``<metric>_sd``: the sample SD (``ddof=1``) of all scored samples (both orders pooled);
  NaN with fewer than two;
- ``<metric>_n``: how many samples were scored (0 when none; empty where the metric does
  not apply to the row's stage);
- ``<metric>_scores``: the scored samples' integer scores as a JSON list, in sample order
  (the as-given order's samples first, then the swapped order's), e.g. ``"[3, 4, 3]"``;
  ``"[]"`` when none is scored, ``""`` where the metric does not apply;
- ``<metric>_ab`` / ``<metric>_ba`` (TCS, PCS, ETCS in both orders): the mean of each
  order's scored samples.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.judge_stats import columns as C

__all__ = ["has_samples", "sample_columns"]


def _sd(values: Sequence[int]) -> float:
    """Sample SD (ddof=1), NaN with fewer than two values (plain Python: K is small)."""
    n = len(values)
    if n < 2:
        return float("nan")
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


def _mean(values: Sequence[int]) -> float:
    return sum(values) / len(values) if len(values) else float("nan")


def sample_columns(n: int, groups: Mapping[tuple[int, str], Sequence[Any]], *,
                   both_orders: bool = False) -> pd.DataFrame:
    """The metric and sample columns of ``n`` rows from their judgments' outcomes.

    Parameters
    ----------
    n
        Rows of the judged file.
    groups
        ``(row position, metric) -> outcomes`` (:class:`judges.judge.MetricOutcome`:
        ``score`` or ``None``, ``sample``, ``order``), sorted as-given order first, then by
        sample.
    both_orders
        Whether stage-2 metrics were judged in both orders (adds ``_ab`` / ``_ba``).

    Returns
    -------
    pandas.DataFrame
        For each metric of :data:`analysis.judge_stats.columns.METRICS`: ``<metric>`` (float mean),
        ``<metric>_sd``, ``<metric>_n`` (Int64), ``<metric>_scores`` (JSON list text) and,
        for TCS/PCS/ETCS in both orders, ``<metric>_ab`` and ``<metric>_ba`` (see the module
        docstring).
    """
    orders = (C.ORDER_AB, C.ORDER_BA)
    mean = {m: np.full(n, np.nan) for m in C.METRICS}
    sd = {m: np.full(n, np.nan) for m in C.METRICS}
    count: dict[str, list[Any]] = {m: [pd.NA] * n for m in C.METRICS}
    listed = {m: [""] * n for m in C.METRICS}
    by_order = {(m, o): np.full(n, np.nan) for m in C.PAIRED_METRICS for o in orders}
    for (p, m), group in groups.items():
        scores = {o: [int(x.score) for x in group if x.order == o and x.score is not None]
                  for o in orders}
        pooled = scores[C.ORDER_AB] + scores[C.ORDER_BA]
        if both_orders and m in C.PAIRED_METRICS:
            for o in orders:
                by_order[m, o][p] = _mean(scores[o])
            means = [by_order[m, o][p] for o in orders if scores[o]]
            mean[m][p] = _mean(means)
        else:
            mean[m][p] = _mean(pooled)
        sd[m][p] = _sd(pooled)
        count[m][p] = len(pooled)
        listed[m][p] = json.dumps(pooled)
    data: dict[str, Any] = {}
    for m in C.METRICS:
        data[m] = mean[m]
        data[C.sd_column(m)] = sd[m]
        data[C.n_column(m)] = pd.array(count[m], dtype="Int64")
        data[C.scores_column(m)] = pd.Series(listed[m], dtype=object)
        if both_orders and m in C.PAIRED_METRICS:
            for o in orders:
                data[C.order_column(m, o)] = by_order[m, o]
    return pd.DataFrame(data)


def has_samples(judged: pd.DataFrame) -> bool:
    """Whether ``judged`` holds sample columns (a run with samples or both orders)."""
    return any(C.scores_column(m) in judged.columns for m in C.METRICS)
