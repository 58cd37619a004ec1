"""analysis.structure: each rule on hand-built tables, the real samples, bad input (#24)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from analysis.design import Design, suggest_design
from analysis.structure import (
    ANSWER_KEY,
    CONSTANT,
    FACTOR,
    ITEM_ID,
    ITEM_TEXT,
    OUTCOME,
    RESPONSE,
    ROW_ID,
    SCORE,
    TEMPLATE,
    cluster_note,
    excluded_cells,
    infer_structure,
    value_aliases,
)
from tests.analysis.cli_helpers import run_json
from tests.conftest import REPO as ROOT
from tests.conftest import SSQA_TABLE, needs_shared

SSQA_SIM = ROOT / "sample_data" / "ssqa_simulated.csv.gz"
BBQ = ROOT / "sample_data" / "bbq_unifiedqa.csv.gz"


def _bench(n_templates: int = 12, items_per_template: int = 5, seed: int = 0) -> pd.DataFrame:
    """A small benchmark built like the real ones: templates fix a gender, items fill a
    template with a group, each item is asked with and without cot to two models."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_templates):
        gender = ["female", "male"][t % 2]
        for i in range(items_per_template):
            item = t * items_per_template + i
            group = ["a", "b", "c", "d", "e"][i % 5]
            question = f"Who in scenario number {t} was the one that did it, {group}?"
            for cot, model in itertools.product(["no", "yes"], ["m1", "m2"]):
                rows.append({"item": f"q{item}", "template": f"T{t}", "gender": gender,
                             "group": group, "question": question, "cot": cot,
                             "model": model, "answer": rng.choice(["x", "y", "z"]),
                             "biased": int(rng.random() < 0.3),
                             "score": float(rng.random())})
    return pd.DataFrame(rows)


def test_roles_of_a_built_benchmark():
    frame = _bench()
    s = infer_structure(frame)
    roles = {c.column: c.role for c in s.columns}
    assert roles == {"item": ITEM_ID, "template": TEMPLATE, "gender": FACTOR, "group": FACTOR,
                     "question": ITEM_TEXT, "cot": FACTOR, "model": FACTOR,
                     "answer": RESPONSE, "biased": OUTCOME, "score": SCORE}
    assert s.item_id == "item" and s.cluster == "template"
    assert s.prompt_unit == ("item", "cot")  # the model replicates rows, cot does not
    assert s.n_prompts == 12 * 5 * 2 and s.n_rows == len(frame)
    assert s.factor_kinds["cot"] == "prompt" and s.factor_kinds["model"] == "model"
    reason = dict(zip(s.table["column"], s.table["reason"], strict=False))["template"]
    assert reason.startswith("12 values, ~5 items, ~20 rows each, each fixes `gender`")
    assert "-> cluster" in reason
    assert "`model` replicates rows" in s.prompt_unit_reason
    # the suggested design: factors without texts, ids or responses; cluster and unit
    design = suggest_design(frame)
    assert design.names == ["gender", "group", "cot", "model"]
    assert design.cluster == "template" and design.prompt_unit == ("item", "cot")
    assert design.outcome.column == "biased"


def test_a_rich_column_crossed_with_another_is_no_item_id():
    # stigma x template fully crossed, no id column: neither is an id; each row a prompt
    frame = pd.DataFrame(list(itertools.product([f"s{i}" for i in range(15)],
                                                [str(t) for t in range(12)], ["p", "q"])),
                         columns=["stigma", "template", "style"])
    s = infer_structure(frame)
    assert s.item_id is None
    assert {c.column: c.role for c in s.columns} == {"stigma": FACTOR, "template": FACTOR,
                                                      "style": FACTOR}
    assert s.n_prompts == len(frame) and "each row is one prompt" in s.prompt_unit_reason
    assert s.cluster is None and "independent" in s.cluster_reason


