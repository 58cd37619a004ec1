"""Issue 41 items 1-2: constraints vs design gaps, template variants in ``plan``.

Hand-computed on a two-template table, and on the shared SSQA factor table
(``tests/data/ssqa/ssqa_factor_table.csv.gz``, a copy of the shared one: 37
templates that each fix gender and biased_answer; the multi-factor paper's section
3.2.1 asks for both biased answers of every template)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import analysis.api as bw
from analysis.cli import main
from analysis.constraints import Constraint, constraint_mask, propose_constraints
from analysis.coverage import gini_index
from analysis.design import Design, check_design
from analysis.errors import BudgetError, DesignError, DesignMismatchError
from tests.app.apptools import ROOT

#: The repository's copy of the shared table (identical rows: tests/data/README.md), so
#: these tests run on every machine.
SSQA_TABLE = ROOT / "tests" / "data" / "ssqa" / "ssqa_factor_table.csv.gz"
SSQA_FACTORS = "stigma,gender,prompt_style,biased_answer,cot"
TWO = ROOT / "tests" / "data" / "bad" / "plan_budget_below_variant.csv"


def _two_templates() -> pd.DataFrame:
    return pd.read_csv(TWO, dtype=str)


def test_two_templates_by_hand():
    # t1 fixes (female, no), t2 (male, yes); stigma varies within each: the grid
    # gender x biased_answer x stigma has 8 combinations, 4 observed, 4 design gaps
    r = bw.plan(_two_templates(), factors="gender,biased_answer,stigma", budget=4,
                template="template")
    plan = r.raw
    assert plan.n_gaps == 4 and plan.n_constraint == 0 and plan.n_excluded == 0
    assert plan.after["coverage_percentage"] == 1.0 and plan.after["gini_index"] == 0.0
    add = r.table
    assert set(add["kind"]) == {"variant"} and add["n"].sum() == 4
    # each variant flips biased_answer of its template (the cheaper factor by name tie)
    assert {(t, g, b) for t, g, b in zip(add["template"], add["gender"].astype(str),
                                         add["biased_answer"].astype(str),
                                         strict=True)} == {("t1", "female", "yes"),
                                                           ("t2", "male", "no")}
    v = r.tables["variants"]
    assert list(v["n_prompts"]) == [2, 2, 2, 2] and list(v["new_cells"]) == [2, 2, 0, 0]
    # after the first variant: counts [1,1,0,0,1,1,1,1] (or its mirror): coverage 6/8
    assert v["coverage_percentage"].iloc[0] == 0.75
    assert v["gini_index"].iloc[0] == pytest.approx(gini_index(np.array([1, 1, 0, 0, 1, 1,
                                                                          1, 1])))
    assert v["gini_index"].iloc[0] == pytest.approx(0.25)  # 1 - 2 (1/6) (18/8)
    assert list(v["n_planned"]) == [2, 2, 0, 0]
    c = r.tables["crossings"]
    assert list(c["n_prompts"]) == [4, 4] and list(c["new_cells"]) == [4, 4]
    # inside the observed structure: no variant, the 4 prompts level the 4 observed cells
    inside = bw.plan(_two_templates(), factors="gender,biased_answer,stigma", budget=4,
                     template="template", within_structure=True)
    assert set(inside.table["kind"]) == {"fill"}
    assert inside.raw.after["coverage_percentage"] == 0.5


def test_budget_below_one_whole_variant():
    with pytest.raises(BudgetError, match="smaller than one template variant.*yields 2 "
                                          "prompts. Raise the budget to at least 2"):
        bw.plan(_two_templates(), factors="gender,biased_answer,stigma", budget=1,
                template="template", whole_variants=True)
    r = bw.plan(_two_templates(), factors="gender,biased_answer,stigma", budget=3,
                template="template", whole_variants=True)
    # one whole variant (2 prompts), the last prompt levels the thinnest observed cell
    assert r.table.groupby("kind")["n"].sum().to_dict() == {"fill": 1, "variant": 2}


def test_constraints_in_the_design_file_round_trip_and_name_violating_rows():
    text = """
factors:
  - {name: model, values: [m1, m2]}
  - {name: category, values: [a, b]}
constraints:
  - if: {model: m1}
    then: {category: a}
