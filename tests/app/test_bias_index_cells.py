"""The Bias index from a cell table instead of the rows (issue 44 item 3).

The page passes its cached cell table (``ui.common.cells_for``: at 1M rows summed from the
load-time job's outcome cells) to :func:`analysis.api.bias_index`, which sums the
dimension scores from it. The Result must be the rows' Result exactly: for every score,
model split, weighting and subset; a model whose outcome is always missing and a model
value without rows as on the rows; and the cells are ignored where the index reads the
rows (a sentiment column, the coverage penalty)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import api as bw
from analysis import cell_counts
from analysis.columns import DEVIATIONS
from analysis.design import apply_design
from tests.app.apptools import page_test, sample_with_design
from ui import inference_pool, table_job
from ui.common import token_of

SCORES = ("deviation_metric", "max_abs_log_disparity", "one_minus_impact_ratio")


def _same(a, b) -> None:
    assert (a.notes, a.settings, a.tables.keys()) == (b.notes, b.settings, b.tables.keys())
    for x, y in zip([a.table, *a.tables.values()], [b.table, *b.tables.values()], strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)


def _counted(monkeypatch) -> list[int]:
    """The sizes of the tables every cell count groups from now on."""
    counted = []
    real = cell_counts._group

    def group(table, *args, **kwargs):
        counted.append(len(table))
        return real(table, *args, **kwargs)

    monkeypatch.setattr(cell_counts, "_group", group)
    return counted


@pytest.fixture(scope="module")
def ssqa():
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    return apply_design(frame, design), design


def _cases(design, model):
    dims = [f for f in ("pachankis_cluster", "gender", "cot") if f != model]
    for score in SCORES:
        for where in ({}, {"prompt_style": ["base"]}, {"gender": ["female", "male"]}):
            yield {"factors": dims[:2], "scores": score, "where": where, "model": model}
    yield {"factors": dims, "weights": "2,1,0.5", "model": model, "where": {}}
    yield {"factors": dims, "weights": "2,1,0.5", "normalize_weights": False, "model": model,
           "where": {}}
    yield {"factors": dims[:1], "printed_equation": True, "model": model, "where": {}}


@pytest.mark.parametrize("model", ["model", "prompt_style", None])
def test_the_index_summed_from_cells_is_the_rows_index(ssqa, model):
    rows, design = ssqa
    for case in _cases(design, model):
        where = case["where"]
        columns = list(dict.fromkeys([*([model] if model else []), *case["factors"], *where]))
        cells = bw.cells(rows, factors=columns, where=where or None).table
        on_rows = bw.bias_index(rows, design, applied=True, **case)
        summed = bw.bias_index(rows, design, applied=True, cells=cells, **case)
        _same(summed, on_rows)


def test_the_cells_are_used(ssqa, monkeypatch):
    """With cells, no cell table is counted from the rows (the scores are summed)."""
    rows, design = ssqa
    cells = bw.cells(rows, factors=["model", "gender", "cot"]).table
    counted = _counted(monkeypatch)
    bw.bias_index(rows, design, factors=["gender", "cot"], model="model", applied=True,
                  cells=cells)
    assert counted and max(counted) <= len(cells) < len(rows) // 100


def test_missing_outcomes_and_models_without_rows_as_on_the_rows(ssqa):
    rows, design = ssqa
    rows = rows.copy()
    rows["model"] = rows["model"].cat.add_categories(["no-rows", "unknown"])
    rows.loc[rows.index[:500], "model"] = "unknown"  # a model whose outcome is missing
    rows.loc[rows.index[:500], "deviation"] = np.nan
    rows.loc[rows.index[500:900], "deviation"] = np.nan  # and some of another's
    cells = bw.cells(rows, factors=["model", "gender", "cot"]).table
    assert "unknown" not in set(cells["model"].astype(str))
    kw = {"factors": ["gender", "cot"], "model": "model"}
    from analysis.errors import AnalysisError

    with pytest.raises(AnalysisError) as on_rows:  # no rate for the deviation metric
        bw.bias_index(rows, design, applied=True, **kw)
    with pytest.raises(AnalysisError) as summed:
        bw.bias_index(rows, design, applied=True, cells=cells, **kw)
    assert str(summed.value) == str(on_rows.value)
    for score in SCORES[1:]:
        kw["scores"] = score
        on_rows = bw.bias_index(rows, design, applied=True, **kw)
        assert "unknown" in set(on_rows.table["model"]) and "no-rows" not in set(
            on_rows.table["model"])
        _same(bw.bias_index(rows, design, applied=True, cells=cells, **kw), on_rows)


def test_cells_are_ignored_where_the_index_reads_the_rows(ssqa):
    """A sentiment column or the coverage penalty: the rows, whatever the cells say (here
    cells with wrong counts), and so do cells that lack a dimension or the subset's
    factor."""
    rows, design = ssqa
    cells = bw.cells(rows, factors=["model", "gender", "cot"]).table
    wrong = cells.assign(**{DEVIATIONS: cells[DEVIATIONS] // 2})
    base = {"factors": ["gender", "cot"], "model": "model"}
    for kw in ({"sentiment": "sentiment"}, {"penalty_gini": 1.0},
               {"where": {"prompt_style": ["base"]}}, {"factors": ["gender", "stigma"]}):
        kw = {**base, **kw}
        on_rows = bw.bias_index(rows, design, applied=True, **kw)
        _same(bw.bias_index(rows, design, applied=True, cells=wrong, **kw), on_rows)
    assert not bw.bias_index(rows, design, applied=True, cells=wrong, **base).table.equals(
        bw.bias_index(rows, design, applied=True, **base).table)  # (they would differ)


def test_the_page_at_load_time_cells_shows_the_rows_index(monkeypatch):
    """A "large" table (the load-time job's threshold lowered): the page's first render
    sums the job's outcome cells (no row is counted on the visitor's thread) and shows
    the index of the rows."""
    from analysis.columns import LLMBI, MODEL
    from analysis.names import clash_free
    from ui.common import _applied

    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    part = frame.iloc[::4]
    frame = pd.concat([part] * 4, ignore_index=True)  # the cells: fewer than rows
    monkeypatch.setattr(table_job, "EARLY_COUNT_ROWS", 1_000)
    _, design, _ = clash_free(frame.iloc[:0], design)
    applied = _applied(token_of(frame), design.to_json(), frame, design)
    job = table_job.count_unit_job(applied, design, token=token_of(frame))
    job.wait(300)
    assert job.done and job.result.error is None, job.result
    fine = job.result.value.outcome_cells
    assert fine is not None and len(fine) <= len(frame) // 4
    assert inference_pool.job(f"{token_of(frame)}|coverage|{design.to_json()}") is job
    counted = _counted(monkeypatch)
    at = page_test("bias_index.py", frame=frame, design=design).run()
    assert not at.exception and not at.error
    assert counted and max(counted) <= len(fine)  # the job's cells, not the rows
    dims = at.multiselect(key="index_dimensions").value
    totals = at.dataframe[0].value.set_index(MODEL)
    ref = bw.bias_index(applied, design, factors=dims, model="model", applied=True)
    pd.testing.assert_series_equal(totals[LLMBI], ref.table.set_index(MODEL)[LLMBI]
                                   .loc[totals.index], check_exact=True)
