"""Functional dependencies between factors (methods.md §1 "Nested factors", §4)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from analysis.columns import (
    DEPENDENT,
    DETERMINANT,
    N_DEPENDENT_VALUES,
    N_DETERMINANT_VALUES,
    NESTING_KIND,
)
from analysis.design import suggest_design
from analysis.errors import AnalysisError
from analysis.nesting import describe_nesting, find_nestings
from tests.conftest import SSQA_FACTORS, needs_shared

COLUMNS = [DETERMINANT, DEPENDENT, N_DETERMINANT_VALUES, N_DEPENDENT_VALUES, NESTING_KIND]


def _findings(table: pd.DataFrame) -> set[tuple]:
    assert list(table.columns) == COLUMNS
    # constants have no determinant (missing in the table): shown as "-"
    return {("-" if pd.isna(r[DETERMINANT]) else r[DETERMINANT], r[DEPENDENT], r[NESTING_KIND])
            for r in table.to_dict("records")}


def _brute_force_determines(frame: pd.DataFrame, a: str, b: str) -> bool:
    return bool((frame.groupby(a)[b].nunique(dropna=False) == 1).all())


@needs_shared
def test_ssqa_nestings_exactly(ssqa_table):
    refs = {f.name: f.reference for f in suggest_design(ssqa_table).factors}
    table = find_nestings(ssqa_table, SSQA_FACTORS, references=refs)
    assert _findings(table) == {
        ("template", "gender", "nested outside reference"),
        ("template", "gender_careful", "nested outside reference"),
        ("template", "biased_answer", "nested"),
        ("stigma", "pachankis_cluster", "nested"),
    }
    sizes = {(r[DETERMINANT], r[DEPENDENT]): (r[N_DETERMINANT_VALUES], r[N_DEPENDENT_VALUES])
             for r in table.to_dict("records")}
    assert sizes == {("template", "gender"): (37, 4), ("template", "gender_careful"): (37, 4),
                     ("template", "biased_answer"): (37, 2),
                     ("stigma", "pachankis_cluster"): (94, 6)}
    # default references (no mapping given) find the same thing
    assert _findings(find_nestings(ssqa_table, SSQA_FACTORS)) == _findings(table)


@needs_shared
def test_ssqa_plain_nestings_agree_with_groupby(ssqa_table):
    """Every 'nested' finding, and only those, is a dependency a groupby confirms."""
    table = find_nestings(ssqa_table, SSQA_FACTORS)
    nested = {(a, b) for a, b, kind in _findings(table) if kind in ("nested", "equivalent")}
    brute = {(a, b) for a, b in itertools.permutations(SSQA_FACTORS, 2)
             if _brute_force_determines(ssqa_table, a, b)
             and not _brute_force_determines(ssqa_table, b, a)}
    assert nested == brute
    # the "outside reference" pairs: exact once the control rows are set aside
    for a, b, kind in _findings(table):
        if kind == "nested outside reference":
            assert not _brute_force_determines(ssqa_table, a, b)
            rest = ssqa_table[ssqa_table[b] != "no gender"]
            assert _brute_force_determines(rest, a, b)


def test_equivalent_nested_and_constant():
    frame = pd.DataFrame({
        "city": ["paris", "lyon", "rome", "milan", "paris", "rome"],
        "country": ["fr", "fr", "it", "it", "fr", "it"],
        "code": ["P", "L", "R", "M", "P", "R"],
        "year": [2024] * 6,
        "model": ["a", "b", "a", "b", "a", "b"],
    })
    table = find_nestings(frame, ["city", "country", "code", "year", "model"])
    assert _findings(table) == {
        ("-", "year", "constant"),
        ("city", "country", "nested"),
        ("city", "code", "equivalent"),
        ("code", "country", "nested"),
    }
    rows = table.set_index([DETERMINANT, DEPENDENT])
    assert rows.loc[("city", "code"), N_DETERMINANT_VALUES] == 4
    assert rows.loc[("city", "code"), N_DEPENDENT_VALUES] == 4
    assert rows.loc[("city", "country"), N_DEPENDENT_VALUES] == 2
    constant = table[table[NESTING_KIND] == "constant"].iloc[0]
    assert pd.isna(constant[DETERMINANT])
    assert constant[N_DEPENDENT_VALUES] == 1


def test_fully_crossed_factors_have_no_nesting():
    grid = pd.DataFrame(list(itertools.product(["a", "b", "c"], ["x", "y"], [0, 1])),
                        columns=["f", "g", "h"])
    assert find_nestings(grid, ["f", "g", "h"]).empty
    assert list(find_nestings(grid, ["f", "g"]).columns) == COLUMNS


def test_nested_outside_reference_like_bbq():
    """A subcategory fixes its category, except the control value several categories share."""
    frame = pd.DataFrame({
        "category": ["Age"] * 3 + ["Disability"] * 4 + ["Appearance"] * 4,
        "subcategory": ["none"] * 3 + ["Blind", "Deaf", "none", "Blind"]
                       + ["Obesity", "none", "Height", "none"],
    })
    table = find_nestings(frame, ["category", "subcategory"])
    assert _findings(table) == {("subcategory", "category", "nested outside reference")}
    assert not _brute_force_determines(frame, "subcategory", "category")


def test_outside_reference_uses_the_given_reference():
    # the shared control value is not named like "none": only the reference marks it
    frame = pd.DataFrame({
        "category": ["Age"] * 3 + ["Disability"] * 4 + ["Appearance"] * 4,
        "subcategory": ["generic"] * 3 + ["Blind", "Deaf", "generic", "Blind"]
                       + ["Obesity", "generic", "Height", "generic"],
    })
    found = {("subcategory", "category", "nested outside reference")}
    assert _findings(find_nestings(frame, ["category", "subcategory"])) == found  # most frequent
    assert _findings(find_nestings(frame, ["category", "subcategory"],
                                   references={"subcategory": "generic"})) == found
    assert find_nestings(frame, ["category", "subcategory"],
                         references={"subcategory": "Blind"}).empty


def test_template_fixes_gender_outside_the_base_prompts():
    """SSQA in miniature: each template's base prompt has "no gender"."""
    genders = ["female", "male", "female", "male", "neutral", "neutral"]
    rows = [(t, "no gender") for t in "ABCDEF"]
    rows += [(t, g) for t, g in zip("ABCDEF", genders, strict=True) for _ in range(3)]
    frame = pd.DataFrame(rows, columns=["template", "gender"])
    table = find_nestings(frame, ["template", "gender"])
    assert _findings(table) == {("template", "gender", "nested outside reference")}
    assert table[N_DETERMINANT_VALUES].tolist() == [6]
    assert table[N_DEPENDENT_VALUES].tolist() == [4]


