"""The shared page pieces of ui/widgets.py: stop_on_error, show_table, each_note."""

from streamlit.testing.v1 import AppTest

from analysis.safe_text import escape_markdown

REFUSAL = "No *factor* named [x](http://evil)"


def _page_with_a_refusal() -> None:
    import streamlit as st

    from analysis.errors import AnalysisError
    from ui.widgets import stop_on_error

    with stop_on_error():
        st.markdown("before")
    with stop_on_error():
        if st.session_state.get("refuse", True):
            raise AnalysisError("No *factor* named [x](http://evil)")  # = REFUSAL
        st.markdown("no refusal")
    st.markdown("after")


def test_stop_on_error_shows_the_escaped_message_and_stops_the_page():
    at = AppTest.from_function(_page_with_a_refusal)
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == [escape_markdown(REFUSAL)]
    assert "[x](" not in at.error[0].value and "*factor*" not in at.error[0].value
    assert [m.value for m in at.markdown] == ["before"]  # nothing after the refusal
    at.session_state["refuse"] = False
    at.run()
    assert not at.error and [m.value for m in at.markdown] == ["before", "no refusal", "after"]


def _page_with_a_bug() -> None:
    from ui.widgets import stop_on_error

    with stop_on_error():
        raise KeyError("a bug, not a refusal")


def test_stop_on_error_lets_other_exceptions_through():
    at = AppTest.from_function(_page_with_a_bug)
    at.run()
    assert at.exception and "a bug, not a refusal" in at.exception[0].message


def _page_with_a_table() -> None:
    import pandas as pd
    import streamlit as st

    from ui.widgets import each_note, show_table

    show_table(pd.DataFrame({"a": [1, 2]}), "things", key="things", table_key="things_table")
    each_note(["one *note*", "two"], st.warning)
    each_note(["a caption"])


def test_show_table_draws_the_table_and_its_csv_and_each_note_escapes():
    at = AppTest.from_function(_page_with_a_table)
    at.run()
    assert not at.exception
    assert at.dataframe[0].value["a"].tolist() == [1, 2]
    assert [w.value for w in at.warning] == [escape_markdown("one *note*"), "two"]
    assert "*note*" not in at.warning[0].value
    assert [c.value for c in at.caption] == ["a caption"]
