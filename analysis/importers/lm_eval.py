"""lm-evaluation-harness output (``lm_eval ... --output_path OUT --log_samples``).

lm-eval writes, per run, ``OUT/<model_name_sanitized>/results_<time>.json`` (aggregated
results plus the run's configuration) and one ``samples_<task>_<time>.jsonl`` per task
beside it, one JSON object per (document, answer filter)::

    {"doc_id": 0, "doc": {...the dataset row...}, "target": "1", "arguments": {...},
     "resps": [...], "filtered_resps": [...], "filter": "none",
     "metrics": ["acc", "acc_norm"], "doc_hash": ..., "acc": 1.0, "acc_norm": 0.0}

(``lm_eval/evaluator.py`` builds the record, ``lm_eval/loggers/evaluation_tracker.py``
writes both files.) :func:`read` turns them into one row per record; the column mapping
and the suggested design are in ``docs/import_lm_eval.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.importers import ImportFormatError, ImportResult, PathArg
from analysis.importers.harness_design import (
    MODEL_COLUMN,
    harness_design,
    json_text,
    uniform_types,
)
from analysis.importers.harness_families import unpack as unpack_task
from analysis.importers.harness_tasks import TaskImport, apply_hints
from analysis.io import check_lines, read_input_bytes
from analysis.limits import check_json_depth
from analysis.native_scores import importer_extras

__all__ = [
    "CHAT_TEMPLATE_COLUMN", "DOC_ID_COLUMN", "FILTER_COLUMN", "GEN_KWARGS_PREFIX",
    "MODEL_ARGS_COLUMN", "MODEL_SOURCE_COLUMN", "NOT_USED", "NUM_FEWSHOT_COLUMN",
    "PROMPT_COLUMN", "RECORD_FIELDS", "RESPONSE_COLUMN", "SEED_COLUMN", "SOURCE",
    "SYSTEM_COLUMN", "TARGET_COLUMN", "TASK_COLUMN", "family_parts", "family_table", "read",
]


SOURCE = "lm-eval"
TASK_COLUMN = "task"
FILTER_COLUMN = "filter"
DOC_ID_COLUMN = "doc_id"
TARGET_COLUMN = "target"
RESPONSE_COLUMN = "response"
PROMPT_COLUMN = "prompt"
#: Model-setting columns (besides ``model``) and the generation-kwargs prefix.
MODEL_SOURCE_COLUMN = "model_source"
MODEL_ARGS_COLUMN = "model_args"
NUM_FEWSHOT_COLUMN = "num_fewshot"
SEED_COLUMN = "random_seed"
SYSTEM_COLUMN = "system_instruction"
CHAT_TEMPLATE_COLUMN = "chat_template_sha"
#: Value of ``system_instruction`` / ``chat_template_sha`` in a run that used none.
NOT_USED = "none"
GEN_KWARGS_PREFIX = "gen_kwargs."
#: Fields of a samples record that are not metrics (lm-eval 0.4.x).
RECORD_FIELDS = frozenset({
    "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
    "doc_hash", "prompt_hash", "target_hash",
})
#: Metric placeholders that carry no score (``--predict_only`` logs ``bypass``).
_NO_SCORE_METRICS = frozenset({"bypass"})
_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<time>[^_]+)\.jsonl$")


def read(
    paths: Sequence[PathArg],
    *,
    model: str | None = None,
    answer_filter: str | None = None,
    task_family: str | None = None,
) -> ImportResult:
    """Read lm-eval ``samples_*.jsonl`` files (and the ``results_*.json`` beside each).

    Parameters
    ----------
    paths
        ``samples_<task>_<time>.jsonl`` files, ``results_<time>.json`` files (their
        samples files beside them are read; also ``<name>_<time>.json`` written with
        ``--output_path <name>.json``) or folders (searched recursively for
        samples files, e.g. the ``--output_path`` folder). Several files, tasks and
        models concatenate.
    model
        Model name to use instead of the one in the results JSON (``model_name``, the
        ``pretrained=``/``model=`` model argument). Needed when a samples file has no
        results JSON beside it: the importer never guesses a model from a folder name.
    answer_filter
        Keep only the records of this lm-eval filter (e.g. ``strict-match``). By default
        every filter is kept and ``filter`` becomes a factor when there are several.
    task_family
        Import only the tasks of this family (``bbq``, ``crows_pairs``,
        ``discrim_eval``, or the name of a task of no known family); the other files'
        records are counted in ``counts["other_families"]``. Without it, an import of
        several families is the generic table of all of them, and ``parts`` holds each
        family's own import (``extras["task_families"]`` lists them).

    Returns
    -------
    ImportResult
        ``frame`` has one row per samples record, with columns ``model``, ``task``,
        ``filter``, ``doc_id``, the ``doc`` fields flattened (nested keys joined with
        ``.``; a field whose name is taken gets the prefix ``doc.``), ``target``,
        ``response`` (the filtered response), one float column per scalar per-sample
        metric (``acc``, ``acc_norm``, ``exact_match``, ...), the model settings
        ``model_source``, ``model_args``, ``num_fewshot``, ``random_seed``,
        ``system_instruction`` (``--system_instruction``; ``none`` without one),
        ``chat_template_sha`` (``--apply_chat_template``; ``none`` without),
        ``gen_kwargs.<key>`` (the task's effective generation kwargs; absent for
        tasks that do not generate) and ``prompt`` (the first request's context).
        ``counts`` has ``files``, ``rows_read``, ``rows_out``, ``filtered_out`` (and
        ``other_families`` with ``task_family``). With several families,
        ``extras["task_families"]`` has the columns ``family``, ``tasks``, ``rows``,
        ``outcome`` (the family import's outcome) and ``factors`` (its suggested
        factors), and ``parts`` maps each family to its import.

    Raises
    ------
    ImportFormatError
        A path that does not exist, a folder without samples files, a file that is not
        an lm-eval samples file (names the file, line and field), a samples file without
        its results JSON when ``model`` is not given, a results JSON that is not one, a
        file without any per-sample metric, a ``task_family`` none of the files has.
    """
    files = _samples_files(paths)
    frames, notes = [], []
    doc_columns: list[str] = []
    metric_columns: list[str] = []
    rows_read = 0
    lower_is_better: dict[str, bool] = {}
    families: list[tuple[str, TaskImport]] = []
    family_files: dict[str, list[Path]] = {}
    other_rows = 0
    for path in files:
        records = _read_samples(path)  # the file's own format is checked first
        rows_read += len(records)
        results_path = _results_beside(path)
        if results_path is None and model is None:
            raise ImportFormatError(
                f"{path}: no results_*.json beside this samples file, so its model and "
                "settings are unknown. Import the whole lm-eval output folder, or give the "
                "model name (--model NAME in the CLI, model= in Python)."
            )
        results = _read_results(results_path) if results_path is not None else {}
        task = _task_name(path, results)
        frame, docs, metrics, skipped, family = _samples_frame(records, path)
        key = family.family if family is not None else task
        family_files.setdefault(key, []).append(path)
        if task_family is not None and key != task_family:
            other_rows += len(records)
            continue
        doc_columns.extend(c for c in docs if c not in doc_columns)
        metric_columns.extend(c for c in metrics if c not in metric_columns)
        if family is not None:
            families.append((task, family))
            notes.extend(family.notes)
        if skipped:
            notes.append(f"{path.name}: metrics that are not one number per sample are left "
                         f"out: {', '.join(skipped)} (no known layout of their parts"
                         f"{'' if family is None else ' in the ' + family.family + ' task'}).")
        for metric, better in results.get("higher_is_better", {}).get(task, {}).items():
            if metric in metrics and better is False:
                lower_is_better[metric] = True
        run = _run_columns(results, task, model)
        for col, value in reversed(list(run.items())):
            frame.insert(0, col, value)
        frame.insert(1, TASK_COLUMN, task)
        if results_path is None:
            notes.append(f"{path.name}: no results JSON; model {model!r} given, settings "
                         "(few-shot count, generation kwargs) unknown.")
        frames.append(frame)
    if not frames:
        from analysis.errors import did_you_mean

        raise ImportFormatError(
            f"No task of the family {task_family!r} in these files; their families: "
            f"{', '.join(map(repr, family_files))}."
            + did_you_mean(task_family, list(family_files), sentence=True))
    table = uniform_types(pd.concat(frames, ignore_index=True, sort=False))
    settings = [c for c in table.columns if c not in {MODEL_COLUMN, TASK_COLUMN, FILTER_COLUMN,
                DOC_ID_COLUMN, TARGET_COLUMN, RESPONSE_COLUMN, PROMPT_COLUMN, *doc_columns,
                *metric_columns}]
    table = table[[MODEL_COLUMN, TASK_COLUMN, FILTER_COLUMN, DOC_ID_COLUMN, *doc_columns,
                   TARGET_COLUMN, RESPONSE_COLUMN, *metric_columns, *settings, PROMPT_COLUMN]]
    filtered_out = 0
    if answer_filter is not None:
        keep = table[FILTER_COLUMN] == answer_filter
        if not keep.any():
            raise ImportFormatError(
                f"No records with filter {answer_filter!r}; the files have filters "
                f"{', '.join(map(repr, sorted(table[FILTER_COLUMN].dropna().unique())))}."
            )
        filtered_out = int((~keep).sum())
        table = table[keep].reset_index(drop=True)
    design, design_notes = harness_design(
        table,
        item_columns=doc_columns,
        prompt_columns=[TASK_COLUMN, FILTER_COLUMN, SYSTEM_COLUMN],
        model_columns=[MODEL_COLUMN, MODEL_SOURCE_COLUMN, MODEL_ARGS_COLUMN,
                       NUM_FEWSHOT_COLUMN, SEED_COLUMN, CHAT_TEMPLATE_COLUMN,
                       *[c for c in table.columns if c.startswith(GEN_KWARGS_PREFIX)]],
        score_columns=metric_columns,
        lower_is_better=lower_is_better,
        name="lm-eval import",
    )
    covered = set(table[TASK_COLUMN].unique()) <= {t for t, _ in families}
    design = apply_hints(design, table, [f for _, f in families], design_notes,
                         covered=covered)
    extras = {}
    if any(f.family == "bbq" for _, f in families):
        from analysis.importers.harness_bbq import bias_scores

        extras["bias_scores"] = bias_scores(table[table[TASK_COLUMN].isin(
            [t for t, f in families if f.family == "bbq"])])
    counts = {"files": len(files), "rows_read": rows_read, "rows_out": len(table),
              "filtered_out": filtered_out}
    if task_family is not None:
        counts["other_families"] = other_rows
        notes.insert(0, f"Task family {task_family!r} only: "
                        f"{', '.join(map(str, table[TASK_COLUMN].unique()))} "
                        f"({other_rows:,} records of other families left out).")
    parts: dict[str, ImportResult] = {}
    if task_family is None and len(family_files) > 1:
        parts, part_notes = family_parts(family_files, model=model,
                                         answer_filter=answer_filter)
        notes.extend(part_notes)
        extras["task_families"] = family_table(parts)
    summary = (f"Read {rows_read:,} records from {len(files)} samples file(s): "
               f"{table[MODEL_COLUMN].nunique()} model(s), {table[TASK_COLUMN].nunique()} "
               f"task(s).")
    return ImportResult(frame=table, design=design, source=SOURCE, counts=counts,
                        notes=[summary, *notes, *design_notes],
                        extras=importer_extras(extras, table, design), parts=parts)


def family_parts(family_files: dict[str, list[Path]], **options: Any
                 ) -> tuple[dict[str, ImportResult], list[str]]:
    """Each family's own import (its files only), and a note naming them; a family whose
    files cannot be imported with ``options`` alone (e.g. no records of ``answer_filter``)
    is left out with its reason."""
    parts, notes = {}, []
    for key, paths in family_files.items():
        try:
            parts[key] = read(paths, task_family=key, **options)
        except ImportFormatError as exc:
            notes.append(f"Task family {key!r} has no import of its own: {exc}")
    if parts:
        notes.append(f"{len(family_files)} task families ({', '.join(family_files)}): each "
                     "can be imported alone with its own outcome and design (task_family=; "
                     "on the Data page: 'Table to use'; CLI: --task-family or --each-family).")
    return parts, notes


def family_table(parts: dict[str, ImportResult]) -> pd.DataFrame:
    """One row per family import: ``family``, ``tasks``, ``rows``, ``outcome``,
    ``factors``."""
    return pd.DataFrame([
        {"family": key, "tasks": ", ".join(map(str, part.frame[TASK_COLUMN].unique())),
         "rows": len(part.frame),
         "outcome": part.design.outcome.describe() if part.design.outcome else "none",
         "factors": ", ".join(part.design.names)}
        for key, part in parts.items()])


# --- finding the files --------------------------------------------------------------------
def _samples_files(paths: Sequence[PathArg]) -> list[Path]:
    if not paths:
        raise ImportFormatError("The lm-eval importer needs at least one file or folder.")
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.rglob("samples_*.jsonl"))
            if not found:
                raise ImportFormatError(
                    f"{path}: no samples_*.jsonl file in this folder. lm-eval writes them "
                    "only when run with --log_samples (and --output_path)."
                )
            files.extend(found)
        elif path.is_file():
            if path.suffix == ".json":  # results_<time>.json, or <name>_<time>.json when
                # lm_eval ran with --output_path <name>.json
                found = sorted(path.parent.glob(f"samples_*_{_time_of_results(path)}.jsonl"))
                if not found:
                    raise ImportFormatError(
                        f"{path}: no samples_*.jsonl file of this run beside it; run lm_eval "
                        "with --log_samples to log per-sample results."
                    )
                files.extend(found)
            else:
                files.append(path)
        else:
            raise ImportFormatError(f"{path}: no such file or folder.")
    unique = list(dict.fromkeys(p.resolve() for p in files))
    return unique


def _time_of_results(path: Path) -> str:
    return path.stem.rsplit("_", 1)[-1]


def _task_name(path: Path, results: dict[str, Any]) -> str:
    match = _SAMPLES_NAME.match(path.name)
    if match:
        return match["task"]
    configs = results.get("configs", {})
    if len(configs) == 1:
        return next(iter(configs))
    return path.stem


def _results_beside(path: Path) -> Path | None:
    """The ``results_<time>.json`` of the same run (same time stamp) in the same folder
    (``<name>_<time>.json`` when lm-eval ran with ``--output_path <name>.json``).

    Failing that, the latest results JSON in the folder whose ``configs`` name the task.
    """
    match = _SAMPLES_NAME.match(path.name)
    if match:
        same = path.with_name(f"results_{match['time']}.json")
        if same.is_file():
            return same
        named = sorted(path.parent.glob(f"*_{match['time']}.json"))  # --output_path x.json
        if len(named) == 1:
            return named[0]
    task = match["task"] if match else None
    for candidate in sorted(path.parent.glob("results_*.json"), reverse=True):
        try:
            configs = json.loads(_bounded_text(candidate, "results JSON")).get("configs", {})
        except (OSError, ValueError, AttributeError, RecursionError):
            continue  # not a results file (or over a limit): another candidate
        if task is not None and task in configs:
            return candidate
    return None


# --- reading ------------------------------------------------------------------------------
def _bounded_text(path: Path, what: str) -> str:
    """The UTF-8 text of ``path`` within the limits of any input (size, gzip, JSON nesting:
    :func:`analysis.io.read_input_bytes`, :func:`analysis.limits.check_json_depth`), so a
    parser never recurses or fills memory on it."""
    data, _ = read_input_bytes(path, str(path))
    check_json_depth(data, str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ImportFormatError(f"{path}: not UTF-8 text, so not an lm-eval {what}.") \
            from None


def _read_results(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(_bounded_text(path, "results JSON"))
    except UnicodeDecodeError:
        raise ImportFormatError(f"{path}: not UTF-8 text, so not an lm-eval results JSON.") \
            from None
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"{path}: not an lm-eval results JSON (invalid JSON at line "
                                f"{exc.lineno}: {exc.msg}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise ImportFormatError(f"{path}: not an lm-eval results JSON: the field 'config' "
                                "(the run's model and settings) is missing.")
    return data


def _read_samples(path: Path) -> list[dict[str, Any]]:
    text = _bounded_text(path, "samples file")
    check_lines(text, str(path))
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise ImportFormatError(
                f"{path}: line {number} is not JSON; an lm-eval samples file has one JSON "
                "record per line (lm_eval --log_samples)."
            ) from None
        if not isinstance(record, dict) or "doc" not in record or "doc_id" not in record:
            field = "doc" if isinstance(record, dict) and "doc" not in record else "doc_id"
            raise ImportFormatError(
                f"{path}: line {number} is not an lm-eval samples record: the field "
                f"{field!r} is missing (lm_eval --log_samples writes doc_id, doc, target, "
                "resps, filter, metrics and one field per metric)."
            )
        records.append(record)
    if not records:
        raise ImportFormatError(f"{path}: the samples file is empty (no records).")
    return records


def _samples_frame(records: list[dict[str, Any]], path: Path
                   ) -> tuple[pd.DataFrame, list[str], list[str], list[str], TaskImport | None]:
    """Rows of one samples file: filter, doc_id, doc fields, target, response, metrics,
    and the columns of the task family (:mod:`analysis.importers.harness_tasks`).

    Returns the frame, the doc columns, the metric columns, the metrics left out
    (not one number per record) and the family reading (None for other tasks).
    """
    metric_names: list[str] = []
    for record in records:
        names = record.get("metrics")
        if not isinstance(names, list):  # older logs: every non-record field is a metric
            names = [k for k in record if k not in RECORD_FIELDS]
        for name in names:
            if name not in metric_names and name not in _NO_SCORE_METRICS:
                metric_names.append(name)
    metrics, skipped = {}, []
    for name in metric_names:
        values = [record.get(name) for record in records]
        if all(_is_number(v) for v in values if v is not None):
            metrics[name] = pd.array([np.nan if v is None else float(v) for v in values],
                                     dtype="float64")
        else:
            skipped.append(name)
    family = unpack_task(records, metric_names, path)  # bbq, crows_pairs, discrim_eval
    if family is not None:
        skipped = [m for m in skipped if m not in family.unpacked]
    if not metrics and (family is None or not family.columns):
        raise ImportFormatError(
            f"{path}: no per-sample metric holds one number per record (field 'metrics' "
            f"lists {', '.join(metric_names) or 'none'}); there is no score to analyse."
        )
    docs = [r["doc"] if isinstance(r["doc"], dict) else {"doc": r["doc"]} for r in records]
    doc_frame = pd.json_normalize(docs, sep=".")
    for col in doc_frame.columns:
        if doc_frame[col].dtype == object:
            doc_frame[col] = doc_frame[col].map(json_text)
    reserved = {MODEL_COLUMN, TASK_COLUMN, FILTER_COLUMN, DOC_ID_COLUMN, TARGET_COLUMN,
                RESPONSE_COLUMN, PROMPT_COLUMN, MODEL_SOURCE_COLUMN, MODEL_ARGS_COLUMN,
                NUM_FEWSHOT_COLUMN, SEED_COLUMN, SYSTEM_COLUMN, CHAT_TEMPLATE_COLUMN, *metrics}
    doc_frame.columns = [f"doc.{c}" if c in reserved or c.startswith(GEN_KWARGS_PREFIX)
                         else c for c in doc_frame.columns]
    head = pd.DataFrame({
        FILTER_COLUMN: [r.get("filter", "none") for r in records],
        DOC_ID_COLUMN: [r["doc_id"] for r in records],
    })
    tail = pd.DataFrame({
        TARGET_COLUMN: [json_text(r.get("target")) for r in records],
        RESPONSE_COLUMN: [_response(r.get("filtered_resps")) for r in records],
        **metrics,
        PROMPT_COLUMN: [_prompt(r.get("arguments")) for r in records],
    })
    frame = pd.concat([head, doc_frame, tail], axis=1)
    for col, values in (family.columns.items() if family is not None else ()):
        frame[col] = values  # a doc field of the same name (race, gender) is replaced
    return frame, list(doc_frame.columns), list(metrics), skipped, family


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, bool, np.number)) and not isinstance(value, complex)


def _response(value: Any) -> Any:
    """The filtered response: the text of a generation, else JSON text (log-likelihoods)."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    return json_text(value)


def _prompt(arguments: Any) -> Any:
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0")
        if isinstance(first, dict) and isinstance(first.get("arg_0"), str):
            return first["arg_0"]
    return None


def _run_columns(results: dict[str, Any], task: str, model: str | None) -> dict[str, Any]:
    """``model`` and the model settings of one task of one run, as column values."""
    config = results.get("config", {}) or {}
    model_args = config.get("model_args")
    name = model or results.get("model_name") or _model_from_args(model_args) \
        or config.get("model")
    if isinstance(model_args, dict):
        model_args = ",".join(f"{k}={v}" for k, v in sorted(model_args.items())) or None
    n_shot = results.get("n-shot", {}).get(task)
    task_config = results.get("configs", {}).get(task, {}) or {}
    if n_shot is None:
        n_shot = task_config.get("num_fewshot")
    columns: dict[str, Any] = {
        MODEL_COLUMN: name,
        MODEL_SOURCE_COLUMN: results.get("model_source") or config.get("model"),
        MODEL_ARGS_COLUMN: model_args or None,
        NUM_FEWSHOT_COLUMN: n_shot,
        SEED_COLUMN: config.get("random_seed"),
        # no system instruction / chat template is a value of its own (the control)
        SYSTEM_COLUMN: (results.get("system_instruction") or NOT_USED) if results else None,
        CHAT_TEMPLATE_COLUMN: (results.get("chat_template_sha") or NOT_USED) if results
        else None,
    }
    gen = task_config.get("generation_kwargs") if task_config.get(
        "output_type", "generate_until") == "generate_until" else None
    for key, value in sorted((gen or {}).items()):
        columns[f"{GEN_KWARGS_PREFIX}{key}"] = json_text(value)
    return columns


def _model_from_args(model_args: Any) -> str | None:
    """lm-eval's own rule (``GeneralConfigTracker._get_model_name``)."""
    for key in ("peft", "delta", "pretrained", "model", "path", "engine"):
        if isinstance(model_args, dict) and key in model_args:
            return str(model_args[key])
        if isinstance(model_args, str) and f"{key}=" in model_args:
            return model_args.split(f"{key}=")[1].split(",")[0]
    return None
