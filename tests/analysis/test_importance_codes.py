"""Clustered importance from per-(cell, cluster) counts (issue 44, item 1:
``analysis/importance_codes.py``) = the previous path on the factors x cluster cell table,
and = statsmodels' row-level binomial GLM with ``cov_type="cluster"`` (CR1).

The previous path (the logit on the factors x cluster cell table, cluster scores and
informations per cluster from its cells) is this file's oracle: :func:`_split_cells`
replaces the per-(cell, cluster) counts by that cell table. Both compute the same sums
in another order, so every number agrees to rounding (1e-9 relative; the
likelihood-ratio refits stop at a log-likelihood gain of 1e-10, so their statistics
agree to ~1e-9 absolute). The per-cluster tables over factor subsets
(:class:`analysis.importance_codes.ClusterMargins`, the default) are also compared with
the sparse pairs (:func:`_pairs_only`) to 1e-12."""

from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import analysis.importance as imp
import analysis.importance_codes as codes_module
from analysis.columns import COEF, DF, EFFECT, N_CLUSTERS, P_VALUE, STD_ERR
from analysis.design import Design, Factor, Outcome, apply_design
from analysis.importance import NOT_ESTIMABLE, ImportanceRefusal, factor_importance
from analysis.importance_codes import (
    ClusterMargins,
    cluster_information,
    cluster_margins,
    cluster_presence,
    cluster_scores,
    combo_pairs,
    count_pairs,
)


def _split_cells(values, codes, n, k, cluster, n_clusters):
    """The previous path's cells: factor cells x cluster, aggregated (no pairs)."""
    return imp._Cells(values, codes, np.ones(len(k)) if n is None else n, k, cluster,
                      n_clusters).aggregate()


@contextlib.contextmanager
def _previous_path():
    paired, imp._paired_cells = imp._paired_cells, _split_cells
    try:
        yield
    finally:
        imp._paired_cells = paired


@contextlib.contextmanager
def _pairs_only():
    """The sparse (cell, cluster) pairs instead of the per-cluster tables."""
    limit, codes_module.MARGIN_CELLS = codes_module.MARGIN_CELLS, -1
    try:
        yield
    finally:
        codes_module.MARGIN_CELLS = limit


def _table(rows: int, templates: int, seed: int, *, rare: int = 0) -> tuple[pd.DataFrame,
                                                                             Design]:
    """Rows with 3 factors, a template effect; ``rare`` templates hold the only rows of
    ``style = s3`` (a value on 1 or 2 clusters: not estimable)."""
    rng = np.random.default_rng(seed)
    sizes = {"model": 3, "style": 4, "gender": 2}
    tmpl = rng.integers(0, templates, rows)
    eta = -0.5 + rng.normal(0, 0.5, templates)[tmpl]
    cols = {}
    for name, size in sizes.items():
        codes = rng.integers(0, size, rows)
        if name == "style":
            codes = np.where(tmpl < rare, 3, rng.integers(0, size - 1 if rare else size, rows))
        eta += rng.normal(0, 0.4, size)[codes]
        cols[name] = np.array([f"{name}{i}" for i in range(size)])[codes]
    cols["template"] = np.array([f"t{i:03d}" for i in range(templates)])[tmpl]
    cols["deviation"] = (rng.random(rows) < 1 / (1 + np.exp(-eta))).astype(float)
    design = Design(tuple(Factor(n, "domain", tuple(f"{n}{i}" for i in range(s)), f"{n}0")
                          for n, s in sizes.items()), Outcome("deviation"),
                    cluster="template")
    return apply_design(pd.DataFrame(cols), design), design


def _both(data, design, **kw):
    with _previous_path():
        old = factor_importance(data, design, **kw)
    return factor_importance(data, design, **kw), old


def _same(new, old, rtol=1e-9, atol=2e-9):
    assert new.n_cells == old.n_cells and new.n_clusters == old.n_clusters
    assert new.notes == old.notes
    assert list(new.terms.columns) == list(old.terms.columns)
    for frame_new, frame_old in ((new.terms, old.terms), (new.factor_tests, old.factor_tests)):
        num = frame_old.select_dtypes("number").columns
        a = frame_new[num].to_numpy(dtype=float)
        b = frame_old[num].to_numpy(dtype=float)
        assert np.array_equal(np.isnan(a), np.isnan(b))
        ok = ~np.isnan(b)
        assert np.allclose(a[ok], b[ok], rtol=rtol, atol=atol)
        other = [c for c in frame_old.columns if c not in num]
        assert frame_new[other].equals(frame_old[other])
    assert new.log_likelihood == pytest.approx(old.log_likelihood, rel=1e-12)


