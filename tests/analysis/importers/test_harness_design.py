"""The suggested design of harness imports: hand cases, and the imports used downstream.

Downstream: each importer's table and design go through ``apply_design``,
``cell_table`` and ``subgroups`` (in Python and through a CSV + design YAML with the
``python -m analysis subgroups`` CLI, as ``docs/import_*.md`` tell users to) with the
n and deviations counted independently from the imported rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.cells import cell_table
from analysis.columns import DEVIATION, DEVIATIONS, LEVEL, N
from analysis.design import Design, apply_design
from analysis.importers import import_results
from analysis.importers.harness_design import harness_design, suggest_score_outcome
from analysis.subgroups import subgroups
from tests.analysis.cli_helpers import run_json
from tests.analysis.importers.harness_runs import INSPECT_FIXTURE, LM_EVAL_FIXTURE


# --- hand cases -----------------------------------------------------------------------------
def test_outcome_is_the_unit_score_with_most_rows():
    frame = pd.DataFrame({
        "acc": [1.0, 0.0, np.nan, np.nan],
        "f1": [0.5, 0.25, 1.0, 0.0],       # in [0, 1], on every row: chosen
        "bleu": [12.0, 30.0, 0.0, 1.0],     # not in [0, 1]: never guessed
    })
    outcome, notes = suggest_score_outcome(frame, ["acc", "f1", "bleu"])
    assert (outcome.column, outcome.mapping, outcome.threshold) == ("f1", "below", 1.0)
    assert any("bleu" in n for n in notes) and any("Other candidate outcomes: acc" in n
                                                    for n in notes)


def test_outcome_prefers_a_varying_score_and_lower_is_better_flips():
    # exact_match covers more rows but never varies: every disparity would be undefined
    frame = pd.DataFrame({"exact_match": [0.0, 0.0, 0.0, 0.0], "acc": [1.0, 0.0, 1.0, None]})
    outcome, _ = suggest_score_outcome(frame, ["exact_match", "acc"])
    assert outcome.column == "acc"
    constant = pd.DataFrame({"a": [0.0, 0.0, None], "b": [1.0, 1.0, 1.0]})
    assert suggest_score_outcome(constant, ["a", "b"])[0].column == "b"  # then most rows
    outcome, notes = suggest_score_outcome(frame, ["acc"], lower_is_better={"acc": True})
    assert (outcome.mapping, outcome.threshold) == ("above", 0.0)
    assert suggest_score_outcome(pd.DataFrame({"bleu": [3.0]}), ["bleu"])[0] is None


def test_which_columns_become_factors():
    frame = pd.DataFrame({
        "item_id": ["a", "b", "c", "a", "b", "c"],       # an id, even though repeated
        "polarity": ["neg", "neg", "nonneg"] * 2,
        "task": ["mc"] * 3 + ["gen"] * 3,
        "model": ["m"] * 6,                              # constant: not a factor, with a note
        "temperature": [np.nan] * 3 + [0.0] * 3,         # varies only by being absent
        "seed": [1, 2, 1, 2, 1, 2],
        "acc": [1.0, 0.0, 1.0, 1.0, 1.0, 0.0],
    })
    design, notes = harness_design(frame, item_columns=["item_id", "polarity"],
                                   prompt_columns=["task"],
                                   model_columns=["model", "temperature", "seed"],
                                   score_columns=["acc"])
    # a one-valued model factor made the written design unusable (`importance --design`
    # refused it, issue 38): it is left out with a note, as on the pages
    assert [(f.name, f.kind) for f in design.factors] == [
        ("polarity", "prompt"), ("task", "prompt"), ("seed", "model")]
    assert any("item_id" in n for n in notes)
    assert "'model' has the single value 'm': kept as a column, not a factor of the " \
           "design" in " ".join(notes)


# --- downstream: apply_design, cell_table, subgroups ------------------------------------------
def _level_one(frame: pd.DataFrame, design: Design, factors: list[str]) -> pd.DataFrame:
    applied = apply_design(frame, design)
    table = subgroups(cell_table(applied, factors), factors, max_level=2)
    return table[table[LEVEL] == 1]


def _expected(frame: pd.DataFrame, score: str, factor: str) -> dict[str, tuple[int, int]]:
    scored = frame[frame[score].notna()]
    return {str(value): (len(rows), int((rows[score] < 1).sum()))
            for value, rows in scored.groupby(factor)}


@pytest.fixture(scope="module")
def lm_eval_import():
    return import_results("lm-eval", [LM_EVAL_FIXTURE])


def test_lm_eval_import_goes_through_subgroups(lm_eval_import):
    frame, design = lm_eval_import.frame, lm_eval_import.design
    factors = ["question_polarity", "context_condition", "task"]
    level1 = _level_one(frame, design, factors)
    for factor in factors:
        rows = level1[level1[factor].notna()]
        got = {str(v): (int(n), int(d)) for v, n, d in
               zip(rows[factor], rows[N], rows[DEVIATIONS], strict=True)}
        assert got == {k: v for k, v in _expected(frame, "acc", factor).items()}
    # only the multiple-choice task has acc: 32 scored rows of 96
    assert int(level1.loc[level1["question_polarity"].notna(), N].sum()) == 32
    assert set(level1.loc[level1["task"].notna(), "task"].astype(str)) == {"bbq_religion_mc"}


def test_lm_eval_import_through_csv_and_the_cli(lm_eval_import, tmp_path, capsys):
    results, design_path = tmp_path / "results.csv", tmp_path / "design.yaml"
    lm_eval_import.frame.to_csv(results, index=False)
    lm_eval_import.design.save(design_path)
    assert Design.load(design_path) == lm_eval_import.design
    out = run_json(capsys, "subgroups", results, "--design", design_path,
                   "--factors", "question_polarity,context_condition", "--level", "1")
    table = pd.DataFrame(out["subgroups"] if isinstance(out, dict) else out)
    got = {str(row["question_polarity"]): (row[N], row[DEVIATIONS])
           for _, row in table[table["question_polarity"].notna()].iterrows()}
    assert got == _expected(lm_eval_import.frame, "acc", "question_polarity")


def test_inspect_import_goes_through_subgroups():
    pytest.importorskip("inspect_ai")
    result = import_results("inspect", [INSPECT_FIXTURE])
    frame, design = result.frame, result.design
    factors = ["question_polarity", "context_condition", "question_index"]
    applied = apply_design(frame, design)
    assert applied[DEVIATION].tolist() == (frame["score_choice"] < 1).astype(float).tolist()
    level1 = _level_one(frame, design, factors)
    for factor in factors:
        rows = level1[level1[factor].notna()]
        got = {str(v): (int(n), int(d)) for v, n, d in
               zip(rows[factor], rows[N], rows[DEVIATIONS], strict=True)}
        assert got == _expected(frame, "score_choice", factor)
    assert int(level1.loc[level1["question_index"].notna(), N].sum()) == 32


def test_inspect_import_through_parquet_and_the_cli(tmp_path, capsys):
    pytest.importorskip("inspect_ai")
    result = import_results("inspect", [INSPECT_FIXTURE])
    results, design_path = tmp_path / "results.parquet", tmp_path / "design.yaml"
    result.frame.to_parquet(results)
    result.design.save(design_path)
    out = run_json(capsys, "subgroups", results, "--design", design_path,
                   "--factors", "context_condition,question_polarity", "--level", "1")
    table = pd.DataFrame(out["subgroups"] if isinstance(out, dict) else out)
    got = {str(row["context_condition"]): (row[N], row[DEVIATIONS])
           for _, row in table[table["context_condition"].notna()].iterrows()}
    assert got == _expected(result.frame, "score_choice", "context_condition")
