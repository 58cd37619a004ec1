"""Options a page does not lay out get widgets from the analysis's options object
(``ui.options.other_options``, session-state keys ``<page>_option_<name>``): their values
reach the computation (numbers equal to the module functions'), the copy text and the
report settings; an option added to an options class appears on its page with no page
edit (``docs/architecture.md``, "Add an option")."""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pandas as pd
import pytest

from analysis.cells import cell_table
from analysis.options import option
from analysis.options.types import POSITIVE_INT
from tests.app.apptools import metric_values, page_test, sample_with_design

SSQA = "ssqa_simulated.csv.gz"
BBQ = "bbq_unifiedqa.csv.gz"
JUDGED = "judged_simulated.csv.gz"  # SIMULATED: a judge facet (the measurement-error sections)


@pytest.fixture(scope="module")
def ssqa():
    return sample_with_design(SSQA)


@pytest.fixture(scope="module")
def bbq():
    return sample_with_design(BBQ)


def _changed(page: str, data, key: str, default, value, name: str = "test data"):
    """The page with its number input ``key`` at ``default``, then set to ``value``."""
    at = page_test(page, frame=data[0], design=data[1], name=name).run()
    assert at.number_input(key=key).value == default
    at.number_input(key=key).set_value(value).run()
    assert not at.exception and not at.error
    return at


def _copy_text(at) -> str:
    return "\n".join(str(c.value) for c in at.code)


def test_subgroups_confidence_reaches_the_table_copy_text_and_report(ssqa):
    from analysis.subgroups import subgroups

    frame, design = ssqa
    at = page_test("subgroups.py", frame=frame, design=design, name=SSQA).run()
    assert at.number_input(key="subgroups_option_confidence").value == 0.95
    assert at.number_input(key="subgroups_option_min_expected").value == 5.0
    assert at.selectbox(key="subgroups_option_small_sample").value == "cr2"
    at.number_input(key="subgroups_option_confidence").set_value(0.8).run()
    assert not at.exception and not at.error
    factors = at.multiselect(key="subgroups_factors").value
    cluster = design.cluster if design.cluster in frame.columns else None
    cells = cell_table(frame, list(dict.fromkeys([*factors, *([cluster] if cluster else [])])))
    want = subgroups(cells, factors, max_level=2, confidence=0.8, cluster=cluster)
    default = subgroups(cells, factors, max_level=2, cluster=cluster)
    got = at.dataframe[0].value.set_index("subgroup")["ci_low"]
    want, default = (t.set_index("subgroup").loc[got.index, "ci_low"].to_numpy(float)
                     for t in (want, default))
    np.testing.assert_allclose(got.to_numpy(float), want, rtol=1e-9)
    assert not np.allclose(default, want, equal_nan=True)
    assert "--confidence 0.8" in _copy_text(at) and "confidence=0.8" in _copy_text(at)
    at.button(key="report_add_subgroups").click().run()
    (section,) = at.session_state["report_sections"]
    assert section["settings"]["confidence"] == 0.8


def _tied_rates():
    """Two models, 20 topics, 3 rows per cell: subgroup rates in thirds, many tied."""
    from analysis.design import Design, Outcome, make_factor

    rng = np.random.default_rng(3)
    rows = [{"model": m, "topic": f"t{t}", "deviation": int(rng.random() < p)}
            for m, p in (("A", 0.3), ("B", 0.6)) for t in range(20) for _ in range(3)]
    frame = pd.DataFrame(rows)
    return frame, Design(tuple(make_factor(frame, f) for f in ("model", "topic")),
                         Outcome("deviation"))


def test_ecdf_ks_permutations_and_seed():
    from analysis.ecdf import ks_tests, subgroup_rates

    frame, design = _tied_rates()
    at = page_test("ecdf.py", frame=frame, design=design).run()
    assert at.number_input(key="ecdf_option_ks_resamples").value == 9999
    assert at.number_input(key="ecdf_option_seed").value == 0
    at.number_input(key="ecdf_option_ks_resamples").set_value(199).run()
    at.number_input(key="ecdf_option_seed").set_value(7).run()
    assert not at.exception and not at.error
    by, factors = at.selectbox(key="ecdf_by").value, at.multiselect(key="ecdf_factors").value
    rates = subgroup_rates(cell_table(frame, [by, *factors]), factors, by=by,
                           level=len(factors))
    want = ks_tests(rates, by=by, n_resamples=199, seed=7)
    got = at.dataframe[1].value
    np.testing.assert_allclose(got["p_value"].to_numpy(float), want["p_value"].to_numpy(float))
    assert (want["method"] != "exact").all()  # tied rates: the option matters
    # here the sequential test decides by its tail bound (no split drawn), so the option
    # shows with every split drawn
    assert not np.allclose(ks_tests(rates, by=by, adaptive=False)["p_value"],
                           ks_tests(rates, by=by, n_resamples=199, seed=7,
                                    adaptive=False)["p_value"])
    assert "--resamples 199" in _copy_text(at) and "seed=7" in _copy_text(at) \
        and "ks_resamples=199" in _copy_text(at)
    at.button(key="report_add_ecdf").click().run()
    (section,) = at.session_state["report_sections"]
    assert (section["settings"]["ks_resamples"], section["settings"]["seed"]) == (199, 7)


