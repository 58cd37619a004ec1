"""The default factors' nesting test on the load-time job's cells (issue 44 item 3).

``ui.defaults._coded`` gives the nesting test (``analysis.nesting.find_nestings``) the
job's cell table instead of the 1M applied rows when every candidate factor has a
declared reference: the nestings depend only on which value pairs occur and on the
values' text, so the unnested defaults must be the rows' for every candidate order and
``k``; a factor without a declared reference (its most frequent value is read on the
rows) keeps the rows."""

from __future__ import annotations

import dataclasses
import itertools

import pandas as pd
import pytest

from analysis.factor_defaults import unnested_factors
from analysis.names import clash_free
from tests.app.apptools import sample_with_design
from ui import inference_pool
from ui.common import _applied, token_of


def _rows(name: str):
    frame, design = sample_with_design(name)
    part = frame.iloc[::3]
    frame = pd.concat([part, part], ignore_index=True)
    _, design, _ = clash_free(frame.iloc[:0], design)
    rows = _applied(token_of(frame), design.to_json(), frame, design)
    fine = inference_pool.count_unit_cells(
        inference_pool._packed(rows).frame(text_codes=True), design)
    return rows, design, fine.cells


@pytest.mark.parametrize("name", ["bbq_unifiedqa.csv.gz", "ssqa_simulated.csv.gz"])
def test_the_unnested_defaults_from_the_jobs_cells_are_the_rows(name):
    rows, design, cells = _rows(name)
    assert cells is not None and len(cells) <= len(rows) // 2
    assert all(cells[f].dtype == rows[f].dtype for f in design.names)
    if any(design.factor(f).reference is None for f in design.names):  # as _coded does
        design = dataclasses.replace(design, factors=[
            dataclasses.replace(f, reference=f.reference or str(f.values[0]))
            for f in design.factors])
    names = list(design.names)
    orders = [names, names[::-1], *itertools.islice(itertools.permutations(names, 4), 0, 60, 7)]
    for order in orders:
        for k in (1, 2, 3, len(order)):
            assert unnested_factors(cells, design, order, k) == \
                unnested_factors(rows, design, order, k), (order, k)


def test_the_defaults_module_uses_the_cells_only_with_declared_references(monkeypatch):
    """``_coded`` returns the job's cells for the nesting test only when every factor has a
    reference; else (and for the value counts) the applied rows."""
    import streamlit as st

    from ui import defaults, table_job

    frame, design = sample_with_design("bbq_unifiedqa.csv.gz")
    rows = _applied(token_of(frame), design.to_json(), frame, design)
    cells = rows.iloc[:10]  # stands for the job's cells

    monkeypatch.setattr(table_job, "fine_cells", lambda *a, **k: cells)
    monkeypatch.setattr(st, "session_state", {"design": design, "results_frame": frame,
                                              "results_token": token_of(frame)})
    with_ref = [f for f in design.names if design.factor(f).reference is not None]
    without = [f.name for f in design.factors if f.reference is None]
    assert defaults._coded(frame, with_ref) is cells
    assert defaults._coded(frame, with_ref, counts=True) is not cells
    if without:
        assert defaults._coded(frame, [*with_ref, *without]) is not cells
    monkeypatch.setattr(table_job, "fine_cells", lambda *a, **k: None)  # no job yet
    assert len(defaults._coded(frame, with_ref)) == len(frame)