@pytest.mark.parametrize("small_sample", ["cr2", "cr1", "none"])
@pytest.mark.parametrize("seed", [1, 2])
def test_pairs_path_equals_the_cluster_cell_table_path(seed, small_sample):
    data, design = _table(4000, 25, seed)
    new, old = _both(data, design, small_sample=small_sample,
                     interactions=["model:gender"] if seed == 2 else ())
    _same(new, old)
    assert new.cluster == "template" and new.n_clusters == 25


@pytest.mark.parametrize("rare", [1, 2])
def test_a_value_on_one_or_two_clusters_is_not_estimable_on_both_paths(rare):
    data, design = _table(3000, 20, 7, rare=rare)
    new, old = _both(data, design)
    _same(new, old)
    row = new.terms.set_index("term").loc["style[style3]"]
    assert row[N_CLUSTERS] == rare
    if rare == 1:
        assert row[EFFECT] == NOT_ESTIMABLE and np.isnan(row[P_VALUE])
    else:  # 2 clusters: estimable only when its Satterthwaite df reaches the floor
        assert (row[EFFECT] == NOT_ESTIMABLE) == (row[DF] < 1)


def test_filters_exclusions_separation_and_a_cell_table_input():
    data, design = _table(3000, 15, 3)
    data = data.copy()
    data.loc[data["style"] == "style3", "deviation"] = 0.0  # separation
    data.loc[data.index[:40], "deviation"] = np.nan  # missing outcomes are left out
    for kw in ({"on_separation": "drop"}, {"on_separation": "merge"},
               {"exclude": {"style": ["style3"]}, "where": {"model": ["model0", "model1"]}}):
        _same(*_both(data, design, **kw))
    with pytest.raises(ImportanceRefusal) as new:
        factor_importance(data, design)
    with _previous_path(), pytest.raises(ImportanceRefusal) as old:
        factor_importance(data, design)
    assert str(new.value) == str(old.value) and new.value.reason == "separation"
    cells = (data.dropna(subset=["deviation"])
             .groupby(["model", "style", "gender", "template"], observed=True)["deviation"]
             .agg(n="size", deviations="sum").reset_index())
    kw = {"exclude": {"style": ["style3"]}}
    from_cells, _ = _both(cells, design, **kw)
    _same(from_cells, factor_importance(data, design, **kw))


def test_singular_design_is_refused_the_same_way():
    data, design = _table(2000, 12, 4)
    data = data.copy()
    data["twin"] = data["gender"].map({"gender0": "a", "gender1": "b"})
    design = Design((*design.factors, Factor("twin", "domain", ("a", "b"), "a")),
                    design.outcome, cluster="template")
    data = apply_design(data, design)
    messages = []
    for path in (contextlib.nullcontext, _previous_path):
        with path(), pytest.raises(ImportanceRefusal) as err:
            factor_importance(data, design)
        assert err.value.reason == "aliased"
        messages.append(str(err.value))
    assert messages[0] == messages[1]


def test_gee_on_the_pairs_equals_the_previous_path():
    data, design = _table(1500, 10, 5)
    new, old = _both(data, design, gee=True)
    assert np.allclose(new.terms[COEF], old.terms[COEF], rtol=1e-8, atol=1e-10)
    assert np.allclose(new.terms[STD_ERR], old.terms[STD_ERR], rtol=1e-8, atol=1e-10)


def test_cr1_equals_statsmodels_glm_cluster_on_the_rows():
    data, design = _table(3000, 30, 9)
    fit = factor_importance(data, design, small_sample="none", likelihood_ratio=False)
    cols = [np.ones(len(data))]
    for f in ("model", "style", "gender"):
        ref = design.factor(f).reference
        cols += [(data[f] == v).to_numpy(float) for v in design.factor(f).values if v != ref]
    groups = pd.factorize(data["template"])[0]
    glm = sm.GLM(data["deviation"].to_numpy(), np.column_stack(cols),
                 family=sm.families.Binomial()).fit(cov_type="cluster",
                                                     cov_kwds={"groups": groups})
    assert np.allclose(fit.terms[COEF], glm.params, rtol=1e-9, atol=1e-11)
    assert np.allclose(fit.terms[STD_ERR], glm.bse, rtol=1e-9, atol=1e-12)
    assert np.allclose(fit.terms[P_VALUE], glm.pvalues, rtol=1e-7, atol=1e-14)


