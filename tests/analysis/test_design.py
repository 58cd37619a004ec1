"""The Design: validation, round trips, suggestions, outcome mappings, checks, application."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from analysis.columns import DEVIATION
from analysis.design import (
    MAX_FACTOR_VALUES,
    MISSING_VALUE,
    Design,
    Factor,
    Outcome,
    apply_design,
    check_design,
    default_reference,
    describe_columns,
    design_problems,
    deviation,
    factor_values,
    guess_kind,
    make_factor,
    outcome_meaning,
    parse_assignments,
    suggest_design,
    suggest_outcome,
)
from analysis.errors import AnalysisError, DesignError, DesignMismatchError
from tests.conftest import SSQA_FACTORS, needs_shared

FULL = Design(
    factors=(
        Factor("model", "model", ("m1", "m2", "m3"), "m1"),
        Factor("stigma", "domain", ("no stigma", "autism", "obesity"), "no stigma"),
        Factor("cot", "prompt", ("no", "yes"), "no"),
    ),
    outcome=Outcome("answer", "equals", other_column="biased_answer"),
    name="my benchmark",
)


# --- Factor / Outcome / Design validation ---------------------------------------------------
@pytest.mark.parametrize("kwargs,message", [
    ({"name": " ", "kind": "domain", "values": ("a",), "reference": "a"}, "needs a column name"),
    ({"name": "f", "kind": "topic", "values": ("a",), "reference": "a"},
     "kind 'topic' is not one of domain, prompt, model"),
    ({"name": "f", "kind": "domain", "values": (), "reference": "a"}, "'f' has no values"),
    ({"name": "f", "kind": "domain", "values": ("a", "b", "a"), "reference": "a"},
     "'f' lists values twice: a"),
    ({"name": "f", "kind": "domain", "values": (1, "1"), "reference": "1"},
     "'f' lists values twice: 1"),
    ({"name": "f", "kind": "domain", "values": ("a", "b"), "reference": "c"},
     "reference 'c' is not one of its values"),
])
def test_factor_validation(kwargs, message):
    with pytest.raises(DesignError, match=message):
        Factor(**kwargs)


def test_factor_values_become_strings():
    f = Factor("template", "prompt", (0, 1, 2), 0)
    assert f.values == ("0", "1", "2")
    assert f.reference == "0"


@pytest.mark.parametrize("kwargs,message", [
    ({"mapping": "fuzzy"}, "mapping 'fuzzy' is not one of binary, values, equals, below, above"),
    ({"mapping": "values"}, "say which values count as deviation"),
    ({"mapping": "equals"}, "say which column it is compared with"),
    ({"mapping": "below"}, "a numeric threshold is needed"),
    ({"mapping": "above", "threshold": float("nan")}, "a numeric threshold is needed"),
    ({"mapping": "above", "threshold": float("inf")}, "a numeric threshold is needed"),
    ({"mapping": "below", "threshold": "three"}, "a numeric threshold is needed, not 'three'"),
])
def test_outcome_validation(kwargs, message):
    with pytest.raises(DesignError, match=message):
        Outcome("score", **kwargs)


def test_outcome_normalises_and_describes():
    assert Outcome("s", "below", threshold="2.5").threshold == 2.5
    assert Outcome("a", "values", values=(1, "x")).values == ("1", "x")
    assert Outcome("d").describe() == "d = 1"
    assert Outcome("a", "values", values=("x", "y")).describe() == "a in {x, y}"
    assert FULL.outcome.describe() == "answer equals biased_answer"
    assert Outcome("s", "below", threshold=3).describe() == "s < 3"
    assert Outcome("s", "above", threshold=0.25).describe() == "s > 0.25"


def test_design_helpers_and_errors():
    with pytest.raises(DesignError, match="Factors declared twice: cot"):
        Design(factors=(FULL.factor("cot"), FULL.factor("cot")))
    assert FULL.names == ["model", "stigma", "cot"]
    assert FULL.of_kind("prompt", "model") == ["model", "cot"]
    assert FULL.subset(["cot", "model"]).names == ["cot", "model"]
    with pytest.raises(DesignError, match="'gender' is not a factor of the design"):
        FULL.subset(["gender"])
    changed = FULL.with_reference("stigma", "autism")
    assert changed.factor("stigma").reference == "autism"
    assert FULL.factor("stigma").reference == "no stigma"  # frozen: a copy changed
    with pytest.raises(DesignError, match="reference 'nope' is not one of its values"):
        FULL.with_reference("stigma", "nope")
    with pytest.raises(DesignError, match="'gender' is not a factor"):
        FULL.with_reference("gender", "x")
    assert FULL.with_outcome(None).outcome is None
    assert parse_assignments(["a=x", " b = y=z "]) == {"a": "x", "b": "y=z"}
    with pytest.raises(DesignError, match="--where takes FACTOR=VALUE, got 'oops'"):
        parse_assignments(["oops"], "--where")


# --- serialisation ----------------------------------------------------------------------
OUTCOMES = [
    None,
    Outcome("biased"),
    Outcome("answer", "values", values=("yes", "maybe")),
    Outcome("answer", "equals", other_column="biased_answer"),
    Outcome("score", "below", threshold=3),
    Outcome("score", "above", threshold=0.0),
]


@pytest.mark.parametrize("outcome", OUTCOMES, ids=lambda o: o.mapping if o else "none")
def test_round_trip_text_and_files(outcome, tmp_path):
    design = Design(factors=FULL.factors + (Factor("unseen", "domain", ("7", "x"), "x"),),
                    outcome=outcome, name="round trip")
    assert Design.from_text(design.to_yaml()) == design
    assert Design.from_text(design.to_json()) == design
    assert Design.from_text(design.to_json().encode()) == design
    assert Design.from_dict(design.to_dict()) == design

    design.save(tmp_path / "d.yaml")
    design.save(tmp_path / "d.json")
    json.loads((tmp_path / "d.json").read_text())  # really JSON
    with pytest.raises(json.JSONDecodeError):
        json.loads((tmp_path / "d.yaml").read_text())  # really YAML
    for path in (tmp_path / "d.yaml", tmp_path / "d.json"):
        loaded = Design.load(path)
        assert loaded == design
        assert loaded.name == "round trip"
        assert loaded.factor("unseen").values == ("7", "x")


def test_yaml_keeps_numeric_looking_values_as_strings():
    design = Design(factors=(Factor("template", "prompt", ("0", "1", "10"), "0"),
                             Factor("flag", "domain", ("no", "yes", "true"), "no")))
    text = design.to_yaml()
    assert Design.from_text(text) == design
    assert yaml.safe_load(text)["factors"][1]["values"] == ["no", "yes", "true"]


def test_from_dict_defaults():
    design = Design.from_dict({"factors": [{"name": "g", "values": [2, 1]}]})
    assert design.factor("g") == Factor("g", "domain", ("2", "1"), "2")
    assert Design.from_text("") == Design()


@pytest.mark.parametrize("data,message", [
    ([1, 2], "must hold a mapping with a 'factors' list"),
    ({"version": 2, "factors": []}, "Design format version 2 is not supported"),
    ({"factors": {"a": 1}}, "'factors' must be a list"),
    ({"factors": ["cot"]}, "Factor #1 must be a mapping"),
    ({"factors": [{"name": "a", "values": ["x"]}, {"kind": "domain"}]},
     "Factor #2 lacks name, values"),
    ({"factors": [{"name": "a", "values": []}]}, "'a' has no values"),
    ({"factors": [{"name": "a", "values": "xyz"}]}, r"Factor #1 \(a\): 'values' must be a list"),
    ({"factors": [{"name": "a", "values": True}]}, "'values' must be a list"),
    ({"factors": [], "outcome": {"column": "a", "mapping": "values", "values": "x"}},
     "The outcome's 'values' must be a list"),
    ({"factors": [{"name": "a", "values": ["x"], "kind": "topic"}]}, "kind 'topic'"),
    ({"factors": [], "outcome": {"column": "a", "mapping": "binary", "weight": 2}},
     "Unknown outcome keys: weight"),
    ({"factors": [], "outcome": {"mapping": "binary"}}, "The outcome needs a 'column'"),
    ({"factors": [], "outcome": "biased"}, "'outcome' must be a mapping"),
    ({"factors": [], "outcome": {"column": "s", "mapping": "below", "threshold": "high"}},
     "a numeric threshold is needed"),
])
def test_from_dict_errors(data, message):
    with pytest.raises(DesignError, match=message):
        Design.from_dict(data)


def test_unreadable_design_files(tmp_path):
    with pytest.raises(DesignError, match="not valid YAML or JSON"):
        Design.from_text("factors: [unclosed")
    with pytest.raises(DesignError, match="not UTF-8 text"):
        Design.from_text(b"\xff\xfe\x00garbage")
    with pytest.raises(DesignError, match="no such design file"):
        Design.load(tmp_path / "missing.yaml")


# --- values, references, kinds, suggestions ---------------------------------------------
def test_factor_values_as_strings():
    codes, values = factor_values(pd.Series([7, 7.0, "7", None, np.nan, True, 2.5, "b"],
                                            dtype=object))
    assert values == ["7", MISSING_VALUE, "true", "2.5", "b"]
    assert codes.tolist() == [0, 0, 0, 1, 1, 2, 3, 4]
    codes, values = factor_values(pd.Series([3.0, 1.0, np.nan, 3.0]))
    assert values == ["3", "1", MISSING_VALUE]
    assert codes.tolist() == [0, 1, 2, 0]


@pytest.mark.parametrize("values,expected", [
    (["a", "a", "None", "b"], "None"),
    (["female", "no gender", "male"], "no gender"),
    (["x", "no_stigma", "y"], "no_stigma"),
    (["original", "base", "doubt"], "base"),
    (["yes", "no"], "no"),
    (["b", "a", "b", "a", "c"], "a"),  # most frequent, ties by value order
    ([3, 2, 2, 10, 10], 2),
])
def test_default_reference(values, expected):
    assert default_reference(pd.Series(values)) == str(expected)


@pytest.mark.parametrize("column,kind", [
    ("model", "model"), ("model_name", "model"), ("seed", "model"), ("provider", "model"),
    ("cot", "prompt"), ("prompt_style", "prompt"), ("template", "prompt"),
    ("question_polarity", "prompt"), ("stigma", "domain"), ("gender", "domain"),
])
def test_guess_kind(column, kind):
    assert guess_kind(column) == kind


def test_describe_columns_and_suggestions():
    n = 40
    frame = pd.DataFrame({
        "id": np.arange(n),
        "group": ["a", "b", "c", "d"] * 10,
        "score": np.linspace(0, 1, n),
        "flag": [0, 1] * 20,
        "is_biased": [True, False] * 20,
        "answer": [("a long free text answer " * 4) + str(i % 3) for i in range(n)],
        "const": ["x"] * n,
    })
    frame.loc[3, "group"] = None
    roles = describe_columns(frame).set_index("column")
    assert roles["suggested_role"].to_dict() == {
        "id": "text or id", "group": "factor", "score": "numeric", "flag": "outcome",
        "is_biased": "outcome", "answer": "text or id", "const": "constant"}
    assert roles.loc["group", "n_unique"] == 4
    assert roles.loc["group", "n_missing"] == 1
    assert roles.loc["group", "examples"] == "a, b, c"

    design = suggest_design(frame)
    assert design.names == ["group", "flag"]  # the other 0/1 column stays a factor
    assert design.factor("group").values == ("a", "b", "c", "d", MISSING_VALUE)
    assert design.outcome == Outcome("is_biased", "binary")  # named like "biased"
    assert suggest_outcome(frame.drop(columns="is_biased")) == Outcome("flag")
    assert suggest_outcome(frame[["group"]]) is None


def test_outcome_suggested_by_name_and_meaning():
    """A typical export: cot (0/1) first, then correct; correct wins, cot stays a factor."""
    n = 40
    frame = pd.DataFrame({"model": ["a", "b"] * (n // 2), "cot": [0, 1, 1, 0] * (n // 4),
                          "is_correct": [True, False, True, True] * (n // 4)})
    design = suggest_design(frame)
    assert design.outcome == Outcome("is_correct", "values", values=("false",))
    assert design.names == ["model", "cot"]
    applied = apply_design(frame, design)
    assert applied["deviation"].tolist() == [0.0, 1.0, 0.0, 0.0] * (n // 4)  # not correct
    numeric = frame.assign(is_correct=frame["is_correct"].astype(int), accuracy=1)
    assert suggest_outcome(numeric) == Outcome("is_correct", "values", values=("0",))
    # a harm word beats a success word; the success column is not offered as a factor
    both = numeric.assign(harmful=[1, 0] * (n // 2))
    assert suggest_outcome(both) == Outcome("harmful", "binary")
    assert suggest_design(both).names == ["model", "cot"]
    assert suggest_outcome(frame[["model", "cot"]]) is None  # cot is a prompt factor
    assert outcome_meaning("deviation") == outcome_meaning("Biased_Answer") == "harm"
    assert outcome_meaning("accuracy") == outcome_meaning("correct") == "success"
    assert outcome_meaning("template") is None


@needs_shared
def test_suggest_design_on_ssqa(ssqa_table):
    design = suggest_design(ssqa_table)
    # not the item id, and not the template: it is the cluster (analysis.structure)
    assert design.names == [f for f in SSQA_FACTORS if f != "template"]
    assert design.cluster == "template"
    assert design.prompt_unit == ("row_in_ssqa", "cot")
    refs = {f.name: f.reference for f in design.factors}
    assert refs["cot"] == "no"
    assert refs["stigma"] == "no stigma"
    assert refs["pachankis_cluster"] == "no stigma"
    assert refs["gender"] == "no gender"
    assert refs["gender_careful"] == "no gender"
    assert refs["prompt_style"] == "base"
    kinds = {f.name: f.kind for f in design.factors}
    assert kinds == {"cot": "prompt", "stigma": "domain",
                     "pachankis_cluster": "domain", "gender": "domain",
                     "gender_careful": "domain", "prompt_style": "prompt",
                     "biased_answer": "domain"}
    assert make_factor(ssqa_table, "template").values == tuple(str(i) for i in range(37))
    assert design.factor("prompt_style").values == ("base", "doubt", "original", "positive")
    assert len(design.factor("stigma").values) == 94
    assert design.outcome is None  # no 0/1 column in the factor table
    assert check_design(design, ssqa_table) == []


def test_make_factor():
    frame = pd.DataFrame({"t": [10, 2, 2, 1], "s": ["b", "no x", "a", "b"]})
    f = make_factor(frame, "t")
    assert f.values == ("1", "2", "10")  # numeric order, not text order
    assert f.reference == "2"
    assert make_factor(frame, "s", kind="model", reference="a") == Factor(
        "s", "model", ("a", "b", "no x"), "a")
    with pytest.raises(DesignError, match="There is no column 'u'"):
        make_factor(frame, "u")
    with pytest.raises(DesignError, match=r"reference 'c' is not among its values \(a, b, no x\)"):
        make_factor(frame, "s", reference="c")
    many = pd.DataFrame({"id": [f"row {i}" for i in range(MAX_FACTOR_VALUES + 1)]})
    with pytest.raises(DesignError, match="1,001 distinct values"):
        make_factor(many, "id")


# --- outcome mappings --------------------------------------------------------------------
def _dev(values, outcome: Outcome, **other) -> list[float]:
    frame = pd.DataFrame({outcome.column: values, **other})
    out = deviation(frame, outcome)
    assert out.name == DEVIATION
    assert out.dtype == float
    return out.tolist()


def _same_floats(got, expected):
    np.testing.assert_array_equal(np.array(got, dtype=float), np.array(expected, dtype=float))


def test_binary_mapping():
    _same_floats(_dev([0, 1, np.nan, 1], Outcome("o")), [0, 1, np.nan, 1])
    _same_floats(_dev([True, False, True], Outcome("o")), [1, 0, 1])
    _same_floats(_dev(pd.array([True, None, False], dtype="boolean"), Outcome("o")),
                 [1, np.nan, 0])
    _same_floats(_dev(["true", "False", " TRUE ", "no", "Yes", None, "1", "0"], Outcome("o")),
                 [1, 0, 1, 0, 1, np.nan, 1, 0])
    with pytest.raises(DesignError, match=r"'o' should be 0/1 or true/false, but 2 rows hold "
                                          r"other values \('2', '-1'\)"):
        _dev([0, 1, 2, -1], Outcome("o"))
    with pytest.raises(DesignError, match=r"1 rows hold other values \('maybe'\)"):
        _dev(["yes", "maybe", "no"], Outcome("o"))


def test_values_mapping():
    _same_floats(_dev(["a", "b", None, "c", "a"], Outcome("o", "values", values=("a", "c"))),
                 [1, 0, np.nan, 1, 1])
    # numbers match their string form
    _same_floats(_dev([1.0, 2.0, 3.0], Outcome("o", "values", values=("2",))), [0, 1, 0])
    with pytest.raises(DesignError, match=r"none of the deviating values \(x, y\) occurs in the "
                                          r"column; its values are a, b"):
        _dev(["a", "b"], Outcome("o", "values", values=("y", "x")))


def test_equals_mapping():
    o = Outcome("answer", "equals", other_column="biased")
    _same_floats(_dev(["Yes", " no", "yes", None, "maybe", "NO "], o,
                      biased=["yes ", "No", "no", "yes", None, "no"]),
                 [1, 1, 0, np.nan, np.nan, 1])
    # 1 and 1.0 are the same value (an int column compared with a float column)
    _same_floats(_dev([1, 2, 3], o, biased=[1.0, np.nan, 2.0]), [1, np.nan, 0])
    with pytest.raises(DesignError, match="Comparison column 'biased' .* is not in the table"):
        _dev(["a"], o)


def test_threshold_mappings():
    _same_floats(_dev([1.0, 3.0, np.nan, 5.0, 2.9], Outcome("s", "below", threshold=3)),
                 [1, 0, np.nan, 0, 1])
    _same_floats(_dev([1.0, 3.0, np.nan, 5.0, 3.1], Outcome("s", "above", threshold=3)),
                 [0, 0, np.nan, 1, 1])
    _same_floats(_dev(["1.5", "4", None], Outcome("s", "above", threshold=2)), [0, 1, np.nan])
    with pytest.raises(DesignError, match=r"'s' needs numbers for a threshold, but 2 rows are "
                                          r"not numeric \('high', 'low'\)"):
        _dev([1, "high", "low"], Outcome("s", "below", threshold=2))


def test_missing_outcome_column():
    with pytest.raises(DesignError, match="Outcome column 'o' is not in the table"):
        deviation(pd.DataFrame({"x": [1]}), Outcome("o"))


# --- checking a design against another file -----------------------------------------------
DESIGN = Design(
    factors=(
        Factor("model", "model", ("m1", "m2", "m3"), "m1"),
        Factor("stigma", "domain", ("no stigma", "autism"), "no stigma"),
        Factor("gender", "domain", ("none", "female", "male"), "none"),
        Factor("seed", "model", ("1", "2"), "1"),
    ),
    outcome=Outcome("biased", "binary"),
)


def test_design_problems_reports_every_mismatch():
    other = pd.DataFrame({
        "model": ["m1", "m2", "m4", "m5", "m4"],  # m3 unseen, m4/m5 undeclared
        "stigma": ["autism"] * 5,  # reference missing
        "gender": ["none", "female", "male", "x", "none"],  # x undeclared
        "biased": [0, 1, 2, 1, 0],  # 2 is not 0/1
    })
    problems = design_problems(DESIGN, other)
    assert [(p.severity, p.message) for p in problems] == [
        ("error", "Factor 'model': values in the data that the design does not declare: "
                  "'m4' (2 rows), 'm5' (1 rows)."),
        ("warning", "Factor 'model': declared values never seen in the data (empty cells): "
                    "'m3'."),
        ("error", "Factor 'stigma': the reference value 'no stigma' does not occur in the data."),
        ("error", "Factor 'gender': values in the data that the design does not declare: "
                  "'x' (1 rows)."),
        ("error", "Factor column 'seed' is not in the table."),
        ("error", "Outcome 'biased' should be 0/1 or true/false, but 1 rows hold other values "
                  "('2'). Map it with a set of deviating values, a comparison column or a "
                  "threshold instead."),
    ]
    with pytest.raises(DesignMismatchError) as info:
        check_design(DESIGN, other)
    errors = [p.message for p in problems if p.severity == "error"]
    assert info.value.problems == errors
    text = str(info.value)
    assert text.startswith("The design does not fit this results table:\n- ")
    assert all(e in text for e in errors)
    assert "never seen" not in text  # warnings are not errors
    assert isinstance(info.value, DesignError) and isinstance(info.value, AnalysisError)


def test_many_undeclared_values_are_summarised():
    frame = pd.DataFrame({"g": [f"v{i}" for i in range(12)] + ["a"]})
    design = Design(factors=(Factor("g", "domain", ("a",), "a"),))
    (problem,) = design_problems(design, frame)
    assert problem.message.endswith("'v7' (1 rows) and 4 more.")


def test_unseen_values_are_only_warnings():
    frame = pd.DataFrame({"model": ["m1", "m2"], "stigma": ["no stigma", "autism"],
                          "gender": ["none", "male"], "seed": [1, 2], "biased": [0, 1]})
    warnings = check_design(DESIGN, frame)
    assert warnings == [
        "Factor 'model': declared values never seen in the data (empty cells): 'm3'.",
        "Factor 'gender': declared values never seen in the data (empty cells): 'female'.",
    ]


# --- applying a design --------------------------------------------------------------------
def test_apply_design():
    frame = pd.DataFrame({
        "model": ["m2", "m1", "m2", "m1"],
        "stigma": ["autism", "no stigma", "autism", None],
        "gender": ["male", "none", "none", "male"],
        "seed": [2, 1, 1.0, 2],
        "biased": [1, 0, np.nan, 1],
        "deviation": ["old", "old", "old", "old"],
        "text": ["a", "b", "c", "d"],
    })
    design = Design(
        factors=(
            Factor("model", "model", ("m1", "m2", "m3"), "m1"),
            Factor("stigma", "domain", ("no stigma", "autism", MISSING_VALUE), "no stigma"),
            Factor("gender", "domain", ("none", "female", "male"), "none"),
            Factor("seed", "model", ("1", "2"), "1"),
        ),
        outcome=Outcome("biased", "binary"),
    )
    before = frame.copy()
    out = apply_design(frame, design)
    pd.testing.assert_frame_equal(frame, before)  # input untouched
    for f in design.factors:
        dtype = out[f.name].dtype
        assert isinstance(dtype, pd.CategoricalDtype) and dtype.ordered
        assert list(dtype.categories) == list(f.values)  # unseen values included
    assert out["model"].tolist() == ["m2", "m1", "m2", "m1"]
    assert out["model"].cat.codes.tolist() == [1, 0, 1, 0]
    assert out["stigma"].tolist() == ["autism", "no stigma", "autism", MISSING_VALUE]
    assert out["gender"].cat.codes.tolist() == [2, 0, 0, 2]
    assert out["seed"].tolist() == ["2", "1", "1", "2"]
    _same_floats(out[DEVIATION], [1, 0, np.nan, 1])
    assert out["deviation_original"].tolist() == ["old"] * 4  # the file's own column kept
    assert out["text"].tolist() == ["a", "b", "c", "d"]
    assert list(out.columns) == ["model", "stigma", "gender", "seed", "biased",
                                 "deviation_original", "text", DEVIATION]
    # applying again is applying once: no second ``deviation_original`` (it made every
    # column-wise step, e.g. coverage's structure inference, crash with a TypeError)
    pd.testing.assert_frame_equal(apply_design(out, design), out)


def test_apply_design_outcome_named_deviation_and_no_outcome():
    frame = pd.DataFrame({"g": ["a", "b"], DEVIATION: [True, False]})
    design = Design(factors=(Factor("g", "domain", ("a", "b"), "a"),),
                    outcome=Outcome(DEVIATION, "binary"))
    out = apply_design(frame, design)
    assert list(out.columns) == ["g", DEVIATION]
    _same_floats(out[DEVIATION], [1, 0])
    no_outcome = apply_design(frame, design.with_outcome(None))
    assert no_outcome[DEVIATION].tolist() == [True, False]  # left as it was


def test_apply_design_refuses_a_mismatch():
    frame = pd.DataFrame({"g": ["a", "c"]})
    with pytest.raises(DesignMismatchError, match="'c' \\(1 rows\\)"):
        apply_design(frame, Design(factors=(Factor("g", "domain", ("a", "b"), "a"),)))


def test_prompt_unit_round_trips_and_old_files_load(tmp_path):
    d = Design(factors=(Factor("a", "domain", ("x", "y"), "x"),
                        Factor("m", "model", ("A",), "A")), prompt_unit=("prompt_id",))
    for name in ("d.yaml", "d.json"):
        d.save(tmp_path / name)
        again = Design.load(tmp_path / name)
        assert again == d and again.prompt_unit == ("prompt_id",)
    assert d.prompt_unit_columns() == ["prompt_id"]
    old = Design.from_text("factors:\n- {name: a, kind: domain, values: [x, y]}\n")
    assert old.prompt_unit == () and "prompt_unit" not in old.to_dict()
    assert old.prompt_unit_columns() == ["a"]
    # a subset that drops a prompt factor keeps the whole design's prompts
    two = Design(factors=(Factor("a", "domain", ("x",), "x"),
                          Factor("b", "prompt", ("p",), "p")))
    assert two.subset(["a"]).prompt_unit == ("a", "b")
    assert two.subset(["b", "a"]).prompt_unit == ()
    with pytest.raises(DesignError, match="prompt_unit"):
        Design.from_dict({"factors": [], "prompt_unit": {"x": 1}})


def test_absent_prompt_unit_column_is_a_warning():
    d = Design(factors=(Factor("a", "domain", ("x", "y"), "x"),), prompt_unit=("qid",))
    warnings = check_design(d, pd.DataFrame({"a": ["x", "y"]}))
    assert any("Prompt unit column(s) not in the table: 'qid'" in w for w in warnings)


def test_continuous_outcome_and_covariates_round_trip_and_stay_out_of_old_files():
    from analysis.design import Design, Outcome
    from analysis.errors import DesignError

    old = Design(outcome=Outcome(column="acc", mapping="below", threshold=1.0))
    assert "type" not in old.to_dict()["outcome"] and "covariates" not in old.to_dict()
    new = Design(outcome=Outcome(column="logit_yes", mapping="below", threshold=0.0,
                                 type="continuous"), covariates=("age",), cluster="q")
    text = new.to_yaml()
    assert "type: continuous" in text and "covariates:\n- age" in text
    back = Design.from_text(text)
    assert back == new and back.outcome.type == "continuous" and back.covariates == ("age",)
    assert Design.from_text(new.to_json()) == new
    with pytest.raises(DesignError, match="Outcome type 'numeric'"):
        Outcome(column="x", mapping="below", threshold=0, type="numeric")
    with pytest.raises(DesignError, match="continuous: its deviation"):
        Outcome(column="x", type="continuous")
