"""A size cap on every reply, enforced while it streams in.

An OpenAI-compatible server answering 200 MB per reply took a run of 3 rows to 4.1 GB of
memory, a 630 MB cache and a 629 MB judged file (issue 26). The SDK clients read a whole
body before parsing it, so the cap sits below them, in their HTTP client: a response
event hook (:func:`cap_hook`) refuses a declared ``Content-Length`` above the cap and
wraps the body stream so that reading stops, with :class:`ReplyTooLarge`, as soon as the
*decoded* bytes pass it (gzip and deflate bodies are decompressed here in bounded steps,
so a compressed bomb stops at the cap too). The cap is
``BIAS_WORKBENCH_MAX_REPLY_KB`` (default 1024 KB, 1 MB), read when a client is made; a
provider batch's results file (many replies in one body) has its own,
``BIAS_WORKBENCH_MAX_BATCH_FILE_MB`` (default 1024 MB).

**Redirects are not followed** (issue 43): an allowed endpoint answering 307 would
otherwise make the server re-send the prompts (the visitor's data) to any address. The
client is made with ``follow_redirects=False`` and the response hook refuses a redirect
with :class:`RedirectRefused` (not retried); on a shared server's pages a request hook
(:func:`allow_hook`) also checks every request's URL against the allow-list before it is
sent, so no request, first or later, leaves the list.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from analysis.limits import Limit, max_bytes

__all__ = [
    "MAX_BATCH_FILE", "MAX_REPLY", "RedirectRefused", "ReplyTooLarge", "RequestRefused",
    "allow_hook", "cap_hook", "http_client", "reply_cap",
]


try:  # the HTTP library of the openai and anthropic SDKs (installed with them)
    from httpx2 import AsyncByteStream as _StreamBase
except ImportError:  # pragma: no cover - no SDK, no client to cap
    _StreamBase = object

#: Largest reply body accepted from an API, in KB.
MAX_REPLY = Limit("BIAS_WORKBENCH_MAX_REPLY_KB", 1024, "KB",
                  "the largest reply body accepted from a judge or model API")
#: Largest batch results file (all the replies of a provider batch), in MB.
MAX_BATCH_FILE = Limit("BIAS_WORKBENCH_MAX_BATCH_FILE_MB", 1024, "MB",
                       "the largest batch results file downloaded from an API")
_DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
             "deflate": zlib.MAX_WBITS}


class ReplyTooLarge(Exception):
    """A reply passed the cap (not retried: the same request would get the same reply)."""

    def __init__(self, cap: int, declared: int | None = None, limit: Limit = MAX_REPLY):
        self.cap = cap
        size = f"declares {declared:,} bytes" if declared is not None else \
            f"passed {cap:,} bytes"
        super().__init__(f"the reply {size}, more than the {cap // 1024:,} KB allowed "
                         f"({limit.env}); it was not read further")


class RedirectRefused(Exception):
    """The server answered with a redirect, which is not followed (not retried: the same
    request would get the same answer)."""

    def __init__(self, status: int, location: str):
        shown = location if len(location) <= 80 else location[:77] + "..."
        super().__init__(f"the server answered HTTP {status}, a redirect to {shown!r}; judge "
                         "requests do not follow redirects (the allow-list is checked for the "
                         "address given, not for where a server sends them): use the final "
                         "address as the Base URL")


class RequestRefused(Exception):
    """A request URL outside the allow-list (checked by :func:`allow_hook` before sending)."""


def reply_cap() -> int:
    """The cap in bytes (:data:`MAX_REPLY`)."""
    return int(MAX_REPLY.value() * 1024)


class _Capped(_StreamBase):
    """A response body stream that decodes (gzip/deflate) and stops past ``cap`` bytes."""

    def __init__(self, inner: Any, cap: int, encoding: str | None, limit: Limit):
        self.inner, self.cap, self.limit = inner, cap, limit
        self.decoder = zlib.decompressobj(_DECODERS[encoding]) if encoding else None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            if self.decoder is not None:
                chunk = self.decoder.decompress(chunk, self.cap - seen + 1)
                if self.decoder.unconsumed_tail:
                    raise ReplyTooLarge(self.cap, limit=self.limit)
            seen += len(chunk)
            if seen > self.cap:
                raise ReplyTooLarge(self.cap, limit=self.limit)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def cap_hook(cap: int) -> Callable[[Any], Awaitable[None]]:
    """An ``event_hooks={"response": [...]}`` hook of an httpx(2) ``AsyncClient`` that caps
    each response body at ``cap`` decoded bytes (module docstring)."""
    async def hook(response: Any) -> None:
        if 300 <= response.status_code < 400 and response.status_code != 304:
            raise RedirectRefused(response.status_code, response.headers.get("location", ""))
        limit, cap_ = MAX_REPLY, cap
        if _is_batch_file(str(response.request.url.path)):
            limit, cap_ = MAX_BATCH_FILE, max_bytes(MAX_BATCH_FILE)
        declared = response.headers.get("content-length", "")
        encodings = [e.strip().lower() for e in
                     response.headers.get("content-encoding", "").split(",") if e.strip()]
        encodings = [e for e in encodings if e != "identity"]
        if not encodings and declared.isdigit() and int(declared) > cap_:
            raise ReplyTooLarge(cap_, int(declared), limit)
        if len(encodings) > 1 or (encodings and encodings[0] not in _DECODERS):
            raise ReplyTooLarge(cap_, limit=limit)  # an encoding we did not ask for
        response.stream = _Capped(response.stream, cap_, encodings[0] if encodings else None,
                                  limit)
        if encodings:  # decoded here: the client must not decode again
            del response.headers["content-encoding"]
    return hook


def _is_batch_file(path: str) -> bool:
    """A batch results download: OpenAI ``/files/{id}/content``, Anthropic
    ``/messages/batches/{id}/results``."""
    parts = path.rstrip("/").split("/")
    return (len(parts) >= 3 and parts[-1] == "content" and parts[-3] == "files") or (
        len(parts) >= 4 and parts[-1] == "results" and parts[-3] == "batches")


def allow_hook(allowed: Sequence[str]) -> Callable[[Any], Awaitable[None]]:
    """An ``event_hooks={"request": [...]}`` hook that refuses, before connecting, a request
    whose URL (its query aside) is not below one of the ``allowed`` base URLs
    (:func:`judges.endpoints.endpoint_allowed`, normalised as the client sends it)."""
    from judges.endpoints import endpoint_allowed

    async def hook(request: Any) -> None:
        url = request.url.copy_with(query=None, fragment=None)
        if not endpoint_allowed(str(url), allowed):
            raise RequestRefused(f"a request to {str(url)[:80]!r} is outside the endpoints "
                                 "this server may call; it was not sent")
    return hook


def http_client(client_class: type, cap: int | None = None, *,
                allowed: Sequence[str] | None = None) -> Any:
    """An SDK HTTP client (``DefaultAioHttpClient`` / ``DefaultAsyncHttpxClient``) whose
    replies are capped at ``cap`` bytes (default :func:`reply_cap`), asking for gzip or
    deflate only, following no redirect, and, with ``allowed`` (the pages' allow-list),
    sending no request outside it."""
    hooks: dict[str, list[Any]] = {"response": [cap_hook(cap or reply_cap())]}
    if allowed is not None:
        hooks["request"] = [allow_hook(tuple(allowed))]
    return client_class(event_hooks=hooks, follow_redirects=False,
                        headers={"Accept-Encoding": "gzip, deflate"})
