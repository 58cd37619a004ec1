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
    for name in ("session.yaml", "table.parquet"):
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
    original, forked = store.root / sid / "table.parquet", store.root / copy / "table.parquet"
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
    table_bytes = (store.root / favourite / "table.parquet").stat().st_size
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
