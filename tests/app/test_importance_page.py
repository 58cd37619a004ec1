"""Factor importance page under AppTest on the bundled samples: refusal with fix buttons,
table and chart equal to the API, widgets (interactions, separation, p filter)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.columns import COEF, TERM
from analysis.design import Design, apply_design
from analysis.importance import factor_importance
from tests.app.apptools import page_test, plotly_specs, sample_with_design

SPEC = ["model", "cot", "prompt_style", "pachankis_cluster", "gender"]


@pytest.fixture(scope="module")
def ssqa():
    return sample_with_design("ssqa_simulated.csv.gz")


def spec_page(ssqa):
    """The page with the model of SPEC (the default also takes biased_answer)."""
    at = page_test("importance.py", frame=ssqa[0], design=ssqa[1])
    at.session_state["importance_factors"] = SPEC
    return at


def test_default_factors_take_the_design_order_without_nested_pairs(ssqa):
    at = page_test("importance.py", frame=ssqa[0], design=ssqa[1]).run()
    assert at.multiselect(key="importance_factors").value == [*SPEC, "biased_answer"]


def chart_points(at) -> dict[str, list]:
    (spec,) = plotly_specs(at)
    return {t["name"]: list(t["y"]) for t in spec["data"]}


def test_refusal_explains_the_base_prompts_and_the_fix_button_repairs_it(ssqa):
    at = spec_page(ssqa).run()
    assert not at.exception
    assert at.title[0].value == "Factor importance"
    assert at.multiselect(key="importance_factors").value == SPEC
    (error,) = at.error
    assert "prompt_style = 'base', pachankis_cluster = 'no stigma' and gender = 'no gender'" \
        in error.value
    labels = [b.label for b in at.button]
    assert labels[0] == "Leave out the 148 rows with prompt_style = 'base'"
    assert not plotly_specs(at)  # no numbers from a refused model

    at.button(key="importance_fix_0").click().run()
    assert not at.exception and not at.error
    assert "base" not in at.multiselect(key="importance_where_prompt_style").value
    design = ssqa[1]
    expected = factor_importance(apply_design(ssqa[0], design), design, factors=SPEC,
                                 exclude={"prompt_style": ["base"]}).terms
    shown = at.dataframe[0].value
    assert shown[TERM].tolist() == expected[TERM].tolist()
    np.testing.assert_allclose(shown[COEF], expected[COEF], atol=1e-12)
    points = chart_points(at)
    assert "prompt_style = doubt" in points["risk"]
    assert "cot = yes" in points["protective"]
    # the design's cluster (template, 37 values) makes the page cluster-robust by default
    assert any("Standard errors: cluster-robust over 37 values of template" in c.value
               for c in at.caption)
    np.testing.assert_allclose(shown["p_value"], expected["p_value"], rtol=1e-9)
    quiet = expected.loc[expected["effect"] == "not significant", TERM]
    assert len(points["not significant"]) == len(quiet) >= 1
    downloads = [b.label for b in at.get("download_button")]
    assert {"PNG", "SVG", "PDF", "HTML", "CSV"} <= set(downloads)
    assert downloads.count("CSV") == 2  # coefficients and LR tests


def test_dropping_factors_by_fix_button_and_p_filter(ssqa):
    at = spec_page(ssqa).run()
    drop = next(b for b in at.button if b.label.endswith("(keep prompt_style)"))
    drop.click().run()
    assert not at.error
    assert at.multiselect(key="importance_factors").value == ["model", "cot", "prompt_style"]
    at.select_slider(key="importance_max_p").set_value(0.001).run()
    points = chart_points(at)
    assert sum(len(v) for v in points.values()) == 4  # model, cot, doubt, positive (base n.s.)
    at.radio(key="importance_scale").set_value("coef").run()
    (spec,) = plotly_specs(at)
    assert spec["layout"]["xaxis"].get("type") != "log"


def test_interaction_widget_adds_terms(ssqa):
    at = spec_page(ssqa).run()
    at.button(key="importance_fix_0").click().run()
    at.multiselect(key="importance_interactions").set_value(["model:cot"]).run()
    assert not at.error and not at.exception
    terms = at.dataframe[0].value[TERM].tolist()
    assert terms[-1] == "model[sim-model-B]:cot[yes]"
    tests = at.dataframe[1].value
    assert tests["factor"].tolist()[-1] == "model:cot"


def test_separation_choice_and_notes():
    rows = []
    for a, b, n, k in [("x0", "y0", 100, 30), ("x0", "y1", 100, 50), ("x1", "y0", 60, 0),
                       ("x1", "y1", 40, 0), ("x2", "y0", 80, 20), ("x2", "y1", 90, 40)]:
        rows += [{"a": a, "b": b, "deviation": int(i < k)} for i in range(n)]
    frame = pd.DataFrame(rows)
    design = Design.from_dict({"factors": [
        {"name": "a", "kind": "domain", "reference": "x0", "values": ["x0", "x1", "x2"]},
        {"name": "b", "kind": "prompt", "reference": "y0", "values": ["y0", "y1"]}],
        "outcome": {"column": "deviation"}})
    at = page_test("importance.py", frame=frame, design=design).run()
    (error,) = at.error
    assert "a = 'x1': no deviation in 100 rows" in error.value
    at.radio(key="importance_separation").set_value("merge").run()
    assert not at.error
    assert any("merged a = 'x1'" in w.value for w in at.warning)
    assert at.dataframe[0].value[TERM].tolist() == ["(intercept)", "a[x2]", "b[y1]"]


def test_bbq_sample_renders():
    frame, design = sample_with_design("bbq_unifiedqa.csv.gz")
    at = page_test("importance.py", frame=frame, design=design).run()
    assert not at.exception and not at.error
    factors = at.multiselect(key="importance_factors").value
    assert "subcategory" not in factors  # nested in category: not suggested
    terms = at.dataframe[0].value
    assert terms[TERM].iloc[0] == "(intercept)"
    assert len(terms) == 1 + sum(len(design.factor(f).values) - 1 for f in factors)


def test_cluster_selector_shows_robust_errors_and_design_effect(ssqa):
    from analysis.columns import DESIGN_EFFECT, STD_ERR

    at = spec_page(ssqa).run()
    at.button(key="importance_fix_0").click().run()
    at.selectbox(key="importance_cluster").select("template").run()
    assert not at.exception and not at.error
    design = ssqa[1]
    expected = factor_importance(apply_design(ssqa[0], design), design, factors=SPEC,
                                 exclude={"prompt_style": ["base"]}, cluster="template").terms
    shown = at.dataframe[0].value
    np.testing.assert_allclose(shown[STD_ERR], expected[STD_ERR], atol=1e-12)
    np.testing.assert_allclose(shown[DESIGN_EFFECT], expected[DESIGN_EFFECT], atol=1e-12)
    assert any("cluster-robust over the 37 values of template" in w.value for w in at.warning)


def test_paper_references_first_fix_drops_the_base_prompts(ssqa):
    at = spec_page(ssqa)
    for f, v in (("pachankis_cluster", "no stigma"), ("gender", "no gender"),
                 ("prompt_style", "base")):
        at.session_state[f"importance_ref_{f}"] = v
    at.run()
    assert at.error
    first = at.button(key="importance_fix_0")
    assert first.label.startswith("Drop the rows at the reference prompt (prompt_style = "
                                  "'base', 148 rows); new references prompt_style = 'doubt', "
                                  "pachankis_cluster = 'Innocuous Persistent', gender = ")
    first.click().run()
    assert not at.exception and not at.error
    assert "base" not in at.multiselect(key="importance_where_prompt_style").value
    assert at.dataframe[0].value[TERM].tolist()[0] == "(intercept)"


def test_continuous_outcome_fits_the_linear_model_and_the_mixed_refusal_is_shown():
    from analysis.importance_linear import linear_importance
    from analysis.importers import import_results
    from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_discrim_eval_explicit_*")
    imported = import_results("lm-eval", [path])
    at = page_test("importance.py", frame=imported.frame, design=imported.design)
    at.session_state["importance_factors"] = ["race", "gender"]
    at.run()
    assert not at.exception and not at.error
    assert "logit_yes is continuous" in at.info[0].value
    assert at.multiselect(key="importance_covariates").value == ["age"]
    expected = linear_importance(imported.frame, imported.design, factors=["race", "gender"])
    shown = at.dataframe[0].value
    assert shown[TERM].tolist() == expected.terms[TERM].tolist()
    np.testing.assert_allclose(shown[COEF], expected.terms[COEF], atol=1e-12)
    (spec,) = plotly_specs(at)
    assert {t["name"] for t in spec["data"]} <= {"higher", "lower", "not significant"}
    at.checkbox(key="importance_mixed").check().run()
    assert "did not converge" in at.error[0].value
    assert not plotly_specs(at)  # no numbers from a refused fit


def test_options_the_page_does_not_lay_out_get_widgets_from_the_options_object(
        ssqa, monkeypatch):
    """Confidence level, the small-sample correction and the LR tests come from
    ImportanceOptions; a new option declared there appears on the page with no page edit
    and reaches the fit."""
    from dataclasses import dataclass

    import analysis.options.importance as module
    from analysis.options import option
    from analysis.options.types import POSITIVE_FLOAT

    def page():
        at = page_test("importance.py", frame=ssqa[0], design=ssqa[1])
        at.session_state["importance_factors"] = ["model", "cot"]
        return at.run()

    at = page()
    assert at.number_input(key="importance_option_confidence").value == 0.95
    assert at.selectbox(key="importance_option_small_sample").value == "cr2"
    at.number_input(key="importance_option_confidence").set_value(0.9).run()
    at.checkbox(key="importance_option_likelihood_ratio").uncheck().run()
    want = factor_importance(apply_design(ssqa[0], ssqa[1]), ssqa[1], factors=["model", "cot"],
                             confidence=0.9, likelihood_ratio=False)
    shown = at.dataframe[0].value.set_index(TERM)
    terms = want.terms.set_index(TERM)
    np.testing.assert_allclose(shown.loc[terms.index, "ci_low"].to_numpy(dtype=float),
                               terms["ci_low"].to_numpy(dtype=float), rtol=1e-9)
    # no likelihood-ratio tests asked: the robust Wald tests only, as the API gives them
    assert list(at.dataframe[1].value.columns) == list(want.factor_tests.columns)
    assert not any(c.startswith("lr") for c in want.factor_tests.columns)

    @dataclass(frozen=True, kw_only=True)
    class WithRows(module.ImportanceOptions):
        min_rows_per_parameter: float = option(
            10.0, "refuse a model with fewer rows per parameter (default %(default)s)",
            type=POSITIVE_FLOAT, label="Rows per parameter")

    import ui.importance

    # as an edit of analysis/options/importance.py would: every holder of the class sees it
    monkeypatch.setattr(module, "ImportanceOptions", WithRows)
    monkeypatch.setattr(ui.importance, "Opts", WithRows)
    at = page()
    assert at.number_input(key="importance_option_min_rows_per_parameter").value == 10.0
    at.number_input(key="importance_option_min_rows_per_parameter").set_value(1e6).run()
    assert any("per parameter" in e.value for e in at.error)