def test_outside_reference_needs_two_values_on_each_side():
    # apart from the reference, the dependent takes one value only: nothing to report
    frame = pd.DataFrame({"t": ["1", "1", "2", "2", "3"], "g": ["none", "f", "none", "f", "f"]})
    assert find_nestings(frame, ["t", "g"], references={"g": "none"}).empty


def test_missing_values_count_as_a_value():
    frame = pd.DataFrame({"a": ["x", "y", None, None], "b": [1, 2, 3, 3]})
    assert _findings(find_nestings(frame, ["a", "b"])) == {("a", "b", "equivalent")}
    frame.loc[3, "b"] = 4
    assert _findings(find_nestings(frame, ["a", "b"])) == {("b", "a", "nested")}


def test_random_tables_agree_with_groupby():
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(5, 60))
        a = rng.integers(0, 6, n)
        frame = pd.DataFrame({"a": a, "b": a % 3 if rng.random() < 0.5 else rng.integers(0, 3, n),
                              "c": rng.integers(0, 2, n)})
        table = find_nestings(frame, ["a", "b", "c"])
        for det, dep, kind in _findings(table):
            if kind == "nested":
                assert _brute_force_determines(frame, det, dep)
                assert not _brute_force_determines(frame, dep, det)
            elif kind == "equivalent":
                assert _brute_force_determines(frame, det, dep)
                assert _brute_force_determines(frame, dep, det)
        for x, y in itertools.permutations(["a", "b", "c"], 2):
            if frame[x].nunique() > 1 and frame[y].nunique() > 1 and \
                    _brute_force_determines(frame, x, y):
                assert any({x, y} == {d, e} for d, e, _ in _findings(table))


def test_unknown_column():
    with pytest.raises(AnalysisError, match="Not columns of the table: nope"):
        find_nestings(pd.DataFrame({"a": [1, 2]}), ["a", "nope"])


