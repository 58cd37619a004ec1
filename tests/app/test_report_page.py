"""Report page under AppTest: sections added on two pages, built, HTML with both."""

from __future__ import annotations

import copy

import pytest
from streamlit.testing.v1 import AppTest

from analysis.cells import cell_table
from analysis.columns import COVERAGE_PERCENTAGE, LOG_DISPARITY
from analysis.coverage import coverage_summary, percent_text
from analysis.design import apply_design
from analysis.subgroups import subgroups
from tests.app.apptools import ROOT, plotly_specs, sample_with_design

BBQ = "bbq_unifiedqa.csv.gz"


def spec_titles(at) -> set[str]:
    """Titles of the page's plotly charts."""
    return {(s["layout"].get("title") or {}).get("text") for s in plotly_specs(at)}


def test_add_two_sections_build_and_download():
    frame, design = sample_with_design(BBQ)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    at.switch_page("pages/subgroups.py").run()
    assert not at.exception
    at.radio(key="subgroups_level").set_value(1).run()
    at.button(key="report_add_subgroups").click().run()
    at.switch_page("pages/coverage.py").run()
    assert not at.exception
    at.button(key="report_add_coverage").click().run()
    stored = copy.deepcopy(at.session_state["report_sections"])
    assert [s["section"] for s in stored] == ["subgroups", "coverage"]
    assert stored[0]["settings"]["level"] == 1

    at.switch_page("pages/report.py").run()
    assert not at.exception and at.title[0].value == "Report"
    at.button(key="report_down_0").click().run()  # reorder: coverage first
    assert [s["section"] for s in at.session_state["report_sections"]] == [
        "coverage", "subgroups"]
    at.button(key="report_build").click().run()
    assert not at.exception and not at.error
    assert [b.label for b in at.get("download_button")] == ["HTML report"]
    assert {"Prepare Figures and tables (ZIP)", "Prepare PDF"} <= {b.label for b in at.button}
    at.button(key="report_prepare_zip").click().run()  # rendered with a progress bar
    assert {b.label for b in at.get("download_button")} == {"HTML report",
                                                            "Figures and tables (ZIP)"}
    report, html_text = at.session_state["report_built"]
    assert html_text.index("<h2>Coverage</h2>") < html_text.index("<h2>Subgroups</h2>")

    results = apply_design(frame, design)
    cov_factors = stored[1]["settings"]["factors"]
    cov = coverage_summary(cell_table(results, cov_factors, with_outcome=False), design,
                           factors=cov_factors).iloc[0][COVERAGE_PERCENTAGE]
    assert f"<td>{percent_text(cov)} %</td>" in html_text  # rounded as on the page
    sub_factors = stored[0]["settings"]["factors"]
    table = subgroups(cell_table(results, sub_factors), sub_factors, max_level=1)
    ld = table[LOG_DISPARITY].dropna().iloc[0]
    assert f"<td>{ld:.3f}</td>" in html_text
    assert len(table) == len(report.sections[1].tables[0][1])

    at.button(key="report_remove_0").click().run()
    assert [s["section"] for s in at.session_state["report_sections"]] == ["subgroups"]
    assert "report_built" not in at.session_state


def test_empty_report_offers_defaults():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    at.switch_page("pages/report.py").run()
    assert not at.exception
    assert any("No sections yet" in i.value for i in at.info)
    at.button(key="report_add_all").click().run()
    from analysis.report import SECTIONS

    assert [s["section"] for s in at.session_state["report_sections"]] == list(SECTIONS)


@pytest.mark.parametrize("page", ["ecdf.py", "importance.py", "disparity.py", "bias_index.py",
                                  "cohorts.py"])
def test_every_analysis_page_has_the_button(page):
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    from tests.app.apptools import page_test

    at = page_test(page, frame=frame, design=design, name="ssqa_simulated.csv.gz").run()
    section = {"bias_index.py": "index"}.get(page, page.removesuffix(".py"))
    if page == "importance.py":  # the default model is refused on SSQA: fix it first
        at.multiselect(key="importance_factors").set_value(["model", "cot"]).run()
    assert not at.exception
    at.button(key=f"report_add_{section}").click().run()
    item = at.session_state["report_sections"][0]
    assert item["section"] == section and item["settings"]
    import json

    json.dumps(item["settings"])  # plain values only
    # the stored settings rebuild the section the page shows (every key is known)
    from analysis.report import build_section

    sec = build_section(section, apply_design(frame, design), design, item["settings"])
    assert sec.skipped is None and sec.figures and sec.tables
    assert spec_titles(at) & {fig.layout.title.text for _, fig in sec.figures}


