"""Prepare steps: hand-computed cases for each step, the recipe in the design file."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.columns import ROWS_CHANGED, ROWS_IN, ROWS_NOT_HANDLED, ROWS_OUT
from analysis.design import Design, Factor, Outcome
from analysis.errors import DesignError
from analysis.prepare import PrepareError, Step, apply_recipe, apply_step, load_recipe


def values(series: pd.Series) -> list:
    return [None if pd.isna(v) else v for v in series]


def test_melt():
    frame = pd.DataFrame({"id": [1, 2], "pred_a": ["x", None], "pred_b": ["y", "z"]})
    out, rep = apply_step(frame, Step.make("melt", columns=["pred_a", "pred_b"], strip="pred_"))
    assert out.columns.tolist() == ["id", "model", "answer"]
    assert out[["id", "model"]].values.tolist() == [[1, "a"], [2, "a"], [1, "b"], [2, "b"]]
    assert values(out["answer"]) == ["x", None, "y", "z"]
    assert (rep.rows_in, rep.rows_out, rep.rows_changed, rep.rows_not_handled) == (2, 4, 4, 1)
    with pytest.raises(PrepareError, match="'id' already exists"):
        apply_step(frame, Step.make("melt", columns=["pred_a"], factor="id"))


OPTS = pd.DataFrame({"ans0": ["cat"] * 4, "ans1": ["bird"] * 4, "ans2": ["dog"] * 4})


def test_match_with_the_labelled_option():
    frame = OPTS.assign(label=["0", "ans2", "B", "1"],
                        answer=["The cat.", "dog", "dog", "fish"])
    step = Step.make("match", text="answer", options=["ans0", "ans1", "ans2"], label="label")
    out, rep = apply_step(frame, step)
    # row 1: cat = option 0 (right); 2: dog = ans2 (right); 3: dog, label B = bird (wrong);
    # 4: fish names no option -> empty, not guessed
    assert values(out["correct"]) == [1, 1, 0, None]
    assert (rep.rows_changed, rep.rows_not_handled) == (3, 1)


def test_match_label_outside_the_options():
    frame = OPTS.assign(label=[0, 1, 3, 7], answer=["cat"] * 4)
    step = Step.make("match", text="answer", options=["ans0", "ans1", "ans2"], label="label")
    with pytest.raises(PrepareError, match=r"label column 'label' has 2 rows outside the "
                                           r"options \(3, 7\)"):
        apply_step(frame, step)


def test_match_with_another_column():
    frame = pd.DataFrame({"answer": ["Yes.", "no", None], "gold": ["yes", "yes", "no"]})
    out, rep = apply_step(frame, Step.make("match", text="answer", other="gold", output="ok"))
    assert values(out["ok"]) == [1, 0, None]
    assert (rep.rows_changed, rep.rows_not_handled) == (2, 1)


def test_recode():
    frame = pd.DataFrame({"model": ["gpt-4o-mini", "gpt-4o", "llama"]})
    step = Step.make("recode", column="model", mapping={"gpt-4o-mini": "gpt-4o", "mistral": "m"},
                     output="family")
    out, rep = apply_step(frame, step)
    assert out["family"].tolist() == ["gpt-4o", "gpt-4o", "llama"]
    assert out["model"].tolist() == frame["model"].tolist()
    assert rep.rows_changed == 1 and "mistral" in rep.note


def test_threshold():
    frame = pd.DataFrame({"score": [0.2, 0.5, 0.9, "n/a"]})
    out, rep = apply_step(frame, Step.make("threshold", column="score", threshold=0.5))
    assert values(out["score_above"]) == [0, 0, 1, None]
    assert (rep.rows_changed, rep.rows_not_handled) == (3, 1)
    out, _ = apply_step(frame, Step.make("threshold", column="score", threshold="0.5",
                                         direction="below", output="low"))
    assert values(out["low"]) == [1, 0, 0, None]


def test_filter():
    frame = pd.DataFrame({"split": ["test", "train", "test", "dev"], "n": [1, 2, 3, 4]})
    out, rep = apply_step(frame, Step.make("filter", column="split", values=["test", "val"]))
    assert out["n"].tolist() == [1, 3] and rep.rows_changed == 2 and "val" in rep.note
    out, _ = apply_step(frame, Step.make("filter", column="split", values="test", exclude=True))
    assert out["n"].tolist() == [2, 4]


def test_recipe_runs_in_order_and_reports_each_step():
    frame = pd.DataFrame({"q": ["q1", "q2"], "gold": ["Paris", "Rome"],
                          "pred_a": ["paris", "Milan"], "pred_b": ["The Paris", None]})
    recipe = [{"step": "melt", "columns": ["pred_a", "pred_b"], "strip": "pred_"},
              {"step": "match", "text": "answer", "other": "gold"},
              {"step": "filter", "column": "model", "values": ["a"]}]
    out, report = apply_recipe(frame, recipe)
    assert values(out["correct"]) == [1, 0]
    assert report[[ROWS_IN, ROWS_OUT, ROWS_CHANGED, ROWS_NOT_HANDLED]].values.tolist() == [
        [2, 4, 4, 1], [4, 4, 3, 1], [4, 2, 2, 0]]


def test_bad_steps():
    with pytest.raises(PrepareError, match="Unknown recipe step 'pivot'"):
        Step.make("pivot")
    with pytest.raises(PrepareError, match="needs column, mapping"):
        Step.make("recode")
    with pytest.raises(PrepareError, match="either options"):
        Step.make("match", text="a")
    with pytest.raises(PrepareError, match="not a number"):
        Step.make("threshold", column="s", threshold="high")
    with pytest.raises(PrepareError, match="no column 'nope'"):
        apply_step(pd.DataFrame({"a": [1]}), Step.make("filter", column="nope", values=[1]))


DESIGN = Design(factors=(Factor("model", "model", ("a", "b"), "a"),),
                outcome=Outcome("correct", "binary"), name="t")


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_recipe_round_trips_through_the_design_file(tmp_path, suffix):
    steps = [Step.make("melt", columns=["pred_a", "pred_b"], strip="pred_"),
             Step.make("recode", column="model", mapping={"a": "b"}),
             Step.make("threshold", column="s", threshold=1)]
    design = DESIGN.with_recipe(steps)
    path = tmp_path / f"d{suffix}"
    design.save(path)
    again = Design.load(path)
    assert again == design and again.recipe == tuple(steps)
    assert load_recipe(path) == tuple(steps)  # the CLI reads the recipe from a design file
    assert again.recipe[1].get("mapping") == {"a": "b"}


def test_old_design_files_load_and_bad_recipes_are_named(tmp_path):
    path = tmp_path / "old.yaml"
    path.write_text("version: 1\nfactors:\n- name: m\n  values: [a]\n", encoding="utf-8")
    assert Design.load(path).recipe == ()
    path.write_text("version: 1\nfactors: []\nrecipe:\n- step: melt\n", encoding="utf-8")
    with pytest.raises(DesignError, match="recipe: Recipe step 'melt' needs columns"):
        Design.load(path)
