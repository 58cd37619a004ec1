"""The request runner: bounded concurrency, retries, cache and cost, for any chat requests.

:func:`run_stream` takes an iterable of :class:`~judges.request.ChatRequest` (consumed
lazily, so memory stays flat for long runs) and yields one
:class:`~judges.request.Result` per request as soon as it is known:

1. the cache is asked first; a hit costs nothing and makes no request;
2. otherwise the provider is called by one of ``concurrency`` workers, with a per-request
   timeout; 429, 408/409/425, 5xx, timeouts and connection errors are retried up to
   ``max_retries`` times with exponential backoff and jitter, honouring ``Retry-After``
   (which also pauses the other workers until then);
3. a reply is stored in the cache the moment it arrives, before it is yielded (and
   before anyone parses it);
4. identical requests (same cache key) are sent once: a duplicate waits for the request in
   flight and shares its reply, also across processes sharing the cache (a claim row with
   an owner and an expiry in the cache file, :meth:`judges.cache.ReplyCache.claim`);
5. fail fast: an authentication, permission, not-found or connection error before the
   run's first reply stops the run (``RunStats.stopped``) instead of trying every row;
6. ``max_cost_usd`` stops the run before a request that could cross the cap is sent
   (its cost is bounded by the estimated prompt tokens plus its ``max_tokens``); a rerun
   resumes from the cache.

A ``cancel`` event (``threading.Event``) stops taking new requests; requests already in
flight finish (they are paid for and get cached); the rest come back ``cancelled``.
Results come in completion order; ``Result.request.tag`` tells them apart.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, replace

from judges.cache import ReplyCache, cache_key, claim_owner
from judges.cost import PriceTable, estimate_message_tokens
from judges.errors import PriceError
from judges.providers import ChatProvider, ErrorInfo
from judges.request import ChatRequest, Reply, Result

__all__ = [
    "LONG_WAIT", "LiveRun", "RunConfig", "RunStats", "STOPPED_PREFIX",
    "request_key", "run_requests", "run_stream", "sleep_unless_cancelled",
]


@dataclass(frozen=True)
class RunConfig:
    """How requests are run (none of this enters the cache key).

    Attributes
    ----------
    concurrency
        Requests in flight at most.
    timeout
        Seconds per HTTP attempt.
    max_retries
        Retries after the first attempt for transient errors.
    backoff_base, backoff_max
        Backoff before retry ``k`` (0-based) is drawn from
        ``[d/2, d]`` with ``d = min(backoff_max, backoff_base * 2**k)`` ("equal jitter").
    retry_after_max
        Longest ``Retry-After`` honoured; longer requests are capped to this.
    fail_fast
        Stop the run at a setup error (wrong key, endpoint or model, no connection)
        before its first reply (see :attr:`judges.providers.ErrorInfo.setup`).
    """

    concurrency: int = 8
    timeout: float = 60.0
    max_retries: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    retry_after_max: float = 120.0
    fail_fast: bool = True

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}.")
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout}.")
        if self.max_retries < 0:
            raise ValueError(f"max_retries cannot be negative, got {self.max_retries}.")

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based), without Retry-After."""
        d = min(self.backoff_max, self.backoff_base * 2 ** attempt)
        return d / 2 + rng.uniform(0, d / 2)


@dataclass
class RunStats:
    """Live counters of a run (safe to read from another thread).

    Attributes
    ----------
    done, ok, errors, cancelled, cache_hits
        Results yielded so far, by kind.
    http_attempts, retries
        HTTP attempts made (first tries and retries) and retries among them.
    input_tokens, output_tokens, cost_usd
        Usage and cost of the replies received *in this run* (cache hits excluded: they
        were paid for before). ``cost_usd`` counts priced replies only.
    unpriced
        Replies received in this run whose model has no price.
    shared
        Results served by an identical request in flight (sent once, counted as cached).
    reasked
        Cached replies the caller refused to reuse (``reuse``), asked again.
    stopped
        Why the run stopped early (setup error before any reply, cost cap), else ``None``.
    waiting
        The latest long wait (:data:`LONG_WAIT` seconds or more) the server asked for
        with ``Retry-After``: what is waited for, how long and until when; else ``None``.
    """

    done: int = 0
    ok: int = 0
    errors: int = 0
    cancelled: int = 0
    cache_hits: int = 0
    http_attempts: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    shared: int = 0
    reasked: int = 0
    stopped: str | None = None
    waiting: str | None = None

    def count(self, result: Result) -> None:
        """Count one result yielded (a live or a batch run's)."""
        self.done += 1
        if result.status == "ok" and result.reply is not None:
            self.ok += 1
            if result.cached:
                self.cache_hits += 1
            else:  # the tokens and cost of a reply received in this run
                self.input_tokens += result.reply.input_tokens
                self.output_tokens += result.reply.output_tokens
                if result.cost_usd is None:
                    self.unpriced += 1
                else:
                    self.cost_usd += result.cost_usd
        elif result.status == "cancelled":
            self.cancelled += 1
        else:
            self.errors += 1


