"""The cell table against a direct pandas groupby, and the row filter."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.cells import cell_table, filter_rows
from analysis.columns import DEVIATION, DEVIATIONS, N
from analysis.design import Design, Factor, Outcome, apply_design
from analysis.errors import AnalysisError

SIZES = {"model": 3, "stigma": 6, "gender": 4, "cot": 2, "style": 5}


def _random_results(seed: int = 0, n: int = 4000, nan_share: float = 0.1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f: rng.choice([f"{f}{i}" for i in range(k)], n)
                          for f, k in SIZES.items()})
    dev = (rng.random(n) < 0.3).astype(float)
    dev[rng.random(n) < nan_share] = np.nan
    frame[DEVIATION] = dev
    return frame


def _by_groupby(frame: pd.DataFrame, factors: list[str], *, with_outcome: bool = True
                ) -> pd.DataFrame:
    """The independent reference: pandas groupby over the rows with a known outcome."""
    rows = frame.dropna(subset=[DEVIATION]) if with_outcome else frame
    keys = [rows[f].astype(str) for f in factors]
    grouped = rows.groupby(keys, observed=True, sort=True)
    out = grouped.size().rename(N).to_frame()
    if with_outcome:
        out[DEVIATIONS] = grouped[DEVIATION].sum().astype(np.int64)
    return out.reset_index()


def _as_plain(cells: pd.DataFrame, factors: list[str]) -> pd.DataFrame:
    plain = cells.copy()
    for f in factors:
        plain[f] = plain[f].astype(str)
    return plain.sort_values(factors).reset_index(drop=True)


@pytest.mark.parametrize("factors", [["model"], ["stigma", "gender"],
                                     ["model", "stigma", "gender", "cot", "style"],
                                     ["style", "model"]])
def test_counts_match_groupby(factors):
    frame = _random_results()
    cells = cell_table(frame, factors)
    expected = _by_groupby(frame, factors)
    pd.testing.assert_frame_equal(_as_plain(cells, factors), expected, check_dtype=False)
    assert cells[N].dtype == np.int64 and cells[DEVIATIONS].dtype == np.int64
    assert cells[N].sum() == frame[DEVIATION].notna().sum()  # NaN deviations dropped
    assert cells[DEVIATIONS].sum() == np.nansum(frame[DEVIATION])
    assert list(cells.columns) == [*factors, N, DEVIATIONS]


def test_applied_design_keeps_declared_values_and_their_order():
    frame = _random_results(1)
    design = Design(
        factors=(Factor("model", "model", ("model2", "model0", "model1", "model9"), "model0"),
                 Factor("cot", "prompt", ("cot1", "cot0"), "cot0")),
        outcome=Outcome(DEVIATION),
    )
    cells = cell_table(apply_design(frame, design), ["model", "cot"])
    assert list(cells["model"].cat.categories) == ["model2", "model0", "model1", "model9"]
    # rows in declared order; the unseen value has no row but stays a category
    assert cells["model"].tolist() == ["model2"] * 2 + ["model0"] * 2 + ["model1"] * 2
    assert cells["cot"].tolist() == ["cot1", "cot0"] * 3
    expected = _by_groupby(frame, ["model", "cot"])
    pd.testing.assert_frame_equal(_as_plain(cells, ["model", "cot"]), expected,
                                  check_dtype=False)


def test_without_outcome_every_row_counts():
    frame = _random_results(2)
    cells = cell_table(frame, ["model", "cot"], with_outcome=False)
    assert DEVIATIONS not in cells.columns
    assert cells[N].sum() == len(frame)
    expected = _by_groupby(frame, ["model", "cot"], with_outcome=False)
    pd.testing.assert_frame_equal(_as_plain(cells, ["model", "cot"]), expected,
                                  check_dtype=False)
    # a table without a deviation column gives the same, even with with_outcome=True
    same = cell_table(frame.drop(columns=DEVIATION), ["model", "cot"])
    pd.testing.assert_frame_equal(same, cells)


def test_where_filter():
    frame = _random_results(3)
    where = {"model": "model1", "style": ["style0", "style3"]}
    cells = cell_table(frame, ["stigma", "gender"], where=where)
    subset = frame[(frame["model"] == "model1") & frame["style"].isin(["style0", "style3"])]
    expected = _by_groupby(subset, ["stigma", "gender"])
    pd.testing.assert_frame_equal(_as_plain(cells, ["stigma", "gender"]), expected,
                                  check_dtype=False)
    assert filter_rows(frame, where).index.equals(subset.index)
    assert filter_rows(frame, None) is frame
    assert filter_rows(frame, {}) is frame


def test_many_large_factors_use_the_fallback_path():
    """Over 2^62 possible cells the code tuples are grouped directly: same counts."""
    rng = np.random.default_rng(4)
    n, k = 3000, 1000
    factors = [f"f{j}" for j in range(8)]
    frame = pd.DataFrame({f: rng.integers(0, 3, n) for f in factors})
    frame[DEVIATION] = (rng.random(n) < 0.4).astype(float)
    frame.loc[rng.random(n) < 0.05, DEVIATION] = np.nan
    for f in factors:  # 1,000 declared values per factor, three of them observed
        frame[f] = pd.Categorical.from_codes(frame[f].to_numpy(),
                                             categories=[f"v{i}" for i in range(k)])
    assert float(k) ** len(factors) > 2**62
    cells = cell_table(frame, factors)
    expected = _by_groupby(frame, factors)
    pd.testing.assert_frame_equal(_as_plain(cells, factors), expected, check_dtype=False)
    assert len(cells["f0"].cat.categories) == k
    # the packed-key path on the same rows (unused categories dropped) agrees, row for row
    small = frame.copy()
    for f in factors:
        small[f] = small[f].cat.remove_unused_categories()
    packed = cell_table(small, factors)
    assert np.prod([3.0] * len(factors)) < 2**62
    pd.testing.assert_frame_equal(_as_plain(packed, factors), _as_plain(cells, factors))


@pytest.mark.parametrize("path,n_factors,n_declared", [("counting", 4, 5), ("sorting", 4, 300),
                                                       ("tuples", 8, 300)])
def test_every_grouping_path_agrees_with_groupby(path, n_factors, n_declared):
    """Small key spaces are counted, large ones sorted, astronomic ones grouped as tuples."""
    rng = np.random.default_rng(8)
    n, factors = 2000, [f"f{j}" for j in range(n_factors)]
    possible = float(n_declared) ** n_factors
    assert path == ("tuples" if possible >= 2**62 else
                    "sorting" if possible > max(4 * n, 2**20) else "counting")
    frame = pd.DataFrame({f: rng.integers(0, 5, n) for f in factors})
    frame[DEVIATION] = (rng.random(n) < 0.5).astype(float)
    for f in factors:
        frame[f] = pd.Categorical.from_codes(frame[f].to_numpy(),
                                             categories=[f"v{i}" for i in range(n_declared)])
    cells = cell_table(frame, factors)
    expected = _by_groupby(frame, factors)
    pd.testing.assert_frame_equal(_as_plain(cells, factors), expected, check_dtype=False)
    # rows come out in the declared value order (lexicographic in the codes)
    codes = np.column_stack([cells[f].cat.codes for f in factors])
    assert [tuple(r) for r in codes] == sorted(tuple(r) for r in codes)


def test_raw_columns_and_missing_values():
    frame = pd.DataFrame({
        "g": pd.Categorical(["u", None, "v", "u", None]),
        "h": [1, 2, 1, 1.0, 2],
        DEVIATION: [1.0, 0.0, 1.0, 1.0, 1.0],
    })
    cells = cell_table(frame, ["g", "h"])
    got = {(g, h): (n, k) for g, h, n, k in cells.itertuples(index=False)}
    assert got == {("u", "1"): (2, 2), ("(missing)", "2"): (2, 1), ("v", "1"): (1, 1)}


def test_all_outcomes_missing_gives_an_empty_table():
    frame = pd.DataFrame({"g": ["a", "b"], DEVIATION: [np.nan, np.nan]})
    cells = cell_table(frame, ["g"])
    assert len(cells) == 0
    assert list(cells.columns) == ["g", N, DEVIATIONS]


def test_cell_table_errors():
    frame = _random_results(5, n=50)
    with pytest.raises(AnalysisError, match="Choose at least one factor"):
        cell_table(frame, [])
    with pytest.raises(AnalysisError, match="Not columns of the table: nope"):
        cell_table(frame, ["model", "nope"])
    with pytest.raises(AnalysisError, match="A factor is listed twice"):
        cell_table(frame, ["model", "model"])


def test_filter_rows_errors():
    frame = _random_results(6, n=200)
    with pytest.raises(AnalysisError, match="Cannot filter on 'nope': there is no such column"):
        filter_rows(frame, {"nope": "x"})
    with pytest.raises(AnalysisError, match=r"Filter model = model7, model8: no row has that "
                                            r"value \(values: model"):
        filter_rows(frame, {"model": ["model0", "model7", "model8"]})
    only = frame.iloc[:1]
    first_model, first_cot = only["model"].iloc[0], only["cot"].iloc[0]
    other_cot = next(c for c in frame["cot"].unique() if c != first_cot)
    tiny = pd.concat([only, frame[(frame["model"] != first_model)
                                  & (frame["cot"] == other_cot)].iloc[:1]])
    with pytest.raises(AnalysisError, match="No row matches all the filters together"):
        filter_rows(tiny, {"model": first_model, "cot": other_cot})
    with pytest.raises(AnalysisError, match="no row has that value"):
        cell_table(frame, ["model"], where={"cot": "maybe"})
