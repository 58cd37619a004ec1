"""Inspect AI evaluation logs (``.eval`` or ``.json``), read through Inspect's own API.

Nothing here parses a log: :func:`inspect_ai.log.read_eval_log` checks each file (header
only) and :func:`inspect_ai.analysis.samples_df` reads the samples, with the model and
task columns of :mod:`inspect_ai.analysis`. Scores are turned into numbers by Inspect's
own :func:`inspect_ai.analysis.score_to_float` (``value_to_float``: C = 1, P = 0.5,
I = 0, N = 0, yes/true = 1, no/false = 0, numeric text as numbers). The column mapping
and the suggested design are in ``docs/import_inspect.md``. ``inspect_ai`` is imported
only when :func:`read` runs (it is in the ``harnesses`` extra).
"""

from __future__ import annotations

import json
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.importers import ImportFormatError, ImportResult, PathArg
from analysis.importers.harness_design import MODEL_COLUMN, harness_design, uniform_types
from analysis.importers.harness_design import json_text as _json_text
from analysis.io import check_regular_file, read_input_bytes
from analysis.limits import MAX_INPUT, check_json_depth, check_zip, max_bytes
from analysis.native_scores import importer_extras

__all__ = [
    "ANSWER_PREFIX", "EPOCH_COLUMN", "ERROR_COLUMN", "GENERATE_CONFIG_PREFIX", "ID_COLUMN",
    "INPUT_COLUMN", "LOG_COLUMN", "LOG_SUFFIXES", "METADATA_PREFIX", "MODEL_ARGS_COLUMN",
    "MODEL_BASE_URL_COLUMN", "RAW_SUFFIX", "SCORE_PREFIX", "SOURCE", "TARGET_COLUMN",
    "TASK_ARG_PREFIX", "TASK_COLUMN", "read",
]


SOURCE = "inspect"
TASK_COLUMN = "task"
EPOCH_COLUMN = "epoch"
ID_COLUMN = "id"
TARGET_COLUMN = "target"
INPUT_COLUMN = "input"
ERROR_COLUMN = "error"
LOG_COLUMN = "log"
MODEL_ARGS_COLUMN = "model_args"
MODEL_BASE_URL_COLUMN = "model_base_url"
GENERATE_CONFIG_PREFIX = "generate_config."
TASK_ARG_PREFIX = "task_arg_"
METADATA_PREFIX = "metadata_"
SCORE_PREFIX = "score_"
#: The answer a scorer read (``Score.answer``), read for BBQ samples only.
ANSWER_PREFIX = "answer_"
RAW_SUFFIX = "_raw"
LOG_SUFFIXES = (".eval", ".json")


