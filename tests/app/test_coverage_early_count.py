"""Coverage's count unit read before the Coverage page opens (issue 44 item 3).

A large table whose design carries no inferred item id makes the Coverage page read the
table's structure in the background worker (``ui/coverage.py::counted_for``); at 1M rows
that takes longer than the page's wait. The Data page now submits the same job as soon
as it shows the table with a design (``ui.coverage.start_count_unit``), so the Coverage
page finds it finished: on its first run the cells count the items, not the prompt unit
meanwhile. Tables under ``EARLY_COUNT_ROWS`` rows get it from the Data page alone."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from analysis.design import suggest_design
from tests.app.apptools import page_test
from ui import inference_pool, table_job
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
    monkeypatch.setattr(table_job, "EARLY_COUNT_ROWS", 100)  # 180 rows: "large"
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


def test_a_small_table_gets_its_job_from_the_data_page_alone(monkeypatch):
    """Under ``EARLY_COUNT_ROWS`` rows the Data page (after its structure section) submits
    the job too: the 10k-row Coverage page waited for it within its first render
    (docs/performance.md, "Small tables"); another page's ``ensure_data`` does not, and a
    design that names the item id has nothing to read."""
    frame, design = _table(93)
    monkeypatch.setattr(table_job, "EARLY_COUNT_ROWS", 187)  # 186 rows: under it
    other = page_test("ecdf.py", frame=frame, design=design)
    other.run()
    assert not other.exception, other.exception
    assert inference_pool.job(_key(frame, design)) is None  # not from every page
    _data_page(frame, design)
    job = inference_pool.job(_key(frame, design))
    assert job is not None
    job.wait(120)
    assert job.done and job.result.error is None, job.result
    known, known_design = _table(87)
    known_design = suggest_design(known)  # its inferred block names the item id
    assert table_job.item_known(known, known_design)
    _data_page(known, known_design)
    assert inference_pool.job(_key(known, known_design)) is None


def test_the_coverage_cells_summed_from_the_jobs_cells_are_the_rows_cells():
    """``ui.inference_pool.count_unit_cells`` (what the job returns with the count unit):
    every coverage cell table the page asks for, summed from its cells, equals the one
    counted on the rows (prompts and responses, subsets, a grid of some factors), and so
    does the whole coverage Result; a table whose cells are as many as its rows keeps no
    cells (the rows are counted)."""
    from analysis import api as bw
    from analysis.names import clash_free
    from tests.app.apptools import sample_with_design
    from ui.common import _applied
    from ui.table_job import NO_STRUCTURE, in_first_order

    sample, design = sample_with_design("bbq_unifiedqa.csv.gz")
    part = sample.iloc[::4]
    frame = pd.concat([part, part, part.iloc[::3]], ignore_index=True)  # rows that repeat
    _, design, _ = clash_free(frame.iloc[:0], design)
    rows = _applied(token_of(frame), design.to_json(), frame, design)
    # as the worker gets it: the text columns as categoricals of their Arrow dictionary
    fine = inference_pool.count_unit_cells(
        inference_pool._packed(rows).frame(text_codes=True), design)
    assert fine.unit == bw.count_unit(rows, design, applied=True)
    assert fine.unit.noun == "items" and fine.cells is not None
    assert len(fine.cells) < len(rows) // 2
    prompt_unit = bw.count_unit(rows, design, structure=NO_STRUCTURE, applied=True)
    cases = [(["category", "context_condition"], {}, "prompts", fine.unit),
             (list(design.names), {"input_format": ["arc", "race"]}, "prompts", fine.unit),
             (["subcategory"], {"category": ["Age"]}, "responses", fine.unit),
             (["question_polarity", "input_format"], {}, "prompts", prompt_unit)]
    for factors, where, unit, counted in cases:
        kw = {"factors": factors, "where": where or None, "count": unit, "counted": counted,
              "applied": True}
        on_rows = bw.coverage_cells(rows, design, **kw)
        summed = bw.coverage_cells(fine.cells, design, **kw)
        pd.testing.assert_frame_equal(summed.frame, on_rows.frame, check_exact=True)
        assert (summed.unit, summed.n_rows) == (on_rows.unit, on_rows.n_rows)
        a = bw.coverage(rows, design, factors=factors, where=where or None, applied=True,
                        cells=on_rows)
        b = bw.coverage(rows, design, factors=factors, where=where or None, applied=True,
                        cells=summed)
        pd.testing.assert_frame_equal(a.table, b.table, check_exact=True)
        for name in a.tables:
            pd.testing.assert_frame_equal(a.tables[name], b.tables[name], check_exact=True)
        assert a.notes == b.notes
    assert fine.outcome_cells is not None and rows["deviation"].isna().any()
    for factors, where in [(list(design.names), {}), (["category"], {"input_format": ["arc"]}),
                           (["context_condition", "question_polarity"], {}),
                           (["category", "input_format", "template_id"], {}),
                           (["context_condition", "template_id"], {"category": ["Religion"]})]:
        for with_outcome in (True, False):
            kw = {"factors": factors, "where": where or None, "with_outcome": with_outcome}
            cells = fine.outcome_cells
            if with_outcome and "template_id" in factors:  # as ui.common.cells_for has them
                cells = in_first_order(cells, "template_id", where)
            elif "template_id" in factors:
                continue  # (cells_for without the outcome: the rows)
            pd.testing.assert_frame_equal(bw.cells(cells, **kw).table,
                                          bw.cells(rows, **kw).table, check_exact=True)
    by = inference_pool.bbq_groupings(rows)
    assert fine.bbq[0] == tuple(by) == ("category", "input_format")
    pd.testing.assert_frame_equal(fine.bbq[1], bw.bbq_scores(rows, by=by[:2]).table,
                                  check_exact=True)
    from ui.compare import default_by

    by = default_by(design, rows)  # the Compare page's inferred prompt unit
    assert list(fine.units) == [by]
    assert fine.units[by] == bw.prompt_unit(rows, design, by=by, applied=True).raw
    distinct, d_design = _table(90)
    distinct = distinct.assign(example_id=np.arange(len(distinct)))  # every row its own
    assert inference_pool.count_unit_cells(distinct, d_design).cells is None


def test_n_distinct_is_nunique():
    """``analysis.values.n_distinct`` (the page defaults' counts of values, from a
    categorical's codes) equals pandas' ``nunique``: missing values, unused categories,
    an empty column, text and numbers."""
    from analysis.values import n_distinct

    cases = [pd.Series(pd.Categorical(["a", None, "b", "a"], categories=["a", "b", "c"])),
             pd.Series(pd.Categorical([None, None], categories=["a"])),
             pd.Series(pd.Categorical([], categories=["a", "b"])),
             pd.Series(pd.Categorical(["z", "y"])), pd.Series(["x", None, "x", "w"]),
             pd.Series([1.0, np.nan, 2.0, 1.0]), pd.Series([], dtype=float)]
    for s in cases:
        assert n_distinct(s) == s.nunique(), s
