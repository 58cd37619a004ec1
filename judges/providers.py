"""Chat providers behind one small interface, with their SDKs imported lazily.

A :class:`ChatProvider` turns a :class:`~judges.request.ChatRequest` into a
:class:`~judges.request.Reply` with one HTTP call (no retries: the runner retries), says
who it is for the cache key (:meth:`~ChatProvider.identity`), which parameters it
actually sends (:meth:`~ChatProvider.effective_params`), and whether an exception is
worth retrying (:meth:`~ChatProvider.classify_error`).

- ``openai``: the Chat Completions endpoint (``POST {base_url}/chat/completions``) through
  the ``openai`` SDK client. With ``base_url`` it serves any OpenAI-compatible server
  (Ollama ``http://localhost:11434/v1``, vLLM, llama.cpp, LM Studio). Structured output
  via ``response_format`` (JSON schema, strict).
- ``anthropic``: the Messages endpoint (``POST {base_url}/v1/messages``) through the
  ``anthropic`` SDK client. Structured output via ``output_config.format``. Anthropic API
  version 2026-10-21 (SDK 2.x) rejects ``temperature``; the provider does not send it,
  so it is not part of the cache key either.

Both send the JSON body with the SDK client's generic ``post()`` (the SDKs' documented
way to reach an endpoint with a plain body): authentication, base URL, timeouts and the
SDK's typed errors are the SDK's own, but the per-call conversion of typed parameters,
which costs about 0.5-1 ms of CPU per call, is skipped. With ``aiohttp`` installed the
SDK clients use their aiohttp transport (``DefaultAioHttpClient``), which halves the
CPU per call again; ``transport="httpx"`` forces the default one. Both matter at a few
hundred calls per second (``benchmarks/bench_judges.py``).

API keys are taken from the constructor or the environment (``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``), kept in memory only, and removed from every error message.
Endpoints on this machine (Ollama, vLLM ...) need no key.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import os
import re
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal
from urllib.parse import urlparse

from analysis.install import install_command
from judges.endpoints import EndpointRefused, allowed_endpoints, refusal, same_endpoint
from judges.errors import ProviderConfigError
from judges.logprobs import TOP_LOGPROBS, read_openai_logprobs
from judges.request import ChatRequest, Reply
from judges.transport import RedirectRefused, ReplyTooLarge, RequestRefused
from judges.transport import http_client as capped_client

__all__ = [
    "ANTHROPIC_STOPS", "AnthropicChat", "ChatProvider", "ErrorInfo", "MalformedReplyError",
    "anthropic_reply", "openai_reply",
    "OpenAIChat", "PROVIDERS", "REASONING_EFFORTS", "SETUP_STATUSES", "TRANSIENT_STATUSES",
    "Transport", "aiohttp_available", "int_or_zero", "is_local_url", "is_reasoning_model",
    "make_provider", "page_provider", "parse_retry_after", "provider_class",
    "register_provider",
]


Transport = Literal["auto", "aiohttp", "httpx"]
#: Strings shaped like provider keys (also partly masked ones a server may echo back).
_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{4,}")
#: HTTP statuses worth retrying besides 5xx.
TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})
_MAX_ERROR_CHARS = 300


class MalformedReplyError(Exception):
    """The server answered 200 but the body is not a usable reply (not retried)."""


@dataclass(frozen=True)
class ErrorInfo:
    """How the runner should treat an exception from :meth:`ChatProvider.complete`.

    Attributes
    ----------
    transient
        Worth retrying (429, 408/409/425, 5xx, timeouts, connection errors).
    retry_after
        Seconds the server asked us to wait (``Retry-After`` / ``retry-after-ms``).
    message
        A short description without secrets.
    setup
        The error says the endpoint or the key is wrong (authentication or permission
        refused, endpoint or model not found, no connection): before the first reply of a
        run, the runner stops the run instead of sending every row (fail fast).
    """

    transient: bool
    retry_after: float | None
    message: str
    setup: bool = False


#: HTTP statuses that mean a wrong key, endpoint or model (fail fast before any reply).
SETUP_STATUSES = frozenset({401, 403, 404})
#: OpenAI reasoning models: o-series and the gpt-5 family (not its ``-chat`` snapshots).
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5(?!-chat))", re.IGNORECASE)
#: Reasoning effort values the OpenAI API accepts.
REASONING_EFFORTS: tuple[str, ...] = ("minimal", "low", "medium", "high")


def is_reasoning_model(model: str) -> bool:
    """Whether ``model`` is an OpenAI reasoning model (``o1``, ``o3-mini``, ``o4-mini``,
    ``gpt-5``, ``gpt-5-mini`` ...; a ``vendor/`` prefix is ignored). These reject any
    temperature but the default, spend part of the token limit on hidden reasoning, and
    take ``max_completion_tokens`` and ``reasoning_effort``."""
    return bool(_REASONING_MODEL.match(model.rsplit("/", 1)[-1]))


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes / contexts (the SDKs wrap the socket error twice)."""
    out: list[BaseException] = []
    while exc is not None and exc not in out and len(out) < 10:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return out


