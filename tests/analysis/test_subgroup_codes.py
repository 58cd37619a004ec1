"""The clustered subgroups from the rows' integer codes (``analysis/subgroup_codes.py``,
issue 44.1) against the previous path through a factors x cluster cell table: the same
table (every count, LD, CI, p-value, df, flag and label), the same notes, the same
refusals, on random designs with empty cells, subgroups in a single cluster, missing
factor, cluster and outcome values and small-n subgroups."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import analysis.api as api
import analysis.subgroup_codes as sc
from analysis.cells import cell_table
from analysis.design import Design, Factor, Outcome, apply_design
from analysis.errors import AnalysisError, ClusterError
from analysis.values import MISSING_VALUE
from tests.oracles.subgroup_cells import CellPathGrid


def random_results(seed: int, rows: int = 3_000) -> tuple[pd.DataFrame, Design]:
    """2-4 factors of 1-5 values on ``rows`` rows, sparse enough for empty cells, one
    factor value confined to a single template, missing values in a factor, the
    template and the outcome."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5))
    sizes = [int(s) for s in rng.integers(1, 6, k)]
    templates = int(rng.integers(3, 40))
    out, factors = {}, []
    t = rng.integers(0, templates, rows)
    logit = -0.8 + rng.normal(0, 0.7, templates)[t]
    for j, size in enumerate(sizes):
        name = f"f{j}"
        values = [f"{name}v{i}" for i in range(size)]
        # skewed frequencies: rare values make small-n subgroups and empty cells
        p = rng.dirichlet(np.full(size, 0.6))
        codes = rng.choice(size, rows, p=p)
        col = np.array(values, dtype=object)[codes]
        logit = logit + rng.normal(0, 0.5, size)[codes]
        if j == 0 and size > 1:  # the last value occurs in template 0 only
            col[(col == values[-1]) & (t != 0)] = values[0]
            col[rng.random(rows) < 0.01] = values[-1]
            col[(col == values[-1]) & (t != 0)] = values[0]
        if j == 1:
            col[rng.random(rows) < 0.03] = None  # a missing value: "(missing)"
        out[name] = col
        declared = (*values, MISSING_VALUE) if j == 1 else tuple(values)
        factors.append(Factor(name, "domain", declared, values[0]))
    names = np.array([f"tmpl {i:03d}" for i in range(templates)], dtype=object)
    out["template"] = names[t]
    out["template"][rng.random(rows) < 0.01] = None
    dev = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(float)
    dev[rng.random(rows) < 0.05] = np.nan
    out["outcome"] = dev
    return pd.DataFrame(out), Design(tuple(factors), Outcome("outcome"), cluster="template")


def cell_path(monkeypatch, *args, **kwargs):
    """The previous implementation: no grid, so the factors x cluster cell table."""
    with monkeypatch.context() as m:
        without_grids(m)
        return api.subgroups(*args, **kwargs)


def without_grids(m) -> None:
    """Neither grid (from the rows nor from a cell table): the factors x cluster cells of
    the previous implementation (``tests/oracles/subgroup_cells.py``)."""
    m.setattr(sc, "cluster_grid", lambda *a, **k: None)
    m.setattr(sc, "cell_grid", lambda cells, factors, cluster, **k: CellPathGrid(
        cells, factors, cluster) if cluster in cells.columns else None)


def assert_same(ours, theirs) -> None:
    for key in ("all",):
        a, b = ours.tables[key], theirs.tables[key]
        assert list(a.columns) == list(b.columns)
        assert len(a) == len(b)
        for col in a.columns:
            x, y = a[col], b[col]
            if pd.api.types.is_float_dtype(x):
                np.testing.assert_allclose(x.to_numpy(), y.to_numpy(), rtol=1e-12, atol=0,
                                           equal_nan=True, err_msg=col)
            else:
                pd.testing.assert_series_equal(x, y, obj=col)
    pd.testing.assert_frame_equal(ours.table, theirs.table, rtol=1e-12, atol=0)
    assert ours.notes == theirs.notes
    assert ours.meta["warnings"] == theirs.meta["warnings"]
    assert ours.settings == theirs.settings


