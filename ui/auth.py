"""Sign-in when an OpenID Connect provider is configured (Streamlit's ``st.login``).

Configured means an ``[auth]`` section in Streamlit's secrets (``.streamlit/secrets.toml``
or the file ``bias-workbench serve --secrets`` names) with ``redirect_uri``,
``cookie_secret``, ``client_id``, ``client_secret`` and ``server_metadata_url``. Then every
page requires sign-in and each session belongs to the signed-in user (:mod:`ui.session`).
Without it the app runs for one person, and says so once per visit when the server
listens on an address other people can reach (``docs/sessions.md``).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import logging
import time
import urllib.request

import streamlit as st

from ui.widgets import md

__all__ = [
    "SINGLE_USER_NOTE", "configured", "provider_problem", "require_sign_in", "user_id",
    "user_label",
]


_log = logging.getLogger(__name__)
_REQUIRED = ("redirect_uri", "cookie_secret", "client_id", "client_secret",
             "server_metadata_url")
SINGLE_USER_NOTE = ("No sign-in is configured: this server is meant for one person, and "
                    "anyone who can reach it can open any session link. To serve a team, "
                    "configure sign-in (README, *Serving a team*).")


def _auth_section() -> dict | None:
    try:
        section = st.secrets.get("auth")
    except Exception:  # noqa: BLE001 - no secrets file at all, or an unreadable one
        return None
    return dict(section) if section else None


def configured() -> bool:
    """Whether an OIDC provider is configured (an ``[auth]`` secrets section)."""
    return _auth_section() is not None


def user_id() -> str | None:
    """The signed-in user's stable id (issuer and subject), or None."""
    if not configured():
        return None
    try:
        if not st.user.is_logged_in:
            return None
        sub = st.user.get("sub") or st.user.get("email")
    except Exception:  # noqa: BLE001 - no user info in this context (AppTest)
        return None
    return f"{st.user.get('iss', '')}|{sub}" if sub else None


def user_label() -> str:
    """The signed-in user's e-mail or name, for display (escape before rendering)."""
    return str(st.user.get("email") or st.user.get("name") or st.user.get("sub") or "")


_answered: dict[str, float] = {}


def provider_problem(url: str) -> str | None:
    """None when the provider's metadata answers, else a message (an answer is trusted for
    30 s; a failure is checked again at the next visit)."""
    if time.monotonic() - _answered.get(url, -60.0) < 30:
        return None
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            meta = json.loads(reply.read(1_000_000))
        if "authorization_endpoint" not in meta:
            return "its discovery document names no authorization endpoint"
    except Exception as exc:  # noqa: BLE001 - any failure is the same for the visitor
        _log.warning("sign-in provider %s: %s", url, exc)
        return "it does not answer"
    _answered[url] = time.monotonic()
    return None


def require_sign_in() -> None:
    """With sign-in configured: a sign-in screen and ``st.stop()`` until the visitor has
    signed in; the signed-in user and a sign-out button in the sidebar. Without it: the
    single-user note (once per visit, on a non-loopback address)."""
    section = _auth_section()
    if section is None:
        _single_user_note()
        return
    missing = [k for k in _REQUIRED if not section.get(k)]
    if missing:
        st.error("Sign-in is configured but incomplete: the `[auth]` secrets lack "
                 f"{', '.join(missing)}. Ask the server's administrator.")
        st.stop()
    if importlib.util.find_spec("authlib") is None:
        st.error("Sign-in is configured but this server lacks Authlib, which Streamlit's "
                 "sign-in needs: install the `team` extra (`pip install -e \".[team]\"`).")
        st.stop()
    if st.user.is_logged_in:
        st.sidebar.caption(f"Signed in as {md(user_label())}")
        st.sidebar.button("Sign out", on_click=st.logout, key="auth_logout")
        return
    st.title("Bias workbench")
    problem = provider_problem(str(section["server_metadata_url"]))
    if problem:
        st.error(f"The sign-in provider cannot be reached ({problem}), so nobody can sign "
                 "in right now. Try again in a minute; if it persists, ask the server's "
                 "administrator. Nothing of your sessions is lost.")
    else:
        st.write("This server is shared: sign in to see your own sessions.")
        if st.button("Sign in", type="primary", key="auth_login"):
            st.login()
    st.stop()


def _listens_beyond_loopback() -> bool:
    address = str(st.get_option("server.address") or "")
    if address in ("", "0.0.0.0", "::"):
        return True
    if address == "localhost":
        return False
    try:
        return not ipaddress.ip_address(address).is_loopback
    except ValueError:
        return True


def _single_user_note() -> None:
    if st.session_state.get("_single_user_noted") or not _listens_beyond_loopback():
        return
    st.session_state["_single_user_noted"] = True
    st.toast(SINGLE_USER_NOTE, icon=":material/person:")
