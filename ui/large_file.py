"""The Data page's "Large file on this machine" source: a path or glob under the data
folder (``BIAS_WORKBENCH_DATA_DIR``), read by DuckDB without an upload
(:mod:`analysis.engines.server_files`: paths outside the folder are refused)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import streamlit as st

from analysis.engines.server_files import DATA_DIR_ENV, data_folder, read_compact, resolve_under
from analysis.errors import AnalysisError
from ui.common import set_data
from ui.data import starting_design

__all__ = ["folder_note", "load_server_path", "on_server_path", "server_folder"]


def server_folder() -> Path | None:
    """The folder the "Large file on this machine" source may read (None: not configured).

    ``BIAS_WORKBENCH_DATA_DIR`` or ``data_dir`` in ``.streamlit/secrets.toml``.

    Raises
    ------
    LoadError
        The configured folder does not exist.
    """
    try:
        configured = st.secrets.get("data_dir")
    except Exception:  # noqa: BLE001 - no secrets file at all
        configured = None
    return data_folder(configured)


def folder_note() -> tuple[Path | None, str]:
    """The data folder and the caption the Data page shows under the path box."""
    try:
        folder = server_folder()
    except AnalysisError as exc:
        return None, str(exc)
    if folder is None:
        return None, (f"No data folder configured: set {DATA_DIR_ENV} (or data_dir in "
                      ".streamlit/secrets.toml) to enable this source.")
    return folder, (f"Read by DuckDB from **{folder}** without an upload; free-text columns "
                    "are left out.")


def load_server_path(text: str) -> bool:
    """Open a path or glob under the data folder through DuckDB (no upload); on error keep
    the previous table. Free-text columns are left out (see analysis.engines.server_files)."""
    try:
        folder = server_folder()
        if folder is None:
            raise AnalysisError(f"No data folder is configured: set {DATA_DIR_ENV} (or "
                                "data_dir in .streamlit/secrets.toml) to the folder the app "
                                "may read.")
        _, files = resolve_under(text, folder)
        frame, meta = read_compact(files, name=text.strip(), with_meta=True)  # the checked files
    except AnalysisError as exc:
        st.session_state["data_error"] = str(exc)
        return False
    except OSError as exc:  # a file gone or changed while read: no traceback, no paths
        st.session_state["data_error"] = (f"The file(s) could not be read: "
                                          f"{exc.strerror or type(exc).__name__}.")
        return False
    stamp = "|".join(f"{f}:{os.path.getsize(f)}:{os.path.getmtime(f)}" for f in files)
    st.session_state.pop("data_error", None)
    token = hashlib.sha1(stamp.encode()).hexdigest()[:16]
    set_data(frame, text.strip(), token, starting_design(frame, None, token=token), meta=meta)
    st.session_state["design_rev"] = st.session_state.get("design_rev", 0) + 1
    return True


def on_server_path() -> None:
    """Callback: open the path typed in the "Large file on this machine" box."""
    text = st.session_state.get("data_server_path") or ""
    if text.strip():
        load_server_path(text)
