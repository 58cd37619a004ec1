"""Page settings and report sections that follow the user, kept per table.

Streamlit drops the widget states of a page when another page is opened, so without help a
return to Subgroups would open on the page defaults again. This module keeps a store in the
session state, one entry per table (its content token, ``results_token``):

- ``settings``: the analysis pages' widget values (:func:`ui.session.is_setting`: the
  page prefixes ``subgroups_``, ``coverage_`` ...; plain values only);
- ``report``: the report sections added for that table (``ui.report``).

:func:`recall` runs at the top of every page run (``ui.navigation.route_first_visit``): it
puts back the active table's settings the page needs before its widgets are drawn.
:func:`remember` runs after every page run (``app.py``, before ``session.save()``): it
copies the current settings into the store. When the active table changes, the settings
and report sections of the table left are filed under its token and the new table starts
from its own (or from the page defaults): one table's settings are never applied to
another's columns. A setting that no longer fits the page (a factor the design dropped, a
value the subset no longer offers) is dropped by :func:`fit` with a note.

Persistence across reloads: the store is part of the session's meta that
``ui.session.save`` writes (under the session's lock, forked with the session, safe YAML,
never pickled); after a reload ``ui.session.restore`` hands it back under
``session.RESTORED_PAGE_STATE`` and :func:`recall` validates it once per browser session.
See ``docs/sessions.md``.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui import session

__all__ = [
    "ACTIVE", "LOADED", "MAX_TABLES", "NOTES", "REPORT_KEY", "STORE", "recall", "remember",
    "show_notes",
]


STORE = session.PAGE_STATE_KEY
ACTIVE = "_page_state_token"
NOTES = "_page_state_notes"
LOADED = "_page_state_loaded"
REPORT_KEY = "report_sections"
#: Tables whose settings are kept in one session (the oldest are forgotten first).
MAX_TABLES = 20


def _entry(token: str) -> dict[str, Any]:
    store = st.session_state.setdefault(STORE, {})
    entry = store.setdefault(token, {"name": "", "settings": {}, "report": []})
    while len(store) > MAX_TABLES:
        store.pop(next(iter(store)))
    return entry


def _note(text: str) -> None:
    notes = st.session_state.setdefault(NOTES, [])
    if text not in notes:
        notes.append(text)


def _switch(token: str) -> None:
    """File the settings and report of the table left under its token; start the new one
    from its own."""
    ss = st.session_state
    previous = ss.get(ACTIVE)
    ss[ACTIVE] = token
    if previous is None or previous == token:
        return
    old = _entry(previous)
    old["settings"].update(session.page_settings())
    for key in session.page_settings():
        del ss[key]
    old["report"] = list(ss.get(REPORT_KEY) or [])
    new = _entry(token)
    ss[REPORT_KEY] = list(new["report"])
    ss.pop("report_built", None)
    if old["report"] or new["report"]:
        _note(f"The active table changed (from {old['name'] or 'the previous table'} to "
              f"{ss.get('results_name', 'this one')}): the report now holds this table's "
              f"{len(new['report'])} section(s); the {len(old['report'])} section(s) added "
              "for the other table are kept and come back when it is loaded again.")


def _load_file() -> None:
    """Once per browser session: the store saved with this session's link, if any."""
    ss = st.session_state
    if ss.get(LOADED):
        return
    ss[LOADED] = True
    data = ss.pop(session.RESTORED_PAGE_STATE, None)
    if not isinstance(data, dict):
        return
    store = ss.setdefault(STORE, {})
    for token, entry in data.items():
        if isinstance(entry, dict) and token not in store:
            store[str(token)] = {
                "name": str(entry.get("name", "")),
                "settings": {k: v for k, v in (entry.get("settings") or {}).items()
                             if session.is_setting(k, v)},
                "report": [s for s in (entry.get("report") or []) if isinstance(s, dict)
                           and isinstance(s.get("section"), str)
                           and isinstance(s.get("settings"), dict)]}
    token = ss.get("results_token")
    if token in store and not ss.get(REPORT_KEY):
        ss[REPORT_KEY] = list(store[token]["report"])
        ss[ACTIVE] = token


def recall() -> None:
    """At the top of a page run: the active table's kept settings, set where missing."""
    ss = st.session_state
    _load_file()
    token = ss.get("results_token")
    if token is None:
        return
    _switch(token)
    entry = _entry(token)
    entry["name"] = str(ss.get("results_name", ""))
    for key, value in entry["settings"].items():
        if key not in ss:
            ss[key] = list(value) if isinstance(value, list) else value


def remember() -> None:
    """After a page run: the current settings (and report sections) of the active table."""
    ss = st.session_state
    token = ss.get("results_token")
    if token is None:
        return
    previous = ss.get(ACTIVE)
    if previous is not None and previous != token:
        # a table loaded during this run: the settings drawn were the old table's. File
        # them there; the next run's recall() switches (removing a widget's key after the
        # widget was drawn in the same run would break Streamlit's state).
        _entry(previous)["settings"].update(session.page_settings())
        return
    ss[ACTIVE] = token
    entry = _entry(token)
    entry["name"] = str(ss.get("results_name", ""))
    entry["settings"].update(session.page_settings())
    entry["report"] = list(ss.get(REPORT_KEY) or [])


def show_notes() -> None:
    """Show (once) the notes about settings dropped or filed away."""
    from ui.widgets import md

    for text in st.session_state.pop(NOTES, []):
        st.info(md(text), icon="ℹ️")
