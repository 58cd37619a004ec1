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
:mod:`judges.batch_store`; both are re-exported here.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from judges.batch_apis import (
    BATCH_APIS,
    OPENAI_ENDPOINT,
    AnthropicBatchAPI,
    BatchAPI,
    BatchConfig,
    BatchError,
    BatchStatus,
    ItemOutcome,
    OpenAIBatchAPI,
    anthropic_reply,
    batch_api,
    openai_reply,
)
from judges.batch_store import BATCH_COLUMNS, BatchStore, StoredBatch
from judges.cache import ReplyCache
from judges.cost import PriceTable
from judges.fourstage import empty_texts
from judges.judge import (
    JudgeConfig,
    JudgeProgress,
    JudgeRun,
    MetricOutcome,
    assemble_judged,
    interpret,
    judge_requests,
    n_judgments,
    no_answer_outcomes,
    run_warnings,
    split_tag,
)
from judges.providers import ChatProvider
from judges.request import ChatRequest, Reply, Result
from judges.rubric import Rubric, load_rubrics
from judges.runner import RunConfig, RunStats, request_key

#: Batch replies cost this share of the price table (OpenAI and Anthropic: 50 %).
BATCH_DISCOUNT = 0.5
#: The error of a result still waiting in a batch starts with this.
PENDING_PREFIX = "pending"

__all__ = [
    "BATCH_APIS", "BATCH_COLUMNS", "BATCH_DISCOUNT", "OPENAI_ENDPOINT", "PENDING_PREFIX",
    "AnthropicBatchAPI", "BatchAPI", "BatchConfig", "BatchError", "BatchMonitor",
    "BatchStatus", "BatchStore", "ItemOutcome", "OpenAIBatchAPI", "StoredBatch",
    "anthropic_reply", "batch_api", "batch_stream", "cancel_batch", "collect", "is_pending",
    "judge_frame_batch_async", "openai_reply", "refresh_batches", "stream_results",
]


# --- watching a run -------------------------------------------------------------------------
@dataclass
class BatchMonitor:
    """Live view of a batch run (read it from another thread for a status display).

    Attributes
    ----------
    statuses
        The latest :class:`BatchStatus` of every batch the run submitted or watches.
    submitted, resubmitted
        Requests put into new batches (first time / again after a transient failure).
    resumed
        Requests found waiting in batches of an earlier run (not sent again).
    collected, failed, pending
        Requests whose batch result arrived, that failed for good, still waiting.
    """

    statuses: dict[str, BatchStatus] = field(default_factory=dict)
    submitted: int = 0
    resubmitted: int = 0
    resumed: int = 0
    collected: int = 0
    failed: int = 0
    pending: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def set_status(self, status: BatchStatus) -> None:
        """Record a batch's latest status."""
        with self._lock:
            self.statuses[status.batch_id] = status

    def snapshot(self) -> BatchMonitor:
        """A consistent copy."""
        with self._lock:
            return replace(self, statuses=dict(self.statuses), _lock=threading.Lock())

    def summary(self) -> str:
        """One line for a progress display."""
        states = ", ".join(f"{s.batch_id}: {s.status} ({s.succeeded + s.failed}/{s.total})"
                           for s in self.statuses.values()) or "no batch"
        return (f"batches {states}; {self.submitted:,} submitted, {self.resumed:,} resumed, "
                f"{self.collected:,} collected, {self.failed:,} failed, "
                f"{self.pending:,} pending")


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


