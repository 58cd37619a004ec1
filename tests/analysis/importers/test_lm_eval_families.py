"""Several task families of one lm-eval run (issue 42 item 6): each imports as its own
table (``task_family=``, ``ImportResult.parts``, ``import --task-family`` /
``--each-family``), with its own outcome, and the harness's own scores (BBQ's s_DIS and
s_AMB) still equal lm-eval's ``results_*.json``.

The fixture is the committed real run of the six official bias tasks
(``tests/data/harness/lm_eval_bias_output``, ``--model dummy``, offline).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis.importers import ImportFormatError, import_results
from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE, LM_EVAL_FIXTURE

RUN = LM_EVAL_BIAS_FIXTURE / "dummy-bias"
FAMILIES = {"bbq": ["bbq"], "crows_pairs": ["crows_pairs_english"],
            "discrim_eval": ["discrim_eval_explicit"],
            "simple_cooccurrence_bias": ["simple_cooccurrence_bias"],
            "toxigen": ["toxigen"], "winogender_all": ["winogender_all"]}


def _results() -> dict:
    (path,) = RUN.glob("results_*.json")
    return json.loads(path.read_text(encoding="utf-8"))["results"]


@pytest.fixture(scope="module")
def whole():
    return import_results("lm-eval", [LM_EVAL_BIAS_FIXTURE])


def test_each_family_is_a_part_with_its_own_rows_and_outcome(whole):
    assert list(whole.parts) == list(FAMILIES)
    results = _results()
    for family, tasks in FAMILIES.items():
        part = whole.parts[family]
        assert sorted(part.frame["task"].unique()) == tasks
        assert len(part.frame) == sum(results[t]["sample_len"] for t in tasks)
        # the same records as the generic table's rows of these tasks
        mine = whole.frame[whole.frame["task"].isin(tasks)].reset_index(drop=True)
        assert part.frame["doc_id"].tolist() == mine["doc_id"].tolist()
        assert part.counts["rows_read"] == part.counts["rows_out"] == len(part.frame)  # its files
    assert sum(len(p.frame) for p in whole.parts.values()) == len(whole.frame)
    # their own outcomes, not the generic 'acc < 1' of the whole run
    assert whole.design.outcome.column == "acc"
    assert whole.parts["bbq"].design.outcome.column == "biased_answer"
    assert whole.parts["crows_pairs"].design.outcome.column == "pct_stereotype"
    table = whole.extras["task_families"]
    assert table["family"].tolist() == list(FAMILIES)
    assert table["rows"].tolist() == [len(p.frame) for p in whole.parts.values()]
    assert table.loc[0, "outcome"] == whole.parts["bbq"].design.outcome.describe()


def test_a_part_is_the_import_of_its_family_alone(whole):
    alone = import_results("lm-eval", [LM_EVAL_BIAS_FIXTURE], task_family="crows_pairs")
    pd.testing.assert_frame_equal(alone.frame, whole.parts["crows_pairs"].frame)
    assert alone.design == whole.parts["crows_pairs"].design
    assert alone.parts == {}  # one family: no parts
    assert alone.counts == {"files": 6, "rows_read": 200, "rows_out": 24, "filtered_out": 0,
                            "other_families": 176}
    assert any("Task family 'crows_pairs' only" in n for n in alone.notes)


def test_the_bbq_part_has_lm_evals_own_scores(whole):
    results = _results()["bbq"]
    scores = whole.parts["bbq"].extras["bias_scores"]
    overall = scores[scores["category"] == "all"].iloc[0]
    assert overall["s_DIS"] == pytest.approx(results["disamb_bias_score,none"])
    assert overall["s_AMB"] == pytest.approx(results["amb_bias_score,none"])
    native = whole.parts["bbq"].extras["native_scores"]
    assert set(native["score"]) >= {"s_DIS", "s_AMB"}


def test_an_unknown_family_names_the_families_and_the_closest():
    with pytest.raises(ImportFormatError, match=r"No task of the family 'bbqq' in these files; "
                       r"their families: 'bbq', 'crows_pairs'.*Did you mean 'bbq'\?"):
        import_results("lm-eval", [LM_EVAL_BIAS_FIXTURE], task_family="bbqq")


def test_a_run_of_two_unknown_tasks_has_a_part_per_task():
    result = import_results("lm-eval", [LM_EVAL_FIXTURE])
    assert len(result.frame) == 96  # the generic table is as before
    assert {k: len(p.frame) for k, p in result.parts.items()} == {
        "bbq_religion_gen": 64, "bbq_religion_mc": 32}


def _cli(*args: str, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    return subprocess.run([sys.executable, "-m", "analysis", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)


def test_cli_each_family_writes_each_familys_table_and_design(whole, tmp_path):
    from analysis.design import Design

    out, design = tmp_path / "run.csv", tmp_path / "run.yaml"
    proc = _cli("import", "lm-eval", str(LM_EVAL_BIAS_FIXTURE), "--out", str(out),
                "--design-out", str(design), "--each-family", cwd=str(tmp_path.parent))
    assert proc.returncode == 0, proc.stderr
    assert len(pd.read_csv(out)) == 200
    for family, part in whole.parts.items():
        table = pd.read_csv(tmp_path / f"run_{family}.csv")
        assert len(table) == len(part.frame) and list(table.columns) == list(part.frame.columns)
        assert Design.load(tmp_path / f"run_{family}.yaml") == part.design
    bbq = _cli("import", "lm-eval", str(LM_EVAL_BIAS_FIXTURE), "--out",
               str(tmp_path / "bbq.csv"), "--task-family", "bbq", cwd=str(tmp_path.parent))
    assert bbq.returncode == 0 and len(pd.read_csv(tmp_path / "bbq.csv")) == 32
    one = _cli("import", "lm-eval", str(LM_EVAL_BIAS_FIXTURE), "--out",
               str(tmp_path / "x.csv"), "--task-family", "bbq", "--each-family",
               cwd=str(tmp_path.parent))
    assert one.returncode == 2 and "hold one task family only" in one.stderr


def test_inspect_logs_of_two_tasks_import_each_task_alone():
    """The same for Inspect: a log holds one task, each task is its own import."""
    pytest.importorskip("inspect_ai")
    from tests.analysis.importers.harness_runs import INSPECT_BBQ_FIXTURE, INSPECT_FIXTURE

    both = import_results("inspect", [INSPECT_FIXTURE, INSPECT_BBQ_FIXTURE])
    alone = import_results("inspect", [INSPECT_BBQ_FIXTURE])
    assert list(both.parts) == ["bbq_religion", "bbq"]
    assert both.design.outcome.column == "score_choice"  # the generic choice of the whole
    pd.testing.assert_frame_equal(both.parts["bbq"].frame, alone.frame)
    assert both.parts["bbq"].design == alone.design
    assert alone.design.outcome.column == "biased_answer"
    assert both.extras["task_families"]["rows"].tolist() == [32, 64]
    with pytest.raises(ImportFormatError, match="No log of the task 'bbqq'.*Did you mean 'bbq'"):
        import_results("inspect", [INSPECT_FIXTURE, INSPECT_BBQ_FIXTURE], task_family="bbqq")
