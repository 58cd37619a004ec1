"""The first renders of small tables (docs/performance.md, "Small tables").

At 9,999 rows the browser journey's Coverage page waited within its first render for its
count-unit job (submitted by the page, then read by a worker that imported the analysis
modules, SciPy and plotly itself: ~1.3 s CPU before its work), and the Subgroups page
imported SciPy's statistics and the REML module of its headline; at 1M rows the load-time
job and the warmed imports had done both before. Now the Data page submits a small
table's job too, the workers' forkserver preloads what the jobs import
(``ui.inference_pool.PRELOAD``) and the imports are warmed for every table. These tests
pin the paths, not the times."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.app.apptools import ROOT, page_test
from tests.app.test_coverage_early_count import _data_page, _key, _table
from ui import inference_pool, table_job


def test_a_small_tables_coverage_page_opens_on_the_job_the_data_page_started(monkeypatch):
    """A table far under ``EARLY_COUNT_ROWS`` (the real threshold) whose design names no
    item id: after the Data page the Coverage page's first run counts the items at once,
    from the Data page's job, without waiting (the wait set to 0: on the old code the
    page submitted the job itself and counted the prompt unit meanwhile)."""
    frame, design = _table(99)
    assert len(frame) < table_job.EARLY_COUNT_ROWS
    assert not table_job.item_known(frame, design)
    monkeypatch.setenv("BIAS_WORKBENCH_INFERENCE_WAIT", "0")
    _data_page(frame, design)
    job = inference_pool.job(_key(frame, design))
    assert job is not None  # submitted on the Data page
    job.wait(120)
    assert job.done and job.result.error is None, job.result
    at = page_test("coverage.py", frame=frame, design=design)
    at.session_state["coverage_factors"] = ["category"]
    at.run()
    assert not at.exception, at.exception
    assert inference_pool.job(_key(frame, design)) is job
    labels = at.radio(key="coverage_count").options
    assert any("distinct items (example_id" in label for label in labels), labels
    assert not any("Reading the table's structure" in m.value for m in at.info)


#: The gate file :func:`gated_count_unit` waits for (the test creates it).
GATE = ROOT / ".pytest_cache" / "small_first_gate"


def gated_count_unit(frame, design):  # noqa: ANN001, ANN201 - run in the worker
    """The load-time job's work once :data:`GATE` exists (at most 120 s)."""
    import time

    deadline = time.monotonic() + 120
    while not GATE.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return REAL_COUNT_UNIT_CELLS(frame, design)


REAL_COUNT_UNIT_CELLS = inference_pool.count_unit_cells


def test_a_job_submitted_before_the_page_opened_still_gets_the_pages_wait(monkeypatch):
    """The Coverage page waits up to ``BIAS_WORKBENCH_INFERENCE_WAIT`` seconds after it
    first asks for the job, not after the job's submission: a small table's job the Data
    page submitted long before (here: its clock set back 100 s, its work held until the
    page waits) is waited for, and the first run counts the items (the old budget,
    counted from the submission, was spent: the prompt unit and a notice)."""
    import threading

    GATE.parent.mkdir(exist_ok=True)
    GATE.unlink(missing_ok=True)
    monkeypatch.setattr(inference_pool, "count_unit_cells", gated_count_unit)
    frame, design = _table(102)
    _data_page(frame, design)
    job = inference_pool.job(_key(frame, design))
    assert job is not None and not job.done
    job.submitted -= 100  # submitted long before the page opens
    monkeypatch.setenv("BIAS_WORKBENCH_INFERENCE_WAIT", "60")
    opener = threading.Timer(1.0, GATE.touch)
    opener.start()
    try:
        at = page_test("coverage.py", frame=frame, design=design)
        at.session_state["coverage_factors"] = ["category"]
        at.run()
    finally:
        opener.join()
        GATE.unlink(missing_ok=True)
    assert not at.exception, at.exception
    assert job.done and job.result.error is None, job.result
    labels = at.radio(key="coverage_count").options
    assert any("distinct items (example_id" in label for label in labels), labels


