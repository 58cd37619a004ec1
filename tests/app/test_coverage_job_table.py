"""The Coverage page's count-unit job is of the page's table (the design applied).

The job also computes what the Disparity and Cohorts pages open on
(``ui.disparity_job.disparity_openers``), which those pages then take from it. The page's
count choice used to submit the job with the session's *unapplied* table: the job's numeric
columns then lacked what applying the design adds (``deviation_original`` when the
outcome is another column), and a Disparity page opened after Coverage offered no such
feature or baseline (found as an order-dependent failure of ``test_parity_pages``)."""

from __future__ import annotations

import numpy as np

from tests.app.apptools import page_test, sample_with_design
from ui import inference_pool, table_job


def test_a_disparity_page_after_coverage_offers_the_applied_tables_columns(monkeypatch):
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    # a table of its own (its token: no job or cached step of another test applies)
    frame = frame.assign(probe=np.random.default_rng().random())
    assert not table_job.item_known(frame, design)  # the job reads the structure
    monkeypatch.setenv("BIAS_WORKBENCH_INFERENCE_WAIT", "120")
    at = page_test("coverage.py", frame=frame, design=design, name="ssqa")
    at.run()
    assert not at.exception, at.exception
    from analysis.names import clash_free
    from ui.active import token_of

    key = f"{token_of(frame)}|coverage|{clash_free(frame.iloc[:0], design)[1].to_json()}"
    job = inference_pool.job(key)
    assert job is not None and job.done and job.result.error is None
    openers = job.result.value.disparity
    (numeric,) = [v for (name, _), v in openers["per_table"].items()
                  if name.endswith(".numeric_columns")]
    assert "deviation_original" in numeric, numeric  # the applied table's column
    page = page_test("disparity.py", frame=frame, design=design, name="ssqa")
    page.session_state["disparity_feature"] = "sentiment"
    page.run()
    assert not page.exception
    assert "deviation_original" in page.selectbox(key="disparity_baseline").options