def test_coverage_limit_lists_the_thinnest_cells(ssqa):
    from analysis.coverage import coverage_cells, thinnest_cells

    frame, design = ssqa
    at = _changed("coverage.py", ssqa, "coverage_option_limit", 20, 3, SSQA)
    factors = at.multiselect(key="coverage_factors").value
    want = thinnest_cells(coverage_cells(frame, design, factors), design, factors=factors,
                          limit=3)
    (got,) = [d.value for d in at.dataframe if len(d.value) == 3]
    pd.testing.assert_frame_equal(got.reset_index(drop=True).astype(str),
                                  want.reset_index(drop=True).astype(str))
    assert "--limit 3" in _copy_text(at) and "limit=3" in _copy_text(at)


def test_compare_confidence_reaches_the_comparison(bbq):
    from analysis.compare import compare
    from analysis.design import apply_design

    frame, design = bbq
    at = _changed("compare.py", bbq, "compare_option_confidence", 0.95, 0.9, BBQ)
    assert at.selectbox(key="compare_option_test").value == "auto"
    by = at.selectbox(key="compare_by").value
    want = compare(apply_design(frame, design), design, by, confidence=0.9, factors=[],
                   max_level=None)
    got = at.dataframe[0].value
    cols = [c for c in want.overall.columns if c.startswith("ci_")]
    assert cols
    np.testing.assert_allclose(got[cols].to_numpy(float), want.overall[cols].to_numpy(float),
                               rtol=1e-9)
    assert "--confidence 0.9" in _copy_text(at)


def test_cohorts_monte_carlo_resamples(bbq):
    from analysis import distribution as dist_mod

    frame, design = bbq
    at = page_test("cohorts.py", frame=frame, design=design, name=BBQ).run()
    assert at.number_input(key="cohorts_option_n_resamples").value == 9999
    at.selectbox(key="cohorts_method").set_value("monte_carlo").run()
    at.number_input(key="cohorts_option_n_resamples").set_value(99).run()
    assert not at.exception and not at.error
    category, cohort = at.selectbox(key="cohorts_category").value, \
        at.selectbox(key="cohorts_cohort").value
    by = at.multiselect(key="cohorts_by").value
    categories = at.multiselect(key=f"cohorts_keep_{category}").value
    dist = dist_mod.category_distribution(frame, category, cohort, by=by,
                                          categories=categories)
    want = dist_mod.homogeneity_test(dist, category, cohort, by=by, method="monte_carlo",
                                     n_resamples=99, seed=0)
    p = want["p_value"].to_numpy(float)
    assert np.all(np.isclose(p * 100, np.round(p * 100)))  # (k + 1) / (99 + 1)
    shown = [d.value for d in at.dataframe if "p_value" in d.value.columns]
    assert any(np.allclose(t["p_value"].to_numpy(float), p) for t in shown
               if len(t) == len(p))
    assert "--resamples 99" in _copy_text(at)


def test_bias_index_ideal(ssqa):
    from analysis.index import Dimension, bias_index

    frame, design = ssqa
    at = _changed("bias_index.py", ssqa, "index_option_ideal", 0.0, 0.25, SSQA)
    dims = [Dimension(f, "deviation_metric", 1.0)
            for f in at.multiselect(key="index_dimensions").value]
    want = bias_index(frame, design, dimensions=dims, model=at.selectbox(
        key="index_model").value, ideal=0.25)
    default = bias_index(frame, design, dimensions=dims, model=at.selectbox(
        key="index_model").value)
    got = at.dataframe[0].value.set_index("model")["llmbi"]
    w = want.totals.set_index("model")["llmbi"]
    np.testing.assert_allclose(got.loc[w.index].to_numpy(float), w.to_numpy(float))
    assert not np.allclose(default.totals.set_index("model")["llmbi"].loc[w.index], w)
    assert "--ideal 0.25" in _copy_text(at)
    at.button(key="report_add_index").click().run()
    (section,) = at.session_state["report_sections"]
    assert section["settings"]["ideal"] == 0.25


