"""Run lm-evaluation-harness and Inspect AI for real, offline, on 32 BBQ items.

Used by the importer tests (which run both tools once per session) and by
``tests/data/harness/make_fixtures.py`` (which writes the small committed logs).
Recipes: ``../shared/docs/environment.md``, "Evaluation harnesses offline".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HARNESS_DATA = Path(__file__).resolve().parents[2] / "data" / "harness"
ITEMS = HARNESS_DATA / "bbq_religion_items.jsonl"
LM_EVAL_TASKS = HARNESS_DATA / "lm_eval_tasks"
LM_EVAL_TASK_NAMES = ("bbq_religion_mc", "bbq_religion_gen")
#: The committed outputs of one run of each tool (see make_fixtures.py).
LM_EVAL_FIXTURE = HARNESS_DATA / "lm_eval_output"
INSPECT_FIXTURE = HARNESS_DATA / "inspect_logs"
#: Item fields the Inspect task puts in each sample's metadata.
METADATA_FIELDS = ("question_index", "question_polarity", "context_condition", "category",
                   "subcategory")


def load_items() -> list[dict[str, Any]]:
    """The 32 BBQ items, as written in ``bbq_religion_items.jsonl``."""
    return [json.loads(line) for line in ITEMS.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def run_lm_eval(output_path: Path, *, model_name: str = "dummy-bbq",
                tasks: tuple[str, ...] = LM_EVAL_TASK_NAMES) -> Path:
    """``lm_eval --model dummy --log_samples`` on the local tasks; returns the run folder.

    The dummy model ignores its arguments; ``pretrained=<model_name>`` only names the run
    (lm-eval takes the model name from that argument). The tasks' ``data_files`` are
    relative, so lm-eval runs from ``tests/data/harness``; the datasets cache goes into
    ``output_path`` so nothing is shared with other runs.
    """
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_DATASETS_CACHE": str(output_path / "hf_datasets_cache"),
           "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "lm_eval", "--model", "dummy",
               "--model_args", f"pretrained={model_name}", "--tasks", ",".join(tasks),
               "--include_path", str(LM_EVAL_TASKS), "--output_path", str(output_path / "out"),
               "--log_samples"]
    done = subprocess.run(command, cwd=HARNESS_DATA, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"lm_eval failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return output_path / "out" / model_name


def bbq_inspect_task() -> Any:
    """The same items as an Inspect multiple-choice task read from the local JSONL."""
    from inspect_ai import Task
    from inspect_ai.dataset import Sample, json_dataset
    from inspect_ai.scorer import choice
    from inspect_ai.solver import multiple_choice

    def record_to_sample(record: dict[str, Any]) -> Sample:
        fields = {**record, "subcategory": record["additional_metadata"]["subcategory"]}
        return Sample(input=f"{record['context']}\n\n{record['question']}",
                      choices=[record["ans0"], record["ans1"], record["ans2"]],
                      target="ABC"[record["label"]], id=record["example_id"],
                      metadata={k: fields[k] for k in METADATA_FIELDS})

    dataset = json_dataset(str(ITEMS), sample_fields=record_to_sample, name="bbq_religion")
    return Task(dataset=dataset, solver=multiple_choice(), scorer=choice(),
                name="bbq_religion")


def run_inspect(log_dir: Path, *, models: tuple[str, ...] = ("fixedllm/always-b",)
                ) -> list[Path]:
    """``inspect_ai.eval`` of the task with the fixed-letter test model(s); the log files."""
    import inspect_ai

    from tests.analysis.importers import inspect_test_model  # noqa: F401 - registers fixedllm

    logs = inspect_ai.eval(bbq_inspect_task(), model=list(models), log_dir=str(log_dir),
                           display="none", temperature=0.0)
    failed = [log.location for log in logs if log.status != "success"]
    if failed:
        raise RuntimeError(f"Inspect runs failed: {failed}")
    return [Path(log.location) for log in logs]
