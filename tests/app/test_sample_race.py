"""A sample chosen on the Data page whose change callback never ran (a page switch right
after the choice supersedes the widget's rerun): ``app.py`` loads it before the next page
runs, and only ever in place of an unmodified bundled sample (ui/data.py
``sync_sample_choice``)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from analysis.design import Design
from analysis.io import load_results
from tests.app.apptools import ROOT
from tests.conftest import BBQ_SAMPLE, SAMPLE_DIR
from ui.data import PENDING_SAMPLE

pytestmark = pytest.mark.skipif(not BBQ_SAMPLE.is_file(),
                                reason=f"bundled sample missing: {BBQ_SAMPLE}")

SSQA = "ssqa_simulated.csv.gz"


def _app() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    assert not at.exception, at.exception
    assert at.session_state["results_name"] == BBQ_SAMPLE.name  # opens on the BBQ sample
    return at


def _choose_without_callback(at: AppTest, sample: str, how: str = "widget value") -> None:
    if how == "widget value":  # the selectbox's new value is stored, its on_change never ran
        at.session_state["data_sample"] = sample
    else:  # on_change wrote the choice down, then the page switch interrupted the load
        at.session_state[PENDING_SAMPLE] = sample
    at.switch_page("pages/design.py").run()
    assert not at.exception, at.exception


@pytest.mark.parametrize("how", ["widget value", "interrupted callback"])
def test_a_sample_chosen_just_before_a_page_switch_is_the_one_loaded(how):
    at = _app()
    _choose_without_callback(at, SSQA, how)
    assert at.session_state["results_name"] == SSQA
    assert PENDING_SAMPLE not in at.session_state
    frame = load_results(SAMPLE_DIR / SSQA)
    assert at.session_state["results_frame"].shape == frame.shape
    assert at.session_state["design"] == Design.load(SAMPLE_DIR / "ssqa_simulated.design.yaml")
    at.switch_page("pages/coverage.py").run()  # the context bar names the chosen sample
    assert not at.exception
    assert any(SSQA in m.value for m in at.markdown), [m.value for m in at.markdown]
    at.switch_page("pages/data.py").run()  # and the Data page agrees: no button to load it
    assert at.selectbox(key="data_sample").value == SSQA
    assert not [b for b in at.button if b.label == "Load this sample"]


@pytest.mark.parametrize("how", ["widget value", "interrupted callback"])
@pytest.mark.parametrize("origin", ["upload named like a sample", "prepared", "modified"])
def test_a_table_of_the_user_is_never_replaced(origin, how):
    from ui.common import token_of

    at = _app()
    bbq = at.session_state["results_frame"]
    if origin == "upload named like a sample":  # same file name, other content
        at.radio(key="data_source").set_value("Upload a file").run()
        at.file_uploader(key="data_upload").upload(
            BBQ_SAMPLE.name, b"model,x,biased\nm1,a,0\nm2,b,1\n", "text/csv").run()
        at.radio(key="data_source").set_value("Bundled sample").run()
        assert at.session_state["results_name"] == BBQ_SAMPLE.name
    else:
        table = bbq.head(500) if origin == "modified" else bbq.assign(extra=1)
        name = BBQ_SAMPLE.name if origin == "modified" else f"{BBQ_SAMPLE.name} (prepared)"
        at.session_state["results_frame"] = table
        at.session_state["results_name"] = name
        at.session_state["results_token"] = token_of(table)
    kept = (at.session_state["results_name"], at.session_state["results_token"])
    shape = at.session_state["results_frame"].shape
    _choose_without_callback(at, SSQA, how)
    assert (at.session_state["results_name"], at.session_state["results_token"]) == kept
    assert at.session_state["results_frame"].shape == shape
    at.switch_page("pages/data.py").run()
    assert not at.exception
    at.radio(key="data_source").set_value("Bundled sample").run()
    at.selectbox(key="data_sample").set_value(SSQA)  # the explicit button is still offered
    at.run()
    assert at.session_state["results_name"] == SSQA  # ...and the callback loads it as before
