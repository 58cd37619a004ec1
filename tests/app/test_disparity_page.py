"""Disparity page under AppTest on the bundled samples: numbers, figures, widgets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.columns import GROUP, IMPACT_RATIO, P_VALUE, SELECTION_RATE, N
from analysis.design import Design, apply_design
from analysis.disparity import group_summary, permutation_test
from analysis.figures.disparity import SELECTION_TRACE, STATISTIC_TRACE
from tests.app.apptools import page_test, plotly_specs, sample_with_design

SSQA = "ssqa_simulated.csv.gz"
BBQ = "bbq_unifiedqa.csv.gz"


@pytest.fixture(scope="module")
def ssqa():
    return sample_with_design(SSQA)


def tables(at):
    return {"summary": at.dataframe[0].value, "selection": at.dataframe[1].value,
            "metrics": at.dataframe[2].value, "permutation": at.dataframe[3].value}


def test_simulated_sentiment_by_cluster(ssqa):
    frame, design = ssqa
    at = page_test("disparity.py", frame=frame, design=design, name=SSQA).run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Disparity"
    assert any("Simulated data" in w.value for w in at.warning)  # says where data comes from
    assert any("SIMULATED" in c.value for c in at.caption)
    assert at.selectbox(key="disparity_feature").value == "sentiment"
    assert at.multiselect(key="disparity_by").value == ["pachankis_cluster"]

    shown = tables(at)
    ref = group_summary(apply_design(frame, design), "sentiment", "pachankis_cluster")
    assert shown["summary"]["mean"].to_numpy() == pytest.approx(ref["mean"].to_numpy())
    assert shown["summary"][N].tolist() == ref[N].tolist()
    sel = shown["selection"].set_index(GROUP)
    mean = frame["sentiment"].mean()
    threatening = frame.loc[frame["pachankis_cluster"] == "Threatening", "sentiment"]
    assert sel.loc["Threatening", SELECTION_RATE] == pytest.approx((threatening >= mean).mean())
    assert sel[IMPACT_RATIO].max() == pytest.approx(1.0)

    specs = plotly_specs(at)
    names = [[t.get("name") for t in s["data"]] for s in specs]
    assert names[0] == [STATISTIC_TRACE] and names[-1] == [SELECTION_TRACE]
    sel_fig = specs[-1]
    top = sel[SELECTION_RATE].max()
    assert sel_fig["layout"]["shapes"][0]["y0"] == pytest.approx(0.8 * top)  # 4/5 line
    assert "fails the four-fifths rule" in sel_fig["layout"]["title"]["text"]

    perm = shown["permutation"]
    again = permutation_test(apply_design(frame, design), "sentiment", "pachankis_cluster",
                             n_resamples=999, seed=0, adaptive=True, alpha=0.05)
    assert perm[P_VALUE].to_numpy() == pytest.approx(again[P_VALUE].to_numpy())
    assert perm["n_permutations"].tolist() == again["n_permutations"].tolist()
    assert perm["n_permutations"].max() < 999  # clear-cut clusters stop early
    labels = {b.label for b in at.get("download_button")}
    assert {"PNG", "SVG", "PDF", "HTML", "CSV"} <= labels


def test_widgets_change_the_analysis(ssqa):
    frame, design = ssqa
    at = page_test("disparity.py", frame=frame, design=design, name=SSQA).run()
    at.number_input(key="disparity_permutations").set_value(0).run()
    at.selectbox(key="disparity_statistic").set_value("median").run()
    at.multiselect(key="disparity_by").set_value(["model", "cot"]).run()
    at.selectbox(key="disparity_direction").set_value("below").run()
    assert not at.exception and not at.error
    summary = at.dataframe[0].value
    assert summary[GROUP].tolist() == ["sim-model-A / no", "sim-model-A / yes",
                                       "sim-model-B / no", "sim-model-B / yes"]
    a_no = frame[(frame["model"] == "sim-model-A") & (frame["cot"] == "no")]["sentiment"]
    assert summary["median"].iloc[0] == pytest.approx(a_no.median())
    sel = at.dataframe[1].value
    assert sel[SELECTION_RATE].iloc[0] == pytest.approx((a_no <= frame["sentiment"].mean()).mean())
    assert any("Permutation tests are off" in i.value for i in at.info)
    metrics = at.dataframe[2].value
    assert set(metrics["quantity"]) == {"median", "selection_rate"}


def test_real_bbq_sample_and_subset():
    frame, design = sample_with_design(BBQ)
    at = page_test("disparity.py", frame=frame, design=design, name=BBQ).run()
    at.number_input(key="disparity_permutations").set_value(19).run()
    at.selectbox(key="disparity_feature").set_value("correct").run()
    at.multiselect(key="disparity_where_input_format").set_value(["qonly"]).run()
    assert not at.exception and not at.error
    assert not any("Simulated" in w.value for w in at.warning)
    assert any("Real data" in c.value for c in at.caption)
    summary = at.dataframe[0].value.set_index(GROUP)
    q = frame[frame["input_format"] == "qonly"]
    assert summary["mean"].to_dict() == pytest.approx(q.groupby("category")["correct"].mean()
                                                      .to_dict())


def test_bbq_biased_answer_is_harmful_and_ids_are_not_default():
    frame, design = sample_with_design(BBQ)
    at = page_test("disparity.py", frame=frame, design=design, name=BBQ).run()
    assert at.selectbox(key="disparity_feature").value not in ("question_index", "label")
    at.number_input(key="disparity_permutations").set_value(0).run()
    at.selectbox(key="disparity_feature").set_value("biased_answer").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="disparity_polarity_biased_answer").value == "harmful"
    assert any("x <= standard" in c.value for c in at.caption)
    sel = at.dataframe[1].value.set_index(GROUP)
    # the selection rate is the share of answers that are not biased
    unbiased = 1 - frame.groupby("category")["biased_answer"].mean()
    assert sel[SELECTION_RATE].to_dict() == pytest.approx(unbiased.to_dict())
    best = unbiased.idxmax()
    assert sel.loc[best, IMPACT_RATIO] == pytest.approx(1.0)


def test_no_numeric_column():
    frame = pd.DataFrame({"g": list("abab"), "t": list("wxyz")})
    design = Design.from_dict({"factors": [{"name": "g", "values": ["a", "b"]}]})
    at = page_test("disparity.py", frame=frame, design=design).run()
    assert not at.exception
    assert any("no numeric column" in i.value for i in at.info)
    assert not at.dataframe


def test_opens_on_the_bundled_sample_without_data():
    at = page_test("disparity.py").run()
    assert not at.exception and not at.error
    assert any("Real data" in c.value for c in at.caption)
    # the report's 4 tables and the SAGED statistics' 2
    assert len(at.dataframe) == 6 and np.isfinite(at.dataframe[0].value["mean"]).all()


def test_saged_statistics_section():
    from analysis.design import Factor
    from analysis.saged_stats import saged_statistics

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"g": np.repeat(["a", "b", "c"], 20),
                          "f": rng.normal(size=60).round(2)})
    frame["base"] = (frame["f"] + rng.normal(scale=0.1, size=60)).round(2)
    design = Design(factors=(Factor("g", "domain", ("a", "b", "c"), "a"),))
    at = page_test("disparity.py", frame=frame, design=design).run()
    assert not at.exception
    at.selectbox(key="disparity_feature").set_value("f")
    at.selectbox(key="disparity_baseline").set_value("base").run()
    at.number_input(key="saged_tolerance").set_value(0.1)
    at.selectbox(key="saged_normalize").set_value("minmax").run()
    assert not at.exception and not at.error
    shown = at.dataframe[-2].value
    ref = saged_statistics(frame, "f", "g", baseline="base", tolerance=0.1,
                           normalization="minmax")
    for col in ("kl_divergence", "precision", "pearson", "spearman", "mode", "percentile"):
        assert shown[col].to_numpy() == pytest.approx(ref[col].to_numpy()), col
    assert shown["precision"].between(0, 1).all() and (shown["pearson"] > 0.9).all()


def test_a_constant_factor_is_never_the_default_and_an_empty_choice_is_one_click_away():
    """Issue 29 item 3: BBQ's preds_Age.jsonl import has category = Age only; Disparity
    used to open on 'Group by category' and a red error."""
    from analysis.importers import import_results
    from tests.app.apptools import ROOT

    path = ROOT / "tests" / "data" / "bbq" / "preds_Age.jsonl.gz"
    imported = import_results("bbq", [path])
    assert imported.frame["category"].nunique() == 1
    at = page_test("disparity.py", frame=imported.frame, design=imported.design).run()
    assert not at.exception and not at.error
    assert at.multiselect(key="disparity_by").value != ["category"]
    at.multiselect(key="disparity_by").set_value([]).run()
    assert any("Group by" in i.value for i in at.info)
    at.button(key="disparity_by_use").click().run()
    assert not at.exception and not at.error
    assert at.multiselect(key="disparity_by").value not in ([], ["category"])


def test_headline_verdicts_carry_no_arrow(ssqa):
    """Issue 42: "fails 4/5" under the impact ratio was drawn with an up arrow."""
    from streamlit.proto.Metric_pb2 import Metric

    at = page_test("disparity.py", frame=ssqa[0], design=ssqa[1])
    at.run()
    assert not at.exception and at.metric
    with_note = [m for m in at.metric if m.proto.delta]
    assert with_note and all(m.proto.direction == Metric.MetricDirection.NONE
                             for m in with_note), [(m.proto.delta, m.proto.direction)
                                                  for m in with_note]


def test_the_adjusted_p_values_are_headed_by_the_results_method(ssqa):
    """Issue 37: no "p (BH)" by hand; the header and the caption name the Result's
    adjustment."""
    from analysis import api as bw
    from ui.disparity import column_config, permutation_caption

    assert column_config({"adjust": "holm"})["p_adjusted"]["label"] == "p (Holm)"
    frame, design = ssqa
    result = bw.disparity(frame, design, feature="sentiment", by=["gender"], n_resamples=99)
    assert result.settings["adjust"] == "bh"
    assert column_config(result.settings)["p_adjusted"]["label"] == "p (BH)"
    assert "Adjusted: Benjamini-Hochberg over the groups" in permutation_caption(result)
    assert "smallest possible p is 0.0100" in permutation_caption(result)
    holm = bw.disparity(frame, design, feature="sentiment", by=["gender"], n_resamples=99,
                        adjust="holm")
    assert holm.settings["adjust"] == "holm"
    assert column_config(holm.settings)["p_adjusted"]["label"] == "p (Holm)"
    assert "Adjusted: Holm over the groups" in permutation_caption(holm)


def test_the_adjust_widget_changes_the_permutation_header(ssqa):
    """The declared ``adjust`` appears under "Other options" and heads the table."""
    import json

    frame, design = ssqa
    at = page_test("disparity.py", frame=frame, design=design)
    at.run()
    at.selectbox(key="disparity_option_adjust").set_value("bonferroni").run()
    assert not at.exception and not at.error
    perm = next(d for d in at.dataframe if "n_permutations" in d.value.columns)
    labels = {k: v.get("label") for k, v in json.loads(perm.proto.columns or "{}").items()}
    assert labels["p_adjusted"] == "p (Bonferroni)"
    p = perm.value["p_value"]
    np.testing.assert_allclose(perm.value["p_adjusted"], np.minimum(p * p.notna().sum(), 1))