def test_a_grouping_of_words_fixing_another_is_a_nested_factor_not_a_template():
    words = ["".join(w) for w in itertools.product("xyz", "uvw", "rst")][:20]
    frame = pd.DataFrame([(w, f"group {'abcd'[i % 4]}", str(t), style)
                          for i, w in enumerate(words) for t in range(12)
                          for style in ("p", "q")],
                         columns=["stigma", "cluster", "template", "style"])
    s = infer_structure(frame)
    # stigma fixes cluster but is a grouping of words: a nested factor; template (codes,
    # crossed with stigma) fixes nothing: no template either
    assert s.role("stigma") == FACTOR and s.role("cluster") == FACTOR
    assert s.item_id is None and s.cluster is None


def test_answer_options_and_the_gold_index_are_never_factors():
    n = 40
    frame = pd.DataFrame({
        "id": [f"e{i}" for i in range(n)],
        "ans0": ["Unknown", "the man", "the woman", "Cannot say"] * 10,
        "ans1": ["the man", "Unknown", "Cannot say", "the woman"] * 10,
        "ans2": ["the woman", "Cannot say", "Unknown", "the man"] * 10,
        "label": [0, 1, 2, 1] * 10,
        "polarity": ["neg", "nonneg"] * 20,
        "acc": [1.0, 0.0] * 20})
    s = infer_structure(frame)
    assert [s.role(c) for c in ("ans0", "ans1", "ans2")] == [ITEM_TEXT] * 3
    assert s.role("label") == ANSWER_KEY
    assert "`ans0`, `ans1`, `ans2`" in s.table.set_index("column").loc["label", "reason"]
    assert suggest_design(frame).names == ["polarity"]


def test_constant_and_unique_columns():
    frame = pd.DataFrame({"rid": range(30), "k": ["x"] * 30,
                          "item": [f"i{i // 3}" for i in range(30)],
                          "fmt": ["a", "b", "c"] * 10,
                          "attr": [f"g{(i // 3) % 2}" for i in range(30)]})
    s = infer_structure(frame)
    assert s.role("k") == CONSTANT
    assert s.role("rid") == ROW_ID and s.item_id == "item"  # rows are not items
    assert s.prompt_unit == ("item", "fmt")


def test_value_aliases_by_hand():
    # SSQA's shape: the base prompt has no stigma and no gender; every other prompt has both
    rows = [("base", "none", "none")] * 6 + [
        (p, s, g) for p in ("orig", "pos") for s in ("s1", "s2", "s3") for g in ("f", "m")]
    frame = pd.DataFrame(rows, columns=["style", "stigma", "gender"])
    found = {(a.column, a.value, a.other, a.other_value, a.n_rows)
             for a in value_aliases(frame, ["style", "stigma", "gender"])}
    assert found == {("style", "base", "stigma", "none", 6), ("style", "base", "gender", "none", 6),
                     ("stigma", "none", "style", "base", 6),
                     ("stigma", "none", "gender", "none", 6),
                     ("gender", "none", "style", "base", 6),
                     ("gender", "none", "stigma", "none", 6)}
    # too few rows behind a value: no alias (chance, not structure)
    assert value_aliases(frame, ["style", "stigma"], min_rows=7) == []
    # the grid: 3 x 4 x 3 = 36 combinations, 13 possible (12 crossed + the base one)
    values = [("base", "orig", "pos"), ("none", "s1", "s2", "s3"), ("f", "m", "none")]
    ex = excluded_cells(frame, ["style", "stigma", "gender"], values)
    assert ex.n_excluded == 36 - 13
    allowed = [c for c, bad in zip(itertools.product(*values), ex.mask, strict=True) if not bad]
    assert ("base", "none", "none") in allowed and len(allowed) == 13
    assert all((c[0] == "base") == (c[1] == "none") == (c[2] == "none") for c in allowed)


def test_nesting_excludes_unseen_pairs_of_seen_values_only():
    frame = pd.DataFrame({"stigma": ["a", "b", "c", "d"] * 3, "cluster": ["x", "x", "y", "y"] * 3,
                          "style": ["p"] * 4 + ["q"] * 4 + ["r"] * 4})
    values = [("a", "b", "c", "d", "new"), ("x", "y"), ("p", "q", "r")]
    ex = excluded_cells(frame, ["stigma", "cluster", "style"], values)
    # a, b only with x; c, d only with y: 4 impossible pairs x 3 styles; "new" is unknown
    assert ex.n_excluded == 4 * 3
    assert ex.reasons == ("12 by nesting: cluster is fixed by stigma",)


