"""The Data page's "Import from ..." section: any importer of ``analysis.importers.SOURCES``.

Uploaded files are written (with their own names, so an lm-eval ``samples_*.jsonl`` finds
its ``results_*.json``) to a temporary folder and passed to the importer as paths. The
option widgets are built from the importer's ``read`` signature, so a new importer
module needs no change here.
"""

from __future__ import annotations

import inspect
import shlex
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from analysis.importers import SOURCES, ImportResult, load_importer
from ui import data_help
from ui.common import set_data, token_of
from ui.data_help import INSTALL, TITLES, source_label, without_paths
from ui.upload_budget import UploadBusy, decoding
from ui.widgets import each_note, md, show_table

__all__ = ["ALL_TASKS", "IMPORT_JOB", "PART", "chosen_part", "collect_import",
           "import_section", "part_name", "rebuild_command", "show_result", "use_import"]


def _options(source: str, module: Any) -> dict[str, Any]:
    """One widget per keyword option of the importer's ``read``; empty means default."""
    params = [p for p in list(inspect.signature(module.read).parameters.values())[1:]
              if p.kind is p.KEYWORD_ONLY
              or (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty)]
    options: dict[str, Any] = {}
    if not params:
        return options
    cols = st.columns(min(len(params), 3))
    for i, p in enumerate(params):
        key = f"import_opt_{source}_{p.name}"
        label = p.name.replace("_", " ")
        if isinstance(p.default, bool):
            value = cols[i % 3].checkbox(label, value=p.default, key=key)
            if value != p.default:
                options[p.name] = value
            continue
        listy = "Sequence" in str(p.annotation) or "list" in str(p.annotation)
        hint = "comma-separated; empty: automatic" if listy else (
            f"default: {p.default}" if p.default not in (None, inspect.Parameter.empty)
            else "empty: automatic")
        text = cols[i % 3].text_input(label, key=key, help=hint, placeholder=hint)
        if text.strip():
            options[p.name] = ([t.strip() for t in text.split(",") if t.strip()] if listy
                               else text.strip())
    return options


#: Session key of the import running in the background worker (``ui/import_jobs.py``).
IMPORT_JOB = "_import_job"


def _run(source: str, uploads: list, options: dict[str, Any]) -> None:
    """Import the uploads in the background worker (``ui/import_jobs.py``: the importer
    and its structure inference never run in this script thread), waiting for it as long
    as an upload waits for its structure (``ui.pending_design.wait_seconds``); the result
    (or the errors) goes to the session state then or on a later run
    (:func:`collect_import`). Messages name the files, never the server's temporary
    folder."""
    import hashlib
    import json

    from ui import inference_pool
    from ui.import_jobs import import_work
    from ui.pending_design import wait_seconds

    ss = st.session_state
    for key in ("import_error", "import_result", PART):
        ss.pop(key, None)
    ss["import_round"] = ss.get("import_round", 0) + 1  # the next attempt: an empty uploader
    digest = hashlib.sha1(f"{source}\n{json.dumps(options, sort_keys=True)}".encode())
    for upload in uploads:
        digest.update(Path(upload.name).name.encode() + b"\0" + upload.getvalue())
    token = f"import-{digest.hexdigest()[:20]}"
    try:
        with decoding(sum(len(u.getvalue()) for u in uploads), names_of(uploads)):
            job = inference_pool.job(token)  # the same files and options: the earlier job
            folder = (tempfile.mkdtemp(prefix="bias-workbench-import-") if job is None else
                      str(Path(tempfile.gettempdir()) / "bias-workbench-import-earlier"))
            if job is None:
                paths = []
                for upload in uploads:
                    path = Path(folder) / Path(upload.name).name
                    path.write_bytes(upload.getvalue())
                    paths.append(str(path))
                job = inference_pool.submit(token, (source, paths, options, folder),
                                            work=import_work)
            job.wait(wait_seconds())
    except UploadBusy as exc:
        ss["import_error"] = str(exc)
        return
    ss[IMPORT_JOB] = {"token": token, "folder": folder,
                      "names": names_of(uploads), "source": source,
                      "command": rebuild_command(source, [u.name for u in uploads], options)}
    collect_import()


def collect_import() -> bool:
    """The background import's result or errors into the session state once it is done;
    True while it still runs."""
    from ui import inference_pool

    ss = st.session_state
    pending = ss.get(IMPORT_JOB)
    job = inference_pool.job(pending["token"]) if pending else None
    if job is None:
        ss.pop(IMPORT_JOB, None)
        return False
    if not job.done:
        return True
    ss.pop(IMPORT_JOB)
    folder, result = pending["folder"], job.result
    value = result.value if isinstance(result.value, dict) else {"errors": [result.error]}
    if "result" in value:
        ss["import_result"] = (value["result"],
                               f"{pending['names']} ({pending['source']} import)")
        ss["import_command"] = pending["command"]
    else:
        ss["import_error"] = "\n\n".join(dict.fromkeys(without_paths(str(e), folder)
                                                          for e in value["errors"]))
    return False


def _import_notice() -> None:
    """While the import runs: its seconds so far, refreshed; the page reruns when done."""
    from ui import inference_pool
    from ui.pending_design import job_notice

    job_notice(inference_pool.job(st.session_state[IMPORT_JOB]["token"]), lambda job: (
        f"Importing in the background: {job.elapsed():.0f} s so far (reading the files and "
        "the structure of what they hold). This page refreshes by itself; other pages can "
        "be used meanwhile."))


