"""Plumbing shared by the tasks built on the runner: answers, categories, batch judging.

- :class:`TaskProgress`: live counters of a run (the same fields as
  :class:`judges.judge.JudgeProgress`, so the same progress display serves both);
- :class:`FrameJob`: any such run in a background thread, for a page that must stay
  responsive (also the base of :class:`judges.job.JudgeJob`);
- :func:`estimate_requests`: calls, tokens and cost of a list of requests before a run
  (live or batch price);
- :func:`judge_batch_job`: a four-stage judge run through the batch API as a
  :class:`FrameJob` (the Judges page's batch switch);
- :func:`collect_results`: the run loop of a task (live or batch), counting progress;
- :func:`load_data_yaml`: a task's YAML file, bundled (``judges/data/``) or the user's.

No Streamlit here.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import yaml

from judges.batch import (
    BATCH_DISCOUNT,
    BatchConfig,
    BatchMonitor,
    is_pending,
    judge_frame_batch_async,
    stream_context,
)
from judges.cache import ReplyCache, default_cache_path, optional_cache
from judges.context import RunContext
from judges.cost import PriceTable, estimate_message_tokens
from judges.errors import JudgesError
from judges.judge import JudgeProgress, n_judgments
from judges.providers import ChatProvider
from judges.request import ChatRequest, Result
from judges.runner import RunStats, request_key

__all__ = [
    "FrameJob", "RequestEstimate", "T", "TaskProgress", "Work", "cached_work",
    "collect_results", "context_job", "estimate_requests", "judge_batch_job", "load_data_yaml",
]


@dataclass
class TaskProgress(JudgeProgress):
    """Live progress of a task run: :class:`judges.judge.JudgeProgress`'s counters (so the
    same progress display serves both), counting requests instead of judgments, plus
    ``pending``: requests still waiting in a provider batch. ``scored`` / ``unscored``
    are the finished requests that gave a usable result (an answer, a category) or not.
    """

    pending: int = 0

    def add(self, result: Result, *, usable: bool, pending: bool = False) -> None:  # type: ignore[override]
        """Count one finished request."""
        with self._lock:
            self.pending += int(pending)
            reply = result.reply
            self._count(usable, result.cached, None if reply is None else (
                reply.input_tokens, reply.output_tokens, result.cost_usd))


Work = Callable[[threading.Event], Coroutine[Any, Any, pd.DataFrame]]


class FrameJob:
    """Run ``work(cancel)`` (a coroutine returning a table) in a daemon thread.

    :class:`judges.job.JudgeJob` is one (``start``, ``cancel``, ``wait``, ``running``,
    ``finished``, ``cancelled``, ``progress()``, ``judged``, ``error``), so the Judges
    page's progress panel shows either.

    Parameters
    ----------
    work
        ``async def work(cancel) -> DataFrame``; it should update ``progress``.
    progress
        The counters ``work`` updates (:class:`TaskProgress` or ``JudgeProgress``).
    monitor
        Batch status ``work`` updates, when it uses the batch API.
    redact
        Removes secrets from an error message (``provider.redact``).
    """

    def __init__(self, work: Work, *, progress: Any, stats: RunStats | None = None,
                 monitor: BatchMonitor | None = None,
                 redact: Callable[[str], str] | None = None, name: str = "task"):
        self._work = work
        self._progress = progress
        self.stats = stats if stats is not None else RunStats()
        self.monitor = monitor
        self._redact = redact or (lambda text: text)
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"{name}-job")
        self.output: pd.DataFrame | None = None
        self.error: str | None = None
        #: Why the job was stopped from outside (``"its session ended"``), or ``None``.
        self.stopped_because: str | None = None
        self._watch: tuple[Callable[[], bool], float, float] | None = None

    def start(self) -> FrameJob:
        """Start the thread (and the :meth:`stop_when_gone` watcher); returns at once."""
        self._thread.start()
        if self._watch is not None:
            threading.Thread(target=self._watcher, daemon=True,
                             name=f"{self._thread.name}-watch").start()
        return self

    def stop_when_gone(self, alive: Callable[[], bool], *, grace: float = 30.0,
                       interval: float = 1.0) -> FrameJob:
        """Cancel the job once ``alive()`` has answered ``False`` for ``grace`` seconds in a
        row (checked every ``interval`` seconds from :meth:`start` until the job ends): a
        page passes "its session is still connected", so a closed browser stops paying."""
        self._watch = (alive, float(grace), float(interval))
        return self

    def _watcher(self) -> None:
        assert self._watch is not None
        alive, grace, interval = self._watch
        gone_since: float | None = None
        while self._thread.is_alive():
            self._thread.join(interval)
            try:
                ok = bool(alive())
            except Exception:  # noqa: BLE001 - a failing check counts as gone
                ok = False
            now = time.monotonic()
            gone_since = None if ok else (gone_since if gone_since is not None else now)
            if gone_since is not None and now - gone_since >= grace:
                self.stopped_because = "its session ended"
                self.cancel()
                return

    def cancel(self) -> None:
        """Stop taking new requests (batches keep running at the provider)."""
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until finished (or ``timeout``); return whether it finished."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        """Started and not finished."""
        return self._thread.is_alive()

    @property
    def finished(self) -> bool:
        """Finished, with an output or an error."""
        return self.output is not None or self.error is not None

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancel.is_set()

    @property
    def judged(self) -> pd.DataFrame | None:
        """The output table (the name the Judges page reads)."""
        return self.output

    def progress(self) -> Any:
        """A snapshot of the progress counters."""
        return self._progress.snapshot()

    def _run(self) -> None:
        try:
            self.output = asyncio.run(self._work(self._cancel))
        except Exception as exc:  # noqa: BLE001 - shown to the user, never raised in a thread
            self.error = self._redact(str(exc) or type(exc).__name__)


@dataclass(frozen=True)
class RequestEstimate:
    """Calls, tokens and cost of a run before it starts (see :func:`estimate_requests`)."""

    requests: int
    cached: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    batch: bool

    def to_frame(self) -> pd.DataFrame:
        """Columns ``quantity`` and ``value`` (for display)."""
        cost = "no price for this model" if self.cost_usd is None else f"${self.cost_usd:,.4f}"
        rate = " (batch: half price)" if self.batch else ""
        return pd.DataFrame({
            "quantity": ["requests", "already cached", "calls to make", "input tokens (est.)",
                         "output tokens (est.)", f"cost (est.){rate}"],
            "value": [f"{self.requests:,}", f"{self.cached:,}", f"{self.calls:,}",
                      f"{self.input_tokens:,}", f"{self.output_tokens:,}", cost],
        })


def estimate_requests(requests: Iterable[ChatRequest], provider: ChatProvider, *,
                      expected_output_tokens: int, prices: PriceTable | None = None,
                      cache: ReplyCache | None = None, batch: bool = False) -> RequestEstimate:
    """Count calls, tokens and cost of ``requests`` without making any request.

    Input tokens are estimated from the prompt text (about four characters per token),
    output tokens as ``expected_output_tokens`` per call; batch calls cost
    :data:`judges.batch.BATCH_DISCOUNT` of the price table.
    """
    requests = list(requests)
    keys = [request_key(provider, r) for r in requests] if cache is not None else []
    hits = cache.contains(keys) if cache is not None else set()
    to_call = [r for i, r in enumerate(requests) if not keys or keys[i] not in hits]
    input_tokens = sum(estimate_message_tokens(r.messages) for r in to_call)
    output_tokens = len(to_call) * expected_output_tokens
    prices = prices or PriceTable.load()
    cost = prices.cost(provider.price_section, provider.model, input_tokens, output_tokens)
    if cost is not None and batch:
        cost *= BATCH_DISCOUNT
    return RequestEstimate(len(requests), len(requests) - len(to_call), len(to_call),
                           input_tokens, output_tokens, cost, batch)


def cached_work(cache_path: str | Path | None,
                run: Callable[[ReplyCache | None, threading.Event],
                              Coroutine[Any, Any, pd.DataFrame]]) -> Work:
    """``work(cancel)`` that opens the reply cache in the job's thread and closes it after."""
    async def work(cancel: threading.Event) -> pd.DataFrame:
        with optional_cache(cache_path) as cache:
            return await run(cache, cancel)

    return work