def _connect_failure(exc: BaseException) -> bool:
    """Whether the connection itself could not be made (not a slow reply)."""
    for e in _chain(exc):
        name = type(e).__name__
        if isinstance(e, ConnectionRefusedError | socket.gaierror) or name in (
                "ClientConnectorError", "ConnectError", "ConnectTimeout",
                "ClientConnectorDNSError"):
            return True
    return False


def _root(exc: BaseException) -> str:
    last = _chain(exc)[-1]
    return f"{type(last).__name__}: {last}"


def is_local_url(url: str | None) -> bool:
    """Whether ``url`` points at this machine (localhost, a loopback IP, ``*.local``)."""
    if not url:
        return False
    host = (urlparse(url).hostname or "").lower()
    if host in ("localhost", "host.docker.internal") or host.endswith(".local"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(float(ms) / 1000, 0.0)
        value = headers.get("retry-after")
    except (AttributeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def int_or_zero(value: Any) -> int:
    """``int(value)``, 0 for a missing or non-numeric value (token counts of a reply)."""
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def aiohttp_available() -> bool:
    """Whether ``aiohttp`` is installed (the SDKs' faster HTTP transport)."""
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return False
    return True


class ChatProvider(ABC):
    """One chat API and model (see the module docstring).

    Parameters
    ----------
    model
        The judge model name as the API knows it.
    base_url
        Another endpoint for the same API (local or compatible servers); ``None`` uses
        the SDK's default (which honours ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``).
    api_key
        The key; ``None`` reads :attr:`env_key` from the environment.
    transport
        ``"auto"`` (aiohttp when installed, else httpx), ``"aiohttp"`` or ``"httpx"``.
    allowed_endpoints
        When given (pages of a shared server, see :func:`page_provider`), the base URLs
        requests may go to: any other endpoint is refused by :meth:`check_ready`, before
        a connection is made.
    use_env_key
        Whether :meth:`api_key` may fall back to :attr:`env_key` in the environment.
    """

    #: Whether the key is the server's (environment or secrets), not the visitor's.
    uses_server_key: bool = False

    name: ClassVar[str] = ""
    env_key: ClassVar[str] = ""
    env_base_url: ClassVar[str] = ""
    default_endpoint: ClassVar[str] = ""
    sdk: ClassVar[str] = ""
    supported_params: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 transport: Transport = "auto", allowed_endpoints: Sequence[str] | None = None,
                 use_env_key: bool = True):
        if transport not in ("auto", "aiohttp", "httpx"):
            raise ProviderConfigError(f"transport must be auto, aiohttp or httpx, not "
                                      f"{transport!r}.")
        self.transport = transport
        if not str(model or "").strip():
            raise ProviderConfigError(f"Provider {self.name!r} needs a model name.")
        self.model = str(model).strip()
        self.base_url = (base_url or "").strip() or None
        self._api_key = api_key or None
        self.allowed_endpoints = None if allowed_endpoints is None else tuple(allowed_endpoints)
        self._use_env_key = use_env_key
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:  # never show the key
        return f"{type(self).__name__}(model={self.model!r}, endpoint={self.endpoint!r})"

    # --- identity and parameters -------------------------------------------------------
    @property
    def endpoint(self) -> str:
        """The base URL requests go to."""
        return (self.base_url or self.operator_endpoint()).rstrip("/")

    @classmethod
    def operator_endpoint(cls) -> str:
        """The endpoint used without a Base URL: ``env_base_url`` from the environment (the
        operator's choice) or the provider's own API."""
        return (os.environ.get(cls.env_base_url) or cls.default_endpoint).rstrip("/")

    @property
    def label(self) -> str:
        """``provider:model`` for the ``judge`` column and messages."""
        return f"{self.name}:{self.model}"

    def identity(self) -> dict[str, str]:
        """What identifies the replies' source in the cache key (no key, no timeouts)."""
        return {"provider": self.name, "model": self.model, "endpoint": self.endpoint}

    @property
    def official(self) -> bool:
        """Whether requests go to the provider's own API (not a compatible server)."""
        own = urlparse(self.default_endpoint).hostname or ""
        return (urlparse(self.endpoint).hostname or "").lower() == own

    @property
    def price_section(self) -> str:
        """The price table section: ``local`` for endpoints on this machine, the API's name
        for its own endpoint (and for Anthropic gateways), ``openai-compatible`` for any
        other server of the OpenAI provider (vLLM on the LAN, hosted compatible APIs:
        unpriced until you add prices)."""
        if is_local_url(self.endpoint):
            return "local"
        return self.name if self.official or self.name != "openai" else "openai-compatible"

    @property
    def reasoning(self) -> bool:
        """Whether the model is a reasoning model (see :func:`is_reasoning_model`)."""
        return False

    def accepted_params(self) -> frozenset[str]:
        """The parameters sent for this model (a subset of :attr:`supported_params`)."""
        return self.supported_params

    def why_not_sent(self, param: str) -> str:
        """Why ``param`` is not sent to this provider and model (for warnings)."""
        return f"{self.name} does not accept it"

    def logprobs_unavailable(self) -> str | None:
        """Why this provider and model return no token log-probabilities, or ``None``."""
        if "logprobs" in self.accepted_params():
            return None
        return self.why_not_sent("logprobs")

    def effective_params(self, params: dict[str, Any] | Any) -> dict[str, Any]:
        """The parameters this provider actually sends (the rest are dropped, see
        :meth:`param_warnings`)."""
        accepted = self.accepted_params()
        return {k: v for k, v in dict(params).items() if k in accepted and v is not None}

    def param_warnings(self, params: dict[str, Any] | Any) -> list[str]:
        """One sentence per parameter that is set but not sent (never dropped silently)."""
        accepted = self.accepted_params()
        return [f"{k} = {v!r} is not sent to {self.label}: {self.why_not_sent(k)}."
                for k, v in dict(params).items() if v is not None and k not in accepted]

    # --- keys --------------------------------------------------------------------------
    @property
    def needs_key(self) -> bool:
        """Whether an API key is required: only for the provider's own API (servers on
        this machine or elsewhere on the network, vLLM, Ollama, get ``not-needed``)."""
        return self.official and not is_local_url(self.endpoint)

    def api_key(self) -> str | None:
        """The key to use (constructor, then environment), or ``None``."""
        if self._api_key:
            return self._api_key
        return (os.environ.get(self.env_key) or None) if self._use_env_key else None

    def redact(self, text: str) -> str:
        """``text`` with the API key, and anything shaped like a key, replaced by ``***``."""
        key = self.api_key()
        if key and len(key) >= 4:
            text = text.replace(key, "***")
        return _KEY_SHAPED.sub("***", text)

    def check_ready(self) -> None:
        """Raise :class:`ProviderConfigError` if the SDK is missing or a key is needed, and
        :class:`~judges.endpoints.EndpointRefused` if the endpoint is not allowed."""
        if self.allowed_endpoints is not None:
            why = refusal(self.endpoint, self.allowed_endpoints)
            if why:
                raise EndpointRefused(why)
        try:
            __import__(self.sdk)
        except ImportError:
            raise ProviderConfigError(
                f"The {self.name!r} provider needs the {self.sdk!r} package, which is not "
                f"installed: {install_command('judges')}") from None
        if self.needs_key and not self.api_key():
            raise ProviderConfigError(
                f"No API key for {self.name}: set {self.env_key} in the environment or in "
                "Streamlit secrets, or enter it on the page.")

    # --- calls -------------------------------------------------------------------------
    def client(self) -> Any:
        """The SDK's async client for the running event loop (created on first use)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self.check_ready()
            self._client = self._make_client(self.api_key() or "not-needed")
            self._client_loop = loop
        return self._client

    def _http_client(self, sdk: Any) -> dict[str, Any]:
        """``http_client=`` for the SDK client: aiohttp when available (or asked for), its
        replies capped at ``BIAS_WORKBENCH_MAX_REPLY_KB`` (:mod:`judges.transport`)."""
        use = self.transport == "aiohttp" or (self.transport == "auto" and aiohttp_available())
        return {"http_client": capped_client(sdk.DefaultAioHttpClient if use
                                             else sdk.DefaultAsyncHttpxClient,
                                             allowed=self.allowed_endpoints)}

    @abstractmethod
    def _make_client(self, api_key: str) -> Any:
        """Create the SDK client with retries off (the runner retries)."""

    @abstractmethod
    async def complete(self, request: ChatRequest, *, timeout: float) -> Reply:
        """Make one call and normalise the reply.

        Raises
        ------
        Exception
            Whatever the SDK raises (classified by :meth:`classify_error`), or
            :class:`MalformedReplyError` for a body that is not a usable reply.
        """

    async def aclose(self) -> None:
        """Close the client of the running loop, if any."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def classify_error(self, exc: BaseException) -> ErrorInfo:
        """Transient or not, ``Retry-After``, and a secret-free message."""
        name = type(exc).__name__
        status = getattr(exc, "status_code", None)
        too_large = next((e for e in _chain(exc) if isinstance(e, ReplyTooLarge)), None)
        if too_large is not None:
            return ErrorInfo(False, None, self._message(f"reply too large: {too_large}"))
        refused = next((e for e in _chain(exc) if isinstance(e, RedirectRefused |
                                                             RequestRefused)), None)
        if refused is not None:
            return ErrorInfo(False, None, self._message(f"refused: {refused}"), setup=True)
        if isinstance(exc, MalformedReplyError | json.JSONDecodeError):
            return ErrorInfo(False, None, self._message(f"malformed response ({exc})"))
        if isinstance(status, int):
            response = getattr(exc, "response", None)
            retry_after = parse_retry_after(getattr(response, "headers", None))
            transient = status >= 500 or status in TRANSIENT_STATUSES
            detail = getattr(exc, "message", None) or str(exc)
            return ErrorInfo(transient, retry_after, self._message(f"{name} (HTTP {status}): "
                                                                   f"{detail}"),
                             setup=status in SETUP_STATUSES)
        if _connect_failure(exc):  # refused, unknown host, no route: a wrong base URL?
            return ErrorInfo(True, None, self._message(
                f"{name}: cannot connect ({_root(exc)}; is {self.endpoint} the right base "
                "URL?)"), setup=True)
        if isinstance(exc, TimeoutError | asyncio.TimeoutError) or name == "APITimeoutError":
            return ErrorInfo(True, None, "timeout" if name != "APITimeoutError"
                             else self._message(f"{name}: {exc}"))
        if name == "APIConnectionError" or isinstance(exc, ConnectionError):
            return ErrorInfo(True, None, self._message(f"{name}: {exc} (is {self.endpoint} "
                                                       "the right base URL?)"), setup=True)
        return ErrorInfo(False, None, self._message(f"{name}: {exc}"))

    def _message(self, text: str) -> str:
        text = " ".join(self.redact(str(text)).split()).replace("|", "/")
        return text if len(text) <= _MAX_ERROR_CHARS else text[:_MAX_ERROR_CHARS - 3] + "..."


class OpenAIChat(ChatProvider):
    """OpenAI Chat Completions (and OpenAI-compatible servers via ``base_url``)."""

    name = "openai"
    env_key = "OPENAI_API_KEY"
    env_base_url = "OPENAI_BASE_URL"
    default_endpoint = "https://api.openai.com/v1"
    sdk = "openai"
    supported_params = frozenset({"temperature", "max_tokens", "json_schema", "seed",
                                  "reasoning_effort", "logprobs"})
    #: Set when the server answered 400/422 to ``logprobs`` and then answered without it:
    #: later requests of this provider are sent without it (see :meth:`complete`).
    _logprobs_refused: str | None = None

    @property
    def reasoning(self) -> bool:
        return is_reasoning_model(self.model)

    def accepted_params(self) -> frozenset[str]:
        if self.reasoning:
            return self.supported_params - {"temperature", "logprobs"}
        return self.supported_params - {"reasoning_effort"}

    def why_not_sent(self, param: str) -> str:
        if param == "temperature":
            return ("reasoning models accept only their default temperature (the API answers "
                    "400 to any other)")
        if param == "reasoning_effort":
            return "only reasoning models (o-series, gpt-5) take a reasoning effort"
        if param == "logprobs":
            return ("reasoning models return no token log-probabilities (the API answers 400 "
                    "to logprobs); the sampled score is used")
        return super().why_not_sent(param)

    def _make_client(self, api_key: str) -> Any:
        import openai

        return openai.AsyncOpenAI(api_key=api_key, base_url=self.endpoint, max_retries=0,
                                  **self._http_client(openai))

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body of a Chat Completions request."""
        params = self.effective_params(request.params)
        body: dict[str, Any] = {"model": self.model, "messages": request.message_dicts()}
        body.update({k: params[k] for k in ("temperature", "seed", "reasoning_effort")
                     if k in params})
        if "max_tokens" in params:
            # OpenAI itself wants max_completion_tokens (reasoning models reject
            # max_tokens); compatible servers (Ollama, LM Studio, older llama.cpp) only know
            # max_tokens.
            body["max_completion_tokens" if self.official else "max_tokens"] = (
                params["max_tokens"])
        if "json_schema" in params:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "reply", "schema": params["json_schema"], "strict": True}}
        if params.get("logprobs"):
            body["logprobs"] = True
            body["top_logprobs"] = TOP_LOGPROBS
        return body

    async def _post(self, body: dict[str, Any], timeout: float) -> Any:
        return await self.client().post("/chat/completions", body=body, cast_to=object,
                                        options={"timeout": timeout})

    async def complete(self, request: ChatRequest, *, timeout: float) -> Reply:
        """One call. A request with ``logprobs`` that the server answers with 400 or 422 is
        sent again at once without it; when that succeeds, the reply carries the note
        (``Reply.logprobs_note``) and later calls of this provider leave ``logprobs`` out.
        If it fails too, its error is the call's error (the 400 was not about logprobs)."""
        body = self.body(request)
        note = None
        if "logprobs" in body and self._logprobs_refused is not None:
            body, note = _without_logprobs(body), self._logprobs_refused
        try:
            data = await self._post(body, timeout)
        except Exception as exc:
            if "logprobs" not in body or getattr(exc, "status_code", None) not in (400, 422):
                raise
            data = await self._post(_without_logprobs(body), timeout)
            note = self._logprobs_refused = (
                f"the server rejected logprobs ({self.classify_error(exc).message}); asked "
                "again without it")
        return openai_reply(data, logprobs="logprobs" in body, note=note)


def _without_logprobs(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("logprobs", "top_logprobs")}


def openai_reply(body: Any, *, logprobs: bool = True, note: str | None = None) -> Reply:
    """A Chat Completions body (a live reply, or a batch output line's ``response.body``) as
    a :class:`Reply`, with the first choice's token log-probabilities when ``logprobs``
    (they were asked for) and ``note`` as its ``logprobs_note``."""
    choices = body.get("choices") if isinstance(body, Mapping) else None
    if not choices or not isinstance(choices[0], Mapping):
        raise MalformedReplyError("no choices in the response")
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise MalformedReplyError("no message in the first choice")
    usage = body.get("usage") or {}
    content = message.get("content")
    return Reply(text=content if isinstance(content, str) else None,
                 input_tokens=int_or_zero(usage.get("prompt_tokens")),
                 output_tokens=int_or_zero(usage.get("completion_tokens")),
                 finish_reason=choices[0].get("finish_reason"),
                 refusal=message.get("refusal") or None, model=body.get("model"),
                 logprobs=read_openai_logprobs(choices[0]) if logprobs else None,
                 logprobs_note=note)


ANTHROPIC_STOPS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                    "refusal": "refusal"}


