"""lm-evaluation-harness importer: real lm-eval output (committed and run live), bad input.

The committed run (``tests/data/harness/lm_eval_output``) makes most tests fast; one
module-scoped fixture runs ``lm_eval --model dummy --log_samples`` for real (about 25 s).
Numbers are checked against lm-eval's own aggregates in the results JSON and against the
items file read independently.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis.importers import ImportFormatError, import_results
from analysis.importers import lm_eval as importer
from tests.analysis.importers.harness_runs import (
    LM_EVAL_FIXTURE,
    load_items,
    run_lm_eval,
)

RUN_DIR = LM_EVAL_FIXTURE / "dummy-bbq"
N_ITEMS = 32
#: Records per run: the multiple-choice task once, the generation task under two filters.
N_RECORDS = 3 * N_ITEMS
GEN_FILTERS = ("strict-match", "flexible-extract")


def _results_json() -> dict:
    (path,) = RUN_DIR.glob("results_*.json")
    return json.loads(path.read_text(encoding="utf-8"))


def _samples_file(task: str) -> Path:
    (path,) = RUN_DIR.glob(f"samples_{task}_*.jsonl")
    return path


@pytest.fixture(scope="module")
def imported():
    return import_results("lm-eval", [LM_EVAL_FIXTURE])


@pytest.fixture(scope="module")
def live_run(tmp_path_factory) -> Path:
    pytest.importorskip("lm_eval")
    return run_lm_eval(tmp_path_factory.mktemp("lm_eval"), model_name="dummy-live")


def test_rows_are_items_times_tasks_and_filters_with_doc_fields(imported):
    frame = imported.frame
    assert len(frame) == N_RECORDS
    assert imported.counts == {"files": 2, "rows_read": 96, "rows_out": 96, "filtered_out": 0}
    assert frame.groupby(["task", "filter"]).size().to_dict() == {
        ("bbq_religion_gen", "flexible-extract"): 32, ("bbq_religion_gen", "strict-match"): 32,
        ("bbq_religion_mc", "none"): 32}
    assert not frame.duplicated(["task", "filter", "doc_id"]).any()
    items = load_items()
    for _, row in frame.iterrows():
        item = items[row["doc_id"]]
        assert row["example_id"] == item["example_id"]
        assert row["question_polarity"] == item["question_polarity"]
        assert row["context_condition"] == item["context_condition"]
        assert row["additional_metadata.subcategory"] == item["additional_metadata"]["subcategory"]
        # nested lists become JSON text, so they count as ordinary values
        assert json.loads(row["additional_metadata.stereotyped_groups"]) == \
            item["additional_metadata"]["stereotyped_groups"]
        assert json.loads(row["answer_info.ans0"]) == item["answer_info"]["ans0"]


def test_metrics_agree_with_lm_evals_own_aggregates(imported):
    frame = imported.frame
    results = _results_json()["results"]
    mc = frame[frame["task"] == "bbq_religion_mc"]
    gen = frame[frame["task"] == "bbq_religion_gen"]
    assert set(mc["acc"].unique()) <= {0.0, 1.0}
    assert mc["acc"].mean() == pytest.approx(results["bbq_religion_mc"]["acc,none"])
    assert mc["acc_norm"].mean() == pytest.approx(results["bbq_religion_mc"]["acc_norm,none"])
    for name in GEN_FILTERS:
        rows = gen[gen["filter"] == name]
        assert rows["exact_match"].mean() == pytest.approx(
            results["bbq_religion_gen"][f"exact_match,{name}"])
    # a metric is missing (not 0) on the rows of the task that does not compute it
    assert gen["acc"].isna().all() and mc["exact_match"].isna().all()
    # the dummy model generates "lol": lower-cased by one filter, no match for the regex
    responses = gen.groupby("filter")["response"].unique().map(list).to_dict()
    assert responses == {"flexible-extract": ["lol"], "strict-match": ["[invalid]"]}


def test_model_and_settings_come_from_the_results_json(imported):
    frame = imported.frame
    assert (frame["model"] == "dummy-bbq").all()
    assert (frame["model_source"] == "dummy").all()
    assert (frame["model_args"] == "pretrained=dummy-bbq").all()
    assert (frame["num_fewshot"] == 0).all() and (frame["random_seed"] == 0).all()
    gen = frame["task"] == "bbq_religion_gen"
    assert (frame.loc[gen, "gen_kwargs.max_gen_toks"] == 16).all()
    assert (frame.loc[gen, "gen_kwargs.temperature"] == 0).all()
    assert (frame.loc[gen, "gen_kwargs.until"] == '["\\n"]').all()
    assert frame.loc[~gen, "gen_kwargs.max_gen_toks"].isna().all()


def test_suggested_design(imported):
    design = imported.design
    kinds = {f.name: f.kind for f in design.factors}
    # one model: `model` is not a factor (the written design is usable as it is, #38)
    assert "model" not in kinds and kinds["task"] == "prompt"
    assert any("'model' has the single value" in n for n in imported.notes)
    assert kinds["filter"] == "prompt"
    assert design.factor("filter").values == ("flexible-extract", "none", "strict-match")
    assert kinds["question_polarity"] == "prompt" and kinds["context_condition"] == "prompt"
    # ids, constants and settings that only vary by being absent are not factors
    for name in ("example_id", "doc_id", "category", "gen_kwargs.max_gen_toks", "num_fewshot"):
        assert name not in kinds
    # exact_match covers 64 rows (two filters) but is 0 everywhere: acc (32 rows) is chosen
    assert design.outcome.column == "acc"
    assert (design.outcome.mapping, design.outcome.threshold) == ("below", 1.0)


def test_a_results_file_reads_the_samples_beside_it(imported):
    (results_path,) = RUN_DIR.glob("results_*.json")
    again = import_results("lm-eval", [results_path])
    pd.testing.assert_frame_equal(again.frame, imported.frame)


def test_one_samples_file_and_answer_filter():
    result = import_results("lm-eval", [_samples_file("bbq_religion_mc")])
    assert len(result.frame) == N_ITEMS and set(result.frame["task"]) == {"bbq_religion_mc"}
    kept = import_results("lm-eval", [LM_EVAL_FIXTURE], answer_filter="strict-match")
    assert len(kept.frame) == N_ITEMS and kept.counts["filtered_out"] == 2 * N_ITEMS
    assert set(kept.frame["filter"]) == {"strict-match"} and "filter" not in kept.design.names
    with pytest.raises(ImportFormatError, match="'majority'.*'flexible-extract', 'none', "
                                                "'strict-match'"):
        import_results("lm-eval", [LM_EVAL_FIXTURE], answer_filter="majority")


def test_the_model_option_overrides_the_name():
    result = import_results("lm-eval", [LM_EVAL_FIXTURE], model="my-model")
    assert set(result.frame["model"]) == {"my-model"}
    assert any("'model' has the single value 'my-model'" in n for n in result.notes)


def test_live_run_and_two_models_concatenate(live_run, imported):
    live = import_results("lm-eval", [live_run])
    assert len(live.frame) == N_RECORDS
    assert set(live.frame["model"]) == {"dummy-live"}
    assert {"question_polarity", "context_condition", "task"} <= set(live.design.names)
    assert "model" not in live.design.names  # one model: not a factor
    assert live.design.outcome.column == "acc"
    # the same seed (0) and the same requests: the dummy model draws the same numbers
    results = json.loads(next(live_run.glob("results_*.json")).read_text())["results"]
    mc = live.frame[live.frame["task"] == "bbq_religion_mc"]
    assert mc["acc"].mean() == pytest.approx(results["bbq_religion_mc"]["acc,none"])
    both = import_results("lm-eval", [LM_EVAL_FIXTURE, live_run])
    assert len(both.frame) == 2 * N_RECORDS
    assert both.design.factor("model").values == ("dummy-bbq", "dummy-live")
    assert both.frame.groupby("model").size().to_dict() == {"dummy-bbq": 96, "dummy-live": 96}


# --- bad input ------------------------------------------------------------------------------
def _copy_run(tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(RUN_DIR, target)
    return target


def test_a_file_of_another_format_names_the_file_and_field(tmp_path):
    items = tmp_path / "samples_bbq_2026-01-01T00-00-00.jsonl"
    shutil.copy(Path(__file__).parents[2] / "data" / "harness" / "bbq_religion_items.jsonl",
                items)
    with pytest.raises(ImportFormatError, match=rf"{items.name}: line 1 .*field 'doc' is missing"):
        import_results("lm-eval", [items])
    table = tmp_path / "results.csv"
    table.write_text("model,acc\na,1\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"results.csv: line 1 is not JSON"):
        import_results("lm-eval", [table])


def test_an_empty_samples_file(tmp_path):
    run = _copy_run(tmp_path)
    _samples_file_in(run, "bbq_religion_mc").write_text("", encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"samples_bbq_religion_mc_.*\.jsonl: the samples "
                                                r"file is empty"):
        import_results("lm-eval", [run])


def _samples_file_in(run: Path, task: str) -> Path:
    (path,) = run.glob(f"samples_{task}_*.jsonl")
    return path


def test_samples_without_results_json_need_a_model_name(tmp_path):
    lone = tmp_path / _samples_file("bbq_religion_mc").name
    shutil.copy(_samples_file("bbq_religion_mc"), lone)
    with pytest.raises(ImportFormatError, match=rf"{lone.name}: no results_\*\.json .*--model"):
        import_results("lm-eval", [lone])
    result = import_results("lm-eval", [lone], model="gpt-x")
    assert set(result.frame["model"]) == {"gpt-x"} and len(result.frame) == N_ITEMS
    assert result.frame["num_fewshot"].isna().all()
    assert any("no results JSON" in note for note in result.notes)


def test_a_results_json_that_is_not_one(tmp_path):
    run = _copy_run(tmp_path)
    (results_path,) = run.glob("results_*.json")
    results_path.write_text('{"results": {}}', encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"results_.*\.json: not an lm-eval results JSON: "
                                                r"the field 'config'"):
        import_results("lm-eval", [run])


def test_a_log_without_any_scalar_metric(tmp_path):
    run = _copy_run(tmp_path)
    path = _samples_file_in(run, "bbq_religion_gen")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:  # as written by --predict_only: the 'bypass' placeholder
        del record["exact_match"]
        record["metrics"] = ["bypass"]
        record["bypass"] = 999
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(ImportFormatError, match=r"samples_bbq_religion_gen_.*field 'metrics' "
                                                r"lists none"):
        import_results("lm-eval", [path])


def test_metrics_that_are_not_one_number_are_left_out_with_a_note(tmp_path):
    # a tuple metric of no known task family is left out, with a note
    run = _copy_run(tmp_path)
    path = _samples_file_in(run, "bbq_religion_mc")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        record["metrics"].append("pair_score")
        record["pair_score"] = [record["acc"], 1.0, 1.0, False]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = import_results("lm-eval", [path])
    assert "pair_score" not in result.frame.columns
    assert any("left out: pair_score (no known layout" in note for note in result.notes)


def test_bbq_tuple_metrics_on_bbq_docs_are_read_as_lm_evals_bbq_task(tmp_path):
    # lm-eval's own BBQ task logs bias-score tuples: the BBQ family reads the answer
    run = _copy_run(tmp_path)
    path = _samples_file_in(run, "bbq_religion_mc")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        record["metrics"].append("amb_bias_score")
        record["amb_bias_score"] = [record["acc"], 1.0, 1.0, False]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = import_results("lm-eval", [path])
    assert "amb_bias_score" not in result.frame.columns
    assert (result.frame["correct"] == result.frame["acc"]).all()
    assert result.design.outcome.column == "biased_answer"


def test_missing_paths_and_folders_without_samples(tmp_path):
    with pytest.raises(ImportFormatError, match="no such file or folder"):
        import_results("lm-eval", [tmp_path / "nope"])
    with pytest.raises(ImportFormatError, match=r"no samples_\*\.jsonl .*--log_samples"):
        import_results("lm-eval", [tmp_path])


def test_model_name_rule_matches_lm_eval():
    tracker = pytest.importorskip("lm_eval.loggers.evaluation_tracker")
    GeneralConfigTracker = tracker.GeneralConfigTracker  # noqa: N806

    for args in ("pretrained=EleutherAI/pythia-70m,dtype=float32", "model=gpt-4o,base_url=x",
                 {"pretrained": "a/b", "revision": "main"}, "dtype=float32"):
        assert importer._model_from_args(args) == GeneralConfigTracker._get_model_name(args)



def test_a_field_of_mixed_types_across_tasks_becomes_text(tmp_path):
    run = _copy_run(tmp_path)
    path = _samples_file_in(run, "bbq_religion_gen")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:  # the other task's documents hold label as a number
        record["doc"]["label"] = "ABC"[record["doc"]["label"]]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    frame = import_results("lm-eval", [run]).frame
    mc = frame["task"] == "bbq_religion_mc"
    assert set(frame.loc[mc, "label"]) == {"0", "1", "2"}
    assert set(frame.loc[~mc, "label"]) == {"A", "B", "C"}
    frame.to_parquet(tmp_path / "mixed.parquet")  # pyarrow refuses int and str in a column
    assert len(pd.read_parquet(tmp_path / "mixed.parquet")) == N_RECORDS


def test_output_path_given_as_a_json_file_name(tmp_path, imported):
    # lm_eval --output_path run.json writes run_<time>.json and the samples beside it
    run = _copy_run(tmp_path)
    (results_path,) = run.glob("results_*.json")
    renamed = results_path.with_name(results_path.name.replace("results_", "run_"))
    results_path.rename(renamed)
    for source in (run, renamed, _samples_file_in(run, "bbq_religion_mc")):
        result = import_results("lm-eval", [source])
        assert set(result.frame["model"]) == {"dummy-bbq"}
    assert len(import_results("lm-eval", [renamed]).frame) == N_RECORDS


def test_runs_with_different_system_instructions_make_a_prompt_factor(tmp_path):
    for name, instruction in (("plain", None), ("careful", "Answer without stereotypes.")):
        run = shutil.copytree(RUN_DIR, tmp_path / name)
        (results_path,) = run.glob("results_*.json")
        results = json.loads(results_path.read_text())
        assert results["system_instruction"] is None  # as lm-eval wrote it
        results["system_instruction"] = instruction  # as --system_instruction writes it
        results_path.write_text(json.dumps(results))
    result = import_results("lm-eval", [tmp_path])
    assert len(result.frame) == 2 * N_RECORDS
    factor = result.design.factor("system_instruction")
    assert factor.kind == "prompt"
    assert set(factor.values) == {"none", "Answer without stereotypes."}
    assert factor.reference == "none"  # the run without a system prompt is the control
    assert (result.frame["system_instruction"] == "none").sum() == N_RECORDS
