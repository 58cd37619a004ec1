"""``python -m analysis`` exits without Python's teardown only when nothing needs it
(analysis.cli.run; docs/performance.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

from analysis import cli

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def table(tmp_path) -> Path:
    path = tmp_path / "r.csv"
    path.write_text("model,style,deviation\n" + "".join(
        f"m{i % 2},s{i % 3},{int(i % 5 == 0)}\n" for i in range(120)))
    return path


def _exits(monkeypatch, argv, *, threads: int = 1) -> tuple[str, int]:
    """How ``cli.run(argv)`` ends: ("fast", code) through os._exit, ("normal", code)."""
    class Ended(Exception):
        pass

    how = {}

    def fast(code):
        how["end"] = ("fast", code)
        raise Ended

    def normal(code=0):
        how["end"] = ("normal", code)
        raise Ended

    monkeypatch.setattr(cli.os, "_exit", fast)
    monkeypatch.setattr(cli.sys, "exit", normal)
    monkeypatch.setattr(threading, "active_count", lambda: threads)
    with pytest.raises(Ended):
        cli.run(argv)
    return how["end"]


def test_fast_exit_only_when_nothing_needs_teardown(monkeypatch, table, capsys):
    for name in cli.NEEDS_TEARDOWN:  # the test process may have imported some
        monkeypatch.delitem(sys.modules, name, raising=False)
    argv = ["importance", str(table), "--factors", "model,style", "--outcome", "deviation",
            "--json"]
    assert _exits(monkeypatch, argv) == ("fast", 0)
    assert json.loads(capsys.readouterr().out)["terms"]  # flushed before the exit
    assert _exits(monkeypatch, ["importance", str(table / "nope")]) == ("fast", 2)
    assert _exits(monkeypatch, argv, threads=2) == ("normal", 0)  # a thread still runs
    monkeypatch.setitem(sys.modules, "kaleido", types.ModuleType("kaleido"))  # a browser
    assert _exits(monkeypatch, argv) == ("normal", 0)


def test_python_m_analysis_output_and_codes(table):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "analysis", *args], capture_output=True,
                              text=True, cwd=REPO, timeout=120,
                              env={"PYTHONPATH": str(REPO), "PATH": ""})

    done = run("subgroups", str(table), "--factors", "model,style", "--outcome",
               "deviation", "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["subgroups"]) == 2 + 3 + 6
    bad = run("subgroups", str(table), "--factors", "nope", "--outcome", "deviation")
    assert bad.returncode == 2 and "nope" in bad.stderr