#: Run in a fresh interpreter: the modules a worker forked from the forkserver has
#: (``PRELOAD``), then the two kinds of work the pool runs on a BBQ table (the structure
#: inference and the load-time job); prints the modules the work imported itself.
_WORKER = textwrap.dedent("""
    import importlib, json, sys
    sys.path.insert(0, {root!r})
    from ui.inference_pool import PRELOAD
    for name in PRELOAD:
        importlib.import_module(name)
    before = set(sys.modules)
    import pandas as pd
    from analysis.design import Design
    from ui import inference_pool
    frame = pd.read_csv({sample!r}).iloc[::4].reset_index(drop=True)
    design = Design.load({design!r})
    inference_pool.infer_all(frame)
    from analysis.design import apply_design
    from analysis.names import clash_free
    frame, design, _ = clash_free(frame, design)
    rows = apply_design(frame, design)
    packed = inference_pool._packed(rows)
    inference_pool.count_unit_cells(packed.frame(text_codes=True), design)
    print(json.dumps(sorted(set(sys.modules) - before)))
""")

#: Packages whose import a worker must not pay per job (each a large part of the 1.3 s;
#: plotly's figure classes import lazily, a few modules per trace type, and are left).
HEAVY = ("scipy", "statsmodels", "narwhals")


def _imported_by(script: str) -> list[str]:
    """The modules ``script`` (a template of ``root``, ``sample``, ``design``: the bundled
    BBQ sample) prints as its last line, run in a fresh interpreter."""
    code = script.format(root=str(ROOT), sample=str(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz"),
                         design=str(ROOT / "sample_data" / "bbq_unifiedqa.design.yaml"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_forkserver_preloads_what_the_jobs_import():
    """What the structure inference and the load-time job import beyond ``PRELOAD`` holds
    none of the heavy packages, none of the analysis modules the work composes and not
    plotly's template data (a new import in the job's code shows up here, not as a
    slower first render)."""
    new = _imported_by(_WORKER)
    heavy = [m for m in new if m.split(".")[0] in HEAVY]
    assert not heavy, heavy
    composed = {"analysis.api", "analysis.coverage", "analysis.cells", "analysis.bbq_scores",
                "analysis.compare", "analysis.disparity", "analysis.saged_stats",
                "analysis.figures.disparity", "ui.opening", "ui.disparity_job"}
    assert not composed & set(new), composed & set(new)
    assert "plotly.graph_objs.layout.template._data" not in new  # the template read once
    import multiprocessing.forkserver

    inference_pool._mp()  # what the server's forkserver is told to preload
    assert multiprocessing.forkserver._forkserver._preload_modules == list(inference_pool.PRELOAD)


#: A fresh interpreter with what the Data page's run has imported and the warmed modules
#: (``ui.table_job.WARM_MODULES``): the Subgroups page's headline over the facets on a
#: small table, then the modules it imported itself.
_HEADLINE = textwrap.dedent("""
    import importlib, json, sys
    sys.path.insert(0, {root!r})
    import pandas as pd
    from analysis import api
    from analysis.design import Design
    from analysis.options.variance import VarianceOptions
    from ui.table_job import WARM_MODULES
    for name in WARM_MODULES:
        importlib.import_module(name)
    frame = pd.read_csv({sample!r}).iloc[::4].reset_index(drop=True)
    design = Design.load({design!r})
    before = set(sys.modules)
    api.variance_components(frame, design, options=VarianceOptions.coerce(None, n_resamples=0))
    print(json.dumps(sorted(set(sys.modules) - before)))
""")


def test_the_warmed_imports_cover_the_small_tables_subgroups_headline():
    """The headline the Subgroups page computes for a small table (on by default up to
    ``HEADLINE_MAX_ROWS`` rows) imports no SciPy module and not its REML module once the
    warmed modules are there."""
    new = _imported_by(_HEADLINE)
    assert not [m for m in new if m.split(".")[0] == "scipy"], new
    assert "analysis.variance_components" not in new
