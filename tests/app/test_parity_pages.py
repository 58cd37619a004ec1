"""Issue 37: the page side of the parity generated from the option declarations
(``tests/analysis/test_parity_options.py`` has the API, CLI, report and copied code).

For each page of an analysis composed in :mod:`analysis.api`, every option its "Other
options" expander draws (the widgets ``<prefix>_option_<name>``, found on the page, not
listed here) is set to a non-default value (:func:`non_default`, from the declaration);
the page's numbers must equal ``analysis.api.<analysis>`` with the same options, and its
"Copy as CLI" must carry the option.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import api as bw
from analysis.options import options_for
from judges.cost import PriceTable  # noqa: F401  (the package, before pages/ is on sys.path)
from tests.analysis.test_parity_options import _value
from tests.app.apptools import page_test, sample_with_design

SSQA = "ssqa_simulated.csv.gz"

#: page, analysis, widget key prefix, the API's inputs from the page, the compared tables
#: (a column that tells the page's table apart, the API's table, the compared columns).
PAGES = [
    ("subgroups.py", "subgroups", "subgroups_option",
     lambda at: {"factors": at.multiselect(key="subgroups_factors").value,
                 "level": at.radio(key="subgroups_level").value, "power": 0.8,
                 "effect": 0.3},
     [("log_disparity", lambda r: r.table,
       ["log_disparity", "ci_low", "ci_high", "p_value", "p_adjusted", "small_n"])]),
    ("ecdf.py", "ecdf", "ecdf_option",
     lambda at: {"factors": at.multiselect(key="ecdf_factors").value,
                 "by": at.selectbox(key="ecdf_by").value,
                 "level": len(at.multiselect(key="ecdf_factors").value)},
     [("deviation_metric", lambda r: r.table, ["deviation_metric", "mean_rate"]),
      ("statistic", lambda r: r.tables["ks"], ["statistic", "p_value", "p_adjusted"])]),
    ("importance.py", "importance", "importance_option",
     lambda at: {"factors": at.multiselect(key="importance_factors").value},
     [("odds_ratio", lambda r: r.table,
       ["coef", "std_err", "p_value", "p_adjusted", "ci_low", "ci_high", "odds_ratio"])]),
    ("counterfactual.py", "counterfactual", "counterfactual_option",
     lambda at: {"swap": at.selectbox(key="counterfactual_swap").value},
     [("n_pairs", lambda r: r.table,
       ["n_pairs", "difference", "ci_low", "ci_high", "p_value", "p_adjusted", "df"])]),
    ("cohorts.py", "cohorts", "cohorts_option",
     lambda at: {"category": (c := at.selectbox(key="cohorts_category").value),
                 "cohort": at.selectbox(key="cohorts_cohort").value,
                 "by": at.multiselect(key="cohorts_by").value,
                 "categories": at.multiselect(key=f"cohorts_keep_{c}").value,
                 "renormalise": at.checkbox(key="cohorts_renormalise").value},
     [("cramers_v", lambda r: r.tables["homogeneity"], ["statistic", "p_value", "cramers_v"]),
      ("sd_percent", lambda r: r.tables["spread"], ["sd_percent", "max_percent"])]),
    ("bias_index.py", "bias_index", "index_option",
     lambda at: {"factors": at.multiselect(key="index_dimensions").value,
                 "model": (m := at.selectbox(key="index_model").value) != "(all rows)" and m
                 or None},
     [("llmbi", lambda r: r.table.sort_values(["rank", "llmbi"]),
       ["weighted_bias", "diversity_penalty", "llmbi", "rank"])]),
    # Coverage: the per-factor tab, the thinnest cells, the models tab (the heatmap is
    # checked against a crosstab in test_coverage_page.py)
    ("coverage.py", "coverage", "coverage_option",
     lambda at: {"factors": at.multiselect(key="coverage_factors").value,
                 "count": at.radio(key="coverage_count").value},
     [("gini_index", lambda r: r.tables["per_factor"],
       ["n_cells", "n_observed_cells", "n_empty_cells", "coverage_percentage", "gini_index",
        "gini_index_observed"]),
      ("n", lambda r: r.tables["thinnest_cells"], ["n"]),
      ("n_missing_prompt_cells", lambda r: r.tables["models"],
       ["n_rows", "n_observed_cells", "coverage_percentage", "n_missing_prompt_cells"])]),
    # the Planner's measurement-error sections, on the SIMULATED judged sample
    ("planner.py", "variance_components", "planner_variance_option",
     lambda at: {"facets": tuple(at.multiselect(key="planner_variance_facets").value),
                 "n_resamples": 0},
     [("share", lambda r: r.table, ["levels", "variance", "share"]),
      ("se_ratio", lambda r: r.tables["total_error"],
       ["estimate", "ci_low_sampling", "ci_high_sampling", "ci_low", "ci_high", "se_ratio"])]),
    ("planner.py", "d_study", "planner_dstudy_option",
     lambda at: {"facets": tuple(at.multiselect(key="planner_dstudy_facets").value),
                 "judge_cost": at.number_input(key="planner_dstudy_judge").value},
     [("se_gain_per_cost", lambda r: pd.concat([r.tables["current"], r.table,
                                                r.tables["cheapest"],
                                                r.tables["best_at_cost"]]),
       ["cost", "extra_cost", "se_rate", "se_difference", "g_coefficient"])]),
]
#: The sample of a page (default SSQA's simulated answers).
SAMPLE_OF = {"planner.py": "judged_simulated.csv.gz"}
#: Session state a page needs before its first run (the sample's default importance
#: factors are aliased: the page refuses them).
STATE = {"importance.py": {"importance_factors": ["model", "cot"]},
         "counterfactual.py": {"counterfactual_swap": "prompt_style"}}


def _page(page: str, frame, design):
    at = page_test(page, frame=frame, design=design, name=SSQA)
    for key, value in STATE.get(page, {}).items():
        at.session_state[key] = value
    return at.run()


def _widgets(at, prefix: str) -> dict[str, object]:
    out = {}
    for kind in ("number_input", "selectbox", "checkbox", "text_input"):
        for w in getattr(at, kind):
            if w.key and w.key.startswith(prefix + "_"):
                out[w.key.removeprefix(prefix + "_")] = w
    return out


def _same_tables(at, views, result, label: str) -> None:
    """Each page table (told apart by a column) equals the API's in the compared columns."""
    for marker, of_api, columns in views:
        shown = next(d.value for d in at.dataframe if marker in d.value.columns)
        want = of_api(result)
        assert len(shown) == len(want), label
        for c in columns:
            np.testing.assert_allclose(pd.to_numeric(shown[c]).to_numpy(float),
                                       pd.to_numeric(want[c]).to_numpy(float),
                                       rtol=1e-10, equal_nan=True, err_msg=f"{label}: {c}")