def test_power_calculator_alpha():
    from analysis.planning import sample_size

    at = page_test("planner.py").run()
    assert at.number_input(key="planner_power_option_alpha").value == 0.05
    at.number_input(key="planner_power_option_alpha").set_value(0.01).run()
    assert not at.exception and not at.error
    want = sample_size(rate=0.3, ld=0.4, share=0.1, power=0.8, alpha=0.01)
    assert metric_values(at)["Rows needed"] == f"{want['n_total']:,}"
    assert want["n_total"] > sample_size(rate=0.3, ld=0.4, share=0.1, power=0.8)["n_total"]


def _continuous():
    from analysis.importers import import_results
    from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_discrim_eval_explicit_*")
    imported = import_results("lm-eval", [path])
    return imported.frame, imported.design, {"importance_factors": ["race", "gender"]}


def _features():
    from analysis.design import Design, Factor

    frame = pd.DataFrame({"group": ["a", "b", "a"],
                          "response": ["I love it.", "This is awful.", None]})
    return frame, Design(factors=(Factor("group", "domain", ("a", "b"), "a"),)), {}


def _sample(name):
    return lambda: (*sample_with_design(name), {})


#: page, options module, class name, modules holding the class under another name, the
#: key prefix of the page's other options, the data (frame, design, session state).
PAGES = [
    ("subgroups.py", "subgroups", "SubgroupsOptions", ["pages"], "subgroups_option",
     _sample(SSQA)),
    ("ecdf.py", "ecdf", "EcdfOptions", ["pages"], "ecdf_option", _sample(SSQA)),
    ("coverage.py", "coverage", "CoverageOptions", ["ui.coverage", "pages"],
     "coverage_option", _sample(SSQA)),
    ("compare.py", "compare", "CompareOptions", ["ui.compare"], "compare_option",
     _sample(BBQ)),
    ("counterfactual.py", "counterfactual", "CounterfactualOptions", ["ui.counterfactual"],
     "counterfactual_option", _sample(SSQA)),
    ("cohorts.py", "cohorts", "CohortsOptions", ["ui.cohorts", "pages"], "cohorts_option",
     _sample(BBQ)),
    ("disparity.py", "disparity", "DisparityOptions", ["ui.disparity"], "disparity_option",
     _sample(SSQA)),
    ("bias_index.py", "index", "IndexOptions", ["ui.disparity_index"], "index_option",
     _sample(SSQA)),
    ("planner.py", "planning", "PowerOptions", ["ui.planner", "ui.power"],
     "planner_power_option", _sample(SSQA)),
    ("planner.py", "planning", "PlanOptions", ["pages"], "planner_option", _sample(SSQA)),
    ("planner.py", "variance", "VarianceOptions", ["ui.measurement_error"],
     "planner_variance_option", _sample(JUDGED)),
    ("planner.py", "variance", "DStudyOptions", ["ui.measurement_error"],
     "planner_dstudy_option", _sample(JUDGED)),
    ("prepare.py", "features", "FeaturesOptions", ["ui.features"], "features_option",
     _features),
    ("importance.py", "importance_linear", "LinearOptions", ["ui.importance_linear"],
     "importance_linear_option", _continuous),
    ("importance.py", "importance", "ImportanceOptions", ["ui.importance"],
     "importance_option", _sample(SSQA)),
]


