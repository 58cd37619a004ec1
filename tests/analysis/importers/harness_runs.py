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


def bbq_inspect_evals_task() -> Any:
    """The same items in the sample shape of inspect_evals' ``bbq`` task (its input, its
    choices ans0..ans2 in order, its metadata fields), scored as it is (``choice()``).

    inspect_evals itself is on PyPI, but its task downloads ``heegyu/bbq`` from the
    Hugging Face hub at run time, which is not reachable offline.
    """
    from inspect_ai import Task
    from inspect_ai.dataset import Sample, json_dataset
    from inspect_ai.scorer import choice
    from inspect_ai.solver import multiple_choice

    def record_to_sample(record: dict[str, Any]) -> Sample:
        return Sample(input=f"Context: {record['context']}\n\nQuestion: {record['question']}",
                      target="ABC"[int(record["label"])],
                      choices=[record["ans0"], record["ans1"], record["ans2"]],
                      id=record["example_id"],
                      metadata={"source_id": record["example_id"],
                                **{k: record[k] for k in (
                                    "category", "question_index", "question_polarity",
                                    "context_condition", "answer_info",
                                    "additional_metadata")}})

    dataset = json_dataset(str(ITEMS), sample_fields=record_to_sample, name="bbq")
    return Task(dataset=dataset, solver=[multiple_choice()], scorer=choice(), name="bbq")


def run_inspect(log_dir: Path, *, models: tuple[str, ...] = ("fixedllm/always-b",),
                task: Any = None) -> list[Path]:
    """``inspect_ai.eval`` of the task (default :func:`bbq_inspect_task`) with the
    fixed-letter test model(s); the log files."""
    import inspect_ai

    from tests.analysis.importers import inspect_test_model  # noqa: F401 - registers fixedllm

    task = task if task is not None else bbq_inspect_task()
    logs = inspect_ai.eval(task, model=list(models), log_dir=str(log_dir),
                           display="none", temperature=0.0)
    failed = [log.location for log in logs if log.status != "success"]
    if failed:
        raise RuntimeError(f"Inspect runs failed: {failed}")
    return [Path(log.location) for log in logs]


# --- lm-eval's own bias tasks ------------------------------------------------------------
#: Small hand-made datasets in the shape of each official task's dataset (make_fixtures.py).
BIAS_DATA = HARNESS_DATA / "bias_tasks"
#: The committed run of the six official bias tasks (make_fixtures.py).
LM_EVAL_BIAS_FIXTURE = HARNESS_DATA / "lm_eval_bias_output"
#: The committed Inspect logs of the items in inspect_evals' BBQ sample shape.
INSPECT_BBQ_FIXTURE = HARNESS_DATA / "inspect_bbq_logs"
#: The fixed-letter test models of those logs.
INSPECT_BBQ_MODELS = ("fixedllm/always-b", "fixedllm/always-c")
#: task name -> (official YAML under lm_eval/tasks, local data file, split the YAML reads).
BIAS_TASKS: dict[str, tuple[str, str, str]] = {
    "bbq": ("bbq/bbq_multiple_choice.yaml", "../bbq_religion_items.jsonl", "test"),
    "crows_pairs_english": ("crows_pairs/crows_pairs_english.yaml", "crows_pairs.jsonl", "test"),
    "discrim_eval_explicit": ("discrim_eval/discrim_eval_explicit.yaml", "discrim_eval.jsonl",
                              "train"),
    "winogender_all": ("winogender/winogender.yaml", "winogender.jsonl", "test"),
    "toxigen": ("toxigen/toxigen.yaml", "toxigen.jsonl", "test"),
    "simple_cooccurrence_bias": ("simple_cooccurrence_bias/simple_cooccurrence_bias.yaml",
                                 "simple_cooccurrence_bias.jsonl", "test"),
}


def write_bias_task_yamls(folder: Path) -> None:
    """One YAML per task that includes the *installed* official definition and only
    points its dataset at the local JSON Lines file (same task name, so it overrides)."""
    import lm_eval

    tasks_dir = Path(lm_eval.__file__).resolve().parent / "tasks"
    folder.mkdir(parents=True, exist_ok=True)
    for task, (yaml_path, data, split) in BIAS_TASKS.items():
        data_file = (BIAS_DATA / data).resolve()
        text = (f"include: {tasks_dir / yaml_path}\n"
                f"task: {task}\n"
                "dataset_path: json\n"
                "dataset_name: null\n"
                "dataset_kwargs:\n"
                "  data_files:\n"
                f"    {split}: {json.dumps(str(data_file))}\n")
        if task == "toxigen":  # its YAML also names a training split (few-shot source)
            text += "training_split: null\n"
        (folder / f"{task}_local.yaml").write_text(text, encoding="utf-8")


#: lm-eval's ``--seed`` for the committed run: the dummy model's log-likelihoods are
#: ``random.random()`` draws, and with this seed some disambiguated BBQ items get a
#: non-unknown answer (with lm-eval's default seed 0 every one picks an unknown option,
#: which leaves the disambiguated bias score undefined).
BIAS_SEED = 11


def run_lm_eval_bias(output_path: Path, *, model_name: str = "dummy-bias",
                     tasks: tuple[str, ...] = tuple(BIAS_TASKS), seed: int = BIAS_SEED
                     ) -> Path:
    """``lm_eval --model dummy --log_samples`` on the official bias tasks over the local
    data; returns the run folder."""
    task_dir = output_path / "tasks"
    write_bias_task_yamls(task_dir)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_DATASETS_CACHE": str(output_path / "hf_datasets_cache"),
           "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "lm_eval", "--model", "dummy",
               "--model_args", f"pretrained={model_name}", "--tasks", ",".join(tasks),
               "--include_path", str(task_dir), "--output_path", str(output_path / "out"),
               "--log_samples", "--seed", f"{seed},{seed},{seed},{seed}"]
    done = subprocess.run(command, cwd=output_path, env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"lm_eval failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return output_path / "out" / model_name
