"""The run context of a task: where its requests go and how they are run, counted and stopped.

Answers, categories and batch judging all run through the same eight settings (the reply
cache, the live run's :class:`~judges.runner.RunConfig`, the batch API's
:class:`~judges.batch.BatchConfig`, the price table, the cancel event and the three live
counters): :class:`RunContext` holds them in one frozen object that the task functions
pass on whole (``docs/judges.md``, "The run context"). The old keyword calls
(``answer_frame(..., cache=..., run_config=..., stats=...)``) still work:
:meth:`RunContext.of` builds the context from them. :func:`judges.batch.stream_context`
runs requests as a context says.

No Streamlit here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields, replace
from typing import Any

from judges.batch_apis import BatchConfig
from judges.cache import ReplyCache
from judges.cost import PriceTable
from judges.monitor import BatchMonitor
from judges.runner import RunConfig, RunStats

__all__ = ["RunContext"]


@dataclass(frozen=True)
class RunContext:
    """How one task run sends, caches, prices, counts and stops its requests.

    Attributes
    ----------
    cache
        Reply cache read first and written at once; ``None`` runs without one (live only).
    run_config
        Concurrency, timeout and retries of a live run (``None``: the defaults).
    batch
        ``None`` runs live; a :class:`~judges.batch.BatchConfig` uses the provider's batch
        API (which needs ``cache``).
    prices
        The price table; ``None`` leaves costs unknown (the tasks load the bundled one).
    cancel
        Set it (from any thread) to stop taking new requests.
    progress
        The task's progress counters (:class:`~judges.tasks.TaskProgress` or
        :class:`~judges.judge.JudgeProgress`); ``None``: the task makes its own.
    stats, monitor
        Live counters of the requests and of the batches (a fresh pair by default).
    """

    cache: ReplyCache | None = None
    run_config: RunConfig | None = None
    batch: BatchConfig | None = None
    prices: PriceTable | None = None
    cancel: threading.Event | None = None
    progress: Any = None
    stats: RunStats = field(default_factory=RunStats)
    monitor: BatchMonitor = field(default_factory=BatchMonitor)

    @classmethod
    def of(cls, context: RunContext | None = None, **settings: Any) -> RunContext:
        """``context`` (or a default one) with the keyword ``settings`` that are not ``None``.

        Raises
        ------
        TypeError
            A keyword that is not a field (as a function given an unknown keyword).
        """
        unknown = sorted(set(settings) - {f.name for f in fields(cls)})
        if unknown:
            raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
        given = {k: v for k, v in settings.items() if v is not None}
        return replace(context if context is not None else cls(), **given)

    def priced(self) -> RunContext:
        """This context with the bundled price table when it has none."""
        return self if self.prices is not None else replace(self, prices=PriceTable.load())

    @property
    def cancelled(self) -> bool:
        """Whether ``cancel`` is set."""
        return self.cancel is not None and self.cancel.is_set()