def test_the_pair_sums_equal_sums_over_the_rows():
    rng = np.random.default_rng(11)
    rows, cells, g = 5000, 40, 9
    X = np.column_stack([np.ones(cells), rng.integers(0, 2, (cells, 3)),
                         rng.normal(size=cells)])  # a numeric column: general entries
    cell = rng.integers(0, cells, rows)
    cluster = rng.integers(0, g, rows) * 2  # codes 0, 2, ...: half of 2g codes unused
    k = (rng.random(rows) < 0.3).astype(float)
    pairs = count_pairs(cell, cluster, cells, 2 * g, None, k)
    assert pairs.n.sum() == rows and pairs.k.sum() == k.sum()
    used = pairs.used_clusters()
    assert np.array_equal(used, np.arange(0, 2 * g, 2))
    mu = rng.uniform(0.1, 0.9, cells)
    index = np.searchsorted(used, cluster)
    scores = np.zeros((g, X.shape[1]))
    np.add.at(scores, index, X[cell] * (k - mu[cell])[:, None])
    info = np.zeros((g, X.shape[1], X.shape[1]))
    w = mu * (1 - mu)
    for j in range(g):
        xs = X[cell[index == j]]
        info[j] = (xs * w[cell[index == j], None]).T @ xs
    assert np.allclose(cluster_scores(X, pairs, mu, used), scores, rtol=1e-12, atol=1e-9)
    assert np.allclose(cluster_information(X, pairs, w, used), info, rtol=1e-12, atol=1e-9)
    presence = np.zeros((g, X.shape[1]), dtype=bool)
    for j in range(g):
        presence[j] = (X[cell[index == j]] != 0).any(axis=0)
    assert np.array_equal(cluster_presence(X, pairs, used), presence)


@pytest.mark.parametrize("small_sample", ["cr2", "cr1", "none"])
@pytest.mark.parametrize("kw", [{}, {"interactions": ["model:gender", "style:gender"]},
                                {"where": {"model": ["model0", "model2"]}},
                                {"on_separation": "drop"}])
def test_the_per_cluster_tables_equal_the_sparse_pairs(kw, small_sample):
    data, design = _table(5000, 30, 13, rare=1)
    if "on_separation" in kw:  # separation: cells dropped, the pairs from there on
        data = data.copy()
        data.loc[(data["style"] == "style1") & (data["model"] == "model2"), "deviation"] = 0.0
        kw = {**kw, "interactions": ["model:style"]}
    new = factor_importance(data, design, small_sample=small_sample, **kw)
    with _pairs_only():
        old = factor_importance(data, design, small_sample=small_sample, **kw)
    _same(new, old, rtol=1e-12, atol=1e-14)
    # the logit is the unclustered one, bit for bit
    plain = factor_importance(data, design, cluster=None, **kw)
    assert np.array_equal(new.terms[COEF].to_numpy(), plain.terms[COEF].to_numpy())


def test_a_table_too_large_falls_back_to_the_pairs(monkeypatch):
    data, design = _table(3000, 20, 17)
    kw = {"interactions": ["model:style"]}
    new = factor_importance(data, design, **kw)
    # a two-factor table of 12 x 20 entries allowed, the interactions' unions are not
    monkeypatch.setattr(codes_module, "TABLE_LIMIT", 240)
    monkeypatch.setattr(codes_module, "TABLE_PER_ROW", 0)
    converted = []
    to_pairs = ClusterMargins.pairs
    monkeypatch.setattr(ClusterMargins, "pairs",
                        lambda self: converted.append(1) or to_pairs(self))
    for small_sample in ("cr2", "none"):
        small = factor_importance(data, design, small_sample=small_sample, **kw)
        with _pairs_only():
            old = factor_importance(data, design, small_sample=small_sample, **kw)
        _same(small, old, rtol=1e-12, atol=1e-14)
    _same(new, factor_importance(data, design, **kw), rtol=1e-12, atol=1e-14)
    assert len(converted) >= 2  # the robust sums of both fits, and the presence