def read(
    paths: Sequence[PathArg],
    *,
    model: str | None = None,
    full: bool | str = False,
    task_family: str | None = None,
) -> ImportResult:
    """Read Inspect AI logs into one row per (sample, epoch) of every log.

    Parameters
    ----------
    paths
        Log files (``.eval`` or ``.json``) or folders (searched recursively, like
        ``inspect_ai.log.list_eval_logs``). Several logs (models, tasks) concatenate.
    model
        Model name to use instead of the log's (``eval.model``, e.g.
        ``openai/gpt-4o``) in every row.
    full
        Read the full sample metadata (``samples_df(full=True)``): slower, but keeps
        what the sample summaries abbreviate (strings over 1,000 characters). Text
        from the CLI (``--option full=true``) is accepted: true/false,
        yes/no, 1/0.
    task_family
        Import only the logs of this task (a log holds one task; an Inspect task is its
        own family). Without it, logs of several tasks import as the generic table of
        all of them and ``parts`` holds each task's own import
        (``extras["task_families"]``: ``family``, ``tasks``, ``rows``, ``outcome``,
        ``factors``).

    Returns
    -------
    ImportResult
        ``frame`` has the columns ``model``, ``task``, ``epoch``, ``id`` (the dataset's
        sample id), one column per metadata field (``metadata_x`` becomes ``x``; it keeps
        the prefix if ``x`` is taken), ``target``, ``input``, one float column per scorer
        ``score_<scorer>`` (via ``value_to_float``) and, for letter or text scores,
        ``score_<scorer>_raw`` with the original value, ``error`` (the sample's error
        message, empty if none), the settings ``model_base_url``, ``model_args``,
        ``generate_config.<key>`` and ``task_arg_<name>``, and ``log`` (the log file).
        ``counts`` has ``logs``, ``rows_read``, ``rows_out``, ``errored`` (samples that
        ended in an error; their scores are missing).

    Raises
    ------
    ImportFormatError
        inspect-ai not installed, a path that does not exist, a folder without logs, a
        file that is not an Inspect log, a log without samples, a log without scores
        (each names the file and the field), a ``task_family`` none of the logs has.
    """
    full = _as_bool(full, "full")
    analysis_api, log_api = _inspect_modules()
    files = _log_files(paths, log_api)
    columns = _columns(analysis_api)
    per_log = {path: _samples_of(path, analysis_api, log_api, columns, full=full)
               for path in files}
    tasks: dict[str, list[Any]] = {}
    for path, samples in per_log.items():
        for task in dict.fromkeys(samples["task_name"].astype(str)):
            tasks.setdefault(task, []).append(path)
    if task_family is not None:
        if task_family not in tasks:
            from analysis.errors import did_you_mean

            raise ImportFormatError(
                f"No log of the task {task_family!r}; the logs' tasks: "
                f"{', '.join(map(repr, tasks))}." + did_you_mean(task_family, list(tasks),
                                                                 sentence=True))
        per_log = {p: s[s["task_name"].astype(str) == task_family]
                   for p, s in per_log.items() if p in tasks[task_family]}
    raw = uniform_types(pd.concat(list(per_log.values()), ignore_index=True, sort=False))
    frame, items, score_columns, notes = _results_table(raw, analysis_api)
    if model is not None:
        frame[MODEL_COLUMN] = model
    family = _bbq_samples(frame, raw, notes)  # inspect_evals' bbq: the chosen option
    design, design_notes = harness_design(
        frame,
        item_columns=items,
        prompt_columns=[TASK_COLUMN, *[c for c in frame.columns if c.startswith(TASK_ARG_PREFIX)]],
        model_columns=[MODEL_COLUMN, MODEL_BASE_URL_COLUMN, MODEL_ARGS_COLUMN, EPOCH_COLUMN,
                       *[c for c in frame.columns if c.startswith(GENERATE_CONFIG_PREFIX)]],
        score_columns=score_columns,
        name="Inspect import",
    )
    extras = {}
    if family is not None:
        from analysis.importers.harness_tasks import apply_hints

        design = apply_hints(design, frame, [family], design_notes)
    if "answer_type" in frame.columns and "answer_info" in frame.columns:  # BBQ rows
        from analysis.importers.harness_bbq import bias_scores

        extras["bias_scores"] = bias_scores(frame[frame["answer_info"].notna()])
    errored = int((frame[ERROR_COLUMN].fillna("").astype(str) != "").sum())
    if errored:
        notes.append(f"{errored:,} samples ended in an error; their scores are missing.")
    counts = {"logs": len(files), "rows_read": len(raw), "rows_out": len(frame),
              "errored": errored}
    parts: dict[str, ImportResult] = {}
    if task_family is None and len(tasks) > 1:
        from analysis.importers.lm_eval import family_table

        parts = {task: read(logs, model=model, full=full, task_family=task)
                 for task, logs in tasks.items()}
        extras["task_families"] = family_table(parts)
        notes.append(f"{len(tasks)} tasks ({', '.join(tasks)}): each can be imported alone "
                     "with its own outcome and design (task_family=; on the Data page: "
                     "'Table to use'; CLI: --task-family or --each-family).")
    summary = (f"Read {len(raw):,} samples from {len(files)} log(s): "
               f"{frame[MODEL_COLUMN].nunique()} model(s), {frame[TASK_COLUMN].nunique()} "
               "task(s).")
    return ImportResult(frame=frame, design=design, source=SOURCE, counts=counts,
                        notes=[summary, *notes, *design_notes],
                        extras=importer_extras(extras, frame, design), parts=parts)


