"""The per-(subgroup, cluster) counts of the cluster-robust subgroups by integer codes
(issue 44.1; the grid of :mod:`analysis.subgroup_codes`, dense and sparse, and the old
cell path kept as the oracle in ``tests/oracles/subgroup_cells.py``) equal the label path
they replace: ``subgroup_counts(within=cluster)`` and a lookup of every row by its
subgroup label."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import analysis.subgroup_codes as sc
import analysis.subgroups as sg
import tests.oracles.subgroup_cells as oracle
from analysis.cell_counts import _group_keys
from analysis.cells import cell_table
from analysis.clusters import resolve_cluster
from analysis.columns import DEVIATIONS, LEVEL, SUBGROUP, N
from analysis.values import factor_codes

FACTORS = ["model", "style", "gender", "age"]


def moderate_rows(rows: int = 20_000, templates: int = 37, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = {"model": 3, "style": 4, "gender": 3, "age": 6}
    out = {f: np.array([f"{f}{i}" for i in range(k)], dtype=object)[rng.integers(0, k, rows)]
           for f, k in sizes.items()}
    out["gender"][rng.random(rows) < 0.01] = None  # a missing value: "(missing)"
    out["age"] = pd.Categorical(out["age"], categories=[f"age{i}" for i in range(8)])  # unused
    t = rng.integers(0, templates, rows)
    out["template"] = np.array([f"t{i:02d}" for i in range(templates)], dtype=object)[t]
    p = 1 / (1 + np.exp(-(-1 + rng.normal(0, 0.6, templates)[t])))
    out["deviation"] = (rng.random(rows) < p).astype(float)
    out["deviation"][rng.random(rows) < 0.02] = np.nan  # unknown outcomes are not counted
    return pd.DataFrame(out)


def label_path(cells: pd.DataFrame, factors: list[str], table: pd.DataFrame,
               cluster: str) -> set[tuple[int, str, float, float]]:
    """The counts as the previous implementation found them (label strings)."""
    within = cluster
    if cluster in factors:
        within = "__cluster_copy__"
        cells = cells.assign(**{within: cells[cluster]})
    levels = sorted({int(x) for x in table[LEVEL]})
    per = sg.subgroup_counts(cells, factors, levels=levels, within=within)
    position = pd.Series(np.arange(len(table)), index=table[SUBGROUP].to_numpy())
    s = position.loc[per[SUBGROUP].to_numpy()].to_numpy()
    return set(zip(s.tolist(), per[within].astype(str).tolist(),
                   per[DEVIATIONS].astype(float).tolist(), per[N].astype(float).tolist(),
                   strict=True))


def code_path(cells: pd.DataFrame, factors: list[str], table: pd.DataFrame,
              cluster: str, old: bool = False) -> set[tuple[int, str, float, float]]:
    """The pairs with rows from the grid's blocks (``old``: the oracle's cell path)."""
    if old:
        ccodes, labels = factor_codes(cells[cluster])
        n = np.bincount(ccodes, weights=cells[N].to_numpy(float), minlength=len(labels))
        order = sorted(lab for i, lab in enumerate(labels) if n[i] > 0)
        column = np.array([order.index(lab) if n[i] > 0 else -1
                           for i, lab in enumerate(labels)])
        s, gc, a, nn = oracle.per_cluster_counts(cells, factors, table, column[ccodes],
                                                 len(order))
        return set(zip(s.tolist(), [order[c] for c in gc], a.tolist(), nn.tolist(),
                       strict=True))
    grid = sc.cell_grid(cells, factors, cluster, max_level=int(table[LEVEL].max()))
    found = set()
    for rows, a, nn in grid.blocks(table):
        i, c = np.nonzero(nn)
        found |= set(zip(rows[i].tolist(), [grid.labels[j] for j in c], a[i, c].tolist(),
                         nn[i, c].tolist(), strict=True))
    return found


@pytest.mark.parametrize("factors,cluster,levels", [
    (FACTORS, "template", [1, 2]),
    (FACTORS, "template", [1, 2, 3, 4]),
    (FACTORS[:3], "template", [2, 3]),
    (FACTORS, "model", [1, 2]),  # the cluster is also a chosen factor
])
@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("old", [False, True])
def test_code_path_equals_label_path(monkeypatch, factors, cluster, levels, dense, old):
    rows = moderate_rows()
    cells = cell_table(rows, list(dict.fromkeys([*factors, "template"])))
    table = sg.subgroup_counts(cells, factors, levels=levels)
    if not dense:  # the sparse grid; the oracle's np.unique branch
        for m, name in ((sc, "GRID_LIMIT"), (sc, "GRID_PER_ROW"), (oracle, "_DENSE_LIMIT"),
                        (oracle, "_DENSE_PER_CELL")):
            monkeypatch.setattr(m, name, int(name == "_DENSE_LIMIT"))
    ours = code_path(cells, factors, table, cluster, old)
    if not dense and not old:
        assert sc.cell_grid(cells, factors, cluster).units is not None
    monkeypatch.undo()
    theirs = label_path(cells, factors, table, cluster)
    assert len(ours) == len(theirs) > len(table)
    assert ours == theirs


def test_table_with_other_categories_is_matched_by_value():
    rows = moderate_rows(5_000)
    cells = cell_table(rows, [*FACTORS, "template"])
    table = sg.subgroup_counts(cells, FACTORS, levels=[1, 2])
    other = table.copy()
    for f in FACTORS:  # plain strings instead of the cells' categoricals
        other[f] = other[f].astype(object)
    assert code_path(cells, FACTORS, other, "template") == \
        label_path(cells, FACTORS, table, "template")


def test_clustered_subgroups_unchanged_on_a_moderate_table():
    """The whole clustered table against one whose per-cluster counts come from the
    label path, fed to the same variance (every column exactly equal)."""
    rows = moderate_rows()
    cells = cell_table(rows, [*FACTORS, "template"])
    ours = sg.subgroups(cells, FACTORS, cluster="template", max_level=3)

    def by_labels(cells_, factors, table, cluster_column, g):
        found = sorted(label_path(cells_, factors, table, "template"))
        order = sorted({lab for _, lab, _, _ in found})
        return (np.array([x[0] for x in found], dtype=np.int64),
                np.array([order.index(x[1]) for x in found], dtype=np.int64),
                np.array([x[2] for x in found]), np.array([x[3] for x in found]))

    with pytest.MonkeyPatch.context() as m:
        m.setattr(oracle, "per_cluster_counts", by_labels)
        m.setattr(sc, "cell_grid", lambda c, f, cl, **k: oracle.CellPathGrid(c, f, cl))
        theirs = sg.subgroups(cells, FACTORS, cluster="template", max_level=3)
    pd.testing.assert_frame_equal(ours, theirs, check_exact=True)
    assert np.isfinite(ours["ci_low"]).sum() > 100


def groupby_choice(data: pd.DataFrame, cluster: str, rows=None):
    """resolve_cluster's previous count: a groupby on the values."""
    w = np.ones(len(data)) if rows is None else np.asarray(rows, float)
    values = data[cluster][w > 0]
    counts = pd.Series(w[w > 0]).groupby(values.to_numpy(), dropna=False).sum()
    return len(counts), bool((counts <= 1).all())


