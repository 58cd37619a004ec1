"""The server-side timing of ``benchmarks/bench_browser_journey.py`` records what it claims.

``benchmarks/run_timing/sitecustomize.py`` wraps two of Streamlit's private methods; a
Streamlit upgrade that renames or bypasses them would leave the benchmark timing nothing.
Here a fresh interpreter with that folder on ``PYTHONPATH`` runs a tiny app under AppTest
(two script runs: the first and a radio change) and one deferred download callable, and
the benchmark's own reader must find exactly those calls, in order, with their times.
No time is asserted beyond ordering (times belong in benchmarks/).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TIMING = ROOT / "benchmarks" / "run_timing"

PROBE = """
from streamlit.testing.v1 import AppTest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

at = AppTest.from_string("import streamlit as st\\nst.radio('r', ['a', 'b'], key='r')")
at.run()
at.radio(key="r").set_value("b").run()
assert not at.exception
files = MediaFileManager(MemoryMediaFileStorage("/media"))
file_id = files.add_deferred(lambda: b"x" * 10, "text/plain", "c", "f.txt")
files.execute_deferred(file_id)
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
print(hasattr(ScriptRunner._run_script, "__wrapped__"))
"""


def _probe(env_log: Path | None) -> bool:
    """Run :data:`PROBE`; whether ``_run_script`` was wrapped."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TIMING), str(ROOT)]))
    env.pop("BIAS_BENCH_RUN_LOG", None)
    if env_log is not None:
        env["BIAS_BENCH_RUN_LOG"] = str(env_log)
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, check=True, timeout=120,
                          capture_output=True, text=True)
    return done.stdout.split()[-1] == "True"


def test_each_script_run_and_export_is_recorded_and_read_back(tmp_path):
    from benchmarks.bench_browser_journey import ServerLog

    log_path = tmp_path / "runs.jsonl"
    before = time.time()
    assert _probe(log_path)
    after = time.time()
    log = ServerLog(log_path)
    runs = log.since(before, "run")
    assert len(runs) == 2 and all(r["ok"] and not r["fragment"] for r in runs)
    assert before <= runs[0]["t0"] <= runs[0]["t1"] <= runs[1]["t0"] <= runs[1]["t1"] <= after
    assert all(r["cpu"] >= 0 for r in runs)
    # AppTest's runner replaces _on_script_finished (a server's does not): no end mark here
    assert all(r["ended"] is None for r in runs)
    # read once: the reader keeps its place, and a later start time filters
    assert log.since(before, "export") == []
    exports = ServerLog(log_path).since(runs[1]["t1"], "export")
    assert len(exports) == 1 and exports[0]["ok"] and exports[0]["t0"] >= runs[1]["t1"]
    assert ServerLog(log_path).since(after + 1, "run") == []


def test_without_the_variable_streamlit_is_left_alone():
    assert not _probe(None)


def test_a_method_streamlit_renamed_fails_the_benchmark(tmp_path):
    from benchmarks.bench_browser_journey import ServerLog

    log_path = tmp_path / "runs.jsonl"
    log_path.write_text('{"kind": "missing", "what": "ScriptRunner._run_script"}\n')
    with pytest.raises(SystemExit, match="ScriptRunner._run_script"):
        ServerLog(log_path).since(0, "run")


def test_a_call_under_way_is_waited_for(tmp_path):
    """The browser sees a run end before the server writes its line: the reader waits for
    a started call's line (up to its timeout)."""
    import threading

    from benchmarks.bench_browser_journey import ServerLog

    log_path = tmp_path / "runs.jsonl"
    log_path.write_text('{"kind": "start", "of": "run", "call": 0, "t0": 10.0}\n')
    assert ServerLog(log_path).since(0, "run", timeout=0.1) == []  # gave up: not written

    def finish() -> None:
        time.sleep(0.3)
        with open(log_path, "a") as f:
            f.write('{"kind": "run", "call": 0, "t0": 10.0, "t1": 12.0, "cpu": 1.0, '
                    '"ok": true, "fragment": true, "ended": 11.5}\n')

    writer = threading.Thread(target=finish)
    writer.start()
    runs = ServerLog(log_path).since(0, "run", timeout=30)
    writer.join()
    assert [(r["call"], r["t1"], r["ended"]) for r in runs] == [(0, 12.0, 11.5)]


JOB_PROBE = """
import os, time
import pandas as pd
from ui import inference_pool

job = inference_pool.submit("tok|coverage|{}", pd.DataFrame({"a": [1, 2, 1, 2], "y": [0, 1, 1, 0]}))
assert job.wait(120) and job.result is not None
deadline = time.monotonic() + 30  # the record follows the result (the job's thread ends)
while '"kind": "job"' not in open(os.environ["BIAS_BENCH_RUN_LOG"]).read():
    assert time.monotonic() < deadline
    time.sleep(0.05)
print(hasattr(inference_pool.Job._run, "__wrapped__"))
"""


def test_a_background_job_is_recorded_once_the_app_imports_the_pool(tmp_path):
    """The load-time job's timing (``--load-job after`` waits for it): ``Job._run`` is
    wrapped when ``ui.inference_pool`` is first imported, its ``what`` is the key's
    middle part."""
    from benchmarks.bench_browser_journey import ServerLog

    log_path = tmp_path / "runs.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TIMING), str(ROOT)]),
               BIAS_BENCH_RUN_LOG=str(log_path))
    before = time.time()
    done = subprocess.run([sys.executable, "-c", JOB_PROBE], env=env, check=True,
                          timeout=180, capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.split()[-1] == "True"
    jobs = ServerLog(log_path).since(before, "job", timeout=5)
    assert [(j["what"], j["ok"]) for j in jobs] == [("coverage", True)]
    assert before <= jobs[0]["t0"] <= jobs[0]["t1"] <= time.time()
