"""The Factor importance page's cells summed from the load-time job's (issue 44 item 3).

A table uploaded as Parquet reads its text columns as categoricals (the reader keeps the
file's dictionary encoding), BBQ's cluster ``template_id`` among them. The job's outcome
cells (``ui.inference_pool.count_unit_cells``: factors x cluster) were then never used
for the page's clustered fit (``ui.table_job.fine_cells`` left a categorical cluster to
the rows), so at 1M rows its first render counted every row. With the same categories in
the same order the cells sum to the rows' very cell table (``same_categories``); the
page's numbers must be the rows' exactly."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import api as bw
from analysis.options.importance import ImportanceOptions
from ui import inference_pool, table_job
from ui.common import token_of


def _rows(**changes):
    from analysis.names import clash_free
    from tests.app.apptools import sample_with_design
    from ui.common import _applied

    sample, design = sample_with_design("bbq_unifiedqa.csv.gz")
    part = sample.iloc[::2]  # (every 3rd row has one input format)
    frame = pd.concat([part, part.iloc[::3]], ignore_index=True)
    frame = frame.assign(template_id=frame["template_id"].astype("category"), **changes)
    _, design, _ = clash_free(frame.iloc[:0], design)
    return frame, _applied(token_of(frame), design.to_json(), frame, design), design


#: (the model's factors, the subset); the page's cells are over the factors, the subset's
#: factors and the cluster (``pages/importance.py``'s ``cell_factors``).
CASES = [(["category", "context_condition"], {}),
         (["category", "question_polarity"], {"category": ["Age", "Religion"]}),
         (["question_polarity", "context_condition"],
          {"input_format": ["arc", "race"], "category": ["Nationality"]})]


@pytest.fixture
def job_done(monkeypatch):
    """A table with a categorical cluster, its load-time job run and finished."""
    frame, rows, design = _rows()
    monkeypatch.setattr(table_job, "EARLY_COUNT_ROWS", 100)
    job = table_job.count_unit_job(rows, design, token=token_of(frame))
    job.wait(120)
    assert job.done and job.result.error is None, job.result
    return frame, rows, design


def test_the_jobs_cells_give_the_rows_cells_and_fit(job_done, monkeypatch):
    frame, rows, design = job_done
    assert isinstance(rows["template_id"].dtype, pd.CategoricalDtype)
    with monkeypatch.context() as m:  # the job of this table (a page has its token)
        m.setattr(table_job, "_job_key", lambda d, token=None: _key(frame, d))
        for model, where in CASES:
            factors = list(dict.fromkeys([*model, *where, "template_id"]))
            cells = table_job.fine_cells(rows, design, factors, where, outcome=True)
            assert cells is not None, (factors, where)
            summed = bw.cells(cells, factors=factors, where=where or None, with_outcome=True)
            counted = bw.cells(rows, factors=factors, where=where or None, with_outcome=True)
            pd.testing.assert_frame_equal(summed.table, counted.table, check_exact=True)
            opts = ImportanceOptions()
            a = bw.importance(rows, design, options=opts, applied=True, factors=model,
                              where=where, cells=summed.table)
            b = bw.importance(rows, design, options=opts, applied=True, factors=model,
                              where=where, cells=counted.table)
            c = bw.importance(rows, design, options=opts, applied=True, factors=model,
                              where=where)  # the rows themselves
            assert a.raw.cluster == "template_id" and a.raw.n_clusters > 1
            for other in (b, c):
                pd.testing.assert_frame_equal(a.table, other.table, check_exact=True)
                for name in a.tables:
                    pd.testing.assert_frame_equal(a.tables[name], other.tables[name],
                                                  check_exact=True)
                assert a.notes == other.notes


def _key(frame, design) -> str:
    return f"{token_of(frame)}|coverage|{design.to_json()}"


@pytest.mark.parametrize("change", ["missing", "order"])
def test_a_cluster_coded_otherwise_is_counted_on_the_rows(change):
    """A cluster with a missing value ("(missing)" is added to the rows' values only where
    a counted row lacks one) or whose categories are in another order than the job's:
    the rows are counted."""
    _, rows, design = _rows()
    cells = inference_pool.count_unit_cells(
        inference_pool._packed(rows).frame(text_codes=True), design).outcome_cells
    cluster = rows["template_id"]
    if change == "missing":
        other = cluster.copy()
        other.iloc[5] = None
    else:
        other = cluster.cat.reorder_categories(list(cluster.cat.categories[::-1]))
    assert table_job.same_categories(cells["template_id"], cluster)
    assert not table_job.same_categories(cells["template_id"], other)


def test_the_importance_page_opens_on_the_jobs_cells(job_done, monkeypatch):
    """With the job finished, the page's first render counts no row for its cell tables
    (the factor suggestion's and the clustered fit's) and shows the rows' coefficients."""
    frame, rows, design = job_done
    from tests.app.apptools import page_test

    at = page_test("importance.py", frame=frame, design=design)
    seen: list[int] = []
    cells = bw.cells

    def spy(data, *args, **kwargs):
        seen.append(len(data))
        return cells(data, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(bw, "cells", spy)
        at.run()
    assert not at.exception, at.exception
    assert seen and max(seen) < len(rows) // 2, seen  # the job's cells, never the rows
    shown = at.dataframe[0].value  # the coefficients
    factors = at.session_state["importance_factors"]
    on_rows = bw.importance(rows, design, options=ImportanceOptions(), applied=True,
                            factors=factors, where={})
    assert on_rows.raw.cluster == "template_id"
    pd.testing.assert_frame_equal(shown.reset_index(drop=True),
                                  on_rows.raw.terms.reset_index(drop=True), check_exact=True)