@pytest.mark.parametrize("column", [
    ["a", "b", "a", None, "b", None],
    pd.Categorical(["a", "b", "a", None, "a", "a"], categories=["a", "b", "z"]),
    pd.array(["x", "y", None, "x", "y", "y"], dtype="str"),
    [1.0, 2.0, np.nan, 1.0, 3.0, 3.0],
    ["a", "b", "c", "d", "e", "f"],
    ["a"] * 6,
])
def test_resolve_cluster_counts_as_before(column):
    data = pd.DataFrame({"c": column, N: [1, 2, 0, 3, 1, 1]})
    for rows in (None, data[N]):
        choice = resolve_cluster(data, "c", declared=True, rows=rows)
        g, singles = groupby_choice(data, "c", rows)
        if g < 2 or singles:
            assert choice.column is None and choice.notes
        else:
            assert (choice.column, choice.n_clusters) == ("c", g)


@pytest.mark.parametrize("possible,rows", [(1 << 10, 5_000), (60_000, 5_000), (79_000, 5_000),
                                           (3_000_000, 200_000)])
def test_group_keys_equal_unique(possible, rows):
    key = np.random.default_rng(possible).integers(0, possible, rows)
    uniq, inverse = _group_keys(key, possible)
    u2, i2 = np.unique(key, return_inverse=True)
    np.testing.assert_array_equal(uniq, u2)
    np.testing.assert_array_equal(inverse, i2.reshape(-1))