def grid_used(monkeypatch) -> list:
    """Record what ``cluster_grid`` returned (the test must run the new path)."""
    seen: list = []
    real = sc.cluster_grid

    def spy(*a, **k):
        seen.append(real(*a, **k))
        return seen[-1]

    monkeypatch.setattr(sc, "cluster_grid", spy)
    return seen


@pytest.mark.parametrize("seed", range(12))
def test_random_designs_equal_the_cell_path(monkeypatch, seed):
    frame, design = random_results(seed)
    level = min(3, len(design.names))
    small_sample = ("cr2", "cr1", "none")[seed % 3]
    seen = grid_used(monkeypatch)
    ours = api.subgroups(frame, design, level=level, small_sample=small_sample)
    assert len(seen) == 1 and seen[0] is not None
    theirs = cell_path(monkeypatch, frame, design, level=level, small_sample=small_sample)
    assert_same(ours, theirs)
    full = ours.tables["all"]
    if seed % 3 == 0:  # CR2: each subgroup's own Satterthwaite df
        assert full["df"].nunique() > 1
    assert full["small_n"].any()


def test_the_cases_are_in_the_random_designs():
    """The generator makes what the comparison is meant to cover."""
    frame, design = random_results(1)
    rows = apply_design(frame, design)
    cells = cell_table(rows, [*design.names, "template"])
    full = cell_table(rows, design.names)
    possible = np.prod([len(f.values) for f in design.factors])
    assert len(full) < possible  # empty cells
    assert "(missing)" in set(cells["template"].astype(str))
    assert "(missing)" in set(cells["f1"].astype(str))
    assert rows["deviation"].isna().any()
    res = api.subgroups(frame, design, level=2).tables["all"]
    assert (res["n_clusters"] == 1).any()  # a subgroup in one template: not estimable
    assert res.loc[res["n_clusters"] == 1, "p_value"].isna().all()


