"""The two provider batch APIs behind one small interface (used by :mod:`judges.batch`).

- OpenAI Batch API: the requests as a JSONL file uploaded with ``purpose=batch``
  (``POST /v1/files``), ``POST /v1/batches``, ``GET /v1/batches/{id}``, then the output
  and error files (``GET /v1/files/{id}/content``);
- Anthropic Message Batches: ``POST /v1/messages/batches`` with every request,
  ``GET /v1/messages/batches/{id}``, then the streamed JSONL results.

Both are called through the official SDK clients of the providers
(:meth:`judges.providers.ChatProvider.client`), with the runner's retry rules for
transient errors and ``Retry-After``. Each batched request body is exactly what the live
provider sends, and each result is normalised into the same
:class:`~judges.request.Reply` as a live reply.
"""

from __future__ import annotations

import asyncio
import json
import random
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judges.errors import JudgesError, ProviderConfigError
from judges.providers import (
    TRANSIENT_STATUSES,
    ChatProvider,
    MalformedReplyError,
    anthropic_reply,
    openai_reply,
)
from judges.request import ChatRequest, Reply
from judges.runner import RunConfig

__all__ = [
    "AnthropicBatchAPI", "BATCH_APIS", "BatchAPI", "BatchConfig", "BatchError", "BatchStatus",
    "ItemOutcome", "OPENAI_ENDPOINT", "OpenAIBatchAPI", "anthropic_reply", "batch_api",
    "openai_reply",
]


#: The endpoint every OpenAI batch line targets.
OPENAI_ENDPOINT = "/v1/chat/completions"
_OPENAI_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
_ANTHROPIC_TRANSIENT = frozenset({"api_error", "overloaded_error", "rate_limit_error",
                                  "timeout_error", "gateway_timeout_error"})

class BatchError(JudgesError):
    """A batch API call failed for good (unsupported endpoint, rejected batch, no key)."""


@dataclass(frozen=True)
class BatchConfig:
    """How batches are submitted and watched (none of this enters the cache key).

    Attributes
    ----------
    poll_interval
        Seconds between two looks at the open batches.
    max_wait
        Seconds to wait for results before returning what is known (the rest comes back
        pending); ``None`` waits until every batch has ended; ``0`` submits and returns.
    max_resubmits
        How often a request whose failure is transient is put into a new batch.
    max_requests, max_bytes
        Split larger submissions into several batches (OpenAI allows 50,000 requests and
        200 MB per batch, Anthropic 100,000 requests and 256 MB).
    timeout, max_retries, backoff_base, backoff_max
        Per HTTP call of the batch API (upload, create, retrieve, download), which are
        retried like chat calls (transient errors, ``Retry-After``).
    """

    poll_interval: float = 30.0
    max_wait: float | None = None
    max_resubmits: int = 1
    max_requests: int = 10_000
    max_bytes: int = 100_000_000
    timeout: float = 120.0
    max_retries: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 60.0

    def __post_init__(self) -> None:
        if self.poll_interval <= 0:
            raise ValueError(f"poll_interval must be positive, got {self.poll_interval}.")
        if self.max_wait is not None and self.max_wait < 0:
            raise ValueError(f"max_wait cannot be negative, got {self.max_wait}.")
        if self.max_requests < 1 or self.max_bytes < 1:
            raise ValueError("max_requests and max_bytes must be positive.")


@dataclass(frozen=True)
class BatchStatus:
    """A batch as the provider describes it, normalised.

    Attributes
    ----------
    batch_id, api
        The provider's id and ``openai`` / ``anthropic``.
    status
        The provider's word (OpenAI ``validating`` ... ``completed``, ``failed``,
        ``expired``, ``cancelled``; Anthropic ``in_progress``, ``canceling``, ``ended``).
    ended
        No more change will come: results can be downloaded.
    total, succeeded, failed
        Request counts (Anthropic reports outcomes only once the batch has ended).
    message
        Why the whole batch failed, if it did.
    """

    batch_id: str
    api: str
    status: str
    ended: bool
    total: int = 0
    succeeded: int = 0
    failed: int = 0
    message: str = ""


@dataclass(frozen=True)
class ItemOutcome:
    """One request's result inside an ended batch: a reply, or an error."""

    custom_id: str
    reply: Reply | None = None
    error: str | None = None
    retryable: bool = False


