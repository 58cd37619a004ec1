"""Loading helpers of the Data page: bundled samples, uploads, a design to start from
(large files on this machine: ``ui/large_file.py``)."""

from __future__ import annotations

from functools import lru_cache

import pandas as pd
import streamlit as st

from analysis.design import Design, check_design, suggest_design
from analysis.errors import AnalysisError
from analysis.io import read_results
from analysis.table_meta import LoadedTable
from ui.active import SAMPLE_DIR, SAMPLES, active_meta, set_data, token_of
from ui.context import guarded_callback
from ui.upload_budget import decoding

__all__ = [
    "PENDING_SAMPLE", "SAMPLES", "active_is_sample", "active_source", "load_bytes",
    "load_default_sample", "load_sample", "missing_values_note", "on_sample_change",
    "on_upload", "sample_caption", "starting_design", "suggest_design", "sync_sample_choice",
]


#: Session key of a sample chosen in the selectbox whose load has not finished yet.
PENDING_SAMPLE = "_sample_pending"


def sample_caption(name: str) -> str:
    """Provenance of a bundled sample."""
    return SAMPLES[name]["caption"]


@st.cache_data(max_entries=8, show_spinner="Reading the file...")
def _read_loaded(data: bytes, name: str, encoding: str = "utf-8") -> LoadedTable:
    with decoding(len(data), name):  # a server-wide budget (not cached when refused)
        return read_results(data, name=name, encoding=encoding)


def _read(data: bytes, name: str, encoding: str = "utf-8") -> pd.DataFrame:
    return _read_loaded(data, name, encoding).frame


def starting_design(frame: pd.DataFrame, preferred: Design | None, *,
                    token: str | None = None) -> Design:
    """The preferred design if it fits the table, else the current one, else a suggestion
    (with the table's ``token``: inferred off this thread, ``ui/pending_design.py``)."""
    for candidate in (preferred, st.session_state.get("design")):
        if candidate is None:
            continue
        try:
            check_design(candidate, frame)
            return candidate
        except AnalysisError:
            continue
    if token is not None:
        from ui.pending_design import suggested_design

        return suggested_design(frame, token)
    return suggest_design(frame)


def load_bytes(data: bytes, name: str, preferred: Design | None = None, *,
               encoding: str = "utf-8") -> bool:
    """Read ``data`` and make it the active table; on error keep the previous one."""
    try:
        frame, meta = _read_loaded(data, name, encoding)
    except AnalysisError as exc:
        st.session_state["data_error"] = str(exc)
        return False
    st.session_state.pop("data_error", None)
    token = token_of(data)
    set_data(frame, name, token, starting_design(frame, preferred, token=token), meta=meta)
    st.session_state["design_rev"] = st.session_state.get("design_rev", 0) + 1
    return True


def load_sample(name: str) -> bool:
    """Load a bundled sample with its curated design."""
    path = SAMPLE_DIR / name
    if not path.exists():
        st.session_state["data_error"] = (f"The bundled sample {name} is missing from "
                                          f"{SAMPLE_DIR}: regenerate it with "
                                          "`python sample_data/build_samples.py`.")
        return False
    design_path = SAMPLE_DIR / SAMPLES[name]["design"]
    preferred = Design.load(design_path) if design_path.exists() else None
    return load_bytes(path.read_bytes(), name, preferred)


@guarded_callback
def on_sample_change() -> None:
    """Callback: load the sample chosen in the selectbox.

    The choice is written down first, in a key that outlives the Data page: a click on
    another page while the sample is read interrupts this callback at Streamlit's next
    yield point (the reading spinner), and the next page run then finishes the load
    (:func:`sync_sample_choice`)."""
    st.session_state[PENDING_SAMPLE] = st.session_state["data_sample"]
    load_sample(st.session_state["data_sample"])
    st.session_state.pop(PENDING_SAMPLE, None)


@guarded_callback
def on_upload() -> None:
    """Callback: load the uploaded file (keeps the previous table if it fails)."""
    upload = st.session_state.get("data_upload")
    if upload is not None:
        load_bytes(upload.getvalue(), upload.name,
                   encoding=st.session_state.get("data_encoding", "utf-8"))


@lru_cache(maxsize=8)
def _sample_token(name: str, mtime_ns: int) -> str:
    return token_of((SAMPLE_DIR / name).read_bytes())


def active_is_sample() -> bool:
    """Whether the active table is a bundled sample as loaded: its name is a sample's file
    name and its content token is that file's (an upload of the same name, an import or a
    prepared table never is)."""
    ss = st.session_state
    name = ss.get("results_name")
    if name not in SAMPLES or ss.get("results_frame") is None:
        return False
    try:
        mtime = (SAMPLE_DIR / name).stat().st_mtime_ns
    except OSError:
        return False
    return ss.get("results_token") == _sample_token(name, mtime)


def sync_sample_choice() -> bool:
    """Load the sample chosen on the Data page when its change callback did not finish (a
    page switch right after the choice interrupts it) or never ran: the pending choice
    the callback wrote down, else the selectbox's value if it differs from the active
    table (``docs/sessions.md``). Only an active table that is itself an unmodified bundled
    sample is replaced; any other table stays and the Data page offers its button.
    Called at the top of every page (``ui.navigation.route_first_visit``); True when it
    loaded the sample."""
    pending = st.session_state.pop(PENDING_SAMPLE, None)
    choice = pending if pending is not None else st.session_state.get("data_sample")
    if choice not in SAMPLES or choice == st.session_state.get("results_name") \
            or not active_is_sample():
        return False
    return load_sample(choice)


def load_default_sample() -> bool:
    """Load the first bundled sample (what the app opens on)."""
    return load_sample(next(iter(SAMPLES)))


def missing_values_note(frame: pd.DataFrame) -> None:
    """A warning per column with missing values, except the columns an importer left empty
    in every row (e.g. lm-eval's unset ``model_args``): those are named in one caption, so a
    fresh import opens without warnings about columns the app itself created."""
    from ui.widgets import md

    imported = bool(st.session_state.get("results_rebuild"))
    missing = frame.isna().sum()
    empty = [str(c) for c, k in missing.items() if imported and len(frame) and k == len(frame)]
    if empty:
        st.caption("Left empty by the importer (not used unless you choose them): "
                   + ", ".join(md(c) for c in empty))
    for column, count in missing[missing > 0].items():
        if str(column) in empty:
            continue
        share = count / len(frame)
        st.warning(f"Column **{md(column)}** has {count:,} missing values "
                   f"({'<0.1%' if share < 0.001 else f'{share:.1%}'} of rows).")


def active_source() -> str:
    """The Data page's Source choice that made the active table: a bundled sample, an
    import (it left its rebuild command), a large file, or an upload."""
    ss = st.session_state
    if ss.get("results_frame") is None or active_is_sample():
        return "Bundled sample"
    if ss.get("results_rebuild"):
        return "Import from ..."
    if active_meta().compact:
        return "Large file on this machine"
    return "Upload a file"
