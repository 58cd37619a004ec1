"""Issues 38.6 and 42.4, each case first reproduced on a generated table
(``tests/analysis/results_tables.py``): replicate rows make the item the cluster when no
template exists; a template is found by what it fixes, whatever its values look like;
response texts, answer keys and replicate indices are never factors; the outcome a wide
import writes is the melted answers; a separation fix that leaves no rows is not offered."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import structure as st
from analysis.cli import main
from analysis.design import Design, apply_design, suggest_design, suggest_outcome
from analysis.importance import ImportanceRefusal, factor_importance
from tests.analysis.results_tables import (
    MODELS,
    WIDE_COLUMNS,
    replicate_table,
    results_table,
    wide_table,
)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return results_table()


def test_generated_table_is_issue_42s(table):
    assert len(table) == 745
    assert table["item_id"].is_unique
    assert {c: table[c].nunique() for c in ("model", "template", "race", "gender",
                                            "prompt_style", "sample", "prompt", "response")} \
        == {"model": 3, "template": 6, "race": 4, "gender": 2, "prompt_style": 3,
            "sample": 2, "prompt": 144, "response": 2}
    # the raw response is aliased with the outcome
    assert table.groupby("response")["biased"].nunique().max() == 1


def test_results_csv_structure(table):
    found = st.infer_structure(table, outcome="biased")
    roles = {c.column: c.role for c in found.columns}
    assert roles["item_id"] == st.ROW_ID  # was the item id: every row one prompt
    assert found.item_id == "prompt"  # the prompt text fixes template, race, gender, style
    assert roles["sample"] == st.REPLICATE  # was a factor (and part of the prompt unit)
    assert roles["response"] == st.RESPONSE  # was a factor aliased with the outcome
    assert "aliased with it" in dict((c.column, c.reason) for c in found.columns)["response"]
    assert roles["question"] == st.ITEM_TEXT
    assert found.cluster == "template"  # was missed: it fixes only its question text
    assert found.prompt_unit == ("prompt",)
    assert found.n_prompts == 144 == table["prompt"].nunique()
    assert "`model`, `sample` replicate rows" in found.prompt_unit_reason
    assert any(n.startswith("`sample` numbers repeated answers to the same prompt") for n in
               found.notes)
    design = suggest_design(table)
    assert [(f.name, f.kind) for f in design.factors] == [
        ("model", "model"), ("race", "domain"), ("gender", "domain"),
        ("prompt_style", "prompt")]
    assert design.outcome.column == "biased"
    assert design.cluster == "template" and design.prompt_unit == ("prompt",)


@pytest.mark.parametrize("name", ["vignette", "situation"])
def test_a_template_with_word_values_is_found_by_what_it_fixes(name):
    table = results_table(template_column=name)
    found = st.infer_structure(table, outcome="biased")
    assert found.cluster == name
    assert found.role(name) == st.TEMPLATE
    assert "each value has its own `question` text" in found.cluster_reason


def test_a_nested_word_factor_is_still_no_template():
    """A grouping of words that fixes only another factor (BBQ's subcategory -> category)
    stays a factor: without a text of its own, nothing marks it as a template."""
    table = results_table().drop(columns=["question"])
    table["domain"] = table["race"].map({"Asian": "x", "Black": "y", "Hispanic": "y",
                                         "White": "x"})
    found = st.infer_structure(table.drop(columns=["template"]), outcome="biased")
    assert found.role("race") == st.FACTOR and found.role("domain") == st.FACTOR
    # no template: the item (the prompt text, ~5 rows each) is the cluster
    assert found.cluster == "prompt"
    assert found.cluster_reason.startswith("no template: the 144 items of `prompt` have ~5.2 "
                                           "rows each (`sample` replicates them)")


def test_replicate_rows_make_the_item_the_cluster():
    table = replicate_table()
    found = st.infer_structure(table, outcome="biased")
    assert found.item_id == "prompt_id"  # was a "template" (coded values)
    assert found.role("seed") == st.REPLICATE  # was a model factor
    assert found.cluster == "prompt_id"
    assert found.cluster_reason.startswith("no template: the 60 items of `prompt_id` have "
                                           "~20.0 rows each (`seed` replicates them)")
    design = suggest_design(table)
    assert design.names == ["persona"] and design.cluster == "prompt_id"
    sample = replicate_table(replicate_column="sample")
    assert st.infer_structure(sample).role("sample") == st.REPLICATE
    # Inspect's sample_id is the item, its epoch the replicate
    inspect_like = replicate_table(replicate_column="epoch").rename(
        columns={"prompt_id": "sample_id"})
    found = st.infer_structure(inspect_like)
    assert found.item_id == "sample_id" and found.role("epoch") == st.REPLICATE


def test_a_temperature_stays_a_model_factor():
    table = replicate_table(n_replicates=3, replicate_column="temperature")
    table["temperature"] = table["temperature"].map({0: 0.0, 1: 0.7, 2: 1.0})
    found = st.infer_structure(table)
    assert found.role("temperature") == st.FACTOR
    assert found.factor_kinds["temperature"] == "model"


def test_response_columns_without_an_item_id():
    topics = ("work", "school", "home", "travel")
    table = pd.DataFrame({"model": ["a", "b"] * 40,
                          "topic": [topics[(i // 2) % 4] for i in range(80)],
                          "answer": ["Yes it is", "No it is not", "Maybe"] * 26 + ["Yes it is"] * 2,
                          "biased": [i % 2 for i in range(80)]})
    found = st.infer_structure(table, outcome="biased")
    assert found.role("answer") == st.RESPONSE
    assert "topic" in found.factors


def test_suggested_outcome_is_never_a_replicate_index():
    frame = pd.DataFrame({"sample": [0, 1] * 4, "answer": [1, 0, 0, 1, 1, 1, 0, 0]})
    assert suggest_outcome(frame).column == "answer"


def test_wide_import_analyses_the_melted_answers(tmp_path, capsys):
    wide = wide_table()
    path = tmp_path / "wide.csv"
    wide.to_csv(path, index=False)
    out, design_out = tmp_path / "long.csv", tmp_path / "design.yaml"
    argv = ["import", "wide", str(path), "--out", str(out), "--design-out", str(design_out)]
    for c in WIDE_COLUMNS.values():
        argv += ["--prediction-col", c]
    assert main(argv) == 0
    capsys.readouterr()
    design = Design.load(design_out)
    long = pd.read_csv(out)
    assert design.outcome.column == "answer" and design.outcome.mapping == "binary"
    assert "sample" not in design.names and "answer" not in design.names
    assert "answer" not in design.prompt_unit_columns()
    assert "sample" not in design.prompt_unit_columns()
    # the suffix is stripped like a prefix: the models are named, not `..._biased`
    assert design.factor("model").values == ("gpt4omini", "llama31", "mistral7b")
    assert design.factor("model").kind == "model"
    applied = apply_design(long, design)
    rates = applied.groupby("model")["deviation"].mean()
    for model, column in zip(("gpt4omini", "llama31", "mistral7b"), WIDE_COLUMNS.values(),
                             strict=True):
        assert rates[model] == pytest.approx(wide[column].mean())
    assert rates.max() - rates.min() > 0.2  # the models differ, as generated


def test_wide_import_of_one_column_writes_a_usable_design(tmp_path):
    from analysis.importers import import_results

    path = tmp_path / "wide.csv"
    wide_table().to_csv(path, index=False)
    res = import_results("wide", [path], prediction_cols=["llama31_biased"])
    assert "model" not in res.design.names
    assert any("'model' has the single value 'llama31_biased'" in n or
               "'model' has the single value" in n for n in res.notes)
    assert res.design.outcome.column == "answer"
    factor_importance(apply_design(res.frame, res.design), res.design)  # runs as written


def test_separation_fix_that_leaves_no_rows_is_not_offered(table):
    """Issue 42: with `response` as a factor (as suggested before), the refusal's second
    fix "leave out the rows of these values" left 0 rows."""
    from analysis.design import make_factor

    design = Design(factors=(make_factor(table, "race"), make_factor(table, "response")),
                    outcome=suggest_design(table).outcome)
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(apply_design(table, design), design, cluster=None)
    exc = info.value
    assert exc.reason == "separation"
    assert not any(f.on_separation == "drop" for f in exc.fixes)
    assert [f.drop_factors for f in exc.fixes if f.drop_factors] == [("response",)]
    assert "would leave no rows" in exc.explanation


def test_models_generated_are_the_three():
    assert tuple(results_table()["model"].unique()) == MODELS
