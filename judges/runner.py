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
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, replace

from judges.cache import ReplyCache, cache_key, claim_owner
from judges.cost import PriceTable, estimate_message_tokens
from judges.errors import PriceError
from judges.providers import ChatProvider, ErrorInfo
from judges.request import ChatRequest, Reply, Result

__all__ = [
    "LONG_WAIT", "RunConfig", "RunStats", "STOPPED_PREFIX", "request_key", "run_requests",
    "run_stream",
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


#: A ``Retry-After`` wait at least this long (seconds) is described in ``RunStats.waiting``.
LONG_WAIT = 10.0


#: The error of a request left unsent because the run stopped starts with this.
STOPPED_PREFIX = "stopped"


class _Shared:
    """State shared by the workers of one run."""

    def __init__(self) -> None:
        self.pause_until = 0.0
        self.replies = 0  # replies received over the network in this run
        self.reserved = 0.0  # cost cap: upper bounds of the requests in flight


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


async def _sleep(seconds: float, cancel: threading.Event | None) -> bool:
    """Sleep up to ``seconds``; return False early if ``cancel`` gets set."""
    end = time.monotonic() + seconds
    while True:
        if cancel is not None and cancel.is_set():
            return False
        left = end - time.monotonic()
        if left <= 0:
            return True
        await asyncio.sleep(min(left, 0.05))


async def _call(provider: ChatProvider, request: ChatRequest, *, config: RunConfig,
                shared: _Shared, stats: RunStats, rng: random.Random,
                cancel: threading.Event | None) -> tuple[Reply | None, str | None, int]:
    """Call with retries: ``(reply, None, attempts)`` or ``(None, error, attempts)``."""
    attempts = 0
    while True:
        if stats.stopped is not None and attempts:
            return None, f"{STOPPED_PREFIX}: {stats.stopped}", attempts
        wait = shared.pause_until - time.monotonic()
        if wait > 0 and not await _sleep(wait, cancel):
            return None, "cancelled while waiting to retry", attempts
        if cancel is not None and cancel.is_set() and attempts:
            return None, "cancelled while waiting to retry", attempts
        attempts += 1
        stats.http_attempts += 1
        try:
            # The SDK enforces ``timeout`` per HTTP read; this bounds the whole request (a
            # server that trickles a byte every few seconds, issue 26).
            reply = await asyncio.wait_for(provider.complete(request, timeout=config.timeout),
                                           config.timeout)
            shared.replies += 1
            return reply, None, attempts
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes a result
            info = provider.classify_error(exc)
        if info.setup and config.fail_fast and shared.replies == 0:
            if stats.stopped is None:
                stats.stopped = (f"the first requests to {provider.endpoint} failed, so the run "
                                 f"stopped instead of trying every row: {info.message}")
            return None, info.message, attempts
        if not info.transient:
            return None, info.message, attempts
        if attempts > config.max_retries:
            return None, f"{info.message} (gave up after {attempts} attempts)", attempts
        if info.retry_after is not None:
            delay = min(info.retry_after, config.retry_after_max)
            shared.pause_until = max(shared.pause_until, time.monotonic() + delay)
            if delay >= LONG_WAIT:
                stats.waiting = _wait_note(info, delay, config.retry_after_max)
            delay += rng.uniform(0, min(0.1 * delay, 1.0))
        else:
            delay = config.backoff(attempts - 1, rng)
        stats.retries += 1
        if not await _sleep(delay, cancel):
            return None, "cancelled while waiting to retry", attempts


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
    config = config or RunConfig()
    stats = stats if stats is not None else RunStats()
    rng = random.Random(seed)
    shared = _Shared()
    iterator = iter(requests)
    queue: asyncio.Queue[Result | None] = asyncio.Queue(maxsize=config.concurrency * 4)
    section, model = provider.price_section, provider.model

    price = prices.lookup(section, model) if prices is not None else None
    if max_cost_usd is not None and price is None:
        raise PriceError(f"A cost cap needs a price: {model!r} has none in section "
                         f"{section!r} of the price table (add it, or drop the cap).")
    owner = claim_owner()
    claim_ttl = config.timeout * (config.max_retries + 1) * 2 + config.backoff_max * (
        config.max_retries + 1) + 5
    in_flight: dict[str, asyncio.Future[Result]] = {}

    def cost_of(reply: Reply) -> float | None:
        if price is None:
            return None
        return price.cost(reply.input_tokens, reply.output_tokens) * reply.billed_share

    def upper_bound(request: ChatRequest) -> float:
        assert price is not None
        out = request.params.get("max_tokens") or 4096
        return price.cost(estimate_message_tokens(request.messages), int(out))

    def cached_reply(key: str) -> Reply | None:
        if cache is None:
            return None
        hit = cache.get(key)
        if hit is not None and reuse is not None and not reuse(hit):
            stats.reasked += 1
            return None
        return hit

    async def claimed(key: str) -> Reply | None:
        """Claim ``key`` in the cache; while another run holds it, wait for its reply."""
        assert cache is not None
        while not cache.claim(key, owner, claim_ttl):
            if cancel is not None and cancel.is_set():
                return None
            await asyncio.sleep(0.2)
            hit = cache.get(key)
            if hit is not None and (reuse is None or reuse(hit)):
                return hit
        return None

    async def call(request: ChatRequest, key: str) -> Result:
        released = False
        hit = cached_reply(key)
        if hit is not None:
            return Result(request, "ok", hit, cached=True, cost_usd=cost_of(hit))
        try:
            if cache is not None:
                hit = await claimed(key)
                if hit is not None:  # another process paid for it while we waited
                    return Result(request, "ok", hit, cached=True, cost_usd=cost_of(hit))
                if cancel is not None and cancel.is_set():
                    return Result(request, "cancelled", error="cancelled before it was sent")
            bound = 0.0
            if max_cost_usd is not None:
                bound = upper_bound(request)
                if stats.cost_usd + shared.reserved + bound > max_cost_usd:
                    stats.stopped = stats.stopped or (
                        f"cost cap ${max_cost_usd:,.4f} reached (${stats.cost_usd:,.4f} spent "
                        f"so far, up to ${shared.reserved:,.4f} more for the requests in "
                        "flight); run again to go on from the cache")
                    return Result(request, "cancelled", error=f"{STOPPED_PREFIX}: {stats.stopped}")
            if stats.stopped is not None:
                return Result(request, "cancelled", error=f"{STOPPED_PREFIX}: {stats.stopped}")
            # Import the SDK and build the client (or raise ProviderConfigError) before the
            # first timeout starts: a cold SDK import can take seconds.
            provider.client()
            shared.reserved += bound
            try:
                reply, error, attempts = await _call(provider, request, config=config,
                                                     shared=shared, stats=stats, rng=rng,
                                                     cancel=cancel)
            finally:
                shared.reserved -= bound
            if reply is None:
                status = ("cancelled" if error and error.startswith(("cancelled", STOPPED_PREFIX))
                          else "error")
                return Result(request, status, error=error, attempts=attempts)
            if cache is not None:
                usable = reuse is None or reuse(reply)  # an unusable reply is kept short
                cache.put(key, reply if usable else reply.clipped(), provider=provider.name,
                          model=provider.model, release=owner)
                released = True
            return Result(request, "ok", reply, attempts=attempts, cost_usd=cost_of(reply))
        finally:
            if cache is not None and not released:
                cache.release(key, owner)

    async def one(request: ChatRequest) -> Result:
        key = request_key(provider, request)
        waiting = in_flight.get(key)
        if waiting is not None:  # an identical request is in flight: share its reply
            first = await waiting
            stats.shared += 1
            if first.status == "ok":
                return replace(first, request=request, cached=True, attempts=0)
            return replace(first, request=request, attempts=0)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        in_flight[key] = future
        try:
            result = await call(request, key)
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
            del in_flight[key]

    async def worker() -> None:
        hits_in_a_row = 0
        while (cancel is None or not cancel.is_set()) and stats.stopped is None:
            try:
                request = next(iterator)
            except StopIteration:
                return
            result = await one(request)
            await queue.put(result)
            # Cache hits never await the network: yield now and then so others run.
            hits_in_a_row = hits_in_a_row + 1 if result.cached else 0
            if hits_in_a_row % 64 == 63:
                await asyncio.sleep(0)

    async def supervise() -> None:
        tasks = [asyncio.ensure_future(worker()) for _ in range(config.concurrency)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:  # one worker failed (e.g. no API key): stop the others
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            await queue.put(None)

    def account(result: Result) -> None:
        stats.done += 1
        if result.status == "ok":
            stats.ok += 1
            if result.cached:
                stats.cache_hits += 1
            else:
                assert result.reply is not None
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

    supervisor = asyncio.ensure_future(supervise())
    try:
        while True:
            result = await queue.get()
            if result is None:
                break
            account(result)
            yield result
        await supervisor
        if max_cost_usd is not None and stats.stopped and stats.stopped.startswith("cost cap"):
            # what was spent in all: the requests in flight when the cap was reached finished
            # after the message was written (it said half of the total, issue 43)
            stats.stopped = (f"cost cap ${max_cost_usd:,.4f} reached (${stats.cost_usd:,.4f} "
                             "spent in all, the requests in flight when it was reached "
                             "included); run again to go on from the cache")
        for request in iterator:  # left over after a cancel or a stop: never sent
            error = ("cancelled before it was sent" if stats.stopped is None
                     else f"{STOPPED_PREFIX}: {stats.stopped}")
            result = Result(request, "cancelled", error=error)
            account(result)
            yield result
    finally:
        if not supervisor.done():
            supervisor.cancel()
            await asyncio.gather(supervisor, return_exceptions=True)


async def run_requests(requests: Iterable[ChatRequest], provider: ChatProvider,
                       **kwargs: object) -> list[Result]:
    """Run all ``requests`` (see :func:`run_stream`) and return results in input order."""
    requests = list(requests)
    position = {id(r): i for i, r in enumerate(requests)}
    out: list[Result | None] = [None] * len(requests)
    async for result in run_stream(requests, provider, **kwargs):  # type: ignore[arg-type]
        out[position[id(result.request)]] = result
    return [r for r in out if r is not None]
