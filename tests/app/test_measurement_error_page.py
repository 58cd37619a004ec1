"""The Planner page's measurement-error sections under AppTest (ui/measurement_error.py):
the components and total-error tables are the API's, the design study answers "one more
judge or ten more templates?" with the API's numbers, and a bad facet is an error."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import api as bw
from analysis.design import apply_design
from judges.cost import PriceTable  # the package, before a page puts pages/ on sys.path
from tests.app.apptools import page_test, sample_with_design, shown


@pytest.fixture(scope="module")
def bbq():
    return sample_with_design("bbq_unifiedqa.csv.gz")


def test_planner_shows_the_api_components_total_error_and_d_study(bbq):
    frame, design = bbq
    at = page_test("planner.py", frame=frame, design=design, timeout=300).run()
    assert not at.exception, at.exception
    results = apply_design(frame, design)
    expected = bw.variance_components(results, design, applied=True, n_resamples=0)
    frames = [f.value for f in at.dataframe]
    components = next(f for f in frames if "component" in f.columns and "share" in f.columns)
    pd.testing.assert_series_equal(components["variance"].reset_index(drop=True),
                                   expected.table["variance"], check_names=False)
    errors = next(f for f in frames if "se_ratio" in f.columns)
    assert errors["ci_high"].iloc[0] == pytest.approx(
        expected.tables["total_error"]["ci_high"].iloc[0])
    dstudy = bw.d_study(results, design, applied=True)
    shown = next(f for f in frames if "se_gain_per_cost" in f.columns)
    row = shown.set_index("change").loc["+10 template_id"]
    assert row["se_rate"] == pytest.approx(
        dstudy.table.set_index("change").loc["+10 template_id", "se_rate"])
    assert "lowers the SE of the rate most" in dstudy.meta["answer"]
    assert any("lowers the SE of the rate most" in m.value for m in at.markdown)
    assert any("template_id" in m.value and "adds the most variance" in m.value
               for m in at.markdown)


def test_planner_bad_facet_is_an_error_not_a_crash(bbq):
    frame, design = bbq
    at = page_test("planner.py", frame=frame.assign(judge="only"), design=design,
                   timeout=300).run()
    at.multiselect(key="planner_variance_facets").set_value(["judge"]).run()
    assert not at.exception
    assert any("one level" in e.value for e in at.error)


def test_the_judges_price_table_sets_the_judge_cost(bbq):
    frame, design = bbq
    at = page_test("planner.py", frame=frame, design=design, timeout=300).run()
    at.selectbox(key="planner_dstudy_provider").set_value("openai").run()
    at.selectbox(key="planner_dstudy_judge_model").set_value("gpt-4o-mini")
    at.toggle(key="planner_dstudy_use_price").set_value(True).run()
    assert not at.exception
    price = PriceTable.load().cost("openai", "gpt-4o-mini", 600, 60)
    shown = next(f.value for f in at.dataframe if "se_gain_per_cost" in f.value.columns)
    now = shown.iloc[0]
    # one judge call per answer (no judge column): cost = answers x (1 + price), the
    # answers being the 35,757 rows with an outcome
    assert now["cost"] == pytest.approx(35_757 * (1 + price))


@pytest.mark.parametrize("page", ["subgroups", "compare"])
def test_the_expander_of_the_subgroups_and_compare_pages(page):
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test(f"{page}.py", frame=frame, design=design, timeout=300).run()
    assert not at.exception
    assert not any("se_ratio" in f.value.columns for f in at.dataframe)  # off: no fit
    at.toggle(key=f"{page}_measurement_on").set_value(True).run()
    assert not at.exception, at.exception
    errors = next(f.value for f in at.dataframe if "se_ratio" in f.value.columns)
    assert set(errors["quantity"]) == {"rate", "difference"}  # compact: the headlines
    assert errors["se_ratio"].iloc[0] == pytest.approx(0.995, abs=0.01)  # no template effect


def test_planner_answers_one_more_judge_or_ten_more_templates_on_the_judged_sample():
    """The SIMULATED judged sample: the page prices a judge call as an answer (1) by
    default when the table has a judge column, and states the API's sentence."""
    frame, design = sample_with_design("judged_simulated.csv.gz")
    at = page_test("planner.py", frame=frame, design=design, timeout=300).run()
    assert not at.exception, at.exception
    assert at.number_input(key="planner_dstudy_judge").value == 1.0
    results = apply_design(frame, design)
    expected = bw.d_study(results, design, applied=True, judge_cost=1.0)
    sentence = expected.meta["one_or_ten"]
    assert sentence.startswith("One more judge: SE of the difference 0.01929 -> 0.01808 "
                               "for 640 more; ten more templates: 0.01929 -> 0.01725 for "
                               "880 more.")
    assert any(shown(m.value) == f"**{sentence}**" for m in at.markdown)
    table = next(f.value for f in at.dataframe if "se_gain_per_cost" in f.value.columns)
    assert table.set_index("change").loc["+1 judge", "se_difference"] == pytest.approx(
        expected.table.set_index("change").loc["+1 judge", "se_difference"])
    # the total-error section names the dominant facet of a model's rate: the judges
    assert any("judge" in m.value and "adds the most variance" in m.value
               for m in at.markdown)