async def _sleep(seconds: float, cancel: threading.Event | None) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (cancel is not None and cancel.is_set()):
        await asyncio.sleep(min(0.05, max(end - time.monotonic(), 0)))


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
    config = config or BatchConfig()
    stats = stats if stats is not None else RunStats()
    monitor = monitor if monitor is not None else BatchMonitor()
    api = batch_api(provider, config)
    provider.check_ready()
    store = BatchStore(cache.path)
    section, model = provider.price_section, provider.model

    def cost(reply: Reply, batched: bool) -> float | None:
        if prices is None:
            return None
        full = prices.cost(section, model, reply.input_tokens, reply.output_tokens)
        share = min(reply.billed_share, BATCH_DISCOUNT if batched else 1.0)
        return None if full is None else full * share

    def account(result: Result) -> Result:
        stats.done += 1
        if result.status == "ok" and result.reply is not None:
            stats.ok += 1
            if result.cached:
                stats.cache_hits += 1
            else:
                stats.input_tokens += result.reply.input_tokens
                stats.output_tokens += result.reply.output_tokens
                if result.cost_usd is None:
                    stats.unpriced += 1
                else:
                    stats.cost_usd += result.cost_usd
        elif result.status == "cancelled":
            stats.cancelled += 1
        else:
            stats.errors += 1
        return result

    by_key: dict[str, list[ChatRequest]] = {}
    for request in requests:
        by_key.setdefault(request_key(provider, request), []).append(request)
    try:
        cached = cache.contains(by_key)
        if reuse is not None:
            refused = {k for k in cached if not _reusable(cache.get(k), reuse)}
            stats.reasked += len(refused)
            cached -= refused
        batched_before = store.succeeded_keys(cached)
        for key in [k for k in by_key if k in cached]:
            reply = cache.get(key)
            assert reply is not None
            for request in by_key[key]:
                yield account(Result(request, "ok", reply, cached=True,
                                     cost_usd=cost(reply, key in batched_before)))
        waiting = [k for k in by_key if k not in cached]
        open_keys = set(waiting)
        where = store.pending_for(waiting)
        monitor.resumed += len(where)
        tries: dict[str, int] = {}

        async def submit(keys: list[str]) -> set[str]:
            items = [(k, api.body(by_key[k][0])) for k in keys]
            ids = set()
            for chunk in _chunks(items, config):
                status = await api.submit(chunk)
                store.record(status, provider, purpose, [(cid, cid) for cid, _ in chunk])
                monitor.set_status(status)
                for cid, _ in chunk:
                    where[cid] = status.batch_id
                ids.add(status.batch_id)
            return ids

        watch = set(where.values())
        fresh = [k for k in waiting if k not in where]
        if fresh and not (cancel is not None and cancel.is_set()):
            watch |= await submit(fresh)
            monitor.submitted += len(fresh)
        deadline = None if config.max_wait is None else time.monotonic() + config.max_wait
        while watch:
            again: list[str] = []
            for batch_id in sorted(watch):
                status = await api.status(batch_id)
                store.update(status)
                monitor.set_status(status)
                if not status.ended:
                    continue
                watch.discard(batch_id)
                for key, o in (await collect(api, store, cache, status)).items():
                    if key not in open_keys:
                        continue  # another run's request: cached for later
                    if o.reply is not None:
                        open_keys.discard(key)
                        monitor.collected += len(by_key[key])
                        # Duplicates were sent (and billed) once: they share the reply free.
                        for i, request in enumerate(by_key[key]):
                            yield account(Result(request, "ok", o.reply, cached=i > 0,
                                                 cost_usd=cost(o.reply, True)))
                    elif o.retryable and tries.get(key, 0) < config.max_resubmits:
                        tries[key] = tries.get(key, 0) + 1
                        again.append(key)
                    else:
                        open_keys.discard(key)
                        monitor.failed += len(by_key[key])
                        error = f"batch {batch_id}: {o.error}"
                        for request in by_key[key]:
                            yield account(Result(request, "error", error=error))
            if again and not (cancel is not None and cancel.is_set()):
                watch |= await submit(again)
                monitor.resubmitted += len(again)
            elif again:
                open_keys.difference_update(again)
                for key in again:
                    for request in by_key[key]:
                        yield account(Result(request, "error", error="failed in a batch; "
                                             "not re-submitted: run cancelled"))
            if not watch or (cancel is not None and cancel.is_set()):
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            left = config.poll_interval if deadline is None else min(
                config.poll_interval, max(deadline - time.monotonic(), 0))
            await _sleep(left, cancel)
        for key in [k for k in waiting if k in open_keys]:
            if key not in where:  # cancelled before it was submitted
                for request in by_key[key]:
                    yield account(Result(request, "cancelled", error="cancelled before it "
                                                                     "was sent"))
                continue
            monitor.pending += len(by_key[key])
            state = monitor.statuses.get(where.get(key, ""))
            shown = f" ({state.status})" if state is not None else ""
            error = (f"{PENDING_PREFIX}: waiting in batch {where.get(key, '?')}{shown}; "
                     "run again to collect it")
            for request in by_key[key]:
                yield account(Result(request, "cancelled", error=error))
    finally:
        stats.http_attempts += api.calls
        store.close()


