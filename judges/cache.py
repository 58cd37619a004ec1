"""A SQLite cache of LLM replies, so no request is paid for twice.

The key (:func:`cache_key`) is a SHA-256 of what decides a reply: the provider's
identity (provider name, model, endpoint), the output-affecting parameters it actually
sends, extra key parts (a rubric id and version) and the filled messages. Timeouts,
retry counts, concurrency and API keys are not part of it.

Each reply is committed the moment it arrives (WAL journal, ``synchronous=NORMAL``:
durable when the process is killed), so an interrupted run resumes without losing or
re-paying anything. Only replies are stored, never errors, so a failed request is tried
again next time. Nothing secret is stored: keys are never part of a request.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from judges.request import Reply

#: Bump when the key recipe changes, so old entries are not misread.
KEY_FORMAT = 1
#: Where the app and the CLI keep the cache unless told otherwise.
DEFAULT_CACHE_ENV = "BIAS_WORKBENCH_JUDGE_CACHE"


def default_cache_path() -> Path:
    """``$BIAS_WORKBENCH_JUDGE_CACHE`` or ``~/.cache/bias-workbench/judge-cache.sqlite``."""
    env = os.environ.get(DEFAULT_CACHE_ENV)
    if env:
        return Path(env)
    return Path.home() / ".cache" / "bias-workbench" / "judge-cache.sqlite"


def cache_key(identity: Mapping[str, Any], params: Mapping[str, Any],
              key_parts: Mapping[str, Any], messages: Sequence[tuple[str, str]]) -> str:
    """The hex SHA-256 key of one request (see the module docstring)."""
    payload = {
        "format": KEY_FORMAT,
        "identity": dict(identity),
        "params": {k: params[k] for k in sorted(params) if params[k] is not None},
        "parts": dict(key_parts),
        "messages": [list(m) for m in messages],
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SQLiteFile:
    """One SQLite file in WAL mode (``synchronous=NORMAL``), shared by threads and processes.

    The base of :class:`ReplyCache` and :class:`judges.batch_store.BatchStore` (which keep
    their tables in the same file): creates the folder, opens the connection in autocommit
    mode, runs the ``schema`` statements; one lock guards the connection. Use as a context
    manager or call :meth:`close`.
    """

    def __init__(self, path: str | Path, *schema: str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False,
                                     isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        for statement in schema:
            self._conn.execute(statement)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ReplyCache(SQLiteFile):
    """Replies keyed by :func:`cache_key`, in one SQLite file.

    Safe to share between threads (one lock) and between processes (SQLite locking,
    WAL). Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path: str | Path):
        super().__init__(
            path,
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT NOT NULL, "
            "provider TEXT, model TEXT, created REAL)")

    def get(self, key: str) -> Reply | None:
        """The stored reply, or ``None``."""
        with self._lock:
            row = self._conn.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else Reply.from_dict(json.loads(row[0]))

    def put(self, key: str, reply: Reply, *, provider: str = "", model: str = "") -> None:
        """Store a reply now (one committed transaction)."""
        text = json.dumps(reply.to_dict(), ensure_ascii=False)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO replies (key, reply, provider, model, created) "
                "VALUES (?, ?, ?, ?, ?)", (key, text, provider, model, time.time()))

    def contains(self, keys: Iterable[str]) -> set[str]:
        """The subset of ``keys`` that are stored."""
        keys = list(keys)
        found: set[str] = set()
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(f"SELECT key FROM replies WHERE key IN ({marks})", chunk)
                found.update(r[0] for r in rows)
        return found

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0])
