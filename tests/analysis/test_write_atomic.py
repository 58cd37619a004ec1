"""``analysis.io.write_atomic``: all outputs appear together or none does."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.errors import LoadError
from analysis.io import table_writer, write_atomic


def test_all_or_nothing(tmp_path):
    frame = pd.DataFrame({"a": [1, 2]})
    (tmp_path / "old.csv").write_text("keep me", encoding="utf-8")

    def broken(path):
        path.write_text("half", encoding="utf-8")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_atomic({tmp_path / "old.csv": table_writer(frame, "old.csv"),
                      tmp_path / "b.txt": broken})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.csv"]
    assert (tmp_path / "old.csv").read_text(encoding="utf-8") == "keep me"
    written = write_atomic({tmp_path / "old.csv": table_writer(frame, "old.csv"),
                            tmp_path / "t.parquet": table_writer(frame, "t.parquet"),
                            tmp_path / "t.csv.gz": table_writer(frame, "t.csv.gz")})
    assert [p.name for p in written] == ["old.csv", "t.parquet", "t.csv.gz"]
    for name in ("old.csv", "t.parquet", "t.csv.gz"):
        back = (pd.read_parquet if name.endswith("parquet") else pd.read_csv)(tmp_path / name)
        pd.testing.assert_frame_equal(back, frame)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.csv", "t.csv.gz", "t.parquet"]


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(LoadError, match="does not exist"):
        write_atomic({tmp_path / "no" / "x.csv": table_writer(pd.DataFrame({"a": [1]}), "x")})
