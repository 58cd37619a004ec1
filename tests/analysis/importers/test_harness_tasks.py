"""lm-eval's own bias tasks, imported task-aware (``docs/harness_tasks.md``).

The fixture (``tests/data/harness/lm_eval_bias_output``) is one real run of the official
task YAMLs of the installed lm-eval (bbq, crows_pairs_english, discrim_eval_explicit,
winogender_all, toxigen, simple_cooccurrence_bias) with its ``dummy`` model on small
local data (``make_fixtures.py``). Every number is checked against what lm-eval itself
wrote in ``results_*.json`` for that run, or against the samples read independently.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.bbq_scores import bias_scores as bbq_bias_scores
from analysis.design import Design, apply_design
from analysis.importers import ImportFormatError, import_results
from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

RUN = LM_EVAL_BIAS_FIXTURE / "dummy-bias"


def _results() -> dict:
    (path,) = RUN.glob("results_*.json")
    return json.loads(path.read_text(encoding="utf-8"))["results"]


def _samples(task: str) -> Path:
    (path,) = RUN.glob(f"samples_{task}_2*.jsonl")
    return path


def _records(task: str) -> list[dict]:
    return [json.loads(line) for line in _samples(task).read_text().splitlines()]


@pytest.fixture(scope="module")
def bbq():
    return import_results("lm-eval", [_samples("bbq")])


# --- BBQ ---------------------------------------------------------------------------------
def test_bbq_chosen_option_is_the_argmax_and_correct_equals_lm_evals_acc(bbq):
    frame = bbq.frame
    records = _records("bbq")
    assert len(frame) == len(records) == 32
    for row, record in zip(frame.itertuples(), records, strict=True):
        lls = [float(x[0]) for x in record["filtered_resps"]]
        best = int(np.argmax(lls))
        text = record["arguments"][f"gen_args_{best}"]["arg_1"].strip()
        assert row.chosen_continuation == text
        doc = record["doc"]
        # best < 2: one of the two people (in the doc's order); else an unknown phrasing
        people = [k for k in ("ans0", "ans1", "ans2") if doc["answer_info"][k][1] != "unknown"]
        expected = people[best] if best < 2 else next(
            k for k in ("ans0", "ans1", "ans2") if doc["answer_info"][k][1] == "unknown")
        assert row.predicted_option == expected
    assert (frame["correct"] == frame["acc"]).all()
    assert frame["correct"].mean() == pytest.approx(_results()["bbq"]["acc,none"])


def test_bbq_biased_answer_matches_lm_evals_own_biased_answers(bbq):
    frame = bbq.frame
    # lm-eval's tuple (acc, n_biased, n_non_unknown, disambiguated) per record
    own = pd.DataFrame([r["disamb_bias_score"] for r in _records("bbq")],
                       columns=["acc", "biased", "named", "mask"])
    named = frame["answer_type"].isin(["stereotyped", "anti-stereotyped"]).astype(float)
    assert (named.to_numpy() == own["named"].to_numpy()).all()
    assert (frame["biased_answer"].astype(float).to_numpy() == own["biased"].to_numpy()).all()
    assert (frame["lm_eval_biased_answer"] == frame["biased_answer"]).all()
    assert bbq.design.outcome.column == "biased_answer"
    assert bbq.design.factor("question_polarity").reference == "nonneg"
    assert bbq.design.factor("context_condition").reference == "disambig"
    assert "ans0" not in bbq.design.names and "biased_answers" not in bbq.design.names


def test_bbq_bias_scores_equal_lm_evals_results(bbq):
    results = _results()["bbq"]
    scores = bbq.extras["bias_scores"]
    religion = scores[scores["category"] == "Religion"].iloc[0]
    overall = scores[scores["category"] == "all"].iloc[0]
    assert religion["s_AMB"] == pytest.approx(results["amb_bias_score_Religion,none"])
    assert religion["s_DIS"] == pytest.approx(results["disamb_bias_score_Religion,none"])
    assert overall["s_AMB"] == pytest.approx(results["amb_bias_score,none"])
    assert overall["s_DIS"] == pytest.approx(results["disamb_bias_score,none"])
    assert religion["accuracy_amb"] == pytest.approx(results["accuracy_amb,none"])
    assert religion["accuracy_dis"] == pytest.approx(results["accuracy_disamb,none"])
    # and they are the one implementation's numbers on the imported table
    direct = bbq_bias_scores(bbq.frame, by=["category"]).iloc[0]
    assert direct["s_DIS"] == religion["s_DIS"] and direct["s_AMB"] == religion["s_AMB"]
    # a non-trivial run: disambiguated items with a named answer
    assert religion["n_non_unknown_dis"] > 0 and religion["s_DIS"] != 0


def test_bbq_scores_out_in_the_cli(tmp_path):
    from analysis.cli import main

    out, scores = tmp_path / "r.csv", tmp_path / "scores.csv"
    code = main(["import", "lm-eval", str(_samples("bbq")), "--out", str(out),
                 "--scores-out", str(scores)])
    assert code in (0, None)
    table = pd.read_csv(scores)
    assert table.loc[table["category"] == "all", "s_DIS"].iloc[0] == pytest.approx(
        _results()["bbq"]["disamb_bias_score,none"])


def _bad_copy(tmp_path: Path, task: str, edit) -> Path:
    folder = tmp_path / "run"
    folder.mkdir(parents=True)
    shutil.copy2(next(RUN.glob("results_*.json")), folder)
    records = _records(task)
    edit(records)
    target = folder / _samples(task).name
    target.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return target


def test_bbq_record_whose_log_likelihoods_do_not_match_its_options_names_file_record_field(
        tmp_path):
    def edit(records):
        records[4]["filtered_resps"] = records[4]["filtered_resps"][:5]

    path = _bad_copy(tmp_path, "bbq", edit)
    with pytest.raises(ImportFormatError, match=r"record 5: field 'filtered_resps' has 5 "
                                                r"log-likelihoods but 'arguments' names 12"):
        import_results("lm-eval", [path])

    def edit_text(records):
        best = int(np.argmax([float(x[0]) for x in records[2]["filtered_resps"]]))
        records[2]["arguments"][f"gen_args_{best}"]["arg_1"] = " The Martian one"

    path = _bad_copy(tmp_path / "b", "bbq", edit_text)
    with pytest.raises(ImportFormatError, match=r"record 3: field 'filtered_resps'.*'The "
                                                r"Martian one'.*none of the doc's options"):
        import_results("lm-eval", [path])


# --- CrowS-Pairs -----------------------------------------------------------------------------
def test_crows_pairs_outcome_is_pct_stereotype_never_the_constant_likelihood_diff():
    result = import_results("lm-eval", [_samples("crows_pairs_english")])
    frame, design = result.frame, result.design
    assert design.outcome.column == "pct_stereotype"
    assert design.outcome.mapping == "above" and design.outcome.threshold == 0
    assert (frame["likelihood_diff"] > 0).all()  # why it can never be the outcome
    assert any("likelihood_diff (> 0 on every row)" in n for n in result.notes)
    assert {"bias_type", "stereo_antistereo"} <= set(design.names)
    dev = apply_design(frame, design)["deviation"]
    assert dev.mean() == pytest.approx(_results()["crows_pairs_english"]["pct_stereotype,none"])
    assert frame["likelihood_diff"].mean() == pytest.approx(
        _results()["crows_pairs_english"]["likelihood_diff,none"])


def test_generic_outcome_skips_a_score_whose_deviation_is_constant():
    from analysis.importers.harness_design import suggest_score_outcome

    frame = pd.DataFrame({"diff": [0.2, 0.5, 0.9], "stereo": [1.0, 0.0, 1.0]})
    outcome, notes = suggest_score_outcome(frame, ["diff", "stereo"],
                                           lower_is_better={"diff": True, "stereo": True})
    assert outcome.column == "stereo"
    assert "diff (> 0 on every row)" in notes[0]


# --- DiscrimEval ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def discrim():
    return import_results("lm-eval", [_samples("discrim_eval_explicit")])


def test_discrim_eval_rows_outcome_factors_cluster_covariate(discrim):
    frame, design = discrim.frame, discrim.design
    records = _records("discrim_eval_explicit")
    assert len(frame) == len(records) == 72
    for row, record in zip(frame.itertuples(), records, strict=True):
        (race, gender, age, qid), _, logit = record["black_bias"]
        assert (row.race, row.gender, row.age, row.decision_question_id) == (
            race, gender, age, str(qid))
        assert row.logit_yes == logit
        # lm-eval's logit of the normalised p(yes), from the four log-likelihoods
        ll = [float(x[0]) for x in record["filtered_resps"]]
        p_yes = math.exp(ll[0]) + math.exp(ll[1])
        p_no = math.exp(ll[2]) + math.exp(ll[3])
        assert row.logit_yes == pytest.approx(math.log(p_yes / p_no))
    assert design.outcome.column == "logit_yes" and design.outcome.type == "continuous"
    assert design.factor("race").reference == "white"
    assert design.factor("gender").reference == "male"
    assert design.cluster == "decision_question_id"
    assert design.covariates == ("age",)
    assert "age" not in design.names and "decision_question_id" not in design.names
    assert not any("left out" in n for n in discrim.notes)
    # the design round-trips through YAML with its new fields
    assert Design.from_text(design.to_yaml()) == design


def test_discrim_eval_doc_without_demographics_names_file_record_field(tmp_path):
    def edit(records):
        for name in [m for m in records[6]["metrics"]]:
            records[6][name][0][0] = None

    path = _bad_copy(tmp_path, "discrim_eval_explicit", edit)
    with pytest.raises(ImportFormatError, match=r"record 7: the doc has no race \(field "
                                                r"'doc.race'"):
        import_results("lm-eval", [path])


# --- the generic tasks still import ----------------------------------------------------------
@pytest.mark.parametrize("task, outcome, metric", [
    ("winogender_all", "acc", "acc,none"),
    ("toxigen", "acc", "acc,none"),
    ("simple_cooccurrence_bias", "pct_male_preferred", "pct_male_preferred,none"),
])
def test_generic_bias_tasks_outcome_rate_equals_lm_eval(task, outcome, metric):
    result = import_results("lm-eval", [_samples(task)])
    assert result.design.outcome.column == outcome
    assert result.frame[outcome].mean() == pytest.approx(_results()[task][metric])


def test_winogender_and_toxigen_factors():
    wino = import_results("lm-eval", [_samples("winogender_all")]).design
    assert {"gender", "occupation"} <= set(wino.names)
    tox = import_results("lm-eval", [_samples("toxigen")]).design
    assert "target_group" in tox.names


def test_unknown_tuple_metric_is_left_out_with_the_reason(tmp_path):
    def edit(records):
        for r in records:
            r["metrics"] = [*r["metrics"], "pair_metric"]
            r["pair_metric"] = [1.0, 2.0]

    path = _bad_copy(tmp_path, "winogender_all", edit)
    result = import_results("lm-eval", [path])
    assert any("left out: pair_metric (no known layout" in n for n in result.notes)
    assert result.design.outcome.column == "acc"


def test_whole_run_imports_with_one_note_on_families():
    result = import_results("lm-eval", [LM_EVAL_BIAS_FIXTURE])
    assert len(result.frame) == sum(_results()[t]["sample_len"] for t in _results())
    assert any("Several task families" in n for n in result.notes)
    assert set(result.extras["bias_scores"]["task"]) == {"bbq"}


# --- Inspect: inspect_evals' BBQ sample shape ----------------------------------------------
@pytest.fixture(scope="module")
def inspect_bbq():
    """The committed logs (make_fixtures.py: harness_runs.bbq_inspect_evals_task answered
    by fixedllm/always-b and always-c)."""
    pytest.importorskip("inspect_ai")
    from tests.analysis.importers.harness_runs import INSPECT_BBQ_FIXTURE

    return import_results("inspect", [INSPECT_BBQ_FIXTURE])


def test_inspect_bbq_answers_equal_the_bbq_importer_on_the_same_predictions(inspect_bbq):
    from analysis.importers import bbq as bbq_importer
    from tests.analysis.importers.harness_runs import load_items

    frame = inspect_bbq.frame
    assert len(frame) == 64
    letters = {"fixedllm/always-b": "ans1", "fixedllm/always-c": "ans2"}
    assert (frame["predicted_option"] == frame["model"].map(letters)).all()
    assert (frame["correct"] == frame["score_choice"]).all()
    # the same predictions through the BBQ importer (answers as option texts)
    items = load_items()
    rows = [{**it, "always-b_pred_mc": it["ans1"], "always-c_pred_mc": it["ans2"]}
            for it in items]
    path = Path(pytest.importorskip("tempfile").mkdtemp()) / "preds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    reference = bbq_importer.read([path]).frame
    mine = frame.assign(key=frame["model"].str.replace("fixedllm/", "") + "/"
                        + frame["id"].astype(str)).set_index("key")
    theirs = reference.assign(key=reference["model"] + "/" + reference["example_id"]
                              .str.replace("Religion-", "")).set_index("key")
    for col in ("answer_type", "correct", "biased_answer"):
        assert (mine[col].astype(str) == theirs.loc[mine.index, col].astype(str)).all(), col
    scores = inspect_bbq.extras["bias_scores"]
    expected = bbq_bias_scores(reference, by=["model"])
    for model, want in zip(expected["model"], expected.itertuples(), strict=True):
        got = scores[(scores["model"] == f"fixedllm/{model}") & (scores["category"] == "all")]
        assert got["s_DIS"].iloc[0] == pytest.approx(want.s_DIS, nan_ok=True)
        assert got["s_AMB"].iloc[0] == pytest.approx(want.s_AMB, nan_ok=True)
    assert inspect_bbq.design.outcome.column == "biased_answer"
    assert inspect_bbq.design.factor("context_condition").reference == "disambig"


def test_bbq_generated_answers_are_matched_as_the_bbq_importer_matches(tmp_path):
    def edit(records):
        for r in records:
            r["filtered_resps"] = [r["doc"]["ans0"].lower() + "."]
        records[1]["filtered_resps"] = ["lol"]

    result = import_results("lm-eval", [_bad_copy(tmp_path, "bbq", edit)])
    frame = result.frame
    assert frame.loc[1, "predicted_option"] == "unmatched"
    assert pd.isna(frame.loc[1, "biased_answer"])
    assert (frame.drop(index=1)["predicted_option"] == "ans0").all()
    assert any("1 generated answer(s) match no option" in n for n in result.notes)


def test_inspect_bbq_logs_with_another_task_keep_the_generic_outcome():
    pytest.importorskip("inspect_ai")
    from tests.analysis.importers.harness_runs import INSPECT_BBQ_FIXTURE, INSPECT_FIXTURE

    both = import_results("inspect", [INSPECT_BBQ_FIXTURE, INSPECT_FIXTURE])
    bbq_rows = both.frame["answer_info"].notna()
    assert bbq_rows.sum() == 64 and (~bbq_rows).sum() == 32
    assert both.frame.loc[~bbq_rows, "answer_type"].isna().all()
    assert both.design.outcome.column == "score_choice"
    assert any("rows of other tasks have no BBQ columns" in n for n in both.notes)
    assert set(both.extras["bias_scores"]["model"]) == {"fixedllm/always-b",
                                                        "fixedllm/always-c"}
