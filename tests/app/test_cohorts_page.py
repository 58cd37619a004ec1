"""Cohorts page under AppTest on the real BBQ sample: answer types across input formats."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from analysis.columns import METHOD, P_VALUE, STATISTIC
from tests.app.apptools import page_test, plotly_specs, sample_with_design

BBQ = "bbq_unifiedqa.csv.gz"


@pytest.fixture(scope="module")
def bbq():
    return sample_with_design(BBQ)


def test_answer_types_by_input_format_within_category(bbq):
    frame, design = bbq
    at = page_test("cohorts.py", frame=frame, design=design, name=BBQ).run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Cohorts"
    assert at.selectbox(key="cohorts_category").value == "answer_type"
    assert at.selectbox(key="cohorts_cohort").value == "input_format"
    assert at.multiselect(key="cohorts_by").value == ["category"]
    assert any("Real data" in c.value for c in at.caption)
    wide = at.dataframe[0].value
    age_qonly = wide[(wide["category"] == "Age") & (wide["input_format"] == "qonly")].iloc[0]
    rows = frame[(frame["category"] == "Age") & (frame["input_format"] == "qonly")]
    assert age_qonly["unknown"] == pytest.approx(100 * (rows["answer_type"] == "unknown").mean())
    # 'unmatched' has 3 rows: small expected counts -> Monte Carlo and a warning
    assert any("Cochran" in w.value for w in at.warning)
    specs = plotly_specs(at)
    assert specs[0]["layout"]["barmode"] == "stack"
    assert {t["type"] for t in specs[1]["data"]} == {"scatter"}
    assert len(specs) == 3


def test_dropping_the_rare_category_gives_chi_square(bbq):
    frame, design = bbq
    at = page_test("cohorts.py", frame=frame, design=design, name=BBQ).run()
    at.multiselect(key="cohorts_by").set_value([]).run()
    at.multiselect(key="cohorts_keep_answer_type").set_value(
        ["stereotyped", "anti-stereotyped", "unknown"]).run()
    assert not at.exception and not at.error
    # Default: the left-out answers stay in the denominator and form an 'other' column.
    other = at.dataframe[-1].value.iloc[0]
    table = pd.crosstab(frame["input_format"], frame["answer_type"])
    table = pd.concat([table[["stereotyped", "anti-stereotyped", "unknown"]],
                       table[["ambiguous target", "unmatched"]].sum(axis=1)], axis=1)
    assert other[STATISTIC] == pytest.approx(
        stats.chi2_contingency(table, correction=False).statistic)
    at.checkbox(key="cohorts_renormalise").check().run()
    test = at.dataframe[-1].value.iloc[0]
    kept = frame[frame["answer_type"].isin(["stereotyped", "anti-stereotyped", "unknown"])]
    ref = stats.chi2_contingency(pd.crosstab(kept["input_format"], kept["answer_type"]),
                                 correction=False)
    assert test[METHOD] == "chi-square"
    assert test[STATISTIC] == pytest.approx(ref.statistic)
    assert test[P_VALUE] == pytest.approx(ref.pvalue)
    assert not any("Cochran" in w.value for w in at.warning)


def test_simulated_sample_is_labelled():
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("cohorts.py", frame=frame, design=design, name="ssqa_simulated.csv.gz").run()
    assert not at.exception and not at.error
    assert any("Simulated data" in w.value for w in at.warning)
    assert at.selectbox(key="cohorts_cohort").value == "model"


def test_switching_choices_drops_stale_selections(bbq):
    frame, design = bbq
    at = page_test("cohorts.py", frame=frame, design=design, name=BBQ).run()
    at.selectbox(key="cohorts_cohort").set_value("category").run()  # was a 'within' factor
    assert not at.exception and not at.error
    assert at.multiselect(key="cohorts_by").value == []
    at.selectbox(key="cohorts_category").set_value("predicted_option").run()
    assert not at.exception and not at.error
    wide = at.dataframe[0].value
    assert set(wide["category"]) == set(frame["category"])
    assert {"ans0", "ans1", "ans2"} <= set(wide.columns)


def test_many_within_groups_are_paged_and_booleans_are_categories():
    """A "within" factor with 100 values (plotly refused more than ~27 rows of panels) and a
    True/False category column."""
    import numpy as np

    from analysis.design import Design, make_factor

    rng = np.random.default_rng(0)
    n = 4000
    frame = pd.DataFrame({"model": rng.choice(["m1", "m2"], n),
                          "template": [f"t{i:03d}" for i in rng.integers(0, 100, n)],
                          "cot": rng.random(n) < 0.4})
    design = Design((make_factor(frame, "model", kind="model"),
                     make_factor(frame, "template", kind="domain")))
    at = page_test("cohorts.py", frame=frame, design=design).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="cohorts_category").value == "cot"
    assert at.multiselect(key="cohorts_keep_cot").value == ["false", "true"]
    assert at.multiselect(key="cohorts_by").value == ["template"]
    specs = plotly_specs(at)
    bars = specs[0]
    assert "groups 1-12 of 100" in bars["layout"]["title"]["text"]
    assert len({t["xaxis"] for t in bars["data"]}) == 12  # 12 panels on the first page
    wide = at.dataframe[0].value
    t0 = wide[(wide["template"] == "t000") & (wide["model"] == "m1")].iloc[0]
    rows = frame[(frame["template"] == "t000") & (frame["model"] == "m1")]
    assert t0["true"] == pytest.approx(100 * rows["cot"].mean())
    at.number_input(key="cohorts_panel_page").set_value(9).run()
    assert not at.exception and not at.error
    last = plotly_specs(at)[0]
    assert "groups 97-100 of 100" in last["layout"]["title"]["text"]
    assert len({t["xaxis"] for t in last["data"]}) == 4


def test_time_capsules_per_demographic():
    """Two demographics in one label column: each keeps its own subcategories."""
    from analysis.design import Design, make_factor
    from tests.analysis.test_capsules import sample

    frame = sample()
    design = Design(tuple(make_factor(frame, f) for f in ("decade", "prompt")))
    at = page_test("cohorts.py", frame=frame, design=design, name="capsules").run()
    at.selectbox(key="cohorts_category").set_value("label").run()
    at.selectbox(key="cohorts_cohort").set_value("decade").run()
    at.multiselect(key="cohorts_by").set_value(["prompt"]).run()
    at.text_input(key="cohorts_demographics").set_value(
        "gender=woman,man,non-binary;race=White,Asian,Black").run()
    assert any("name the column" in e.value for e in at.error)
    at.selectbox(key="cohorts_demographic_col").set_value("demographic").run()
    assert not at.exception and not at.error
    table, tests, spread = (d.value for d in at.dataframe[-3:])
    assert table.loc[table["decade"] == "1950s", "gender / ceo / woman"].iloc[0] == 8.0
    assert set(tests["test"]) == {"Kruskal-Wallis", "Kruskal-Wallis among subcategories",
                                  "chi-square"}
    gender = spread[(spread["demographic"] == "gender") & (spread["decade"] == "1950s")]
    assert gender["n_categories"].iloc[0] == 3


def test_categories_named_like_columns():
    """A category 'model' while the cohorts are by model (was: pandas' "cannot insert
    model, already exists"), 'n', 'count', '', ' A' beside 'A' and 'a': the page shows
    the cohort column and every category's own column, with the hand-computed shares."""
    from analysis.design import Design, make_factor
    from tests.analysis.test_cohort_name_clashes import (
        CATEGORIES,
        check_long,
        check_wide,
        clashing_frame,
    )

    frame = clashing_frame()
    design = Design((make_factor(frame, "model", kind="model"),
                     make_factor(frame, "prompt", kind="domain")))
    at = page_test("cohorts.py", frame=frame, design=design, name="clash").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="cohorts_category").value == "answer"
    assert at.selectbox(key="cohorts_cohort").value == "model"
    assert at.multiselect(key="cohorts_by").value == ["prompt"]
    assert sorted(at.multiselect(key="cohorts_keep_answer").value) == sorted(CATEGORIES)
    check_wide(at.dataframe[0].value, ["prompt"])
    check_long(at.dataframe[1].value)
    legend = {t["name"] for t in plotly_specs(at)[0]["data"]}
    assert {'""', '" A"', "A", "a", "model", "n", "count"} <= legend


