"""Variance components (analysis/variance_components.py), the D-study (analysis/d_study.py)
and their API / CLI: agreement with lme4::lmer on stored reference cases
(tests/reference/variance_components.R), hand-computed identities, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import api as bw
from analysis.d_study import d_study, judge_side, project
from analysis.errors import AnalysisError, FitError
from analysis.variance_components import (
    RESIDUAL,
    default_facets,
    fit_components,
    total_error,
)

REF = Path(__file__).resolve().parents[1] / "reference"
LME4_NAMES = {"template:model": "template x model", "seed:model": "seed x model",
              "Residual": RESIDUAL}
SAMPLES = Path(__file__).resolve().parents[2] / "sample_data"


def _reference():
    return (json.loads((REF / "variance_components.json").read_text()),
            pd.read_csv(REF / "variance_components_data.csv"))


@pytest.mark.parametrize("case", ["balanced", "unbalanced", "binary_nested"])
def test_reml_matches_lme4(case):
    ref, data = _reference()
    assert ref["lme4"] == "1.1.31" and ref["R"].startswith("R version 4.2.2")
    rows = data[data["case"] == case]
    spec = ref["cases"][case]
    facets = ["template"] if case == "binary_nested" else ["template", "seed"]
    fixed = ["model", "category"] if case == "binary_nested" else ["model"]
    gs = fit_components(rows, "y", fixed=fixed, facets=facets, model="model", n_resamples=0)
    assert gs.n_rows == spec["n"]
    for group, variance in zip(spec["group"], spec["variance"], strict=True):
        ours = gs.variance(LME4_NAMES.get(group, group))
        assert ours == pytest.approx(variance, rel=1e-4, abs=1e-7), group
    assert gs.reml_criterion == pytest.approx(spec["reml_criterion"], rel=1e-8)
    assert gs.beta[0] == pytest.approx(spec["fixef"]["(Intercept)"], abs=1e-5)


def _one_way(n_levels=10, per=6, sd_u=0.7, seed=3):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_levels), per)
    y = 2.0 + rng.normal(0, sd_u, n_levels)[g] + rng.normal(0, 1, len(g))
    return pd.DataFrame({"template": g, "y": y})


def test_balanced_one_way_reml_is_the_anova_estimator():
    """Balanced one-way: REML = (MSB - MSW) / n per level when positive; the total-error
    variance of the grand mean is MSB / N (the classic result)."""
    d = _one_way()
    means = d.groupby("template")["y"].mean()
    per, k = 6, 10
    msb = per * np.sum((means - d["y"].mean()) ** 2) / (k - 1)
    msw = np.sum((d["y"] - d["template"].map(means)) ** 2) / (len(d) - k)
    gs = fit_components(d, "y", fixed=[], facets=["template"], n_resamples=0)
    assert gs.variance("template") == pytest.approx((msb - msw) / per, rel=1e-6)
    assert gs.variance(RESIDUAL) == pytest.approx(msw, rel=1e-6)
    te = total_error(gs)
    row = te.iloc[0]
    assert row["se_total"] == pytest.approx(np.sqrt(msb / len(d)), rel=1e-6)
    assert row["se_sampling"] == pytest.approx(d["y"].std(ddof=1) / np.sqrt(len(d)), rel=1e-9)
    assert row["df_total"] == pytest.approx(k - 1, rel=1e-3)  # template dominates
    assert row["dominant"] == "template"
    shares = row["share_template"] + row["share_residual"]
    assert shares == pytest.approx(1.0)


def test_bootstrap_interval_contains_estimate_and_shares_sum_to_one():
    d = _one_way(n_levels=12)
    gs = fit_components(d, "y", fixed=[], facets=["template"], n_resamples=60, seed=1)
    c = gs.components.set_index("component")
    assert c.loc["template", "ci_low"] < c.loc["template", "variance"] < \
        c.loc["template", "ci_high"]
    assert c["share"].sum() == pytest.approx(1.0)
    again = fit_components(d, "y", fixed=[], facets=["template"], n_resamples=60, seed=1)
    pd.testing.assert_frame_equal(gs.components, again.components)  # seeded


def _crossed(seed=0, n_t=10, n_s=4):
    rng = np.random.default_rng(seed)
    t = np.repeat(np.arange(n_t), n_s * 2 * 5)
    s = np.tile(np.repeat(np.arange(n_s), 10), n_t)
    m = np.tile(np.repeat([0, 1], 5), n_t * n_s)
    y = (0.3 + 0.1 * m + rng.normal(0, 0.3, n_t)[t] + rng.normal(0, 0.2, n_s)[s]
         + rng.normal(0, 1, len(t)))
    return pd.DataFrame({"template": t, "seed": s, "model": np.where(m, "b", "a"), "y": y})


def test_one_level_facet_is_a_note_and_the_others_are_still_fitted():
    d = _crossed().assign(judge="only-judge")
    gs = fit_components(d, "y", fixed=["model"], facets=["template", "judge"], model="model",
                        n_resamples=0)
    note = gs.components.set_index("component").loc["judge", "note"]
    assert "one level" in note and "at least 2 levels" in note
    assert gs.variance("template") > 0


def test_aliased_facets_are_named_and_one_is_kept():
    d = _crossed()
    d["seed"] = d["template"] * 7  # every seed used with one template
    gs = fit_components(d, "y", fixed=["model"], facets=["template", "seed"], model="model",
                        n_resamples=0)
    note = gs.components.set_index("component").loc["seed", "note"]
    assert "aliased with 'template'" in note
    assert gs.variance("template") > 0


def test_too_few_levels_says_how_many_are_needed():
    d = _crossed(n_s=3)
    gs = fit_components(d, "y", fixed=["model"], facets=["template", "seed"], model="model",
                        n_resamples=0)
    assert any("'seed' has only 3 levels" in n and "5 or more levels" in n for n in gs.notes)


def test_boundary_zero_is_a_note():
    rng = np.random.default_rng(5)
    d = pd.DataFrame({"template": np.repeat(np.arange(8), 20), "y": rng.normal(0, 1, 160)})
    d["y"] -= d.groupby("template")["y"].transform("mean")  # no between-template variance
    gs = fit_components(d, "y", fixed=[], facets=["template"], n_resamples=0)
    row = gs.components.set_index("component").loc["template"]
    assert row["boundary"] and row["variance"] == 0.0 and "boundary" in row["note"]


def test_facet_aliased_with_a_fixed_factor():
    d = _crossed()
    d["family"] = d["template"].astype(str)
    gs = fit_components(d, "y", fixed=["model", "family"], facets=["template", "seed"],
                        model="model", n_resamples=0)
    note = gs.components.set_index("component").loc["template", "note"]
    assert "aliased with the fixed factors" in note
    assert gs.components.set_index("component").loc["seed", "variance"] >= 0  # fitted


def test_nothing_estimable_and_constant_outcome_raise_fit_errors():
    d = _crossed().assign(judge="j")
    with pytest.raises(FitError, match="one level"):
        fit_components(d, "y", fixed=["model"], facets=["judge"], n_resamples=0)
    with pytest.raises(FitError, match="single value"):
        fit_components(d.assign(y=1.0), "y", fixed=[], facets=["template"], n_resamples=0)
    with pytest.raises(FitError, match="not in the table"):
        fit_components(d, "nope", fixed=[], facets=["template"])


def test_default_facets_read_the_cluster_and_the_replicate_and_judge_columns():
    from analysis.design import Design, Factor, Outcome

    d = _crossed().assign(judge_model=lambda f: np.where(f.index % 2, "j1", "j2"),
                          sample_id=1, temperature=0.7)
    design = Design((Factor("model", "model", ("a", "b"), "a"),),
                    Outcome("y", mapping="above", threshold=0.0, type="continuous"),
                    cluster="template")
    assert default_facets(d, design) == ["template", "seed", "judge_model"]
    assert judge_side(["template", "judge", "sample"]) == ["judge", "sample"]
    assert judge_side(["template", "sample"]) == []


def test_d_study_identity_and_balanced_scaling():
    d = _crossed()
    gs = fit_components(d, "y", fixed=["model"], facets=["template", "seed"], model="model",
                        n_resamples=0)
    te = total_error(gs).set_index("label")
    now = project(gs, {})
    rate_var = np.mean([te.loc["model = a", "se_total"] ** 2,
                        te.loc["model = b", "se_total"] ** 2])
    assert now["var_rate"] == pytest.approx(rate_var, rel=1e-9)
    assert now["var_difference"] == pytest.approx(te.loc["b - a", "se_total"] ** 2, rel=1e-9)
    # balanced: doubling the templates halves every template term and the residual's
    double = project(gs, {"template": 2.0})
    v = gs.variance
    n = len(d) / 2
    expected = ((v("template") + v("template x model")) / 20 + (v("seed") + v("seed x model"))
                / 4 + v(RESIDUAL) / (2 * n))
    assert double["var_rate"] == pytest.approx(expected, rel=1e-9)
    ds = d_study(gs, target_se=0.05, answer_cost=2.0)
    assert ds.current["cost"].iloc[0] == pytest.approx(2.0 * len(d))
    row = ds.changes.set_index("change").loc["+10 template"]
    assert row["levels_template"] == 20 and row["cost"] == pytest.approx(4.0 * len(d))
    if len(ds.cheapest):
        assert ds.cheapest["se_difference"].iloc[0] <= 0.05
        cheaper = ds.designs[ds.designs["cost"] < ds.cheapest["cost"].iloc[0]]
        assert (cheaper["se_difference"] > 0.05).all()
    with pytest.raises(AnalysisError, match="Not a fitted facet"):
        d_study(gs, levels={"judge": 3})


def test_judge_calls_are_counted_on_the_judging_side():
    rng = np.random.default_rng(2)
    n_t, n_j = 12, 3
    t = np.repeat(np.arange(n_t), n_j * 2 * 4)
    j = np.tile(np.repeat(np.arange(n_j), 8), n_t)
    m = np.tile(np.repeat([0, 1], 4), n_t * n_j)
    y = rng.normal(0, 0.3, n_t)[t] + rng.normal(0, 0.3, n_j)[j] + rng.normal(0, 1, len(t))
    d = pd.DataFrame({"template": t, "judge": j, "model": m, "y": y})
    gs = fit_components(d, "y", fixed=["model"], facets=["template", "judge"], model="model",
                        n_resamples=0)
    ds = d_study(gs, answer_cost=1.0, judge_cost=0.5)
    now = ds.current.iloc[0]
    assert now["answers"] == pytest.approx(len(d) / n_j)
    assert now["judge_calls"] == pytest.approx(len(d))
    one_more = ds.changes.set_index("change").loc["+1 judge"]
    assert one_more["answers"] == pytest.approx(now["answers"])  # no new answers
    assert one_more["judge_calls"] == pytest.approx(len(d) * 4 / 3)


def test_api_on_the_bbq_sample_template_variance_and_total_error():
    r = bw.variance_components(SAMPLES / "bbq_unifiedqa.csv.gz",
                               SAMPLES / "bbq_unifiedqa.design.yaml", n_resamples=0)
    c = r.table.set_index("component")
    assert list(c.index) == ["template_id", RESIDUAL]
    assert 0.05 < c.loc["template_id", "share"] < 0.10  # measured 0.074
    te = r.tables["total_error"].set_index("label")
    assert te.loc["all rows", "se_ratio"] > 4  # measured 5.5
    assert r.settings["method"].startswith("REML") and r.settings["facets"] == ["template_id"]
    assert r.meta["dominant"] == "template_id"


def test_api_on_the_ssqa_sample_recovers_no_template_effect():
    """sample_data/ssqa_simulated_effects.yaml: the simulated deviations depend on the
    fixed factors only, so the template's variance is zero (found at the boundary)."""
    r = bw.variance_components(SAMPLES / "ssqa_simulated.csv.gz",
                               SAMPLES / "ssqa_simulated.design.yaml", n_resamples=0)
    c = r.table.set_index("component")
    assert c.loc["template", "variance"] < 1e-4 and c.loc["template x model", "variance"] < 1e-4
    te = r.tables["total_error"]
    # no facet variance: the total-error SE is the residual's, close to the sampling SE
    # (the residual is what the fixed factors leave: a little below p(1-p) for a rate);
    # the cluster-robust floor, noisy over 37 templates, lifts a few subgroups (max 1.23)
    assert te["se_ratio"].iloc[0] < 1.01 and te["se_ratio"].median() < 1.05


