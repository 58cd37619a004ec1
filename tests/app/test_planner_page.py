"""Planner page under AppTest: before/after coverage and the additions equal the API, the
fractional factorial and the power calculator equal theirs, no data still works."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.cells import cell_table
from analysis.design import apply_design
from analysis.planning import fractional_factorial, plan_additions, sample_size
from tests.app.apptools import metric_values, page_test, sample_with_design


@pytest.fixture(scope="module")
def ssqa():
    return sample_with_design("ssqa_simulated.csv.gz")


def test_planner_shows_the_plan_of_the_api(ssqa):
    frame, design = ssqa
    at = page_test("planner.py", frame=frame, design=design)
    at.run()
    at.multiselect(key="planner_factors").set_value(["stigma", "gender", "prompt_style"])
    at.number_input(key="planner_budget").set_value(250).run()
    assert not at.exception and not at.error
    cells = cell_table(apply_design(frame, design), ["stigma", "gender", "prompt_style"],
                       with_outcome=False)
    plan = plan_additions(cells, design, factors=["stigma", "gender", "prompt_style"],
                          budget=250)
    shown = at.dataframe[0].value
    assert shown["n"].sum() == 250 and len(shown) == len(plan.add)
    metrics = metric_values(at)
    assert metrics["Coverage"] == f"{100 * plan.after['coverage_percentage']:.2f} %"
    assert metrics["Gini index"] == f"{plan.after['gini_index']:.4f}"
    runs = at.dataframe[1].value
    example = fractional_factorial({f: ["no", "yes"] for f in
                                    ["cot", "persona", "few_shot", "doubt", "negated",
                                     "long_context"]}, 16)
    np.testing.assert_array_equal(runs.to_numpy(), example.runs.to_numpy())
    assert metrics["Rows needed"] == f"{sample_size(rate=0.3, ld=0.4, share=0.1)['n_total']:,}"
    assert {"CSV"} <= {b.label for b in at.get("download_button")}


def test_planner_without_data_and_bad_factor_text():
    at = page_test("planner.py").run()
    assert not at.exception
    assert "Load results" in at.info[0].value
    # mixed numbers of values: the full factorial (6 runs) fits a budget of 16 ...
    at.text_area(key="planner_new_factors").set_value("a: 0, 1\nb: 0, 1, 2").run()
    assert not at.error
    # ... a budget of 4 would need a regular fraction, which needs equal numbers of values
    at.number_input(key="planner_runs").set_value(4).run()
    assert "same number of values" in at.error[0].value


def test_subgroups_page_greys_out_small_subgroups():
    from analysis.columns import MDE_LOG_DISPARITY
    from analysis.figures.subgroups import GREY_OUT
    from tests.app.apptools import plotly_specs

    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("subgroups.py", frame=frame, design=design).run()
    assert MDE_LOG_DISPARITY in at.dataframe[0].value.columns
    at.checkbox(key="subgroups_grey").check().run()
    assert not at.exception
    (spec,) = plotly_specs(at)
    assert GREY_OUT in spec["data"][0]["marker"]["colors"]


def test_fractional_factorial_names_are_shown_as_text():
    """Generators and aliases quote the factor names typed: escaped (issue 12 item 4)."""
    from tests.app.apptools import shown

    at = page_test("planner.py").run()
    names = ["**a**", "![b](x.png)", "c", "d"]  # (no colon: it ends a name)
    at.text_area(key="planner_new_factors").set_value(
        "\n".join(f"{n}: lo, hi" for n in names)).run()
    at.number_input(key="planner_runs").set_value(8).run()
    assert not at.exception and not at.error
    (gen,) = [m.value for m in at.markdown if "Generators" in m.value]
    texts = [gen, *(c.value for c in at.caption)]
    assert "d = " in shown(gen) and "\\*\\*a\\*\\*" in gen
    for text in texts:
        assert "](" not in text.replace("\\](", ""), text  # no live link
        assert "**a**" not in text.replace("**8 runs", ""), text  # no bold from a name
    assert any("![b](x.png)" in shown(t) for t in texts)
