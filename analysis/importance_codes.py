"""Clustered factor importance from per-(cell, cluster) counts (issue 44, item 1).

The logit of :func:`analysis.importance.factor_importance` has no cluster term, so its
likelihood, estimates, information and likelihood-ratio tests depend on the rows only
through the counts of the *factor* cells (a few thousand), whatever the cluster. What the
cluster adds is the robust covariance, and that needs per-cluster sums only:

- the cluster scores ``u_g = sum_c x_c (k_cg - n_cg mu_c)`` (CR1 and CR2);
- each cluster's information ``I_g = sum_c n_cg mu_c (1 - mu_c) x_c x_c'`` (CR2, its
  Satterthwaite df and HTZ tests: :class:`analysis.clusters.SmallSampleCR2` works on
  ``I_g`` and ``u_g`` alone, p x p per cluster);
- which clusters hold rows of each column (``n_clusters``, "not estimable").

``n_cg`` / ``k_cg`` are the rows / deviations of factor cell ``c`` in cluster ``g``:
:class:`ClusterPairs`, one entry per observed (cell, cluster) pair, counted by integer
bincounts of ``cell code x G + cluster code`` (a dense grid when it is small, a sort
otherwise). Every sum above runs over these pairs with the cell's nonzero columns (an
indicator design has ``1 + factors`` of them per cell), so nothing of size pairs x p is
ever built. The previous path fitted the logit on the factors x cluster cell table
(~900k cells at 1M rows instead of ~14k) and formed ``I_g`` by a product per cluster; the
numbers are the same sums in another order (tests/analysis/test_importance_codes.py).
docs/importance.md, "Clustered fits".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ClusterMargins", "ClusterPairs", "cell_index", "cluster_information", "cluster_margins",
           "combo_pairs",
           "cluster_presence", "cluster_scores", "count_pairs", "pair_slots"]

#: A dense (cell x cluster) grid is used for the pair counts up to this many possible
#: pairs per row (else the keys are sorted).
_GRID_PER_ROW = 16


@dataclass(frozen=True)
class ClusterPairs:
    """Rows and deviations per observed (factor cell, cluster) pair.

    Attributes
    ----------
    cell
        Index of the pair's factor cell (into the cell arrays it belongs to).
    cluster
        The pair's cluster code, ``0 <= code < n_clusters``.
    n, k
        Rows and deviations of the pair (float).
    n_clusters
        Number of cluster codes (labels), present or not.
    """

    cell: np.ndarray
    cluster: np.ndarray
    n: np.ndarray
    k: np.ndarray
    n_clusters: int

    def keep_cells(self, mask: np.ndarray) -> ClusterPairs:
        """The pairs of the cells kept by ``mask`` (a boolean over the cells), re-indexed."""
        position = np.cumsum(mask) - 1
        kept = mask[self.cell]
        return ClusterPairs(position[self.cell[kept]], self.cluster[kept], self.n[kept],
                            self.k[kept], self.n_clusters)

    def merge_cells(self, inverse: np.ndarray, n_cells: int) -> ClusterPairs:
        """The pairs after cells were merged (``inverse``: old cell -> new cell)."""
        return count_pairs(inverse[self.cell], self.cluster, n_cells, self.n_clusters,
                           self.n, self.k)

    def used_clusters(self) -> np.ndarray:
        """The cluster codes with rows, sorted."""
        return np.flatnonzero(np.bincount(self.cluster, minlength=self.n_clusters) > 0)

    def cluster_index(self, clusters: np.ndarray) -> np.ndarray:
        """Each pair's position in ``clusters`` (sorted codes that include its own)."""
        if len(clusters) == self.n_clusters:
            return self.cluster
        lookup = np.full(self.n_clusters, -1, dtype=np.int64)
        lookup[clusters] = np.arange(len(clusters))
        return lookup[self.cluster]