@pytest.mark.parametrize("weights", [False, True])
def test_the_margin_sums_equal_sums_over_the_rows(weights):
    rng = np.random.default_rng(21)
    rows, sizes, g = 4000, [3, 2, 4], 7
    codes = [rng.integers(0, s, rows) for s in sizes]
    codes[1][codes[0] == 2] = 0  # an unobserved combination
    cluster = rng.integers(0, g, rows) * 2  # codes 0, 2, ...: half of 2g codes unused
    n = rng.integers(1, 4, rows).astype(float) if weights else None
    k = rng.binomial(np.ones(rows, dtype=int) if n is None else n.astype(int), 0.3) * 1.0
    combo = (codes[0] * 2 + codes[1]) * 4 + codes[2]
    combos, cell = np.unique(combo, return_inverse=True)
    margins = cluster_margins(count_pairs(cell, cluster, len(combos), 2 * g, n, k), combos,
                              sizes)
    assert isinstance(margins, ClusterMargins) and margins.n_clusters == g
    wn = np.ones(rows) if n is None else n
    assert np.array_equal(margins.cell, combos)
    # an indicator design: intercept, main effects, one interaction column
    parts = [(), ((0, 1),), ((0, 2),), ((1, 1),), ((2, 1),), ((2, 3),), ((0, 1), (2, 3))]
    X = np.column_stack([np.all([codes[a] == c for a, c in part], axis=0) if part
                         else np.ones(rows, dtype=bool) for part in parts]).astype(float)
    mu = rng.uniform(0.1, 0.9, len(margins.cell))
    row_mu = mu[np.searchsorted(margins.cell, combo)]
    index = np.searchsorted(np.unique(cluster), cluster)
    scores = np.zeros((g, len(parts)))
    np.add.at(scores, index, X * (k - wn * row_mu)[:, None])
    info = np.zeros((g, len(parts), len(parts)))
    for j in range(g):
        at = index == j
        info[j] = (X[at] * (wn * row_mu * (1 - row_mu))[at, None]).T @ X[at]
    got_scores, got_info = margins.sums(parts, mu, information=True)
    assert np.allclose(got_scores, scores, rtol=1e-12, atol=1e-10)
    assert np.allclose(got_info, info, rtol=1e-12, atol=1e-10)
    presence = np.array([(X[index == j] != 0).any(axis=0) for j in range(g)])
    assert np.array_equal(margins.presence(parts), presence)
    pairs = margins.pairs()  # the sparse pairs of the same rows
    assert pairs.n.sum() == wn.sum() and np.array_equal(pairs.used_clusters(), np.arange(g))
    assert np.allclose(cluster_scores(_cell_matrix(margins, parts), pairs, mu, np.arange(g)),
                       scores, rtol=1e-12, atol=1e-10)


def _cell_matrix(margins, parts):
    cell_codes = np.unravel_index(margins.cell, margins.sizes)
    return np.column_stack([np.all([cell_codes[a] == c for a, c in part], axis=0) if part
                            else np.ones(len(margins.cell), dtype=bool)
                            for part in parts]).astype(float)


@pytest.mark.parametrize("weights", [False, True])
def test_pairs_straight_from_the_codes_equal_cells_then_pairs(weights):
    """:func:`combo_pairs` (one key per row from the codes) = numbering the cells over the
    rows and then :func:`count_pairs` (the previous two steps): the same combinations,
    and the same pairs in the same order with the same sums, bit for bit."""
    rng = np.random.default_rng(31)
    rows, sizes, g = 6000, [3, 2, 5], 11
    codes = [rng.integers(0, s, rows).astype(np.int32) for s in sizes]
    codes[1][codes[0] == 2] = 0  # an unobserved combination
    cluster = rng.integers(0, g, rows) * 2  # codes 0, 2, ...: half of 2g codes unused
    n = rng.integers(0, 4, rows).astype(float) if weights else None  # lines of 0 rows too
    k = (rng.random(rows) < 0.3) * (1.0 if n is None else n)
    combo = (codes[0].astype(np.int64) * 2 + codes[1]) * 5 + codes[2]
    combos, cell = np.unique(combo, return_inverse=True)
    old = count_pairs(cell, cluster, len(combos), 2 * g, n, k)
    got_combos, new, pair_combos = combo_pairs(codes, sizes, cluster.copy(), 2 * g, n, k)
    assert np.array_equal(pair_combos, got_combos[new.cell])
    # the previous path keeps the cells of 0-row lines until the cells are dropped
    kept = np.bincount(old.cell, weights=old.n, minlength=len(combos)) > 0
    old = old.keep_cells(kept)
    assert np.array_equal(got_combos, combos[kept])
    for name in ("cell", "cluster", "n", "k"):
        a, b = getattr(new, name), getattr(old, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert new.n_clusters == old.n_clusters == 2 * g
    assert (new.n > 0).all() and new.n.sum() == (rows if n is None else n.sum())
    # a grid of more than 16 keys per row (and 2^20): None, the cluster codes untouched
    many = cluster * 10**6
    before = many.copy()
    assert combo_pairs(codes, sizes, many, 2 * g * 10**6, n, k) is None
    assert np.array_equal(many, before)
