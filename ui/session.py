"""State that survives a browser reload, owned by whoever created it (Streamlit side).

Streamlit forgets ``st.session_state`` when the browser reloads. ``app.py`` therefore
calls :func:`restore` before and :func:`save` after every page run. The URL carries
``?sid=<id>``, an id this server issued and signed; the folder it names
(:mod:`ui.session_store`) holds the table (or the name of the unmodified bundled sample),
the design and the analysis pages' settings.

Public API (stable; ``docs/sessions.md``): :func:`restore`, :func:`save`,
:func:`current_sid`, :func:`owner_key`, :func:`my_sessions`, :func:`user_cache_path`,
:func:`is_setting`, :data:`SETTING_PREFIXES`, :data:`QUERY_KEY`, :data:`RESTORE_ERROR`.
"""

from __future__ import annotations

import binascii
import contextlib
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import streamlit as st
import yaml

from analysis.design import Design
from analysis.table_meta import TableMeta
from ui import auth
from ui.active import active_meta
from ui.session_store import (
    SaveError,
    SessionStore,
    SessionStoreError,
    StateDirError,
    default_state_dir,
    start_pruner,
)
from ui.widgets import md

QUERY_KEY = "sid"
#: Session-state key of the per-table page settings and report sections (ui/page_state.py),
#: saved with the session's meta; :data:`RESTORED_PAGE_STATE` hands them back after a reload.
PAGE_STATE_KEY = "_page_state"
RESTORED_PAGE_STATE = "_page_state_restored"
#: Widget keys of these prefixes are page settings worth keeping.
SETTING_PREFIXES = ("coverage_", "subgroups_", "ecdf_", "importance_", "disparity_", "index_",
                    "cohorts_")
#: Keys of buttons and download buttons (their state cannot be set).
_BUTTON_SUFFIX = re.compile(r"_(csv|png|svg|pdf|html|json|yaml|button|run|go|add|fix_\d+)$")
#: Session-state key of the message shown when a link's session is not opened.
RESTORE_ERROR = "restore_error"
_XSRF_COOKIE = "_streamlit_xsrf"

_AFTER = (" Nothing was loaded from it: a new session was started. Load your table on the "
          "**Data** page (or choose a bundled sample there).")
NOT_ISSUED = "The session id in this link was not issued by this server." + _AFTER
EXPIRED = ("The session in this link has expired or was removed (sessions unused for a "
           "while are removed to keep the server's disk bounded)." + _AFTER)
OTHER_USER = ("The session in this link belongs to another signed-in user, so it was not "
              "opened." + _AFTER)
DAMAGED = "The session in this link could not be read." + _AFTER
FORKED = ("This link's session was started in another browser: you are working on your own "
          "copy under a new link; the original is unchanged.")
REOPENED = ("This link names no session: your last session in this browser ({name}) was "
            "reopened, so nothing you had is replaced. To start afresh, choose a sample or "
            "upload a table on the **Data** page.")
REOPEN_FAILED = ("This link names no session, and your last session in this browser could "
                 "not be read: the bundled sample is open instead.")
MOVED = ("This session was changed in another tab at the same time: this tab's work is kept "
         "under a new link (the other tab's is kept too).")

_stores: dict[Path, SessionStore] = {}
_stores_lock = threading.Lock()


def store() -> SessionStore:
    """The session store of the state folder (:class:`StateDirError` when unusable)."""
    root = default_state_dir()
    with _stores_lock:
        if root not in _stores:
            _stores[root] = SessionStore(root)
            start_pruner(_stores[root])
        return _stores[root]


def _browser_token() -> str | None:
    """The raw token of Streamlit's XSRF cookie: one per browser (it survives reloads, a
    second browser or a private window has another). Its masked form changes on every
    page load, so it is unmasked here (Tornado's version-2 format ``2|mask|token|time``)."""
    try:
        value = (st.context.cookies or {}).get(_XSRF_COOKIE)
    except Exception:  # noqa: BLE001 - no request context (AppTest)
        return None
    if not value:
        return None
    parts = value.strip("\"'").split("|")
    try:
        if len(parts) == 4 and parts[0] == "2":
            mask, masked = binascii.a2b_hex(parts[1]), binascii.a2b_hex(parts[2])
            token = bytes(b ^ mask[i % len(mask)] for i, b in enumerate(masked))
        else:
            token = binascii.a2b_hex(value)
    except (binascii.Error, ValueError):
        return None
    return token.hex() if len(token) >= 16 else None


