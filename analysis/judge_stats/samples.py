"""The cell format of repeated samples' ``<metric>_scores`` columns (``docs/judges.md``).

Read by the reliability statistics and by :mod:`judges.to_results`; written by
:mod:`judges.samples`.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from analysis.judge_stats.errors import JudgesError

__all__ = ["parse_scores"]


def parse_scores(value: Any) -> list[int] | None:
    """The list of a ``<metric>_scores`` cell; ``None`` for an empty or missing cell.

    Raises
    ------
    JudgesError
        The cell is not a JSON list of whole numbers.
    """
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
