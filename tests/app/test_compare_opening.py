"""The Compare page's opening from the load-time job (issue 44 item 3).

The job (``ui.inference_pool.count_unit_cells``, on the worker's copy of the applied table:
text columns as categoricals) keys the inferred prompt unit by the factor the page opens
on; the page takes its default compared factor from that key instead of counting the
values of every factor again. It must be the factor the rows give
(``ui.compare.default_by``), and the page must show the same comparison with the job's
answer as without it (every table of the page)."""

from __future__ import annotations

import pandas as pd
import pytest
import streamlit as st

from analysis.names import clash_free
from tests.app.apptools import page_test, sample_with_design
from ui import inference_pool, table_job
from ui.common import _applied, token_of
from ui.compare import default_by


def _table(name: str, step: int):
    frame, design = sample_with_design(name)
    part = frame.iloc[::step]
    frame = pd.concat([part] * 3, ignore_index=True)  # prompts that repeat
    _, design, _ = clash_free(frame.iloc[:0], design)
    return frame, design, _applied(token_of(frame), design.to_json(), frame, design)


@pytest.mark.parametrize(("name", "step"), [("ssqa_simulated.csv.gz", 6),
                                            ("bbq_unifiedqa.csv.gz", 5)])
def test_the_jobs_compared_factor_is_the_rows(name, step):
    _, design, rows = _table(name, step)
    fine = inference_pool.count_unit_cells(
        inference_pool._packed(rows).frame(text_codes=True), design)
    assert list(fine.units) == [default_by(design, rows)]


def test_the_page_opens_on_the_same_comparison_with_the_job(monkeypatch):
    import ui.compare

    frame, design, applied = _table("bbq_unifiedqa.csv.gz", 5)

    def opened():
        at = page_test("compare.py", frame=frame, design=design).run()
        assert not at.exception and not at.error
        return at.selectbox(key="compare_by").value, [d.value for d in at.dataframe]

    monkeypatch.setattr(table_job, "EARLY_COUNT_ROWS", 10**9)  # no job: the rows
    by_rows, overall_rows = opened()
    st.cache_resource.clear()
    monkeypatch.setattr(table_job, "EARLY_COUNT_ROWS", 1_000)
    job = table_job.count_unit_job(applied, design, token=token_of(frame))
    job.wait(300)
    assert job.done and job.result.value.units

    def counted(*args, **kwargs):
        raise AssertionError("the values of every factor were counted again")

    monkeypatch.setattr(ui.compare, "_default_by", counted)
    by_job, overall_job = opened()
    assert by_job == by_rows == default_by(design, applied)
    assert len(overall_job) == len(overall_rows) >= 3  # overall, counts, subgroups
    for a, b in zip(overall_job, overall_rows, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