class AnthropicChat(ChatProvider):
    """Anthropic Messages API."""

    name = "anthropic"
    env_key = "ANTHROPIC_API_KEY"
    env_base_url = "ANTHROPIC_BASE_URL"
    default_endpoint = "https://api.anthropic.com"
    sdk = "anthropic"
    # No temperature: API version 2026-10-21 rejects it (the SDK 2.x has no such argument).
    supported_params = frozenset({"max_tokens", "json_schema"})

    def why_not_sent(self, param: str) -> str:
        return {"temperature": "Anthropic API version 2026-10-21 rejects it; the model's "
                               "default applies",
                "seed": "the Anthropic API has no seed",
                "reasoning_effort": "not supported by this provider here",
                "logprobs": "the Anthropic API returns no token log-probabilities; the "
                            "sampled score is used"}.get(
                    param, super().why_not_sent(param))
    #: Anthropic requires max_tokens; used when the request does not set it.
    default_max_tokens = 1024

    def _make_client(self, api_key: str) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(api_key=api_key, base_url=self.endpoint, max_retries=0,
                                        **self._http_client(anthropic))

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body of a Messages request (system messages joined into ``system``)."""
        params = self.effective_params(request.params)
        system = "\n\n".join(c for r, c in request.messages if r == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": r, "content": c} for r, c in request.messages if r != "system"],
            "max_tokens": params.get("max_tokens", self.default_max_tokens),
        }
        if system:
            body["system"] = system
        if "json_schema" in params:
            body["output_config"] = {"format": {"type": "json_schema",
                                                "schema": params["json_schema"]}}
        return body

    async def complete(self, request: ChatRequest, *, timeout: float) -> Reply:
        data = await self.client().post("/v1/messages", body=self.body(request), cast_to=object,
                                        options={"timeout": timeout})
        return anthropic_reply(data)


def anthropic_reply(message: Any) -> Reply:
    """A Messages body (a live reply, or a succeeded batch result's ``message`` as a dict) as
    a :class:`Reply`."""
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        raise MalformedReplyError("no content in the response")
    texts = [str(b.get("text", "")) for b in content
             if isinstance(b, Mapping) and b.get("type") == "text"]
    usage = message.get("usage") or {}
    stop = message.get("stop_reason")
    return Reply(text="".join(texts) if texts else None,
                 input_tokens=int_or_zero(usage.get("input_tokens")),
                 output_tokens=int_or_zero(usage.get("output_tokens")),
                 finish_reason=ANTHROPIC_STOPS.get(stop, stop), model=message.get("model"))


#: Provider classes by name; add yours with :func:`register_provider`.
PROVIDERS: dict[str, type[ChatProvider]] = {"openai": OpenAIChat, "anthropic": AnthropicChat}


def register_provider(cls: type[ChatProvider]) -> type[ChatProvider]:
    """Register a provider class under ``cls.name`` (usable as a decorator)."""
    PROVIDERS[cls.name] = cls
    return cls


def provider_class(name: str) -> type[ChatProvider]:
    """The registered provider class ``name``.

    Raises
    ------
    ProviderConfigError
        Unknown provider name.
    """
    try:
        return PROVIDERS[name]
    except KeyError:
        raise ProviderConfigError(f"Unknown chat provider {name!r}; choose one of "
                                  f"{', '.join(sorted(PROVIDERS))}.") from None


def make_provider(name: str, *, model: str, base_url: str | None = None,
                  api_key: str | None = None, transport: Transport = "auto") -> ChatProvider:
    """A provider by name (``openai`` or ``anthropic``).

    Raises
    ------
    ProviderConfigError
        Unknown provider name or empty model.
    """
    cls = provider_class(name)
    return cls(model, base_url=base_url, api_key=api_key, transport=transport)


def page_provider(name: str, *, model: str, base_url: str | None = None,
                  typed_key: str | None = None, server_key: str | None = None,
                  transport: Transport = "auto") -> ChatProvider:
    """A provider chosen by a visitor of a (possibly shared) server's pages.

    Requests may only go to the allow-list (:func:`judges.endpoints.allowed_endpoints`):
    another Base URL is refused by :meth:`ChatProvider.check_ready` before any
    connection. ``server_key`` (from the server's environment or secrets) is used only
    when Base URL is empty (or names the default endpoint) and no key was typed; a typed
    Base URL runs with ``typed_key`` or without a key. ``uses_server_key`` tells which.

    Raises
    ------
    ProviderConfigError
        Unknown provider name or empty model.
    """
    cls = provider_class(name)
    default = cls.operator_endpoint()
    url = (base_url or "").strip() or None
    if url is not None and same_endpoint(url, default):
        url = None
    key = typed_key or (None if url else server_key) or None
    provider = cls(model, base_url=url, api_key=key, transport=transport,
                   allowed_endpoints=allowed_endpoints(default), use_env_key=False)
    provider.uses_server_key = key is not None and not typed_key
    return provider