def test_ecdf_page_with_intervals_puts_them_into_the_report():
    """The eCDF page's bootstrap settings travel with "Add to report"; the Report page
    shows and edits them, and the built report holds analysis.bootstrap's numbers."""
    import numpy as np

    from analysis.bootstrap import bootstrap_ecdf
    from analysis.columns import BOOT_CI_HIGH, BOOT_CI_LOW
    from tests.app.apptools import page_test

    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("ecdf.py", frame=frame, design=design, name="ssqa").run()
    factors, by = at.multiselect(key="ecdf_factors").value, at.selectbox(key="ecdf_by").value
    at.checkbox(key="ecdf_boot").check()
    at.selectbox(key="ecdf_boot_cluster").select("template")
    at.select_slider(key="ecdf_boot_n").set_value(200).run()
    at.button(key="report_add_ecdf").click().run()
    assert not at.exception
    (item,) = at.session_state["report_sections"]
    assert {k: item["settings"][k] for k in ("ci", "cluster", "n_resamples", "seed",
                                              "confidence")} == {
        "ci": "bootstrap", "cluster": "template", "n_resamples": 200, "seed": 0,
        "confidence": 0.95}

    rep = page_test("report.py", frame=frame, design=design, name="ssqa")
    rep.session_state["report_sections"] = [copy.deepcopy(item)]
    rep.run()
    assert not rep.exception
    sid = item["id"]
    assert rep.selectbox(key=f"report_ci_{sid}").value == "bootstrap"
    assert rep.selectbox(key=f"report_cluster_{sid}").value == "template"
    assert rep.number_input(key=f"report_n_boot_{sid}").value == 200
    rep.number_input(key=f"report_seed_{sid}").set_value(4).run()  # edited on the page
    assert rep.session_state["report_sections"][0]["settings"]["seed"] == 4
    rep.button(key="report_build").click().run()
    assert not rep.exception and not rep.error
    report, html_text = rep.session_state["report_built"]
    got = dict(report.sections[0].tables)["ecdf_bootstrap"]
    want = bootstrap_ecdf(apply_design(frame, design), factors, by=by, cluster="template",
                          n_resamples=200, seed=4)
    np.testing.assert_allclose(got[BOOT_CI_LOW], want[BOOT_CI_LOW], atol=1e-12)
    np.testing.assert_allclose(got[BOOT_CI_HIGH], want[BOOT_CI_HIGH], atol=1e-12)
    assert "200 replicates resampling whole clusters of template, seed 4" in html_text
    assert f"<td>{want[BOOT_CI_HIGH].iloc[0]:.3f}</td>" in html_text


def test_page_without_intervals_adds_ci_none():
    from tests.app.apptools import page_test

    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("subgroups.py", frame=frame, design=design).run()
    at.button(key="report_add_subgroups").click().run()
    settings = at.session_state["report_sections"][0]["settings"]
    assert settings["ci"] == "none" and settings["n_resamples"] == 1000


def test_report_page_messages_show_labels_as_text():
    """An error quoting a factor name from the data (here a Markdown image and a link)
    is escaped on the Report page, as every other message (issue 12 item 4)."""
    from tests.app.apptools import page_test, shown

    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    evil = "![px](http://127.0.0.1:9/x.png)[click](http://127.0.0.1:9/)"
    at = page_test("report.py", frame=frame, design=design)
    at.session_state["report_sections"] = [{"section": "subgroups",
                                            "settings": {"factors": [evil]}}]
    at.run()
    at.button(key="report_build").click().run()
    assert not at.exception and not at.error  # the section is skipped, the report built
    (error,) = [i for i in at.info if "Skipped" in i.value]
    assert evil in shown(error.value)  # the user reads the name as it is
    assert "](" not in error.value.replace("\\](", "")  # every ] escaped: no link, image


def test_importance_page_carries_its_cluster_robust_settings():
    """Factor importance's intervals are the cluster-robust ones when a cluster is set:
    "Add to report" stores the cluster (and GEE choice), the section states them and its
    standard errors equal the page's."""
    from analysis.report import build_section
    from tests.app.apptools import page_test

    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    design = design.with_cluster("template")
    at = page_test("importance.py", frame=frame, design=design).run()
    at.multiselect(key="importance_factors").set_value(["model", "cot"]).run()
    assert not at.exception
    page_terms = next(d.value for d in at.dataframe if "design_effect" in d.value.columns)
    at.button(key="report_add_importance").click().run()
    settings = at.session_state["report_sections"][0]["settings"]
    assert settings["cluster"] == "template" and settings["gee"] is False
    sec = build_section("importance", apply_design(frame, design), design, settings)
    terms = dict(sec.tables)["factor_importance"]
    assert terms["std_err"].tolist() == pytest.approx(page_terms["std_err"].tolist())
    assert any("Standard errors: cluster-robust over 37 values of template" in n
               for n in sec.notes)


def test_continuous_importance_page_adds_its_linear_settings():
    """A continuous outcome: "Add to report" stores the covariates and the mixed-model
    choices, and the section's terms equal the page's linear (mixed) fit."""
    from analysis.importers import import_results
    from analysis.report import build_section
    from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE
    from tests.app.apptools import page_test

    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_discrim_eval_explicit_*")
    imported = import_results("lm-eval", [path])
    at = page_test("importance.py", frame=imported.frame, design=imported.design)
    at.session_state["importance_factors"] = ["race", "gender"]
    at.session_state["importance_mixed"] = True
    at.session_state["importance_random"] = "intercept"
    at.run()
    assert not at.exception and not at.error
    page_terms = at.dataframe[0].value
    at.button(key="report_add_importance").click().run()
    settings = at.session_state["report_sections"][0]["settings"]
    assert settings["covariates"] == ["age"] and settings["mixed"] is True
    assert settings["random_slopes"] is False
    sec = build_section("importance", apply_design(imported.frame, imported.design),
                        imported.design, settings)
    terms = dict(sec.tables)["factor_importance_linear"]
    assert terms["term"].tolist() == page_terms["term"].tolist()
    assert terms["std_err"].tolist() == pytest.approx(page_terms["std_err"].tolist(),
                                                      rel=1e-9)