def test_issue_42_table_opens_on_the_answers_and_says_how_refusals_count():
    """Issue 42: the page opened on the 48 prompt texts as categories and counted 20
    REFUSED answers as 'not biased' without a word."""
    import numpy as np

    from analysis.design import suggest_design
    from tests.analysis.results_tables import TEMPLATES, results_table

    t = results_table()
    t = t[t["template"].isin(list(TEMPLATES)[:2])].reset_index(drop=True)
    idx = np.random.default_rng(5).choice(len(t), 20, replace=False)
    t.loc[idx, "response"], t.loc[idx, "biased"] = "REFUSED", 0
    at = page_test("cohorts.py", frame=t, design=suggest_design(t), name="issue42.csv").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="cohorts_category").value == "response"
    assert at.selectbox(key="cohorts_cohort").value == "model"
    notes = [i.value for i in at.info if "refusals" in i.value]
    assert len(notes) == 1 and f"20 of {len(t)} answers are refusals ('REFUSED' in " \
        "response): counted as a category of their own" in notes[0]
    assert "Refusals (above): leave them out." in notes[0]
    assert "REFUSED" in at.dataframe[0].value.columns
    at.radio(key="cohorts_refusals").set_value("leave_out").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    wide = at.dataframe[0].value
    assert "REFUSED" not in wide.columns and int(wide["n"].sum()) == len(t) - 20
    assert any("left out" in i.value for i in at.info)
    at.selectbox(key="cohorts_category").set_value("biased").run()  # a 0/1 category
    at.radio(key="cohorts_refusals").set_value("count").run()
    assert any("counted under the category their rows have (biased = 0: 20)" in i.value
               for i in at.info)