def test_api_bad_facets():
    with pytest.raises(AnalysisError, match="did you mean 'template_id'"):
        bw.variance_components(SAMPLES / "bbq_unifiedqa.csv.gz",
                               SAMPLES / "bbq_unifiedqa.design.yaml", facets=["template_idd"])


def test_cli_json_and_copy_as_code_give_the_api_numbers(capsys):
    import dataclasses

    from analysis import reproduce as rp
    from analysis.options.variance import DStudyOptions, VarianceOptions
    from tests.analysis.cli_helpers import run_json

    files = (str(SAMPLES / "bbq_unifiedqa.csv.gz"), str(SAMPLES / "bbq_unifiedqa.design.yaml"))
    api = bw.variance_components(*files, n_resamples=0)
    out = run_json(capsys, "variance", files[0], "--design", files[1], "--n-boot", "0")
    assert [c["variance"] for c in out["components"]] == pytest.approx(
        api.table["variance"].tolist())
    assert out["total_error"][0]["ci_high"] == pytest.approx(
        api.tables["total_error"]["ci_high"].iloc[0])
    d = run_json(capsys, "plan", files[0], "--design", files[1], "--d-study",
                 "--target-se", "0.01")
    assert d["cheapest"][0]["se_rate"] <= 0.01 and d["settings"]["target"] == "rate"
    view = rp.api_view(VarianceOptions.coerce(None, n_resamples=0))
    assert rp.cli_command(view.command, *files, view.options).split()[3] == "variance"
    assert "n_resamples=0" in rp.api_snippet(view.function, *files, view.call)
    dview = rp.api_view(DStudyOptions.coerce(None, target_se=0.01), function="d_study")
    dview = dataclasses.replace(dview, options=(("d-study", True), *dview.options))
    text = rp.cli_command(dview.command, *files, dview.options)
    assert " plan " in text and "--d-study" in text and "--target-se 0.01" in text