# --- bad input: a clear note of what was assumed ---------------------------------------------
def test_no_structure_one_column_all_unique():
    s = infer_structure(pd.DataFrame({"x": [f"v{i}" for i in range(50)]}))
    assert s.role("x") == ROW_ID and s.item_id is None and s.cluster is None
    assert any("each row is taken as one independent prompt" in n for n in s.notes)
    assert s.n_prompts == 50


def test_declared_cluster_missing_constant_or_one_row_each():
    """One judge (analysis.clusters.resolve_cluster): the design check's sentence is the
    note the analyses print, word for word."""
    from analysis.clusters import resolve_cluster

    frame = pd.DataFrame({"t": ["a"] * 6, "r": range(6), "g": [1, 1, 2, 2, 3, 3]})
    assert cluster_note(frame, "nope") == (
        "The design's cluster column 'nope' is not in the table: rows are treated as "
        "independent (standard errors and p-values assume no clustering).")
    assert cluster_note(frame, "t") == (
        "The cluster column 't' has the single value 'a' in the rows analysed: there is "
        "nothing to cluster over, rows are treated as independent.")
    assert cluster_note(frame, "r") == (
        "Every value of the cluster column 'r' marks a single row: each row is its own "
        "cluster, the same as independent rows (the plain standard errors).")
    assert cluster_note(frame, "g") is None and cluster_note(frame, None) is None
    for c in ("nope", "t", "r"):
        note = resolve_cluster(frame, c, declared=True).notes[0]
        assert cluster_note(frame, c) == note[0].upper() + note[1:] + "."
    assert resolve_cluster(frame, "g", declared=True).column == "g"


def test_not_a_table():
    from analysis.errors import AnalysisError

    with pytest.raises(AnalysisError, match="DataFrame"):
        infer_structure([1, 2])
    with pytest.raises(AnalysisError, match="no rows"):
        infer_structure(pd.DataFrame({"a": []}))


def test_design_file_keeps_the_structure_and_old_files_still_load(tmp_path):
    design = suggest_design(_bench())
    path = tmp_path / "d.yaml"
    design.save(path)
    again = Design.load(path)
    assert again == design and again.inferred["cluster"] == "template"
    assert any(r.startswith("template: 12 values") for r in again.inferred["reasons"])
    old = {k: v for k, v in design.to_dict().items() if k != "structure"}
    assert Design.from_dict(old) == design  # a file without the block loads as before
    with pytest.raises(Exception, match="'structure' must be a mapping"):
        Design.from_dict({**old, "structure": [1]})


# --- the real samples ----------------------------------------------------------------------------
def test_bbq_sample_structure():
    s = infer_structure(pd.read_csv(BBQ))
    assert s.item_id == "example_id" and s.cluster == "template_id"
    assert s.prompt_unit == ("example_id", "input_format")
    for c in ("context", "question", "ans0", "ans1", "ans2"):
        assert s.role(c) == ITEM_TEXT, c
    assert {s.role(c) for c in ("label", "stereotyped_option", "unknown_option")} == {ANSWER_KEY}
    assert s.role("prediction") == RESPONSE


def test_ssqa_sample_structure_and_aliases():
    s = infer_structure(pd.read_csv(SSQA_SIM))
    assert (s.item_id, s.cluster, s.prompt_unit) == ("row_in_ssqa", "template",
                                                       ("row_in_ssqa", "cot"))
    assert s.n_prompts == 20720 and s.role("model") == FACTOR and s.role("answer") == RESPONSE
    assert ("prompt_style", "base", "stigma", "no stigma") in {
        (a.column, a.value, a.other, a.other_value) for a in s.aliases}