def names_of(uploads: list) -> str:
    """The uploads' file names, comma-separated."""
    return ", ".join(u.name for u in uploads)


def rebuild_command(source: str, names: list[str], options: dict[str, Any]) -> str:
    """The CLI command that rebuilds the imported table as ``results.parquet``."""
    parts = ["python -m analysis import", source, *map(shlex.quote, names),
             "--out results.parquet"]
    for key, value in options.items():
        text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        parts.append(f"--model {shlex.quote(text)}" if key == "model"
                     else f"--option {shlex.quote(f'{key}={text}')}")
    return " ".join(parts)


def _forget_result() -> None:
    """Another importer chosen: the previous one's result or error is stale."""
    for key in ("import_result", "import_error", PART):
        st.session_state.pop(key, None)


def use_import(family: str | None = None) -> None:
    """Callback: make the imported table (or its task ``family``'s part) active with its
    suggested design."""
    result, name = st.session_state["import_result"]
    command = st.session_state.get("import_command")
    if family is not None:
        result, name = result.parts[family], part_name(name, family)
        command = command and f"{command} --task-family {shlex.quote(family)}"
    set_data(result.frame, name, token_of(result.frame), result.design)
    if command:
        st.session_state["results_rebuild"] = command
    st.session_state["design_rev"] = st.session_state.get("design_rev", 0) + 1
    st.session_state.pop("data_error", None)


def import_section() -> bool:
    """Source choice, upload, options, Import; then counts, notes, preview, Use. True
    while an imported table is shown and not yet used (the Data page then does not
    preview the active table below it: issue 42, the old table looked like the import's)."""

    source = st.selectbox("Import from", list(SOURCES), on_change=_forget_result,
                          format_func=lambda s: source_label(s, TITLES.get(s, s)),
                          key="import_source")
    if data_help.importer_problem(source):  # said before any upload
        st.warning(md(data_help.importer_problem(source)) + f"\n\nInstall it with `{INSTALL}` and "
                   "restart the app; the other importers work without it.")
        return False
    module = load_importer(source)
    uploads = st.file_uploader("Files to import", accept_multiple_files=True,
                               key=f"import_files_{st.session_state.get('import_round', 0)}")
    options = _options(source, module)
    if st.button("Import", key="import_run", disabled=not uploads, type="primary"):
        _run(source, uploads, options)
        st.rerun()  # drawn again with an empty uploader and the result or the errors
    if collect_import():  # still running in the background worker
        _import_notice()
        return False
    if "import_error" in st.session_state:
        st.error(md(st.session_state["import_error"]))
        return False
    if "import_result" not in st.session_state:
        return False
    result: ImportResult
    result, name = st.session_state["import_result"]
    result, name, family = chosen_part(result, name)
    show_result(result, name, family=family)
    return st.session_state.get("results_name") != name


#: Session key of the task family chosen among an import's parts.
PART = "import_part"
ALL_TASKS = "All tasks together"


def part_name(name: str, family: str) -> str:
    """The active table's name for one task family of an import."""
    return f"{name} [{family}]"


def chosen_part(result: ImportResult, name: str) -> tuple[ImportResult, str, str | None]:
    """With several task families (``result.parts``): a choice of the table to use, each
    family's own (with its outcome and design) or all tasks together; the chosen import,
    its name and family (None: all together)."""
    if not result.parts:
        return result, name, None
    options = [ALL_TASKS, *result.parts]
    st.markdown("**Task families**")
    st.dataframe(result.extras.get("task_families"), hide_index=True, key="import_families")
    choice = st.radio("Table to use", options, horizontal=True, key=PART,
                      help="Each task family imports as its own table, with its own outcome "
                           "and design (import each in turn: choose it, then Use this "
                           "table). All together is the generic table of every task.")
    if choice == ALL_TASKS:
        return result, name, None
    return result.parts[choice], part_name(name, choice), choice


def show_result(result: ImportResult, name: str, *, family: str | None = None) -> None:
    """Row accounting, notes, the preview, further tables, and the Use button (of the
    task ``family``'s part when one is chosen)."""
    c1, c2, c3 = st.columns([1, 1, 3])
    c1.metric("Imported rows", f"{len(result.frame):,}")
    c2.metric("Columns", result.frame.shape[1])
    c3.markdown(f"**Import**  \n{md(name)}")
    st.dataframe(pd.DataFrame({"count": result.counts}).rename_axis("what").reset_index(),
                 hide_index=True, key="import_counts")
    each_note(result.notes, st.info)
    st.dataframe(result.frame.head(200), width="stretch", height=240)
    for key, table in result.extras.items():
        if key == "task_families":  # shown with the choice of the table to use
            continue
        st.markdown(f"**{md(key.replace('_', ' '))}**")
        show_table(table, f"{result.source}_{key}", key=f"import_dl_{key}")
    st.button("Use this table", key="import_use", on_click=use_import,
              kwargs={"family": family}, type="primary")
    if st.session_state.get("results_name") == name:
        st.success(md(f"Active table: {name}, with its suggested design "
                      f"({', '.join(st.session_state['design'].names)})."))
