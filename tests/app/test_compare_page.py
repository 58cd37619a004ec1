"""Compare page under AppTest on the bundled BBQ sample: the three input formats paired by
example_id, the discordant counts and McNemar = statsmodels, subgroups with intervals,
Copy as CLI, Add to report, a specific message for a factor with one value, and the
paired deltas of BBQ's own scores on request."""

from __future__ import annotations

import pytest
from statsmodels.stats.contingency_tables import mcnemar

from tests.app.apptools import page_test, plotly_specs, sample_with_design, shown


@pytest.fixture(scope="module")
def bbq():
    return sample_with_design("bbq_unifiedqa.csv.gz")


@pytest.fixture(scope="module")
def page(bbq):
    at = page_test("compare.py", frame=bbq[0], design=bbq[1], name="bbq_unifiedqa.csv.gz")
    at.run()
    if bbq[1].cluster:  # McNemar (= statsmodels) assumes independent pairs
        at.checkbox(key="compare_cluster").uncheck().run()
    assert not at.exception and not at.error
    return at


def test_answers_for_each_pair_of_formats(page):
    assert page.title[0].value == "Compare"
    assert page.selectbox(key="compare_by").value == "input_format"
    text = "\n".join(shown(m.value) for m in page.markdown)
    overall = page.dataframe[0].value
    assert len(overall) == 3  # arc/qonly, arc/race, qonly/race
    for r in overall.to_dict(orient="records"):
        table = [[r["both_deviate"], r["only_a"]], [r["only_b"], r["neither_deviates"]]]
        assert r["p_value"] == pytest.approx(mcnemar(table, exact=False).pvalue)
        assert (f"{r['model_a']} -> {r['model_b']}, {r['n_pairs']:,} paired prompts: "
                f"{r['only_a']:,} went from biased to not biased and {r['only_b']:,} from "
                "not biased to biased") in text
        assert "McNemar's chi-square test significant (Holm adjusted p = " in text
    assert "paired on the id column 'example_id'" in " ".join(c.value for c in page.caption)


def test_subgroups_with_intervals_and_figures(page):
    assert page.multiselect(key="compare_factors").value  # default prompt factors chosen
    table = page.dataframe[-1].value
    assert {"difference", "ci_low", "ci_high", "p_adjusted", "ld_difference",
            "verdicts_differ"} <= set(table.columns)
    assert (table["ci_low"] <= table["difference"]).all()
    assert (table["difference"] <= table["ci_high"]).all()
    kinds = [s["data"][0]["type"] for s in plotly_specs(page)]
    assert kinds[0] == "scatter" and "sunburst" in kinds
    text = "\n".join(shown(m.value) for m in page.markdown)
    assert "subgroups differ (BH-adjusted p < 0.05)" in text


def test_copy_as_cli_and_report(page):
    codes = [c.value for c in page.code]
    assert any(c.startswith("python -m analysis compare sample_data/bbq_unifiedqa.csv.gz "
                            "--design sample_data/bbq_unifiedqa.design.yaml --by input_format")
               for c in codes)
    assert any("result = bw.compare(" in c and "'sample_data/bbq_unifiedqa.csv.gz'" in c
               and "by='input_format'" in c for c in codes)  # the API's one composition
    page.button(key="report_add_compare").click().run()
    item = page.session_state["report_sections"][-1]
    assert item["section"] == "compare" and item["settings"]["by"] == "input_format"


def test_factor_with_one_value_says_so(bbq):
    frame, design = bbq
    at = page_test("compare.py", frame=frame, design=design)
    at.run()
    at.multiselect(key="compare_where_input_format").set_value(["race"]).run()
    assert not at.exception
    assert any("has a single value in these rows (race)" in e.value for e in at.error)