def _bbq_samples(frame: pd.DataFrame, raw: pd.DataFrame, notes: list[str]) -> Any:
    """BBQ samples (inspect_evals' ``bbq``): add the chosen option and BBQ's columns to
    ``frame`` in place; the family's design hints, or None for other samples."""
    from analysis.importers import harness_bbq

    answers = [c for c in raw.columns if c.startswith(ANSWER_PREFIX)]
    if not answers or not harness_bbq.detect_inspect(frame):
        return None
    bbq_rows = frame["answer_info"].notna().to_numpy()  # other logs' rows stay as they are
    unpacked, more = harness_bbq.unpack_inspect(
        frame[bbq_rows].assign(bbq_answer_letter=raw[answers[0]].to_numpy()[bbq_rows]),
        "bbq_answer_letter")
    for col in unpacked.columns:
        if col not in frame.columns:
            frame[col] = unpacked[col].reindex(frame.index)
    notes.extend(more)
    if not bbq_rows.all():
        notes.append(f"{int((~bbq_rows).sum()):,} rows of other tasks have no BBQ columns; "
                     "the outcome stays the generic choice (import BBQ logs alone for "
                     "biased_answer as the outcome).")
        return None
    return harness_bbq.inspect_hints()


def _inspect_modules() -> tuple[Any, Any]:
    try:
        import inspect_ai.analysis as analysis_api
        import inspect_ai.log as log_api
    except ImportError:
        raise ImportFormatError(
            "Reading Inspect logs needs the inspect-ai package, which is not installed: "
            "pip install 'bias-workbench[harnesses]' (or pip install inspect-ai)."
        ) from None
    return analysis_api, log_api


def _log_files(paths: Sequence[PathArg], log_api: Any) -> list[Path]:
    if not paths:
        raise ImportFormatError("The Inspect importer needs at least one log file or folder.")
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = [Path(info.name.removeprefix("file://"))
                     for info in log_api.list_eval_logs(str(path), recursive=True)]
            if not found:
                raise ImportFormatError(f"{path}: no Inspect log (.eval or .json) in this "
                                        "folder.")
            files.extend(sorted(found))
        elif path.is_file():
            if path.suffix not in LOG_SUFFIXES:
                raise ImportFormatError(f"{path}: not an Inspect log (Inspect writes .eval or "
                                        ".json files).")
            files.append(path)
        else:
            raise ImportFormatError(f"{path}: no such file or folder.")
    return list(dict.fromkeys(p.resolve() for p in files))


def _check_bounds(path: Path) -> None:
    """Refuse a log over the limits of any input before Inspect reads it (issue 43): a
    ``.json`` log's size and JSON nesting; an ``.eval`` ZIP's entries, declared size and
    members' expansion ratio (:func:`analysis.limits.check_zip`), then each JSON member's
    nesting. Inspect's readers recurse and hold whole members: 100,000 levels took one
    to 11 GB, a 1.5 MB ``.eval`` whose header expands to 1.5 GB to 4.8 GB."""
    if path.suffix == ".json":
        data, _ = read_input_bytes(path, str(path))
        check_json_depth(data, str(path))
        return
    if check_regular_file(path).st_size > max_bytes(MAX_INPUT):
        read_input_bytes(path, str(path))  # raises the size limit's LimitError
    try:
        archive = check_zip(path, str(path))
    except zipfile.BadZipFile:
        return  # not a ZIP: Inspect's own message follows
    with archive:
        for member in archive.infolist():
            if member.filename.endswith(".json"):
                check_json_depth(archive.read(member), f"{path}: {member.filename[:80]}")


