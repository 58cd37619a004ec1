"""Atomic writes and CSV-injection-safe CSV (analysis/safe_write.py)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis.errors import OutputError
from analysis.export import table_bytes
from analysis.safe_write import (
    atomic_write_bytes,
    atomic_writer,
    check_output_path,
    csv_bytes,
    neutralise_csv_cells,
    write_table,
)

REPO = Path(__file__).resolve().parents[2]
HOSTILE = ['=HYPERLINK("http://x","click")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)",
           "\tTAB", "\rCR"]


def test_formula_cells_are_neutralised_numbers_stay_numbers():
    frame = pd.DataFrame({"label": [*HOSTILE, "plain", "-1.5"],
                          "n": [-1, 2, 3, 4, 5, 6, 7, -8],
                          "=evil": ["a"] * 8})
    out = neutralise_csv_cells(frame)
    assert out["label"].tolist()[:6] == ["'" + h for h in HOSTILE]
    assert out["label"].tolist()[6:] == ["plain", "-1.5"]  # a number in text stays as it is
    assert out["n"].tolist() == frame["n"].tolist() and out["n"].dtype == frame["n"].dtype
    assert list(out.columns) == ["label", "n", "'=evil"]
    assert frame["label"][0] == HOSTILE[0]  # the input is untouched
    back = pd.read_csv(io.BytesIO(csv_bytes(frame)))
    assert back["label"][0] == "'" + HOSTILE[0] and back["n"].tolist()[0] == -1


def test_categorical_and_table_bytes_neutralised():
    frame = pd.DataFrame({"f": pd.Categorical(["=1+1", "ok"])})
    text = table_bytes(frame).decode()
    assert "'=1+1" in text and "\n=1+1" not in text


def test_missing_folder_and_folder_path_are_typed(tmp_path):
    with pytest.raises(OutputError, match="does not exist"):
        check_output_path(tmp_path / "nope" / "x.csv")
    with pytest.raises(OutputError, match="is a folder"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path)
    assert check_output_path(tmp_path / "new" / "x.csv", create_parent=True).parent.is_dir()


def test_failure_midway_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_writer(target) as handle:
        handle.write(b"half a ro")
        raise RuntimeError("boom")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]
    atomic_write_bytes(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


_FULL_DISK = """
import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))
sys.argv = sys.argv[:1] + sys.argv[1:]
from {module} import main
sys.exit(main(sys.argv[1:]))
"""


def _run_with_small_disk(module: str, argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", _FULL_DISK.format(module=module), *argv],
                          capture_output=True, text=True, env=env, timeout=120, cwd=REPO)


def test_disk_full_analysis_out_leaves_no_partial_file(tmp_path):
    rows = pd.DataFrame([{"a": f"value_a_{i}", "b": f"value_b_{j}", "y": (i + j) % 2}
                         for i in range(50) for j in range(50)])
    src = tmp_path / "in.csv"
    rows.to_csv(src, index=False)  # written before the limit applies (in this process)
    out = tmp_path / "cells.csv"
    argv = ["cells", str(src), "--factors", "a,b", "--outcome", "y", "--out", str(out)]
    proc = _run_with_small_disk("analysis.cli", argv)  # ~100 kB of cells, 20 kB allowed
    assert proc.returncode == 2, proc.stderr
    assert "error: Could not write" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]
    argv[3] = "y"  # a small table fits under the same limit
    assert _run_with_small_disk("analysis.cli", argv).returncode == 0
    assert out.exists()


def test_disk_full_judges_write_table(tmp_path):
    code = f"""
import resource, sys
import pandas as pd
resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))
from judges.cli import write_table
from analysis.errors import OutputError
try:
    write_table(pd.DataFrame({{"t": ["x" * 100] * 5000}}), {str(tmp_path / "judged.csv")!r})
except OutputError as exc:
    print("refused:", exc)
    sys.exit(2)
"""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Could not write" in proc.stdout and "no partial file" in proc.stdout
    assert list(tmp_path.iterdir()) == []