def owner_key() -> str:
    """Who the viewer is, for ownership: the signed-in user, else this browser (its XSRF
    cookie), else this tab only."""
    user = auth.user_id()
    if user:
        return "user:" + user
    token = _browser_token()
    if token:
        return "browser:" + token
    ss = st.session_state
    if "_tab_owner" not in ss:
        ss["_tab_owner"] = secrets.token_hex(16)
    return "tab:" + ss["_tab_owner"]


def current_sid() -> str | None:
    """This browser session's id (stable across page switches), or None before the first
    save."""
    return st.session_state.get("_sid")


def is_setting(key: Any, value: Any) -> bool:
    """Whether a session-state entry is a page setting to keep (not a button, not data)."""
    if not isinstance(key, str) or not key.startswith(SETTING_PREFIXES) or \
            _BUTTON_SUFFIX.search(key):
        return False
    plain = (str, int, float, bool)
    return value is None or isinstance(value, plain) or (
        isinstance(value, (list, tuple)) and all(isinstance(v, plain) for v in value))


def page_settings() -> dict[str, Any]:
    """The page settings in the session state that are safe to write and set again."""
    return {key: list(value) if isinstance(value, tuple) else value
            for key, value in st.session_state.to_dict().items() if is_setting(key, value)}


def _start_fresh(message: str) -> None:
    st.session_state[RESTORE_ERROR] = message
    st.session_state["_sid"] = None
    del st.query_params[QUERY_KEY]  # the bad id leaves the URL; a new one comes at save


def restore() -> None:
    """On the first run of a browser session, reload the session named in the URL: one
    this server issued, that exists, and that belongs to the viewer (another browser's is
    copied first; another signed-in user's is refused). Never echoes the id."""
    ss = st.session_state
    if ss.get("_session_checked"):
        return sync_url()
    ss["_session_checked"] = True
    try:
        sessions = store()
    except StateDirError as exc:
        ss["_save_error"] = str(exc)  # said here once; save() does not repeat it
        st.warning(md(exc))
        return
    sid = st.query_params.get(QUERY_KEY)
    if not sid:
        return _reopen_last(sessions)
    if not sessions.issued(sid):
        return _start_fresh(NOT_ISSUED)
    try:
        stored = sessions.load(sid)
        if stored is None:
            return _start_fresh(EXPIRED)
        viewer = owner_key()
        if stored.meta.get("owner") != sessions.owner_tag(viewer):
            if auth.configured():
                return _start_fresh(OTHER_USER)
            try:
                sid = sessions.fork(stored, viewer)
            except SaveError as exc:  # e.g. a full disk: show the data, keep no copy
                _apply(stored)
                ss["_sid"] = None
                del st.query_params[QUERY_KEY]
                st.warning(md(exc))
                return
            stored = sessions.load(sid)
            st.toast(FORKED, icon=":material/content_copy:")
        _apply(stored)
    except Exception:  # noqa: BLE001 - SessionStoreError, or a table or design that no longer reads
        return _start_fresh(DAMAGED)
    ss["_sid"], ss["_rev"] = sid, stored.meta.get("rev")
    st.query_params[QUERY_KEY] = sid


def _reopen_last(sessions: SessionStore) -> None:
    """A link without ``?sid=`` (typed, bookmarked, or copied before the id was in it):
    reopen the viewer's most recent session instead of silently starting on the sample
    (the browser's, or the signed-in user's; a tab-only viewer has none), and say so."""
    viewer = owner_key()
    if viewer.startswith("tab:"):
        return
    try:
        mine = sessions.owned_by(viewer)
    except OSError:
        mine = []
    if not mine:
        return
    ss = st.session_state
    try:
        stored = sessions.load(mine[0]["sid"])
        if stored is None or stored.meta.get("owner") != sessions.owner_tag(viewer):
            raise SessionStoreError("gone")
        _apply(stored)
    except Exception:  # noqa: BLE001 - SessionStoreError or a table that no longer reads
        st.info(REOPEN_FAILED)
        return
    ss["_sid"], ss["_rev"] = stored.sid, stored.meta.get("rev")
    st.query_params[QUERY_KEY] = stored.sid
    st.info(REOPENED.format(name=md(stored.meta.get("name") or "untitled")))


def sync_url() -> None:
    """Put this browser session's id in the URL now, before the page runs: Streamlit drops
    the query string on a page switch, and a page that ends in ``st.stop()`` can no longer
    send anything (every later message raises Streamlit's StopException)."""
    _sync_url(st.session_state.get("_sid"))


