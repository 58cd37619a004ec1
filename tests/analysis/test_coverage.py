"""Coverage percentage, Gini index, marginals, empty and thinnest cells (methods.md §1)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from analysis import coverage as cov
from analysis.cells import cell_table
from analysis.columns import (
    COVERAGE_PERCENTAGE,
    FACTOR,
    FACTORS,
    GINI_INDEX,
    GINI_INDEX_OBSERVED,
    N_CELLS,
    N_EMPTY_CELLS,
    N_MISSING_PROMPT_CELLS,
    N_OBSERVED_CELLS,
    N_ROWS,
    SCOPE,
    VALUE,
    N,
)
from analysis.design import Design, Factor, apply_design, make_factor
from analysis.errors import AnalysisError
from analysis.nesting import find_nestings
from tests.conftest import SSQA_FACTORS, needs_shared


def mad_gini(x) -> float:
    """Independent Gini: G = sum_i sum_j |x_i - x_j| / (2 N^2 mean), straight from pairs."""
    x = np.asarray(x, dtype=float)
    return float(np.abs(x[:, None] - x[None, :]).sum() / (2 * len(x) ** 2 * x.mean()))


# --- a design small enough to do by hand ----------------------------------------------
# a: x, y and z (declared, never seen); b: p, q. Rows: (x,p) x3, (x,q) x1, (y,p) x2.
SMALL = Design(factors=(Factor("a", "domain", ("x", "y", "z"), "x"),
                        Factor("b", "prompt", ("p", "q"), "p")))


@pytest.fixture
def small_cells() -> pd.DataFrame:
    raw = pd.DataFrame({"a": ["x", "x", "x", "x", "y", "y"],
                        "b": ["p", "p", "p", "q", "p", "p"]})
    return cell_table(apply_design(raw, SMALL), ["a", "b"], with_outcome=False)


def test_small_design_by_hand(small_cells):
    s = cov.coverage_summary(small_cells, SMALL)
    joint = s.iloc[0]
    # N = 3 x 2 = 6 cells, 3 observed; sorted counts 0,0,0,1,2,3 (S = 6):
    # GI = 1 - 2/(6*6) * (1*2.5 + 2*1.5 + 3*0.5) = 1 - 14/36 = 22/36
    assert (joint[SCOPE], joint[FACTORS]) == ("joint", "a x b")
    assert (joint[N_CELLS], joint[N_OBSERVED_CELLS], joint[N_EMPTY_CELLS], joint[N_ROWS]) == (
        6, 3, 3, 6)
    assert joint[COVERAGE_PERCENTAGE] == pytest.approx(0.5)
    assert joint[GINI_INDEX] == pytest.approx(22 / 36)
    # observed only: 1,2,3 -> 1 - 2/(6*3) * 7 = 4/18
    assert joint[GINI_INDEX_OBSERVED] == pytest.approx(4 / 18)
    # per factor: a marginals x=4, y=2, z=0 -> 1 - 2/(6*3) * (2*1.5 + 4*0.5) = 8/18;
    # b marginals p=5, q=1 -> 1 - 2/(6*2) * (1*1.5 + 5*0.5) = 1/3
    assert cov.per_factor_gini(s) == pytest.approx({"a": 8 / 18, "b": 1 / 3})
    a, b = s.iloc[1], s.iloc[2]
    assert (a[N_CELLS], a[N_OBSERVED_CELLS], a[COVERAGE_PERCENTAGE]) == (3, 2, pytest.approx(2 / 3))
    assert (b[N_CELLS], b[N_OBSERVED_CELLS], b[COVERAGE_PERCENTAGE]) == (2, 2, 1.0)
    assert list(s.columns) == cov.SUMMARY_COLUMNS


def test_small_design_views(small_cells):
    marg = cov.marginal_counts(small_cells, SMALL)
    assert marg[[FACTOR, VALUE, N]].values.tolist() == [
        ["a", "x", 4], ["a", "y", 2], ["a", "z", 0], ["b", "p", 5], ["b", "q", 1]]
    pairs = cov.pair_counts(small_cells, SMALL, "a", "b")
    assert pairs.astype({"a": str, "b": str}).values.tolist() == [
        ["x", "p", 3], ["x", "q", 1], ["y", "p", 2], ["y", "q", 0], ["z", "p", 0],
        ["z", "q", 0]]
    transposed = cov.pair_counts(small_cells, SMALL, "b", "a")
    assert transposed[N].tolist() == [3, 2, 0, 1, 0, 0]
    empty = cov.empty_cells(small_cells, SMALL)
    assert empty.astype(str).values.tolist() == [["y", "q"], ["z", "p"], ["z", "q"]]
    assert list(empty["a"].cat.categories) == ["x", "y", "z"]
    assert cov.empty_cells(small_cells, SMALL, offset=1, limit=1).astype(str).values.tolist() \
        == [["z", "p"]]
    assert cov.empty_cells(small_cells, SMALL, offset=3).empty
    thin = cov.thinnest_cells(small_cells, SMALL, limit=2)
    assert thin.astype({"a": str, "b": str}).values.tolist() == [["x", "q", 1], ["y", "p", 2]]


def test_reading_of_small_design(small_cells):
    s = cov.coverage_summary(small_cells, SMALL)
    text = cov.describe_coverage(s, cov.marginal_counts(small_cells, SMALL))
    assert text[0].startswith("50.0 % of the 6 combinations of a x b have no prompt (3 empty")
    assert "0.500 of it comes from the empty cells and 0.111 from unequal filling" in text[1]
    assert "a: 1 of its 3 declared values never occurs: 'z'." in text
    assert text[-1] == "The most unevenly represented factor is a (Gini 0.444): 'z' has 0 rows, " \
                       "'x' 4."


def test_full_coverage_and_single_cell_readings():
    d = Design(factors=(Factor("a", "domain", ("x", "y"), "x"),))
    cells = pd.DataFrame({"a": ["x", "y"], N: [5, 5]})
    s = cov.coverage_summary(cells, d)
    assert s.iloc[0][GINI_INDEX] == 0.0 and s.iloc[0][COVERAGE_PERCENTAGE] == 1.0
    text = cov.describe_coverage(s)
    assert text[0] == "Every one of the 2 combinations of a has at least one prompt."
    assert text[-1].startswith("Every factor's values are about equally represented")
    one = cov.coverage_summary(pd.DataFrame({"a": ["x"], N: [7]}), d)
    assert one.iloc[0][GINI_INDEX] == pytest.approx(1 - 2 * 0.5 / 2)  # sorted 0, 7
    assert "single combination" in cov.describe_coverage(one)[1]


# --- the formulas against each other ------------------------------------------------------
@pytest.mark.parametrize("x", [
    [0, 0, 0, 1, 2, 3], [5, 5, 5, 5], [0, 0, 0, 0, 9], [1, 2, 3, 4, 100, 0, 0, 7],
    [3], [0, 1],
])
def test_gini_matches_mean_absolute_difference(x):
    x = np.array(x, dtype=float)
    dense = cov.gini_index(x)
    sparse = cov.gini_index(x[x > 0], n_cells=len(x))
    assert dense == pytest.approx(mad_gini(x), abs=1e-12)
    assert sparse == pytest.approx(mad_gini(x), abs=1e-12)


def test_gini_dense_and_sparse_agree_on_random_vectors():
    rng = np.random.default_rng(7)
    for _ in range(20):
        x = rng.poisson(rng.uniform(0.2, 5), size=rng.integers(2, 400)).astype(float)
        if x.sum() == 0:
            continue
        assert cov.gini_index(x) == pytest.approx(mad_gini(x), abs=1e-10)
        assert cov.gini_index(x[x > 0], n_cells=len(x)) == pytest.approx(mad_gini(x), abs=1e-10)
        assert cov.coverage_percentage(x) == cov.coverage_percentage(x[x > 0], n_cells=len(x))


def test_gini_identity_with_observed_gini():
    m = np.array([1, 1, 2, 8, 40], dtype=float)
    for n_cells in (5, 9, 1000, 10**12):
        cp = cov.coverage_percentage(m, n_cells=n_cells)
        gi = cov.gini_index(m, n_cells=n_cells)
        assert gi == pytest.approx(1 - cp * (1 - cov.gini_index(m)), abs=1e-12)


def test_statistics_reject_bad_counts():
    with pytest.raises(AnalysisError, match="non-negative"):
        cov.gini_index([1, -1])
    with pytest.raises(AnalysisError, match="at least one row"):
        cov.gini_index([0, 0, 0])
    with pytest.raises(AnalysisError, match="cannot fit"):
        cov.coverage_percentage([1, 2, 3], n_cells=2)


# --- dense tensor (tensorly) vs sparse ----------------------------------------------------
def _random_design(rng, sizes, n_rows, *, unseen_last=True):
    factors = tuple(Factor(f"f{j}", "domain", tuple(f"v{i}" for i in range(s)), "v0")
                    for j, s in enumerate(sizes))
    design = Design(factors=factors)
    # skewed draws; the last value of each factor is never drawn (declared but unseen)
    cols = {}
    for f, s in zip(factors, sizes, strict=True):
        top = s - 1 if unseen_last and s > 1 else s
        p = rng.dirichlet(np.full(top, 0.5))
        cols[f.name] = np.array(f.values)[rng.choice(top, size=n_rows, p=p)]
    raw = pd.DataFrame(cols)
    raw.loc[0, factors[0].name] = "v0"  # every reference occurs
    for f in factors:
        raw.loc[1, f.name] = "v0"
    return raw, design


def test_dense_tensor_agrees_with_sparse():
    import tensorly as tl

    rng = np.random.default_rng(3)
    raw, design = _random_design(rng, [4, 3, 5, 2], 300)
    cells = cell_table(apply_design(raw, design), design.names, with_outcome=False)
    tensor = cov.count_tensor(cells, design)
    assert tl.shape(tensor) == (4, 3, 5, 2)
    dense = tl.to_numpy(tensor).ravel()
    assert dense.sum() == 300
    s = cov.coverage_summary(cells, design)
    assert s.iloc[0][COVERAGE_PERCENTAGE] == pytest.approx(cov.coverage_percentage(dense))
    assert s.iloc[0][GINI_INDEX] == pytest.approx(cov.gini_index(dense), abs=1e-12)
    assert s.iloc[0][GINI_INDEX] == pytest.approx(mad_gini(dense), abs=1e-12)
    marg = cov.marginal_counts(cells, design)
    for j, f in enumerate(design.names):
        by_unfolding = cov.tensor_marginal(tensor, [j])
        assert by_unfolding.tolist() == marg[marg[FACTOR] == f][N].tolist()
        assert cov.per_factor_gini(s)[f] == pytest.approx(cov.gini_index(by_unfolding))
    pairs = cov.pair_counts(cells, design, "f2", "f0")
    assert cov.tensor_marginal(tensor, [2, 0]).ravel().tolist() == pairs[N].tolist()
    # raw rows tallied directly agree with the tensor cell by cell
    direct = raw.groupby(design.names).size()
    for combo, n in direct.items():
        idx = tuple(design.factor(f).values.index(v) for f, v in zip(design.names, combo,
                                                                      strict=True))
        assert tl.to_numpy(tensor)[idx] == n


def test_count_tensor_refuses_huge_grids(small_cells):
    with pytest.raises(AnalysisError, match="more than the 5 a dense tensor"):
        cov.count_tensor(small_cells, SMALL, max_cells=5)


# --- empty-cell paging against brute force -------------------------------------------------
def test_empty_cells_match_brute_force_enumeration():
    rng = np.random.default_rng(11)
    raw, design = _random_design(rng, [3, 4, 2, 3], 40)
    cells = cell_table(apply_design(raw, design), design.names, with_outcome=False)
    seen = set(map(tuple, raw[design.names].itertuples(index=False)))
    brute = [c for c in itertools.product(*(f.values for f in design.factors)) if c not in seen]
    n_empty = cov.coverage_summary(cells, design).iloc[0][N_EMPTY_CELLS]
    assert n_empty == len(brute)
    pages = [cov.empty_cells(cells, design, offset=o, limit=7) for o in range(0, len(brute), 7)]
    listed = [tuple(r) for p in pages for r in p.astype(str).itertuples(index=False)]
    assert listed == brute


def test_twelve_factors_with_a_trillion_cells():
    rng = np.random.default_rng(5)
    names = [f"f{j}" for j in range(12)]
    values = tuple(str(i) for i in range(10))
    design = Design(factors=tuple(Factor(n, "domain", values, "0") for n in names))
    codes = rng.integers(0, 10, size=(2000, 12))
    codes[-1] = 9  # the very last cell of the grid is observed
    raw = pd.DataFrame(codes.astype(str), columns=names)
    cells = cell_table(apply_design(raw, design), names, with_outcome=False)
    s = cov.coverage_summary(cells, design)
    m = len(cells)
    assert s.iloc[0][N_CELLS] == 10**12
    assert s.iloc[0][COVERAGE_PERCENTAGE] == m / 10**12
    expected = 1 - (m / 10**12) * (1 - cov.gini_index(cells[N].to_numpy()))
    assert s.iloc[0][GINI_INDEX] == pytest.approx(expected, abs=1e-15)
    # the last empty cell is the one just before 999...9
    last = cov.empty_cells(cells, design, offset=10**12 - m - 1, limit=5)
    assert last.astype(str).values.tolist() == [["9"] * 11 + ["8"]]
    # the first empty cell: the smallest cell index (digits in base 10) not observed
    observed = {int("".join(map(str, row))) for row in codes}
    first_key = next(k for k in itertools.count() if k not in observed)
    first = cov.empty_cells(cells, design, limit=1).astype(str).values.tolist()[0]
    assert first == list(f"{first_key:012d}")


def test_grids_beyond_int64_use_exact_integers():
    names = [f"f{j}" for j in range(20)]
    values = tuple(str(i) for i in range(10))
    design = Design(factors=tuple(Factor(n, "domain", values, "0") for n in names))
    raw = pd.DataFrame([["0"] * 20, ["0"] * 19 + ["2"], ["9"] * 20, ["0"] * 20],
                       columns=names)
    cells = cell_table(apply_design(raw, design), names, with_outcome=False)
    s = cov.coverage_summary(cells, design)
    assert s.iloc[0][N_CELLS] == 10**20 and s.iloc[0][N_EMPTY_CELLS] == 10**20 - 3
    assert s.iloc[0][COVERAGE_PERCENTAGE] == 3 / 10**20
    first = cov.empty_cells(cells, design, limit=2).astype(str).values.tolist()
    assert first == [["0"] * 19 + ["1"], ["0"] * 19 + ["3"]]
    tail = cov.empty_cells(cells, design, offset=10**20 - 4, limit=5).astype(str)
    assert tail.values.tolist() == [["9"] * 19 + ["8"]]


# --- cell tables in other shapes, subsets, models -----------------------------------------
def test_wider_cell_table_is_summed_down():
    rng = np.random.default_rng(2)
    raw, design = _random_design(rng, [3, 4, 5], 200)
    results = apply_design(raw, design)
    wide = cell_table(results, ["f2", "f0", "f1"], with_outcome=False)
    narrow = cell_table(results, ["f0", "f1"], with_outcome=False)
    a = cov.coverage_summary(wide, design, factors=["f0", "f1"])
    b = cov.coverage_summary(narrow, design, factors=["f0", "f1"])
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(cov.thinnest_cells(wide, design, factors=["f0", "f1"]),
                                  cov.thinnest_cells(narrow, design, factors=["f0", "f1"]))


def test_subset_restricts_the_grid_of_filtered_factors(small_cells):
    where = {"a": ["x", "y"]}
    s = cov.coverage_summary(small_cells, SMALL, where=where)
    assert (s.iloc[0][N_CELLS], s.iloc[0][COVERAGE_PERCENTAGE]) == (4, 0.75)
    with pytest.raises(AnalysisError, match="outside the subset: 'y'"):
        cov.coverage_summary(small_cells, SMALL, where={"a": "x"})
    with pytest.raises(AnalysisError, match="not a declared value"):
        cov.coverage_summary(small_cells, SMALL, where={"a": ["w"]})


def test_bad_inputs_name_the_problem(small_cells):
    with pytest.raises(AnalysisError, match="not declared by the design: 'w'"):
        cov.coverage_summary(pd.DataFrame({"a": ["w"], "b": ["p"], N: [1]}), SMALL)
    with pytest.raises(AnalysisError, match="no column for c"):
        cov.coverage_summary(small_cells, Design(
            factors=(*SMALL.factors, Factor("c", "domain", ("1",), "1"))))
    with pytest.raises(AnalysisError, match="'a' twice"):
        cov.pair_counts(small_cells, SMALL, "a", "a")
    with pytest.raises(AnalysisError, match="no 'n' column"):
        cov.coverage_summary(small_cells.drop(columns=N), SMALL)


def test_default_factors_are_domain_and_prompt():
    d = Design(factors=(Factor("m", "model", ("A",), "A"), Factor("s", "domain", ("1",), "1"),
                        Factor("p", "prompt", ("a",), "a")))
    assert cov.default_factors(d) == ["s", "p"]
    assert cov.default_factors(d.subset(["m"])) == ["m"]


def test_model_coverage_finds_the_missing_prompt():
    design = Design(factors=(Factor("model", "model", ("A", "B", "C"), "A"),
                             Factor("s", "domain", ("s1", "s2"), "s1"),
                             Factor("p", "prompt", ("p1", "p2"), "p1")))
    raw = pd.DataFrame({"model": ["A"] * 3 + ["B"] * 2,
                        "s": ["s1", "s1", "s2", "s1", "s1"],
                        "p": ["p1", "p2", "p1", "p1", "p2"]})
    cells = cell_table(apply_design(raw, design), ["model", "s", "p"], with_outcome=False)
    table = cov.model_coverage(cells, design)
    assert table["model"].astype(str).tolist() == ["A", "B", "C"]
    assert table[N_ROWS].tolist() == [3, 2, 0]
    assert table[N_OBSERVED_CELLS].tolist() == [3, 2, 0]
    assert table[COVERAGE_PERCENTAGE].tolist() == [0.75, 0.5, 0.0]
    assert table[N_MISSING_PROMPT_CELLS].tolist() == [0, 1, 3]
    text = cov.describe_model_coverage(table, ["model"])
    assert text == ["B misses 1 of the 3 prompt combinations that another model answered.",
                    "No rows at all for C (declared but never run)."]
    # and over model factors in the grid: not every model saw every prompt
    s = cov.coverage_summary(cells, design, factors=["s", "p", "model"])
    assert s.iloc[0][COVERAGE_PERCENTAGE] == pytest.approx(5 / 12)


def test_percent_text_keeps_small_differences_visible():
    assert cov.percent_text(0.628) == "62.8"
    assert cov.percent_text(1.0) == "100.0"
    assert cov.percent_text(1 - 1e-6) == "99.99990"
    assert cov.percent_text(2e-9) == "2e-07"


# --- the real SocialStigmaQA design ---------------------------------------------------------
@needs_shared
def test_ssqa_coverage_by_hand(ssqa_table):
    # 37 templates x (1 base + 93 stigmas x 3 styles) x 2 cot = 20,720 prompts, one per
    # cell, over a grid of 37 x 94 x 4 x 2 = 27,824 cells.

    factors = ["template", "stigma", "prompt_style", "cot"]
    design = Design(factors=tuple(make_factor(ssqa_table, f) for f in factors))
    cells = cell_table(apply_design(ssqa_table, design), factors, with_outcome=False)
    s = cov.coverage_summary(cells, design)
    joint = s.iloc[0]
    assert (joint[N_CELLS], joint[N_OBSERVED_CELLS], joint[N_ROWS]) == (27824, 20720, 20720)
    assert joint[COVERAGE_PERCENTAGE] == pytest.approx(20720 / 27824)
    # every non-empty cell holds one prompt, so GI = 1 - CP exactly
    assert joint[GINI_INDEX] == pytest.approx(7104 / 27824, abs=1e-12)
    assert joint[GINI_INDEX_OBSERVED] == pytest.approx(0.0, abs=1e-12)

    def gini(counts):  # methods.md formula in exact fractions
        counts, total, n = sorted(counts), sum(counts), len(counts)
        return 1 - 2 * sum(Fraction(c, total) * Fraction(2 * (n - k) + 1, 2 * n)
                           for k, c in enumerate(counts, start=1))

    # marginals: stigma 'no stigma' 37*2 = 74, each of 93 stigmas 37*3*2 = 222;
    # prompt_style base 74, each other style 37*93*2 = 6,882; template 560; cot 10,360
    per_factor = cov.per_factor_gini(s)
    assert per_factor["template"] == pytest.approx(0.0, abs=1e-12)
    assert per_factor["cot"] == pytest.approx(0.0, abs=1e-12)
    assert per_factor["stigma"] == pytest.approx(float(gini([74] + [222] * 93)), abs=1e-12)
    assert per_factor["prompt_style"] == pytest.approx(float(gini([74] + [6882] * 3)),
                                                       abs=1e-12)
    assert per_factor["prompt_style"] == pytest.approx(1 - 31228 / 41440, abs=1e-12)
    text = cov.describe_coverage(s, cov.marginal_counts(cells, design))
    assert text[0].startswith("25.5 % of the 27,824 combinations of template x stigma x "
                              "prompt_style x cot have no prompt (7,104 empty cells)")
    # the empty cells are exactly base x (a real stigma) and (a real style) x 'no stigma'
    empty = cov.empty_cells(cells, design, limit=10_000)
    assert len(empty) == 7104
    base = empty["prompt_style"] == "base"
    assert ((empty["stigma"] == "no stigma") != base).all()


@needs_shared
def test_ssqa_nestings_from_cells_equal_find_nestings_on_rows(ssqa_table):
    from analysis.design import suggest_design

    suggested = suggest_design(ssqa_table)  # the template is its cluster, not a factor
    design = Design(factors=tuple(make_factor(ssqa_table, f) if f == suggested.cluster
                                  else suggested.factor(f) for f in SSQA_FACTORS))
    results = apply_design(ssqa_table, design)
    cells = cell_table(results, SSQA_FACTORS, with_outcome=False)
    refs = {f.name: f.reference for f in design.factors}
    from_rows = find_nestings(ssqa_table, SSQA_FACTORS, references=refs)
    from_cells = cov.coverage_nestings(cells, design, factors=SSQA_FACTORS)
    pd.testing.assert_frame_equal(from_cells, from_rows)
    pairs = set(zip(from_cells["determinant"], from_cells["dependent"], strict=True))
    assert pairs == {("template", "gender"), ("template", "gender_careful"),
                     ("template", "biased_answer"), ("stigma", "pachankis_cluster")}


def test_nestings_report_constants_like_find_nestings():
    design = Design(factors=(Factor("a", "domain", ("1", "2", "3"), "1"),
                             Factor("b", "domain", ("u", "v"), "u"),
                             Factor("k", "prompt", ("only", "never"), "only")))
    raw = pd.DataFrame({"a": ["1", "2", "3", "1"], "b": ["u", "v", "v", "u"],
                        "k": ["only"] * 4})
    cells = cell_table(apply_design(raw, design), ["a", "b", "k"], with_outcome=False)
    refs = {f.name: f.reference for f in design.factors}
    expected = find_nestings(raw, ["a", "b", "k"], references=refs)
    pd.testing.assert_frame_equal(cov.coverage_nestings(cells, design, factors=["a", "b", "k"]),
                                  expected)
    assert expected["kind"].tolist() == ["constant", "nested"]


# --- figures -------------------------------------------------------------------------------
def test_heatmap_and_bar_mark_the_empty_cells(small_cells):
    from analysis.figures.coverage import EMPTY_TRACE, coverage_heatmap, marginal_bar

    fig = coverage_heatmap(cov.pair_counts(small_cells, SMALL, "a", "b"), "a", "b")
    rows, empty = fig.data
    assert (rows.name, empty.name) == ("rows", EMPTY_TRACE)
    assert list(rows.y) == ["x", "y", "z"] and list(rows.x) == ["p", "q"]
    z = np.asarray(rows.z, dtype=float)
    assert np.array_equal(np.nan_to_num(z), [[3, 1], [2, 0], [0, 0]])
    assert np.array_equal(np.asarray(empty.z, dtype=float) == 1, np.isnan(z))
    assert "3 of 6 combinations empty" in fig.layout.title.text
    bar = marginal_bar(cov.marginal_counts(small_cells, SMALL), "a")
    assert list(bar.data[0].y) == [4, 2, 0]
    assert bar.data[1].name == EMPTY_TRACE and list(bar.data[1].x) == ["z"]
    with pytest.raises(AnalysisError, match="factor 'c'"):
        marginal_bar(cov.marginal_counts(small_cells, SMALL), "c")


def test_pair_counts_dense_marginal_equals_sparse_sum():
    """The heatmap from the tensorly tensor's 2-D marginal equals the sparse cell sum."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"a": rng.choice(list("xyz"), 500), "b": rng.choice(list("pq"), 500),
                          "c": rng.choice(["1", "2", "3", "4"], 500)})
    frame = frame[~((frame.a == "x") & (frame.b == "q"))]  # an empty pair
    design = Design(factors=(Factor("a", "domain", ("x", "y", "z", "w"), "x"),
                             Factor("b", "prompt", ("p", "q"), "p"),
                             Factor("c", "model", ("1", "2", "3", "4"), "1")))
    cells = cell_table(apply_design(frame, design), ["a", "b", "c"], with_outcome=False)
    dense = cov.pair_counts(cells, design, "c", "a", within=["a", "b", "c"])
    sparse = cov.pair_counts(cells, design, "c", "a")
    pd.testing.assert_frame_equal(dense, sparse)
    expected = pd.crosstab(frame.c, frame.a).reindex(index=["1", "2", "3", "4"],
                                                     columns=["x", "y", "z", "w"], fill_value=0)
    assert dense["n"].tolist() == expected.to_numpy().reshape(-1).tolist()
    assert int(dense.loc[dense.a == "w", "n"].sum()) == 0  # declared, never seen


