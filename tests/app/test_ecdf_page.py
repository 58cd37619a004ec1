"""eCDF page under AppTest on the bundled SSQA simulation: curves, metric, KS, widgets."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from analysis.cells import cell_table
from analysis.columns import DEVIATION_METRIC, DEVIATION_RATE, N_SUBGROUPS, P_VALUE, STATISTIC
from analysis.design import Design, Outcome, apply_design, make_factor
from analysis.figures.style import QUALITATIVE
from tests.app.apptools import ROOT, page_test, plotly_specs

FACTORS = ["model", "cot", "prompt_style", "pachankis_cluster", "gender"]


@pytest.fixture(scope="module")
def ssqa():
    frame = pd.read_csv(ROOT / "sample_data" / "ssqa_simulated.csv.gz")
    design = Design(tuple(make_factor(frame, f) for f in FACTORS), Outcome("deviation"))
    return frame, design


def frames(at):
    return {"summary": at.dataframe[0].value, "ks": at.dataframe[1].value,
            "rates": at.dataframe[2].value}


def test_two_models_curves_metric_and_ks(ssqa):
    frame, design = ssqa
    at = page_test("ecdf.py", frame=frame, design=design).run()
    assert not at.exception and not at.error
    assert at.title[0].value == "eCDF"
    assert at.selectbox(key="ecdf_by").value == "model"
    assert at.multiselect(key="ecdf_factors").value == ["pachankis_cluster", "gender"]
    spec = plotly_specs(at)[0]
    traces = spec["data"]
    assert [t["type"] for t in traces] == ["scatter", "scatter"]
    assert [t["line"]["color"] for t in traces] == QUALITATIVE[:2]
    assert traces[0]["name"].startswith("sim-model-A (DM ")
    assert spec["layout"]["shapes"][0]["x0"] == 0.2  # the cutoff line
    assert "Kolmogorov-Smirnov" in spec["layout"]["title"]["text"]

    # the numbers shown equal a direct computation from the raw rows
    results = apply_design(frame, design)
    raw = results.groupby(["model", "pachankis_cluster", "gender"], observed=True)[
        "deviation"].mean()
    a, b = raw.loc["sim-model-A"].to_numpy(), raw.loc["sim-model-B"].to_numpy()
    shown = frames(at)
    summary = shown["summary"].set_index("model")
    assert summary.loc["sim-model-A", N_SUBGROUPS] == len(a)
    assert summary.loc["sim-model-B", DEVIATION_METRIC] == pytest.approx(b.mean())
    ref = stats.ks_2samp(a, b)
    assert shown["ks"][STATISTIC].iloc[0] == pytest.approx(ref.statistic)
    assert shown["ks"][P_VALUE].iloc[0] == pytest.approx(ref.pvalue)
    # sim-model-B deviates more: its curve lies to the right, a larger metric
    assert summary.loc["sim-model-B", DEVIATION_METRIC] > summary.loc[
        "sim-model-A", DEVIATION_METRIC]


def test_ideal_value_changes_the_metric(ssqa):
    frame, design = ssqa
    at = page_test("ecdf.py", frame=frame, design=design).run()
    at.number_input(key="ecdf_ideal").set_value(0.3).run()
    assert not at.exception and not at.error
    shown = frames(at)
    rates = shown["rates"]
    a = rates.loc[rates["model"] == "sim-model-A", DEVIATION_RATE]
    summary = shown["summary"].set_index("model")
    assert summary.loc["sim-model-A", DEVIATION_METRIC] == pytest.approx((a - 0.3).abs().mean())
    shapes = plotly_specs(at)[0]["layout"]["shapes"]
    assert sorted(s["x0"] for s in shapes) == [0.2, 0.3]


def test_compare_by_another_factor_with_one_model(ssqa):
    frame, design = ssqa
    at = page_test("ecdf.py", frame=frame, design=design).run()
    at.multiselect(key="ecdf_where_model").set_value(["sim-model-B"]).run()
    at.selectbox(key="ecdf_by").set_value("cot").run()
    at.multiselect(key="ecdf_factors").set_value(["prompt_style", "gender"]).run()
    assert not at.exception and not at.error
    traces = plotly_specs(at)[0]["data"]
    assert [t["name"].split(" (")[0] for t in traces] == ["no", "yes"]
    cells = cell_table(apply_design(frame, design), ["cot", "prompt_style", "gender"],
                       where={"model": "sim-model-B"})
    assert frames(at)["summary"][N_SUBGROUPS].tolist() == [
        int((cells["cot"] == v).sum()) for v in ("no", "yes")]


def test_one_curve_says_nothing_to_compare(ssqa):
    frame, design = ssqa
    at = page_test("ecdf.py", frame=frame, design=design).run()
    at.multiselect(key="ecdf_where_model").set_value(["sim-model-A"]).run()
    assert not at.exception and not at.error
    assert len(plotly_specs(at)[0]["data"]) == 1
    assert any("nothing to compare" in i.value for i in at.info)


def test_level_one_pools_the_one_factor_subgroups(ssqa):
    frame, design = ssqa
    at = page_test("ecdf.py", frame=frame, design=design).run()
    at.selectbox(key="ecdf_level_2").set_value(1).run()
    assert not at.exception and not at.error
    a = frame[frame["model"] == "sim-model-A"]
    expected = a["pachankis_cluster"].nunique() + a["gender"].nunique()
    summary = frames(at)["summary"].set_index("model")
    assert summary.loc["sim-model-A", N_SUBGROUPS] == expected
    rates = frames(at)["rates"]
    assert set(rates["level"]) == {1}
    labels = {b.label for b in at.get("download_button")}
    assert {"PNG", "SVG", "PDF", "HTML", "CSV"} <= labels
