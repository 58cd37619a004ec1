"""The one-kernel rules (docs/architecture.md, Kernels): factor codes and their missing
value, and what makes a table simulated."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.cells import cell_table
from analysis.columns import DEVIATION, DEVIATIONS, N
from analysis.context import is_simulated
from analysis.subgroups import subgroups
from analysis.values import MISSING_VALUE, factor_codes, factor_values

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"


def test_categorical_codes_keep_declared_order_and_missing_is_its_own_last_value():
    s = pd.Series(pd.Categorical(["b", None, "a", "b"], categories=["z", "a", "b"],
                                 ordered=True))
    codes, values = factor_codes(s)
    assert values == ["z", "a", "b", MISSING_VALUE]  # declared (unseen z kept), then missing
    assert codes.tolist() == [2, 3, 1, 2] and codes.dtype == np.int64
    # a declared "(missing)" category receives the missing rows; nothing is appended
    s2 = pd.Series(pd.Categorical(["x", None], categories=[MISSING_VALUE, "x"]))
    codes2, values2 = factor_codes(s2)
    assert values2 == [MISSING_VALUE, "x"] and codes2.tolist() == [1, 0]


def test_raw_columns_code_as_factor_values():
    s = pd.Series([7.0, None, "7", True, 3])
    codes, values = factor_codes(s)
    expected_codes, expected_values = factor_values(s)
    assert values == expected_values == ["7", MISSING_VALUE, "true", "3"]
    assert codes.tolist() == expected_codes.tolist() == [0, 1, 0, 2, 3]


def test_a_missing_value_counts_the_same_as_the_explicit_value_everywhere():
    """Rows whose factor is missing form the cell "(missing)": the same numbers as a
    table that spells the value out, in the cell table and the subgroups."""
    rng = np.random.default_rng(4)
    g = rng.choice(["u", "v", None], size=300).astype(object)
    dev = (rng.random(300) < np.where(g == None, 0.7, 0.3)).astype(float)  # noqa: E711
    with_nan = pd.DataFrame({"g": pd.Categorical(g, categories=["u", "v"]), DEVIATION: dev})
    spelled = pd.DataFrame({"g": pd.Categorical(np.where(g == None, MISSING_VALUE, g),  # noqa: E711
                                                categories=["u", "v", MISSING_VALUE]),
                            DEVIATION: dev})
    a, b = cell_table(with_nan, ["g"]), cell_table(spelled, ["g"])
    pd.testing.assert_frame_equal(a, b)
    assert int(a.loc[a["g"] == MISSING_VALUE, N].iloc[0]) == int((g == None).sum())  # noqa: E711
    assert a[DEVIATIONS].sum() == dev.sum()
    # a cell table whose categorical lost the value (NaN): the same subgroups as spelled out
    holes = b.assign(g=b["g"].cat.remove_categories([MISSING_VALUE]))
    assert holes["g"].isna().sum() == 1
    pd.testing.assert_frame_equal(subgroups(holes, ["g"]), subgroups(b, ["g"]))


def test_simulated_is_read_from_the_data_never_from_the_name():
    real = pd.DataFrame({"answer": ["a", "b"], "data_origin": ["real", "real"]})
    assert not is_simulated(real)  # named my_simulated_run.csv or not: the data decides
    assert not is_simulated(pd.DataFrame({"x": [1]}))
    assert not is_simulated(None)
    assert is_simulated(pd.DataFrame({"source": ["model", "Simulated"]}))
    assert is_simulated(pd.DataFrame({"origin": pd.Categorical(["simulated"])}))
    sample = pd.read_csv(SAMPLES / "ssqa_simulated.csv.gz", usecols=["data_origin"])
    assert is_simulated(sample)
    assert not is_simulated(pd.read_csv(SAMPLES / "bbq_unifiedqa.csv.gz", nrows=50))
