"""Session storage (ui/session_store.py): signed ids, owners, locks, failed writes, caps."""

from __future__ import annotations

import errno
import os
import stat
import threading
import time

import pandas as pd
import pytest
import yaml

from ui.session_store import SaveError, SessionStore, StateDirError, start_pruner


def _frame(seed: int, rows: int = 200) -> pd.DataFrame:
    return pd.DataFrame({"model": [f"m{seed}"] * rows, "x": range(seed, seed + rows)})


def _meta(name: str, token: str = "t") -> dict:
    return {"name": name, "token": token, "design": None, "settings": {}, "sample": None}


def _read(store: SessionStore, sid: str) -> tuple[dict, pd.DataFrame]:
    got = store.load(sid)
    return got.meta, pd.read_parquet(got.table)


def test_ids_are_signed_by_the_server_and_checked_before_any_path(tmp_path):
    store = SessionStore(tmp_path / "s")
    sid = store.new_id()
    assert store.issued(sid) and len(sid) == 46
    assert not store.issued(sid[:-1] + ("A" if sid[-1] != "A" else "B"))  # forged mac
    assert not SessionStore(tmp_path / "other").issued(sid)  # another server's secret
    for bad in ("../../etc", "x" * 46, "", None, 7, "a/b" * 16):
        assert not store.issued(bad)
        with pytest.raises(ValueError):
            store.folder(bad)


def test_storage_is_private_to_the_servers_user(tmp_path):
    root = tmp_path / "s"
    store = SessionStore(root)
    sid, _ = store.save(None, _meta("a.csv"), _frame(1), owner_key="o", base_rev=None,
                        write_table=True)
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / "secret.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((root / sid).stat().st_mode) == 0o700
    for name in ("session.yaml", store.load(sid).table.name):
        assert stat.S_IMODE((root / sid / name).stat().st_mode) == 0o600
    meta = yaml.safe_load((root / sid / "session.yaml").read_text())
    assert meta["owner"] != "o" and len(meta["owner"]) == 32  # a keyed hash, not the key


def test_a_pre_existing_folder_loosened_by_us_is_tightened(tmp_path):
    root = tmp_path / "s"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    SessionStore(root)
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder of another user needs root")
def test_a_folder_of_another_user_is_refused_with_a_specific_message(tmp_path):
    root = tmp_path / "theirs"
    root.mkdir()
    os.chown(root, 65534, 65534)
    with pytest.raises(StateDirError, match="belongs to another user .uid 65534"):
        SessionStore(root)
    assert list(root.iterdir()) == []  # nothing written into it


