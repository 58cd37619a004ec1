"""Session folders on the server: ids it signs, owners, locks, caps (no Streamlit here).

:mod:`ui.session` is the Streamlit side (the URL, ``st.session_state``, messages); this
module is the storage it calls, testable with plain threads. Decisions: ``docs/sessions.md``;
limits and their environment variables: ``docs/limits.md``.

Layout of the state folder (created ``0700`` by this process's user; refused when it
exists and belongs to another user)::

    secret.key             32 random bytes, 0600: signs session ids and owner names
    .lock                  lock of the whole folder (creation, eviction)
    <sid>/session.yaml     name, token, design, settings, owner, rev, sample, and
                           ``table``: the file name of its table (0600)
    <sid>/table-<hex>.parquet  the table (0600), named once and never replaced: a save
                           writes a new one, then switches ``session.yaml`` to it in one
                           rename, then removes the old one; absent for a bundled sample
                           (``table.parquet`` in folders of older versions)
    <sid>/.lock            the session's lock

The one rename of ``session.yaml`` is the switch (issue 43): a full disk, a failed write or
a kill at any point leaves the old record naming the old table, or the new record naming
the new one, never a mix. Caps are per owner first (its own oldest sessions evicted), then
global (the writer's own sessions first, then everyone's least recently used).

A session id is 24 random URL-safe characters followed by 22 characters of an HMAC-SHA256
of them under the secret: only ids this server issued are ever adopted.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import hashlib
import hmac
import os
import re
import secrets
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from analysis.errors import OutputError
from analysis.safe_write import write_files

__all__ = [
    "LIMIT_DEFAULTS", "Limits", "META", "STATE_DIR_ENV", "SaveError", "SessionStore",
    "SessionStoreError", "StateDirError", "Stored", "TABLE", "default_state_dir", "limits",
    "start_pruner",
]


STATE_DIR_ENV = "BIAS_WORKBENCH_STATE_DIR"
#: Limits: environment variable -> default (documented in ``docs/limits.md``).
LIMIT_DEFAULTS: dict[str, float] = {
    "BIAS_WORKBENCH_SESSION_MAX_TABLE_MB": 200,
    "BIAS_WORKBENCH_SESSION_MAX_TOTAL_MB": 2048,
    "BIAS_WORKBENCH_SESSION_MAX_COUNT": 500,
    "BIAS_WORKBENCH_SESSION_MAX_PER_OWNER": 50,
    "BIAS_WORKBENCH_SESSION_MAX_OWNER_MB": 512,
    "BIAS_WORKBENCH_SESSION_MAX_AGE_DAYS": 7,
    "BIAS_WORKBENCH_SESSION_PRUNE_SECONDS": 300,
}
_RANDOM_CHARS = 24
_MAC_CHARS = 22
_SID = re.compile(rf"^[A-Za-z0-9_-]{{{_RANDOM_CHARS + _MAC_CHARS}}}$")
_OLD_SID = re.compile(r"^[A-Za-z0-9_-]{24}$")  # ids before they were signed
META = "session.yaml"
TABLE = "table.parquet"  # the table's name in folders of versions before issue 43
_TABLE_NAME = re.compile(r"^table(-[0-9a-f]{32})?\.parquet$")
_OWNER_LINE = re.compile(r"^owner: '?([A-Za-z0-9_-]+)'?$", re.MULTILINE)


class SessionStoreError(Exception):
    """Session storage cannot be used or written; ``str()`` is a message for the user."""


class StateDirError(SessionStoreError):
    """The state folder is unusable (owned by another user, not a folder, not writable)."""


class SaveError(SessionStoreError):
    """A save failed; the session's previous state is kept on disk."""


@dataclass(frozen=True)
class Limits:
    """The storage limits in force (see :func:`limits`)."""

    max_table_bytes: int
    max_total_bytes: int
    max_count: int
    max_age_seconds: float
    prune_seconds: float
    max_per_owner: int = 50
    max_owner_bytes: int = 512 * 1024 * 1024