"""
    design = Design.from_text(text)
    assert design.constraints == (Constraint((("model", "m1"),), (("category", ("a",)),)),)
    assert Design.from_text(design.to_yaml()) == design
    assert design.subset(["model"]).constraints == ()  # nothing left to constrain
    frame = pd.read_csv(ROOT / "tests" / "data" / "bad" / "good_results.csv")
    with pytest.raises(DesignMismatchError, match=r"violated by 1 row of the table: row 2 "):
        check_design(design, frame)
    with pytest.raises(DesignError, match="needs exactly the keys 'if' and 'then'"):
        Design.from_text(text.replace("then:", "than:"))
    mask, reasons = constraint_mask(design.constraints, ["model", "category"],
                                    [("m1", "m2"), ("a", "b")])
    assert mask.tolist() == [False, True, False, False]  # (m1, b) only
    assert reasons == ("1 by model = m1 implies category = a",)


def test_proposed_constraints_only_for_control_values():
    frame = pd.DataFrame({"style": ["base", "base", "x", "x", "y", "y"],
                          "stigma": ["none", "none", "s1", "s2", "s1", "s2"],
                          "gender": ["f", "m", "f", "m", "f", "f"]})
    proposed = propose_constraints(frame, ["style", "stigma", "gender"])
    assert [c.describe() for c in proposed] == [
        "style = base implies stigma = none", "stigma = none implies style = base"]
    assert proposed[0].reason.startswith("all 2 rows with style = base have stigma = none")


@pytest.fixture(scope="module")
def ssqa():
    return pd.read_csv(SSQA_TABLE, dtype=str)


def test_ssqa_plan_proposes_the_biased_answer_variants(ssqa):
    r = bw.plan(ssqa, factors=SSQA_FACTORS, budget=500)
    plan, add = r.raw, r.table
    # 6,016 combinations, 2,236 observed (37.17 %); of the 3,780 empty ones 2,664 break a
    # control-value constraint and 1,116 = 2 x 93 stigmas x 3 styles x 2 cot are gaps
    assert plan.before["coverage_percentage"] == pytest.approx(2236 / 6016)
    assert plan.n_constraint == 2664 and plan.n_gaps == 1116
    assert plan.after["coverage_percentage"] == pytest.approx(2736 / 6016)  # 45.48 %
    assert set(add["kind"]) == {"variant"} and add["n"].sum() == 500
    assert set(add["biased_answer"].astype(str)) == {"yes"}
    assert set(add["gender"].astype(str)) == {"female", "male"}
    base = add[add["prompt_style"].astype(str) == "base"]
    assert (base["stigma"].astype(str) == "no stigma").all()
    # the variants named are real templates of that gender with biased_answer = no
    fixed = ssqa[ssqa["prompt_style"] != "base"].groupby("template")[
        ["gender", "biased_answer"]].first()
    for t, g in zip(add["template"], add["gender"].astype(str), strict=True):
        assert tuple(fixed.loc[t]) == (g, "no")
    v = r.tables["variants"]
    # the first 37 ranked variants are the paper's extension: every template with the
    # other biased answer, 560 prompts each (558 + its two base prompts)
    first = v.head(37)
    assert set(first["factor"]) == {"biased_answer"} and first["template"].nunique() == 37
    assert set(first["n_prompts"]) == {560} and first["new_cells"].sum() == 1116
    assert first["coverage_percentage"].iloc[-1] == pytest.approx(3352 / 6016)
    c = r.tables["crossings"].set_index("factor")
    assert c.loc["biased_answer", "n_prompts"] == 37 * 560
    assert c.loc["gender", "n_prompts"] == 74 * 558
    assert c.loc["biased_answer", "new_cells"] == 1116
    assert any("2,664 are ruled out by constraints" in n and "1,116 are design gaps" in n
               for n in r.notes)


def test_ssqa_plan_cli_within_structure_and_whole_variants(ssqa, capsys, tmp_path):
    args = ["plan", str(SSQA_TABLE), "--factors", SSQA_FACTORS, "--budget", "500"]
    assert main([*args, "--out", str(tmp_path / "add.csv")]) == 0
    out = capsys.readouterr().out
    assert "Coverage 37.17 % -> 45.48 %" in out
    assert "1. template 6 with biased_answer = yes (instead of no): 560 prompts" in out
    written = pd.read_csv(tmp_path / "add.csv", dtype=str)
    assert list(written.columns) == [*SSQA_FACTORS.split(","), "n", "kind", "template"]
    assert main([*args, "--within-structure", "--json"]) == 0
    inside = json.loads(capsys.readouterr().out)
    assert inside["after"]["coverage_percentage"] == inside["before"]["coverage_percentage"]
    assert {a["kind"] for a in inside["add"]} == {"fill"}
    assert main([*args, "--whole-variants"]) == 2
    assert "smaller than one template variant" in capsys.readouterr().err
    assert main([*args[:-1], "1200", "--whole-variants", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["after"]["coverage_percentage"] == pytest.approx(3352 / 6016)
    assert sum(a["n"] for a in whole["add"] if a["kind"] == "variant") == 2 * 560


def test_ssqa_declared_constraints_replace_the_proposals(ssqa):
    _, design, _ = bw.prepare_inputs(ssqa, None, factors=SSQA_FACTORS, need_outcome=False)
    declared = design.with_constraints([]).with_cluster("template")
    r = bw.plan(ssqa, declared, factors=SSQA_FACTORS, budget=500)
    # no constraint: base with a stigma is left out by the observed structure instead
    assert r.raw.n_constraint == 0
    assert r.raw.n_gaps == 3780
    assert not ((r.table["prompt_style"].astype(str) == "base")
                & (r.table["stigma"].astype(str) != "no stigma")).any()


@pytest.mark.parametrize("budget", [500, 3000])
def test_ssqa_after_equals_the_grown_table_recomputed(ssqa, budget):
    """Independent route: append the proposed prompts to the factor table (each variant
    row as a prompt of that template) and recompute coverage and Gini; the variants'
    prompts keep their template's other values and change only the nested factor."""
    from analysis.cells import cell_table
    from analysis.coverage import coverage_summary

    r = bw.plan(ssqa, factors=SSQA_FACTORS, budget=budget)
    factors = SSQA_FACTORS.split(",")
    add = r.table
    assert add["n"].sum() == budget
    grown = pd.concat([ssqa[[*factors, "template"]],
                       add.loc[add.index.repeat(add["n"]), [*factors, "template"]].astype(str)],
                      ignore_index=True)
    _, design, _ = bw.prepare_inputs(grown, None, factors=SSQA_FACTORS, need_outcome=False)
    after = coverage_summary(cell_table(grown, factors, with_outcome=False), design,
                             factors=factors).iloc[0]
    assert r.raw.after["coverage_percentage"] == pytest.approx(after["coverage_percentage"])
    assert r.raw.after["gini_index"] == pytest.approx(after["gini_index"], abs=1e-12)
    # one prompt per (combination, template): a variant never repeats a prompt
    variant = add[add["kind"] == "variant"]
    assert (variant["n"] == 1).all()
    assert not variant.duplicated([*factors, "template"]).any()
    # each variant prompt's template holds the same stigma / style / cot combination
    seen = set(map(tuple, ssqa[["template", "stigma", "prompt_style", "cot"]].values))
    assert all((t, s, p, c) in seen for t, s, p, c in
               variant[["template", "stigma", "prompt_style", "cot"]].astype(str).values)