def test_a_link_is_not_a_folder(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(StateDirError, match="not a folder"):
        SessionStore(tmp_path / "link")


def test_four_concurrent_saves_of_one_session_lose_nothing(tmp_path):
    """Four tabs that last read revision 1 save different tables at once: one advances the
    session, the three others land in new sessions; every table is on disk intact."""
    store = SessionStore(tmp_path / "s")
    sid, rev = store.save(None, _meta("start.csv"), _frame(0), owner_key="me",
                          base_rev=None, write_table=True)
    frames = {i: _frame(i * 1000, rows=20_000) for i in range(1, 5)}
    results: dict[int, tuple[str, int]] = {}
    barrier = threading.Barrier(4)

    def tab(i: int) -> None:
        barrier.wait()
        results[i] = store.save(sid, _meta(f"tab{i}.csv", f"t{i}"), frames[i],
                                owner_key="me", base_rev=rev, write_table=True)

    threads = [threading.Thread(target=tab, args=(i,)) for i in frames]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sids = [results[i][0] for i in frames]
    assert len(set(sids)) == 4 and sids.count(sid) == 1
    for i, (got_sid, _) in results.items():
        meta, table = _read(store, got_sid)
        assert meta["name"] == f"tab{i}.csv" and meta["token"] == f"t{i}"
        pd.testing.assert_frame_equal(table, frames[i])
    assert not list((tmp_path / "s").rglob("*.tmp"))


def test_a_failed_write_keeps_the_previous_state(tmp_path, monkeypatch):
    store = SessionStore(tmp_path / "s")
    sid, rev = store.save(None, _meta("old.csv", "old"), _frame(1), owner_key="me",
                          base_rev=None, write_table=True)

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    with pytest.raises(SaveError, match="disk is full.*previous state is kept"):
        store.save(sid, _meta("new.csv", "new"), _frame(2), owner_key="me", base_rev=rev,
                   write_table=True)
    monkeypatch.undo()
    meta, table = _read(store, sid)
    assert meta["name"] == "old.csv" and meta["rev"] == rev
    pd.testing.assert_frame_equal(table, _frame(1))
    assert not list((tmp_path / "s").rglob("*.tmp"))


def test_a_table_over_its_cap_is_refused_and_the_old_one_kept(tmp_path, monkeypatch):
    store = SessionStore(tmp_path / "s")
    sid, rev = store.save(None, _meta("small.csv"), _frame(1, 10), owner_key="me",
                          base_rev=None, write_table=True)
    monkeypatch.setenv("BIAS_WORKBENCH_SESSION_MAX_TABLE_MB", "0.01")  # 10 KB
    with pytest.raises(SaveError, match="more than 0 MB.*MAX_TABLE_MB"):
        store.save(sid, _meta("big.csv"), _frame(2, 50_000), owner_key="me", base_rev=rev,
                   write_table=True)
    assert _read(store, sid)[0]["name"] == "small.csv"


def test_another_owner_forks_a_copy_sharing_the_table_file(tmp_path):
    store = SessionStore(tmp_path / "s")
    sid, _ = store.save(None, _meta("a.csv"), _frame(1), owner_key="alice", base_rev=None,
                        write_table=True)
    copy = store.fork(store.load(sid), "bob")
    assert copy != sid
    original, forked = store.load(sid).table, store.load(copy).table
    assert original.stat().st_ino == forked.stat().st_ino  # copy-on-write: one file
    new_sid, _ = store.save(copy, _meta("b.csv"), _frame(2), owner_key="bob", base_rev=1,
                            write_table=True)
    assert new_sid == copy
    pd.testing.assert_frame_equal(_read(store, sid)[1], _frame(1))  # the original unchanged
    pd.testing.assert_frame_equal(_read(store, copy)[1], _frame(2))
    # bob writing to alice's id directly lands in a new session of bob's
    other, _ = store.save(sid, _meta("c.csv"), _frame(3), owner_key="bob", base_rev=1,
                          write_table=True)
    assert other not in (sid, copy) and _read(store, sid)[0]["name"] == "a.csv"
    assert [r["sid"] for r in store.owned_by("alice")] == [sid]
    assert {r["sid"] for r in store.owned_by("bob")} == {copy, other}


def test_a_thousand_visits_stay_under_the_caps_least_recently_used_first(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_SESSION_MAX_COUNT", "40")
    monkeypatch.setenv("BIAS_WORKBENCH_SESSION_MAX_TOTAL_MB", "0.5")
    store = SessionStore(tmp_path / "s")
    favourite, _ = store.save(None, _meta("kept.csv"), _frame(0), owner_key="v0",
                              base_rev=None, write_table=True)
    table_bytes = store.load(favourite).table.stat().st_size
    peak_count = peak_bytes = 0
    for i in range(1, 1001):
        sample = i % 3 != 0  # two visits in three keep only the name of a bundled sample
        meta = {**_meta("bbq_unifiedqa.csv.gz"), "sample": "bbq_unifiedqa.csv.gz"} \
            if sample else _meta(f"u{i}.csv")
        store.save(None, meta, None if sample else _frame(i), owner_key=f"v{i}",
                   base_rev=None, write_table=not sample)
        if i % 10 == 0:
            store.load(favourite)  # used now and then: the least recently used go first
            count, used = store.usage()
            peak_count, peak_bytes = max(peak_count, count), max(peak_bytes, used)
    assert peak_count <= 40 and peak_bytes <= 0.5 * 2**20
    assert store.load(favourite) is not None
    assert 0.5 * 2**20 / table_bytes > 10  # the byte cap is not the binding one by accident


def test_pruning_removes_sessions_unused_past_the_age_limit_on_a_timer(tmp_path, monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_SESSION_MAX_AGE_DAYS", "1")
    monkeypatch.setenv("BIAS_WORKBENCH_SESSION_PRUNE_SECONDS", "0.2")
    store = SessionStore(tmp_path / "s")
    old, _ = store.save(None, _meta("old.csv"), _frame(1), owner_key="o", base_rev=None,
                        write_table=True)
    new, _ = store.save(None, _meta("new.csv"), _frame(2), owner_key="o", base_rev=None,
                        write_table=True)
    two_days_ago = time.time() - 2 * 86400
    os.utime(store.root / old, (two_days_ago, two_days_ago))
    start_pruner(store)
    deadline = time.monotonic() + 10
    while (store.root / old).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (store.root / old).exists() and store.load(new) is not None


def test_a_session_evicted_while_its_tab_is_open_is_written_again_whole(tmp_path):
    store = SessionStore(tmp_path / "s")
    sid, rev = store.save(None, _meta("a.csv"), _frame(1), owner_key="me", base_rev=None,
                          write_table=True)
    import shutil

    shutil.rmtree(store.root / sid)  # evicted (caps or age) while the tab stays open
    again, _ = store.save(sid, _meta("a.csv"), _frame(1), owner_key="me", base_rev=rev,
                          write_table=False)  # the tab believes its table is on disk
    assert again == sid
    pd.testing.assert_frame_equal(_read(store, sid)[1], _frame(1))


def test_pruning_removes_old_unsigned_folders_of_earlier_versions_only(tmp_path):
    store = SessionStore(tmp_path / "s")
    old_style, keep = store.root / ("o" * 24), store.root / "notes"
    not_ours = store.root / ("n" * 24)  # an id-like name without a session file
    for folder in (old_style, keep, not_ours):
        folder.mkdir()
        if folder != not_ours:
            (folder / "session.yaml").write_text("x")
        os.utime(folder, (time.time() - 30 * 86400,) * 2)
    recent = store.root / ("r" * 24)
    recent.mkdir()
    store.prune()
    assert not old_style.exists() and keep.exists() and recent.exists() and not_ours.exists()


def test_servers_starting_at_once_share_one_secret(tmp_path):
    root = tmp_path / "s"
    stores: list[SessionStore] = []
    barrier = threading.Barrier(8)

    def start() -> None:
        barrier.wait()
        stores.append(SessionStore(root))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sid = stores[0].new_id()
    assert len(stores) == 8 and all(s.issued(sid) for s in stores)
    assert [p.name for p in root.iterdir()] == ["secret.key"]


# --- per-owner caps (issue 43 item 4) ---------------------------------------------------------
def test_one_owner_cannot_evict_anothers_session(tmp_path, monkeypatch):
    """The review's case: a count cap of 20, a second user saving 25 sessions evicted the
    first user's only one. The writer's own oldest go first now."""
    monkeypatch.setenv("BIAS_WORKBENCH_SESSION_MAX_COUNT", "20")
    store = SessionStore(tmp_path / "s")
    alice, _ = store.save(None, _meta("alice.csv"), _frame(0), owner_key="alice",
                          base_rev=None, write_table=True)
    bobs = [store.save(None, _meta(f"b{i}.csv"), _frame(i), owner_key="bob", base_rev=None,
                       write_table=True)[0] for i in range(1, 26)]
    assert _read(store, alice)[0]["name"] == "alice.csv"
    assert store.usage()[0] == 20
    assert [r["sid"] for r in store.owned_by("bob")] == bobs[-19:][::-1]  # his newest 19


def test_per_owner_count_and_size_caps_evict_the_owners_own_oldest(tmp_path, monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_SESSION_MAX_PER_OWNER", "5")
    store = SessionStore(tmp_path / "s")
    alice, _ = store.save(None, _meta("alice.csv"), _frame(0), owner_key="alice",
                          base_rev=None, write_table=True)
    bobs = [store.save(None, _meta(f"b{i}.csv"), _frame(i), owner_key="bob", base_rev=None,
                       write_table=True)[0] for i in range(1, 9)]
    assert [r["sid"] for r in store.owned_by("bob")] == bobs[-5:][::-1]
    assert store.load(alice) is not None
    table = store.load(bobs[-1]).table.stat().st_size
    monkeypatch.setenv("BIAS_WORKBENCH_SESSION_MAX_OWNER_MB", str(2.5 * table / 2**20))
    store.save(None, _meta("b9.csv"), _frame(9), owner_key="bob", base_rev=None,
               write_table=True)
    assert len(store.owned_by("bob")) == 2 and store.load(alice) is not None


# --- atomic saves (issue 43 item 5) -----------------------------------------------------------
class _Steps:
    """Counts the file-system steps of a save (writes, syncs, links, renames, removals) and
    fails the ``fail_at``-th: with ``ENOSPC``, or by ending the process (a kill)."""

    NAMES = (("os", "replace"), ("os", "rename"), ("os", "link"), ("os", "fsync"),
             ("os", "unlink"), ("os", "open"))

    def __init__(self, monkeypatch, fail_at: int | None = None, kill: bool = False):
        import pathlib

        self.count, self.fail_at, self.kill = 0, fail_at, kill
        for module, name in self.NAMES:
            monkeypatch.setattr(f"{module}.{name}", self._wrap(getattr(os, name)))
        monkeypatch.setattr(pd.DataFrame, "to_parquet", self._wrap(pd.DataFrame.to_parquet))
        monkeypatch.setattr(pathlib.Path, "write_text", self._wrap(pathlib.Path.write_text))

    def _wrap(self, real):
        def step(*args, **kwargs):
            self.count += 1
            if self.count == self.fail_at:
                if self.kill:
                    os._exit(0)
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(*args, **kwargs)
        return step


def _old_session(store):
    sid, rev = store.save(None, {**_meta("old.csv", "t-old"), "settings": {"a": 1}},
                          _frame(1), owner_key="me", base_rev=None, write_table=True)
    return sid, rev


def _consistent(store, sid) -> str:
    """'old' or 'new' when the session is wholly one of them (fails on a mix)."""
    meta, frame = _read(store, sid)
    state = {"old.csv": "old", "new.csv": "new"}[meta["name"]]
    assert meta["token"] == f"t-{state}" and meta["settings"] == {"a": 1 if state == "old" else 2}
    pd.testing.assert_frame_equal(frame, _frame(1 if state == "old" else 2))
    return state


def _save_new(store, sid, rev):
    return store.save(sid, {**_meta("new.csv", "t-new"), "settings": {"a": 2}}, _frame(2),
                      owner_key="me", base_rev=rev, write_table=True)


@pytest.mark.parametrize("forked", [False, True], ids=["own", "fork"])
def test_a_save_failing_at_any_step_leaves_the_old_or_the_new_session(tmp_path, monkeypatch,
                                                                      forked):
    """Every write, sync, link, rename and removal of a save fails in turn (disk full);
    the session is then wholly the old one or wholly the new one. ``fork``: the review's
    case, a forked session whose table is a hard link to the original's."""
    with pytest.MonkeyPatch.context() as mp:
        probe = SessionStore(tmp_path / "probe")
        sid, rev = _old_session(probe)
        counter = _Steps(mp)
        _save_new(probe, sid, rev)
        steps = counter.count
    assert steps >= 8
    seen = set()
    for k in range(1, steps + 1):
        store = SessionStore(tmp_path / f"s{k}")
        sid, rev = _old_session(store)
        if forked:
            sid, rev = store.fork(store.load(sid), "me"), 1
        with pytest.MonkeyPatch.context() as mp:
            _Steps(mp, fail_at=k)
            try:
                got, _ = _save_new(store, sid, rev)
                assert got == sid
            except SaveError as exc:
                assert "previous state is kept" in str(exc)
        seen.add(_consistent(store, sid))
        _prune_leftovers(store, sid)
    assert seen == {"old", "new"}


def _prune_leftovers(store, sid) -> None:
    """An hour later, ``prune`` has removed what a failed or killed save left behind."""
    hour_ago = time.time() - 7200
    for leftover in [*(store.root / sid).glob("*.parquet"), *(store.root / sid).glob(".*.tmp")]:
        os.utime(leftover, (hour_ago, hour_ago))
    store.prune()
    assert len(list((store.root / sid).glob("*parquet*"))) == 1
    assert not list((store.root / sid).glob(".*.tmp"))
    _consistent(store, sid)


def test_a_save_killed_at_any_step_leaves_the_old_or_the_new_session(tmp_path, monkeypatch):
    """The process ends (``os._exit``) at every step of a save in turn, in a forked child;
    the parent then reads the session: wholly old or wholly new; ``prune`` removes a table
    the kill left behind once it is an hour old."""
    with pytest.MonkeyPatch.context() as mp:
        probe = SessionStore(tmp_path / "probe")
        sid, rev = _old_session(probe)
        counter = _Steps(mp)
        _save_new(probe, sid, rev)
        steps = counter.count
    seen = set()
    for k in range(1, steps + 1):
        store = SessionStore(tmp_path / f"s{k}")
        sid, rev = _old_session(store)
        pid = os.fork()
        if pid == 0:  # the child: save, killed at step k
            try:
                with pytest.MonkeyPatch.context() as mp:
                    _Steps(mp, fail_at=k, kill=True)
                    _save_new(store, sid, rev)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        seen.add(_consistent(store, sid))
        _prune_leftovers(store, sid)
    assert seen == {"old", "new"}


def test_sessions_of_older_versions_still_load_and_save(tmp_path):
    store = SessionStore(tmp_path / "s")
    sid, rev = _old_session(store)
    folder = store.root / sid
    meta = yaml.safe_load((folder / "session.yaml").read_text())
    os.replace(folder / meta.pop("table"), folder / "table.parquet")  # the old layout
    (folder / "session.yaml").write_text(yaml.safe_dump(meta))
    assert _consistent(store, sid) == "old"
    _save_new(store, sid, rev)
    assert _consistent(store, sid) == "new" and not (folder / "table.parquet").exists()