def _cases() -> list[tuple]:
    return [(page, analysis, prefix, inputs, views)
            for page, analysis, prefix, inputs, views in PAGES]


@pytest.mark.parametrize("page, analysis, prefix, inputs, views", _cases(),
                         ids=[f"{p[0]}-{p[1]}" for p in PAGES])
def test_every_other_option_of_the_page_gives_the_apis_numbers(page, analysis, prefix,
                                                               inputs, views):
    frame, design = sample_with_design(SAMPLE_OF.get(page, SSQA))
    cls = options_for("index" if analysis == "bias_index" else analysis)
    at = _page(page, frame, design)
    widgets = _widgets(at, prefix)
    assert widgets  # the page draws its other options
    for name in widgets:  # each alone (the bootstrap's widgets are another expander's)
        at = _page(page, frame, design)
        value = _value("index" if analysis == "bias_index" else analysis, name)
        _widgets(at, prefix)[name].set_value(value).run()
        assert not at.exception and not at.error, name
        given = inputs(at)
        result = getattr(bw, analysis)(frame, design, **given, **{name: value})
        _same_tables(at, views, result, f"{page} {name}")
        # the analysis's command (the Planner copies plan, variance and plan --d-study)
        (cli,) = [c.value for c in at.code if c.language == "bash"
                  and f" {cls.COMMAND} " in c.value
                  and ("--d-study" in c.value) == (analysis == "d_study")]
        spec = cls.spec(name)
        flag = spec.negate if spec.negate and value is False else spec.flag
        if flag is not None:
            assert f"--{flag or name.replace('_', '-')}" in cli, (name, cli)


