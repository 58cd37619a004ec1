"""Per-(subgroup, cluster) counts straight from the rows' integer codes (issue 44.1).

The cluster-robust subgroups need, for every subgroup, its rows and deviations in each
cluster. Counted through a factors x cluster cell table (one row per observed
combination, ~900k cells for 1M rows of 6 factors and 300 templates), that table costs
more than the whole independent-rows analysis. Here the rows' codes (the design's
categorical codes of each factor, :func:`analysis.values.factor_codes` of the cluster)
form mixed-radix keys, ``np.bincount`` counts the rows and the deviating rows into dense
grids of factor combinations x cluster (clusters on the last axis), and each subgroup's
per-cluster counts are a marginal of one of them, gathered by the integer code of the
subgroup: no cell table over the cluster, no label strings. The same idea as the DuckDB
engine's ENUM codes (``analysis/engines/coded.py``), in memory.

The grid is split into *parts* (session 10): sets of factors such that every
combination of up to the subgroups' level lies in one, each small enough for its
bincount to stay in the cache (:func:`_cover`; 3 parts of 58k-518k entries for levels
1-2 of 6 factors and 300 templates, instead of one grid of 4.1M entries). The cluster
column is factorised once (:func:`cluster_lines`): the cluster check judges its distinct
values (:func:`analysis.clusters.resolve_cluster` on one line per value, with the rows
of each) and the grid composes each row's line with the line's code.

:func:`cluster_grid` builds the grid from the rows; None when it would be too large or
does not apply (outcomes other than 0/1, a cluster that is a factor): the caller then
counts the factors x cluster cell table and takes :func:`cell_grid` of it, as it does
for the app's cached cells and an engine's fine cell table (weighted bincounts; sparse
when too large to hold densely). :func:`analysis.subgroups.subgroups` takes the grid as
``cluster_grid``, :func:`analysis.pooling.design_effects` reads its blocks. Every number
equals that of the previous path through the cell table (the same integer counts, the
same clusters in the same order), kept as the tests' oracle
(``tests/oracles/subgroup_cells.py``; ``tests/analysis/test_subgroup_codes.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from analysis.cell_counts import frame_cell_table
from analysis.columns import DEVIATION, DEVIATIONS, N
from analysis.values import MISSING_VALUE, combine_codes, factor_codes

__all__ = ["ClusterCodes", "ClusterGrid", "cell_grid", "cluster_grid", "cluster_lines",
           "table_codes"]

#: A part of the grid (a set of factors x the clusters) is dense when it has at most this
#: many entries (or 8 per row analysed); past it the rows' grid is None, a cell grid sparse.
GRID_LIMIT = 1 << 22
#: ... per row analysed.
GRID_PER_ROW = 8
#: The entries a part grows to when its factors are chosen (:func:`_cover`): counted by
#: ``np.bincount``, a part of this size stays in the processor's cache (4 MB of int64),
#: where one grid of every factor combination x cluster (4.1M entries at 1M rows of 6
#: factors and 300 templates) costs a cache miss per row and ~100 MB of fresh memory.
PART_ENTRIES = 1 << 19


def _cover(sizes: Sequence[int], level: int, g: int) -> list[tuple[int, ...]]:
    """Sets of factors ("parts") such that every combination of ``level`` factors lies
    in one of them, each part at most :data:`PART_ENTRIES` entries with the ``g``
    clusters (a combination larger than that is a part alone). Greedy: the largest
    combination not yet covered starts a part, which takes the factor covering most
    uncovered combinations (then the one with the fewest values) while it fits. With
    ``level`` = every factor, one part: the whole grid."""
    k = len(sizes)
    need = {frozenset(c) for c in combinations(range(k), min(level, k))}
    parts: list[tuple[int, ...]] = []
    while need:
        first = max(need, key=lambda c: (math.prod(sizes[j] for j in c), sorted(c)))
        part = set(first)
        while True:
            best, best_key = None, None
            for j in range(k):
                if j in part or math.prod(sizes[i] for i in part | {j}) * g > PART_ENTRIES:
                    continue
                gain = sum(1 for c in need if c <= part | {j} and not c <= part)
                if gain and (best_key is None or (gain, -sizes[j]) > best_key):
                    best, best_key = j, (gain, -sizes[j])
            if best is None:
                break
            part.add(best)
        parts.append(tuple(sorted(part)))
        need = {c for c in need if not c <= part}
    return parts


@dataclass
class ClusterGrid:
    """Rows and deviating rows of factor combinations in every cluster, dense, clusters
    on the last axis: one table per part of the factors (:func:`_cover`), so that every
    combination of up to ``level`` factors is a marginal of a part.

    Attributes
    ----------
    cluster
        The cluster column.
    labels
        The clusters holding rows with an outcome, in the sorted order of their labels
        (the column order of every engine's counts, so all sum in the same order).
    factors, values
        The factors and each one's values: the categories of the cell table over the
        same rows (:func:`analysis.values.factor_codes`).
    parts
        ``{factor positions: (n, d)}``: integer arrays of shape
        ``(len(values[j]) for j in positions) + (len(labels),)``.
    cells
        The cell table over the factors (given, or counted from the rows' codes).
    units
        None, or for a grid too large to hold densely (:func:`cell_grid`): the cells'
        factor codes, cluster columns, rows and deviations, counted per factor
        combination when asked (``parts`` then holds only the clusters' totals).
    """

    cluster: str
    labels: list[str]
    factors: list[str]
    values: list[list[str]]
    parts: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]]
    cells: pd.DataFrame = field(repr=False)
    units: tuple | None = field(default=None, repr=False)
    _tables: dict = field(default_factory=dict, repr=False)

    @property
    def g(self) -> int:
        """The number of clusters with rows."""
        return len(self.labels)

    def marginal(self, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """``n`` and ``d`` of the factors ``axes`` (sorted positions) per cluster,
        summed from the smallest part holding them, each table from its smallest
        already computed parent (one more factor of the part: the one with the fewest
        values), so a part is read whole only by its first reductions."""
        if not self._tables:
            self._tables.update(self.parts)
        if axes not in self._tables:
            sizes = [len(v) for v in self.values]
            holding = [p for p in self.parts if set(axes) <= set(p)]
            if not holding:
                raise KeyError(f"no part of the grid holds the factors {axes}")
            part = min(holding, key=lambda p: math.prod(sizes[j] for j in p))
            j = min((a for a in part if a not in axes), key=lambda a: sizes[a])
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
        :func:`analysis.cells.cell_table` ``(rows, factors)`` returns (observed cells in
        the order of their codes; columns the factors, ``n``, ``deviations``)."""
        return self.cells

    def cluster_frame(self) -> pd.DataFrame:
        """One line per cluster with its rows (``n``): what
        :func:`analysis.clusters.resolve_cluster` judges (as it judges a cell table)."""
        return pd.DataFrame({self.cluster: pd.Categorical(self.labels, categories=self.labels),
                             N: self.totals()[0]})

    def blocks(self, table: pd.DataFrame, block: int = 2_000_000
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``(rows, a, n)`` for the subgroups of a table over the grid's factors (each
        factor's column: the subgroup's value, missing where it does not fix the
        factor): ``rows`` positions in the table, ``a`` / ``n`` their deviations / rows
        per cluster (floats, shape ``(len(rows), G)``), about ``block`` entries each
        (the factor combinations gathered together)."""
        tcodes = [table_codes(table[f], v) for f, v in zip(self.factors, self.values,
                                                            strict=True)]
        pattern = np.zeros(len(table), dtype=np.int64)
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
            counts = self._counts(js, sizes, tkey)
            for lo in range(0, len(rows), step):
                parts.append((rows[lo:lo + step], *counts(lo, min(lo + step, len(rows)))))
                filled += len(parts[-1][0])
                if filled >= step:
                    yield _joined(parts)
                    parts, filled = [], 0
        if parts:
            yield _joined(parts)

    def _counts(self, js: list[int], sizes: list[int], tkey: np.ndarray):
        """``counts(lo, hi)``: ``(a, n)`` per cluster of the subgroups ``tkey[lo:hi]``
        (codes of the factors ``js``): rows of a dense marginal, or, for a sparse grid
        (:attr:`units`), the observed (subgroup, cluster) pairs counted from the units."""
        if self.units is None:
            nn, dd = (t.reshape(-1, self.g) for t in self.marginal(tuple(js)))
            return lambda lo, hi: (dd[tkey[lo:hi]], nn[tkey[lo:hi]])
        codes, column, n_w, d_w = self.units
        key = combine_codes([*(codes[j] for j in js), column], [*sizes, self.g],
                            n=len(column))
        where, inverse = np.unique(key, return_inverse=True)
        inverse = inverse.reshape(-1)
        nn = np.bincount(inverse, weights=n_w, minlength=len(where))
        dd = np.bincount(inverse, weights=d_w, minlength=len(where))
        by_key = np.argsort(tkey, kind="stable")
        sub = where // self.g
        pos = np.minimum(np.searchsorted(tkey[by_key], sub), len(tkey) - 1)
        found = tkey[by_key][pos] == sub
        row, col = by_key[pos[found]], (where[found] % self.g).astype(np.int64)
        order = np.argsort(row, kind="stable")
        row, col, nn, dd = row[order], col[order], nn[found][order], dd[found][order]

        def counts(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
            a, n = np.zeros((hi - lo, self.g)), np.zeros((hi - lo, self.g))
            i, j = np.searchsorted(row, [lo, hi])
            a[row[i:j] - lo, col[i:j]] = dd[i:j]
            n[row[i:j] - lo, col[i:j]] = nn[i:j]
            return a, n

        return counts


@dataclass(frozen=True)
class ClusterCodes:
    """The cluster column of the rows factorised once (:func:`cluster_lines`).

    Attributes
    ----------
    codes
        Each row's line (int64).
    lines
        The column ``cluster`` alone, one line per distinct value (a missing value is
        one), in order of first appearance: what :func:`analysis.clusters.resolve_cluster`
        judges with ``rows`` as it judges the rows.
    rows
        Rows per line.
    """

    codes: np.ndarray
    lines: pd.DataFrame
    rows: np.ndarray


def cluster_lines(rows: pd.DataFrame, cluster: str | None, factors: Sequence[str] = ()
                  ) -> ClusterCodes | None:
    """The :class:`ClusterCodes` of the rows' cluster column, or None when no
    :func:`cluster_grid` could use it (no cluster, not a column, a factor, or no
    ``deviation`` column)."""
    if not cluster or cluster not in rows.columns or cluster in factors \
            or DEVIATION not in rows.columns:
        return None
    codes, uniques = pd.factorize(rows[cluster], use_na_sentinel=False)
    return ClusterCodes(codes.astype(np.int64, copy=False), pd.DataFrame({cluster: uniques}),
                        np.bincount(codes, minlength=len(uniques)))


def _joined(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows, a, n = zip(*parts, strict=True)
    return (np.concatenate(rows), np.concatenate(a).astype(float),
            np.concatenate(n).astype(float))


def _known_codes(series: pd.Series, known: np.ndarray | None
                 ) -> tuple[np.ndarray, list[str]] | None:
    """:func:`analysis.values.factor_codes` of the rows with an outcome (``known``: their
    positions; None: every row) of a categorical column, from its own codes (int8, no
    copy when no row is missing): what :func:`analysis.cells.cell_table` codes the factor
    by. None for a column that is not categorical (its values' order would be that of
    first appearance among the rows with an outcome: the caller counts the cell table
    instead)."""
    if not isinstance(series.dtype, pd.CategoricalDtype):
        return None
    codes = series.cat.codes.to_numpy()
    if known is not None:
        codes = codes.take(known)
    values = [str(c) for c in series.cat.categories]
    if len(codes) and codes.min() < 0:
        if MISSING_VALUE not in values:
            values.append(MISSING_VALUE)
        codes = np.where(codes < 0, values.index(MISSING_VALUE), codes)
    return codes, values


def _mixed_radix(codes: Sequence[np.ndarray], sizes: Sequence[int], last: np.ndarray | None,
                 g: int, n: int) -> np.ndarray:
    """One key per row: the codes as mixed-radix digits (the first most significant),
    then ``last`` (the cluster's column, radix ``g``) as the fastest digit; int32 when
    every key fits, computed in place."""
    total = math.prod(sizes) * (g if last is not None else 1)
    key = np.zeros(n, dtype=np.int32 if total < 2**31 else np.int64)
    for c, size in zip(codes, sizes, strict=True):
        key *= size
        key += c
    if last is not None:
        key *= g
        key += last
    return key


def _counted(key: np.ndarray, hits: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and deviating rows (``hits``: their positions) per key, ``total`` keys."""
    return np.bincount(key, minlength=total), np.bincount(key.take(hits), minlength=total)


def cluster_grid(rows: pd.DataFrame, factors: Sequence[str], cluster: str,
                 cells: pd.DataFrame | None = None, *, coded: ClusterCodes | None = None,
                 max_level: int | None = None) -> ClusterGrid | None:
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
        or None: then the grid counts it from the rows' codes
        (:meth:`ClusterGrid.cell_table`) when every factor is categorical (the design
        applied), else by :func:`analysis.cell_counts.frame_cell_table`. Its categories
        are the grid's values, so the subgroup table built from it indexes the grid by
        its own codes.
    coded
        :func:`cluster_lines` of ``rows`` and ``cluster``, when the caller has it: the
        cluster column is then not factorised again.
    max_level
        The highest subgroup level: every combination of that many factors is a
        marginal of one of the grid's parts (:func:`_cover`). None: the default of
        :func:`analysis.subgroups.subgroups` (2, or 1 with a single factor); a level out
        of range (which it refuses): every factor, one part.

    Returns
    -------
    ClusterGrid or None
        None when ``cluster`` is a factor, an outcome is neither 0 nor 1, or a part
        would exceed ``max(GRID_LIMIT, GRID_PER_ROW * rows)`` entries.
    """
    factors = list(factors)
    if cluster in factors or DEVIATION not in rows.columns or cluster not in rows.columns:
        return None
    if coded is None:
        row_line, clabels = factor_codes(rows[cluster])
        line_label = np.arange(len(clabels))
    else:  # the lines' codes (first appearance, as the rows') composed with each row's line
        row_line = coded.codes
        line_label, clabels = factor_codes(coded.lines[cluster])
    dev = rows[DEVIATION].to_numpy(dtype=float)
    known = np.isnan(dev)
    known = None if not known.any() else np.flatnonzero(~known)
    if known is not None:
        dev, row_line = dev.take(known), row_line.take(known)
    deviating = dev == 1
    if not (deviating | (dev == 0)).all():  # fractional outcomes: counted as cells
        return None
    own = [_known_codes(rows[f], known) for f in factors]
    if cells is None and any(c is None for c in own):
        cells = frame_cell_table(rows, factors)
    if cells is None:
        codes, values = [c for c, _ in own], [v for _, v in own]
    else:
        values = [factor_codes(cells[f])[1] for f in factors]
        codes = []
        for f, vals, mine in zip(factors, values, own, strict=True):
            if mine is None:
                c, labels = factor_codes(rows[f])
                c = c if known is None else c.take(known)
            else:
                c, labels = mine
            if labels != vals:  # the cell table's values in another order
                where = {v: i for i, v in enumerate(vals)}
                c = np.array([where.get(v, -1) for v in labels], dtype=np.int64)[c]
                if (c < 0).any():
                    return None
            codes.append(c)
    hits = np.flatnonzero(deviating)
    return _assembled(cluster, factors, values, codes, clabels, (line_label, row_line),
                      lambda key, total: _counted(key, hits, total), max_level,
                      max(GRID_LIMIT, GRID_PER_ROW * len(rows)), len(rows) >= 2**31, cells,
                      lambda: frame_cell_table(rows, factors))


def cell_grid(cells: pd.DataFrame, factors: Sequence[str], cluster: str, *,
              max_level: int | None = None) -> ClusterGrid | None:
    """The :class:`ClusterGrid` of a cell table over the factors and the cluster (an
    engine's fine cell table, the app's cached cells, a cell table counted from rows the
    row grid cannot take): the counts :func:`cluster_grid` gives for its rows, summed by
    weighted bincounts of the cells' codes (:func:`analysis.values.factor_codes`, as
    :func:`analysis.subgroups.subgroup_counts` codes the factors). A part too large to
    hold densely makes the grid sparse (:attr:`ClusterGrid.units`): each factor
    combination's (subgroup, cluster) pairs are counted when asked. None when the cluster
    or the deviations are not columns of ``cells``."""
    factors = list(factors)
    if cluster not in cells.columns or DEVIATIONS not in cells.columns:
        return None
    n_w = cells[N].to_numpy(dtype=float)
    d_w = cells[DEVIATIONS].to_numpy(dtype=float)
    whole = np.array_equal(d_w, np.rint(d_w)) and np.array_equal(n_w, np.rint(n_w))
    codes, values = zip(*(factor_codes(cells[f]) for f in factors), strict=True)
    ccodes, clabels = factor_codes(cells[cluster])

    def count(key: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
        sums = (np.bincount(key, weights=w, minlength=total) for w in (n_w, d_w))
        return tuple(np.rint(x).astype(np.int64) if whole else x for x in sums)

    return _assembled(cluster, factors, list(values), list(codes), clabels,
                      (np.arange(len(clabels)), ccodes), count, max_level,
                      max(GRID_LIMIT, GRID_PER_ROW * len(cells)), False, None,
                      lambda: frame_cell_table(cells, factors), weights=n_w, sparse=(n_w, d_w))


def table_codes(column: pd.Series, values: list[str]) -> np.ndarray:
    """Codes of a subgroup table's factor column over ``values`` (-1 where the subgroup
    does not fix the factor): the categorical's own codes when its categories are
    ``values`` (a table from :func:`analysis.subgroups.subgroup_counts` on the same
    cells), else by value."""
    if isinstance(column.dtype, pd.CategoricalDtype) and \
            [str(c) for c in column.cat.categories] == values:
        return column.cat.codes.to_numpy(dtype=np.int64)
    text = column.astype(object).where(column.notna(), None)
    return pd.Categorical([None if v is None else str(v) for v in text],
                          categories=values).codes.astype(np.int64)


def _assembled(cluster, factors, values, codes, clabels, lines, count, max_level, limit,
               too_many, cells, fallback, *, weights=None, sparse=None) -> ClusterGrid | None:
    """The grid's parts and cell table from the units' codes (rows, or cells with
    ``weights`` = their rows): ``lines`` = (each line's label code, each unit's line),
    ``count(key, total)`` the rows and deviations per key. When a part would exceed
    ``limit`` entries (or there are ``too_many`` units): None, or with ``sparse`` (the
    units' rows and deviations) a sparse grid."""
    line_label, unit_line = lines
    sizes = [max(len(v), 1) for v in values]
    # clusters in the sorted order of their labels, as every engine orders them
    per_line = np.bincount(unit_line, weights=weights, minlength=len(line_label))
    per = np.bincount(line_label, weights=per_line, minlength=len(clabels))
    order = sorted(np.flatnonzero(per).tolist(), key=lambda i: str(clabels[i]))
    column = np.full(len(clabels), -1, dtype=np.int32)
    column[order] = np.arange(len(order))
    g = max(len(order), 1)
    level = (min(2, len(factors)) if max_level is None  # the subgroups' default level
             else max_level if isinstance(max_level, (int, np.integer))
             and 1 <= max_level <= len(factors) else len(factors))
    covered = _cover(sizes, int(level), g)
    ccol = column[line_label].take(unit_line)  # units without rows: -1, weight 0
    ccol[ccol < 0] = 0
    units = None
    if too_many or any(math.prod(sizes[j] for j in p) * g > limit for p in covered):
        if sparse is None:
            return None
        covered, units = [()], (codes, ccol, *sparse)  # parts: the clusters' totals
    parts = {}
    for p in covered:
        shape = (*(sizes[j] for j in p), g)
        key = _mixed_radix([codes[j] for j in p], shape[:-1], ccol, g, len(ccol))
        parts[p] = tuple(t.reshape(shape) for t in count(key, math.prod(shape)))
    if cells is None and math.prod(sizes) > limit:
        cells = fallback() if fallback is not None else None
        if cells is None:
            return None
    if cells is None:  # every factor's codes: the cell table, observed cells in code order
        n, d = count(_mixed_radix(codes, sizes, None, 1, len(unit_line)), math.prod(sizes))
        flat = np.flatnonzero(n)
        at = np.unravel_index(flat, sizes)
        cells = pd.DataFrame({
            f: pd.Categorical.from_codes(c, categories=v, ordered=True)
            for f, c, v in zip(factors, at, values, strict=True)})
        cells[N] = n[flat]
        cells[DEVIATIONS] = d[flat]
    return ClusterGrid(cluster, [str(clabels[i]) for i in order], factors, values, parts,
                       cells, units)