def test_copied_command_prints_the_page_numbers(page, monkeypatch, capsys):
    import json
    import shlex

    from analysis.cli import main
    from tests.app.apptools import ROOT

    cli = next(c.value for c in page.code if c.value.startswith("python -m analysis compare"))
    monkeypatch.chdir(ROOT)
    assert main(shlex.split(cli)[3:]) == 0
    printed = json.loads(capsys.readouterr().out)
    overall = page.dataframe[0].value
    assert [r["only_a"] for r in printed["overall"]] == overall["only_a"].tolist()
    assert [r["p_adjusted"] for r in printed["overall"]] == pytest.approx(
        overall["p_adjusted"].tolist())
    table = page.dataframe[-1].value
    first_pair = printed["subgroups"][:len(table)]
    assert [r["ci_low"] for r in first_pair] == pytest.approx(table["ci_low"].tolist())
    code = next(c.value for c in page.code if c.value.startswith("from analysis import"))
    scope: dict = {}
    exec(compile(code, "snippet", "exec"), scope)  # the Python snippet: the same numbers
    result = scope["result"]  # bw.compare's Result
    assert result.table["only_b"].tolist() == overall["only_b"].tolist()
    assert result.tables["subgroups"]["ci_low"][:len(table)].tolist() == pytest.approx(
        table["ci_low"].tolist())
    capsys.readouterr()


def test_native_score_deltas_on_request(page, bbq):
    from analysis.native_scores import native_deltas

    before = len(page.dataframe)
    page.button(key="compare_native_run").click().run()
    assert not page.exception and not page.error
    assert "compare_native" in page.session_state
    assert len(page.dataframe) == before + 1
    (shown,) = [d.value for d in page.dataframe if "estimate_a" in d.value.columns]
    api = native_deltas(bbq[0], bbq[1], by="input_format").table
    row = shown[(shown["model_a"] == "arc") & (shown["model_b"] == "race")
                & (shown["score"] == "s_AMB") & (shown["scope"] == "overall")].iloc[0]
    want = api[(api["model_a"] == "arc") & (api["model_b"] == "race")
               & (api["score"] == "s_AMB") & (api["scope"] == "overall")].iloc[0]
    assert row["delta"] == pytest.approx(want["delta"])
    assert row["ci_low"] == pytest.approx(want["ci_low"])


def test_a_results_table_with_a_row_id_pairs_from_the_page_alone():
    """Issue 42: the inferred unit is the row id (nothing pairs); the error names the unit
    that would pair, its button sets 'Pair on', and the page compares the three models."""
    from tests.analysis.test_prompt_unit import PROMPT, _results
    from ui.data import suggest_design

    frame = _results(drop=119 / 864)
    at = page_test("compare.py", frame=frame, design=suggest_design(frame), name="mine.csv")
    at.run()
    at.selectbox(key="compare_by").set_value("model").run()
    assert not at.exception
    if not at.error:  # the inferred design may already pair: then undo to the row id
        at.multiselect(key="compare_unit").set_value(["item_id"]).run()
    message = at.error[0].value
    assert "the rows pair on template x race x gender x style x sample: use it" in message
    at.button(key="compare_use_unit").click().run()
    assert not at.exception and not at.error
    assert at.multiselect(key="compare_unit").value == PROMPT
    overall = at.dataframe[0].value
    assert len(overall) == 3 and overall["n_pairs"].min() > 200
    assert "Paired on template, race, gender, style, sample." in " ".join(
        c.value for c in at.caption)
    codes = " ".join(c.value for c in at.code)
    assert "--unit template,race,gender,style,sample" in codes or "unit=['template'" in codes


def test_a_one_model_table_says_one_model_only():
    """Issue 42: an lm-eval run of one model said 'context_condition takes several values
    within one prompt unit'; the page now says first that there is one model only."""
    from analysis.importers import import_results
    from tests.analysis.importers.harness_runs import LM_EVAL_FIXTURE

    result = import_results("lm-eval", [LM_EVAL_FIXTURE])
    model = result.frame["model"].iloc[0] if "model" in result.frame else None
    at = page_test("compare.py", frame=result.frame, design=result.design, name="lm-eval")
    at.run()
    assert not at.exception
    assert at.info and at.info[0].value.startswith(f"One model only (model = {model})")
