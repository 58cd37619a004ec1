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
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from judges import columns as C


def _sd(values: Sequence[int]) -> float:
    return float(np.std(values, ddof=1)) if len(values) >= 2 else float("nan")


def _mean(values: Sequence[int]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


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
        For each metric of :data:`judges.columns.METRICS`: ``<metric>`` (float mean),
        ``<metric>_sd``, ``<metric>_n`` (Int64), ``<metric>_scores`` (JSON list text) and,
        for TCS/PCS/ETCS in both orders, ``<metric>_ab`` and ``<metric>_ba`` (see the module
        docstring).
    """
    data: dict[str, Any] = {}
    for m in C.METRICS:
        paired = both_orders and m in C.PAIRED_METRICS
        mean, sd = np.full(n, np.nan), np.full(n, np.nan)
        count: list[Any] = [pd.NA] * n
        listed = [""] * n
        by_order = {o: np.full(n, np.nan) for o in (C.ORDER_AB, C.ORDER_BA)}
        for (p, metric), group in groups.items():
            if metric != m:
                continue
            scores = {o: [int(x.score) for x in group if x.order == o and x.score is not None]
                      for o in (C.ORDER_AB, C.ORDER_BA)}
            pooled = scores[C.ORDER_AB] + scores[C.ORDER_BA]
            for o in by_order:
                by_order[o][p] = _mean(scores[o])
            if paired and pooled:
                mean[p] = float(np.nanmean([by_order[o][p] for o in by_order]))
            else:
                mean[p] = _mean(pooled)
            sd[p] = _sd(pooled)
            count[p] = len(pooled)
            listed[p] = json.dumps(pooled)
        data[m] = mean
        data[C.sd_column(m)] = sd
        data[C.n_column(m)] = pd.array(count, dtype="Int64")
        data[C.scores_column(m)] = pd.Series(listed, dtype=object)
        if paired:
            data[C.order_column(m, C.ORDER_AB)] = by_order[C.ORDER_AB]
            data[C.order_column(m, C.ORDER_BA)] = by_order[C.ORDER_BA]
    return pd.DataFrame(data)


def has_samples(judged: pd.DataFrame) -> bool:
    """Whether ``judged`` holds sample columns (a run with samples or both orders)."""
    return any(C.scores_column(m) in judged.columns for m in C.METRICS)


def parse_scores(value: Any) -> list[int] | None:
    """The list of a ``<metric>_scores`` cell; ``None`` for an empty or missing cell.

    Raises
    ------
    JudgesError
        The cell is not a JSON list of whole numbers.
    """
    from judges.errors import JudgesError

    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, (list, tuple, np.ndarray)):
        items = list(value)
    else:
        text = str(value).strip()
        if not text:
            return None
        try:
            items = json.loads(text)
        except json.JSONDecodeError:
            raise JudgesError(f"A sample-scores cell is not a JSON list: {text[:60]!r}."
                              ) from None
    if not isinstance(items, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and float(x).is_integer()
            for x in items):
        raise JudgesError(f"A sample-scores cell is not a list of whole numbers: {value!r}.")
    return [int(x) for x in items]