@pytest.mark.parametrize("page", ["subgroups", "compare"])
def test_the_headline_total_error_beside_the_answer(page):
    """On by default, outside the expander: each model's rate and the difference with
    both intervals and the facets' shares (the API's sentences), naming the dominant
    facet; off with its toggle."""
    frame, design = sample_with_design("judged_simulated.csv.gz")
    at = page_test(f"{page}.py", frame=frame, design=design, timeout=300).run()
    assert not at.exception, at.exception
    expected = bw.variance_components(apply_design(frame, design), design, applied=True,
                                      n_resamples=0).meta["headline"]
    assert len(expected) == 3 and "judge dominates" in expected[0]
    box = next(i.value for i in at.info if "Over the facets" in i.value)
    assert shown(box).splitlines()[1:] == expected
    at.toggle(key=f"{page}_measurement_headline").set_value(False).run()
    assert not any("Over the facets" in i.value for i in at.info)


def test_the_headline_is_off_by_default_above_its_row_limit(monkeypatch):
    """A table above ``HEADLINE_MAX_ROWS`` opens Subgroups without the REML fit (its
    first render keeps its speed); the toggle, off, turns the box on."""
    import ui.measurement_error as me

    frame, design = sample_with_design("judged_simulated.csv.gz")
    monkeypatch.setattr(me, "HEADLINE_MAX_ROWS", len(frame) - 1)
    at = page_test("subgroups.py", frame=frame, design=design, timeout=300).run()
    assert not at.exception, at.exception
    assert at.toggle(key="subgroups_measurement_headline").value is False
    assert not any("Over the facets" in i.value for i in at.info)
    at.toggle(key="subgroups_measurement_headline").set_value(True).run()
    assert any("Over the facets" in i.value for i in at.info)


def test_the_ecdf_page_deviation_metric_over_the_facets():
    """Curves by model, ideal 0, all chosen factors: each model's deviation metric with
    its total-error interval; the estimate is the page's own (raw) deviation metric."""
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("ecdf.py", frame=frame, design=design, timeout=300).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="ecdf_by").value == "model"
    factors = at.multiselect(key="ecdf_factors").value
    box = shown(next(i.value for i in at.info if "Deviation metric over the facets" in i.value))
    lines = box.splitlines()[1:]
    summary = next(f.value for f in at.dataframe if "deviation_metric" in f.value.columns)
    assert len(lines) == len(summary) == 2
    for line, dm in zip(lines, summary["deviation_metric"], strict=True):
        assert f"subgroups of {' x '.join(factors)}: {dm:.4g}, sampling interval" in line
        assert "over the facets [" in line
    at.number_input(key="ecdf_ideal").set_value(0.1).run()
    assert not any("Deviation metric over the facets" in i.value for i in at.info)
    assert any("No interval over the facets for this choice" in c.value for c in at.caption)