def judge_batch_job(frame: pd.DataFrame, provider: ChatProvider, *,
                    cache_path: str | Path | None = None, batch: BatchConfig | None = None,
                    prices: PriceTable | None = None, config: Any = None) -> FrameJob:
    """Judge a validated four-stage table through the batch API in a background thread.

    The job's ``judged`` is the judged file (pending judgments unscored with a reason);
    ``monitor`` shows the batches. The cache defaults to :func:`default_cache_path`.
    """
    context = RunContext(batch=batch or BatchConfig(poll_interval=10), prices=prices,
                         progress=JudgeProgress(total=n_judgments(frame, config)))
    run = functools.partial(judge_frame_batch_async, frame, provider, config=config)
    return context_job(context, run, "judged", cache_path or default_cache_path(), provider,
                       name="judge-batch")


def context_job(context: RunContext, run: Callable[..., Coroutine[Any, Any, Any]],
                output: str, cache_path: str | Path | None, provider: ChatProvider, *,
                name: str) -> FrameJob:
    """A :class:`FrameJob` of a task run showing ``context``'s progress, stats and monitor:
    ``run(context=...)`` (a task's ``*_frame_async`` with its other arguments bound) in the
    job's thread, with the reply cache at ``cache_path`` and the job's cancel event in the
    context; the job's output is the run's attribute ``output``."""
    async def work(cache: ReplyCache | None, cancel: threading.Event) -> pd.DataFrame:
        return getattr(await run(context=replace(context, cache=cache, cancel=cancel)), output)

    return FrameJob(cached_work(cache_path, work), progress=context.progress,
                    stats=context.stats, monitor=context.monitor, redact=provider.redact,
                    name=name)


async def collect_results(requests: Iterable[ChatRequest], provider: ChatProvider,
                          context: RunContext, *, usable: Callable[[Result], bool],
                          purpose: str) -> list[Result]:
    """Run ``requests`` live or through the batch API (:func:`judges.batch.stream_context`), count
    each result in ``context.progress`` (``usable(result)``, pending in a batch) and close
    the provider; the results in the order they finished."""
    results: list[Result] = []
    try:
        async for result in stream_context(context, requests, provider, purpose=purpose):
            results.append(result)
            context.progress.add(result, usable=usable(result), pending=is_pending(result))
    finally:
        await provider.aclose()
    return results


T = TypeVar("T")


def load_data_yaml(path: str | Path | None, bundled: str, what: str,
                   parse: Callable[..., T]) -> T:
    """``parse(data, where=...)`` of a YAML file; ``path=None`` reads ``judges/data/<bundled>``.

    A missing file raises :class:`JudgesError` ``"<path>: no such <what>."``, invalid YAML
    ``"<where>: not valid YAML: ..."``.
    """
    if path is None:
        text = (resources.files("judges") / "data" / bundled).read_text("utf-8")
        where = f"judges/data/{bundled}"
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise JudgesError(f"{path}: no such {what}.") from None
        where = str(path)
    try:
        return parse(yaml.safe_load(text), where=where)
    except yaml.YAMLError as exc:
        raise JudgesError(f"{where}: not valid YAML: {exc}") from None