@needs_shared
def test_coverage_of_the_ssqa_factor_table_counts_its_rows_without_a_flag(capsys):
    """Issue #24: rows are distinct prompts, so the default equals --count responses."""
    cmd = ["coverage", str(SSQA_TABLE), "--factors",
           "cot,stigma,gender,prompt_style,biased_answer"]
    prompts, responses = run_json(capsys, *cmd), run_json(capsys, *cmd, "--count", "responses")
    keys = ("n_cells", "n_observed_cells", "n_rows", "coverage_percentage", "gini_index",
            "gini_index_observed", "per_factor_gini")
    assert {k: prompts[k] for k in keys} == {k: responses[k] for k in keys}
    assert prompts["n_rows"] == 20720 and prompts["prompt_unit"] == ["row_in_ssqa", "cot"]
    # the item id crossed with cot in the grid: (item, cot) prompts, named so (issue 42)
    assert ("2,236 hold the 20,720 distinct prompts (row_in_ssqa x cot: an item counted once "
            "per cot) of the 20,720 rows") in prompts["reading"][0]
    assert prompts["count_unit"] == ["row_in_ssqa"]


def test_coverage_of_the_simulated_ssqa_counts_prompts_not_model_replicates(capsys):
    cmd = ["coverage", str(SSQA_SIM), "--factors", "stigma,prompt_style"]
    prompts, responses = run_json(capsys, *cmd), run_json(capsys, *cmd, "--count", "responses")
    # two models; without cot in the grid the cells count the 10,360 items (issue 42:
    # the item id counts); n_rows is rows in both
    assert responses["n_rows"] == 41440 == prompts["n_rows"]
    assert prompts["n_counted"] == 10360 and responses["n_counted"] == 41440


def test_plan_on_the_ssqa_sample_proposes_no_impossible_prompt(capsys):
    out = run_json(capsys, "plan", SSQA_SIM, "--factors", "stigma,gender,prompt_style",
                   "--budget", "500")
    assert sum(a["n"] for a in out["add"]) == 500
    impossible = [a for a in out["add"] if not (
        (a["prompt_style"] == "base") == (a["stigma"] == "no stigma")
        == (a["gender"] == "no gender"))]
    assert impossible == []
    assert out["n_excluded"] == 1504 - 838 and "ruled out by constraints" in out["notes"][0]
    assert json.dumps(out)  # JSON all the way
    # a subset without the base prompts: the rules still come from every row
    sub = run_json(capsys, "plan", SSQA_SIM, "--factors", "pachankis_cluster,gender,prompt_style",
                   "--where", "prompt_style=original,doubt,positive", "--budget", "200")
    assert sub["n_excluded"] > 0 and sum(a["n"] for a in sub["add"]) == 200
    assert not [a for a in sub["add"] if "no gender" in (a["gender"],)
                or a["pachankis_cluster"] == "no stigma"]


def test_describe_prints_the_structure(capsys):
    from analysis.cli import main

    assert main(["describe", str(SSQA_SIM)]) == 0
    text = capsys.readouterr().out
    assert "template: 37 values, ~280 items, ~1,120 rows each, each fixes `biased_answer`" in text
    assert "prompt unit: `row_in_ssqa` identifies the item; `cot` varies within it" in text
    assert "Cluster: template" in text


def test_a_declared_cluster_that_cannot_cluster_is_a_design_warning():
    from analysis.design import check_design, make_factor

    frame = pd.DataFrame({"g": ["a", "b"] * 5, "t": ["x"] * 10, "r": range(10),
                          "y": [0, 1] * 5})
    base = Design(factors=(make_factor(frame, "g"),))
    assert check_design(base.with_cluster("t"), frame) == [
        "The cluster column 't' has the single value 'x' in the rows analysed: there is "
        "nothing to cluster over, rows are treated as independent."]
    assert "each row is its own cluster" in check_design(base.with_cluster("r"), frame)[0]
    # a missing one too: the analyses treat rows as independent and say so (clusters.py)
    assert check_design(base.with_cluster("nope"), frame) == [
        "The design's cluster column 'nope' is not in the table: rows are treated as "
        "independent (standard errors and p-values assume no clustering)."]