async def stream_results(
    requests: Iterable[ChatRequest],
    provider: ChatProvider,
    *,
    batch: BatchConfig | None = None,
    cache: ReplyCache | None = None,
    run_config: RunConfig | None = None,
    prices: PriceTable | None = None,
    cancel: threading.Event | None = None,
    stats: RunStats | None = None,
    monitor: BatchMonitor | None = None,
    purpose: str = "judge",
) -> AsyncIterator[Result]:
    """Live (:func:`judges.runner.run_stream`) or batch (:func:`batch_stream`) results.

    ``batch=None`` runs live with ``run_config``; a :class:`BatchConfig` uses the batch API
    (which needs ``cache``).
    """
    from judges.runner import run_stream

    if batch is None:
        async for result in run_stream(requests, provider, cache=cache, config=run_config,
                                       prices=prices, cancel=cancel, stats=stats):
            yield result
        return
    if cache is None:
        raise BatchError("Batch mode needs the reply cache: batch results and batch ids are "
                         "kept there (leave out --no-cache).")
    async for result in batch_stream(requests, provider, cache=cache, config=batch,
                                     prices=prices, cancel=cancel, stats=stats,
                                     monitor=monitor, purpose=purpose):
        yield result


# --- judging in batch mode -----------------------------------------------------------------
async def judge_frame_batch_async(
    frame: pd.DataFrame,
    provider: ChatProvider,
    *,
    cache: ReplyCache,
    batch: BatchConfig | None = None,
    rubrics: Mapping[str, Rubric] | None = None,
    config: JudgeConfig | None = None,
    prices: PriceTable | None = None,
    cancel: threading.Event | None = None,
    progress: JudgeProgress | None = None,
    stats: RunStats | None = None,
    monitor: BatchMonitor | None = None,
) -> JudgeRun:
    """Judge a validated four-stage table through the batch API.

    The same requests, parser and judged file as :func:`judges.judge.judge_frame_async`;
    judgments still waiting in a batch are unscored with a reason starting with
    ``not judged yet`` (run again to collect them).

    Returns
    -------
    JudgeRun
        ``cancelled`` is true when judgments are still pending or ``cancel`` was set.
    """
    rubrics = rubrics or load_rubrics()
    config = config or JudgeConfig()
    prices = prices if prices is not None else PriceTable.load()
    progress = progress if progress is not None else JudgeProgress(
        total=n_judgments(frame, config))
    stats = stats if stats is not None else RunStats()
    monitor = monitor if monitor is not None else BatchMonitor()
    empty = empty_texts(frame)
    outcomes: list[MetricOutcome] = no_answer_outcomes(frame, empty, config)
    for outcome in outcomes:
        progress.add(outcome)
    try:
        async for result in batch_stream(
                judge_requests(frame, rubrics=rubrics, config=config, provider=provider,
                               skip=empty), provider, cache=cache,
                config=batch, prices=prices, cancel=cancel, stats=stats, monitor=monitor,
                purpose="judge", reuse=config.reuse()):
            if is_pending(result):
                position, metric, sample, order = split_tag(result.request.tag)
                outcome = MetricOutcome(position, metric, None, "",
                                        f"not judged yet: {result.error}", sample=sample,
                                        order=order)
            else:
                outcome = interpret(result)
            outcomes.append(outcome)
            progress.add(outcome)
    finally:
        await provider.aclose()
    judged = assemble_judged(frame, outcomes, judge_label=f"{provider.label} (batch)",
                             rubrics=rubrics, params_sent=config.sent(provider),
                             config=config)
    cancelled = monitor.pending > 0 or bool(cancel is not None and cancel.is_set())
    return JudgeRun(judged, progress, stats, cancelled=cancelled,
                    warnings=run_warnings(provider, config, outcomes))


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
