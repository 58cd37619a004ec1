"""The cell table: one row per observed combination of factor values.

``n`` rows and ``deviations`` per cell are a sufficient statistic for every
count-based analysis (coverage, subgroups, eCDF, logistic regression), so a large
results table is reduced once, in one pass, and everything else works from the
cells (``docs/methods.md``, vocabulary).

The pandas kernel is :mod:`analysis.cell_counts`; sources that are not DataFrames go
through :mod:`analysis.engines`, which uses the same kernel.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.cell_counts import N_ALL, Where, exclude_rows, filter_rows, frame_cell_table
from analysis.design import Design

__all__ = ["N_ALL", "Where", "cell_table", "exclude_rows", "filter_rows"]


def cell_table(
    results: pd.DataFrame | object,
    factors: Sequence[str],
    *,
    where: Where | None = None,
    with_outcome: bool = True,
    design: Design | None = None,
    engine: str = "auto",
) -> pd.DataFrame:
    """Count rows and deviations per observed combination of ``factors``.

    Parameters
    ----------
    results
        A results table, ideally from :func:`analysis.design.apply_design` (factor
        columns categorical with the declared values; ``deviation`` column); or a cell
        table (``n``, optionally ``deviations`` and ``n_all``: the counts are summed); or,
        through :mod:`analysis.engines`, a path / glob / folder of results files, a
        DuckDB relation or a Spark DataFrame (then ``design`` maps the raw rows).
    factors
        The factors defining the cells (at least one).
    where
        Optional row filter applied first (see :func:`filter_rows`).
    with_outcome
        Count deviations when the table has a ``deviation`` column. Rows whose
        deviation is missing are then left out of the cell table altogether, so that
        ``deviations / n`` is the deviation rate. With ``False``, every row counts and
        there is no ``deviations`` column (what coverage needs).

    Returns
    -------
    pandas.DataFrame
        Observed cells only, sorted by the factors' value order; columns: one per
        factor (categorical over the declared values, so unseen values stay known),
        ``n`` (int64 rows) and, with an outcome, ``deviations`` (int64).
    design, engine
        Only for sources that are not DataFrames (or with ``engine`` other than
        ``auto``/``pandas``): see :func:`analysis.engines.cell_table`.
    """
    if not isinstance(results, pd.DataFrame) or engine not in ("auto", "pandas"):
        from analysis import engines

        return engines.cell_table(results, factors, design=design, where=where,
                                  with_outcome=with_outcome, engine=engine)
    return frame_cell_table(results, factors, where=where, with_outcome=with_outcome)
