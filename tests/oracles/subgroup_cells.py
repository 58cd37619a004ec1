"""The subgroups' per-(subgroup, cluster) counts through a factors x cluster cell table:
the path :mod:`analysis.subgroups` took before every clustered count went through the
grid of :mod:`analysis.subgroup_codes` (session 11). The tests swap it in for the grid
(:class:`CellPathGrid`) and compare the two paths' tables, notes and design effects."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from analysis.columns import DEVIATIONS, N
from analysis.subgroup_codes import table_codes
from analysis.subgroups import _DENSE_LIMIT, _DenseMarginals
from analysis.values import combine_codes, factor_codes

#: ... a grouping with at most this many entries per cell is counted with bincount.
_DENSE_PER_CELL = 4
#: Subgroups x clusters per dense block.
_BLOCK = 2_000_000


class CellPathGrid:
    """What :func:`analysis.subgroup_codes.cell_grid` returns, from the old path: the
    blocks of a factors x cluster cell table (:func:`cell_blocks`)."""

    def __init__(self, cells: pd.DataFrame, factors: Sequence[str], cluster: str):
        from analysis.cell_counts import frame_cell_table

        self.cells, self.factors, self.cluster = cells, list(factors), cluster
        self.coarse = frame_cell_table(cells, self.factors)
        ccodes, labels = factor_codes(cells[cluster])
        present = np.bincount(ccodes, weights=cells[N].to_numpy(float), minlength=len(labels))
        self.labels = sorted(str(labels[i]) for i in np.flatnonzero(present))

    @property
    def g(self) -> int:
        return len(self.labels)

    def cell_table(self) -> pd.DataFrame:
        return self.coarse

    def cluster_frame(self) -> pd.DataFrame:
        return self.cells

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        return self._blocks(self.coarse.head(0))[:2]

    def blocks(self, table: pd.DataFrame, block: int = _BLOCK):
        return self._blocks(table)[2]

    def _blocks(self, table):
        return cell_blocks(self.cells, self.factors, table, self.cluster)


def cell_blocks(cells: pd.DataFrame, factors: list[str], table: pd.DataFrame, cluster: str
                 ) -> tuple[np.ndarray, np.ndarray,
                            Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Rows and deviations per cluster (clusters in the sorted order of their labels)
    and the blocks ``(rows, a, n)`` of :func:`cluster_robust_ld` from a factors x cluster
    cell table (:func:`per_cluster_counts`)."""
    ccodes, labels = factor_codes(cells[cluster])
    order = sorted(range(len(labels)), key=lambda i: str(labels[i]))
    canon = np.empty(max(len(labels), 1), dtype=np.int64)
    canon[order] = np.arange(len(order))
    t_n = np.bincount(canon[ccodes], weights=cells[N].to_numpy(float), minlength=len(labels))
    t_d = np.bincount(canon[ccodes], weights=cells[DEVIATIONS].to_numpy(float),
                      minlength=len(labels))
    present = t_n > 0
    t_n, t_d = t_n[present], t_d[present]
    column = np.cumsum(present) - 1  # canonical code -> column among present clusters
    g = len(t_n)
    size = len(table)
    step = max(1, _BLOCK // max(g, 1))

    def blocks() -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        s, gc, a_c, n_c = per_cluster_counts(cells, factors, table, column[canon[ccodes]], g)
        by_row = np.argsort(s, kind="stable")
        bounds = np.searchsorted(s[by_row], np.arange(0, size + step, step))
        for b, lo in enumerate(range(0, size, step)):
            hi = min(lo + step, size)
            rows = by_row[bounds[b]:bounds[min(b + 1, len(bounds) - 1)]]
            a = np.zeros((hi - lo, g))
            n = np.zeros((hi - lo, g))
            a[s[rows] - lo, gc[rows]] = a_c[rows]
            n[s[rows] - lo, gc[rows]] = n_c[rows]
            yield np.arange(lo, hi), a, n

    return t_n, t_d, blocks()


def per_cluster_counts(cells: pd.DataFrame, factors: list[str], table: pd.DataFrame,
                        cluster_column: np.ndarray, g: int
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows and deviations of each subgroup of ``table`` in each cluster, by integer codes.

    ``cluster_column`` holds each cell's cluster as a column 0..g-1 (cells without rows
    are skipped). For each factor combination of ``table`` one key per cell,
    ``cluster * (combinations) + mixed-radix code of the subgroup``, is counted with
    ``bincount`` (``unique`` past :data:`_DENSE_LIMIT`), or, when the whole grid of
    clusters x factor values has at most :data:`_DENSE_LIMIT` entries, its marginals
    are summed from one dense table (:class:`_DenseMarginals`). The subgroups are matched
    to ``table``'s rows by the same integer key: no labels are built or compared.

    Returns
    -------
    (s, gc, a_c, n_c)
        One entry per (subgroup, cluster) pair with rows: the subgroup's position in
        ``table``, the cluster's column, its deviations and rows (floats, exact counts).
    """
    n_w = cells[N].to_numpy(float)
    d_w = cells[DEVIATIONS].to_numpy(float)
    keep = n_w > 0
    coded = [factor_codes(cells[f]) for f in factors]
    sizes = [max(len(v), 1) for _, v in coded]
    if keep.all():  # no copies (a clustered cell table of millions of cells: ~40 B each)
        cell_codes = [c for c, _ in coded]
    else:
        cell_codes = [c[keep] for c, _ in coded]
        n_w, d_w, cluster_column = n_w[keep], d_w[keep], cluster_column[keep]
    tcodes = [table_codes(table[f], v) for f, (_, v) in zip(factors, coded, strict=True)]
    pattern = np.zeros(len(table), dtype=np.int64)
    for j, c in enumerate(tcodes):
        pattern |= (c >= 0).astype(np.int64) << j
    dense = (_DenseMarginals([cluster_column, *cell_codes], [max(g, 1), *sizes], [n_w, d_w])
             if max(g, 1) * math.prod(sizes) <= _DENSE_LIMIT else None)
    parts = []
    for pat in np.unique(pattern):
        rows = np.flatnonzero(pattern == pat)
        js = [j for j in range(len(factors)) if pat >> j & 1]
        sz = [sizes[j] for j in js]
        width = math.prod(sz)
        tkey = combine_codes([tcodes[j][rows] for j in js], sz, n=len(rows))
        if dense is not None:  # the cluster x factors grid fits: sums of its marginals
            nn, dd = (t.reshape(-1) for t in dense.table((0, *(j + 1 for j in js))))
            where = np.flatnonzero(nn)
            nn, dd = nn[where], dd[where]
        elif width * g <= max(_DENSE_LIMIT, _DENSE_PER_CELL * len(n_w)):
            key = combine_codes([cluster_column, *(cell_codes[j] for j in js)],
                                [max(g, 1), *sz], n=len(n_w))
            nn = np.bincount(key, weights=n_w, minlength=width * g)
            where = np.flatnonzero(nn)
            nn, dd = nn[where], np.bincount(key, weights=d_w, minlength=width * g)[where]
        else:
            key = combine_codes([cluster_column, *(cell_codes[j] for j in js)],
                                [max(g, 1), *sz], n=len(n_w))
            where, inverse = np.unique(key, return_inverse=True)
            inverse = inverse.reshape(-1)
            nn = np.bincount(inverse, weights=n_w, minlength=len(where))
            dd = np.bincount(inverse, weights=d_w, minlength=len(where))
        column, skey = where // width, where % width
        by_key = np.argsort(tkey, kind="stable")
        pos = np.minimum(np.searchsorted(tkey[by_key], skey), max(len(rows) - 1, 0))
        found = tkey[by_key][pos] == skey
        parts.append((rows[by_key[pos[found]]], column[found], dd[found], nn[found]))
    if not parts:
        return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    s, gc, a_c, n_c = (np.concatenate([p[i] for p in parts]) for i in range(4))
    return s.astype(np.int64), gc.astype(np.int64), a_c.astype(float), n_c.astype(float)




def design_effects(cells: pd.DataFrame, factors: Sequence[str], table: pd.DataFrame, *,
                   cluster: str) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`analysis.pooling.design_effects` from :func:`per_cluster_counts` (with a
    cluster), as it was before the grid."""
    size = len(table)
    ccodes, labels = factor_codes(cells[cluster])
    g = max(len(labels), 1)
    s, gc, a_c, n_c = per_cluster_counts(cells, list(factors), table, ccodes, g)
    t_c = np.bincount(ccodes, weights=cells[N].to_numpy(float), minlength=g)
    n = table[N].to_numpy(float)
    a = table[DEVIATIONS].to_numpy(float)
    p = a / n
    sum_n2 = np.bincount(s, weights=n_c * n_c, minlength=size)
    sum_tn = np.bincount(s, weights=n_c * t_c[gc], minlength=size)
    big_n = float(t_c.sum())
    outside = big_n - n
    with np.errstate(divide="ignore", invalid="ignore"):
        h = n_c / n[s]
        resid = a_c - p[s] * n_c
        robust = np.bincount(s, weights=np.where(h < 1, resid ** 2 / (1 - h), 0.0),
                             minlength=size) / n ** 2
        binomial = p * (1 - p) / n
        ratio = robust / binomial
        per_cluster = sum_n2 / n
        per_cluster_out = ((t_c ** 2).sum() - 2 * sum_tn + sum_n2) / outside
    clusters = np.bincount(s, minlength=size)
    usable = (clusters >= 2) & (binomial > 0) & (per_cluster > 1) & np.isfinite(ratio)
    x = per_cluster[usable] - 1
    rho = float(np.clip((x * (ratio[usable] - 1)).sum() / (x * x).sum(), 0.0, 1.0)
                if usable.any() and (x * x).sum() > 0 else 0.0)
    deff = 1 + (per_cluster - 1) * rho
    deff_out = np.where(outside > 0, 1 + (np.nan_to_num(per_cluster_out, nan=1.0) - 1) * rho,
                        1.0)
    return deff, deff_out, rho