def count_pairs(cell: np.ndarray, cluster: np.ndarray, n_cells: int, n_clusters: int,
                n: np.ndarray | None, k: np.ndarray) -> ClusterPairs:
    """Sum rows (weights ``n``, default 1 each) and deviations ``k`` per (cell, cluster).

    Returns
    -------
    ClusterPairs
        The pairs with at least one row, ordered by cluster then cell.
    """
    # cluster-major keys: the per-cluster sums below then write to one cluster's block
    # at a time (cache-friendly scatters)
    c = max(int(n_cells), 1)
    key = np.asarray(cluster, dtype=np.int64) * c + np.asarray(cell, dtype=np.int64)
    possible = c * max(int(n_clusters), 1)
    # the observed keys (marked on a grid when it is small, else sorted), then the sums
    # per observed pair: bincounts of length pairs, not of the whole grid (less memory to
    # fault in; the same additions in the same row order)
    present, inverse = cell_index(key, possible)
    del key  # (100M engine rows: 6.6M pairs, each array 53 MB at the peak)
    rows = np.bincount(inverse, weights=n, minlength=len(present))
    devs = np.bincount(inverse, weights=k, minlength=len(present))
    del inverse
    if n is not None and not (keep := rows > 0).all():  # no copy when every pair has rows
        present, rows, devs = present[keep], rows[keep], devs[keep]
    return ClusterPairs((present % c).astype(np.intp, copy=False), present // c,
                        rows.astype(float, copy=False), devs.astype(float, copy=False),
                        int(n_clusters))


def combo_pairs(codes: list[np.ndarray], sizes: list[int], cluster: np.ndarray,
                n_clusters: int, n: np.ndarray | None, k: np.ndarray
                ) -> tuple[np.ndarray, ClusterPairs, np.ndarray] | None:
    """:func:`count_pairs` straight from the rows' factor codes: the observed factor
    combinations (mixed-radix codes over ``sizes``, sorted) and their pairs, without
    first numbering the cells over the rows (issue 44). One key per row, ``cluster x
    combinations + combination`` (built in place in ``cluster``, which is overwritten),
    marked on a grid; the pairs come out in the same order (cluster, then cell) with the
    same sums in the same row order as :func:`count_pairs` gives. None when the grid
    would be too large (then the cells first, then :func:`count_pairs`).

    Returns
    -------
    (combos, ClusterPairs, combo)
        The combinations with rows (``n > 0``), the pairs (``cell`` indexes
        ``combos``) and each pair's combination (``combos[cell]``, for
        :func:`cluster_margins`).
    """
    m = math.prod(sizes)
    possible = m * max(int(n_clusters), 1)
    if possible > max(_GRID_PER_ROW * len(k), 1 << 20) or possible >= 2**62:
        return None
    key = cluster if cluster.dtype == np.int64 else cluster.astype(np.int64)
    for c, size in zip(codes, sizes, strict=True):  # Horner, in place: no temporaries
        key *= size
        key += c
    present = np.zeros(possible, dtype=bool)
    present[key] = True
    uniq = np.flatnonzero(present)
    del present
    # each pair's position, written only where a pair is (int32: half the pages to
    # touch), read into the intp array the bincounts take
    position = np.empty(possible, dtype=np.int32 if len(uniq) < 2**31 else np.intp)
    position[uniq] = np.arange(len(uniq), dtype=position.dtype)
    inverse = np.take(position, key).astype(np.intp, copy=False)  # take: faster than []
    del position, key
    rows = np.bincount(inverse, weights=n, minlength=len(uniq))
    devs = np.bincount(inverse, weights=k, minlength=len(uniq))
    del inverse
    if n is not None:
        keep = rows > 0
        uniq, rows, devs = uniq[keep], rows[keep], devs[keep]
    pair_cluster, combo = np.divmod(uniq, m)
    combos, cell = cell_index(combo, m)
    return combos, ClusterPairs(cell, pair_cluster, rows.astype(float, copy=False),
                                devs.astype(float, copy=False), int(n_clusters)), combo


