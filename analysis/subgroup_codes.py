"""Per-(subgroup, cluster) counts straight from the rows' integer codes (issue 44.1).

The cluster-robust subgroups need, for every subgroup, its rows and deviations in each
cluster. Counted through a factors x cluster cell table (one row per observed
combination, ~900k cells for 1M rows of 6 factors and 300 templates), that table costs
more than the whole independent-rows analysis. Here the rows' codes (the design's
categorical codes of each factor, :func:`analysis.values.factor_codes` of the cluster)
form one mixed-radix key per row, ``np.bincount`` counts the rows and the deviating rows
into a dense grid of every factor combination x cluster (clusters on the last axis), and
each subgroup's per-cluster counts are a marginal of that grid, gathered by the integer
code of the subgroup: no cell table over the cluster, no label strings. The same idea as
the DuckDB engine's ENUM codes (``analysis/engines/coded.py``), in memory.

:func:`cluster_grid` builds the grid (None when it would be too large: the caller then
takes the cell-table path, :func:`analysis.subgroups.cluster_robust_ld` on a factors x
cluster cell table); :func:`analysis.subgroups.subgroups` takes it as ``cluster_grid``.
Every number equals the cell-table path's (the same integer counts, the same clusters in
the same order); ``tests/analysis/test_subgroup_codes.py`` compares the two.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.cell_counts import frame_cell_table
from analysis.columns import DEVIATION, DEVIATIONS, N
from analysis.values import MISSING_VALUE, combine_codes, factor_codes

__all__ = ["ClusterGrid", "cluster_grid"]

#: The grid is dense when it has at most this many entries (or 8 per row analysed):
#: two int32 tables of this size, ~34 MB at the floor; larger grids take the cell path.
GRID_LIMIT = 1 << 22
#: ... per row analysed.
GRID_PER_ROW = 8


@dataclass
class ClusterGrid:
    """Rows (``n``) and deviating rows (``d``) of every factor combination in every
    cluster, dense, clusters on the last axis.

    Attributes
    ----------
    cluster
        The cluster column.
    labels
        The clusters holding rows with an outcome, in the sorted order of their labels
        (the column order of the cell path, so both sum in the same order).
    factors, values
        The factors (the grid's leading axes) and each one's values: the categories of
        the cell table over the same rows (:func:`analysis.values.factor_codes`).
    n, d
        Integer arrays of shape ``(len(values[0]), ..., len(labels))``.
    cells
        The cell table over the factors the grid was built against, if one was given.
    """

    cluster: str
    labels: list[str]
    factors: list[str]
    values: list[list[str]]
    n: np.ndarray
    d: np.ndarray
    cells: pd.DataFrame | None = field(default=None, repr=False)
    _tables: dict = field(default_factory=dict, repr=False)

    @property
    def g(self) -> int:
        """The number of clusters with rows."""
        return len(self.labels)

    def marginal(self, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """``n`` and ``d`` summed over the factors not in ``axes`` (the cluster axis
        kept), each from its smallest already computed parent (one more factor: the one
        with the fewest values), so the full grid is read only by the first reductions."""
        if not self._tables:
            self._tables[tuple(range(len(self.factors)))] = (self.n, self.d)
        if axes not in self._tables:
            sizes = [len(v) for v in self.values]
            absent = [j for j in range(len(sizes)) if j not in axes]
            j = min(absent, key=lambda a: sizes[a])
            parent = tuple(sorted((*axes, j)))
            pos = parent.index(j)
            self._tables[axes] = tuple(t.sum(axis=pos, dtype=t.dtype)
                                       for t in self.marginal(parent))
        return self._tables[axes]

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows and deviations per cluster (floats, exact counts)."""
        n, d = self.marginal(())
        return n.astype(float), d.astype(float)

    def cell_table(self) -> pd.DataFrame:
        """The cell table of the same rows over the factors: what
        :func:`analysis.cells.cell_table` ``(rows, factors)`` returns (the grid summed
        over the clusters; observed cells in the order of their codes)."""
        if self.cells is not None:
            return self.cells
        axis = len(self.factors)
        n = self.n.sum(axis=axis, dtype=np.int64).reshape(-1)
        d = self.d.sum(axis=axis, dtype=np.int64).reshape(-1)
        flat = np.flatnonzero(n)
        codes = np.unravel_index(flat, [max(len(v), 1) for v in self.values])
        out = pd.DataFrame({
            f: pd.Categorical.from_codes(c, categories=v, ordered=True)
            for f, c, v in zip(self.factors, codes, self.values, strict=True)})
        out[N] = n[flat]
        out[DEVIATIONS] = d[flat]
        return out

    def cluster_frame(self) -> pd.DataFrame:
        """One line per cluster with its rows (``n``): what
        :func:`analysis.clusters.resolve_cluster` judges (as it judges a cell table)."""
        return pd.DataFrame({self.cluster: pd.Categorical(self.labels, categories=self.labels),
                             N: self.totals()[0]})

    def blocks(self, tcodes: Sequence[np.ndarray], block: int
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``(rows, a, n)`` for the subgroups of a table: ``tcodes`` each factor's code
        of every subgroup (-1 where it does not fix the factor); ``rows`` positions in
        the table, ``a`` / ``n`` their deviations / rows per cluster (floats, shape
        ``(len(rows), G)``), about ``block`` entries each (the factor combinations
        gathered together)."""
        size = len(tcodes[0]) if len(tcodes) else 0
        pattern = np.zeros(size, dtype=np.int64)
        for j, c in enumerate(tcodes):
            pattern |= (c >= 0).astype(np.int64) << j
        step = max(1, block // max(self.g, 1))
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        filled = 0
        for pat in np.unique(pattern):
            rows = np.flatnonzero(pattern == pat)
            js = [j for j in range(len(self.factors)) if pat >> j & 1]
            sizes = [len(self.values[j]) for j in js]
            tkey = combine_codes([tcodes[j][rows] for j in js], sizes, n=len(rows))
            nn, dd = (t.reshape(-1, self.g) for t in self.marginal(tuple(js)))
            for lo in range(0, len(rows), step):
                key = tkey[lo:lo + step]
                parts.append((rows[lo:lo + step], dd[key], nn[key]))
                filled += len(key)
                if filled >= step:
                    yield _joined(parts)
                    parts, filled = [], 0
        if parts:
            yield _joined(parts)


def _joined(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows, a, n = zip(*parts, strict=True)
    return (np.concatenate(rows), np.concatenate(a).astype(float),
            np.concatenate(n).astype(float))


def _known_codes(series: pd.Series, known: np.ndarray | None
                 ) -> tuple[np.ndarray, list[str]] | None:
    """:func:`analysis.values.factor_codes` of the rows with an outcome (``known``; None:
    every row) of a categorical column, from its own codes (int8, no copy when no row is
    missing): what :func:`analysis.cells.cell_table` codes the factor by. None for a
    column that is not categorical (its values' order would be that of first appearance
    among the rows with an outcome: the caller counts the cell table instead)."""
    if not isinstance(series.dtype, pd.CategoricalDtype):
        return None
    codes = series.cat.codes.to_numpy()
    if known is not None:
        codes = codes[known]
    values = [str(c) for c in series.cat.categories]
    if len(codes) and codes.min() < 0:
        if MISSING_VALUE not in values:
            values.append(MISSING_VALUE)
        codes = np.where(codes < 0, values.index(MISSING_VALUE), codes)
    return codes, values


def cluster_grid(rows: pd.DataFrame, factors: Sequence[str], cluster: str,
                 cells: pd.DataFrame | None = None) -> ClusterGrid | None:
    """The :class:`ClusterGrid` of results rows (the design applied: a 0/1/NaN
    ``deviation`` column), or None when it does not apply or would be too large.

    Parameters
    ----------
    rows
        The rows analysed (after filters), with the factor columns, ``cluster`` and
        ``deviation``; rows whose outcome is missing are not counted (as in the cell
        table).
    factors
        The factors of the subgroups.
    cluster
        The cluster column (already checked: :func:`analysis.clusters.resolve_cluster`).
    cells
        The cell table of ``rows`` over ``factors`` (:func:`analysis.cells.cell_table`),
        or None: then the grid gives it (:meth:`ClusterGrid.cell_table`) when every
        factor is categorical (the design applied), else it is counted. Its categories
        are the grid's values, so the subgroup table built from it indexes the grid by
        its own codes.

    Returns
    -------
    ClusterGrid or None
        None when ``cluster`` is a factor, an outcome is neither 0 nor 1, or the grid
        would exceed ``max(GRID_LIMIT, GRID_PER_ROW * rows)`` entries.
    """
    factors = list(factors)
    if cluster in factors or DEVIATION not in rows.columns or cluster not in rows.columns:
        return None
    ccodes, clabels = factor_codes(rows[cluster])
    dev = rows[DEVIATION].to_numpy(dtype=float)
    known = ~np.isnan(dev)
    every = bool(known.all())
    if not every:
        dev, ccodes = dev[known], ccodes[known]
    deviating = dev == 1
    if not (deviating | (dev == 0)).all():  # fractional outcomes: the cell path sums them
        return None
    coded = [_known_codes(rows[f], None if every else known) for f in factors]
    if cells is None and any(c is None for c in coded):
        cells = frame_cell_table(rows, factors)
    if cells is None:
        codes, values = [c for c, _ in coded], [v for _, v in coded]
    else:
        values = [factor_codes(cells[f])[1] for f in factors]
        codes = []
        for f, vals, own in zip(factors, values, coded, strict=True):
            if own is None:
                c, labels = factor_codes(rows[f])
                c = c if every else c[known]
            else:
                c, labels = own
            if labels != vals:  # the cell table's values in another order
                where = {v: i for i, v in enumerate(vals)}
                c = np.array([where.get(v, -1) for v in labels], dtype=np.int64)[c]
                if (c < 0).any():
                    return None
            codes.append(c)
    sizes = [max(len(v), 1) for v in values]
    if math.prod(sizes) * len(clabels) > max(GRID_LIMIT, GRID_PER_ROW * len(rows)) \
            or len(rows) >= 2**31:
        return None
    # clusters in the sorted order of their labels, as the cell path orders them
    per = np.bincount(ccodes, minlength=len(clabels))
    present = [i for i in range(len(clabels)) if per[i] > 0]
    order = sorted(present, key=lambda i: str(clabels[i]))
    column = np.full(len(clabels), -1, dtype=np.int64)
    column[order] = np.arange(len(order))
    g = len(order)
    total = math.prod(sizes) * max(g, 1)
    key = column[ccodes]  # mixed radix, the cluster last (the fastest digit), in place
    digit = np.empty_like(key)
    radix = max(g, 1)
    for c, size in zip(reversed(codes), reversed(sizes), strict=True):
        np.multiply(c, np.int64(radix), out=digit)
        key += digit
        radix *= size
    del digit
    shape = (*sizes, max(g, 1))
    n = np.bincount(key, minlength=total).astype(np.int32).reshape(shape)
    d = np.bincount(key[deviating], minlength=total).astype(np.int32).reshape(shape)
    return ClusterGrid(cluster, [str(clabels[i]) for i in order], factors, values, n, d,
                       cells)
