"""State that survives a browser reload: a session id in the URL, a folder on the server.

Streamlit forgets ``st.session_state`` when the browser reloads. ``app.py`` therefore
calls :func:`restore` before and :func:`save` after every page run. The URL carries
``?sid=<id>``; ``<state dir>/<id>/`` holds

- ``table.parquet``: the loaded table (written once per table, never pickled);
- ``session.yaml``: its name and content token, the design (as design YAML) and the
  analysis pages' settings (plain strings, numbers, booleans and lists of them).

The state dir is ``$BIAS_WORKBENCH_STATE_DIR`` or ``<tmp>/bias-workbench-sessions``;
sessions untouched for :data:`MAX_AGE_DAYS` are removed; a table larger than
:data:`MAX_TABLE_BYTES` on disk is not kept (the page then says so after a reload).
When a link's session cannot be restored the pages say so and do not switch to a
sample on their own (``docs/sessions.md``).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
import yaml

from analysis.design import Design

QUERY_KEY = "sid"
MAX_TABLE_BYTES = 200 * 1024 * 1024
MAX_AGE_DAYS = 7
#: Widget keys of these prefixes are page settings worth keeping.
SETTING_PREFIXES = ("coverage_", "subgroups_", "ecdf_", "importance_", "disparity_", "index_",
                    "cohorts_")
#: Keys of buttons and download buttons (their state cannot be set).
_BUTTON_SUFFIX = re.compile(r"_(csv|png|svg|pdf|html|json|yaml|button|run|go|add|fix_\d+)$")
_SID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
RESTORE_ERROR = "restore_error"


def state_dir() -> Path:
    """Where session folders live."""
    env = os.environ.get("BIAS_WORKBENCH_STATE_DIR")
    return Path(env) if env else Path(tempfile.gettempdir()) / "bias-workbench-sessions"


def _folder(sid: str) -> Path | None:
    return state_dir() / sid if _SID.match(sid) else None


def is_setting(key: Any, value: Any) -> bool:
    """Whether a session-state entry is a page setting to keep (not a button, not data)."""
    if not isinstance(key, str) or not key.startswith(SETTING_PREFIXES) or \
            _BUTTON_SUFFIX.search(key):
        return False
    plain = (str, int, float, bool)
    return value is None or isinstance(value, plain) or (
        isinstance(value, (list, tuple)) and all(isinstance(v, plain) for v in value))


def _settings() -> dict[str, Any]:
    """The page settings in the session state that are safe to write and set again."""
    return {key: list(value) if isinstance(value, tuple) else value
            for key, value in st.session_state.to_dict().items() if is_setting(key, value)}


def restore() -> None:
    """On the first run of a browser session, reload the state named in the URL."""
    ss = st.session_state
    if ss.get("_session_checked"):
        return
    ss["_session_checked"] = True
    sid = st.query_params.get(QUERY_KEY)
    if not sid:
        return
    folder = _folder(sid)
    try:
        if folder is None:
            raise ValueError("the id in the link is not one this app writes")
        meta = yaml.safe_load((folder / "session.yaml").read_text(encoding="utf-8"))
        frame = pd.read_parquet(folder / "table.parquet")
        design = Design.from_text(meta["design"]) if meta.get("design") else None
    except Exception as exc:  # noqa: BLE001 - any failure: say so, keep going
        reason = ("it has expired or the server was restarted" if isinstance(
            exc, FileNotFoundError) else str(exc))
        ss[RESTORE_ERROR] = (f"The session in this link ({sid}) could not be restored: "
                             f"{reason}. Nothing was loaded in its place: load your table "
                             "again on the **Data** page (or choose a bundled sample there).")
        return
    ss["results_frame"], ss["results_name"] = frame, meta["name"]
    ss["results_token"] = meta["token"]
    if design is not None:
        ss["design"] = design
    ss["design_rev"] = ss.get("design_rev", 0) + 1
    settings = meta.get("settings") or {}
    for key, value in settings.items():
        ss[key] = value
    ss["_saved_settings"] = dict(settings)
    ss["_saved_table"] = (sid, meta["token"])
    ss["_saved_meta"] = _meta_text(meta)


def _meta_text(meta: dict) -> str:
    return yaml.safe_dump(meta, sort_keys=True, allow_unicode=True)


def save() -> None:
    """Write the table (when new) and the design and settings (when changed)."""
    ss = st.session_state
    frame = ss.get("results_frame")
    if frame is None or "results_token" not in ss:
        return
    sid = st.query_params.get(QUERY_KEY)
    if not sid or _folder(sid) is None:
        sid = secrets.token_urlsafe(18)
    if st.query_params.get(QUERY_KEY) != sid:
        st.query_params[QUERY_KEY] = sid
    folder = _folder(sid)
    table_key = (sid, ss["results_token"])
    kept = ss.get("_saved_settings", {}) if ss.get("_saved_table") == table_key else {}
    settings = {**kept, **_settings()}  # a new table starts from the current settings only
    ss["_saved_settings"] = settings
    design: Design | None = ss.get("design")
    meta = {"name": ss.get("results_name", ""), "token": ss["results_token"],
            "design": design.to_yaml() if design is not None else None,
            "settings": settings}
    text = _meta_text(meta)
    if ss.get("_saved_meta") == text and ss.get("_saved_table") == table_key:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if ss.get("_saved_table") != table_key:
            _prune()
            tmp = folder / "table.parquet.tmp"
            frame.to_parquet(tmp, index=False)
            if tmp.stat().st_size > MAX_TABLE_BYTES:
                tmp.unlink()
                raise OSError("the table is too large to keep for a reload")
            tmp.replace(folder / "table.parquet")
            ss["_saved_table"] = table_key
        (folder / "session.yaml").write_text(text, encoding="utf-8")
        ss["_saved_meta"] = text
    except Exception:  # noqa: BLE001 - saving is best effort; a reload then says so
        shutil.rmtree(folder, ignore_errors=True)
        ss["_saved_table"] = ss["_saved_meta"] = None


def _prune() -> None:
    """Remove session folders untouched for :data:`MAX_AGE_DAYS` days."""
    cutoff = time.time() - MAX_AGE_DAYS * 86400
    root = state_dir()
    if not root.is_dir():
        return
    for folder in root.iterdir():
        try:
            if folder.is_dir() and _SID.match(folder.name) and folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue
