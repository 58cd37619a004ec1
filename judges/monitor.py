"""The live view of a batch run (:class:`BatchMonitor`), read from another thread.

Kept apart from :mod:`judges.batch` (which re-exports it) so that
:class:`judges.context.RunContext` can hold one without importing the batch machinery.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from judges.batch_apis import BatchStatus

__all__ = ["BatchMonitor"]


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
