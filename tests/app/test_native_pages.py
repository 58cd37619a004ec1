"""The benchmark's own scores on the analysis pages (``ui/native.py``, issue 40 item 1,
issue 42 item 6): the Subgroups, Factor importance and Coverage pages of the bundled BBQ
sample and of an lm-eval run show ``bw.native_scores``' numbers (lm-eval's point
estimates, cluster intervals) on request, with a CSV and "Add to report"; a table without
a native score shows no section."""

from __future__ import annotations

import glob
import json

import numpy as np
import pandas as pd
import pytest

from analysis import api as bw
from tests.app.apptools import page_test, sample_with_design

SHOWN = ["score", "scope", "group", "estimate", "ci_low", "ci_high", "n", "n_clusters"]


@pytest.fixture(scope="module")
def bbq():
    return sample_with_design("bbq_unifiedqa.csv.gz")


@pytest.fixture(scope="module")
def lm_eval():
    from analysis.importers import import_results
    from tests.analysis.importers.harness_runs import LM_EVAL_FIXTURE

    result = import_results("lm-eval", [LM_EVAL_FIXTURE])
    (path,) = glob.glob(str(LM_EVAL_FIXTURE / "dummy-bbq" / "results_*.json"))
    with open(path, encoding="utf-8") as fh:
        return result.frame, result.design, json.load(fh)["results"]


def _scores_table(at) -> pd.DataFrame:
    (table,) = [d.value for d in at.dataframe if {"estimate", "n_clusters"} <= set(d.value)]
    return table


def _opened(page: str, frame, design):
    at = page_test(page, frame=frame, design=design, name="native")
    at.run()
    assert not at.exception and not at.error
    name = page.removesuffix(".py")
    assert any("benchmark's own scores" in e.label for e in at.expander)
    before = len(at.dataframe)
    at.button(key=f"{name}_native_run").click().run()
    assert not at.exception and not at.error
    assert len(at.dataframe) == before + 1
    return at


