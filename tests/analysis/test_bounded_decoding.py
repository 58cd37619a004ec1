"""Bounded decoding (issue 26 item 2): issue 26's 335 KB Parquet file (20 million rows of
one dictionary-encoded 100-character value, written without the Arrow schema) costs what
its rows allow and no more.

The file is generated at test time (``tests/data/bad/generate.py``). Each reading runs in
a fresh interpreter with its address space capped at 4 GB (a regression fails the test
instead of taking the machine down); the interpreter reports its resident memory after
the imports (psutil) and its peak (``VmHWM``, its own high-water mark), so the growth is
a true measure.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.bounded import keep_as_category, read_parquet_bounded
from analysis.errors import LimitError
from analysis.io import load_results

REPO = Path(__file__).resolve().parents[2]
MB = 1024 * 1024

_CHILD = r"""
import json, resource, sys
import psutil
import pandas as pd, pyarrow.parquet
from analysis.errors import AnalysisError
from analysis.io import load_results
from analysis.cli import main
resource.setrlimit(resource.RLIMIT_AS, (4 * 1024 ** 3, resource.RLIM_INFINITY))
base = psutil.Process().memory_info().rss
out = {"base_mb": base / 2**20}
try:
    frame = load_results(sys.argv[1])
    col = frame["answer"]
    out["rows"] = len(frame)
    out["dtype"] = str(col.dtype)
    out["counts"] = {str(k): int(v) for k, v in col.value_counts().items()}
    out["frame_mb"] = frame.memory_usage(deep=True).sum() / 2**20
except AnalysisError as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
if sys.argv[2] == "cli":
    out["cli"] = main(["describe", sys.argv[1]])