# --- the two APIs ---------------------------------------------------------------------------
class BatchAPI(ABC):
    """One provider's batch endpoints, called through its official SDK client."""

    api: str = ""

    def __init__(self, provider: ChatProvider, config: BatchConfig | None = None):
        self.provider = provider
        self.config = config or BatchConfig()
        self.calls = 0

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The request body: exactly what the live provider sends
        (:meth:`judges.providers.OpenAIChat.body`, ``AnthropicChat.body``)."""
        return self.provider.body(request)

    @abstractmethod
    async def _submit(self, items: Sequence[tuple[str, dict[str, Any]]]) -> BatchStatus: ...

    @abstractmethod
    async def _status(self, batch_id: str) -> BatchStatus: ...

    @abstractmethod
    async def _results(self, batch_id: str) -> list[ItemOutcome]: ...

    @abstractmethod
    async def _cancel(self, batch_id: str) -> BatchStatus: ...

    async def submit(self, items: Sequence[tuple[str, dict[str, Any]]]) -> BatchStatus:
        """Create a batch of ``(custom_id, body)`` items."""
        return await self._retrying(self._submit, items)

    async def status(self, batch_id: str) -> BatchStatus:
        """The batch's current status."""
        return await self._retrying(self._status, batch_id)

    async def results(self, batch_id: str) -> list[ItemOutcome]:
        """Every request's outcome of an ended batch."""
        return await self._retrying(self._results, batch_id)

    async def cancel(self, batch_id: str) -> BatchStatus:
        """Ask the provider to stop the batch (finished requests are still billed)."""
        return await self._retrying(self._cancel, batch_id)

    async def _retrying(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        retry = RunConfig(timeout=self.config.timeout, max_retries=self.config.max_retries,
                          backoff_base=self.config.backoff_base,
                          backoff_max=self.config.backoff_max)
        rng = random.Random()
        attempt = 0
        while True:
            attempt += 1
            self.calls += 1
            try:
                return await fn(*args)
            except (asyncio.CancelledError, BatchError):
                raise
            except Exception as exc:  # noqa: BLE001 - classified like chat errors
                info = self.provider.classify_error(exc)
            if not info.transient or attempt > retry.max_retries:
                raise BatchError(f"{self.api} batch API at {self.provider.endpoint}: "
                                 f"{info.message}") from None
            delay = (min(info.retry_after, retry.retry_after_max) if info.retry_after is not None
                     else retry.backoff(attempt - 1, rng))
            await asyncio.sleep(delay)


class OpenAIBatchAPI(BatchAPI):
    """OpenAI Batch API: upload a JSONL file, create the batch, poll, download the files."""

    api = "openai"

    async def _submit(self, items: Sequence[tuple[str, dict[str, Any]]]) -> BatchStatus:
        client = self.provider.client()
        lines = "".join(json.dumps({"custom_id": cid, "method": "POST", "url": OPENAI_ENDPOINT,
                                    "body": body}, ensure_ascii=False) + "\n"
                        for cid, body in items)
        uploaded = await client.files.create(
            file=("bias-workbench-batch.jsonl", lines.encode("utf-8"), "application/jsonl"),
            purpose="batch", timeout=self.config.timeout)
        batch = await client.batches.create(
            input_file_id=uploaded.id, endpoint=OPENAI_ENDPOINT, completion_window="24h",
            metadata={"source": "bias-workbench"}, timeout=self.config.timeout)
        return self._normalise(batch)

    def _normalise(self, batch: Any) -> BatchStatus:
        counts = batch.request_counts
        message = ""
        if batch.errors is not None and batch.errors.data:
            message = "; ".join(str(e.message or e.code) for e in batch.errors.data)[:500]
        return BatchStatus(batch.id, self.api, batch.status, batch.status in _OPENAI_ENDED,
                           total=int(getattr(counts, "total", 0) or 0),
                           succeeded=int(getattr(counts, "completed", 0) or 0),
                           failed=int(getattr(counts, "failed", 0) or 0), message=message)

    async def _status(self, batch_id: str) -> BatchStatus:
        batch = await self.provider.client().batches.retrieve(batch_id,
                                                              timeout=self.config.timeout)
        return self._normalise(batch)

    async def _results(self, batch_id: str) -> list[ItemOutcome]:
        client = self.provider.client()
        batch = await client.batches.retrieve(batch_id, timeout=self.config.timeout)
        outcomes = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await client.files.content(file_id, timeout=self.config.timeout)
            for line in content.text.splitlines():
                if line.strip():
                    outcomes.append(self._outcome(json.loads(line)))
        return outcomes

    def _outcome(self, line: Mapping[str, Any]) -> ItemOutcome:
        cid = str(line.get("custom_id"))
        response = line.get("response") or None
        if response is not None and response.get("status_code") == 200:
            try:
                return ItemOutcome(cid, reply=openai_reply(response.get("body") or {}))
            except MalformedReplyError as exc:
                return ItemOutcome(cid, error=f"malformed response ({exc})")
        if response is not None:
            status = int(response.get("status_code") or 0)
            error = (response.get("body") or {}).get("error") or {}
            message = error.get("message") if isinstance(error, Mapping) else str(error)
            return ItemOutcome(cid, error=f"HTTP {status}: {message or 'error'}",
                               retryable=status >= 500 or status in TRANSIENT_STATUSES)
        error = line.get("error") or {}
        code = str(error.get("code") or "error")
        return ItemOutcome(cid, error=f"{code}: {error.get('message') or ''}".strip(": "),
                           retryable=code == "batch_expired")

    async def _cancel(self, batch_id: str) -> BatchStatus:
        batch = await self.provider.client().batches.cancel(batch_id,
                                                            timeout=self.config.timeout)
        return self._normalise(batch)


class AnthropicBatchAPI(BatchAPI):
    """Anthropic Message Batches: one create call with every request, poll, stream results."""

    api = "anthropic"

    def _normalise(self, batch: Any) -> BatchStatus:
        c = batch.request_counts
        failed = int(c.errored) + int(c.canceled) + int(c.expired)
        total = failed + int(c.succeeded) + int(c.processing)
        return BatchStatus(batch.id, self.api, batch.processing_status,
                           batch.processing_status == "ended", total=total,
                           succeeded=int(c.succeeded), failed=failed)

    async def _submit(self, items: Sequence[tuple[str, dict[str, Any]]]) -> BatchStatus:
        batch = await self.provider.client().messages.batches.create(
            requests=[{"custom_id": cid, "params": body} for cid, body in items],
            timeout=self.config.timeout)
        return self._normalise(batch)

    async def _status(self, batch_id: str) -> BatchStatus:
        batch = await self.provider.client().messages.batches.retrieve(
            batch_id, timeout=self.config.timeout)
        return self._normalise(batch)

    async def _results(self, batch_id: str) -> list[ItemOutcome]:
        decoder = await self.provider.client().messages.batches.results(
            batch_id, timeout=self.config.timeout)
        outcomes = []
        async for item in decoder:
            result = item.result
            kind = getattr(result, "type", "")
            if kind == "succeeded":
                try:
                    outcomes.append(ItemOutcome(item.custom_id,
                                                reply=anthropic_reply(result.message.to_dict())))
                except MalformedReplyError as exc:
                    outcomes.append(ItemOutcome(item.custom_id, error=f"malformed ({exc})"))
            elif kind == "errored":
                error = getattr(getattr(result, "error", None), "error", None)
                etype = str(getattr(error, "type", "error"))
                outcomes.append(ItemOutcome(
                    item.custom_id, error=f"{etype}: {getattr(error, 'message', '')}",
                    retryable=etype in _ANTHROPIC_TRANSIENT))
            else:  # expired or canceled
                outcomes.append(ItemOutcome(item.custom_id, error=f"request {kind}",
                                            retryable=kind == "expired"))
        return outcomes

    async def _cancel(self, batch_id: str) -> BatchStatus:
        batch = await self.provider.client().messages.batches.cancel(
            batch_id, timeout=self.config.timeout)
        return self._normalise(batch)


BATCH_APIS: dict[str, type[BatchAPI]] = {"openai": OpenAIBatchAPI, "anthropic": AnthropicBatchAPI}


def batch_api(provider: ChatProvider, config: BatchConfig | None = None) -> BatchAPI:
    """The batch API of ``provider`` (``openai`` or ``anthropic``).

    Raises
    ------
    ProviderConfigError
        The provider has no batch API.
    """
    try:
        cls = BATCH_APIS[provider.name]
    except KeyError:
        raise ProviderConfigError(f"The {provider.name!r} provider has no batch API; batch "
                                  f"mode works with {', '.join(sorted(BATCH_APIS))}.") from None
    return cls(provider, config)
