"""One huge CSV cell is refused before parsing (issue 43, smaller items): a 200 MB cell
took 2.4 GB and 31 s before the csv module's field limit stopped it; now 0.54 GB (the
file's bytes and its text, nothing more) and ~4 s on a loaded 2-core machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.errors import LoadError
from analysis.io import load_results

REPO = Path(__file__).resolve().parents[2]

_CHILD = r"""
import json, sys
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
from analysis.io import load_results
before = status("VmRSS")
try:
    load_results(sys.argv[1])
    message = None
except Exception as exc:
    message = f"{type(exc).__name__}: {exc}"
print(json.dumps({"message": message, "growth_mb": (status("VmHWM") - before) / 2**20}))
"""


def test_a_64_mb_cell_costs_the_file_and_its_text_only(tmp_path):
    path = tmp_path / "cell.csv"
    with path.open("w") as out:
        out.write("model,biased,answer\nm1,1,")
        for _ in range(64):
            out.write("x" * 2**20)
        out.write("\nm2,0,ok\n")
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["message"] == (
        f"LoadError: cell.csv: line 2: a value of {64 * 2**20:,} bytes, more than the "
        "131,072 a table cell may have; a results cell this long is not a value (long texts "
        "belong in a file of their own).")
    assert result["growth_mb"] < 3 * 64, result  # bytes + text (+ slack), not 10 copies


def test_long_lines_of_short_values_and_a_long_header_still_load(tmp_path, monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_MAX_COLUMNS", "40000")  # the column limit is apart
    path = tmp_path / "wide.csv"
    names = [f"c{i}" for i in range(30_000)]  # a 200 KB header line
    path.write_text(",".join(["model", "biased", *names]) + "\n"
                    + ",".join(["m1", "1", *["7"] * len(names)]) + "\n")
    assert load_results(path).shape == (1, 30_002)
    path.write_text("model,biased,answer\nm1,1," + "y" * 131_073 + "\n")
    with pytest.raises(LoadError, match="line 2: a value of 131,073 bytes"):
        load_results(path)


def test_duckdb_names_the_real_line_of_a_too_long_line(tmp_path, capsys):
    """DuckDB said "CSV Error on Line: 1" for a cell on line 3 (issue 43)."""
    from analysis.cli import main

    path = tmp_path / "cell.csv"
    path.write_text("model,biased,answer\nm1,1,short\nm2,0," + "y" * 3_000_000 + "\nm3,1,ok\n")
    assert main(["describe", str(path), "--engine", "duckdb"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: DuckDB cannot read it: line 3: Maximum line size")
