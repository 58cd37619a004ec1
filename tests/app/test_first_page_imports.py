"""The first page of a fresh server pays for no scipy or statsmodels import (issue 32).

A new process runs ``app.py`` under AppTest (the navigation opens the Data page on the
bundled sample, as a first visit does) and lists which heavy modules it imported. An
analysis page is run the same way as a control: the check can see scipy when it is there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("scipy", "scipy.stats", "statsmodels", "sklearn")

SCRIPT = """
import json, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=300)
if len(sys.argv) > 2:
    at.switch_page(sys.argv[2])
at.run()
print(json.dumps({"titles": [t.value for t in at.title],
                  "exceptions": [e.value for e in at.exception],
                  "loaded": [m for m in HEAVY if m in sys.modules]}))
""".replace("HEAVY", repr(HEAVY))


def _run(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ROOT / "app.py"), *args], cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1"),
        capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_first_page_imports_no_scipy_or_statsmodels():
    first = _run()
    assert first["titles"] == ["Data"] and first["exceptions"] == []
    assert first["loaded"] == []
    control = _run("pages/ecdf.py")  # the eCDF page's KS tests need scipy.stats
    assert control["titles"] == ["eCDF"] and control["exceptions"] == []
    assert "scipy.stats" in control["loaded"]


LOADING = """
import json, sys
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest
seen = []
original = DeltaGenerator.info
def info(self, body, *args, **kwargs):
    seen.append({"text": str(body), "pandas": "pandas" in sys.modules,
                 "analysis": "analysis.design" in sys.modules})
    return original(self, body, *args, **kwargs)
DeltaGenerator.info = info
at = AppTest.from_file(sys.argv[1], default_timeout=300)
at.run()
print(json.dumps({"seen": seen, "infos": [i.value for i in at.info],
                  "titles": [t.value for t in at.title]}))
"""


def test_a_fresh_server_says_it_is_loading_before_the_heavy_imports():
    """Issue 42: the first page of a fresh server was blank for seconds (benchmark:
    benchmarks/bench_first_page.py). The loading message is sent before pandas and the
    analysis modules are imported, and gone once the page has run."""
    out = subprocess.run(
        [sys.executable, "-c", LOADING, str(ROOT / "app.py")], cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1"),
        capture_output=True, text=True, timeout=600, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    first = result["seen"][0]
    assert first["text"].startswith("Starting the bias workbench")
    assert not first["analysis"]  # sent before the workbench's modules are imported
    assert result["titles"] == ["Data"]
    assert not [i for i in result["infos"] if i.startswith("Starting the bias workbench")]
