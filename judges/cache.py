"""A SQLite cache of LLM replies, so no request is paid for twice.

The key (:func:`cache_key`) is a SHA-256 of what decides a reply: the provider's
identity (provider name, model, endpoint), the output-affecting parameters it actually
sends, extra key parts (a rubric id and version) and the filled messages. Timeouts,
retry counts, concurrency and API keys are not part of it.

Each reply is committed the moment it arrives (WAL journal, ``synchronous=NORMAL``:
durable when the process is killed), so an interrupted run resumes without losing or
re-paying anything. Only replies are stored, never errors, so a failed request is tried
again next time. Nothing secret is stored: keys are never part of a request.

Opening checks the file (``PRAGMA quick_check`` and the expected columns): a corrupt or
foreign file, or a folder, raises :class:`~judges.errors.CacheError` naming it, and
:func:`move_aside` renames it so a new cache starts. A stored row that cannot be read
(invalid JSON) counts as missing: the request is asked again and the row replaced.

Table ``claims`` (``key``, ``owner``, ``expires``) marks requests in flight, so a second run
on the same file waits for the reply instead of paying for it again
(:meth:`ReplyCache.claim`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from judges.errors import CacheError
from judges.request import Reply

__all__ = [
    "DEFAULT_CACHE_ENV", "KEY_FORMAT", "ReplyCache", "SQLiteFile", "cache_key", "claim_owner",
    "default_cache_path", "move_aside", "open_cache", "optional_cache",
]


#: Bump when the key recipe changes, so old entries are not misread.
KEY_FORMAT = 1
#: Where the app and the CLI keep the cache unless told otherwise.
DEFAULT_CACHE_ENV = "BIAS_WORKBENCH_JUDGE_CACHE"


def default_cache_path() -> Path:
    """``$BIAS_WORKBENCH_JUDGE_CACHE`` or ``~/.cache/bias-workbench/judge-cache.sqlite``."""
    env = os.environ.get(DEFAULT_CACHE_ENV)
    if env:
        return Path(env)
    return _default_folder() / "judge-cache.sqlite"


def _default_folder() -> Path:
    return Path.home() / ".cache" / "bias-workbench"


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


def _private_file(path: Path) -> None:
    """Make ``path``'s missing folders ``0700`` and the file ``0600`` (created empty if
    missing; an existing file of this user is set to ``0600``), like the session folders:
    the cache holds every visitor's prompts and replies and the batch records (issue 43).
    SQLite gives its ``-wal`` and ``-shm`` files the database file's permissions."""
    missing = [p for p in [path.parent, *path.parent.parents] if not p.exists()]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
    if path.parent == _default_folder() and path.parent.stat().st_uid == os.getuid():
        os.chmod(path.parent, 0o700)  # the built-in folder is this user's alone
    # Never open (and close) a descriptor of a file SQLite may hold: closing any descriptor
    # of a file drops the process's POSIX locks on it, SQLite's included. A missing file is
    # created (no connection can have it open yet); existing ones are chmod-ed by path.
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    for name in ("", "-wal", "-shm"):  # an older version's wider permissions
        with contextlib.suppress(OSError):
            file = path.with_name(path.name + name)
            if file.stat().st_uid == os.getuid():
                os.chmod(file, 0o600)


class SQLiteFile:
    """One SQLite file in WAL mode (``synchronous=NORMAL``), shared by threads and processes.

    The base of :class:`ReplyCache` and :class:`judges.batch_store.BatchStore` (which keep
    their tables in the same file): creates the folder, opens the connection in autocommit
    mode, runs the ``schema`` statements; one lock guards the connection. Use as a context
    manager or call :meth:`close`.
    """

    #: ``table -> columns`` an existing file must have (checked on opening).
    expected: dict[str, tuple[str, ...]] = {}

    def __init__(self, path: str | Path, *schema: str):
        self.path = Path(path)
        self._lock = threading.Lock()
        if self.path.exists() and not self.path.is_file():
            raise CacheError(_unusable(self.path, "it is not a regular file"),
                             path=str(self.path))
        try:
            _private_file(self.path)
        except OSError as exc:
            raise CacheError(f"Cannot create the folder of the reply cache {self.path}: "
                             f"{exc.strerror or exc}.", path=str(self.path)) from None
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            self._conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False,
                                         isolation_level=None)
        except sqlite3.Error as exc:
            raise CacheError(_unusable(self.path, str(exc)), path=str(self.path)) from None
        # Two runs opening a new file at once race for the switch to WAL, which SQLite
        # answers with "database is locked" at once (its busy timeout does not cover it):
        # that is a wait, not a broken file, so it is retried for up to 30 s.
        deadline = time.monotonic() + 30
        while True:
            try:
                if existed:
                    self._check()
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                for statement in schema:
                    self._conn.execute(statement)
                break
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if busy and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                self._conn.close()
                reason = ("another run kept it locked for 30 s; try again when it is done"
                          if busy else str(exc))
                if busy:
                    raise CacheError(f"The reply cache {self.path} is busy: {reason}.",
                                     path=str(self.path)) from None
                raise CacheError(_unusable(self.path, reason), path=str(self.path)) from None
            except sqlite3.Error as exc:
                self._conn.close()
                raise CacheError(_unusable(self.path, str(exc)), path=str(self.path)) from None
            except CacheError:
                self._conn.close()
                raise

    def _check(self) -> None:
        """Integrity and schema of an existing file (raises :class:`CacheError`)."""
        result = self._conn.execute("PRAGMA quick_check").fetchone()
        if result is None or result[0] != "ok":
            raise CacheError(_unusable(self.path, f"integrity check failed ({result[0]})"
                                       if result else "integrity check failed"),
                             path=str(self.path))
        for table, needed in self.expected.items():
            have = {r[1] for r in self._conn.execute(f"PRAGMA table_info({table})")}
            if have and not set(needed) <= have:
                raise CacheError(_unusable(
                    self.path, f"its table {table!r} has columns {', '.join(sorted(have))}, "
                    f"not {', '.join(needed)} (another program's or version's file)"),
                    path=str(self.path))

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def claim_owner() -> str:
    """A claim owner id: ``host:pid:random`` (unique per run)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _owner_alive(owner: str) -> bool:
    """Whether a claim's owner may still be running (unknown hosts count as alive)."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _unusable(path: Path, why: str) -> str:
    return (f"The reply cache {path} cannot be used: {why}. Move it aside and start a new "
            "cache (CLI: --reset-cache; pages: 'Move the cache aside'), or choose another "
            "file (--cache PATH).")


