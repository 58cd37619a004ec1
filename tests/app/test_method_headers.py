"""Issue 37, item 2 on the pages: an adjusted p-value's column header names the method
that produced it, read from the Result's settings, never written by hand. Compare's
overall table is Holm-adjusted by default ("p (Holm)"; the header said "p adjusted" and
its LD column "(BH)" beside a Holm note): choosing Benjamini-Hochberg changes the header,
and the p-values under it are statsmodels' ``multipletests`` of the raw ones."""

from __future__ import annotations

import json

import pytest
from statsmodels.stats.multitest import multipletests

from tests.app.apptools import page_test, sample_with_design


def _table(at, column: str):
    """The first of the page's tables with ``column``."""
    return next(d for d in at.dataframe if column in d.value.columns)


def _headers(frame) -> dict[str, str]:
    """Column -> header of a page's ``st.dataframe`` (its column config)."""
    return {k: v.get("label") for k, v in json.loads(frame.proto.columns or "{}").items()}


@pytest.fixture(scope="module")
def compare_page():
    frame, design = sample_with_design("bbq_unifiedqa.csv.gz")
    at = page_test("compare.py", frame=frame, design=design, name="bbq_unifiedqa.csv.gz")
    at.run()
    assert not at.exception and not at.error
    return at


def test_compare_default_is_headed_holm_and_bh_changes_the_header(compare_page):
    at = compare_page
    overall = at.dataframe[0]
    assert _headers(overall)["p_adjusted"] == "p (Holm)"
    table = overall.value
    assert table["p_adjusted"].to_numpy() == pytest.approx(
        multipletests(table["p_value"].to_numpy(), method="holm")[1])
    subgroups = _headers(_table(at, "subgroup"))
    # the subgroups are adjusted across a pair's subgroups by BH, whatever the option
    assert subgroups["p_adjusted"] == "p (BH)" and subgroups["ld_p_adjusted"] == "LD p (BH)"

    at.radio(key="compare_adjust").set_value("bh").run()
    assert not at.exception and not at.error
    overall = at.dataframe[0]
    assert _headers(overall)["p_adjusted"] == "p (BH)"
    table = overall.value
    assert table["p_adjusted"].to_numpy() == pytest.approx(
        multipletests(table["p_value"].to_numpy(), method="fdr_bh")[1])

    at.radio(key="compare_adjust").set_value("bonferroni").run()
    assert _headers(at.dataframe[0])["p_adjusted"] == "p (Bonferroni)"


def test_importance_headers_name_the_adjustment():
    """Factor importance's p_adjusted is Benjamini-Hochberg over the terms by default:
    its header and the caption say so; the declared ``adjust`` widget ("Other options")
    changes both (Holm); ``none`` labels by the unadjusted p and keeps BH's column."""
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("importance.py", frame=frame, design=design)
    at.session_state["importance_factors"] = ["model", "cot", "prompt_style",
                                              "pachankis_cluster", "gender"]
    at.run()
    at.button(key="importance_fix_0").click().run()  # without the base prompts: a fit
    assert not at.exception and not at.error
    terms = _table(at, "term")
    assert _headers(terms)["p_adjusted"] == "p (BH)"
    captions = " ".join(c.value for c in at.caption)
    assert "'p (BH)' is the Benjamini-Hochberg adjustment over the terms" in captions
    at.selectbox(key="importance_option_adjust").set_value("holm").run()
    assert not at.exception and not at.error
    assert _headers(_table(at, "term"))["p_adjusted"] == "p (Holm)"
    assert "'p (Holm)' is the Holm adjustment over the terms" in " ".join(
        c.value for c in at.caption)
    at.selectbox(key="importance_option_adjust").set_value("none").run()
    assert not at.exception and not at.error
    assert _headers(_table(at, "term"))["p_adjusted"] == "p (BH)"
    assert "at the unadjusted p <" in " ".join(c.value for c in at.caption)