#: The Disparity page lays out every option of its analysis (none is left to "Other
#: options"): option -> the widget's kind, key and, where the widget shows the option
#: otherwise, the widget's value of the option's value. Derived check: every declared
#: option must be here, so a new option cannot go untested silently.
DISPARITY_WIDGETS = {
    "baseline": ("selectbox", "disparity_baseline", None),
    "statistic": ("selectbox", "disparity_statistic", None),
    "quantiles": ("slider", "disparity_quantiles", None),
    "standard": ("selectbox", "disparity_standard", None),
    "quantile": ("number_input", "disparity_quantile", None),
    "value": ("number_input", "disparity_value", None),
    "direction": ("selectbox", "disparity_direction", None),
    "tolerance": ("number_input", "disparity_tolerance", None),
    "comparison": ("selectbox", "disparity_comparison", None),
    "polarity": ("selectbox", "disparity_polarity_sentiment", None),
    "alpha": ("selectbox", "disparity_alpha", None),
    "n_resamples": ("number_input", "disparity_permutations", None),
    "adaptive": ("checkbox", "disparity_adaptive", None),
    "compare": ("selectbox", "disparity_compare", None),
    "seed": ("number_input", "disparity_seed", None),
    "adjust": ("selectbox", "disparity_option_adjust", None),  # "Other options"
    "conventions": ("checkbox", "disparity_saged_conventions", lambda v: v == "saged"),
    "normalization": ("selectbox", "saged_normalize", None),
    "bins": ("number_input", "saged_bins", None),
    "precision_tolerance": ("number_input", "saged_tolerance", None),
    "percentile": ("number_input", "saged_percentile", None),
    "mode_bin_width": ("number_input", "saged_mode_width", None),
}
#: The page's tables (a column that tells each apart) and the API's.
DISPARITY_VIEWS = [
    ("quantile_range", lambda r: r.table, ["n", "mean", "median", "std", "quantile_range"]),
    ("impact_ratio", lambda r: r.tables["selection"],
     ["n_selected", "selection_rate", "impact_ratio"]),
    ("stopped_early", lambda r: r.tables["permutation"],
     ["difference", "p_value", "p_adjusted", "n_permutations"]),
    ("mode", lambda r: r.tables["saged_statistics"], ["mode", "range", "percentile"]),
]


def test_every_disparity_option_has_its_widget():
    from analysis.options.disparity import DisparityOptions

    assert set(DISPARITY_WIDGETS) == set(DisparityOptions.specs())


def _disparity_value(name: str):
    # the page offers the numeric columns but the deviation as the baseline
    return "deviation_original" if name == "baseline" else _value("disparity", name)


@pytest.mark.parametrize("name", list(DISPARITY_WIDGETS))
def test_every_disparity_option_gives_the_apis_numbers_on_the_page(name):
    """A non-default value of each option (with what it needs) on the Disparity page: its
    summary, selection, permutation and SAGED tables equal ``bw.disparity``'s, the copied
    command carries the option."""
    from analysis.options.disparity import DisparityOptions as Opts
    from tests.analysis.test_parity_options import NEEDS, NEEDS_OF

    frame, design = sample_with_design(SSQA)
    needs = NEEDS_OF.get(("disparity", name), NEEDS.get(name, {}))
    values = {**{k: v for k, v in needs.items() if k in Opts.specs()},
              name: _disparity_value(name)}
    at = page_test("disparity.py", frame=frame, design=design, name=SSQA)
    at.session_state["disparity_feature"] = "sentiment"
    at.run()
    for option, value in values.items():
        kind, key, shown = DISPARITY_WIDGETS[option]
        getattr(at, kind)(key=key).set_value(shown(value) if shown else value)
    at.run()
    assert not at.exception and not at.error, name
    by = at.multiselect(key="disparity_by").value
    result = bw.disparity(frame, design, feature="sentiment", by=by, **values)
    assert result.settings[name] == Opts.coerce(values).settings()[name]
    _same_tables(at, DISPARITY_VIEWS, result, name)
    (cli,) = [c.value for c in at.code if c.language == "bash" and " disparity " in c.value]
    spec = Opts.spec(name)
    flag = spec.negate if spec.negate and values[name] is False else spec.flag
    assert f"--{flag or name.replace('_', '-')}" in cli, (name, cli)


def test_the_coverage_pages_count_gives_the_apis_numbers():
    """The Coverage page's laid-out option (what a cell counts, a radio) at its non-default
    value, with the listed cells' limit: every tab's table is ``bw.coverage``'s, the copied
    command carries both."""
    frame, design = sample_with_design(SSQA)
    at = _page("coverage.py", frame, design)
    at.radio(key="coverage_count").set_value(_value("coverage", "count"))
    at.number_input(key="coverage_option_limit").set_value(_value("coverage", "limit")).run()
    assert not at.exception and not at.error
    (page, analysis, prefix, inputs, views), = [p for p in PAGES if p[0] == "coverage.py"]
    given = inputs(at)
    assert given["count"] == "responses"
    result = bw.coverage(frame, design, **given, limit=_value("coverage", "limit"))
    _same_tables(at, views, result, "coverage count")
    (cli,) = [c.value for c in at.code if c.language == "bash" and " coverage " in c.value]
    assert "--count responses" in cli and f"--limit {_value('coverage', 'limit')}" in cli