# --- coverage over prompts and model coverage with nesting (issue 16) -----------------------
PAPER_FACTORS = ["cot", "stigma", "gender", "prompt_style", "biased_answer"]


def _ssqa_with_models_and_seeds(table: pd.DataFrame) -> pd.DataFrame:
    """SSQA answered by 2 models; cot = no once ("none" seed), cot = yes with seeds 1-5."""
    parts = []
    for model in ("A", "B"):
        parts.append(table[table["cot"] == "no"].assign(model=model, seed="none"))
        for seed in "12345":
            parts.append(table[table["cot"] == "yes"].assign(model=model, seed=seed))
    return pd.concat(parts, ignore_index=True)


@needs_shared
def test_ssqa_paper_figures_over_prompts_with_models_and_seeds(ssqa_table, tmp_path, capsys):
    from analysis.design import make_factor
    from tests.analysis.cli_helpers import run_json

    frame = _ssqa_with_models_and_seeds(ssqa_table)
    assert len(frame) == 10360 * 2 + 10360 * 10
    design = Design(factors=tuple(make_factor(frame, f) for f in SSQA_FACTORS)
                    + (Factor("model", "model", ("A", "B"), "A"),
                       Factor("seed", "model", ("none", "1", "2", "3", "4", "5"), "none")))
    results = apply_design(frame, design)
    cells = cov.coverage_cells(results, design, PAPER_FACTORS)
    s = cov.coverage_summary(cells, design, factors=PAPER_FACTORS)
    # independent count: distinct prompts (all SSQA factors) per paper-factor combination
    prompts = frame[SSQA_FACTORS].drop_duplicates()
    assert len(prompts) == 20720 and int(cells[N].sum()) == 20720
    by_pandas = prompts.groupby(PAPER_FACTORS).size().to_numpy()
    n_grid = 2 * 94 * 4 * 4 * 2
    assert s.iloc[0][N_CELLS] == n_grid
    assert s.iloc[0][GINI_INDEX] == pytest.approx(
        mad_gini(np.concatenate([by_pandas, np.zeros(n_grid - len(by_pandas))])), abs=1e-12)
    assert round(s.iloc[0][GINI_INDEX], 3) == 0.711  # the paper's SSQA figure
    assert cov.per_factor_gini(s)["cot"] == pytest.approx(0.0, abs=1e-12)
    # counting responses instead reproduces the audit's 0.794 and cot's 1/3
    rows = cov.coverage_summary(cov.coverage_cells(results, design, PAPER_FACTORS,
                                                   unit=cov.RESPONSES),
                                design, factors=PAPER_FACTORS)
    assert round(rows.iloc[0][GINI_INDEX], 3) == 0.794
    assert cov.per_factor_gini(rows)["cot"] == pytest.approx(1 / 3, abs=1e-12)

    # model coverage: seeds exist only with cot = yes, yet every model x seed is complete
    mcells = cell_table(results, PAPER_FACTORS + ["model", "seed"], with_outcome=False)
    table, nested = cov.model_coverage(mcells, design, prompt_factors=PAPER_FACTORS,
                                       return_nested=True)
    assert nested == ["cot"]
    pd.testing.assert_frame_equal(cov.model_coverage(mcells, design,
                                                     prompt_factors=PAPER_FACTORS), table)
    assert table[N_MISSING_PROMPT_CELLS].tolist() == [0] * 12
    n_per_cot = len(frame[PAPER_FACTORS].drop_duplicates()) // 2
    assert table["n_expected_prompt_cells"].tolist() == [n_per_cot] * 12
    naive = cov.model_coverage(mcells, design, prompt_factors=PAPER_FACTORS,
                               respect_nesting=False)
    assert naive[N_MISSING_PROMPT_CELLS].tolist() == [n_per_cot] * 12
    assert cov.describe_model_coverage(table, ["model", "seed"], nested=nested)[1] == (
        "Every model combination that has rows answered every prompt combination expected "
        "of it.")

    # the CLI, with the design file and no --where, gives the same figures
    path = tmp_path / "ssqa_models.csv"
    frame.to_csv(path, index=False)
    design_path = tmp_path / "ssqa.design.yaml"
    design.save(design_path)
    out = run_json(capsys, "coverage", path, "--design", design_path,
                   "--factors", ",".join(PAPER_FACTORS))
    # n_rows is rows (it was the number counted, issue 42); the cells count row_in_ssqa's
    # items once per cot (the item id the table's structure has)
    assert out["count"] == "prompts" and out["n_counted"] == 20720
    assert out["n_rows"] == len(frame) == 124_320
    assert out["gini_index"] == pytest.approx(s.iloc[0][GINI_INDEX], abs=1e-12)
    assert out["per_factor_gini"]["cot"] == pytest.approx(0.0, abs=1e-12)
    assert out["nested_prompt_factors"] == ["cot"]
    assert [m["n_missing_prompt_cells"] for m in out["model_coverage"]] == [0] * 12


