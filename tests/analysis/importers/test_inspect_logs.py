"""Inspect AI importer: a real eval log (committed and run live), bad input.

The test model ``fixedllm/always-<letter>`` answers one fixed letter, so the expected
score of every item is known from the items file alone: correct exactly where the gold
option is that letter.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis.importers import ImportFormatError, import_results
from tests.analysis.importers.harness_runs import (
    INSPECT_FIXTURE,
    METADATA_FIELDS,
    load_items,
    run_inspect,
)

N_ITEMS = 32


def _fixture_log() -> Path:
    (path,) = INSPECT_FIXTURE.glob("*.eval")
    return path


def _expected_scores(letter: str) -> dict[str, float]:
    return {str(item["example_id"]): float("ABC"[item["label"]] == letter)
            for item in load_items()}


@pytest.fixture(scope="module")
def log_api():
    return pytest.importorskip("inspect_ai.log")


@pytest.fixture(scope="module")
def imported(log_api):
    return import_results("inspect", [_fixture_log()])


@pytest.fixture(scope="module")
def live_logs(log_api, tmp_path_factory) -> list[Path]:
    return run_inspect(tmp_path_factory.mktemp("inspect"),
                       models=("fixedllm/always-b", "fixedllm/always-c"))


def test_rows_metadata_and_scores(imported):
    frame = imported.frame
    assert len(frame) == N_ITEMS
    assert imported.counts == {"logs": 1, "rows_read": 32, "rows_out": 32, "errored": 0}
    items = {str(item["example_id"]): item for item in load_items()}
    assert set(frame["id"]) == set(items)
    for _, row in frame.iterrows():
        item = items[row["id"]]
        for field in ("question_index", "question_polarity", "context_condition", "category"):
            assert row[field] == item[field]
        assert row["subcategory"] == item["additional_metadata"]["subcategory"]
        assert row["target"] == "ABC"[item["label"]]
    expected = _expected_scores("B")
    assert frame.set_index("id")["score_choice"].to_dict() == expected
    # the letter score is kept beside its number
    assert set(zip(frame["score_choice_raw"], frame["score_choice"], strict=True)) == {
        ("C", 1.0),
        ("I", 0.0)}


def test_scores_agree_with_inspects_own_metric(imported, log_api):
    header = log_api.read_eval_log(str(_fixture_log()), header_only=True)
    accuracy = header.results.scores[0].metrics["accuracy"].value
    assert imported.frame["score_choice"].mean() == pytest.approx(accuracy)
    assert accuracy == pytest.approx(sum(_expected_scores("B").values()) / N_ITEMS)


def test_model_task_and_settings(imported):
    frame = imported.frame
    assert set(frame["model"]) == {"fixedllm/always-b"}
    assert set(frame["task"]) == {"bbq_religion"}
    assert set(frame["epoch"]) == {1}
    assert set(frame["generate_config.temperature"]) == {0.0}
    assert (frame["error"] == "").all()


def test_suggested_design(imported):
    design = imported.design
    kinds = {f.name: f.kind for f in design.factors}
    # one model: `model` is not a factor (the written design is usable as it is, #38)
    assert kinds == {"context_condition": "prompt", "question_index": "prompt",
                     "question_polarity": "prompt"}
    assert any("'model' has the single value" in n for n in imported.notes)
    assert (design.outcome.column, design.outcome.mapping, design.outcome.threshold) == (
        "score_choice", "below", 1.0)


def test_the_model_option_overrides_the_name(log_api):
    result = import_results("inspect", [_fixture_log()], model="renamed")
    assert set(result.frame["model"]) == {"renamed"}


def test_live_run_two_models_concatenate(live_logs):
    result = import_results("inspect", [live_logs[0].parent])
    frame = result.frame
    assert len(frame) == 2 * N_ITEMS and result.counts["logs"] == 2
    assert result.design.factor("model").values == ("fixedllm/always-b", "fixedllm/always-c")
    assert {"question_polarity", "context_condition", "question_index"} <= set(result.design.names)
    assert result.design.outcome.column == "score_choice"
    for model, letter in (("fixedllm/always-b", "B"), ("fixedllm/always-c", "C")):
        rows = frame[frame["model"] == model]
        assert rows.set_index("id")["score_choice"].to_dict() == _expected_scores(letter)
        assert set(rows.columns) >= set(METADATA_FIELDS)


def test_partial_and_noanswer_letters_map_as_value_to_float(log_api, tmp_path):
    log = log_api.read_eval_log(str(_fixture_log()))
    log.samples[0].scores["choice"].value = "P"
    log.samples[1].scores["choice"].value = "N"
    path = tmp_path / "partial.eval"
    log_api.write_eval_log(log, str(path))
    frame = import_results("inspect", [path]).frame.set_index("id")
    first, second = str(log.samples[0].id), str(log.samples[1].id)
    assert frame.loc[first, "score_choice"] == 0.5 and frame.loc[first, "score_choice_raw"] == "P"
    assert frame.loc[second, "score_choice"] == 0.0


# --- bad input ------------------------------------------------------------------------------
def test_a_file_of_another_format(log_api, tmp_path):
    fake = tmp_path / "results.eval"
    fake.write_text("model,score\na,1\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"results.eval: not an Inspect log \(reading its "
                                                r"header 'eval' failed"):
        import_results("inspect", [fake])
    other = tmp_path / "results.csv"
    other.write_text("model,score\na,1\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"results.csv: not an Inspect log"):
        import_results("inspect", [other])
    lm_eval_json = tmp_path / "results.json"
    shutil.copy(next((INSPECT_FIXTURE.parent / "lm_eval_output" / "dummy-bbq")
                     .glob("results_*.json")), lm_eval_json)
    with pytest.raises(ImportFormatError, match=r"results.json: not an Inspect log"):
        import_results("inspect", [lm_eval_json])


def test_an_empty_log(log_api, tmp_path):
    log = log_api.read_eval_log(str(_fixture_log()))
    log.samples = []
    path = tmp_path / "empty.eval"
    log_api.write_eval_log(log, str(path))
    with pytest.raises(ImportFormatError, match=r"empty.eval: the log holds no samples "
                                                r"\(field 'samples'"):
        import_results("inspect", [path])


def test_a_log_without_scores(log_api, tmp_path):
    log = log_api.read_eval_log(str(_fixture_log()))
    for sample in log.samples:
        sample.scores = None
    log.results = None
    path = tmp_path / "unscored.eval"
    log_api.write_eval_log(log, str(path))
    with pytest.raises(ImportFormatError, match=r"unscored.eval: the log has no scores "
                                                r"\(field 'scores'"):
        import_results("inspect", [path])


def test_missing_paths_and_folders_without_logs(log_api, tmp_path):
    with pytest.raises(ImportFormatError, match="no such file or folder"):
        import_results("inspect", [tmp_path / "nope.eval"])
    with pytest.raises(ImportFormatError, match=r"no Inspect log \(.eval or .json\)"):
        import_results("inspect", [tmp_path])


def test_without_inspect_ai_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "inspect_ai.analysis", None)  # import -> ImportError
    with pytest.raises(ImportFormatError, match=r"needs the inspect-ai package.*harnesses"):
        import_results("inspect", [_fixture_log()])


def test_a_json_log_reads_like_the_eval_log(imported, log_api, tmp_path):
    log = log_api.read_eval_log(str(_fixture_log()))
    path = tmp_path / "same.json"
    log_api.write_eval_log(log, str(path), format="json")
    again = import_results("inspect", [path]).frame
    columns = [c for c in imported.frame.columns if c != "log"]
    assert again[columns].equals(imported.frame[columns])


def test_a_metadata_field_named_like_a_column_keeps_its_prefix(log_api, tmp_path):
    log = log_api.read_eval_log(str(_fixture_log()))
    for sample in log.samples:
        sample.metadata["model"] = "in-metadata"
    path = tmp_path / "clash.eval"
    log_api.write_eval_log(log, str(path))
    frame = import_results("inspect", [path]).frame
    assert set(frame["metadata_model"]) == {"in-metadata"}
    assert set(frame["model"]) == {"fixedllm/always-b"}


def test_errored_samples_are_counted_and_have_no_score(log_api, tmp_path):
    from inspect_ai.log import EvalError

    log = log_api.read_eval_log(str(_fixture_log()))
    broken = log.samples[3]
    broken.scores = None
    broken.error = EvalError(message="RuntimeError: provider timed out", traceback="",
                             traceback_ansi="")
    path = tmp_path / "errored.eval"
    log_api.write_eval_log(log, str(path))
    result = import_results("inspect", [path])
    frame = result.frame.set_index("id")
    assert result.counts["errored"] == 1 and result.counts["rows_out"] == N_ITEMS
    assert np.isnan(frame.loc[str(broken.id), "score_choice"])
    assert "provider timed out" in frame.loc[str(broken.id), "error"]
    assert frame["score_choice"].notna().sum() == N_ITEMS - 1


def test_full_reads_metadata_that_summaries_abbreviate(log_api, tmp_path):
    log = log_api.read_eval_log(str(_fixture_log()))
    for sample in log.samples:
        sample.metadata["note"] = "x" * 1500
    path = tmp_path / "long.eval"
    log_api.write_eval_log(log, str(path))
    summary = import_results("inspect", [path]).frame
    full = import_results("inspect", [path], full="true").frame  # CLI text: --option full=true
    assert (full["note"].str.len() == 1500).all()
    assert (summary["note"].str.len() < 1500).all()
    with pytest.raises(ImportFormatError, match="Option 'full' takes true or false, not 'maybe'"):
        import_results("inspect", [path], full="maybe")
