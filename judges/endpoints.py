"""Where a shared server may send judge requests, and with whose key.

A server that runs the app for others holds API keys in its environment or Streamlit
secrets (``OPENAI_API_KEY`` ...). A visitor must not be able to make it send them, or any
request at all, to an address the visitor chooses. The rules (``docs/judges.md``, section
"Keys and endpoints on a shared server"):

- the **allow-list** is the operator's: ``BIAS_WORKBENCH_JUDGE_ENDPOINTS`` (comma-separated
  base URLs) plus each provider's default endpoint (the official API, or
  ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` when the operator set them). An entry
  allows its scheme, host, port and every path below its path; ``:*`` as the port allows
  every port of that host (``http://127.0.0.1:*``).
- a Base URL typed on a page outside the allow-list is refused before any connection is
  made (:meth:`judges.providers.ChatProvider.check_ready` raises
  :class:`EndpointRefused`);
- the **server's key** is only sent to the provider's default endpoint; a typed Base URL
  (even an allow-listed one) runs with the visitor's own key or none (``not-needed``,
  for key-less local servers);
- a run that uses the server's key needs a cost cap (:func:`require_cost_cap`).

The command line trusts its user (the operator): it applies none of this.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from judges.errors import ProviderConfigError

__all__ = [
    "ENDPOINTS_ENV", "EndpointRefused", "allowed_endpoints", "configured_endpoints",
    "endpoint_allowed", "normalise_path", "refusal", "require_cost_cap", "same_endpoint",
]


#: Environment variable holding the operator's extra allowed base URLs (comma-separated).
ENDPOINTS_ENV = "BIAS_WORKBENCH_JUDGE_ENDPOINTS"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class EndpointRefused(ProviderConfigError):
    """A page asked for an endpoint outside the allow-list, or to use the server's key
    where it may not go."""


_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]|%(?:2f|5c|00)", re.IGNORECASE)


def normalise_path(path: str) -> str:
    """``path`` as a server reads it: percent-encoded dots decoded (``%2e`` is ``.``),
    empty segments dropped and dot segments resolved (RFC 3986, 5.2.4), so
    ``/v1/../../m/x`` and ``/v1/%2e%2e/other`` are compared as ``/m/x`` and ``/other``."""
    out: list[str] = []
    for segment in re.sub("%2e", ".", path, flags=re.IGNORECASE).split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if out:
                out.pop()
            continue
        out.append(segment)
    return "/" + "/".join(out)


def _parts(url: str) -> tuple[str, str, int | str, str] | None:
    """``(scheme, host, port, path)`` of a base URL, normalised as the HTTP client sends it
    (scheme and host lower-case, the default port written out, :func:`normalise_path`),
    or ``None`` if it is not a plain http(s) URL (credentials, query, fragment, spaces,
    control characters, backslashes or percent-encoded slashes make it not plain)."""
    url = url.strip()
    if _UNSAFE.search(url):
        return None
    try:
        split = urlsplit(url)
        port: int | str | None = split.port
    except ValueError:  # a port like ":*" or ":99999"
        split = urlsplit(url)
        if not split.netloc.endswith(":*"):
            return None
        port = "*"
    scheme = split.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not split.hostname:
        return None
    if split.username is not None or split.password is not None or split.query \
            or split.fragment or "@" in split.netloc or "?" in url or "#" in url:
        return None
    if port is None:
        port = _DEFAULT_PORTS[scheme]
    host = split.hostname.lower().rstrip(".")
    path = normalise_path(split.path)
    if port != "*" and not _as_the_client_sends(url, scheme, host, port, path):
        return None
    return scheme, host, port, path


def _as_the_client_sends(url: str, scheme: str, host: str, port: int | str,
                         path: str) -> bool:
    """Whether the SDKs' HTTP client (httpx2, the openai and anthropic SDKs' httpx) reads
    ``url`` as the same scheme, host, port and path (a URL the two parsers read
    differently is not plain)."""
    try:
        from httpx2 import URL
    except ImportError:  # pragma: no cover - no SDK, no request
        return True
    try:
        sent = URL(url)
    except Exception:  # noqa: BLE001 - httpx refuses it: no request can be made to it
        return False
    return (sent.scheme, sent.host.rstrip("."), sent.port or _DEFAULT_PORTS[sent.scheme],
            normalise_path(sent.path)) == (scheme, host, port, path)


def same_endpoint(a: str, b: str) -> bool:
    """Whether two base URLs name the same endpoint (case of the host, default port and
    trailing slashes aside)."""
    pa, pb = _parts(a), _parts(b)
    return pa is not None and pa == pb


def endpoint_allowed(url: str, allowed: Iterable[str]) -> bool:
    """Whether ``url`` is below one of the ``allowed`` base URLs (same scheme, host and
    port, or any port for an entry ending in ``:*``; its path at or below the entry's)."""
    got = _parts(url)
    if got is None or got[2] == "*":
        return False
    for entry in allowed:
        want = _parts(entry)
        if want is None or want[:2] != got[:2] or want[2] not in ("*", got[2]):
            continue
        prefix = want[3].rstrip("/")
        if got[3] == want[3] or got[3].startswith(prefix + "/"):
            return True
    return False


def configured_endpoints() -> list[str]:
    """The operator's entries of :data:`ENDPOINTS_ENV` (empty entries dropped)."""
    return [e.strip() for e in os.environ.get(ENDPOINTS_ENV, "").split(",") if e.strip()]


def allowed_endpoints(default_endpoint: str) -> list[str]:
    """The allow-list of a provider whose default endpoint is ``default_endpoint``."""
    return [default_endpoint, *configured_endpoints()]


def refusal(url: str, allowed: Sequence[str]) -> str | None:
    """Why a request to ``url`` is refused, or ``None`` when it is allowed."""
    if endpoint_allowed(url, allowed):
        return None
    shown = url if len(url) <= 80 else url[:77] + "..."
    return (f"The Base URL {shown!r} is not one this server may call: the operator allows "
            f"{', '.join(allowed)} (set {ENDPOINTS_ENV}, comma-separated base URLs, to allow "
            "more). Leave Base URL empty to use the default endpoint.")


def require_cost_cap(uses_server_key: bool, max_cost_usd: float | None) -> None:
    """Refuse a run on the server's key without a cost cap.

    Raises
    ------
    EndpointRefused
        ``uses_server_key`` and no positive ``max_cost_usd``.
    """
    if uses_server_key and not (max_cost_usd is not None and max_cost_usd > 0):
        raise EndpointRefused(
            "This run would use the server's API key: set a cost cap (Stop at cost, $) "
            "first, or enter your own key.")
