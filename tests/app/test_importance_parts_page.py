"""The Factor importance page keeps an :class:`analysis.importance_parts.ImportanceParts`
store per table and design: a rerun with another alpha or reference finds the cells
(and, for alpha, the robust covariance) there, and shows the numbers of the API without
a store."""

from __future__ import annotations

import pytest

from analysis import api
from analysis.design import apply_design
from tests.app.apptools import page_test, sample_with_design


@pytest.fixture(scope="module")
def ssqa():
    return sample_with_design("ssqa_simulated.csv.gz")


def test_reruns_use_the_pages_store_and_show_the_apis_numbers(ssqa):
    import streamlit as st

    from ui.common import token_of
    from ui.importance import _parts

    # the store and the page's cached Results are the server's (process-wide): an earlier
    # test of this table and design would have counted there, or left a Result cached
    st.cache_resource.clear()
    frame, design = ssqa
    at = page_test("importance.py", frame=frame, design=design)
    at.session_state["importance_factors"] = ["model", "cot", "gender"]
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    factors = at.multiselect(key="importance_factors").value
    store = _parts(token_of(frame), design.to_json())
    assert store.misses.get("cells") == 1 and store.misses.get("robust") == 1
    at.select_slider(key="importance_alpha").set_value(0.01).run()
    assert not at.exception
    assert store.hits.get("cells") == 1 and store.hits.get("robust") == 1
    box = at.selectbox(key="importance_ref_gender")
    reference = next(v for v in box.options if v != box.value)
    box.set_value(reference).run()
    assert not at.exception
    assert store.hits["cells"] == 2 and store.misses["robust"] == 2  # another fit
    assert at.selectbox(key="importance_ref_gender").value == reference
    expected = api.importance(apply_design(frame, design), design, factors=factors,
                              alpha=0.01, references={"gender": reference}, applied=True)
    shown = at.dataframe[0].value
    assert shown["term"].tolist() == expected.table["term"].tolist()
    for column in ("coef", "std_err", "p_value", "df", "ci_low", "ci_high"):
        assert shown[column].tolist() == expected.table[column].tolist(), column
