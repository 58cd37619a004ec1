"""A large table's load-time job also warms the statistics imports (issue 44 item 3).

At 1M rows the pages' opening results come from the load-time job's worker, so no page
before eCDF imported SciPy's statistics modules in the server, and the eCDF page's KS test
paid that import (0.8 s CPU) within its first render. ``ui.table_job.start_count_unit``
now imports ``WARM_MODULES`` in a daemon thread when it submits the job, once per process.
"""

from __future__ import annotations

import sys
import threading

from tests.app.test_coverage_early_count import _data_page, _table
from ui import table_job


def _warming() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "warm-imports"]


def test_submitting_the_load_time_job_warms_the_imports_once(monkeypatch):
    frame, design = _table(84)  # not test_coverage_early_count's table: its job is its own
    monkeypatch.setattr(table_job, "EARLY_COUNT_ROWS", 100)  # 168 rows: "large"
    monkeypatch.setattr(table_job, "_WARMED", [])
    monkeypatch.setattr(table_job, "WARM_MODULES", ("colorsys",))  # (a module not loaded)
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    _data_page(frame, design)
    for thread in _warming():
        thread.join(30)
    assert "colorsys" in sys.modules
    assert table_job._WARMED == [True]
    assert not table_job.warm_imports()  # once per process


def test_a_small_table_loaded_warms_the_imports_from_the_data_page(monkeypatch):
    """A small table's first renders paid the imports too (the Subgroups page at 10k rows:
    SciPy's statistics and the REML module of its headline), so the Data page warms
    them once a small table is loaded, whether or not it has a job (its design names the
    item id); not for the table the session opened on (a fresh server's first page, the
    bundled sample: ``tests/app/test_first_page_imports.py``)."""
    from analysis.design import suggest_design
    from ui.common import token_of

    opened, opened_design = _table(78)
    frame, _ = _table(96)
    design = suggest_design(frame)
    assert table_job.item_known(frame, design)  # no job: only the imports
    monkeypatch.setattr(table_job, "EARLY_COUNT_ROWS", 1_000)  # 156 and 192 rows: under it
    monkeypatch.setattr(table_job, "_WARMED", [])
    monkeypatch.setattr(table_job, "WARM_MODULES", ("colorsys",))
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    at = _data_page(opened, opened_design)  # the table the session opened on
    assert table_job._WARMED == []
    at.session_state["results_frame"] = frame  # then a table loaded (as an upload does)
    at.session_state["results_token"] = token_of(frame)
    at.session_state["design"] = design
    at.run()
    assert not at.exception, at.exception
    for thread in _warming():
        thread.join(30)
    assert table_job._WARMED == [True]
    assert "colorsys" in sys.modules