def _option_keys() -> set[str]:
    """The ``key`` of every ``other_options(...)`` call in pages/ and ui/ (read from the
    source: a page's options widgets are drawn there)."""
    import ast

    from tests.app.apptools import ROOT

    keys = set()
    for path in [*ROOT.glob("pages/*.py"), *ROOT.glob("ui/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "other_options":
                (key,) = [k.value for k in node.keywords if k.arg == "key"]
                keys.add(ast.literal_eval(key))
    return keys


def test_every_page_with_options_is_listed():
    """PAGES is checked against the source, not kept by hand alone: a page (or ui helper)
    that draws its options with ``other_options`` has its row, so a new page cannot go
    untested silently (issue 37: the Factor importance page's options were missing)."""
    keys = _option_keys()
    assert len(keys) >= 12
    assert keys == {p[4] for p in PAGES}


@pytest.mark.parametrize("page, module, name, holders, key, data", PAGES,
                         ids=[f"{p[0]}-{p[2]}" for p in PAGES])
def test_a_new_option_appears_on_its_page(page, module, name, holders, key, data,
                                          monkeypatch):
    """As an edit of ``analysis/options/<module>.py`` would: a new option declared in the
    class (every module-level name of the class patched) gets a widget with its default."""
    mod = importlib.import_module(f"analysis.options.{module}")
    cls = getattr(mod, name)

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class WithNew(cls):
        new_knob: int = option(17, "a new whole number (default %(default)s)",
                               type=POSITIVE_INT, label="New knob")

    WithNew.__name__ = name
    monkeypatch.setattr(mod, name, WithNew)
    for holder in holders:
        if holder == "pages":
            continue  # a page imports the class when it runs: the patched module gives it
        held = importlib.import_module(holder)
        for attr, value in vars(held).copy().items():
            if value is cls:
                monkeypatch.setattr(held, attr, WithNew)
    frame, design, state = data()
    at = page_test(page, frame=frame, design=design)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    # the value reaches the analysis function, which (unlike a real new option) lacks it
    assert not at.exception or "new_knob" in at.exception[0].message
    assert at.number_input(key=f"{key}_new_knob").value == 17
    assert at.number_input(key=f"{key}_new_knob").label == "New knob"


def test_continuous_importance_takes_the_fit_confidence():
    """The continuous outcome's linear model: the confidence level of "Other options of the
    fit" reaches ``bw.importance_linear`` and the copy text."""
    from analysis.importance_linear import linear_importance

    frame, design, state = _continuous()
    at = page_test("importance.py", frame=frame, design=design)
    at.session_state["importance_factors"] = state["importance_factors"]
    at.run()
    at.number_input(key="importance_option_confidence").set_value(0.8).run()
    assert not at.exception and not at.error
    covariates = at.multiselect(key="importance_covariates").value
    want = linear_importance(frame, design, factors=["race", "gender"], covariates=covariates,
                             confidence=0.8)
    default = linear_importance(frame, design, factors=["race", "gender"],
                                covariates=covariates)
    got = at.dataframe[0].value
    np.testing.assert_allclose(got["ci_low"].to_numpy(float),
                               want.terms["ci_low"].to_numpy(float), rtol=1e-9)
    assert not np.allclose(default.terms["ci_low"].to_numpy(float),
                           want.terms["ci_low"].to_numpy(float), equal_nan=True)
    assert "--confidence 0.8" in _copy_text(at) and "confidence=0.8" in _copy_text(at)


def test_continuous_importance_takes_the_fit_small_sample_correction():
    """The linear view's small-sample correction ("Other options of the fit") reaches
    ``bw.importance_linear`` and the copy text (it was left out before)."""
    from analysis import api as bw

    frame, design, state = _continuous()
    at = page_test("importance.py", frame=frame, design=design)
    at.session_state["importance_factors"] = state["importance_factors"]
    at.run()
    at.selectbox(key="importance_option_small_sample").set_value("cr1").run()
    assert not at.exception and not at.error
    covariates = at.multiselect(key="importance_covariates").value
    want = bw.importance_linear(frame, design, factors=["race", "gender"],
                                covariates=covariates, small_sample="cr1")
    got = at.dataframe[0].value
    np.testing.assert_allclose(got["ci_low"].to_numpy(float),
                               want.table["ci_low"].to_numpy(float), rtol=1e-9)
    default = bw.importance_linear(frame, design, factors=["race", "gender"],
                                   covariates=covariates)  # CR2 over the design's cluster
    assert design.cluster and not np.allclose(default.table["ci_low"].to_numpy(float),
                                              got["ci_low"].to_numpy(float), equal_nan=True)
    assert "--small-sample cr1" in _copy_text(at) and "small_sample='cr1'" in _copy_text(at)


def test_report_sections_take_the_other_options(ssqa):
    """Coverage's ``limit`` added to the report lists that many thinnest cells."""
    from analysis.design import apply_design
    from analysis.report import build_section

    frame, design = ssqa
    at = page_test("coverage.py", frame=frame, design=design, name=SSQA).run()
    at.number_input(key="coverage_option_limit").set_value(4).run()
    at.button(key="report_add_coverage").click().run()
    (section,) = at.session_state["report_sections"]
    assert section["settings"]["limit"] == 4
    built = build_section("coverage", apply_design(frame, design), design, section["settings"])
    assert len(dict(built.tables)["coverage_thinnest_cells"]) == 4


@pytest.mark.parametrize("page, section, sample", [
    ("subgroups.py", "subgroups", BBQ), ("ecdf.py", "ecdf", BBQ), ("cohorts.py", "cohorts", BBQ),
    ("compare.py", "compare", BBQ), ("bias_index.py", "index", SSQA),
    ("disparity.py", "disparity", SSQA)])
def test_added_sections_know_every_setting_the_page_stores(page, section, sample):
    """"Add to report" stores the page's other options too: the report section takes them
    (an unknown setting would be refused when the report is built)."""
    from analysis.design import apply_design
    from analysis.report import build_section

    frame, design = sample_with_design(sample)
    at = page_test(page, frame=frame, design=design, name=sample).run()
    at.button(key=f"report_add_{section}").click().run()
    (stored,) = at.session_state["report_sections"]
    built = build_section(section, apply_design(frame, design), design, stored["settings"])
    assert built.skipped is None and built.tables
