"""Page settings and report sections kept per table across page switches and reloads
(ui/page_state.py, issue 29 item 1)."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from streamlit.testing.v1 import AppTest

from tests.app.apptools import metric_values


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BIAS_WORKBENCH_STATE_DIR", str(tmp_path))
    return tmp_path


def _harness() -> None:
    """What app.py does around a page; the page file is named in the session state, so one
    AppTest can switch pages as the navigation does."""
    import runpy

    import streamlit as st

    from tests.app.apptools import ROOT
    from ui import page_state, session
    from ui.context import page_guard

    session.restore()
    try:
        with page_guard():
            runpy.run_path(str(ROOT / "pages" / st.session_state["_page"]), run_name="__main__")
            later = st.session_state.pop("_load_in_body", None)
            if later is not None:  # a page that loads a table in its body (Prepare, Judges)
                from ui.common import set_data, token_of

                set_data(later, "later.csv", token_of(later))
    finally:
        page_state.remember()
        session.save()


def _frame(seed: int) -> pd.DataFrame:
    import numpy as np

    rng = np.random.default_rng(seed)
    n = 240
    return pd.DataFrame({"model": rng.choice(["m1", "m2"], n),
                         "topic": rng.choice(["t1", "t2", "t3"], n),
                         "style": rng.choice(["plain", "polite"], n),
                         "biased": rng.integers(0, 2, n)})


def _load(at: AppTest, frame: pd.DataFrame, name: str) -> None:
    from ui.common import token_of
    from ui.data import suggest_design

    at.session_state["results_frame"] = frame
    at.session_state["results_name"] = name
    at.session_state["results_token"] = token_of(frame)
    at.session_state["design"] = suggest_design(frame)


def _go(at: AppTest, page: str) -> AppTest:
    at.session_state["_page"] = page
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _app(sid: str | None = None) -> AppTest:
    at = AppTest.from_function(_harness, default_timeout=120)
    if sid is not None:
        at.query_params["sid"] = sid
    return at


def test_subset_and_factors_survive_a_switch_to_coverage_and_back():
    at = _app()
    _load(at, _frame(1), "one.csv")
    _go(at, "subgroups.py")
    at.multiselect(key="subgroups_factors").set_value(["style", "topic"])
    at.multiselect(key="subgroups_where_model").set_value(["m1"])
    at.radio(key="subgroups_level").set_value(1)
    _go(at, "subgroups.py")
    before = metric_values(at)
    assert before["Rows in subset"] == f"{int((_frame(1)['model'] == 'm1').sum()):,}"
    _go(at, "coverage.py")
    assert "subgroups_factors" not in at.session_state  # Streamlit dropped the page's widgets
    _go(at, "subgroups.py")
    assert at.multiselect(key="subgroups_factors").value == ["style", "topic"]
    assert at.multiselect(key="subgroups_where_model").value == ["m1"]
    assert at.radio(key="subgroups_level").value == 1
    assert metric_values(at) == before


def test_another_table_starts_from_its_own_settings_and_report():
    at = _app()
    _load(at, _frame(1), "one.csv")
    _go(at, "subgroups.py")
    at.multiselect(key="subgroups_where_model").set_value(["m1"])
    _go(at, "subgroups.py")
    at.button(key="report_add_subgroups").click()
    _go(at, "subgroups.py")
    assert len(at.session_state["report_sections"]) == 1

    other = _frame(2).rename(columns={"model": "engine"})
    _load(at, other, "two.csv")
    _go(at, "subgroups.py")
    assert "subgroups_where_model" not in at.session_state
    assert metric_values(at)["Rows in subset"] == f"{len(other):,}"  # no subset carried over
    notes = " ".join(i.value for i in at.info)
    assert "active table changed" in notes and "1 section(s) added" in notes
    assert at.session_state["report_sections"] == []

    _load(at, _frame(1), "one.csv")  # back to the first table: its subset and section
    _go(at, "subgroups.py")
    assert at.multiselect(key="subgroups_where_model").value == ["m1"]
    assert [s["section"] for s in at.session_state["report_sections"]] == ["subgroups"]


def test_a_setting_that_no_longer_fits_is_dropped_with_a_note():
    at = _app()
    frame = _frame(3)
    _load(at, frame, "one.csv")
    _go(at, "subgroups.py")
    at.multiselect(key="subgroups_factors").set_value(["style", "topic"])
    _go(at, "subgroups.py")
    _go(at, "coverage.py")
    design = at.session_state["design"]
    at.session_state["design"] = type(design).from_dict(
        {**design.to_dict(), "factors": [f for f in design.to_dict()["factors"]
                                         if f["name"] != "style"]})
    _go(at, "subgroups.py")
    assert at.multiselect(key="subgroups_factors").value == ["topic"]
    assert any("style dropped" in i.value for i in at.info)


def test_a_reload_brings_back_every_page_setting_and_the_report(state_dir):
    at = _app()
    _load(at, _frame(1), "one.csv")
    _go(at, "subgroups.py")
    at.multiselect(key="subgroups_where_topic").set_value(["t2"])
    _go(at, "subgroups.py")
    at.button(key="report_add_subgroups").click()
    _go(at, "subgroups.py")
    _go(at, "coverage.py")  # the subgroups widgets are gone from the live state
    sid = at.query_params["sid"]
    sid = sid[0] if isinstance(sid, list) else sid
    kept = yaml.safe_load((state_dir / sid / "session.yaml").read_text())["page_state"]
    (entry,) = kept.values()
    assert entry["settings"]["subgroups_where_topic"] == ["t2"]
    assert [s["section"] for s in entry["report"]] == ["subgroups"]

    again = _app(sid)  # a reload: a new browser session with only the URL
    _go(again, "subgroups.py")
    assert again.multiselect(key="subgroups_where_topic").value == ["t2"]
    assert [s["section"] for s in again.session_state["report_sections"]] == ["subgroups"]


def test_a_table_loaded_while_a_page_is_drawn_switches_on_the_next_run():
    """A page that loads a table in its body (Prepare, Judges): the settings drawn in that
    run stay with the old table; the next run starts the new one from its own."""
    at = _app()
    _load(at, _frame(1), "one.csv")
    _go(at, "subgroups.py")
    at.multiselect(key="subgroups_where_model").set_value(["m1"])
    _go(at, "subgroups.py")
    from ui import page_state
    from ui.common import token_of

    old = at.session_state[page_state.ACTIVE]
    at.session_state["_load_in_body"] = _frame(2)  # loaded after Subgroups drew its widgets
    _go(at, "subgroups.py")
    assert at.session_state["results_token"] == token_of(_frame(2))
    assert at.session_state[page_state.STORE][old]["settings"]["subgroups_where_model"] == \
        ["m1"]
    _go(at, "subgroups.py")  # the next run: the new table, without the old subset
    assert metric_values(at)["Rows in subset"] == f"{len(_frame(2)):,}"
    assert at.session_state[page_state.ACTIVE] == token_of(_frame(2))
