"""The Disparity (and Cohorts) page's opening parts computed by the load-time job (issue 44 item 3).

``ui.disparity_job.disparity_openers`` runs in the job's worker on the applied table with
its text columns as categoricals (``ui.inference_pool._Packed.frame(text_codes=True)``);
the page seeds its parts store with them. The Result from the seeded store must be the
rows' Result exactly, for the defaults (every part from the job: no row is read again)
and for other options (their parts computed on the rows)."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import api as bw
from analysis import disparity as dsp
from analysis.disparity_parts import DisparityParts
from analysis.factor_defaults import numeric_columns, unnested_factors, useful_factors
from ui import inference_pool
from ui.common import token_of
from ui.disparity_job import seed_parts


def _rows(again: int = 0):
    from analysis.names import clash_free
    from tests.app.apptools import sample_with_design
    from ui.common import _applied

    sample, design = sample_with_design("bbq_unifiedqa.csv.gz")
    part = sample.iloc[::3]
    frame = pd.concat([part, part.iloc[again::2]], ignore_index=True)
    _, design, _ = clash_free(frame.iloc[:0], design)
    return _applied(token_of(frame), design.to_json(), frame, design), design


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(a.table, b.table, check_exact=True)
    assert a.tables.keys() == b.tables.keys()
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name], check_exact=True)
    assert a.notes == b.notes and a.settings == b.settings
    assert a.raw.dixon == b.raw.dixon


def test_the_jobs_disparity_parts_give_the_rows_result(monkeypatch):
    rows, design = _rows()
    worker = inference_pool._packed(rows).frame(text_codes=True)
    opened = inference_pool.count_unit_cells(worker, design).disparity
    from analysis.design import Design
    from ui.opening import category_columns, observed_categories, step_key

    # the pages' per_table keys: the job's design (from its JSON) has the page's repr
    assert repr(Design.from_text(design.to_json())) == repr(design)
    candidates = category_columns(rows, design)
    assert opened["per_table"] == {
        step_key(numeric_columns, design): numeric_columns(rows, design),
        step_key(category_columns, design): candidates,
        step_key(observed_categories, candidates[0]): observed_categories(rows, candidates[0])}
    kinds = ("domain", "prompt", "model")
    assert opened["by"] == unnested_factors(rows, design, useful_factors(rows, design, kinds),
                                            1)
    feature, by = opened["feature"], opened["by"]
    assert feature == numeric_columns(rows, design)[0]
    items = seed_parts(opened, rows)
    assert {kind for (kind, _), _ in items} == {"grouping", "summary", "selection",
                                                 "permutation", "saged"}
    on_rows = bw.disparity(rows, design, feature=feature, by=by, applied=True)
    store = DisparityParts()
    store.seed(items)

    def read_rows(*args, **kwargs):
        raise AssertionError("the rows were grouped again")

    with monkeypatch.context() as m:  # the defaults: every part from the job
        m.setattr(dsp, "grouping", read_rows)
        seeded = bw.disparity(rows, design, feature=feature, by=by, applied=True, parts=store)
        without = bw.disparity(rows, design, feature=feature, by=by, applied=True, parts=store,
                               n_resamples=0)
    _same(seeded, on_rows)
    _same(without, bw.disparity(rows, design, feature=feature, by=by, applied=True,
                                n_resamples=0))
    box_rows = on_rows.meta["grouping"].values_by_group()
    for a, b in zip(seeded.meta["grouping"].values_by_group(), box_rows, strict=True):
        assert a.tobytes() == b.tobytes()
    for changed in ({"standard": "median"}, {"statistic": "median", "seed": 7},
                    {"conventions": "saged", "quantiles": (0.1, 0.9)}):
        _same(bw.disparity(rows, design, feature=feature, by=by, applied=True, parts=store,
                           **changed),
              bw.disparity(rows, design, feature=feature, by=by, applied=True, **changed))


@pytest.mark.parametrize("change", ["dtype", "column"])
def test_parts_of_another_table_are_not_used(change):
    rows, design = _rows()
    opened = inference_pool.count_unit_cells(
        inference_pool._packed(rows).frame(text_codes=True), design).disparity
    by = opened["by"][0]
    other = rows.assign(**{by: rows[by].astype(str)}) if change == "dtype" \
        else rows.drop(columns=[opened["feature"]])
    assert seed_parts(opened, other) == []
    assert seed_parts(opened, rows)


def test_the_disparity_and_cohorts_pages_open_on_the_jobs_parts(monkeypatch):
    """With the load-time job finished, the Disparity page's first render reads no row for
    its grouping, summary, selection, permutation test and SAGED statistics, nor the
    numeric columns, and shows the rows' numbers; the Cohorts page takes its candidate
    outcomes from the job."""
    import analysis.cohort_inputs
    import analysis.factor_defaults
    from tests.app.apptools import page_test
    from ui import table_job

    rows, design = _rows()
    frame = rows  # the page's table (its design applied again: the same values)
    monkeypatch.setattr(table_job, "EARLY_COUNT_ROWS", 100)
    job = table_job.count_unit_job(frame, design, token=token_of(frame))
    job.wait(120)
    assert job.done and job.result.error is None, job.result
    opened = job.result.value.disparity

    def read_rows(*args, **kwargs):
        raise AssertionError("the page read the rows")

    at = page_test("disparity.py", frame=frame, design=design)
    at.session_state["disparity_by"] = opened["by"]
    import analysis.figures.disparity as figures

    with monkeypatch.context() as m:
        m.setattr(dsp, "grouping", read_rows)
        m.setattr(analysis.factor_defaults, "is_id_like", read_rows)  # numeric_columns'
        m.setattr(figures, "box_statistics", read_rows)  # the box plot: the job's

        at.run()
    assert not at.exception, at.exception
    on_rows = bw.disparity(rows, design, feature=opened["feature"], by=opened["by"],
                           applied=True)
    from analysis.figures.disparity import grouping_box_figure
    from tests.app.apptools import plotly_specs

    box = grouping_box_figure(on_rows.meta["grouping"], feature=opened["feature"])
    assert [t["q1"] for t in box.to_plotly_json()["data"]] in [
        [t.get("q1") for t in spec["data"]] for spec in plotly_specs(at)]
    # (as tests/app/test_disparity_page.py reads them: summary, selection, metrics, test)
    for i, name in enumerate(["summary", "selection", "metrics", "permutation"]):
        pd.testing.assert_frame_equal(at.dataframe[i].value.reset_index(drop=True),
                                      on_rows.tables[name].reset_index(drop=True),
                                      check_exact=True)
    (key, seeded), = opened["results"].items()
    name, _, inputs = key
    assert name == "cohorts"
    inputs = dict(eval(inputs))  # noqa: S307 - the repr of the job's own inputs
    on_rows = bw.cohorts(rows, design, applied=True, **inputs)
    assert seeded.tables.keys() == on_rows.tables.keys()
    for table in on_rows.tables:
        pd.testing.assert_frame_equal(seeded.tables[table], on_rows.tables[table],
                                      check_exact=True)
    assert seeded.meta == on_rows.meta and seeded.notes == on_rows.notes
    at = page_test("cohorts.py", frame=frame, design=design)
    with monkeypatch.context() as m:
        m.setattr(analysis.cohort_inputs, "category_candidates", read_rows)
        m.setattr(bw, "cohorts", read_rows)  # the page's first Result: the job's
        at.run()
    assert not at.exception, at.exception
    assert at.dataframe[0].value.shape[0] > 0


def _drift(opened: dict, steps: list, results: list, parts: list) -> list[str]:
    """What the pages' first renders asked for that the job's openers do not give under
    the same key: ``steps`` ``(name, arguments, found)`` of ``ui.table_job.opened_value``
    (every ``ui.common.per_table`` call), ``results`` ``(key, found)`` of
    ``opened_result`` (of an analysis the job computed a Result of: the Disparity page's
    comes from its parts), ``parts`` the ``(kind, key)`` of every Disparity part asked for."""
    asked = {(name, arguments) for name, arguments, _ in steps}
    computed = {name for name, _ in opened["per_table"]}
    job_parts = {key for key, _ in opened["parts"]}
    return ([f"never asked for: {k}" for k in opened["per_table"] if k not in asked]
            + [f"per_table miss: {n} {a}" for n, a, found in steps
               if not found and n in computed]
            + [f"analysis_result miss: {k}" for k, found in results
               if not found and k[0] in {name for name, _, _ in opened["results"]}]
            + [f"result never asked for: {k}" for k in opened["results"]
               if k not in {k for k, _ in results}]
            + [f"part not the job's: {k}" for k in parts if k not in job_parts])


def test_the_pages_first_renders_ask_for_what_the_job_computed(monkeypatch):
    """The job's keys are the pages' (one derivation, ``ui.opening``): on the Disparity
    and Cohorts pages' first renders at their own defaults (no widget set), every
    per_table step of a function the job computes, the Cohorts page's Result and every
    Disparity part are the job's, and every step the job computed is asked for; a key
    the job would spell differently is caught."""
    from analysis.disparity_parts import DisparityParts
    from tests.app.apptools import page_test
    from ui import table_job

    rows, design = _rows(1)  # a table of its own: no page cached anything for it
    monkeypatch.setattr(table_job, "EARLY_COUNT_ROWS", 100)
    job = table_job.count_unit_job(rows, design, token=token_of(rows))
    job.wait(120)
    assert job.done and job.result.error is None, job.result
    opened = job.result.value.disparity
    assert opened["per_table"] and opened["results"] and opened["parts"]
    steps, results, parts = [], [], []
    value_of, result_of, get = table_job.opened_value, table_job.opened_result, \
        DisparityParts.get

    def opened_value(results_, design_, name, arguments):
        known, value = value_of(results_, design_, name, arguments)
        steps.append((name, arguments, known))
        return known, value

    def opened_result(results_, design_, key):
        found = result_of(results_, design_, key)
        results.append((key, found is not None))
        return found

    def part(self, kind, key, make):
        parts.append((kind, key))
        return get(self, kind, key, make)

    monkeypatch.setattr(table_job, "opened_value", opened_value)
    monkeypatch.setattr(table_job, "opened_result", opened_result)
    monkeypatch.setattr(DisparityParts, "get", part)
    for page in ("disparity.py", "cohorts.py"):
        at = page_test(page, frame=rows, design=design)
        at.run()
        assert not at.exception, at.exception
    assert {kind for kind, _ in parts} >= {"grouping", "summary", "selection"}
    assert _drift(opened, steps, results, parts) == []
    # a job whose keys drifted from the pages' (another spelling of each) is caught
    drifted = {"per_table": {(n, a + " "): v for (n, a), v in opened["per_table"].items()},
               "results": {(n, o, i + " "): v for (n, o, i), v in opened["results"].items()},
               "parts": [((kind, ("other", key)), v) for (kind, key), v in opened["parts"]]}
    looked_up = [(n, a, (n, a) in drifted["per_table"]) for n, a, _ in steps]
    problems = _drift(drifted, looked_up, [(k, k in drifted["results"]) for k, _ in results],
                      parts)
    assert {p.split(":")[0] for p in problems} == {
        "never asked for", "per_table miss", "analysis_result miss",
        "result never asked for", "part not the job's"}
    assert len([p for p in problems if p.startswith("never")]) == len(opened["per_table"])