def move_aside(path: str | Path) -> Path | None:
    """Rename a cache file (and its ``-wal`` / ``-shm`` files) to
    ``<name>.unusable-<UTC time>`` so a new cache can start; returns the new name, or
    ``None`` if there was no file. Nothing is deleted."""
    path = Path(path)
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = path.with_name(f"{path.name}.unusable-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.unusable-{stamp}-{n}")
    path.rename(target)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(target.with_name(target.name + suffix))
    return target


class ReplyCache(SQLiteFile):
    """Replies keyed by :func:`cache_key`, in one SQLite file.

    Safe to share between threads (one lock) and between processes (SQLite locking,
    WAL). Use as a context manager or call :meth:`close`.

    Raises
    ------
    CacheError
        The file is corrupt, another program's database, of another schema, or a folder.
    """

    expected = {"replies": ("key", "reply")}

    def __init__(self, path: str | Path):
        super().__init__(
            path,
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT NOT NULL, "
            "provider TEXT, model TEXT, created REAL)",
            "CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, "
            "expires REAL NOT NULL)")

    def get(self, key: str) -> Reply | None:
        """The stored reply, or ``None`` (also for a row that cannot be read: it is asked
        again and replaced)."""
        with self._lock:
            row = self._conn.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            data = json.loads(row[0])
            return Reply.from_dict(data) if isinstance(data, dict) else None
        except (TypeError, ValueError):
            return None

    def claim(self, key: str, owner: str, ttl: float) -> bool:
        """Mark ``key`` as in flight for ``owner`` for ``ttl`` seconds; ``False`` if another
        owner holds a live claim (then wait for its reply, see
        :func:`judges.runner.run_stream`). A claim expires after its ``ttl``, or at once when
        its owner (:func:`claim_owner`) is a process on this machine that no longer runs (a
        killed run leaves no claim behind that blocks the next one)."""
        now = time.time()
        with self._lock:
            # One statement, one transaction: take the key if free, expired or ours.
            taken = self._conn.execute(
                "INSERT INTO claims (key, owner, expires) VALUES (?, ?, ?) ON CONFLICT(key) "
                "DO UPDATE SET owner = excluded.owner, expires = excluded.expires "
                "WHERE claims.expires < ? OR claims.owner = excluded.owner",
                (key, owner, now + ttl, now)).rowcount
            if taken:
                return True
            row = self._conn.execute("SELECT owner FROM claims WHERE key = ?", (key,)).fetchone()
            if row is None or _owner_alive(row[0]):
                return row is None and self._conn.execute(
                    "INSERT OR IGNORE INTO claims (key, owner, expires) VALUES (?, ?, ?)",
                    (key, owner, now + ttl)).rowcount == 1
            # The holder was a process on this machine that is gone: take the claim over.
            return self._conn.execute("UPDATE claims SET owner = ?, expires = ? WHERE key = ? "
                                      "AND owner = ?", (owner, now + ttl, key, row[0]),
                                      ).rowcount == 1

    def release(self, key: str, owner: str) -> None:
        """Drop ``owner``'s claim on ``key`` (after its reply is stored, or it failed)."""
        with self._lock:
            self._conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))

    def put(self, key: str, reply: Reply, *, provider: str = "", model: str = "",
            release: str | None = None) -> None:
        """Store a reply now (one committed transaction); ``release`` also drops that
        owner's claim on the key in the same transaction."""
        text = json.dumps(reply.to_dict(), ensure_ascii=False)
        with self._lock:
            if release is None:
                self._conn.execute(
                    "INSERT OR REPLACE INTO replies (key, reply, provider, model, created) "
                    "VALUES (?, ?, ?, ?, ?)", (key, text, provider, model, time.time()))
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    "INSERT OR REPLACE INTO replies (key, reply, provider, model, created) "
                    "VALUES (?, ?, ?, ?, ?)", (key, text, provider, model, time.time()))
                self._conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?",
                                   (key, release))
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

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


def open_cache(path: str | Path, *, reset: bool = False) -> tuple[ReplyCache, Path | None]:
    """Open the reply cache at ``path``; with ``reset``, an unusable file is first moved
    aside (:func:`move_aside`) and a new cache starts. Returns the cache and where the old
    file went (``None`` if nothing was moved).

    Raises
    ------
    CacheError
        The file is unusable and ``reset`` is off (the message says how to reset).
    """
    try:
        return ReplyCache(path), None
    except CacheError:
        if not reset:
            raise
    moved = move_aside(path)
    return ReplyCache(path), moved


@contextlib.contextmanager
def optional_cache(path: str | Path | None) -> Iterator[ReplyCache | None]:
    """The reply cache at ``path`` for a ``with`` block, closed at its end (``None`` when
    there is no path: a run without a cache)."""
    if not path:
        yield None
        return
    with ReplyCache(path) as cache:
        yield cache
