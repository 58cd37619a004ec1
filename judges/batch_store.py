"""The record of submitted provider batches, kept in the reply cache's SQLite file.

A batch id and every ``custom_id -> cache key`` pair are committed the moment a batch is
created, so a closed page or a killed process finds the batch again and polls it instead
of submitting (and paying for) the same requests twice (:mod:`judges.batch`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from judges.batch_apis import BatchStatus
from judges.cache import SQLiteFile
from judges.providers import ChatProvider

__all__ = ["BATCH_COLUMNS", "BatchStore", "StoredBatch"]


@dataclass(frozen=True)
class StoredBatch:
    """A batch as recorded in the cache file (see :class:`BatchStore`)."""

    batch_id: str
    api: str
    model: str
    endpoint: str
    purpose: str
    status: str
    ended: bool
    collected: bool
    n_requests: int
    n_succeeded: int
    n_failed: int
    created: float
    updated: float
    message: str


#: Columns of :meth:`BatchStore.table`.
BATCH_COLUMNS: tuple[str, ...] = tuple(StoredBatch.__dataclass_fields__)


class BatchStore(SQLiteFile):
    """Submitted batches and their ``custom_id -> cache key`` items, in the cache's SQLite file.

    Tables ``batches`` (one row per batch: provider, model, endpoint, status, counts,
    whether its results are collected) and ``batch_items`` (``batch_id``, ``custom_id``,
    ``key``, ``state`` = pending / succeeded / failed, ``error``). Every write commits at
    once (WAL), so a process killed right after submitting leaves the batch on record.
    """

    def __init__(self, path: str | Path):
        super().__init__(
            path,
            "CREATE TABLE IF NOT EXISTS batches (batch_id TEXT PRIMARY KEY, api TEXT, "
            "model TEXT, endpoint TEXT, purpose TEXT, status TEXT, ended INTEGER, "
            "collected INTEGER DEFAULT 0, n_requests INTEGER, n_succeeded INTEGER DEFAULT 0, "
            "n_failed INTEGER DEFAULT 0, created REAL, updated REAL, message TEXT)",
            "CREATE TABLE IF NOT EXISTS batch_items (batch_id TEXT, custom_id TEXT, key TEXT, "
            "state TEXT, error TEXT, PRIMARY KEY (batch_id, custom_id))",
            "CREATE INDEX IF NOT EXISTS batch_items_key ON batch_items (key)")

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self._conn.execute(sql, args))

    def record(self, status: BatchStatus, provider: ChatProvider, purpose: str,
               items: Sequence[tuple[str, str]]) -> None:
        """Store a new batch and its ``(custom_id, key)`` items in one transaction."""
        now = time.time()
        with self._lock:
            self._conn.execute("BEGIN")
            self._conn.execute(
                "INSERT OR REPLACE INTO batches (batch_id, api, model, endpoint, purpose, status,"
                " ended, collected, n_requests, n_succeeded, n_failed, created, updated, message)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)",
                (status.batch_id, status.api, provider.model, provider.endpoint, purpose,
                 status.status, int(status.ended), len(items), status.succeeded,
                 status.failed, now, now, status.message))
            self._conn.executemany(
                "INSERT OR REPLACE INTO batch_items (batch_id, custom_id, key, state, error) "
                "VALUES (?, ?, ?, 'pending', '')",
                [(status.batch_id, cid, key) for cid, key in items])
            self._conn.execute("COMMIT")

    def update(self, status: BatchStatus) -> None:
        """Record the latest status of a stored batch."""
        with self._lock:
            self._conn.execute(
                "UPDATE batches SET status = ?, ended = ?, n_succeeded = ?, n_failed = ?, "
                "message = ?, updated = ? WHERE batch_id = ?",
                (status.status, int(status.ended), status.succeeded, status.failed,
                 status.message, time.time(), status.batch_id))

    def mark_collected(self, batch_id: str, states: Mapping[str, tuple[str, str]]) -> None:
        """Set the items' ``(state, error)`` by custom_id and mark the batch collected."""
        with self._lock:
            self._conn.execute("BEGIN")
            self._conn.executemany(
                "UPDATE batch_items SET state = ?, error = ? WHERE batch_id = ? AND custom_id = ?",
                [(s, e, batch_id, cid) for cid, (s, e) in states.items()])
            self._conn.execute("UPDATE batches SET collected = 1, updated = ? WHERE batch_id = ?",
                               (time.time(), batch_id))
            self._conn.execute("COMMIT")

    def _keys_where(self, keys: Iterable[str], sql: str) -> list[tuple[Any, ...]]:
        keys = list(keys)
        out: list[tuple[Any, ...]] = []
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            out += self._rows(sql.format(marks=",".join("?" * len(chunk))), chunk)
        return out

    def pending_for(self, keys: Iterable[str]) -> dict[str, str]:
        """``key -> batch_id`` for the keys waiting in a batch not collected yet."""
        rows = self._keys_where(keys, (
            "SELECT i.key, i.batch_id FROM batch_items i JOIN batches b USING (batch_id) "
            "WHERE b.collected = 0 AND i.key IN ({marks}) ORDER BY b.created"))
        return {key: batch_id for key, batch_id in rows}

    def succeeded_keys(self, keys: Iterable[str]) -> set[str]:
        """The keys whose reply came from a batch (priced at the batch rate)."""
        rows = self._keys_where(keys, "SELECT key FROM batch_items WHERE state = 'succeeded' "
                                      "AND key IN ({marks})")
        return {r[0] for r in rows}

    def items(self, batch_id: str) -> dict[str, str]:
        """``custom_id -> key`` of a batch."""
        return dict(self._rows("SELECT custom_id, key FROM batch_items WHERE batch_id = ?",
                               (batch_id,)))

    def item_states(self, batch_id: str) -> pd.DataFrame:
        """The items of a batch: ``custom_id``, ``key``, ``state``, ``error``."""
        rows = self._rows("SELECT custom_id, key, state, error FROM batch_items "
                          "WHERE batch_id = ? ORDER BY rowid", (batch_id,))
        return pd.DataFrame(rows, columns=["custom_id", "key", "state", "error"])

    def batches(self, *, open_only: bool = False) -> list[StoredBatch]:
        """Stored batches, newest first; ``open_only`` keeps those not collected yet."""
        where = " WHERE collected = 0" if open_only else ""
        rows = self._rows(f"SELECT {', '.join(BATCH_COLUMNS)} FROM batches{where} "
                          "ORDER BY created DESC, rowid DESC")
        return [self._stored(r) for r in rows]

    def get(self, batch_id: str) -> StoredBatch | None:
        """One stored batch, or ``None``."""
        rows = self._rows(f"SELECT {', '.join(BATCH_COLUMNS)} FROM batches WHERE batch_id = ?",
                          (batch_id,))
        return self._stored(rows[0]) if rows else None

    @staticmethod
    def _stored(row: Sequence[Any]) -> StoredBatch:
        return StoredBatch(*row[:6], bool(row[6]), bool(row[7]), *row[8:])

    def table(self, *, open_only: bool = False) -> pd.DataFrame:
        """:meth:`batches` as a table with the columns :data:`BATCH_COLUMNS`."""
        rows = [[getattr(b, c) for c in BATCH_COLUMNS] for b in self.batches(open_only=open_only)]
        table = pd.DataFrame(rows, columns=list(BATCH_COLUMNS))
        for col in ("created", "updated"):
            table[col] = pd.to_datetime(table[col], unit="s", utc=True)
        return table
