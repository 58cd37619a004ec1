"""Peak memory of the bad-input corpus' issue-43 upload cases (files that gave tracebacks):
each runs ``python -m analysis describe FILE`` in a fresh interpreter, exits 2 with its
message, and grows the interpreter's peak memory (``VmHWM``) by less than 500 MB. The
importer cases have the same check in ``tests/analysis/importers/test_importer_limits.py``.
Every upload case under 1 MB is also checked through the CLI and the app's upload path
(issue 43 item 7): :func:`test_every_small_upload_case_in_bounded_memory`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.analysis.importers.test_importer_limits import _CHILD, REPO
from tests.bad_corpus import CASES, GOOD_RESULTS, case_path

#: The importers' child, importing only what ``describe`` needs (Inspect takes seconds).
CHILD = "\n".join("import analysis.cli" if "importers" in line else line
                  for line in _CHILD.splitlines() if "inspect_ai.log" not in line
                  or "importers.bbq" in line)
ISSUE_43 = ("parquet_duplicate_columns", "parquet_binary_non_utf8",
            "parquet_pandas_missing_index", "parquet_pandas_deep_metadata", "huge_column_name",
            "json_lone_surrogate", "excel_sep_line", "utf16_mark_utf8_body")


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES if c.id in ISSUE_43])
def test_issue_43_upload_case_in_bounded_memory(case, tmp_path):
    path, _ = case_path(case, tmp_path)
    assert path.stat().st_size < 2**20 + 2**16
    env = {**os.environ, "PYTHONPATH": REPO}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(["describe", str(path)])],
                          env=env, capture_output=True, text=True, timeout=300, cwd=REPO)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 2 and case.expect("cli") in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert result["growth_mb"] < 500 and result["seconds"] < 30, result


def test_every_issue_43_case_is_in_the_corpus():
    assert {c.id for c in CASES} >= set(ISSUE_43)


#: One interpreter per path runs every upload case of the corpus under 1 MB in turn; the
#: peak (``VmHWM``) is reset before each (``/proc/self/clear_refs``), so each case's growth
#: over the resident size before it is its own. ``ui``: what the Data page's upload does
#: (``load_results`` within the upload budget, then the background job's ``infer_all``);
#: ``cli``: ``analysis.cli.main`` with the case's arguments (default ``describe FILE``).
LOOP = r"""
import contextlib, io, json, os, sys, time
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
import analysis.cli
from analysis.errors import AnalysisError
from analysis.io import load_results
from ui.inference_pool import infer_all
from ui.upload_budget import decoding
channel, cases = sys.argv[1], json.loads(sys.argv[2])
out = {}
for case in cases:
    saved = dict(os.environ)
    os.environ.update(case["env"])
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before, start = status("VmRSS"), time.monotonic()
    if channel == "cli":
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = analysis.cli.main(case["args"])
            except SystemExit as exc:
                code = exc.code
    else:
        data = open(case["path"], "rb").read()
        try:
            with decoding(len(data), case["name"]):
                frame = load_results(data, name=case["name"], **case["options"])
            infer_all(frame)
            code = 0
        except AnalysisError:
            code = 2
        del data
    out[case["id"]] = {"code": code, "seconds": time.monotonic() - start,
                       "growth_mb": (status("VmHWM") - before) / 2**20}
    os.environ.clear()
    os.environ.update(saved)
print(json.dumps(out))
"""


def _small_upload_cases(channel: str, folder) -> list[dict]:
    cases = []
    for case in CASES:
        if case.kind != "upload" or channel not in case.tested:
            continue
        path, _ = case_path(case, folder)
        if path.stat().st_size >= 2**20:  # the bound is for inputs under 1 MB
            continue
        args = [str(a).replace("{file}", str(path)).replace("{good}", str(GOOD_RESULTS))
                for a in (case.get("cli") or ["describe", "{file}"])]
        options = {k: v for k, v in (case.get("options") or {}).items()
                   if k in ("encoding", "sep")}
        cases.append({"id": case.id, "path": str(path), "name": case.name, "args": args,
                      "options": options, "env": {k: str(v) for k, v in
                                                  (case.get("env") or {}).items()}})
    return cases


@pytest.mark.parametrize("channel", ["cli", "ui"])
def test_every_small_upload_case_in_bounded_memory(channel, tmp_path):
    cases = _small_upload_cases(channel, tmp_path)
    assert len(cases) > 40  # the corpus' uploads, not a handful
    env = {**os.environ, "PYTHONPATH": REPO}
    proc = subprocess.run([sys.executable, "-c", LOOP, channel, json.dumps(cases)], env=env,
                          capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(results) == {c["id"] for c in cases}
    heavy = {k: v for k, v in results.items() if v["growth_mb"] >= 500}
    assert heavy == {}, heavy
    print(channel, len(results), "cases; largest growth (MB):",
          max(round(v["growth_mb"]) for v in results.values()))
    crashed = {k: v for k, v in results.items() if v["code"] not in (0, 1, 2, 3)}
    assert crashed == {}, crashed