def _check_header(path: Path, log_api: Any) -> None:
    _check_bounds(path)
    try:
        header = log_api.read_eval_log(str(path), header_only=True)
    except Exception as exc:  # a zip or JSON that is not a log: Inspect's own message
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ImportFormatError(f"{path}: not an Inspect log (reading its header 'eval' "
                                f"failed: {first[:200]}).") from None
    if getattr(header, "eval", None) is None:
        raise ImportFormatError(f"{path}: not an Inspect log (the field 'eval' is missing).")


def _columns(analysis_api: Any) -> list[Any]:
    """Inspect's sample summary, model and task columns.

    ``EvalModel``'s ``model_args`` column reads ``eval.model_base_url`` in inspect-ai
    0.3.285, so it is replaced by one that reads ``eval.model_args``.
    """
    model_columns = [c for c in analysis_api.EvalModel if c.name != MODEL_ARGS_COLUMN]
    model_columns.append(analysis_api.EvalColumn(MODEL_ARGS_COLUMN, path="eval.model_args"))
    return [*analysis_api.SampleSummary, *model_columns, *analysis_api.EvalTask]


def _plain_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    """Arrow-backed columns -> plain numpy / object columns (the rest of the package's)."""
    out = {}
    for col in frame.columns:
        s = frame[col]
        if isinstance(s.dtype, pd.ArrowDtype) or pd.api.types.is_string_dtype(s):
            if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
                s = s.astype("float64") if s.isna().any() else s.astype(
                    "bool" if pd.api.types.is_bool_dtype(s) else s.dtype.numpy_dtype)
            else:
                s = s.astype(object).where(s.notna(), None)
        out[col] = s
    return pd.DataFrame(out, index=frame.index)


def _samples_of(path: Path, analysis_api: Any, log_api: Any, columns: list[Any], *,
                full: bool) -> pd.DataFrame:
    """The samples of one log through ``samples_df``, checked for samples and scores."""
    _check_header(path, log_api)
    try:
        with warnings.catch_warnings():
            # inspect-ai 0.3.285 calls drop_duplicates(inplace=True), deprecated in pandas 3.1
            warnings.filterwarnings("ignore", message="The inplace keyword")
            raw = analysis_api.samples_df(str(path), columns=columns, full=full, quiet=True)
            if raw.empty:
                # samples_df lists a .json file only under Inspect's own file-name pattern
                # (time stamp first), so a renamed JSON log is read in full and passed in.
                log = log_api.read_eval_log(str(path))
                if log.samples:
                    raw = analysis_api.samples_df(log, columns=columns, full=full, quiet=True)
    except Exception as exc:  # Inspect raises its own errors for unreadable samples
        raise ImportFormatError(f"{path}: Inspect could not read its samples: {exc}") from None
    if raw.empty:
        raise ImportFormatError(f"{path}: the log holds no samples (field 'samples' is empty: "
                                "the eval was cancelled or failed before any sample "
                                "finished).")
    scores = [c for c in raw.columns if c.startswith(SCORE_PREFIX)]
    if not scores or raw[scores].isna().all().all():
        raise ImportFormatError(f"{path}: the log has no scores (field 'scores' is empty for "
                                "every sample): run the task with a scorer, or score the log "
                                "with `inspect score`.")
    if f"{METADATA_PREFIX}answer_info" in raw.columns:  # BBQ samples: the letters read
        raw = _with_answers(path, raw, scores, analysis_api, full=full)
    return _plain_dtypes(raw)