def test_describe_nesting_sentences():
    base = {N_DETERMINANT_VALUES: 37, N_DEPENDENT_VALUES: 4}
    nested = describe_nesting({DETERMINANT: "template", DEPENDENT: "gender",
                               NESTING_KIND: "nested", **base})
    assert nested.startswith("gender is nested in template: each of the 37 values of template "
                             "fixes one of the 4 values of gender.")
    assert "keep template or gender, not both" in nested
    outside = describe_nesting({DETERMINANT: "template", DEPENDENT: "gender",
                                NESTING_KIND: "nested outside reference", **base})
    assert "(apart from the rows at a control value such as the reference" in outside
    same = describe_nesting({DETERMINANT: "city", DEPENDENT: "code", NESTING_KIND: "equivalent",
                             N_DETERMINANT_VALUES: 4, N_DEPENDENT_VALUES: 4})
    assert same == ("city and code are the same grouping under two names (4 values each): "
                    "use one of them.")
    constant = describe_nesting({DETERMINANT: None, DEPENDENT: "year", NESTING_KIND: "constant",
                                 N_DETERMINANT_VALUES: 0, N_DEPENDENT_VALUES: 1})
    assert constant.startswith("year takes a single value")


def test_setting_both_sides_aside_finds_no_spurious_pair():
    # 4 templates: genders female/male/female/neutral, each with one "no gender" base row.
    rows = []
    for template, gender in zip(["t1", "t2", "t3", "t4"], ["female", "male", "female", "neutral"],
                                strict=True):
        rows += [(template, gender)] * 3 + [(template, "no gender")]
    frame = pd.DataFrame(rows, columns=["template", "gender"])
    table = find_nestings(frame, ["template", "gender"], references={"template": "t1"})
    assert _findings(table) == {("template", "gender", "nested outside reference")}


@needs_shared
def test_unnested_choice_skip_nested_pairs(ssqa_table):
    from analysis.nesting import unnested_choice

    assert unnested_choice(ssqa_table, ["stigma", "pachankis_cluster", "gender"], 2) == [
        "stigma", "gender"]
    # template fixes gender outside the base prompts: skipped too
    assert unnested_choice(ssqa_table, ["template", "gender", "cot", "prompt_style"], 3) == [
        "template", "cot", "prompt_style"]
    assert unnested_choice(ssqa_table, ["stigma", "pachankis_cluster"], 2) == ["stigma"]


def test_unnested_choice_skips_nested_equivalent_and_constant_factors():
    from analysis.nesting import unnested_choice

    n = 60
    frame = pd.DataFrame({
        "template": [f"t{i % 6}" for i in range(n)],
        "gender": ["f" if i % 6 < 3 else "m" for i in range(n)],  # fixed by the template
        "same": [f"s{i % 6}" for i in range(n)],  # the template under another name
        "const": ["x"] * n,
        "model": [f"m{i % 5}" for i in range(n)],
        "cot": [("yes", "no")[(i // 5) % 2] for i in range(n)],
    })
    assert unnested_choice(frame, ["template", "gender", "same", "const", "model"], 2) == \
        ["template", "model"]
    assert unnested_choice(frame, ["gender", "template", "model", "cot"], 3) == \
        ["gender", "model", "cot"]
    assert unnested_choice(frame, ["template", "same"], 2) == ["template"]
    assert unnested_choice(frame, ["model"], 0) == []


@pytest.mark.parametrize("seed", range(6))
def test_large_categorical_tables_read_their_distinct_rows_with_the_same_answer(
        seed, monkeypatch):
    """From ``DISTINCT_FROM_ROWS`` rows, categorical factors are read on the first row of
    each distinct combination of their codes (issue 44 item 3): the findings are the
    ones of every row, and of the same columns as text (nested, outside a reference,
    equivalent, constant, missing values, unused categories, default references)."""
    import analysis.nesting as nesting

    rng = np.random.default_rng(seed)
    n = 60_000
    a = rng.integers(0, 8, n)
    frame = pd.DataFrame({
        "a": a, "b": a // 2,  # a fixes b
        "c": np.where(rng.random(n) < 0.3, 9, a % 3),  # a fixes c outside its 9s
        "d": a + 100,  # equivalent to a
        "e": rng.integers(0, 3, n), "k": np.zeros(n, dtype=int),
    }).astype(str)
    frame.loc[rng.random(n) < 0.05, "e"] = None
    frame.loc[frame["c"] == "9", "c"] = "none"
    coded = frame.astype("category")
    coded["b"] = coded["b"].cat.add_categories(["unused"])
    refs = {"c": "none"} if seed % 2 else None
    factors = list(frame.columns)[::-1] if seed % 3 == 0 else list(frame.columns)
    fast = find_nestings(coded, factors, references=refs)
    assert set(fast["kind"]) == {"nested", "nested outside reference", "equivalent",
                                 "constant"}
    monkeypatch.setattr(nesting, "DISTINCT_FROM_ROWS", 10**12)
    pd.testing.assert_frame_equal(fast, find_nestings(coded, factors, references=refs))
    pd.testing.assert_frame_equal(fast, find_nestings(frame, factors, references=refs))
