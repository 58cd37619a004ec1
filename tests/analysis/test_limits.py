"""Resource limits (issue 20 item 1): every bomb is refused quickly with bounded memory.

The bombs run in a fresh interpreter so its peak resident memory (``ru_maxrss``) is a
true measure of what loading them costs: growth over the baseline after imports must
stay under 500 MB and each refusal under 2 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from analysis.design import Design
from analysis.errors import DesignError, LimitError, LoadError
from analysis.io import gunzip_limited, load_results

REPO = Path(__file__).resolve().parents[2]
MB = 1024 * 1024


def gzip_member(n_bytes: int, fill: bytes = b"0") -> bytes:
    """One gzip member holding ``n_bytes`` of ``fill``, compressed in a streaming way."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = (fill * (MB // len(fill) + 1))[:MB]
    parts = [comp.compress(block) for _ in range(n_bytes // MB)]
    return b"".join([*parts, comp.flush()])


def billion_laughs() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[i]
        lines.append(f"{name}: &{name} [{','.join(['*' + prev] * 9)}]")
    lines.append("factors: [{name: x, values: *i}]")
    return "\n".join(lines)


_BOMBS = r"""
import json, os, resource, sys, time, zlib
from pathlib import Path
from analysis.design import Design
from analysis.errors import AnalysisError
from analysis.io import load_results
sys.path.insert(0, {tests!r})
from test_limits import billion_laughs, gzip_member
tmp = Path(sys.argv[1])
member = gzip_member(16 * 1024 * 1024)  # gzip -9 of zeros, as a real bomb is made
upload = gzip_member(16 * 1024 * 1024, b"a,b\n1,2\n") * 16  # 256 MB in 16 members
# a regression must fail this test, not take the machine down: cap the address space
resource.setrlimit(resource.RLIMIT_AS, (4 * 1024 ** 3, resource.RLIM_INFINITY))
cases = {{
    "upload gzip 256 MB": lambda: load_results(upload, name="bomb.csv.gz"),
    "file gzip 1 GB": lambda: load_results(tmp / "bomb.csv.gz"),
    "/dev/zero": lambda: load_results("/dev/zero"),
    "fifo": lambda: load_results(tmp / "fifo.csv"),
    "yaml billion laughs": lambda: Design.from_text(billion_laughs()),
    "yaml billion laughs file": lambda: Design.load(tmp / "laughs.yaml"),
}}
(tmp / "bomb.csv.gz").write_bytes(b"".join([member] * 64))
os.mkfifo(tmp / "fifo.csv")
(tmp / "laughs.yaml").write_text(billion_laughs())
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
base = rss()
out = {{}}
for name, case in cases.items():
    start = time.monotonic()
    try:
        case()
        message = None
    except AnalysisError as exc:
        message = str(exc)
    out[name] = {{"seconds": time.monotonic() - start, "message": message}}
out["growth_mb"] = (rss() - base) / 1024 / 1024
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def bomb_results(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("bombs")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = _BOMBS.format(tests=str(Path(__file__).parent))
    proc = subprocess.run([sys.executable, "-c", code, str(tmp)], capture_output=True,
                          text=True, env=env, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_bombs_use_bounded_memory(bomb_results):
    assert bomb_results["growth_mb"] < 500, bomb_results


@pytest.mark.parametrize("case, fragment", [
    ("upload gzip 256 MB", "BIAS_WORKBENCH_MAX_COMPRESSION_RATIO"),
    ("file gzip 1 GB", "likely a decompression bomb"),
    ("/dev/zero", "is a device, not a regular file"),
    ("fifo", "is a FIFO (named pipe), not a regular file"),
    ("yaml billion laughs", "aliases are not allowed in design files"),
    ("yaml billion laughs file", "laughs.yaml"),
])
def test_each_bomb_is_refused_fast(bomb_results, case, fragment):
    result = bomb_results[case]
    assert result["message"] is not None and fragment in result["message"], result
    assert result["seconds"] < 2, result


def test_decompressed_size_limit_is_configurable(monkeypatch):
    data = gzip_member(3 * MB, b"x,y\n1,2\n")
    assert len(gunzip_limited(data, "f.csv.gz")) == 3 * MB
    monkeypatch.setenv("BIAS_WORKBENCH_MAX_DECOMPRESSED_MB", "2")
    with pytest.raises(LimitError, match="more than the 2 MB allowed.*"
                                         "BIAS_WORKBENCH_MAX_DECOMPRESSED_MB"):
        gunzip_limited(data, "f.csv.gz")
    monkeypatch.setenv("BIAS_WORKBENCH_MAX_DECOMPRESSED_MB", "lots")
    with pytest.raises(LimitError, match="is not a number"):
        gunzip_limited(data, "f.csv.gz")


def test_concatenated_members_and_truncation():
    one = gzip_member(0) + b""
    comp = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    a = comp.compress(b"a,b\n1,2\n") + comp.flush()
    comp = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    b = comp.compress(b"3,4\n") + comp.flush()
    assert gunzip_limited(a + b, "x.gz") == b"a,b\n1,2\n3,4\n"
    assert gunzip_limited(one, "x.gz") == b""
    with pytest.raises(LoadError, match="truncated"):
        gunzip_limited((a + b)[:-10], "x.gz")
    with pytest.raises(LoadError, match="unexpected bytes after the gzip data"):
        gunzip_limited(a + b"garbage", "x.gz")


def test_upload_size_limit(monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_MAX_INPUT_MB", "1")
    with pytest.raises(LimitError, match="than the 1 MB allowed.*BIAS_WORKBENCH_MAX_INPUT_MB"):
        load_results(b"a,b\n" + b"1,2\n" * 300_000, name="big.csv")


def test_design_with_200k_values_validates_fast():
    values = [f"v{i}" for i in range(200_000)]
    text = json.dumps({"factors": [{"name": "f", "values": values}]})
    start = time.monotonic()
    design = Design.from_text(text)
    assert time.monotonic() - start < 2
    assert len(design.factors[0].values) == 200_000
    with pytest.raises(DesignError, match="lists values twice: v1"):
        Design.from_text(json.dumps({"factors": [{"name": "f", "values": [*values, "v1"]}]}))


def test_design_size_and_value_caps(monkeypatch):
    text = json.dumps({"factors": [{"name": "f", "values": [f"v{i}" for i in range(500)]}]})
    monkeypatch.setenv("BIAS_WORKBENCH_MAX_DESIGN_VALUES", "100")
    with pytest.raises(LimitError, match="declares 500 values, more than the 100"):
        Design.from_text(text)
    monkeypatch.setenv("BIAS_WORKBENCH_MAX_DESIGN_KB", "1")
    with pytest.raises(LimitError, match="larger than the 1 KB"):
        Design.from_text(text)


def test_anchors_without_aliases_still_load():
    design = Design.from_text("factors:\n- &f {name: g, values: [a, b]}\n")
    assert design.names == ["g"]


@pytest.mark.parametrize("n", [0, 1, 1000, MB + 7, 3 * MB + 123])
def test_gunzip_matches_gzip_across_chunk_and_member_boundaries(n, monkeypatch):
    import gzip

    import numpy as np

    raw = np.random.default_rng(n).choice(np.frombuffer(b"aaaab,\n01", dtype=np.uint8),
                                          size=n).tobytes()
    for level in (1, 9):
        member = gzip.compress(raw, level)
        assert gunzip_limited(member, "x.gz") == raw
        assert gunzip_limited(member * 3 + b"\0" * 8, "x.gz") == raw * 3
    monkeypatch.setenv("BIAS_WORKBENCH_MAX_COMPRESSION_RATIO", "100000")
    zeros = b"\0" * (17 * MB + n)  # long matches cut by the 1 MB output steps
    assert gunzip_limited(gzip.compress(zeros, 9), "z.gz") == zeros