def cell_index(key: np.ndarray, n_possible: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``key`` values (sorted) and each row's position among them: by marking
    the keys present when there are few possible ones (one pass, no sort), else
    ``np.unique``."""
    if n_possible > max(_GRID_PER_ROW * len(key), 1 << 20) or len(key) >= 2**31:
        uniq, inverse = np.unique(key, return_inverse=True)
        return uniq, inverse.reshape(-1)
    present = np.zeros(n_possible, dtype=bool)
    present[key] = True
    position = np.cumsum(present, dtype=np.int32) - 1
    return np.flatnonzero(present), np.take(position, key).astype(np.intp, copy=False)


def _slots(X: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray | None], int]:
    """Per cell its nonzero columns as slots: ``columns[a][c]`` is the a-th nonzero column
    of cell c (``p``, a dummy column, past its last), ``values[a][c]`` its entry (None when
    every entry is 1, as in an indicator design)."""
    m, p = X.shape
    rows, cols = np.nonzero(X)
    counts = np.bincount(rows, minlength=m)
    width = int(counts.max()) if len(counts) else 0
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(len(rows)) - start[rows]
    columns, values = [], []
    entries = X[rows, cols]
    ones = bool(np.all(entries == 1.0))
    for a in range(width):
        at = rank == a
        column = np.full(m, p, dtype=np.int64)
        column[rows[at]] = cols[at]
        columns.append(column)
        if ones:
            values.append(None)
        else:
            value = np.zeros(m)
            value[rows[at]] = entries[at]
            values.append(value)
    return columns, values, p


def _weighted(weights: np.ndarray, *factors: np.ndarray | None) -> np.ndarray:
    out = weights
    for f in factors:
        if f is not None:
            out = out * f
    return out


def pair_slots(X: np.ndarray, pairs: ClusterPairs
               ) -> tuple[list[np.ndarray], list[np.ndarray | None], int]:
    """:func:`_slots` of ``X`` read at each pair's cell: ``columns[a][i]`` the a-th nonzero
    column of pair i's cell, ``values[a][i]`` its entry (None: all 1). Computed once for
    :func:`cluster_scores` and :func:`cluster_information` of the same fit."""
    columns, values, p = _slots(X)
    return ([column[pairs.cell] for column in columns],
            [None if value is None else value[pairs.cell] for value in values], p)


def cluster_scores(X: np.ndarray, pairs: ClusterPairs, mu: np.ndarray,
                   clusters: np.ndarray, *, slots: tuple | None = None) -> np.ndarray:
    """(G, p): the score sums ``u_g = sum_c x_c (k_cg - n_cg mu_c)`` of the clusters
    ``clusters`` (sorted codes; the rows of the result follow them). ``slots``: the
    :func:`pair_slots` of ``X`` and ``pairs`` when already computed."""
    at, entries, p = slots if slots is not None else pair_slots(X, pairs)
    g = len(clusters)
    index = pairs.cluster_index(clusters) * (p + 1)
    residual = pairs.k - pairs.n * mu[pairs.cell]
    out = np.zeros(g * (p + 1))
    for column, value in zip(at, entries, strict=True):
        out += np.bincount(index + column, weights=_weighted(residual, value),
                           minlength=g * (p + 1))
    return out.reshape(g, p + 1)[:, :p]


def cluster_information(X: np.ndarray, pairs: ClusterPairs, weights: np.ndarray,
                        clusters: np.ndarray, *, slots: tuple | None = None) -> np.ndarray:
    """(G, p, p): ``I_g = sum_c n_cg w_c x_c x_c'`` (``weights`` ``w_c`` per cell, e.g.
    ``mu (1 - mu)``), one bincount per pair of slots (a cell's nonzero columns);
    ``slots`` as in :func:`cluster_scores`."""
    at, entries, p = slots if slots is not None else pair_slots(X, pairs)
    g = len(clusters)
    q = p + 1
    index = pairs.cluster_index(clusters) * (q * q)
    m = pairs.n * weights[pairs.cell]
    # an indicator design with its intercept in slot 0 of every cell: I_g[0, j] is
    # I_g[j, j] (the same sum), so slot 0 pairs only with itself
    indicator = (bool(at) and all(e is None for e in entries)
                 and not np.any(at[0]))
    out = np.zeros(g * q * q)
    for a in range(len(at)):
        base = index + at[a] * q
        for b in range(a, a + 1 if indicator and a == 0 else len(at)):
            out += np.bincount(base + at[b], weights=_weighted(m, entries[a], entries[b]),
                               minlength=g * q * q)
    cube = out.reshape(g, q, q)[:, :p, :p]
    if indicator:
        cube[:, 0, 1:] = np.einsum("gjj->gj", cube)[:, 1:]
    # a cell's slots hold its columns in increasing order, so slots a <= b filled the
    # upper triangle and the diagonal once: mirror the triangle
    full = cube + np.swapaxes(cube, 1, 2)
    diagonal = np.arange(p)
    full[:, diagonal, diagonal] = cube[:, diagonal, diagonal]
    return full


def cluster_presence(X: np.ndarray, pairs: ClusterPairs, clusters: np.ndarray) -> np.ndarray:
    """(G, p) bool: does cluster g hold rows where column j is not 0."""
    columns, _, p = _slots(X)
    g = len(clusters)
    index = pairs.cluster_index(clusters)
    counts = np.zeros(g * (p + 1))
    for column in columns:
        counts += np.bincount(index * (p + 1) + column[pairs.cell], weights=pairs.n,
                              minlength=g * (p + 1))
    return counts.reshape(g, p + 1)[:, :p] > 0


#: The per-cluster tables are used when the factor combinations number at most this many
#: (else the sparse pairs): each table is indexed through a lookup of this length.
MARGIN_CELLS = 1 << 20
#: Factor subsets are merged into one table while it has at most this many entries
#: (combinations x clusters: 4 MB of floats, so a bincount into it stays in cache; fewer,
#: larger tables measured faster than 1 MB ones: fewer passes over the rows).
TABLE_ENTRIES = 1 << 19
#: A table is never larger than this (nor than :data:`TABLE_PER_ROW` entries per row);
#: else the sparse pairs.
TABLE_LIMIT = 1 << 22
#: ... per row.
TABLE_PER_ROW = 8


@dataclass
class ClusterMargins:
    """The rows' factor combination and cluster codes, for per-cluster sums over factor
    subsets (issue 44): every sum the cluster-robust covariance needs of an indicator
    design is a table of (values of a few factors) x cluster, and a few such tables,
    each small enough that a bincount over the rows into it stays in cache, cover them
    all. No (combination x cluster) cube and no list of pairs is built.

    Attributes
    ----------
    combo
        Each row's factor combination: its mixed-radix code over ``sizes`` (the first
        factor the most significant digit).
    cluster
        Each row's cluster, ``0 <= code < n_clusters`` (the clusters with rows, in code
        order).
    n, k
        Each row's weight (None: 1 each; the rows of a (cell, cluster) pair) and deviations.
    sizes
        The factors' numbers of values.
    cell
        Each model cell's combination code (sorted: the observed combinations).
    n_clusters
        The clusters with rows.
    """

    combo: np.ndarray
    cluster: np.ndarray
    n: np.ndarray | None
    k: np.ndarray
    sizes: tuple[int, ...]
    cell: np.ndarray
    n_clusters: int

    def used_clusters(self) -> np.ndarray:
        """The cluster codes with rows: all of them."""
        return np.arange(self.n_clusters)

    def pairs(self) -> ClusterPairs:
        """The same counts as :class:`ClusterPairs` (ordered by cluster then cell)."""
        position = np.zeros(math.prod(self.sizes), dtype=np.intp)
        position[self.cell] = np.arange(len(self.cell))
        return count_pairs(position[self.combo], self.cluster, len(self.cell),
                           self.n_clusters, self.n, self.k)

    def keep_cells(self, mask: np.ndarray) -> ClusterPairs:
        """:meth:`ClusterPairs.keep_cells` (cells dropped: the sparse pairs from here)."""
        return self.pairs().keep_cells(mask)

    def merge_cells(self, inverse: np.ndarray, n_cells: int) -> ClusterPairs:
        """:meth:`ClusterPairs.merge_cells` (cells merged: the sparse pairs from here)."""
        return self.pairs().merge_cells(inverse, n_cells)

    def sums(self, parts: list[tuple[tuple[int, int], ...]], mu: np.ndarray, *,
             information: bool) -> tuple[np.ndarray, np.ndarray | None] | None:
        """The cluster scores ``u_g`` (G, p) and, with ``information``, the cluster
        informations ``I_g`` (G, p, p) with the weights ``mu (1 - mu)`` of an indicator
        design whose column j is 1 where the factors (axes) of ``parts[j]`` take its
        codes (``()``: the intercept). ``mu`` per model cell. None when a table would be
        too large (interactions of many values: the caller takes the sparse pairs).

        ``u_g[j]`` is the sum of ``k - n mu`` over cluster g's rows where column j is 1:
        the table of those residuals over column j's factors x cluster, read at its
        codes; ``I_g[j, l]`` the sum of ``n w`` where both columns are 1, read from the
        table over the union of their factors (0 when they fix one factor at two
        codes). Each table is a marginal of one counted by a bincount over the rows
        (:class:`_Tables`).
        """
        p = len(parts)
        codes = {}
        for j in range(p):
            for m in range(j, p if information else j + 1):
                union = dict(parts[j])
                if all(union.get(a, c) == c for a, c in parts[m]):
                    union.update(parts[m])
                    codes[j, m] = union
        tables = _Tables.plan(self, {tuple(sorted(u)) for u in codes.values()})
        if tables is None:
            return None
        per_cell = np.zeros(math.prod(self.sizes))
        per_cell[self.cell] = mu
        at = np.take(per_cell, self.combo)  # mu of each row's cell
        residual = self.k - (at if self.n is None else self.n * at)
        np.multiply(at, 1 - at, out=at)
        if self.n is not None:
            at *= self.n
        singles = [tuple(sorted(a for a, _ in part)) for part in parts]
        read, weighted = tables.readers(
            [residual, at], [singles, [tuple(sorted(u)) for u in codes.values()]])
        scores = np.empty((self.n_clusters, p))
        for j, part in enumerate(parts):
            scores[:, j] = read(dict(part))
        if not information:
            return scores, None
        infos = np.zeros((self.n_clusters, p, p))
        for (j, m), union in codes.items():
            infos[:, j, m] = infos[:, m, j] = weighted(union)
        return scores, infos

    def presence(self, parts: list[tuple[tuple[int, int], ...]]) -> np.ndarray | None:
        """(G, p) bool: does cluster g hold rows where column j is 1 (None: too large)."""
        tables = _Tables.plan(self, {tuple(sorted(a for a, _ in part)) for part in parts})
        if tables is None:
            return None
        (read,) = tables.readers([np.ones(len(self.k)) if self.n is None else self.n],
                                 [list(tables.home)])
        return np.column_stack([read(dict(part)) > 0 for part in parts])


@dataclass
class _Tables:
    """Per-cluster tables over factor subsets of :class:`ClusterMargins`' rows: the
    subsets merged greedily (the largest first) into tables of at most
    :data:`TABLE_ENTRIES` entries; each table's key (its factors' mixed-radix code x G +
    cluster) looked up from the row's combination, then one bincount per weights."""

    rows: ClusterMargins
    tables: list[tuple[int, ...]]
    home: dict[tuple[int, ...], int]

    @classmethod
    def plan(cls, rows: ClusterMargins, subsets: set[tuple[int, ...]]) -> _Tables | None:
        """None when a subset's table would exceed :data:`TABLE_LIMIT` (and
        :data:`TABLE_PER_ROW` entries per row)."""
        g, sizes = rows.n_clusters, rows.sizes

        def size(axes) -> int:
            return math.prod(sizes[a] for a in axes)

        if max(size(t) for t in subsets) * g > max(TABLE_LIMIT, TABLE_PER_ROW * len(rows.k)):
            return None
        tables: list[tuple[int, ...]] = []
        for subset in sorted(subsets, key=lambda t: (-size(t), t)):
            if any(set(subset) <= set(t) for t in tables):
                continue
            grown = [(size(set(t) | set(subset)), i) for i, t in enumerate(tables)]
            grown = [(n, i) for n, i in grown if n * g <= TABLE_ENTRIES]
            if grown:
                i = min(grown)[1]
                tables[i] = tuple(sorted(set(tables[i]) | set(subset)))
            else:
                tables.append(subset)
        home = {subset: min((i for i, t in enumerate(tables) if set(subset) <= set(t)),
                            key=lambda i: size(tables[i])) for subset in subsets}
        return cls(rows, tables, home)

    def _key(self, i: int, out: np.ndarray | None = None) -> np.ndarray:
        """Factor-major keys (the factors' code x G + cluster), so that the bincount lays
        the table out as (factors, cluster) with no transposed copy; each entry sums the
        same values in the same (row) order as with any other layout, so the same bits.
        ``out``: an int64 buffer of the rows' length, reused from table to table (no
        fresh pages to touch); the key is written into it."""
        rows, axes = self.rows, self.tables[i]
        digits = np.unravel_index(np.arange(math.prod(rows.sizes)), rows.sizes)
        lookup = np.zeros(math.prod(rows.sizes), dtype=np.int64)
        for a in axes:
            lookup = lookup * rows.sizes[a] + digits[a]
        lookup *= rows.n_clusters
        key = out if out is not None else np.empty(len(rows.combo), np.int64)
        np.take(lookup, rows.combo, out=key)
        key += rows.cluster
        return key

    def readers(self, weights: list[np.ndarray], subsets: list[list[tuple[int, ...]]]):
        """One reader ``codes -> G-vector`` per weights: the sums of those weights per
        cluster over the rows whose factors take ``codes`` (a dict axis -> code, its
        axes one of that weights' ``subsets``), from the subset's table summed over its
        other factors (cached). The tables are counted one at a time (its key built into
        the same two buffers, bincounted for every weights that needs it)."""
        g, sizes = self.rows.n_clusters, self.rows.sizes
        need = [{self.home[t] for t in wanted} for wanted in subsets]
        counted: list[dict[int, np.ndarray]] = [{} for _ in weights]
        buffer = np.empty(len(self.rows.combo), np.int64)
        for i, table in enumerate(self.tables):
            if not any(i in n for n in need):
                continue
            shape = [sizes[a] for a in table]
            key = self._key(i, buffer)
            for w, n, out in zip(weights, need, counted, strict=True):
                if i in n:  # counted straight into the (factors, cluster) layout
                    out[i] = np.bincount(key, weights=w,
                                         minlength=math.prod(shape) * g).reshape(*shape, g)
        del key, buffer
        return [self._reader(out) for out in counted]

    def _reader(self, counted: dict[int, np.ndarray]):
        marginal: dict[tuple[int, ...], np.ndarray] = {}

        def read(codes: dict[int, int]) -> np.ndarray:
            axes = tuple(sorted(codes))
            if axes not in marginal:
                i = self.home[axes]
                drop = tuple(x for x, a in enumerate(self.tables[i]) if a not in axes)
                marginal[axes] = counted[i].sum(axis=drop) if drop else counted[i]
            return marginal[axes][tuple(codes[a] for a in axes)]

        return read


def cluster_margins(pairs: ClusterPairs, combos: np.ndarray, sizes: list[int], *,
                    pair_combos: np.ndarray | None = None) -> ClusterMargins | None:
    """The :class:`ClusterMargins` of ``pairs`` (each pair one weighted row) whose cells
    have the factor combinations ``combos`` (mixed-radix codes over ``sizes``, sorted);
    None when the combinations, or a table of two factors' values x clusters, would be
    too many. Counted from the pairs (not the rows), the sums are the same float
    additions in the same order whether the pairs come from rows or from an engine's
    cell table (the engines print the same bytes)."""
    m = math.prod(sizes)
    used = pairs.used_clusters()
    g = max(len(used), 1)
    two = sorted(sizes)[-2:]
    if m > MARGIN_CELLS or math.prod(two) * g > max(TABLE_LIMIT, TABLE_PER_ROW * len(pairs.n)):
        return None
    if pair_combos is None:  # each pair's combination (known to :func:`combo_pairs`)
        pair_combos = np.asarray(combos, dtype=np.int64)[pairs.cell]
    return ClusterMargins(pair_combos,
                          pairs.cluster_index(used), pairs.n, pairs.k, tuple(sizes),
                          np.asarray(combos, dtype=np.int64), len(used))