def test_an_item_facet_with_thousands_of_levels_is_the_eliminated_block():
    """4,000 items nested in 40 templates, two models: the item group (the largest) is
    eliminated exactly, the item x model interaction (8,000 levels) is left out with a
    note when the rest would be too large; the true item and template variances (0.09,
    0.04) are recovered (seeded; REML SE about 10 % and 25 %)."""
    rng = np.random.default_rng(4)
    items = np.arange(4000)
    template = items // 100
    rows = pd.DataFrame({"item": np.repeat(items, 4), "model": np.tile(["a", "a", "b", "b"],
                                                                        4000)})
    rows["template"] = template[rows["item"]]
    rows["y"] = (rng.normal(0, 0.3, 4000)[rows["item"]] + rng.normal(0, 0.2, 40)[
        rows["template"]] + 0.1 * (rows["model"] == "b") + rng.normal(0, 0.5, len(rows)))
    gs = fit_components(rows, "y", fixed=["model"], facets=["template", "item"],
                        model="model", n_resamples=0)
    assert gs.variance("item") == pytest.approx(0.09, rel=0.15)
    assert gs.variance("template") == pytest.approx(0.04, rel=0.5)
    assert gs.variance(RESIDUAL) == pytest.approx(0.25, rel=0.05)
    assert any("'item x model' (8,000 levels) is left out" in n for n in gs.notes)


def test_rows_without_a_facet_or_factor_value_are_left_out():
    """A missing value of a facet (an lm-eval table's empty template) or of a fixed factor:
    those rows are left out, the fit equals the one on the other rows (it used to map the
    missing value to the last level, or fail on an all-missing column)."""
    d = _crossed(seed=4)
    holes = d.copy()
    holes.loc[holes.index[:7], "template"] = None
    holes.loc[holes.index[7:10], "seed"] = np.nan
    got = fit_components(holes, "y", fixed=[], facets=["template", "seed"], n_resamples=0)
    want = fit_components(d.iloc[10:], "y", fixed=[], facets=["template", "seed"],
                          n_resamples=0)
    pd.testing.assert_frame_equal(got.components, want.components)