# VmHWM: this process's own high-water mark (ru_maxrss would include the memory of the
# pytest process it was forked from)
import re
status = open("/proc/self/status").read()
peak = int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024
out["growth_mb"] = (peak - base) / 2**20
print(json.dumps(out))
"""


def _generate(name: str, path: Path) -> dict:
    spec = importlib.util.spec_from_file_location("bad_generate",
                                                  REPO / "tests" / "data" / "bad" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GENERATORS[name](path)


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bomb") / "dictionary_bomb.parquet"
    facts = _generate("dictionary_bomb.parquet", path)
    assert facts["rows"] == 20_000_000 and facts["bytes"] < 400_000  # issue 26: 335 KB
    return path


def _child(path: Path, mode: str, **env: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), mode], capture_output=True, text=True,
        timeout=300, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), **env})
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["stderr"] = proc.stderr
    return out


def test_default_limits_refuse_the_bomb_with_the_limit_named_in_api_and_cli(bomb):
    out = _child(bomb, "cli")
    assert out["error"].startswith("LimitError: dictionary_bomb.parquet has 20,000,000 rows, "
                                   "more than the 10,000,000 rows allowed")
    assert "BIAS_WORKBENCH_MAX_ROWS" in out["error"]
    assert out["cli"] == 2 and "BIAS_WORKBENCH_MAX_ROWS" in out["stderr"]
    assert out["growth_mb"] < 100  # the footer is read, no row is decoded


def test_allowed_rows_load_as_one_category_in_little_memory(bomb):
    out = _child(bomb, "api", BIAS_WORKBENCH_MAX_ROWS="30000000")
    assert "error" not in out
    assert out["rows"] == 20_000_000 and out["dtype"].startswith("category")
    assert out["counts"] == {"x" * 100: 20_000_000}
    assert out["frame_mb"] < 25  # one byte of code per row, the value once
    # before: 10.8 GB peak. Now the int32 codes of the batches (80 MB) and their copy.
    assert out["growth_mb"] < 600


def test_decoded_budget_stops_while_reading(bomb):
    out = _child(bomb, "api", BIAS_WORKBENCH_MAX_ROWS="30000000",
                 BIAS_WORKBENCH_MAX_DECODED_MB="20")
    assert out["error"].startswith("LimitError: dictionary_bomb.parquet decodes to more than "
                                   "20 MB in memory")
    assert "BIAS_WORKBENCH_MAX_DECODED_MB" in out["error"]
    assert out["growth_mb"] < 100


def _parquet(frame: pd.DataFrame, **kw) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False, **kw)
    return buf.getvalue()


def test_small_tables_read_exactly_as_pandas_reads_them():
    frame = pd.DataFrame({"model": ["m1", "m2", None] * 4, "score": np.arange(12.0),
                          "flag": [True, False, True] * 4,
                          "cat": pd.Categorical(["a", "b", "a"] * 4)})
    data = _parquet(frame)
    pd.testing.assert_frame_equal(read_parquet_bounded(data, "t.parquet"),
                                  pd.read_parquet(io.BytesIO(data)))


def test_repetitive_text_of_a_large_table_becomes_categorical_free_text_does_not():
    n = 120_000
    frame = pd.DataFrame({"model": np.array(["m1", "m2", "m3"])[np.arange(n) % 3],
                          "text": [f"answer {i}" for i in range(n)]})
    got = load_results(_parquet(frame), name="big.parquet")
    assert isinstance(got["model"].dtype, pd.CategoricalDtype)
    assert got["model"].value_counts().to_dict() == {"m1": 40_000, "m2": 40_000, "m3": 40_000}
    assert not isinstance(got["text"].dtype, pd.CategoricalDtype)
    assert got["text"].tolist() == frame["text"].tolist()
    assert keep_as_category(100_000, 50_000) and not keep_as_category(100_000, 50_001)
    assert not keep_as_category(99_999, 2)


def test_text_files_are_bounded_by_rows_and_decoded_size(monkeypatch):
    csv = "model,score\n" + "m1,1\n" * 50
    monkeypatch.setenv("BIAS_WORKBENCH_MAX_ROWS", "40")
    with pytest.raises(LimitError, match=r"has 51 lines, more than the 40 rows allowed"):
        load_results(csv.encode(), name="r.csv")
    jsonl = '{"model": "m1"}\n' * 50
    with pytest.raises(LimitError, match="BIAS_WORKBENCH_MAX_ROWS"):
        load_results(jsonl.encode(), name="r.jsonl")
    monkeypatch.setenv("BIAS_WORKBENCH_MAX_ROWS", "50")
    assert len(load_results(csv.encode(), name="r.csv")) == 50
    monkeypatch.setenv("BIAS_WORKBENCH_MAX_DECODED_MB", "0.0002")  # about 200 bytes
    with pytest.raises(LimitError, match="decodes to more than 0 MB in memory"):
        load_results(csv.encode(), name="r.csv")


def test_batches_follow_the_declared_row_width(monkeypatch):
    import pyarrow.parquet as pq

    from analysis.bounded import BATCH_BYTES, BATCH_ROWS, MAX_BATCH_ROWS, batch_rows

    n = 300_000
    narrow = pd.DataFrame({"model": np.array(["m1", "m2"])[np.arange(n) % 2],
                           "y": (np.arange(n) % 3 == 0).astype("int8")})
    meta = pq.ParquetFile(io.BytesIO(_parquet(narrow))).metadata
    declared = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    assert batch_rows(meta) == min(MAX_BATCH_ROWS, int(BATCH_BYTES // (declared / n)))
    assert batch_rows(meta) == MAX_BATCH_ROWS  # a few bytes per row: one batch
    wide = pd.DataFrame({"text": [f"{i:06d}" + "x" * 2000 for i in range(2_000)]})
    assert batch_rows(pq.ParquetFile(io.BytesIO(_parquet(wide))).metadata) == BATCH_ROWS
    # several batches of unequal dictionaries read as one table: the values are unchanged
    import analysis.bounded as bounded

    monkeypatch.setattr(bounded, "MAX_BATCH_ROWS", 70_000)
    mixed = pd.DataFrame({"model": np.array(["a", "b", "c"])[np.arange(n) % 3],
                          "late": np.where(np.arange(n) < n - 10, "early", "late")})
    data = _parquet(mixed)
    got = read_parquet_bounded(data, "t.parquet")
    assert got["model"].tolist() == mixed["model"].tolist()
    assert got["late"].value_counts().to_dict() == {"early": n - 10, "late": 10}
