"""Subgroups page under AppTest on the bundled SSQA simulation: table, sunburst, widgets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.columns import LOG_DISPARITY, SUBGROUP
from analysis.design import Design, Outcome, make_factor
from analysis.figures.style import DIVERGING
from tests.app.apptools import ROOT, page_test, plotly_specs

FACTORS = ["model", "cot", "prompt_style", "pachankis_cluster", "gender"]


@pytest.fixture(scope="module")
def ssqa():
    frame = pd.read_csv(ROOT / "sample_data" / "ssqa_simulated.csv.gz")
    design = Design(tuple(make_factor(frame, f) for f in FACTORS), Outcome("deviation"))
    return frame, design


def sunburst(at):
    specs = plotly_specs(at)
    assert len(specs) == 1
    trace = specs[0]["data"][0]
    assert trace["type"] == "sunburst"
    return specs[0], trace


def test_page_renders_table_and_sunburst(ssqa):
    at = page_test("subgroups.py", frame=ssqa[0], design=ssqa[1]).run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Subgroups"
    # two models: the models first (issue 42), then the first domain factor
    assert at.multiselect(key="subgroups_factors").value == ["model", "pachankis_cluster"]
    table = at.dataframe[0].value
    assert set(table["level"]) == {1, 2}
    spec, trace = sunburst(at)
    assert trace["marker"]["cmid"] == 0
    assert trace["marker"]["colorscale"] == [list(c) for c in DIVERGING]
    # inner ring = the two models, then 6 pachankis clusters each, sizes = n
    inner = [i for i, p in zip(trace["ids"], trace["parents"], strict=True) if p == ""]
    assert len(inner) == 2
    assert len([i for i in trace["ids"] if "/" in i]) == 2 * 6
    assert "log disparity" in spec["layout"]["title"]["text"]
    labels = [b.label for b in at.get("download_button")]
    assert {"PNG", "SVG", "PDF", "HTML", "CSV"} <= set(labels)


def test_colours_follow_log_disparity(ssqa):
    at = page_test("subgroups.py", frame=ssqa[0], design=ssqa[1]).run()
    at.multiselect(key="subgroups_factors").set_value(["prompt_style", "model"]).run()
    assert not at.exception and not at.error
    _, trace = sunburst(at)
    colour = dict(zip(trace["ids"], trace["marker"]["colors"], strict=True))
    # simulated effects: doubt prompts raise deviation (red side), positive lower it (blue)
    assert colour["prompt_style=doubt"] > 0.5
    assert colour["prompt_style=positive"] < -0.5
    assert colour["prompt_style=doubt/model=sim-model-B"] > colour[
        "prompt_style=doubt/model=sim-model-A"]
    table = at.dataframe[0].value.set_index(SUBGROUP)
    assert colour["prompt_style=doubt"] == pytest.approx(
        table.loc["prompt_style = doubt", LOG_DISPARITY])


def test_level_subset_and_view_filter(ssqa):
    at = page_test("subgroups.py", frame=ssqa[0], design=ssqa[1]).run()
    at.multiselect(key="subgroups_factors").set_value(["cot", "prompt_style", "gender"]).run()
    at.radio(key="subgroups_level").set_value(3).run()
    assert not at.exception and not at.error
    assert set(at.dataframe[0].value["level"]) == {1, 2, 3}
    at.multiselect(key="subgroups_where_model").set_value(["sim-model-A"]).run()
    rows_metric = [m.value for m in at.metric if m.label == "Rows in subset"][0]
    assert rows_metric == "20,720"
    at.multiselect(key="subgroups_show_gender").set_value(["female"]).run()
    shown = at.dataframe[0].value
    assert len(shown) > 0 and set(shown["gender"]) == {"female"}


def test_whole_subset_subgroup_is_flagged(ssqa):
    at = page_test("subgroups.py", frame=ssqa[0], design=ssqa[1]).run()
    at.multiselect(key="subgroups_where_model").set_value(["sim-model-B"]).run()
    at.multiselect(key="subgroups_factors").set_value(["model", "cot"]).run()
    assert not at.exception and not at.error
    assert any("no log disparity" in w.value for w in at.warning)
    table = at.dataframe[0].value.set_index(SUBGROUP)
    assert table.loc["model = sim-model-B", "ld_undefined"]


def test_design_without_outcome_asks_for_one(ssqa):
    frame, design = ssqa
    at = page_test("subgroups.py", frame=frame, design=design.with_outcome(None)).run()
    assert not at.exception
    assert "needs an outcome" in at.info[0].value
    assert not plotly_specs(at)


def test_opens_on_the_bundled_bbq_sample():
    at = page_test("subgroups.py").run()  # no data injected: the app's default sample
    assert not at.exception and not at.error
    _, trace = sunburst(at)
    inner = [i for i, p in zip(trace["ids"], trace["parents"], strict=True) if p == ""]
    assert inner[0].startswith("category=")
    assert len(inner) == 6


def test_bbq_sample_shows_bias_scores_missing_rows_and_test_per_row():
    at = page_test("subgroups.py").run()  # the bundled BBQ sample with its design
    assert not at.exception and not at.error
    assert at.selectbox(key="subgroups_test").value == "auto"
    # 3 rows have no outcome (their prediction matched no option)
    # 111 rows have no outcome: 3 predictions matched no option, 108 rows belong to the 36
    # examples whose labels name no single target (biased_answer left empty, never guessed)
    assert any("111 of 35,868 rows have no outcome" in c.value for c in at.caption)
    table = at.dataframe[0].value
    # the bundled design declares template_id (150 templates): cluster-robust by default
    assert set(table["test"].dropna()) == {"cluster t"}
    assert any("CIs and p-values: cluster-robust over 150 values of template_id" in c.value
               for c in at.caption)
    assert at.toggle(key="subgroups_clustered").value is True
    assert "same_rows_as" in table.columns
    scores = at.dataframe[1].value.set_index(["category", "input_format"])
    assert scores.loc[("Age", "race"), "s_AMB"] == pytest.approx(0.2978, abs=5e-5)
    assert scores.loc[("Age", "race"), "s_DIS"] == pytest.approx(0.0116, abs=5e-5)


def test_factors_named_like_output_columns_are_renamed_with_a_note():
    rows = []
    for s_, l_, n, k in [("s1", "l1", 10, 2), ("s1", "l2", 20, 10), ("s2", "l1", 30, 3),
                         ("s2", "l2", 40, 20)]:
        rows += [{"subgroup": s_, "level": l_, "n": "k1", "biased": int(i < k)}
                 for i in range(n)]
    frame = pd.DataFrame(rows)
    design = Design(tuple(make_factor(frame, f) for f in ["subgroup", "level", "n"]),
                    Outcome("biased"))
    at = page_test("subgroups.py", frame=frame, design=design).run()
    assert not at.exception and not at.error
    assert any("'subgroup' as 'subgroup_factor'" in c.value for c in at.caption)
    table = at.dataframe[0].value.set_index("subgroup")
    assert table.loc["subgroup_factor = s1", "n"] == 30
    assert table.loc["subgroup_factor = s1", "deviations"] == 12
    _, trace = sunburst(at)
    assert len(trace["ids"]) > 0 and trace["ids"][0].startswith("subgroup_factor=")


def test_default_pair_is_never_nested_and_sectors_can_be_equal(ssqa):
    frame = ssqa[0]
    # stigma first: the first two domain factors would be stigma x its cluster (nested)
    names = ["stigma", "pachankis_cluster", "gender", "model"]
    design = Design(tuple(make_factor(frame, f) for f in names), Outcome("deviation"))
    at = page_test("subgroups.py", frame=frame, design=design).run()
    assert not at.exception and not at.error
    assert at.multiselect(key="subgroups_factors").value == ["model", "stigma"]
    without_models = Design(tuple(make_factor(frame, f) for f in names[:3]),
                            Outcome("deviation"))
    other = page_test("subgroups.py", frame=frame, design=without_models).run()
    assert other.multiselect(key="subgroups_factors").value == ["stigma", "gender"]
    at.multiselect(key="subgroups_factors").set_value(["gender", "model"]).run()
    _, by_n = sunburst(at)
    assert by_n["branchvalues"] == "total"
    at.radio(key="subgroups_sizes").set_value("equal").run()
    spec, trace = sunburst(at)
    assert trace["branchvalues"] == "remainder"
    values = dict(zip(trace["ids"], trace["values"], strict=True))
    # 4 genders, each split by 2 models: every leaf 1/8, inner sectors 0 (sum of children)
    leaves = [i for i in trace["ids"] if "/" in i]
    assert len(leaves) == 8 and all(values[i] == pytest.approx(1 / 8) for i in leaves)
    assert all(values[i] == 0 for i in trace["ids"] if "/" not in i)
    assert "equal sectors" in spec["layout"]["title"]["text"]


def test_continuous_outcome_says_the_page_analyses_its_threshold(tmp_path):
    from analysis.importers import import_results
    from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE
    from tests.app.apptools import page_test

    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_discrim_eval_explicit_*")
    imported = import_results("lm-eval", [path])
    at = page_test("subgroups.py", frame=imported.frame, design=imported.design).run()
    assert not at.exception
    assert any("logit_yes is continuous" in i.value and "0/1 deviation (logit_yes" in i.value
               for i in at.info)
    from analysis.continuous import group_means

    (shown,) = [d.value for d in at.dataframe if "difference" in d.value.columns]
    # the design's cluster (decision_question_id, 4 questions): CR2 + Satterthwaite df
    expected = group_means(imported.frame, imported.design, cluster="decision_question_id")
    assert shown["value"].tolist() == expected["value"].tolist()
    np.testing.assert_allclose(shown["difference"], expected["difference"])
    np.testing.assert_allclose(shown["std_err"], expected["std_err"], equal_nan=True)
    assert shown["n_clusters"].tolist() == [4] * len(shown)
    # the subgroups command's JSON holds the same table (run in-process)
    import io
    import json
    from contextlib import redirect_stdout

    from analysis.cli import main

    imported.frame.to_csv(tmp_path / "r.csv", index=False)
    (tmp_path / "d.yaml").write_text(imported.design.to_yaml())
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["subgroups", str(tmp_path / "r.csv"), "--design",
                     str(tmp_path / "d.yaml"), "--level", "1", "--json"]) == 0
    cli = pd.DataFrame(json.loads(out.getvalue())["group_means"])
    assert cli["value"].astype(str).tolist() == shown["value"].astype(str).tolist()
    for column in ("n", "mean", "difference", "std_err", "df", "ci_low", "ci_high", "p_value"):
        np.testing.assert_allclose(cli[column].to_numpy(float), shown[column].to_numpy(float),
                                   rtol=1e-9, equal_nan=True)


def test_a_top_finding_opens_its_responses(ssqa):
    """Issue 29 item 6: colour by rate, the top findings beside the sunburst, one click
    from a finding to its responses (paged, exportable)."""
    from analysis.design import apply_design
    from analysis.findings import rows_behind, subgroup_where

    at = page_test("subgroups.py", frame=ssqa[0], design=ssqa[1]).run()
    at.radio(key="subgroups_colour").set_value("rate").run()
    spec, trace = sunburst(at)
    table = at.dataframe[0].value
    assert trace["marker"]["cmin"] == 0 and "cmid" not in trace["marker"]
    assert "colour = deviation rate" in spec["layout"]["title"]["text"]
    pick = at.radio(key="subgroups_top_pick")
    first = pick.options[0]
    pick.set_value(first).run()
    assert not at.exception
    row = table[table[SUBGROUP].astype(str).str.startswith(first.split(":")[0])].iloc[0]
    fixed = subgroup_where(row, at.multiselect(key="subgroups_factors").value)
    want = rows_behind(apply_design(ssqa[0], ssqa[1]), {}, fixed)
    assert any(f"{len(want):,} responses" in m.value for m in at.markdown)
    shown = at.dataframe[1].value  # the first page of its rows
    assert len(shown) == min(50, len(want))
    assert sum(b.label == "CSV" for b in at.get("download_button")) == 2  # table and rows


def test_a_sunburst_click_names_its_subgroup(ssqa):
    """A sector's ``customdata`` leads back to its row: the click event's point number
    (as st.plotly_chart's on_select reports it) gives the sector's factor values; a point
    of an older figure (another id at that number) gives nothing."""
    from types import SimpleNamespace

    from analysis.cells import cell_table
    from analysis.design import apply_design
    from analysis.figures.subgroups import sunburst_figure
    from analysis.subgroups import subgroups
    from ui.findings import clicked_sector

    factors = ["model", "cot"]
    full = subgroups(cell_table(apply_design(ssqa[0], ssqa[1]), factors), factors,
                     max_level=2)
    fig = sunburst_figure(full, factors)
    ids = list(fig.data[0].ids)

    def click(number, sector_id):
        point = {"point_number": number, "id": sector_id}
        return SimpleNamespace(selection=SimpleNamespace(points=[point]))

    for number, sector_id in enumerate(ids):  # "model=a/cot=yes" -> {model: [a], cot: [yes]}
        want = {k: [v] for k, v in (part.split("=") for part in sector_id.split("/"))}
        assert clicked_sector(click(number, sector_id), fig, full, factors) == want
    assert len(ids) == full[factors[0]].notna().sum() > 2
    assert clicked_sector(click(0, ids[1]), fig, full, factors) is None
    assert clicked_sector(SimpleNamespace(selection=SimpleNamespace(points=[])), fig, full,
                          factors) is None


def test_a_factor_beyond_the_level_is_said_to_have_no_ring(ssqa):
    """Issue 42: adding a third factor left the sunburst at level 2 without a word."""
    at = page_test("subgroups.py", frame=ssqa[0], design=ssqa[1]).run()
    at.multiselect(key="subgroups_factors").set_value(["cot", "prompt_style", "gender"]).run()
    assert at.radio(key="subgroups_level").value == 2
    _, trace = sunburst(at)
    assert max(i.count("/") for i in trace["ids"]) == 1  # two rings: cot, prompt_style
    notes = [c.value for c in at.caption if "ring(s)" in c.value]
    assert notes == ["The sunburst has 2 ring(s): the subgroups fix at most 2 of the 3 "
                     "factors (Level); gender has no ring of its own. Choose level 3 to see "
                     "it."]
    at.radio(key="subgroups_level").set_value(3).run()
    _, trace = sunburst(at)
    assert max(i.count("/") for i in trace["ids"]) == 2
    assert not [c.value for c in at.caption if "ring(s)" in c.value]


def test_a_table_of_three_models_opens_on_the_models():
    """Issue 42: a 3-model table opened on race x gender without the model, and with the
    default thresholds said "No subgroup passes these thresholds" (the rates differ by
    model only: 0.15, 0.30, 0.46)."""
    from analysis.design import suggest_design
    from tests.analysis.results_tables import results_table

    t = results_table()
    at = page_test("subgroups.py", frame=t, design=suggest_design(t)).run()
    assert not at.exception and not at.error
    factors = at.multiselect(key="subgroups_factors").value
    assert factors[0] == "model" and len(factors) == 2
    texts = [m.value for m in [*at.info, *at.warning, *at.caption, *at.markdown]]
    assert not any("No subgroup passes these thresholds" in x for x in texts)