def _with_answers(path: Path, raw: pd.DataFrame, scores: list[str], analysis_api: Any, *,
                  full: bool) -> pd.DataFrame:
    """``answer_<scorer>``: the answer each scorer read (``Score.answer``), per sample."""
    columns = [analysis_api.SampleColumn("id", path="id"),
               analysis_api.SampleColumn(EPOCH_COLUMN, path="epoch"),
               *[analysis_api.SampleColumn(f"{ANSWER_PREFIX}{c[len(SCORE_PREFIX):]}",
                                           path=f"scores.{c[len(SCORE_PREFIX):]}.answer")
                 for c in scores]]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The inplace keyword")
        answers = analysis_api.samples_df(str(path), columns=columns, full=full, quiet=True)
    keep = [c for c in answers.columns if c.startswith(ANSWER_PREFIX)]
    key = ["_id", "_epoch"]
    right = answers[keep].assign(_id=answers["id"].astype(str).to_numpy(),
                                 _epoch=answers[EPOCH_COLUMN].astype(str).to_numpy())
    left = raw.assign(_id=raw["id"].astype(str).to_numpy(),
                      _epoch=raw[EPOCH_COLUMN].astype(str).to_numpy())
    return left.merge(right, on=key, how="left", validate="one_to_one").drop(columns=key)


def _results_table(raw: pd.DataFrame, analysis_api: Any
                   ) -> tuple[pd.DataFrame, list[str], list[str], list[str]]:
    """The results table, its metadata columns, its numeric score columns and notes."""
    notes: list[str] = []
    score_raw = [c for c in raw.columns if c.startswith(SCORE_PREFIX)]
    metadata = [c for c in raw.columns if c.startswith(METADATA_PREFIX)]
    taken = {MODEL_COLUMN, TASK_COLUMN, EPOCH_COLUMN, ID_COLUMN, TARGET_COLUMN, INPUT_COLUMN,
             ERROR_COLUMN, LOG_COLUMN, MODEL_ARGS_COLUMN, MODEL_BASE_URL_COLUMN, *score_raw}
    renamed = {c: c[len(METADATA_PREFIX):] for c in metadata
               if c[len(METADATA_PREFIX):] not in taken}
    metadata_out = [renamed.get(c, c) for c in metadata]
    frame = pd.DataFrame({
        MODEL_COLUMN: raw["model"],
        TASK_COLUMN: raw["task_name"],
        EPOCH_COLUMN: raw[EPOCH_COLUMN],
        ID_COLUMN: raw[ID_COLUMN],
    })
    for col in metadata:
        frame[renamed.get(col, col)] = raw[col].map(_json_text)
    frame[TARGET_COLUMN] = raw[TARGET_COLUMN]
    frame[INPUT_COLUMN] = raw[INPUT_COLUMN]
    score_columns = []
    for col in score_raw:
        values = raw[col]
        text = values.dropna().astype(str)
        if text.str.match(r"^\s*[\[{]").any():
            notes.append(f"{col}: scores that are lists or mappings are kept as text and not "
                         "turned into numbers (value_to_float would count them as 0).")
            frame[col] = values.map(_json_text)
            continue
        converted = analysis_api.score_to_float(col)(raw[[col]])[col]
        frame[col] = converted.astype("float64").to_numpy()
        if not (pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values)):
            frame[f"{col}{RAW_SUFFIX}"] = values
        score_columns.append(col)
    frame[ERROR_COLUMN] = raw[ERROR_COLUMN].fillna("") if ERROR_COLUMN in raw else ""
    for col in (MODEL_BASE_URL_COLUMN, MODEL_ARGS_COLUMN):
        frame[col] = raw[col].map(_json_text).map(lambda v: None if v in ("{}", "") else v)
    settings = raw["model_generate_config"].map(_as_mapping)
    for key in sorted({k for s in settings for k in s}):
        frame[f"{GENERATE_CONFIG_PREFIX}{key}"] = settings.map(lambda s, k=key: _json_text(
            s.get(k)))
    for col in sorted(c for c in raw.columns if c.startswith(TASK_ARG_PREFIX)):
        frame[col] = raw[col].map(_json_text)
    frame[LOG_COLUMN] = raw[LOG_COLUMN]
    return frame.reset_index(drop=True), metadata_out, score_columns, notes


def _as_mapping(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _as_bool(value: bool | str, name: str) -> bool:
    """A flag given as a bool or as CLI text (``--option full=true``)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0"):
        return False
    raise ImportFormatError(f"Option {name!r} takes true or false, not {value!r}.")
