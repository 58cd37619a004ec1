"""Bias index page under AppTest on the simulated SSQA sample: totals, components, ranking."""

from __future__ import annotations

import pytest

from analysis.columns import CONTRIBUTION, DIVERSITY_PENALTY, LLMBI, MODEL, RANK
from analysis.design import apply_design
from analysis.figures.index import TOTAL_TRACE
from analysis.index import Dimension, bias_index
from tests.app.apptools import page_test, plotly_specs, sample_with_design

SSQA = "ssqa_simulated.csv.gz"


@pytest.fixture(scope="module")
def ssqa():
    return sample_with_design(SSQA)


def test_index_per_model(ssqa):
    frame, design = ssqa
    at = page_test("bias_index.py", frame=frame, design=design, name=SSQA).run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Bias index"
    assert any("Simulated data" in w.value for w in at.warning)
    assert at.selectbox(key="index_model").value == "model"
    dims = at.multiselect(key="index_dimensions").value
    assert dims == ["pachankis_cluster", "gender"]
    totals = at.dataframe[0].value.set_index(MODEL)
    ref = bias_index(apply_design(frame, design), design, model="model",
                     dimensions=[Dimension(d) for d in dims]).totals.set_index(MODEL)
    assert totals[LLMBI].to_dict() == pytest.approx(ref[LLMBI].to_dict())
    assert totals.loc["sim-model-A", RANK] == 1  # model B deviates more (stated +0.6)
    comps = at.dataframe[1].value
    assert comps.groupby(MODEL)[CONTRIBUTION].sum().to_dict() == pytest.approx(
        totals[LLMBI].to_dict())
    spec = plotly_specs(at)[0]
    assert spec["data"][-1]["name"] == TOTAL_TRACE and spec["layout"]["barmode"] == "relative"


def test_penalty_and_sentiment_widgets(ssqa):
    frame, design = ssqa
    at = page_test("bias_index.py", frame=frame, design=design, name=SSQA).run()
    at.radio(key="index_penalty_kind").set_value("coverage_gini").run()
    at.number_input(key="index_penalty_value").set_value(1.0).run()
    at.selectbox(key="index_sentiment").set_value("sentiment").run()
    at.number_input(key="index_lambda").set_value(0.5).run()
    assert not at.exception and not at.error
    totals = at.dataframe[0].value.set_index(MODEL)
    assert (totals[DIVERSITY_PENALTY] > 0).all()
    assert totals["sentiment_term"].to_numpy() == pytest.approx(
        0.5 * totals["sentiment_score"].to_numpy())


def test_no_dimension_asks_for_one(ssqa):
    frame, design = ssqa
    at = page_test("bias_index.py", frame=frame, design=design, name=SSQA).run()
    at.multiselect(key="index_dimensions").set_value([]).run()
    assert not at.exception
    assert any("at least one bias dimension" in i.value for i in at.info)
    use = at.button(key="index_dimensions_use")  # the likeliest choice, one click away
    assert use.label.startswith("Use ")
    use.click().run()
    assert not at.exception and at.multiselect(key="index_dimensions").value
    assert len(plotly_specs(at)) == 1  # the index figure is drawn


def test_published_variant_and_both():
    import pandas as pd

    from analysis.design import Design, Factor, Outcome
    from analysis.index_published import published_llmbi

    frame = pd.DataFrame({"model": ["A", "A", "B", "B"],
                          "bias_type": ["gender", "race", "gender", "race"],
                          "polarity_textblob": [0.5, -0.1, 0.0, 0.3],
                          "biased": [1, 0, 0, 1]})
    design = Design(factors=(Factor("model", "model", ("A", "B"), "A"),
                             Factor("bias_type", "domain", ("gender", "race"), "gender")),
                    outcome=Outcome("biased"))
    at = page_test("bias_index.py", frame=frame, design=design).run()
    assert at.radio(key="index_variant").value == "composite (this app)"
    assert any("this app's composite index" in c.value for c in at.caption)
    at.radio(key="index_variant").set_value("as published").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="index_pub_polarity").value == "polarity_textblob"
    shown = at.dataframe[0].value
    expected = published_llmbi(frame, polarity="polarity_textblob", by=["model"]).totals
    # A: 0.2 + 2.5 * (0.5 + 0.1)/2 = 0.95; B: 0.2 + 2.5 * 0.15 = 0.575
    assert shown[LLMBI].tolist() == pytest.approx([0.95, 0.575])
    assert shown[LLMBI].tolist() == pytest.approx(expected[LLMBI].tolist())
    assert len(at.dataframe) == 1  # the composite index is not shown
    at.radio(key="index_variant").set_value("both, side by side").run()
    assert not at.exception
    assert len(at.dataframe) == 3  # composite totals, components, published totals
    assert at.dataframe[2].value[LLMBI].tolist() == pytest.approx([0.95, 0.575])