_run = threading.local()
_streamlit_stop = getattr(st.stop, "original", st.stop)  # Streamlit's (also after a reload)


def _stop() -> None:
    """``st.stop()`` while a page runs under :func:`page_run`: its end-of-run work (save the
    session, put the id in the URL) first, then Streamlit's stop."""
    finish = getattr(_run, "finish", None)
    _run.finish = None
    try:
        if finish is not None:
            finish()
    finally:
        _streamlit_stop()


_stop.original = _streamlit_stop  # type: ignore[attr-defined]
st.stop = _stop  # the pages' st.stop() (looked up at call time) goes through _stop


@contextlib.contextmanager
def page_run(finish: Callable[[], None]) -> Iterator[None]:
    """Run a page so that ``finish`` (app.py: remember the settings, :func:`save`, the
    sidebar) runs exactly once: before a ``st.stop()`` takes effect, else after the page.

    After ``st.stop()`` Streamlit raises StopException at the next session-state access
    or message, so work in a ``finally`` behind the stop never happened: the session was
    not saved and its id not put back in the URL (issue 42: Compare, Factor importance
    and Report lost ``?sid=``)."""
    _run.finish = finish
    try:
        yield
    finally:
        pending, _run.finish = getattr(_run, "finish", None), None
        if pending is not None:
            pending()


def _apply(stored) -> None:
    """Put a stored session into the session state."""
    import pandas as pd

    ss = st.session_state
    meta = stored.meta
    design = Design.from_text(meta["design"]) if meta.get("design") else None
    if meta.get("sample"):
        from ui.data import SAMPLES, load_sample

        if meta["sample"] not in SAMPLES or not load_sample(meta["sample"]):
            raise SessionStoreError("the bundled sample it names is missing")
    else:
        frame = pd.read_parquet(stored.table)
        ss["results_frame"], ss["results_name"] = frame, meta["name"]
        ss["results_token"] = meta["token"]
        ss["results_meta"] = _table_meta(meta.get("table_meta"), meta["name"])
    if design is not None:
        ss["design"] = design
    ss["design_rev"] = ss.get("design_rev", 0) + 1
    settings = meta.get("settings") or {}
    for key, value in settings.items():
        if is_setting(key, value):
            ss[key] = value
    if isinstance(meta.get("page_state"), dict):
        ss[RESTORED_PAGE_STATE] = meta["page_state"]  # validated by ui.page_state
    ss["_saved_settings"] = dict(settings)
    ss["_saved_table"] = (stored.sid, ss["results_token"])
    ss["_saved_meta"] = _meta_text(_meta(settings))


def _meta(settings: dict[str, Any]) -> dict[str, Any]:
    from ui.data import active_is_sample

    ss = st.session_state
    design: Design | None = ss.get("design")
    meta = {"name": ss.get("results_name", ""), "token": ss["results_token"],
            "design": design.to_yaml() if design is not None else None,
            "settings": settings,
            "sample": ss.get("results_name") if active_is_sample() else None}
    loaded = active_meta()  # what the loader decided (the Data page's captions)
    if loaded.decimal_comma_columns or loaded.dropped_columns or loaded.compact:
        meta["table_meta"] = {"decimal_comma_columns": list(loaded.decimal_comma_columns),
                              "dropped_columns": list(loaded.dropped_columns),
                              "compact": loaded.compact}
    pages = ss.get(PAGE_STATE_KEY)
    if pages:
        try:  # plain values only (the session YAML is safe_dump'ed, never pickled)
            yaml.safe_dump(pages)
            meta["page_state"] = pages
        except yaml.YAMLError:
            pass
    return meta


def _table_meta(stored: object, name: str) -> TableMeta:
    """The :class:`~analysis.table_meta.TableMeta` a stored session wrote (column names
    and the compact flag; anything else is dropped)."""
    if not isinstance(stored, dict):
        return TableMeta(name)

    def names(key: str) -> tuple[str, ...]:
        value = stored.get(key)
        return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

    return TableMeta(name, decimal_comma_columns=names("decimal_comma_columns"),
                     dropped_columns=names("dropped_columns"),
                     compact=stored.get("compact") is True)


def _meta_text(meta: dict) -> str:
    return yaml.safe_dump(meta, sort_keys=True, allow_unicode=True)


def _sync_url(sid: str | None) -> None:
    # Streamlit drops the query string on a page switch: the same id goes back each run.
    if sid and st.query_params.get(QUERY_KEY) != sid:
        st.query_params[QUERY_KEY] = sid


