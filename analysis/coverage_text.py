"""Words and pages of coverage (no statistics): a coverage percentage as text, the
per-factor rows of a coverage summary as the page shows them, the pages of a list.
Their home since issue 37, so a front-end formats
a :func:`analysis.api.coverage` Result without calling a statistics module."""

from __future__ import annotations

import pandas as pd

from analysis.columns import N_CELLS, N_EMPTY_CELLS, N_OBSERVED_CELLS, SCOPE
from analysis.formatting import percent_text  # re-exported: its home

__all__ = ["MARGINAL", "page_count", "per_factor_table", "percent_text"]

#: The ``scope`` of a per-factor row of a coverage summary (``analysis.coverage``'s).
MARGINAL = "marginal"


def per_factor_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The per-factor rows of :func:`coverage_summary`, without ``scope``.

    Counts that do not fit int64 (an object column) are shown as text with thousands
    separators, so the table converts to Arrow.
    """
    table = summary[summary[SCOPE] == MARGINAL].drop(columns=[SCOPE]).copy()
    for col in (N_CELLS, N_EMPTY_CELLS, N_OBSERVED_CELLS):
        if col in table and table[col].dtype == object:  # more cells than int64 holds
            table[col] = table[col].map(lambda v: f"{int(v):,}")
    return table


def page_count(n_items: int, page_size: int) -> int:
    """Pages of ``page_size`` items needed for ``n_items`` (at least one)."""
    return max(1, -(-n_items // page_size))
