"""Every importer within the limits of any input (issue 43 item 2).

Each ``import_*`` case of the bad-input corpus (``tests/data/bad/cases.yaml``: BBQ gzip
bombs and a 100,000-deep line, an lm-eval samples file and Inspect logs nested 100,000
deep, an ``.eval`` ZIP whose header expands 1,029 times or that holds too many entries, a
wide table whose melt passes the row limit) runs ``python -m analysis import ...`` in a
fresh interpreter: exit 2 with the case's message, and the interpreter's peak memory
(``VmHWM``, see docs/limits.md) grows by less than 500 MB over its size before the command.
Before issue 43 the same files took 3.6 to 11.2 GB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.bad_corpus import CASES, case_path

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

_CHILD = r"""
import json, sys, time
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
import analysis.cli, analysis.importers.bbq, analysis.importers.lm_eval
import analysis.importers.inspect_logs, analysis.importers.wide, inspect_ai.log
before = status("VmRSS")
start = time.monotonic()
code = analysis.cli.main(json.loads(sys.argv[1]))
print(json.dumps({"code": code, "seconds": time.monotonic() - start,
                  "growth_mb": (status("VmHWM") - before) / 2**20}))
"""

IMPORT_CASES = [pytest.param(c, id=c.id) for c in CASES if c.id.startswith("import_")]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("importer_bombs")


def test_there_is_a_case_per_importer():
    tools = {c.get("cli")[1] for c in CASES if c.id.startswith("import_")}
    assert tools == {"bbq", "lm-eval", "inspect", "wide"}


@pytest.mark.parametrize("case", IMPORT_CASES)
def test_importer_case_is_refused_in_bounded_memory(case, folder):
    path, _ = case_path(case, folder)
    assert path.stat().st_size < 1.5 * 2**20  # the inputs are small ...
    args = [a.replace("{file}", str(path)) for a in case.get("cli")]
    env = {**os.environ, "PYTHONPATH": REPO, **case.get("env", {})}
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(args)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 2, proc.stderr
    assert case.expect("cli") in proc.stderr and "Traceback" not in proc.stderr
    assert result["growth_mb"] < 500, result  # ... and so is what they cost
    assert result["seconds"] < 30, result