def save() -> None:
    """Write the table (when new) and the design and settings (when changed) under this
    browser session's one id. A fresh visit that changed nothing writes nothing."""
    ss = st.session_state
    sid = ss.get("_sid")
    if ss.get("results_frame") is None or "results_token" not in ss:
        return _sync_url(sid)
    table_key = (sid, ss["results_token"])
    kept = ss.get("_saved_settings", {}) if ss.get("_saved_table") == table_key else {}
    settings = {**kept, **page_settings()}  # a new table starts from the current settings only
    ss["_saved_settings"] = settings
    meta = _meta(settings)
    text = _meta_text(meta)
    if sid is None and meta["sample"] and not settings:
        first = ss.setdefault("_pristine_meta", text)
        if first == text:
            return  # the bundled sample as a fresh visit opens it: nothing to keep
    if sid is not None and ss.get("_saved_meta") == text:
        return _sync_url(sid)
    try:
        new_sid, rev = store().save(
            sid, meta, ss["results_frame"], owner_key=owner_key(), base_rev=ss.get("_rev"),
            write_table=not meta["sample"] and ss.get("_saved_table") != table_key)
    except SessionStoreError as exc:  # the disk keeps the previous state; say so once
        if ss.get("_save_error") != str(exc):
            ss["_save_error"] = str(exc)
            st.warning(md(exc))
        return _sync_url(sid)
    ss.pop("_save_error", None)
    if sid is not None and new_sid != sid:
        st.toast(MOVED, icon=":material/call_split:")
    ss["_sid"], ss["_rev"] = new_sid, rev
    ss["_saved_table"] = (new_sid, ss["results_token"])
    ss["_saved_meta"] = text
    _sync_url(new_sid)


def my_sessions() -> list[dict[str, Any]]:
    """The viewer's sessions, most recently used first (``sid``, ``name``, ``used``);
    empty when the state folder is unusable. Read from disk when this session's id or
    revision changed, else at most once a minute (the scan reads every session's YAML)."""
    ss = st.session_state
    key = (owner_key(), ss.get("_sid"), ss.get("_rev"))
    cached = ss.get("_my_sessions")
    if cached and cached[0] == key and time.monotonic() - cached[1] < 60:
        return cached[2]
    try:
        mine = store().owned_by(owner_key())
    except (StateDirError, OSError):
        mine = []
    ss["_my_sessions"] = (key, time.monotonic(), mine)
    return mine


def sessions_sidebar(slot=None):
    """With sign-in configured: "My sessions" in the sidebar, links to the viewer's
    sessions (names escaped; ids are server-issued URL-safe characters). Called before the
    page (a page that stops early still shows it) and again after :func:`save` with the
    slot it returned, to count this run's save."""
    if not auth.configured() or auth.user_id() is None:
        return None
    slot = slot if slot is not None else st.sidebar.empty()
    mine = my_sessions()
    with slot.container(), st.expander(f"My sessions ({len(mine)})"):
        if not mine:
            st.caption("None yet: a session is kept once you load a table or change a "
                       "setting.")
        for row in mine[:50]:
            here = " (this one)" if row["sid"] == current_sid() else ""
            st.markdown(f"[{md(row['name']) or 'untitled'}](/?{QUERY_KEY}={row['sid']})"
                        f"{here}")
    return slot


def user_cache_path() -> Path:
    """The judge reply cache and batch record of the viewer: one file per signed-in user
    when sign-in is configured (nobody lists or cancels another user's batches), else the
    one file of this single-user server (``judges.cache.default_cache_path``)."""
    from judges.cache import default_cache_path

    base = default_cache_path()
    user = auth.user_id()
    if not user:
        return base
    try:
        tag = store().owner_tag("user:" + user)
    except StateDirError:
        import hashlib

        tag = hashlib.sha256(user.encode()).hexdigest()[:32]
    return base.parent / "users" / tag / base.name


__all__ = ["DAMAGED", "EXPIRED", "FORKED", "MOVED", "NOT_ISSUED", "OTHER_USER",
           "PAGE_STATE_KEY", "QUERY_KEY", "REOPENED", "REOPEN_FAILED", "RESTORED_PAGE_STATE",
           "RESTORE_ERROR", "SETTING_PREFIXES", "SaveError", "current_sid", "is_setting",
           "my_sessions", "owner_key", "page_run", "page_settings", "restore", "save",
           "sessions_sidebar", "store", "sync_url",
           "user_cache_path"]
