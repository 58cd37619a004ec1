"""Bounded structure inference (issue 43.1): a column limit checked before anything is
read, and work that grows linearly in the columns (candidate pruning, a cap on the pair
tests, a time budget after which the inference returns what it found and says so).
Wall time is measured in ``benchmarks/bench_structure.py``; here only pair tests count."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import structure as st
from analysis.design import suggest_design
from analysis.errors import LimitError
from analysis.limits import MAX_COLUMNS, check_columns


def wide(n_columns: int, n_rows: int, *, levels: int = 3, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({f"c{i:05d}": rng.integers(0, levels, n_rows).astype(str)
                         for i in range(n_columns)})


def test_column_limit_is_checked_before_any_inference(monkeypatch):
    monkeypatch.setenv(MAX_COLUMNS.env, "50")
    table = wide(51, 5)
    with pytest.raises(LimitError) as info:
        st.infer_structure(table, name="wide.csv")  # the loader's TableMeta.source_name
    assert str(info.value).startswith("wide.csv has 51 columns, more than the 50 columns "
                                      "allowed for a results table")
    assert MAX_COLUMNS.env in str(info.value)
    with pytest.raises(LimitError):
        suggest_design(table)
    st.infer_structure(table.iloc[:, :50])  # at the limit: read


def test_default_limit_and_message():
    assert MAX_COLUMNS.value() == 2_000
    check_columns(2_000, "t.csv")
    with pytest.raises(LimitError, match="t.csv has 2,001 columns, more than the 2,000"):
        check_columns(2_001, "t.csv")


def test_thousand_columns_five_rows_is_linear_and_says_what_it_left_out():
    table = wide(1_000, 5)
    found = st.infer_structure(table)
    # every column is a factor candidate; with 5 rows no alias can have 5 rows behind a
    # value and another value: no pair of factors is tested
    assert found.n_pair_checks <= 1_000
    assert not found.budget_exhausted
    n_factors = len(found.factors)
    assert n_factors > 900
    assert any(note.startswith(f"{n_factors:,} columns could be factors: the suggested "
                               "design takes the first 40") for note in found.notes)
    design = suggest_design(table)
    assert len(design.factors) == st.MAX_SUGGESTED_FACTORS
    assert [f.name for f in design.factors] == found.factors[:st.MAX_SUGGESTED_FACTORS]


def test_pair_tests_grow_linearly_in_the_columns():
    """Columns with 10+ values are id and template candidates (k tests each) and
    100 rows let aliases exist: the pair tests stay within a linear bound."""
    counts = {}
    for k in (250, 1_000):
        table = wide(k, 100, levels=12, seed=k)
        counts[k] = st.infer_structure(table, time_budget=1e9).n_pair_checks
    assert counts[1_000] <= st.MAX_PAIR_CHECKS
    assert counts[1_000] <= 4.5 * counts[250]
    # the alias pass is capped: MAX_ALIAS_FACTORS x (MAX_ALIAS_FACTORS - 1) pairs at most
    assert counts[1_000] <= (2 * st.MAX_CANDIDATES + 2) * 1_000 + \
        st.MAX_ALIAS_FACTORS * (st.MAX_ALIAS_FACTORS - 1)


def test_pair_cap_stops_and_says_so():
    table = wide(300, 100, levels=12)
    found = st.infer_structure(table, max_pair_checks=50)
    assert found.budget_exhausted
    assert 50 < found.n_pair_checks <= 50 + 300  # stops within one step of the cap
    assert found.notes[0].startswith("The structure inference stopped at its limit of 50 "
                                     "pair tests")
    assert len(found.columns) == 300  # every column still has a role


def test_time_budget_stops_and_says_so():
    found = st.infer_structure(wide(200, 100, levels=12), time_budget=0.0)
    assert found.budget_exhausted
    assert "stopped at its time budget of 0 s" in found.notes[0]


def test_alias_candidates_are_pruned_and_capped():
    rng = np.random.default_rng(1)
    n = 400
    table = pd.DataFrame({f"f{i:02d}": rng.integers(0, 3, n).astype(str) for i in range(60)})
    table["thin"] = [f"v{i // 4}" for i in range(n)]  # 100 values of 4 rows: no alias
    found = st.infer_structure(table)
    assert not found.budget_exhausted
    assert found.role("thin") == st.FACTOR
    assert any(n.startswith("Value aliases were looked for among 40 of the 60 factors")
               for n in found.notes)


def test_a_bundled_table_is_not_touched_by_the_budget():
    from tests.conftest import REPO

    table = pd.read_csv(REPO / "sample_data" / "bbq_unifiedqa.csv.gz")
    found = st.infer_structure(table)
    assert not found.budget_exhausted
    assert found.item_id == "example_id" and found.cluster == "template_id"
    assert 0 < found.n_pair_checks < 2_000