#: A ``Retry-After`` wait at least this long (seconds) is described in ``RunStats.waiting``.
LONG_WAIT = 10.0


#: The error of a request left unsent because the run stopped starts with this.
STOPPED_PREFIX = "stopped"


def _wait_note(info: ErrorInfo, delay: float, cap: float) -> str:
    """What a long ``Retry-After`` wait is for (``RunStats.waiting``)."""
    asked = info.retry_after
    capped = (f" (it asked for {asked:,.0f} s; waits are capped at {cap:,.0f} s, "
              "--retry-after-max)") if asked > delay else ""
    until = time.strftime("%H:%M:%S", time.localtime(time.time() + delay))
    return (f"waiting {delay:,.0f} s, until {until}, before retrying: the server answered "
            f"{info.message} and asked to retry later (Retry-After){capped}")


def request_key(provider: ChatProvider, request: ChatRequest) -> str:
    """The cache key of ``request`` sent to ``provider``."""
    return cache_key(provider.identity(), provider.effective_params(request.params),
                     request.key_parts, request.messages)


async def sleep_unless_cancelled(seconds: float, cancel: threading.Event | None) -> bool:
    """Sleep up to ``seconds``; return False early if ``cancel`` gets set."""
    end = time.monotonic() + seconds
    while True:
        if cancel is not None and cancel.is_set():
            return False
        left = end - time.monotonic()
        if left <= 0:
            return True
        await asyncio.sleep(min(left, 0.05))