def test_prompt_unit_column_counts_distinct_prompt_ids():
    # prompt id "q": q1 answered 3 times, q2 twice, q3 once; all in cell a = x except q3
    design = Design(factors=(Factor("a", "domain", ("x", "y"), "x"),
                             Factor("model", "model", ("A", "B"), "A")), prompt_unit=("q",))
    raw = pd.DataFrame({"q": ["q1", "q1", "q1", "q2", "q2", "q3"],
                        "a": ["x", "x", "x", "x", "x", "y"],
                        "model": ["A", "B", "B", "A", "B", "A"]})
    results = apply_design(raw, design)
    assert cov.coverage_cells(results, design, ["a"])[N].tolist() == [2, 1]
    assert cov.coverage_cells(results, design, ["a"], unit="responses")[N].tolist() == [5, 1]
    # with the model in the grid: distinct prompts each model answered per cell
    assert cov.coverage_cells(results, design, ["a", "model"])[N].tolist() == [2, 2, 1]
    with pytest.raises(AnalysisError, match="prompts or responses"):
        cov.coverage_cells(results, design, ["a"], unit="rows")
    with pytest.raises(AnalysisError, match="not in the table: q"):
        cov.coverage_cells(results.drop(columns="q"), design, ["a"])


def test_coverage_of_rows_the_design_was_applied_to():
    """Rows already applied (a file with its own ``deviation`` column) give the same
    coverage whether or not the caller says ``applied=True``: the second application
    left two ``deviation_original`` columns and the count unit's structure inference
    stopped with an untyped TypeError."""
    import analysis.api as bw
    from analysis.design import Outcome

    frame = pd.DataFrame({"a": ["x", "y", "x", "y", "x"], "b": ["u", "u", "v", "v", "u"],
                          "answer": [1, 0, 1, 1, 0], "deviation": [0.5] * 5})
    design = Design(factors=(Factor("a", "domain", ("x", "y"), "x"),
                             Factor("b", "prompt", ("u", "v"), "u")),
                    outcome=Outcome("answer", "binary"))
    applied = apply_design(frame, design)
    again = bw.coverage(applied, design)
    once = bw.coverage(applied, design, applied=True)
    pd.testing.assert_frame_equal(again.table, once.table)
    # counted by prompt (no item id): four distinct (a, b) prompts, one per cell
    joint = once.table.iloc[0]
    assert (joint["n_rows"], joint["n_counted"], joint["n_observed_cells"]) == (5, 4, 4)
    assert joint["gini_index"] == 0.0
