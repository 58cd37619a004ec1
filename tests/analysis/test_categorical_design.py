"""Applying a design to categorical columns (dictionary-encoded Parquet read through
Arrow) gives exactly what the string path gives (issue #32 item 2; docs/performance.md)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.design import (
    Design,
    Factor,
    Outcome,
    apply_design,
    design_problems,
    factor_values,
    suggest_design,
)
from analysis.errors import DesignMismatchError
from analysis.io import load_results

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"


def as_categorical(frame: pd.DataFrame, columns) -> pd.DataFrame:
    """The columns as a Parquet file's dictionary columns come back through Arrow (text
    columns; numbers and booleans, which Arrow does not read as dictionaries, through
    ``astype("category")``)."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    buffer.seek(0)
    text = [c for c in columns if frame[c].dtype.kind not in "biuf"]
    out = pd.read_parquet(buffer, read_dictionary=text)
    for c in columns:
        if c not in text:
            out[c] = out[c].astype("category")
    assert all(isinstance(out[c].dtype, pd.CategoricalDtype) for c in columns)
    return out


def assert_same_factor_values(series: pd.Series, categorical: pd.Series) -> None:
    codes, values = factor_values(series)
    codes_c, values_c = factor_values(categorical)
    assert values_c == values
    np.testing.assert_array_equal(codes_c.to_numpy(), codes.to_numpy())


@pytest.mark.parametrize("stem", ["bbq_unifiedqa", "ssqa_design", "ssqa_simulated"])
def test_bundled_samples_same_result(stem):
    frame = load_results(SAMPLES / f"{stem}.csv.gz")
    design = Design.load(SAMPLES / f"{stem}.design.yaml")
    categorical = as_categorical(frame, design.names)
    for name in design.names:
        assert_same_factor_values(frame[name], categorical[name])
    expected = apply_design(frame, design)
    pd.testing.assert_frame_equal(apply_design(categorical, design)[expected.columns],
                                  expected, check_dtype=False)
    got = apply_design(categorical, design)
    for name in design.names:  # the factor columns: same ordered categoricals, same codes
        pd.testing.assert_series_equal(got[name], expected[name])
    assert suggest_design(categorical[design.names]) == suggest_design(frame[design.names])


def hand_made() -> pd.DataFrame:
    return pd.DataFrame({
        "model": ["m2", "m1", None, "m2", "m1", None, "m3", "m2"],
        "size": [7, 3, 3, np.nan, 7, 3, 7, 3],  # numbers with a missing value
        "flag": [True, False, True, True, False, False, True, True],
        "y": [1, 0, 1, 1, np.nan, 0, 1, 0],
    })


def test_missing_numeric_and_boolean_values():
    frame = hand_made()
    categorical = as_categorical(frame, ["model", "size", "flag"])
    for name in ("model", "size", "flag"):
        assert_same_factor_values(frame[name], categorical[name])
    assert factor_values(categorical["model"])[1] == ["m2", "m1", "(missing)", "m3"]
    assert factor_values(categorical["size"])[1] == ["7", "3", "(missing)"]
    design = Design((Factor("model", "model", ("m1", "m2", "m3", "(missing)", "m9"), "m1"),
                     Factor("size", "domain", ("3", "7", "(missing)"), "3"),
                     Factor("flag", "prompt", ("false", "true"), "false")), Outcome("y"))
    expected = apply_design(frame, design)
    got = apply_design(categorical, design)
    pd.testing.assert_frame_equal(got[expected.columns], expected, check_dtype=False)
    assert list(got["model"].cat.categories) == ["m1", "m2", "m3", "(missing)", "m9"]
    assert got["model"].cat.codes.tolist() == [1, 0, 3, 1, 0, 3, 2, 1]
    # the unseen declared value m9: the same warning on both paths
    assert ([p.message for p in design_problems(design, categorical)]
            == [p.message for p in design_problems(design, frame)])


def test_unused_categories_and_undeclared_values():
    series = pd.Series(pd.Categorical(["b", "a", "b", None],
                                      categories=["z", "a", "b", "unused"]))
    codes, values = factor_values(series)
    assert values == ["b", "a", "(missing)"]  # present values only, first appearance
    assert codes.tolist() == [0, 1, 0, 2]
    frame = pd.DataFrame({"f": series, "y": [1, 0, 1, 0]})
    design = Design((Factor("f", "domain", ("a", "z"), "a"),), Outcome("y"))
    with pytest.raises(DesignMismatchError) as cat_error:
        apply_design(frame, design)
    with pytest.raises(DesignMismatchError) as str_error:
        apply_design(frame.astype({"f": object}), design)
    assert str(cat_error.value) == str(str_error.value)
    assert "'b' (2 rows), '(missing)' (1 rows)" in str(cat_error.value)


def test_labels_that_collide_are_merged_as_before():
    """1 and "1" (and 1.0) are one value ``"1"`` on both paths."""
    values = np.array([1, "1", 1.0, "x", 2], dtype=object)
    series = pd.Series(pd.Categorical(values, categories=[2, 1, "1", "x"]))
    assert_same_factor_values(pd.Series(values[[0, 1, 2, 3, 4]], dtype=object)
                              .where(series.notna()), series)
    assert factor_values(series)[1] == ["1", "x", "2"]


def test_value_counts_coded_reads_a_categorical_from_its_own_codes():
    from analysis.values import first_appearance, value_counts_coded

    series = pd.Series(pd.Categorical(["b", "a", "b", None, "b"],
                                      categories=["z", "a", "b"]))
    codes, labels, counts = value_counts_coded(series)
    np.testing.assert_array_equal(codes, series.cat.codes.to_numpy())  # no refactorising
    assert labels == ["z", "a", "b", "(missing)"] and counts.tolist() == [0, 1, 3, 1]
    assert first_appearance(codes, labels) == ["b", "a", "(missing)"]
    assert [labels[c] for c in codes] == ["b", "a", "b", "(missing)", "b"]
    # labels that collide as text ("1" and 1) fall back to factor_values: one label "1"
    collide = pd.Series(pd.Categorical([1, "1", "x"], categories=[1, "1", "x"]))
    codes, labels, counts = value_counts_coded(collide)
    assert labels == ["1", "x"] and counts.tolist() == [2, 1]
    plain = pd.Series(["q", "p", "q"])
    codes, labels, counts = value_counts_coded(plain)
    assert labels == ["q", "p"] and counts.tolist() == [2, 1] and codes.tolist() == [0, 1, 0]