def limits() -> Limits:
    """The limits from the environment (:data:`LIMIT_DEFAULTS` where unset or invalid)."""
    def get(name: str) -> float:
        try:
            value = float(os.environ.get(name, ""))
            return value if value > 0 else LIMIT_DEFAULTS[name]
        except ValueError:
            return LIMIT_DEFAULTS[name]
    mb = 1024 * 1024
    return Limits(int(get("BIAS_WORKBENCH_SESSION_MAX_TABLE_MB") * mb),
                  int(get("BIAS_WORKBENCH_SESSION_MAX_TOTAL_MB") * mb),
                  int(get("BIAS_WORKBENCH_SESSION_MAX_COUNT")),
                  get("BIAS_WORKBENCH_SESSION_MAX_AGE_DAYS") * 86400,
                  get("BIAS_WORKBENCH_SESSION_PRUNE_SECONDS"),
                  int(get("BIAS_WORKBENCH_SESSION_MAX_PER_OWNER")),
                  int(get("BIAS_WORKBENCH_SESSION_MAX_OWNER_MB") * mb))


def default_state_dir() -> Path:
    """``$BIAS_WORKBENCH_STATE_DIR``, else ``<tmp>/bias-workbench-sessions-<uid>``."""
    env = os.environ.get(STATE_DIR_ENV)
    return Path(env) if env else Path(tempfile.gettempdir()) / \
        f"bias-workbench-sessions-{os.getuid()}"


@dataclass(frozen=True)
class Stored:
    """A session read from disk: its metadata and the path of its table (None: a sample)."""

    sid: str
    meta: dict[str, Any]
    table: Path | None


@contextlib.contextmanager
def _flock(path: Path, *, blocking: bool = True) -> Iterator[bool]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock


def _save_message(exc: BaseException) -> str:
    if isinstance(exc, OutputError) and isinstance(exc.__context__, OSError):
        exc = exc.__context__  # the atomic writer's typed error: the OSError behind it
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return ("The server's disk is full: this change was not saved for a reload. "
                "The session's previous state is kept; free space or ask the server's "
                "administrator.")
    return (f"This change could not be saved for a reload ({type(exc).__name__}); the "
            "session's previous state is kept.")


