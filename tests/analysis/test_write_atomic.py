"""``analysis.safe_write.write_files``: all outputs appear together or none does."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.errors import OutputError
from analysis.safe_write import table_writer, write_files


def test_all_or_nothing(tmp_path):
    frame = pd.DataFrame({"a": [1, 2]})
    (tmp_path / "old.csv").write_text("keep me", encoding="utf-8")

    def broken(path):
        path.write_text("half", encoding="utf-8")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_files({tmp_path / "old.csv": table_writer(frame, "old.csv"),
                      tmp_path / "b.txt": broken})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.csv"]
    assert (tmp_path / "old.csv").read_text(encoding="utf-8") == "keep me"
    written = write_files({tmp_path / "old.csv": table_writer(frame, "old.csv"),
                            tmp_path / "t.parquet": table_writer(frame, "t.parquet"),
                            tmp_path / "t.csv.gz": table_writer(frame, "t.csv.gz")})
    assert [p.name for p in written] == ["old.csv", "t.parquet", "t.csv.gz"]
    for name in ("old.csv", "t.parquet", "t.csv.gz"):
        back = (pd.read_parquet if name.endswith("parquet") else pd.read_csv)(tmp_path / name)
        pd.testing.assert_frame_equal(back, frame)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.csv", "t.csv.gz", "t.parquet"]


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(OutputError, match="does not exist"):
        write_files({tmp_path / "no" / "x.csv": table_writer(pd.DataFrame({"a": [1]}), "x")})


def test_files_and_folder_are_synced_and_failures_are_typed(tmp_path, monkeypatch):
    """Every temporary file and the folder are fsync-ed before the writer returns; an
    OSError half-way is an OutputError naming the target, and leaves nothing behind."""
    import os

    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(
        f"/proc/self/fd/{fd}")), real_fsync(fd))[1])
    frame = pd.DataFrame({"a": [1, 2]})
    write_files({tmp_path / "t.csv": table_writer(frame, "t.csv")})
    assert len(synced) == 2 and synced[0].endswith(".tmp") and synced[1] == str(tmp_path)

    def no_space(path):
        path.write_bytes(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError, match=r"Could not write .*x\.csv: No space left on "
                                          r"device\. Nothing was written"):
        write_files({tmp_path / "x.csv": no_space})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]
