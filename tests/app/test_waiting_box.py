"""The waiting box of a background job (``ui/pending_design.py::job_notice``): one per job
on the Coverage page, and its refreshes cheap for the server.

Measured in chromium (docs/performance.md, "The waiting box"): each refresh of the box is a
fragment-only script run drawing the box alone (~2 kB to the browser), and the refreshes
stop once the job is done. Before, the Coverage page drew two boxes for its count-unit job
(it asks what a cell counts twice per run: two fragments refreshing twice a second each),
and each refresh cost ~0.1 s of CPU in the ``gc.collect(2)`` Streamlit runs after every
script run, for the imported modules' objects. Deterministic: the job waits for a gate file
the test creates.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
import tempfile
import time
import weakref
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.design import apply_design, suggest_design
from tests.app.apptools import page_test, shown
from ui import inference_pool, pending_design
from ui.common import token_of

WAITING = "structure in the background"


def gated_count_unit(frame: pd.DataFrame, progress=None, *, gate: str,  # noqa: ANN001
                     design_json: str):
    """The Coverage page's count-unit work, once the file ``gate`` exists (in the worker)."""
    deadline = time.monotonic() + 120
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return inference_pool.design_work(frame, progress, function=inference_pool.count_unit_cells,
                                      design_json=design_json)


def _boxes(at) -> list[str]:  # noqa: ANN001
    return [t for t in (shown(e.value) for e in at.info) if WAITING in t]


class _Cycle:
    """An object in a reference cycle: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def thawed():
    gc.unfreeze()
    pending_design._FROZEN.clear()
    yield
    gc.unfreeze()
    pending_design._FROZEN.clear()


def test_the_coverage_page_shows_one_waiting_box_for_its_job(monkeypatch, thawed):
    n = 60
    frame = pd.DataFrame({"example_id": np.repeat(np.arange(n), 2), "model": ["m1", "m2"] * n,
                          "category": np.repeat(["a", "b", "c"], 2 * n // 3),
                          "biased": np.arange(2 * n) % 2})
    frame["stamp"] = time.monotonic_ns()  # a table (and so a job) of this test run only
    design = dataclasses.replace(suggest_design(frame), inferred=None)  # the unit is read
    assert "stamp" not in design.names
    gate = Path(tempfile.gettempdir()) / f"gate_waiting_{os.getpid()}_{time.monotonic_ns()}"
    monkeypatch.setenv("BIAS_WORKBENCH_INFERENCE_WAIT", "0")
    at = page_test("coverage.py", frame=frame, design=design)
    at.session_state["coverage_factors"] = ["category"]
    key = f"{token_of(frame)}|coverage|{design.to_json()}"  # ui/table_job.py's job key
    job = inference_pool.submit(key, apply_design(frame, design), work=functools.partial(
        gated_count_unit, gate=str(gate), design_json=design.to_json()))
    try:
        at.run()
        assert not at.exception, at.exception
        assert not job.done
        assert len(_boxes(at)) == 1, _boxes(at)
        assert gc.get_freeze_count() == 0  # the box drawn in a full run: nothing frozen
        labels = at.radio(key="coverage_count").options
        assert any("distinct prompts" in label for label in labels), labels  # meanwhile
        gate.touch()
        assert job.wait(120) and job.result.error is None, job.result
    finally:
        gate.unlink(missing_ok=True)
    at.run()  # the refresh that finds the job done reruns the page: no box, no refresh
    assert not at.exception and _boxes(at) == []
    labels = at.radio(key="coverage_count").options
    assert any("distinct items (example_id" in label for label in labels), labels


def test_a_refresh_freezes_the_heap_and_the_next_page_run_thaws_it(monkeypatch, thawed):
    monkeypatch.setattr(pending_design, "_in_fragment_rerun", lambda: True)  # a box's refresh
    garbage = _Cycle()
    gone = weakref.ref(garbage)
    pending_design._freeze_for_the_refresh()
    assert gc.get_freeze_count() > 0
    del garbage
    gc.collect(2)  # what Streamlit runs after the refresh: the frozen objects are skipped
    assert gone() is not None
    pending_design.adopt_finished()  # the top of the next full run of any page
    assert gc.get_freeze_count() == 0
    gc.collect(2)  # ... whose own collection sees everything again: nothing is kept
    assert gone() is None


def test_a_full_run_drawing_the_box_freezes_nothing(monkeypatch, thawed):
    monkeypatch.setattr(pending_design, "_in_fragment_rerun", lambda: False)
    pending_design._freeze_for_the_refresh()
    assert gc.get_freeze_count() == 0 and not pending_design._FROZEN
    pending_design._thaw()  # nothing to undo
    assert gc.get_freeze_count() == 0
