"""A browser reload keeps the table, the design and the page settings (ui/session.py)."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from streamlit.testing.v1 import AppTest

from analysis.design import Design
from tests.app.apptools import ROOT, metric_values


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_STATE_DIR", str(tmp_path))
    return tmp_path


def _harness(page: str) -> None:
    """What app.py does around a page (AppTest reruns a page without its entrypoint)."""
    import runpy

    from tests.app.apptools import ROOT
    from ui import session
    from ui.context import page_guard

    session.restore()
    try:
        with page_guard():
            runpy.run_path(str(ROOT / "pages" / page), run_name="__main__")
    finally:
        session.save()


def _app(page: str = "data.py", sid: str | None = None) -> AppTest:
    at = AppTest.from_function(_harness, args=(page,), default_timeout=120)
    if sid is not None:
        at.query_params["sid"] = sid
    return at


def test_app_py_wraps_pages_with_restore_guard_and_save():
    text = (ROOT / "app.py").read_text()
    assert "session.restore()" in text and "session.save()" in text
    assert "with page_guard():" in text


def _run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_reload_restores_table_design_and_settings(state_dir):
    frame = pd.DataFrame({"model": ["a", "b"] * 30, "topic": [f"t{i % 3}" for i in range(60)],
                          "biased": [i % 2 for i in range(60)]})
    from ui.common import token_of
    from ui.data import suggest_design

    design = suggest_design(frame)
    at = _app("subgroups.py")
    at.session_state["results_frame"] = frame  # what the Data page's set_data writes
    at.session_state["results_name"] = "mine.csv"
    at.session_state["results_token"] = token_of(frame)
    at.session_state["design"] = design
    _run(at)
    at.radio(key="subgroups_level").set_value(1)
    _run(at)
    before = metric_values(at)
    sid = at.query_params["sid"]
    sid = sid[0] if isinstance(sid, list) else sid
    saved = yaml.safe_load((state_dir / sid / "session.yaml").read_text())
    assert saved["name"] == "mine.csv" and saved["settings"]["subgroups_level"] == 1
    assert pd.read_parquet(state_dir / sid / "table.parquet").equals(frame)

    again = _app("subgroups.py", sid)  # a reload: a new session with only the URL
    _run(again)
    assert again.session_state["results_name"] == "mine.csv"
    assert again.session_state["design"] == design
    assert again.radio(key="subgroups_level").value == 1
    assert metric_values(again) == before
    assert "mine.csv" in again.markdown[0].value  # the context bar names the restored data


def test_a_link_whose_session_is_gone_says_so_and_loads_no_sample():
    at = _app("subgroups.py", "x" * 24)
    _run(at)
    assert "could not be restored" in at.warning[0].value
    assert "results_frame" not in at.session_state
    assert "Load a results table" in at.info[0].value


def test_an_id_we_never_write_is_refused_without_touching_the_disk(state_dir):
    at = _app("data.py", "../../etc")
    _run(at)
    assert "not one this app writes" in at.warning[0].value
    assert Design  # the data page still offers the samples
    assert at.radio(key="data_source").value == "Bundled sample"


def test_only_plain_page_settings_are_kept():
    import pandas as pd

    from ui.session import is_setting

    assert is_setting("subgroups_level", 2) and is_setting("disparity_quantiles", (0.2, 0.8))
    assert is_setting("coverage_factors", ["a", "b"]) and is_setting("ecdf_ideal", 0.0)
    for key in ("subgroups_table_csv", "coverage_heatmap_png", "importance_fix_0",
                "subgroups_repro_design_yaml", "data_source", "design_factors_3", 7):
        assert not is_setting(key, False), key
    assert not is_setting("cohorts_frame", pd.DataFrame())