def test_ssqa_whole_variants_with_the_papers_budget_is_the_papers_extension(ssqa):
    # 37 templates x 560 prompts: every template with its other biased answer (section
    # 3.2.1 of the multi-factor paper); coverage reaches every allowed combination
    r = bw.plan(ssqa, factors=SSQA_FACTORS, budget=37 * 560, whole_variants=True)
    add, v = r.table, r.tables["variants"]
    assert set(add["kind"]) == {"variant"} and add["n"].sum() == 20720
    bought = v[v["n_planned"] > 0]
    assert len(bought) == 37 and set(bought["factor"]) == {"biased_answer"}
    assert set(bought["template"]) == set(ssqa["template"])
    assert (bought["n_planned"] == 560).all()
    assert r.raw.after["coverage_percentage"] == pytest.approx(3352 / 6016)
    assert r.raw.after["gini_index"] == pytest.approx(
        r.tables["crossings"].set_index("factor").loc["biased_answer", "gini_index"])
    # inside the observed structure the same variants are ranked, none is used
    inside = bw.plan(ssqa, factors=SSQA_FACTORS, budget=500, within_structure=True)
    assert set(inside.table["kind"]) == {"fill"}
    assert inside.tables["variants"]["n_planned"].sum() == 0
    assert any("not proposed: --within-structure" in n for n in inside.notes)


def test_describe_lists_the_proposed_constraints(capsys):
    sample = ROOT / "sample_data" / "ssqa_simulated.csv.gz"
    assert main(["describe", str(sample), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    messages = {c["message"]: c for c in out["proposed_constraints"]}
    base = next(m for m in messages if m.startswith("prompt_style = base implies"))
    assert messages[base]["if"] == {"prompt_style": "base"}
    assert messages[base]["then"]["stigma"] == "no stigma"
    assert messages[base]["then"]["gender"] == "no gender"
    assert messages[base]["reason"].startswith("all 148 rows with prompt_style = base")
    # what describe proposes, a design file declares and reads back
    design = Design.from_dict({"factors": [{"name": f, "values": v} for f, v in [
        ("prompt_style", ["base", "original"]), ("stigma", ["no stigma", "x"]),
        ("gender", ["no gender", "female"])]], "constraints": [
        {"if": messages[base]["if"], "then": {k: messages[base]["then"][k]
                                               for k in ("stigma", "gender")}}]})
    assert design.constraints[0].describe() == (
        "prompt_style = base implies stigma = no stigma and gender = no gender")