class SessionStore:
    """The session folders under ``root`` (see the module docstring).

    Parameters
    ----------
    root
        The state folder; created ``0700`` if missing. :class:`StateDirError` when it is
        not a folder or belongs to another user.
    """

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_state_dir()
        self._check_root()
        self._secret = self._load_secret()

    # -- the folder and its secret -------------------------------------------------------
    def _check_root(self) -> None:
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = self.root.lstat()
        except OSError as exc:
            raise StateDirError(f"The session folder {self.root} cannot be created "
                                f"({exc.strerror}); set {STATE_DIR_ENV} to a folder this "
                                "server's user can write.") from exc
        if not stat.S_ISDIR(info.st_mode):
            raise StateDirError(f"The session path {self.root} is not a folder (a link or "
                                f"a file); set {STATE_DIR_ENV} to a folder of this user.")
        if info.st_uid != os.getuid():
            raise StateDirError(
                f"The session folder {self.root} belongs to another user (uid {info.st_uid}, "
                f"this server runs as uid {os.getuid()}): its sessions are not used. Set "
                f"{STATE_DIR_ENV} to a folder of this user.")
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(self.root, 0o700)

    def _load_secret(self) -> bytes:
        """The secret, made once: written whole to a temporary file, then hard-linked to
        its name (a concurrent first start reads either nothing or all of it)."""
        path = self.root / "secret.key"
        if not path.exists():
            fd, tmp = tempfile.mkstemp(prefix=".secret.", dir=self.root)  # 0600
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(secrets.token_bytes(32))
                with contextlib.suppress(FileExistsError):
                    os.link(tmp, path)
            finally:
                os.unlink(tmp)
        data = path.read_bytes()
        if len(data) < 32:
            raise StateDirError(f"The session secret {path} is damaged; remove it (every "
                                "existing session link then stops working).")
        return data

    def _mac(self, text: str, n: int) -> str:
        digest = hmac.new(self._secret, text.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")[:n]

    # -- ids and owners --------------------------------------------------------------------
    def new_id(self) -> str:
        """A fresh session id signed by this server."""
        rand = secrets.token_urlsafe(18)[:_RANDOM_CHARS]
        return rand + self._mac("sid:" + rand, _MAC_CHARS)

    def issued(self, sid: object) -> bool:
        """Whether ``sid`` is an id this server issued (checked before any path is built)."""
        if not isinstance(sid, str) or not _SID.match(sid):
            return False
        rand, mac = sid[:_RANDOM_CHARS], sid[_RANDOM_CHARS:]
        return hmac.compare_digest(mac, self._mac("sid:" + rand, _MAC_CHARS))

    def owner_tag(self, owner_key: str) -> str:
        """What is written as a session's owner: a keyed hash of the owner's key (a user
        name or a browser's token never reaches the disk)."""
        return self._mac("owner:" + owner_key, 32)

    def folder(self, sid: str) -> Path:
        if not self.issued(sid):
            raise ValueError("not a session id this server issued")
        return self.root / sid

    # -- reading -------------------------------------------------------------------------
    def load(self, sid: str) -> Stored | None:
        """The stored session, or None when it does not exist (expired, evicted)."""
        folder = self.folder(sid)
        try:
            meta = yaml.safe_load((folder / META).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        if not isinstance(meta, dict):
            raise SessionStoreError("The session's record is damaged.")
        table = None if meta.get("sample") else _table_of(folder, meta)
        if table is not None and not table.is_file():
            return None
        with contextlib.suppress(OSError):
            os.utime(folder)  # least recently used: a read counts as a use
        return Stored(sid, meta, table)

    def owned_by(self, owner_key: str) -> list[dict[str, Any]]:
        """The sessions of one owner, most recently used first: ``sid``, ``name``,
        ``used`` (POSIX time)."""
        tag = self.owner_tag(owner_key)
        out = []
        for sid, folder, used in self._folders():
            meta = self._read_meta(folder)
            if meta is not None and meta.get("owner") == tag:
                out.append({"sid": sid, "name": str(meta.get("name", "")), "used": used})
        return sorted(out, key=lambda r: -r["used"])

    # -- writing -------------------------------------------------------------------------
    def save(self, sid: str | None, meta: dict[str, Any], frame: pd.DataFrame | None, *,
             owner_key: str, base_rev: int | None, write_table: bool,
             table_from: Path | None = None) -> tuple[str, int]:
        """Write a session; returns ``(sid, rev)`` of what was written.

        ``sid`` None starts a new session. ``base_rev`` is the revision this writer last
        read or wrote (None: it never did): when the session on disk has moved on (another
        tab wrote it) or belongs to another owner, the write goes to a new session instead
        (nothing of either is lost). ``write_table`` writes ``frame`` as the table (or
        hard-links ``table_from``); otherwise the session keeps its table (or ``meta`` names
        a sample). Writes go to unique temporary names renamed into place under the
        session's lock: a failure removes only its temporary file and raises
        :class:`SaveError`, the session's previous files stay.
        """
        try:
            return self._save(sid, meta, frame, owner_key=owner_key, base_rev=base_rev,
                              write_table=write_table, table_from=table_from)
        except OSError as exc:  # a lock or a folder could not be made: nothing was switched
            raise SaveError(_save_message(exc)) from exc

    def _save(self, sid: str | None, meta: dict[str, Any], frame: pd.DataFrame | None, *,
              owner_key: str, base_rev: int | None, write_table: bool,
              table_from: Path | None) -> tuple[str, int]:
        lim = limits()
        tag = self.owner_tag(owner_key)
        if sid is not None and self.issued(sid):
            folder = self.root / sid
            try:
                with _flock(self.root / ".lock"):
                    exists = folder.is_dir()
                    if not exists:
                        folder.mkdir(mode=0o700)
                with _flock(folder / ".lock"):
                    current = self._read_meta(folder) if exists else None
                    if current is None or (current.get("owner") == tag and
                                           current.get("rev") == base_rev):
                        rev = (current or {}).get("rev", 0) + 1
                        # evicted meanwhile (current is None): the writer's frame again
                        self._write(folder, meta, frame, tag, rev,
                                    write_table or (current is None and frame is not None),
                                    table_from, current=current, lim=lim)
                        self._evict_after_save(sid, lim, tag)
                        return sid, rev
            except FileNotFoundError:
                pass  # evicted meanwhile: a new session below
            # moved on meanwhile, or another owner's: a new session keeps this writer's work
            if frame is not None and not meta.get("sample"):
                write_table, table_from = True, None
            elif not write_table and table_from is None and not meta.get("sample"):
                table_from = _table_of(folder, self._read_meta(folder) or {})
        new = self.new_id()
        folder = self.root / new
        with _flock(self.root / ".lock"):
            folder.mkdir(mode=0o700)
        try:
            with _flock(folder / ".lock"):
                self._write(folder, meta, frame, tag, 1, write_table or table_from is not None,
                            table_from, current=None, lim=lim)
        except SaveError:
            shutil.rmtree(folder, ignore_errors=True)  # a new folder only: nothing was in it
            raise
        self._evict_after_save(new, lim, tag)
        return new, 1

    def _evict_after_save(self, sid: str, lim: Limits, tag: str) -> None:
        """The caps after a save that is done: a failure here is not the save's (the
        pruning timer enforces the caps again)."""
        with contextlib.suppress(OSError):
            self._enforce_caps(keep={sid}, lim=lim, owner=tag)

    def fork(self, source: Stored, owner_key: str) -> str:
        """A copy of ``source`` owned by ``owner_key`` (the table hard-linked, never
        rewritten in place, so the copy and the original never affect each other)."""
        meta = {k: v for k, v in source.meta.items() if k not in ("owner", "rev")}
        sid, _ = self.save(None, meta, None, owner_key=owner_key, base_rev=None,
                           write_table=False, table_from=source.table)
        return sid

    @staticmethod
    def _read_meta(folder: Path) -> dict[str, Any] | None:
        try:
            meta = yaml.safe_load((folder / META).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            return None
        return meta if isinstance(meta, dict) else None

    def _write(self, folder: Path, meta: dict[str, Any], frame: pd.DataFrame | None,
               tag: str, rev: int, write_table: bool, table_from: Path | None, *,
               current: dict[str, Any] | None, lim: Limits) -> None:
        """Write the new table under a new name (if any), then the record naming it in one
        rename (the switch), then remove the table the old record named. A failure before
        the switch leaves the old record and table; the new table file is removed."""
        old_table = None if current is None or current.get("sample") else \
            _table_of(folder, current).name
        new_table = None
        try:
            if meta.get("sample"):
                pass  # a bundled sample is named, not copied
            elif table_from is not None:
                new_table = _new_table_name()
                self._place(folder, new_table, lambda tmp: self._link(table_from, tmp))
            elif write_table and frame is not None:
                def write(tmp: Path) -> None:
                    frame.to_parquet(tmp, index=False)
                    if tmp.stat().st_size > lim.max_table_bytes:
                        raise SaveError(
                            f"The table takes more than {lim.max_table_bytes // 2**20} MB as "
                            "Parquet, the most a session keeps for a reload "
                            "(BIAS_WORKBENCH_SESSION_MAX_TABLE_MB); it stays loaded in this "
                            "tab only.")
                new_table = _new_table_name()
                self._place(folder, new_table, write)
            elif old_table is None:
                raise SaveError("This session has no table to keep.")
            table = new_table or (None if meta.get("sample") else old_table)
            record = {**meta, "owner": tag, "rev": rev}
            record.pop("table", None)
            if table is not None:
                record["table"] = table
            text = yaml.safe_dump(record, sort_keys=True, allow_unicode=True)
            self._place(folder, META, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        except BaseException as exc:
            on_disk = self._read_meta(folder) or {}
            if new_table is None or on_disk.get("table") != new_table or \
                    on_disk.get("rev") != rev:
                if new_table is not None:  # not named by any record: remove it
                    with contextlib.suppress(OSError):
                        (folder / new_table).unlink()
                if isinstance(exc, SaveError) or not isinstance(exc, Exception):
                    raise
                raise SaveError(_save_message(exc)) from exc
            if not isinstance(exc, Exception):
                raise
            # the switch happened (what failed came after the rename, e.g. syncing the
            # folder): the new session is in place, so the save is done
        if old_table is not None and old_table != table:
            with contextlib.suppress(OSError):  # a leftover is removed by prune()
                (folder / old_table).unlink()

    @staticmethod
    def _link(source: Path, tmp: Path) -> None:
        tmp.unlink()
        try:
            os.link(source, tmp)
        except OSError:
            shutil.copyfile(source, tmp)
            os.chmod(tmp, 0o600)

    @staticmethod
    def _place(folder: Path, name: str, write: Callable[[Path], None]) -> None:
        """``write`` a private (0600) file ``name`` in ``folder`` atomically
        (:func:`analysis.safe_write.write_files`: a temporary file, synced, renamed)."""
        write_files({folder / name: write}, mode=0o600)

    # -- caps ----------------------------------------------------------------------------
    def _folders(self) -> list[tuple[str, Path, float]]:
        out = []
        with os.scandir(self.root) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and self.issued(entry.name):
                    with contextlib.suppress(OSError):
                        out.append((entry.name, Path(entry.path), entry.stat().st_mtime))
        return out

    def usage(self) -> tuple[int, int]:
        """``(number of sessions, bytes on disk)`` (hard-linked tables counted once)."""
        folders = self._folders()
        return len(folders), self._bytes([f for _, f, _ in folders])

    @staticmethod
    def _bytes(folders: list[Path]) -> int:
        seen: set[tuple[int, int]] = set()
        total = 0
        for folder in folders:
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        info = entry.stat(follow_symlinks=False)
                        if (info.st_dev, info.st_ino) not in seen:
                            seen.add((info.st_dev, info.st_ino))
                            total += info.st_size
        return total

    def _remove(self, folder: Path) -> bool:
        """Remove a session folder unless a writer holds its lock now."""
        try:
            with _flock(folder / ".lock", blocking=False) as got:
                if not got:
                    return False
                shutil.rmtree(folder, ignore_errors=True)
                return True
        except OSError:
            return False

    def _owners(self, folders: list[tuple[str, Path, float]]) -> dict[str, str | None]:
        """The owner tag of each session (``sid -> tag``; None when unreadable)."""
        out: dict[str, str | None] = {}
        for sid, folder, _ in folders:
            try:
                text = (folder / META).read_text(encoding="utf-8")
            except OSError:
                out[sid] = None
                continue
            match = _OWNER_LINE.search(text)
            out[sid] = match.group(1) if match else None
        return out

    def _enforce_caps(self, keep: set[str], lim: Limits | None = None,
                      owner: str | None = None) -> int:
        """Evict sessions (never those in ``keep``, nor one whose lock is held) until the
        caps hold; returns how many were removed.

        First the writer's (``owner``, a tag) own caps: its least recently used sessions
        until it has at most ``max_per_owner`` sessions and ``max_owner_bytes``. Then the
        global caps (count, total bytes) as a backstop: the writer's own sessions first,
        then everyone's least recently used. One owner cannot evict another's sessions
        while it has sessions of its own to give up.
        """
        lim = lim or limits()
        removed = 0
        with _flock(self.root / ".lock"):
            folders = sorted(self._folders(), key=lambda t: t[2])
            if owner is not None:
                owners = self._owners(folders)
                own = [(sid, f) for sid, f, _ in folders if owners.get(sid) == owner]
                removed = self._evict(own, keep, lim.max_per_owner, lim.max_owner_bytes)
                folders = [t for t in folders if t[1].exists()]
                folders.sort(key=lambda t: owners.get(t[0]) != owner)  # stable: still by use
            removed += self._evict([(sid, f) for sid, f, _ in folders], keep, lim.max_count,
                                   lim.max_total_bytes)
        return removed

    def _evict(self, order: list[tuple[str, Path]], keep: set[str], max_count: int,
               max_bytes: int) -> int:
        """Remove the sessions of ``order`` in turn (never those in ``keep``, nor one whose
        lock is held) until at most ``max_count`` of them and ``max_bytes`` are left;
        returns how many were removed."""
        live = [folder for _, folder in order]
        removed = 0
        for sid, folder in order:
            if len(live) <= max_count and self._bytes(live) <= max_bytes:
                break
            if sid in keep or not self._remove(folder):
                continue
            live.remove(folder)
            removed += 1
        return removed

    def prune(self) -> int:
        """Remove sessions unused for longer than the age limit, then enforce the caps;
        returns how many were removed (the timer of :func:`start_pruner` calls this)."""
        lim = limits()
        cutoff = time.time() - lim.max_age_seconds
        removed = sum(self._remove(folder) for _, folder, used in self._folders()
                      if used < cutoff)
        with os.scandir(self.root) as entries:  # folders of the unsigned ids of old versions
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False) and _OLD_SID.match(entry.name) \
                            and os.path.isfile(os.path.join(entry.path, META)) and \
                            entry.stat().st_mtime < cutoff:
                        shutil.rmtree(entry.path, ignore_errors=True)
        for entry in self.root.glob("*/.*.tmp"):  # left by a process killed mid-write
            with contextlib.suppress(OSError):
                if entry.stat().st_mtime < time.time() - 3600:
                    entry.unlink()
        for _, folder, _ in self._folders():  # tables no record names (a kill mid-save)
            meta = self._read_meta(folder)
            named = None if meta is None or meta.get("sample") else _table_of(folder, meta)
            for entry in folder.glob("table*.parquet"):
                with contextlib.suppress(OSError):
                    if meta is not None and entry != named and \
                            entry.stat().st_mtime < time.time() - 3600:
                        entry.unlink()
        return removed + self._enforce_caps(keep=set(), lim=lim)


def _new_table_name() -> str:
    return f"table-{secrets.token_hex(16)}.parquet"


def _table_of(folder: Path, meta: dict[str, Any]) -> Path:
    """The table file a record names (``table.parquet`` for records of older versions, or
    a name that is not one of ours)."""
    name = meta.get("table")
    return folder / (name if isinstance(name, str) and _TABLE_NAME.match(name) else TABLE)


_pruner_lock = threading.Lock()
_pruners: dict[Path, threading.Thread] = {}


def start_pruner(store: SessionStore) -> None:
    """Prune ``store`` every ``BIAS_WORKBENCH_SESSION_PRUNE_SECONDS`` in a daemon thread
    (one per state folder and process)."""
    with _pruner_lock:
        if store.root in _pruners and _pruners[store.root].is_alive():
            return

        def loop() -> None:
            while True:
                time.sleep(limits().prune_seconds)
                with contextlib.suppress(Exception):  # a failed pass: try at the next tick
                    store.prune()

        thread = threading.Thread(target=loop, name="session-pruner", daemon=True)
        thread.start()
        _pruners[store.root] = thread
