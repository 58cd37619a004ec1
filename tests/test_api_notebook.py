"""docs/api_tour.ipynb runs: every code cell executed in order in one namespace, from the
project root (the notebook's own asserts check the numbers it shows)."""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "api_tour.ipynb"


def test_the_api_notebook_runs_every_cell(monkeypatch):
    monkeypatch.chdir(ROOT)
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    code = [("".join(c["source"]), i) for i, c in enumerate(cells) if c["cell_type"] == "code"]
    assert len(code) >= 3
    namespace: dict = {"__name__": "__notebook__"}
    for source, i in code:
        exec(compile(source, f"{NOTEBOOK.name}[cell {i}]", "exec"), namespace)  # noqa: S102
    from analysis import api

    called = {name for name in api.__all__ if f"bw.{name}(" in
              "".join(s for s, _ in code)}
    analyses = set(api.__all__) - {"Result", "prepare_inputs",
                                   "resolve_cluster_option"}  # the composition's helpers
    assert analyses <= called, f"not shown in the notebook: {sorted(analyses - called)}"
    assert os.getcwd() == str(ROOT)
