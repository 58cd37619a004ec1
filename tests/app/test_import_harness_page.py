"""AppTest: an lm-eval run and an Inspect log from upload on the Data page to a sunburst.

Needs the Data page's "Import from ..." section (``ui/importing.py``, issue 10's generic
import UI); skipped where it is absent.
"""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.importers import import_results
from tests.analysis.importers.harness_runs import INSPECT_FIXTURE, LM_EVAL_FIXTURE
from tests.app.apptools import page_test, plotly_specs, shown

pytest.importorskip("ui.importing")

LM_EVAL_FILES = sorted((LM_EVAL_FIXTURE / "dummy-bbq").iterdir())


def _import(at, source: str, paths, **options):
    at.radio(key="data_source").set_value("Import from ...").run()
    at.selectbox(key="import_source").set_value(source).run()
    uploader = f"import_files_{at.session_state['import_round']}" \
        if "import_round" in at.session_state else "import_files_0"  # a new one per attempt
    at.file_uploader(key=uploader).set_value(
        [(p.name, p.read_bytes(), "application/octet-stream") for p in paths]).run()
    for name, value in options.items():
        at.text_input(key=f"import_opt_{source}_{name}").set_value(value).run()
    at.button(key="import_run").click().run()
    assert not at.exception, at.exception
    return at


def _use_and_draw(at, expected) -> None:
    at.button(key="import_use").click().run()
    assert not at.exception
    frame, design = at.session_state["results_frame"], at.session_state["design"]
    columns = [c for c in expected.frame.columns if c != "log"]  # Inspect: the upload's path
    pd.testing.assert_frame_equal(frame[columns], expected.frame[columns])
    assert design == expected.design
    sub = page_test("subgroups.py", frame=frame, design=design).run()
    assert not sub.exception and not sub.error
    specs = plotly_specs(sub)
    assert specs and specs[0]["data"][0]["type"] == "sunburst"


def test_lm_eval_run_from_upload_to_sunburst():
    at = _import(page_test("data.py").run(), "lm-eval", LM_EVAL_FILES)
    assert not at.error
    assert {m.label: m.value for m in at.metric}["Imported rows"] == "96"
    _use_and_draw(at, import_results("lm-eval", [LM_EVAL_FIXTURE]))


def test_lm_eval_samples_alone_need_the_model_option():
    samples = [p for p in LM_EVAL_FILES if p.name.startswith("samples_bbq_religion_mc")]
    at = _import(page_test("data.py").run(), "lm-eval", samples)
    assert len(at.error) == 1 and "no results_*.json beside this samples file" in \
        shown(at.error[0].value)
    at = _import(page_test("data.py").run(), "lm-eval", samples, model="my-model")
    assert not at.error
    assert {m.label: m.value for m in at.metric}["Imported rows"] == "32"


def test_inspect_log_from_upload_to_sunburst():
    pytest.importorskip("inspect_ai")
    logs = sorted(INSPECT_FIXTURE.glob("*.eval"))
    at = _import(page_test("data.py").run(), "inspect", logs)
    assert not at.error
    assert {m.label: m.value for m in at.metric}["Imported rows"] == "32"
    _use_and_draw(at, import_results("inspect", logs))


def test_the_old_table_is_not_previewed_below_an_import_until_it_is_used():
    """Issue 42: below an import, the Data page still previewed the previous table (its
    rows, columns and structure) as if it were the import's."""
    at = _import(page_test("data.py").run(), "lm-eval", LM_EVAL_FILES)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Imported rows"] == "96" and "Rows" not in metrics  # no old-table metric
    assert any("The active table is still bbq_unifiedqa.csv.gz" in c.value
               for c in at.caption)
    assert not [s for s in at.subheader if s.value == "Preview"]
    at.button(key="import_use").click().run()
    assert not at.exception
    assert [s for s in at.subheader if s.value == "Preview"]  # now the import's
    assert {m.label: m.value for m in at.metric}["Rows"] == "96"


def test_each_task_family_of_a_run_is_a_table_of_its_own():
    """Issue 42 item 6: the six bias tasks of one lm-eval run imported as one generic
    table ('acc < 1'); each family can now be chosen and used with its own outcome and
    design, one after the other, or all together."""
    from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

    files = sorted((LM_EVAL_BIAS_FIXTURE / "dummy-bias").iterdir())
    whole = import_results("lm-eval", [LM_EVAL_BIAS_FIXTURE])
    at = _import(page_test("data.py").run(), "lm-eval", files)
    assert not at.error
    assert at.radio(key="import_part").options == ["All tasks together", *whole.parts]
    assert {m.label: m.value for m in at.metric}["Imported rows"] == "200"
    for family in ("bbq", "crows_pairs"):
        at.radio(key="import_part").set_value(family).run()
        assert {m.label: m.value for m in at.metric}["Imported rows"] == \
            f"{len(whole.parts[family].frame)}"
        at.button(key="import_use").click().run()
        assert not at.exception
        ss = at.session_state
        assert ss["results_name"].endswith(f"[{family}]")
        assert ss["design"] == whole.parts[family].design
        pd.testing.assert_frame_equal(ss["results_frame"], whole.parts[family].frame)
        assert ss["results_rebuild"].endswith(f"--task-family {family}")
    assert at.session_state["design"].outcome.column == "pct_stereotype"
    at.radio(key="import_part").set_value("All tasks together").run()
    at.button(key="import_use").click().run()
    assert len(at.session_state["results_frame"]) == 200
    assert "--task-family" not in at.session_state["results_rebuild"]