@pytest.mark.parametrize("seed", range(6))
def test_the_grids_cell_table_is_cell_table(seed):
    """With and without rows missing an outcome or a factor value; and the grid built
    against a given cell table (object columns: not categorical) equals it too."""
    frame, design = random_results(seed)
    rows = apply_design(frame, design)
    expected = cell_table(rows, design.names)
    grid = sc.cluster_grid(rows, design.names, "template")
    pd.testing.assert_frame_equal(grid.cell_table(), expected)
    known = rows[rows["deviation"].notna()]
    pd.testing.assert_frame_equal(
        sc.cluster_grid(known, design.names, "template").cell_table(),
        cell_table(known, design.names))
    plain = rows.astype({f: object for f in design.names})
    other = sc.cluster_grid(plain, design.names, "template")
    pd.testing.assert_frame_equal(other.cell_table(), cell_table(plain, design.names))
    for a, b in zip(other.totals(), grid.totals(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_missing_only_among_rows_without_an_outcome():
    """A categorical factor missing only where the outcome is: no "(missing)" value."""
    rows = pd.DataFrame({
        "a": pd.Categorical(["x", "y", None, "x", "y", "y"], categories=["x", "y"]),
        "template": ["t1", "t2", "t1", "t2", "t1", "t2"],
        "deviation": [1.0, 0.0, np.nan, 0.0, 1.0, 1.0]})
    grid = sc.cluster_grid(rows, ["a"], "template")
    pd.testing.assert_frame_equal(grid.cell_table(), cell_table(rows, ["a"]))
    assert grid.values == [["x", "y"]]


def test_the_grid_is_the_cell_tables_sums():
    frame, design = random_results(4)
    rows = apply_design(frame, design)
    names = design.names
    grid = sc.cluster_grid(rows, names, "template", cell_table(rows, names),
                           max_level=len(names))
    everything = tuple(range(len(names)))
    assert list(grid.parts) == [everything]  # the highest level: one part, every factor
    n, d = grid.marginal(everything)
    fine = cell_table(rows, [*names, "template"])
    for _, cell in fine.sample(40, random_state=0).iterrows():
        at = tuple(grid.values[j].index(str(cell[f])) for j, f in enumerate(names))
        c = grid.labels.index(str(cell["template"]))
        assert (n[at + (c,)], d[at + (c,)]) == (cell["n"], cell["deviations"])
    assert n.sum() == fine["n"].sum() and d.sum() == fine["deviations"].sum()
    assert grid.labels == sorted(grid.labels)


@pytest.mark.parametrize("level", [1, 2, 3])
def test_the_parts_marginals_are_the_whole_grids(monkeypatch, level):
    """Parts small enough to split the factors: every combination of up to ``level``
    factors lies in a part, each part within the budget unless a combination alone
    exceeds it, and its per-cluster counts equal the marginal of the whole grid."""
    from itertools import combinations

    frame, design = random_results(4, rows=5_000)  # 5, 6 (+ missing), 3, 5 values
    rows = apply_design(frame, design)
    names = design.names
    whole = sc.cluster_grid(rows, names, "template", max_level=len(names))
    monkeypatch.setattr(sc, "PART_ENTRIES", 8 * whole.g)
    grid = sc.cluster_grid(rows, names, "template", max_level=level)
    sizes = [len(v) for v in grid.values]
    if level < len(names):
        assert len(grid.parts) > 1
    for part in grid.parts:
        width = int(np.prod([sizes[j] for j in part])) * grid.g
        assert width <= 8 * grid.g or len(part) <= level
    for k in range(min(level, len(names)) + 1):
        for axes in combinations(range(len(names)), k):
            assert any(set(axes) <= set(p) for p in grid.parts)
            for a, b in zip(grid.marginal(axes), whole.marginal(axes), strict=True):
                np.testing.assert_array_equal(a, b)
    pd.testing.assert_frame_equal(grid.cell_table(), whole.cell_table())


@pytest.mark.parametrize("seed", [0, 2, 5])
def test_many_small_parts_equal_the_cell_path(monkeypatch, seed):
    """With parts of one combination each (a tiny budget) the table is still the cell
    path's."""
    frame, design = random_results(seed)
    level = min(2, len(design.names))
    theirs = cell_path(monkeypatch, frame, design, level=level)
    monkeypatch.setattr(sc, "PART_ENTRIES", 1)
    seen = grid_used(monkeypatch)
    ours = api.subgroups(frame, design, level=level)
    assert seen[0] is not None and len(seen[0].parts) >= 2
    assert_same(ours, theirs)


def test_missing_codes_of_a_categorical_and_outcomes_other_than_0_1():
    """A categorical factor with missing rows (code -1) is counted as "(missing)", as
    the cell table counts it; a fractional outcome leaves the grid (None)."""
    rng = np.random.default_rng(11)
    rows = pd.DataFrame({
        "a": pd.Categorical(rng.choice(["x", "y", None], 400), categories=["x", "y", "z"]),
        "template": rng.choice(["t1", "t2", "t3"], 400),
        "deviation": rng.integers(0, 2, 400).astype(float)})
    cells = cell_table(rows, ["a"])
    grid = sc.cluster_grid(rows, ["a"], "template", cells)
    fine = cell_table(rows, ["a", "template"])
    assert grid.values[0] == ["x", "y", "z", MISSING_VALUE]
    n, d = grid.marginal((0,))
    for _, cell in fine.iterrows():
        at = (grid.values[0].index(str(cell["a"])), grid.labels.index(cell["template"]))
        assert (n[at], d[at]) == (cell["n"], cell["deviations"])
    assert n.sum() == 400
    rows.loc[0, "deviation"] = 0.5
    assert sc.cluster_grid(rows, ["a"], "template", cells) is None


def test_filters_and_exclusions(monkeypatch):
    frame, design = random_results(5, rows=4_000)
    where = {"f0": list(design.factors[0].values[:2])} if len(design.factors[0].values) > 1 \
        else None
    exclude = {design.names[-1]: [design.factors[-1].values[-1]]} \
        if len(design.factors[-1].values) > 1 else None
    ours = api.subgroups(frame, design, where=where, exclude=exclude)
    theirs = cell_path(monkeypatch, frame, design, where=where, exclude=exclude)
    assert_same(ours, theirs)


def test_too_large_a_grid_takes_the_sparse_grid(monkeypatch):
    """No dense grid of the rows: the cells over the cluster, a sparse grid of them."""
    frame, design = random_results(6)
    monkeypatch.setattr(sc, "GRID_LIMIT", 0)
    monkeypatch.setattr(sc, "GRID_PER_ROW", 0)
    seen = grid_used(monkeypatch)
    ours = api.subgroups(frame, design)
    assert seen == [None]
    monkeypatch.undo()
    assert_same(ours, api.subgroups(frame, design))
    assert_same(ours, cell_path(monkeypatch, frame, design))


@pytest.mark.parametrize("case", ["single", "one_row_each"])
def test_clusters_that_cannot_cluster(monkeypatch, case):
    """The same notes (and independent rows) when the cluster has one value among the
    rows with an outcome, or one row per value."""
    frame, design = random_results(7, rows=500)
    if case == "single":
        frame.loc[frame["outcome"].notna(), "template"] = "only"
    else:
        frame["template"] = [f"r{i}" for i in range(len(frame))]
    ours = api.subgroups(frame, design)
    theirs = cell_path(monkeypatch, frame, design)
    assert_same(ours, theirs)
    assert ours.settings["cluster"] is None
    assert any("template" in w for w in ours.meta["warnings"])


def test_refusals_are_unchanged(monkeypatch):
    frame, design = random_results(8)
    for path in (api.subgroups, lambda *a, **k: cell_path(monkeypatch, *a, **k)):
        with pytest.raises(AnalysisError, match="Fisher's exact test assumes independent"):
            path(frame, design, test="fisher")
        with pytest.raises(ClusterError):
            path(frame, design, cluster="no_such_column")


def test_no_outcome_among_the_filtered_rows(monkeypatch):
    frame, design = random_results(0, rows=600)
    value = design.factors[0].values[0]
    frame.loc[frame["f0"] == value, "outcome"] = np.nan
    for path in (api.subgroups, lambda *a, **k: cell_path(monkeypatch, *a, **k)):
        with pytest.raises(AnalysisError, match="There are no rows with an outcome"):
            path(frame, design, where={"f0": value})


def test_the_cluster_as_a_factor_takes_the_cell_path(monkeypatch):
    frame, design = random_results(9)
    seen = grid_used(monkeypatch)
    ours = api.subgroups(frame, design, cluster="f0")
    assert all(grid is None for grid in seen)  # not built (the cluster is a factor)
    monkeypatch.undo()
    assert_same(ours, cell_path(monkeypatch, frame, design, cluster="f0"))


def test_a_grid_of_another_cluster_is_refused():
    from analysis.subgroups import subgroups

    frame, design = random_results(10)
    rows = apply_design(frame, design)
    cells = cell_table(rows, design.names)
    grid = sc.cluster_grid(rows, design.names, "template", cells)
    with pytest.raises(AnalysisError, match="cluster grid is of 'template'"):
        subgroups(cells, design.names, cluster="f0", cluster_grid=grid)


def _subgroup_cases():
    from tests.bad_corpus import params

    return [p for p in params("upload", "cli")
            if (getattr(p, "values", [p])[0].get("cli") or ["describe"])[0] == "subgroups"]


@pytest.mark.parametrize("case", _subgroup_cases())
def test_the_bad_corpus_says_the_same_on_both_paths(case, tmp_path, monkeypatch, capsys):
    """Every ``subgroups`` case of the bad-input corpus: the same exit code, output and
    message with the integer-code path and with the cell path."""
    from analysis.cli import main
    from tests.bad_corpus import GOOD_RESULTS, case_path

    path, _ = case_path(case, tmp_path)
    for key, value in case.get("env", {}).items():
        monkeypatch.setenv(key, value)
    argv = [a.replace("{file}", str(path)).replace("{good}", str(GOOD_RESULTS))
            for a in case.get("cli")]
    seen = []
    for disabled in (False, True):
        with monkeypatch.context() as m:
            if disabled:
                without_grids(m)
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code
        captured = capsys.readouterr()
        seen.append((code, captured.out, captured.err))
    assert seen[0] == seen[1]


@pytest.mark.parametrize("extra", [[], ["--json"], ["--test", "fisher"], ["--level", "1"]])
def test_the_cli_says_the_same_on_both_paths(extra, monkeypatch, capsys):
    """The corpus' clustered file with its cluster named (the grid used), a refusal
    (Fisher with a cluster) and the JSON: identical output and messages."""
    from analysis.cli import main
    from tests.bad_corpus import BAD

    argv = ["subgroups", str(BAD / "results_cluster_typo.csv"), "--factors", "model",
            "--outcome", "biased", "--cluster", "template", *extra]
    seen = []
    for disabled in (False, True):
        with monkeypatch.context() as m:
            if disabled:
                without_grids(m)
            code = main(argv)
        captured = capsys.readouterr()
        seen.append((code, captured.out, captured.err))
    assert seen[0] == seen[1]
    assert seen[0][0] == (2 if "fisher" in extra else 0)


@pytest.mark.parametrize("seed", [0, 4, 7, 11])
def test_a_cell_table_over_the_cluster_gives_the_cell_paths_table(monkeypatch, seed):
    """Cells over the factors and the template (the app's cached cells, an engine's fine
    cell table) are summed once into the grid (``cell_grid``): the table, notes and
    settings of the factors x cluster cell path, at levels 1 to 3."""
    frame, design = random_results(seed)
    rows = apply_design(frame, design)
    fine = cell_table(rows, [*design.names, "template"])
    seen: list = []
    real = sc.cell_grid
    monkeypatch.setattr(sc, "cell_grid", lambda *a, **k: seen.append(real(*a, **k)) or seen[-1])
    for level in range(1, min(3, len(design.names)) + 1):
        ours = api.subgroups(fine, design, level=level, applied=True)
        assert seen[-1] is not None
        assert_same(ours, cell_path(monkeypatch, fine, design, level=level, applied=True))
        cached = api.subgroups(rows, design, cells=fine, level=level, applied=True)
        assert_same(cached, cell_path(monkeypatch, rows, design, cells=fine, level=level,
                                      applied=True))


def test_any_cell_table_takes_the_grid(monkeypatch):
    """Fractional deviations, a factor that is not categorical, the cluster among the
    factors: a grid all the same, with the cell path's numbers."""
    from analysis.subgroups import subgroups

    frame, design = random_results(2)
    rows = apply_design(frame, design)
    fine = cell_table(rows, [*design.names, "template"])
    half = fine.assign(deviations=fine["deviations"] * 0.5)
    plain = fine.astype({design.names[0]: object})
    for cells, cluster in ((fine, "template"), (half, "template"), (plain, "template"),
                           (fine, design.names[0])):
        assert sc.cell_grid(cells, design.names, cluster) is not None
        ours = subgroups(cells, design.names, cluster=cluster)
        with monkeypatch.context() as m:
            without_grids(m)
            theirs = subgroups(cells, design.names, cluster=cluster)
        pd.testing.assert_frame_equal(ours, theirs, rtol=1e-12, atol=0)
    assert sc.cell_grid(fine.drop(columns="template"), design.names, "template") is None
