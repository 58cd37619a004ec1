"""Peak memory of the bad-input corpus' issue-43 upload cases (files that gave tracebacks):
each runs ``python -m analysis describe FILE`` in a fresh interpreter, exits 2 with its
message, and grows the interpreter's peak memory (``VmHWM``) by less than 500 MB. The
importer cases have the same check in ``tests/analysis/importers/test_importer_limits.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.analysis.importers.test_importer_limits import _CHILD, REPO
from tests.bad_corpus import CASES, case_path

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
