"""The context bar on analysis pages and the page guard of app.py (ui/context.py)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app.apptools import page_test, sample_with_design


def _guarded_page() -> None:
    import streamlit as st

    from ui.context import page_guard

    st.session_state.setdefault("kept", 0)
    st.session_state["kept"] += 1
    with page_guard():
        st.write("before")
        if st.session_state["kept"] < 3:
            {}["no such key"]  # an unexpected bug in a page
        st.write("page finished")


def test_guard_turns_an_exception_into_a_message_and_keeps_state():
    from ui.context import GUARD_MESSAGE

    at = AppTest.from_function(_guarded_page)
    at.run()
    assert not at.exception
    assert at.error[0].value.startswith(f"{GUARD_MESSAGE} (KeyError: 'no such key')")
    assert "Traceback" in at.expander[0].code[0].value
    at.run()
    at.run()  # state kept across the failing runs: the third run completes
    assert at.session_state["kept"] == 3 and not at.error
    assert at.markdown[-1].value == "page finished"


def test_context_bar_shows_dataset_outcome_subset_and_simulated_flag():
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("subgroups.py", frame=frame, design=design, name="ssqa_simulated.csv.gz")
    at.run()
    bar = at.markdown[0].value
    assert ":red-badge[SIMULATED outcomes]" in bar and "`ssqa_simulated.csv.gz`" in bar
    assert f"`{design.outcome.describe()}`" in bar and "`all rows`" in bar
    at.multiselect(key="subgroups_where_model").select("sim-model-A").run()
    assert "`model = sim-model-A`" in at.markdown[0].value


def test_real_data_has_no_simulated_flag():
    frame, design = sample_with_design("bbq_unifiedqa.csv.gz")
    at = page_test("coverage.py", frame=frame, design=design, name="bbq_unifiedqa.csv.gz")
    at.run()
    assert "SIMULATED" not in at.markdown[0].value
    assert "`bbq_unifiedqa.csv.gz`" in at.markdown[0].value


def test_the_data_not_the_file_name_says_simulated():
    """docs/architecture.md, Kernels: my_simulated_run.csv with real answers is not
    flagged; the simulated sample under another name still is."""
    frame, design = sample_with_design("bbq_unifiedqa.csv.gz")
    at = page_test("coverage.py", frame=frame, design=design, name="my_simulated_run.csv")
    at.run()
    assert "SIMULATED" not in at.markdown[0].value
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("coverage.py", frame=frame, design=design, name="renamed.csv")
    at.run()
    assert ":red-badge[SIMULATED outcomes]" in at.markdown[0].value


def _page_with_a_failing_callback() -> None:
    import streamlit as st

    from ui.context import guarded_callback, page_guard

    @guarded_callback
    def explode() -> None:
        st.session_state["clicked"] = True
        raise ValueError("bad upload")

    with page_guard():
        st.button("Go", on_click=explode, key="go")
        st.write("page drawn")


def test_a_failing_callback_is_reported_by_the_next_run():
    at = AppTest.from_function(_page_with_a_failing_callback)
    at.run()
    at.button(key="go").click().run()
    assert not at.exception
    assert at.error[0].value.startswith("The last action stopped on an unexpected error "
                                        "(ValueError: bad upload)")
    assert at.session_state["clicked"] and at.markdown[-1].value == "page drawn"
    at.run()
    assert not at.error  # shown once
