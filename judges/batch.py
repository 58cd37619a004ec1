"""Provider batch APIs: large runs at half price that survive a closed app or a killed process.

:func:`batch_stream` is the batch counterpart of :func:`judges.runner.run_stream`: the same
requests in, the same :class:`~judges.request.Result` objects out, through the same cache
(``docs/judges_at_scale.md``):

1. requests whose reply is cached come back at once (no request, nothing paid now);
2. requests already waiting in a stored, uncollected batch are not sent again: that batch
   is polled instead (this is how a killed process or a closed page resumes);
3. the rest are submitted as new batches (OpenAI Batch API: a JSONL file uploaded with
   ``purpose=batch``, then ``POST /v1/batches``; Anthropic Message Batches). The batch id
   and every ``custom_id -> cache key`` pair are committed to the cache's SQLite file
   (tables ``batches`` and ``batch_items``) the moment the batch is created;
4. the batches are polled every ``poll_interval`` seconds; an ended batch's results are
   downloaded, each reply is normalised like a live reply and stored in the cache, so
   the callers' parsers see exactly what a live run would give them;
5. failed requests whose failure is transient (5xx, 429, expired) are re-submitted up to
   ``max_resubmits`` times; the others come back as ``error`` results with the reason;
6. if ``max_wait`` runs out (or ``cancel`` is set) the remaining requests come back
   ``cancelled`` with an error starting with :data:`PENDING_PREFIX`: the batch keeps
   running at the provider and the next run collects it.

``custom_id`` is the request's cache key (64 hex characters: valid for both APIs), so a
result is matched to its cache entry without any other state. Batch replies cost
:data:`BATCH_DISCOUNT` times the price table (both providers bill batches at half price).

The provider adapters are in :mod:`judges.batch_apis`, the record of submitted batches in
:mod:`judges.batch_store`; the names their callers use are re-exported here.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import pandas as pd

from judges.batch_apis import (
    BatchAPI,
    BatchConfig,
    BatchError,
    BatchStatus,
    ItemOutcome,
    batch_api,
)
from judges.batch_store import BATCH_COLUMNS, BatchStore, StoredBatch
from judges.cache import ReplyCache
from judges.context import RunContext
from judges.cost import PriceTable
from judges.judge import (
    JudgeConfig,
    JudgeProgress,
    JudgeRun,
    MetricOutcome,
    interpret,
    judge_stream,
    n_judgments,
    run_warnings,
    split_tag,
)
from judges.monitor import BatchMonitor
from judges.providers import ChatProvider
from judges.request import ChatRequest, Reply, Result
from judges.rubric import Rubric, load_rubrics
from judges.runner import (
    RunStats,
    request_key,
    run_stream,
    sleep_unless_cancelled,
)

#: Batch replies cost this share of the price table (OpenAI and Anthropic: 50 %).
BATCH_DISCOUNT = 0.5
#: The error of a result still waiting in a batch starts with this.
PENDING_PREFIX = "pending"

__all__ = [
    "BATCH_COLUMNS", "BATCH_DISCOUNT", "PENDING_PREFIX", "BatchAPI", "BatchConfig", "BatchError",
    "BatchMonitor", "BatchRun", "BatchStatus", "BatchStore", "ItemOutcome", "StoredBatch",
    "batch_api", "batch_stream", "cancel_batch", "collect", "is_pending",
    "judge_frame_batch_async", "refresh_batches", "stream_context",
]


async def collect(api: BatchAPI, store: BatchStore, cache: ReplyCache,
                  status: BatchStatus) -> dict[str, ItemOutcome]:
    """Download an ended batch's results into the cache and mark the batch collected.

    Returns
    -------
    dict
        ``cache key -> ItemOutcome`` for every stored item of the batch; an item without
        a result line gets an error outcome naming the batch's status (retryable only if
        the batch expired).
    """
    outcomes = {o.custom_id: o for o in await api.results(status.batch_id)}
    detail = f": {status.message}" if status.message else ""
    states: dict[str, tuple[str, str]] = {}
    by_key: dict[str, ItemOutcome] = {}
    for cid, key in store.items(status.batch_id).items():
        o = outcomes.get(cid) or ItemOutcome(
            cid, error=f"no result (batch {status.status}{detail})",
            retryable=status.status == "expired")
        if o.reply is not None:
            # The batch price travels with the cached reply (Reply.billed_share), so a later
            # live run that reuses it does not count it at the full price.
            o = replace(o, reply=replace(o.reply, billed_share=BATCH_DISCOUNT))
            cache.put(key, o.reply, provider=api.provider.name, model=api.provider.model)
            states[cid] = ("succeeded", "")
        else:
            states[cid] = ("failed", o.error or "")
        by_key[key] = o
    store.mark_collected(status.batch_id, states)
    return by_key


def _reusable(reply: Reply | None, reuse: Callable[[Reply], bool]) -> bool:
    return reply is not None and reuse(reply)


def is_pending(result: Result) -> bool:
    """Whether ``result`` is a request still waiting in a batch."""
    return result.status == "cancelled" and (result.error or "").startswith(PENDING_PREFIX)


def _chunks(items: list[tuple[str, dict[str, Any]]], config: BatchConfig
            ) -> Iterable[list[tuple[str, dict[str, Any]]]]:
    chunk: list[tuple[str, dict[str, Any]]] = []
    size = 0
    for cid, body in items:
        n = len(json.dumps(body, ensure_ascii=False).encode("utf-8")) + 200
        if chunk and (len(chunk) >= config.max_requests or size + n > config.max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append((cid, body))
        size += n
    if chunk:
        yield chunk


class BatchRun:
    """One run of :func:`batch_stream`, in named steps (the module docstring's list).

    :meth:`stream` yields the results: :meth:`prepare` (requests by cache key),
    :meth:`from_cache`, :meth:`submit` (new batches), :meth:`poll` (one look at every batch
    watched), :meth:`outcome` (a collected request), :meth:`resubmit` and :meth:`leftovers`
    (pending or never sent).
    """

    def __init__(self, requests: Iterable[ChatRequest], provider: ChatProvider, *,
                 cache: ReplyCache, config: BatchConfig | None = None,
                 prices: PriceTable | None = None, cancel: threading.Event | None = None,
                 stats: RunStats | None = None, monitor: BatchMonitor | None = None,
                 purpose: str = "judge", reuse: Callable[[Reply], bool] | None = None) -> None:
        self.requests, self.provider, self.cache = requests, provider, cache
        self.config = config or BatchConfig()
        self.prices, self.cancel, self.purpose, self.reuse = prices, cancel, purpose, reuse
        self.stats = stats if stats is not None else RunStats()
        self.monitor = monitor if monitor is not None else BatchMonitor()
        self.api = batch_api(provider, self.config)
        provider.check_ready()
        self.store = BatchStore(cache.path)
        self.by_key: dict[str, list[ChatRequest]] = {}
        self.open_keys: set[str] = set()  # waiting for a batch result
        self.where: dict[str, str] = {}  # cache key -> batch id
        self.tries: dict[str, int] = {}  # re-submissions so far
        self.watch: set[str] = set()  # batches not ended yet

    def cancelled(self) -> bool:
        """Whether ``cancel`` is set."""
        return self.cancel is not None and self.cancel.is_set()

    def cost(self, reply: Reply, batched: bool) -> float | None:
        """The cost of ``reply``: :data:`BATCH_DISCOUNT` of the price if it came from a batch."""
        if self.prices is None:
            return None
        full = self.prices.cost(self.provider.price_section, self.provider.model,
                                reply.input_tokens, reply.output_tokens)
        share = min(reply.billed_share, BATCH_DISCOUNT if batched else 1.0)
        return None if full is None else full * share

    def account(self, result: Result) -> Result:
        """Count ``result`` in the run's :class:`~judges.runner.RunStats`."""
        self.stats.count(result)
        return result

    def each(self, key: str, status: str, error: str) -> Iterator[Result]:
        """A result for every request of ``key`` (duplicates share it), counted."""
        for request in self.by_key[key]:
            yield self.account(Result(request, status, error=error))

    def prepare(self) -> set[str]:
        """Group the requests by cache key; the keys whose cached reply may be reused."""
        for request in self.requests:
            self.by_key.setdefault(request_key(self.provider, request), []).append(request)
        cached = self.cache.contains(self.by_key)
        if self.reuse is not None:
            refused = {k for k in cached if not _reusable(self.cache.get(k), self.reuse)}
            self.stats.reasked += len(refused)
            cached -= refused
        return cached

    def from_cache(self, cached: set[str]) -> Iterator[Result]:
        """Step 1: the cached replies (at the batch price if a batch paid for them)."""
        batched_before = self.store.succeeded_keys(cached)
        for key in [k for k in self.by_key if k in cached]:
            reply = self.cache.get(key)
            assert reply is not None
            for request in self.by_key[key]:
                yield self.account(Result(request, "ok", reply, cached=True,
                                          cost_usd=self.cost(reply, key in batched_before)))

    async def submit(self, keys: list[str]) -> None:
        """Step 3: put ``keys`` into new batches, recorded in the store at once, and watch them."""
        items = [(k, self.api.body(self.by_key[k][0])) for k in keys]
        for chunk in _chunks(items, self.config):
            status = await self.api.submit(chunk)
            self.store.record(status, self.provider, self.purpose,
                              [(cid, cid) for cid, _ in chunk])
            self.monitor.set_status(status)
            for cid, _ in chunk:
                self.where[cid] = status.batch_id
            self.watch.add(status.batch_id)

    def outcome(self, key: str, o: ItemOutcome, batch_id: str, again: list[str]
                ) -> Iterator[Result]:
        """Step 5: a collected request's results, or ``key`` appended to ``again``."""
        if o.reply is not None:
            self.open_keys.discard(key)
            self.monitor.collected += len(self.by_key[key])
            # Duplicates were sent (and billed) once: they share the reply free.
            for i, request in enumerate(self.by_key[key]):
                yield self.account(Result(request, "ok", o.reply, cached=i > 0,
                                          cost_usd=self.cost(o.reply, True)))
        elif o.retryable and self.tries.get(key, 0) < self.config.max_resubmits:
            self.tries[key] = self.tries.get(key, 0) + 1
            again.append(key)
        else:
            self.open_keys.discard(key)
            self.monitor.failed += len(self.by_key[key])
            yield from self.each(key, "error", f"batch {batch_id}: {o.error}")

    async def poll(self, again: list[str]) -> AsyncIterator[Result]:
        """Step 4: look at every batch watched once; collect the ended ones."""
        for batch_id in sorted(self.watch):
            status = await self.api.status(batch_id)
            self.store.update(status)
            self.monitor.set_status(status)
            if not status.ended:
                continue
            self.watch.discard(batch_id)
            for key, o in (await collect(self.api, self.store, self.cache, status)).items():
                if key in self.open_keys:  # else another run's request: cached for later
                    for result in self.outcome(key, o, batch_id, again):
                        yield result

    async def resubmit(self, again: list[str]) -> AsyncIterator[Result]:
        """Step 5: submit the transient failures again, unless the run is cancelled."""
        if again and not self.cancelled():
            await self.submit(again)
            self.monitor.resubmitted += len(again)
            return
        self.open_keys.difference_update(again)
        for key in again:
            for result in self.each(key, "error",
                                    "failed in a batch; not re-submitted: run cancelled"):
                yield result

    async def wait(self, deadline: float | None) -> bool:
        """Sleep until the next poll; ``False`` when the run should stop polling."""
        if not self.watch or self.cancelled():
            return False
        if deadline is not None and time.monotonic() >= deadline:
            return False
        left = self.config.poll_interval if deadline is None else min(
            self.config.poll_interval, max(deadline - time.monotonic(), 0))
        await sleep_unless_cancelled(left, self.cancel)
        return True

    def leftovers(self, waiting: list[str]) -> Iterator[Result]:
        """Step 6: the requests still open, pending in a batch or never sent."""
        for key in [k for k in waiting if k in self.open_keys]:
            if key not in self.where:  # cancelled before it was submitted
                yield from self.each(key, "cancelled", "cancelled before it was sent")
                continue
            self.monitor.pending += len(self.by_key[key])
            state = self.monitor.statuses.get(self.where.get(key, ""))
            shown = f" ({state.status})" if state is not None else ""
            yield from self.each(key, "cancelled",
                                 f"{PENDING_PREFIX}: waiting in batch "
                                 f"{self.where.get(key, '?')}{shown}; run again to collect it")

    async def stream(self) -> AsyncIterator[Result]:
        """Yield every request's result (the steps in order); close the store."""
        try:
            cached = self.prepare()
            for result in self.from_cache(cached):
                yield result
            waiting = [k for k in self.by_key if k not in cached]
            self.open_keys = set(waiting)
            self.where = self.store.pending_for(waiting)
            self.monitor.resumed += len(self.where)
            self.watch = set(self.where.values())
            fresh = [k for k in waiting if k not in self.where]
            if fresh and not self.cancelled():
                await self.submit(fresh)
                self.monitor.submitted += len(fresh)
            deadline = (None if self.config.max_wait is None
                        else time.monotonic() + self.config.max_wait)
            while self.watch:
                again: list[str] = []
                async for result in self.poll(again):
                    yield result
                async for result in self.resubmit(again):
                    yield result
                if not await self.wait(deadline):
                    break
            for result in self.leftovers(waiting):
                yield result
        finally:
            self.stats.http_attempts += self.api.calls
            self.store.close()


async def batch_stream(
    requests: Iterable[ChatRequest],
    provider: ChatProvider,
    *,
    cache: ReplyCache,
    config: BatchConfig | None = None,
    prices: PriceTable | None = None,
    cancel: threading.Event | None = None,
    stats: RunStats | None = None,
    monitor: BatchMonitor | None = None,
    purpose: str = "judge",
    reuse: Callable[[Reply], bool] | None = None,
) -> AsyncIterator[Result]:
    """Run ``requests`` through the provider's batch API; yield each :class:`Result` when known.

    Parameters
    ----------
    requests
        The chat requests (the same ones a live run would send).
    provider
        ``openai`` or ``anthropic`` (:func:`batch_api`).
    cache
        Required: batch results are stored there, and the batch records live in its file.
    config
        Poll interval, waiting time, re-submissions, batch size.
    prices
        Price table; replies that came from a batch cost :data:`BATCH_DISCOUNT` of it.
    cancel
        Set it to stop waiting (the batches keep running; a later run collects them).
    stats, monitor
        Counters updated live (:class:`~judges.runner.RunStats`, :class:`BatchMonitor`).
    purpose
        A label stored with the batch (``judge``, ``answer``, ``categorise``).
    reuse
        ``reply -> bool``: whether a cached reply may be reused (as for
        :func:`judges.runner.run_stream`); a refused one is submitted again.

    Yields
    ------
    Result
        ``ok`` (cached, or collected from a batch), ``error`` (failed in the batch, the
        reason in ``error``) or ``cancelled`` with an error starting with
        :data:`PENDING_PREFIX` (still waiting in a batch).
    """
    async for result in BatchRun(requests, provider, cache=cache, config=config, prices=prices,
                                 cancel=cancel, stats=stats, monitor=monitor, purpose=purpose,
                                 reuse=reuse).stream():
        yield result


async def stream_context(context: RunContext, requests: Iterable[ChatRequest],
                         provider: ChatProvider, *, purpose: str,
                         reuse: Callable[[Reply], bool] | None = None) -> AsyncIterator[Result]:
    """The results of ``requests`` run as ``context`` says: live
    (:func:`judges.runner.run_stream`) without ``context.batch``, else through the batch
    API (:func:`batch_stream`), counted in ``context.stats`` (and ``context.monitor``).

    Raises
    ------
    BatchError
        Batch mode without a cache.
    """
    c = context
    if c.batch is None:
        async for result in run_stream(requests, provider, cache=c.cache, config=c.run_config,
                                       prices=c.prices, cancel=c.cancel, stats=c.stats,
                                       reuse=reuse):
            yield result
        return
    if c.cache is None:
        raise BatchError("Batch mode needs the reply cache: batch results and batch ids are "
                         "kept there (leave out --no-cache).")
    async for result in batch_stream(requests, provider, cache=c.cache, config=c.batch,
                                     prices=c.prices, cancel=c.cancel, stats=c.stats,
                                     monitor=c.monitor, purpose=purpose, reuse=reuse):
        yield result


# --- judging in batch mode -----------------------------------------------------------------
async def judge_frame_batch_async(
    frame: pd.DataFrame,
    provider: ChatProvider,
    *,
    rubrics: Mapping[str, Rubric] | None = None,
    config: JudgeConfig | None = None,
    context: RunContext | None = None,
    **run: Any,
) -> JudgeRun:
    """Judge a validated four-stage table through the batch API.

    The same requests, parser and judged file as :func:`judges.judge.judge_frame_async`;
    judgments still waiting in a batch are unscored with a reason starting with
    ``not judged yet`` (run again to collect them).

    Parameters
    ----------
    context
        The run context (:class:`judges.context.RunContext`; it needs ``cache``; its
        ``batch`` defaults to :class:`BatchConfig`, its ``progress`` to a
        :class:`~judges.judge.JudgeProgress`); ``**run`` are its fields as keywords
        (``cache``, ``batch``, ``prices``, ``cancel``, ``progress``, ``stats``, ``monitor``).

    Returns
    -------
    JudgeRun
        ``cancelled`` is true when judgments are still pending or ``cancel`` was set.
    """
    rubrics = rubrics or load_rubrics()
    config = config or JudgeConfig()
    ctx = RunContext.of(context, **run).priced()
    ctx = replace(ctx, batch=ctx.batch or BatchConfig(), progress=ctx.progress if ctx.progress
                  is not None else JudgeProgress(total=n_judgments(frame, config)))
    judged, outcomes = await judge_stream(
        frame, provider, lambda requests: stream_context(
            ctx, requests, provider, purpose="judge", reuse=config.reuse()),
        rubrics=rubrics, config=config, progress=ctx.progress,
        label=f"{provider.label} (batch)", outcome=_batch_outcome)
    return JudgeRun(judged, ctx.progress, ctx.stats,
                    cancelled=ctx.monitor.pending > 0 or ctx.cancelled,
                    warnings=run_warnings(provider, config, outcomes))


def _batch_outcome(result: Result) -> MetricOutcome:
    """A batch result as a judgment; one still waiting in a batch is unscored, ``not judged
    yet``."""
    if not is_pending(result):
        return interpret(result)
    position, metric, sample, order = split_tag(result.request.tag)
    return MetricOutcome(position, metric, None, "", f"not judged yet: {result.error}",
                         sample=sample, order=order)


# --- batches outside a run (the page's batch status section, the CLI) ------------------------
async def refresh_batches(store: BatchStore, cache: ReplyCache,
                          provider_for: Callable[[StoredBatch], ChatProvider], *,
                          config: BatchConfig | None = None) -> list[BatchStatus]:
    """Look at every open stored batch once; collect the ended ones into the cache.

    Collected replies are then served from the cache to the next run (judge, answers or
    categories) of the same requests, which makes no new request for them.

    Parameters
    ----------
    provider_for
        Builds the provider of a stored batch (its ``api``, ``model`` and ``endpoint``).
    """
    statuses = []
    for stored in store.batches(open_only=True):
        provider = provider_for(stored)
        api = batch_api(provider, config)
        try:
            status = await api.status(stored.batch_id)
            store.update(status)
            statuses.append(status)
            if status.ended:
                await collect(api, store, cache, status)
        finally:
            await provider.aclose()
    return statuses


async def cancel_batch(store: BatchStore, provider: ChatProvider, batch_id: str,
                       config: BatchConfig | None = None) -> BatchStatus:
    """Ask the provider to cancel a stored batch (collect it afterwards as usual)."""
    try:
        status = await batch_api(provider, config).cancel(batch_id)
    finally:
        await provider.aclose()
    store.update(status)
    return status
