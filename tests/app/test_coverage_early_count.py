"""Coverage's count unit read before the Coverage page opens (issue 44 item 3).

A large table whose design carries no inferred item id makes the Coverage page read the
table's structure in the background worker (``ui/coverage.py::counted_for``); at 1M rows
that takes longer than the page's wait. The Data page now submits the same job as soon
as it shows the table with a design (``ui.coverage.start_count_unit``), so the Coverage
page finds it finished: on its first run the cells count the items, not the prompt unit
meanwhile. Tables under ``EARLY_COUNT_ROWS`` rows are left to the Coverage page."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from analysis.design import suggest_design
from tests.app.apptools import page_test
from ui import coverage, inference_pool
from ui.common import token_of


def _table(n: int) -> tuple[pd.DataFrame, object]:
    frame = pd.DataFrame({"example_id": np.repeat(np.arange(n), 2), "model": ["m1", "m2"] * n,
                          "category": np.repeat(["a", "b", "c"], 2 * n // 3),
                          "biased": np.arange(2 * n) % 2})
    return frame, dataclasses.replace(suggest_design(frame), inferred=None)


def _key(frame: pd.DataFrame, design) -> str:
    return f"{token_of(frame)}|coverage|{design.to_json()}"


def _data_page(frame: pd.DataFrame, design):
    at = page_test("data.py", frame=frame, design=design)
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_data_page_starts_the_count_unit_and_coverage_finds_it_done(monkeypatch):
    import analysis.structure

    def on_this_thread(*args, **kwargs):
        raise AssertionError("the structure was read on the visitor's thread")

    frame, design = _table(90)
    monkeypatch.setenv("BIAS_WORKBENCH_INFERENCE_WAIT", "0")  # Coverage would not wait
    monkeypatch.setattr(coverage, "EARLY_COUNT_ROWS", 100)  # 180 rows: "large"
    monkeypatch.setattr(analysis.structure, "infer_structure", on_this_thread)
    assert inference_pool.job(_key(frame, design)) is None
    _data_page(frame, design)
    job = inference_pool.job(_key(frame, design))  # submitted by the Data page
    assert job is not None
    job.wait(120)
    assert job.done and job.result.error is None, job.result
    at = page_test("coverage.py", frame=frame, design=design)
    at.session_state["coverage_factors"] = ["category"]
    at.run()  # the first run of the page: the items at once
    assert not at.exception, at.exception
    assert inference_pool.job(_key(frame, design)) is job  # the same job, not a second
    labels = at.radio(key="coverage_count").options
    assert any("distinct items (example_id" in label for label in labels), labels


def test_a_small_table_is_left_to_the_coverage_page(monkeypatch):
    frame, design = _table(93)
    monkeypatch.setattr(coverage, "EARLY_COUNT_ROWS", 187)  # 186 rows: under it
    _data_page(frame, design)
    assert inference_pool.job(_key(frame, design)) is None