class LiveRun:
    """One live run of :func:`run_stream`, in named steps (the module docstring's list).

    :meth:`stream` yields the results; the other methods are its steps: :meth:`one`
    (share a request in flight), :meth:`call` (cache, cost cap, send, store), the
    :meth:`worker` pool run by :meth:`supervise`, :meth:`account` (the counters) and
    :meth:`leftovers` (the requests never sent).
    """

    def __init__(self, requests: Iterable[ChatRequest], provider: ChatProvider, *,
                 cache: ReplyCache | None = None, config: RunConfig | None = None,
                 prices: PriceTable | None = None, cancel: threading.Event | None = None,
                 stats: RunStats | None = None, seed: int | None = None,
                 reuse: Callable[[Reply], bool] | None = None,
                 max_cost_usd: float | None = None) -> None:
        self.provider, self.cache, self.cancel, self.reuse = provider, cache, cancel, reuse
        self.config = config = config or RunConfig()
        self.stats = stats if stats is not None else RunStats()
        self.max_cost_usd = max_cost_usd
        self.rng = random.Random(seed)
        self.pause_until = 0.0  # a Retry-After pauses every worker until then
        self.replies = 0  # replies received over the network in this run
        self.reserved = 0.0  # cost cap: upper bounds of the requests in flight
        self.iterator = iter(requests)
        self.queue: asyncio.Queue[Result | None] = asyncio.Queue(maxsize=config.concurrency * 4)
        section, model = provider.price_section, provider.model
        self.price = prices.lookup(section, model) if prices is not None else None
        if max_cost_usd is not None and self.price is None:
            raise PriceError(f"A cost cap needs a price: {model!r} has none in section "
                             f"{section!r} of the price table (add it, or drop the cap).")
        self.owner = claim_owner()
        self.claim_ttl = config.timeout * (config.max_retries + 1) * 2 + config.backoff_max * (
            config.max_retries + 1) + 5
        self.in_flight: dict[str, asyncio.Future[Result]] = {}

    def cancelled(self) -> bool:
        """Whether ``cancel`` is set."""
        return self.cancel is not None and self.cancel.is_set()

    def cost_of(self, reply: Reply) -> float | None:
        """The cost of ``reply`` at the price table (its billed share)."""
        if self.price is None:
            return None
        return self.price.cost(reply.input_tokens, reply.output_tokens) * reply.billed_share

    def upper_bound(self, request: ChatRequest) -> float:
        """The most ``request`` can cost: its estimated prompt plus its ``max_tokens``."""
        assert self.price is not None
        out = request.params.get("max_tokens") or 4096
        return self.price.cost(estimate_message_tokens(request.messages), int(out))

    def cached_reply(self, key: str) -> Reply | None:
        """The cached reply of ``key``, unless there is none or ``reuse`` refuses it."""
        if self.cache is None:
            return None
        hit = self.cache.get(key)
        if hit is not None and self.reuse is not None and not self.reuse(hit):
            self.stats.reasked += 1
            return None
        return hit

    async def claimed(self, key: str) -> Reply | None:
        """Claim ``key`` in the cache; while another run holds it, wait for its reply."""
        assert self.cache is not None
        while not self.cache.claim(key, self.owner, self.claim_ttl):
            if self.cancelled():
                return None
            await asyncio.sleep(0.2)
            hit = self.cache.get(key)
            if hit is not None and (self.reuse is None or self.reuse(hit)):
                return hit
        # Claimed. Another run may have stored its reply (and released its claim with it)
        # between our first look at the cache and the claim: look once more, or we pay twice.
        hit = self.cache.get(key)
        return hit if hit is not None and (self.reuse is None or self.reuse(hit)) else None

    def over_budget(self, request: ChatRequest) -> tuple[Result | None, float]:
        """``(a cancelled result, 0)`` when the run stopped or ``request`` could cross the
        cost cap; else ``(None, its cost bound)``."""
        stats, bound = self.stats, 0.0
        if self.max_cost_usd is not None:
            bound = self.upper_bound(request)
            if stats.cost_usd + self.reserved + bound > self.max_cost_usd:
                stats.stopped = stats.stopped or (
                    f"cost cap ${self.max_cost_usd:,.4f} reached (${stats.cost_usd:,.4f} spent "
                    f"so far, up to ${self.reserved:,.4f} more for the requests in "
                    "flight); run again to go on from the cache")
        if stats.stopped is not None:
            return Result(request, "cancelled", error=f"{STOPPED_PREFIX}: {stats.stopped}"), 0.0
        return None, bound

    async def send(self, request: ChatRequest, bound: float) -> tuple[Reply | None, str | None,
                                                                      int]:
        """Call the provider with retries, ``bound`` reserved under the cost cap meanwhile:
        ``(reply, None, attempts)`` or ``(None, error, attempts)``."""
        # Import the SDK and build the client (or raise ProviderConfigError) before the
        # first timeout starts: a cold SDK import can take seconds.
        self.provider.client()
        self.reserved += bound
        try:
            return await self.retrying(request)
        finally:
            self.reserved -= bound

    async def retrying(self, request: ChatRequest) -> tuple[Reply | None, str | None, int]:
        """Attempt ``request`` until a reply, a final error, a cancel or a stop of the run."""
        attempts, stats, timeout = 0, self.stats, self.config.timeout
        while True:
            if stats.stopped is not None and attempts:
                return None, f"{STOPPED_PREFIX}: {stats.stopped}", attempts
            wait = self.pause_until - time.monotonic()
            if (wait > 0 and not await sleep_unless_cancelled(wait, self.cancel)) or (
                    self.cancelled() and attempts):
                return None, "cancelled while waiting to retry", attempts
            attempts += 1
            stats.http_attempts += 1
            try:
                # The SDK enforces ``timeout`` per HTTP read; this bounds the whole request
                # (a server that trickles a byte every few seconds, issue 26).
                reply = await asyncio.wait_for(self.provider.complete(request, timeout=timeout),
                                               timeout)
                self.replies += 1
                return reply, None, attempts
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure becomes a result
                info = self.provider.classify_error(exc)
            error = self.final_error(info, attempts)
            if error is not None:
                return None, error, attempts
            stats.retries += 1
            if not await sleep_unless_cancelled(self.retry_delay(info, attempts), self.cancel):
                return None, "cancelled while waiting to retry", attempts

    def final_error(self, info: ErrorInfo, attempts: int) -> str | None:
        """The error that ends a request's attempts (a setup error before the run's first
        reply also stops the run, ``fail_fast``); ``None``: try again."""
        if info.setup and self.config.fail_fast and self.replies == 0:
            if self.stats.stopped is None:
                self.stats.stopped = (
                    f"the first requests to {self.provider.endpoint} failed, so the run "
                    f"stopped instead of trying every row: {info.message}")
            return info.message
        if not info.transient:
            return info.message
        if attempts > self.config.max_retries:
            return f"{info.message} (gave up after {attempts} attempts)"
        return None

    def retry_delay(self, info: ErrorInfo, attempts: int) -> float:
        """Seconds before the next attempt: the server's ``Retry-After`` (capped, it pauses
        the other workers too, plus a little jitter) or the backoff."""
        config = self.config
        if info.retry_after is None:
            return config.backoff(attempts - 1, self.rng)
        delay = min(info.retry_after, config.retry_after_max)
        self.pause_until = max(self.pause_until, time.monotonic() + delay)
        if delay >= LONG_WAIT:
            self.stats.waiting = _wait_note(info, delay, config.retry_after_max)
        return delay + self.rng.uniform(0, min(0.1 * delay, 1.0))

    def store(self, key: str, reply: Reply) -> None:
        """Put ``reply`` in the cache (an unusable one kept short) and release the claim."""
        assert self.cache is not None
        usable = self.reuse is None or self.reuse(reply)
        self.cache.put(key, reply if usable else reply.clipped(), provider=self.provider.name,
                       model=self.provider.model, release=self.owner)

    async def after_claim(self, request: ChatRequest, key: str) -> Result | None:
        """Claim ``key``: the reply another process paid for while we waited, a cancelled
        result, or ``None`` when ``request`` must be sent (no cache: ``None``)."""
        if self.cache is None:
            return None
        hit = await self.claimed(key)
        if hit is not None:
            return Result(request, "ok", hit, cached=True, cost_usd=self.cost_of(hit))
        if self.cancelled():
            return Result(request, "cancelled", error="cancelled before it was sent")
        return None

    async def call(self, request: ChatRequest, key: str) -> Result:
        """The result of one request: cache, claim, cost cap, send, store."""
        hit = self.cached_reply(key)
        if hit is not None:
            return Result(request, "ok", hit, cached=True, cost_usd=self.cost_of(hit))
        released = False
        try:
            done = await self.after_claim(request, key)
            if done is not None:
                return done
            stopped, bound = self.over_budget(request)
            if stopped is not None:
                return stopped
            reply, error, attempts = await self.send(request, bound)
            if reply is None:
                status = ("cancelled" if error and error.startswith(("cancelled", STOPPED_PREFIX))
                          else "error")
                return Result(request, status, error=error, attempts=attempts)
            if self.cache is not None:
                self.store(key, reply)
                released = True
            return Result(request, "ok", reply, attempts=attempts, cost_usd=self.cost_of(reply))
        finally:
            if self.cache is not None and not released:
                self.cache.release(key, self.owner)

    async def one(self, request: ChatRequest) -> Result:
        """:meth:`call`, or the reply of an identical request in flight (sent once)."""
        key = request_key(self.provider, request)
        waiting = self.in_flight.get(key)
        if waiting is not None:  # an identical request is in flight: share its reply
            first = await waiting
            self.stats.shared += 1
            if first.status == "ok":
                return replace(first, request=request, cached=True, attempts=0)
            return replace(first, request=request, attempts=0)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self.in_flight[key] = future
        try:
            result = await self.call(request, key)
            future.set_result(result)
            return result
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning
            raise
        finally:
            del self.in_flight[key]

    async def worker(self) -> None:
        """Take requests one at a time until none is left, or the run is cancelled or stopped."""
        hits_in_a_row = 0
        while not self.cancelled() and self.stats.stopped is None:
            try:
                request = next(self.iterator)
            except StopIteration:
                return
            result = await self.one(request)
            await self.queue.put(result)
            # Cache hits never await the network: yield now and then so others run.
            hits_in_a_row = hits_in_a_row + 1 if result.cached else 0
            if hits_in_a_row % 64 == 63:
                await asyncio.sleep(0)

    async def supervise(self) -> None:
        """Run ``concurrency`` workers; one failing (e.g. no API key) stops the others."""
        tasks = [asyncio.ensure_future(self.worker()) for _ in range(self.config.concurrency)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            await self.queue.put(None)

    def account(self, result: Result) -> Result:
        """Count ``result`` in the run's :class:`RunStats`."""
        self.stats.count(result)
        return result

    def final_stop_note(self) -> None:
        """The cost cap's message with what was spent in all (the requests in flight when the
        cap was reached finished after it was written: it said half of the total, issue 43)."""
        stopped = self.stats.stopped
        if self.max_cost_usd is not None and stopped and stopped.startswith("cost cap"):
            self.stats.stopped = (f"cost cap ${self.max_cost_usd:,.4f} reached "
                                  f"(${self.stats.cost_usd:,.4f} spent in all, the requests "
                                  "in flight when it was reached included); run again to go "
                                  "on from the cache")

    def leftovers(self) -> Iterator[Result]:
        """The requests left over after a cancel or a stop: never sent."""
        for request in self.iterator:
            error = ("cancelled before it was sent" if self.stats.stopped is None
                     else f"{STOPPED_PREFIX}: {self.stats.stopped}")
            yield self.account(Result(request, "cancelled", error=error))

    async def stream(self) -> AsyncIterator[Result]:
        """Yield each result as it completes, then the ones never sent."""
        supervisor = asyncio.ensure_future(self.supervise())
        try:
            while (result := await self.queue.get()) is not None:
                yield self.account(result)
            await supervisor
            self.final_stop_note()
            for result in self.leftovers():
                yield result
        finally:
            if not supervisor.done():
                supervisor.cancel()
                await asyncio.gather(supervisor, return_exceptions=True)


async def run_stream(
    requests: Iterable[ChatRequest],
    provider: ChatProvider,
    *,
    cache: ReplyCache | None = None,
    config: RunConfig | None = None,
    prices: PriceTable | None = None,
    cancel: threading.Event | None = None,
    stats: RunStats | None = None,
    seed: int | None = None,
    reuse: Callable[[Reply], bool] | None = None,
    max_cost_usd: float | None = None,
) -> AsyncIterator[Result]:
    """Run ``requests`` and yield each :class:`Result` as it completes.

    Parameters
    ----------
    requests
        Consumed lazily, one at a time, by the workers.
    provider
        Where the requests go.
    cache
        Reply cache to read first and write at once; ``None`` runs without a cache.
    config
        Concurrency, timeout and retry settings.
    prices
        Price table for ``Result.cost_usd``; ``None`` leaves costs unknown.
    cancel
        Set it (from any thread) to stop taking new requests.
    stats
        Counters updated live (pass one to watch progress from another thread).
    seed
        Seed of the jitter random generator (tests).
    reuse
        ``reply -> bool``: whether a cached reply may be reused; a refused one is asked
        again and replaced (the judge refuses unparseable replies unless told otherwise).
    max_cost_usd
        Stop before sending a request that could take the run's spending over this
        (``RunStats.stopped`` says so; the requests not sent come back ``cancelled``).

    Raises
    ------
    ProviderConfigError
        At the first request that is not in the cache, if the provider's SDK is missing or
        it needs a key it lacks (a run served entirely from the cache needs neither).
    PriceError
        ``max_cost_usd`` is set but the model has no price.
    """
    async for result in LiveRun(requests, provider, cache=cache, config=config, prices=prices,
                                cancel=cancel, stats=stats, seed=seed, reuse=reuse,
                                max_cost_usd=max_cost_usd).stream():
        yield result


async def run_requests(requests: Iterable[ChatRequest], provider: ChatProvider,
                       **kwargs: object) -> list[Result]:
    """Run all ``requests`` (see :func:`run_stream`) and return results in input order."""
    requests = list(requests)
    position = {id(r): i for i, r in enumerate(requests)}
    out: list[Result | None] = [None] * len(requests)
    async for result in run_stream(requests, provider, **kwargs):  # type: ignore[arg-type]
        out[position[id(result.request)]] = result
    return [r for r in out if r is not None]