def _same_rows(shown: pd.DataFrame, api: pd.DataFrame, settings: list[str]) -> None:
    keys = [*settings, "score", "scope", "group"]
    merged = shown.merge(api, on=keys, suffixes=("", "_api"), validate="one_to_one")
    assert len(merged) == len(shown)
    for col in ("estimate", "ci_low", "ci_high", "n", "n_clusters"):
        np.testing.assert_allclose(merged[col].astype(float), merged[f"{col}_api"].astype(float),
                                   rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("page", ["subgroups.py", "importance.py"])
def test_bbq_sample_pages_show_the_apis_scores_with_intervals(bbq, page):
    from analysis.bbq_scores import bias_scores

    frame, design = bbq
    at = _opened(page, frame, design)
    shown = _scores_table(at)
    assert list(shown.columns) == ["input_format", *SHOWN]
    # overall and per category by default; the subcategories are in the CSV / a choice
    assert set(shown["scope"]) == {"overall", "category"}
    assert set(shown["group"][shown["scope"] == "category"]) == set(frame["category"])
    api = bw.native_scores(frame, design).table
    _same_rows(shown, api, ["input_format"])
    # the point estimates are BBQ's own formula (analysis.bbq_scores, = lm-eval's)
    own = bias_scores(frame, by=["input_format", "category"]).set_index(
        ["input_format", "category"])
    cat = shown[(shown["scope"] == "category") & (shown["score"] == "s_AMB")]
    for r in cat.to_dict(orient="records"):
        assert r["estimate"] == pytest.approx(own.loc[(r["input_format"], r["group"]), "s_AMB"],
                                              abs=1e-12)
    # 25 templates per category, 150 overall; the method is said
    assert set(cat["n_clusters"]) == {25}
    assert any("expanded percentile cluster bootstrap" in c.value
               and "template_id" in c.value for c in at.caption)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "CSV" in labels


def test_add_to_report_stores_the_native_section_of_the_subset(bbq):
    from analysis import report as R
    from analysis.design import apply_design

    frame, design = bbq
    at = page_test("subgroups.py", frame=frame, design=design, name="native")
    at.run()
    at.multiselect(key="subgroups_where_input_format").set_value(["race"]).run()
    at.button(key="subgroups_native_run").click().run()
    assert not at.exception and not at.error
    shown = _scores_table(at)
    assert set(shown["input_format"]) == {"race"}
    race = frame[frame["input_format"] == "race"]
    _same_rows(shown, bw.native_scores(race, design).table, ["input_format"])
    at.button(key="report_add_native").click().run()
    assert not at.exception
    (item,) = [s for s in at.session_state["report_sections"] if s["section"] == "native"]
    assert item["settings"]["where"] == {"input_format": ["race"]}
    assert item["settings"]["by"] is None  # one input format left: no paired deltas
    # the report builds that section on the same rows: the page's numbers, its intervals
    rep = R.build_report(apply_design(frame, design),
                         design, [("native", {**item["settings"], "n_resamples": 200})])
    (sec,) = rep.sections
    assert sec.skipped is None
    table = dict(sec.tables)["native_scores"]
    assert set(table["input_format"]) == {"race"}
    same = bw.native_scores(race, design, n_resamples=200).table
    np.testing.assert_allclose(table["estimate"], same["estimate"], equal_nan=True)
    np.testing.assert_allclose(table["ci_low"], same["ci_low"], equal_nan=True)


@pytest.mark.parametrize("page", ["coverage.py", "subgroups.py"])
def test_lm_eval_run_shows_lm_evals_own_numbers(lm_eval, page):
    frame, design, own = lm_eval
    at = _opened(page, frame, design)
    shown = _scores_table(at)
    settings = ["model", "task", "filter"]
    _same_rows(shown, bw.native_scores(frame, design).table, settings)
    top = shown[shown["scope"] == "overall"].set_index(["task", "filter", "score"])["estimate"]
    # the numbers lm-eval wrote into its results_*.json
    assert top[("bbq_religion_mc", "none", "acc")] == own["bbq_religion_mc"]["acc,none"]
    assert top[("bbq_religion_mc", "none", "acc_norm")] == own["bbq_religion_mc"]["acc_norm,none"]
    for flt in ("strict-match", "flexible-extract"):
        assert top[("bbq_religion_gen", flt, "exact_match")] == \
            own["bbq_religion_gen"][f"exact_match,{flt}"]
    assert set(shown["n_clusters"][shown["scope"] == "overall"]) == {8}


def test_a_table_without_a_native_score_shows_no_section():
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    for page in ("subgroups.py", "importance.py", "coverage.py"):
        at = page_test(page, frame=frame, design=design, name="ssqa")
        at.run()
        assert not at.exception
        name = page.removesuffix(".py")
        assert not [b for b in at.button if b.key == f"{name}_native_run"]
        assert not any("benchmark's own scores" in e.label for e in at.expander)



def _section_script() -> None:  # run by AppTest.from_function: the helper alone
    import streamlit as st

    from ui.native import native_scores_view

    native_scores_view(st.session_state["results_frame"], st.session_state["design"],
                       st.session_state["where"], page="probe")


def test_a_subset_without_rows_says_so_in_the_section(bbq):
    """A subset no row matches (Age x BodyArt; the pages stop before it, the helper does not
    rely on that): the API's message in the section, no table, nothing crashes."""
    from streamlit.testing.v1 import AppTest

    from ui.common import token_of

    frame, design = bbq
    at = AppTest.from_function(_section_script, default_timeout=60)
    at.session_state["results_frame"] = frame
    at.session_state["results_token"] = token_of(frame)
    at.session_state["design"] = design
    at.session_state["where"] = {"category": ["Age"], "subcategory": ["BodyArt"]}
    at.run()
    at.button(key="probe_native_run").click().run()
    assert not at.exception
    assert any("No row matches all the filters together" in e.value for e in at.error)
    assert not at.dataframe


def test_lm_eval_bias_tasks_on_the_page_equal_lm_evals_results():
    """One lm-eval run of BBQ, CrowS-Pairs, DiscrimEval, Winogender ...: the page's overall
    rows are lm-eval's own numbers (``results_*.json``), each with its cluster interval."""
    from analysis.importers import import_results
    from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

    result = import_results("lm-eval", [LM_EVAL_BIAS_FIXTURE])
    (path,) = glob.glob(str(LM_EVAL_BIAS_FIXTURE / "dummy-bias" / "results_*.json"))
    with open(path, encoding="utf-8") as fh:
        own = json.load(fh)["results"]
    at = _opened("coverage.py", result.frame, result.design)
    shown = _scores_table(at)
    _same_rows(shown, bw.native_scores(result.frame, result.design).table,
               [c for c in ("model", "task", "filter") if c in shown.columns])
    top = shown[shown["scope"] == "overall"].set_index(["task", "score"])["estimate"]
    assert top[("bbq", "s_DIS")] == pytest.approx(own["bbq"]["disamb_bias_score,none"], abs=1e-12)
    assert top[("bbq", "s_AMB")] == pytest.approx(own["bbq"]["amb_bias_score,none"], abs=1e-12)
    assert top[("crows_pairs_english", "pct_stereotype")] == pytest.approx(
        own["crows_pairs_english"]["pct_stereotype,none"], abs=1e-12)
    assert top[("winogender_all", "acc")] == pytest.approx(own["winogender_all"]["acc,none"],
                                                           abs=1e-12)
    assert top[("discrim_eval_explicit", "black_bias")] == pytest.approx(
        own["discrim_eval_explicit"]["black_bias,none"], rel=1e-6)
    overall = shown[shown["scope"] == "overall"]
    assert (overall["ci_low"] <= overall["estimate"] + 1e-12).all()
    assert (overall["estimate"] <= overall["ci_high"] + 1e-12).all()


def test_the_scores_copy_as_cli_and_python_give_the_pages_numbers(bbq, capsys):
    """"Copy as CLI / Python" of the scores expander (``NativeOptions`` through
    ``analysis.reproduce.api_view``): ``native-scores ... --where`` and
    ``bw.native_scores(..., where=)`` give the numbers the page shows."""
    import shlex

    from analysis.cli import main

    frame, design = bbq
    at = page_test("subgroups.py", frame=frame, design=design, name="bbq_unifiedqa.csv.gz")
    at.run()
    at.multiselect(key="subgroups_where_input_format").set_value(["race"]).run()
    at.button(key="subgroups_native_run").click().run()
    assert not at.exception and not at.error
    shown = _scores_table(at)
    (cli,) = [c.value for c in at.code if c.value.startswith("# the benchmark's own scores")
              and c.language == "bash"]
    (code,) = [c.value for c in at.code if c.value.startswith("# the benchmark's own scores")
               and c.language == "python"]
    command = cli.splitlines()[1]
    assert "native-scores" in command and "--where input_format=race" in command
    capsys.readouterr()
    assert main(shlex.split(command)[3:]) == 0
    _same_rows(shown, pd.DataFrame(json.loads(capsys.readouterr().out)["scores"]),
               ["input_format"])
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102
    _same_rows(shown, namespace["result"].table, ["input_format"])
