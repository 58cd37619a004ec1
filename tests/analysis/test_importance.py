"""Factor importance (methods.md s. 4): row-level statsmodels Logit, hand cases, recovery of
the simulated SSQA effects, every refusal and its fix, the coefficient plot."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import yaml
from scipy import stats
from statsmodels.stats.multitest import multipletests

from analysis.cells import cell_table
from analysis.columns import (
    CI_HIGH,
    CI_LOW,
    COEF,
    COEF_CI_HIGH,
    COEF_CI_LOW,
    DEVIATIONS,
    DF,
    EFFECT,
    FACTOR,
    LR_STATISTIC,
    ODDS_RATIO,
    P_ADJUSTED,
    P_VALUE,
    PROBABILITY,
    PROBABILITY_CI_HIGH,
    PROBABILITY_CI_LOW,
    STD_ERR,
    TERM,
    VALUE,
    N,
    Z,
)
from analysis.design import Design, Factor, Outcome, apply_design
from analysis.errors import AnalysisError, FitError
from analysis.figures.importance import EFFECT_COLOURS, importance_figure
from analysis.importance import (
    INTERCEPT,
    TERM_COLUMNS,
    ImportanceRefusal,
    apply_fix,
    factor_importance,
    suggest_factors,
)
from tests.app.apptools import ROOT

SPEC = ["model", "cot", "prompt_style", "pachankis_cluster", "gender"]
NO_BASE = {"prompt_style": ["base"]}


@pytest.fixture(scope="module")
def ssqa():
    """The SSQA sample as independent rows (its outcomes are simulated without a template
    effect): the bundled design's cluster is dropped, so these tests check the plain logit
    (the clustered fit: tests/analysis/test_clustered.py)."""
    frame = pd.read_csv(ROOT / "sample_data" / "ssqa_simulated.csv.gz")
    design = Design.load(ROOT / "sample_data" / "ssqa_simulated.design.yaml").with_cluster(None)
    return apply_design(frame, design), design


def dummies(rows: pd.DataFrame, terms: pd.DataFrame) -> np.ndarray:
    """The row-level design matrix, built independently with pandas, in ``terms`` order."""
    cols = {INTERCEPT: np.ones(len(rows))}
    for term, factor, value in terms[[TERM, FACTOR, VALUE]].itertuples(index=False):
        if factor is None or term == INTERCEPT:
            continue
        parts = zip(factor.split(":"), value.split(":"), strict=True)
        col = np.ones(len(rows), dtype=bool)
        for f, v in parts:
            col &= (rows[f].astype(str) == v).to_numpy()
        cols[term] = col.astype(float)
    return np.column_stack([cols[t] for t in terms[TERM]])


def make_design(levels: dict[str, list[str]]) -> Design:
    return Design(tuple(Factor(f, "domain", tuple(v), v[0]) for f, v in levels.items()),
                  Outcome("deviation"))


def rows_from_cells(spec: list[tuple]) -> pd.DataFrame:
    """Rows from (value of each factor..., n, k) tuples; factor names a, b, c..."""
    out = []
    for *values, n, k in spec:
        for i in range(n):
            out.append({**{"abcdefg"[j]: v for j, v in enumerate(values)},
                        "deviation": int(i < k)})
    return pd.DataFrame(out)


def simulated(seed: int = 1, n: int = 6000) -> tuple[pd.DataFrame, Design]:
    rng = np.random.default_rng(seed)
    levels = {"a": ["a0", "a1", "a2"], "b": ["b0", "b1"], "c": ["c0", "c1", "c2", "c3"]}
    effects = {"a": [0, 0.4, -0.6], "b": [0, 0.8], "c": [0, -0.3, 0.2, 0.5]}
    frame = pd.DataFrame({f: rng.integers(0, len(v), n) for f, v in levels.items()})
    eta = -0.5 + sum(np.array(effects[f])[frame[f]] for f in levels)
    eta += 0.7 * ((frame["a"] == 1) & (frame["b"] == 1))
    frame["deviation"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    for f, v in levels.items():
        frame[f] = np.array(v)[frame[f]]
    design = make_design(levels)
    return apply_design(frame, design), design


# --- agreement with the row-level logit ----------------------------------------------------
def test_equals_row_level_statsmodels_logit_with_interaction(ssqa):
    results, design = ssqa
    fit = factor_importance(results, design, factors=SPEC, exclude=NO_BASE,
                            interactions=["model:cot", "prompt_style:gender"])
    rows = results[results["prompt_style"] != "base"]
    ref = sm.Logit(rows["deviation"].to_numpy(), dummies(rows, fit.terms)).fit(disp=0, tol=1e-12)
    t = fit.terms
    assert list(t.columns) == TERM_COLUMNS
    np.testing.assert_allclose(t[COEF], ref.params, rtol=0, atol=1e-8)
    np.testing.assert_allclose(t[STD_ERR], ref.bse, rtol=0, atol=1e-8)
    np.testing.assert_allclose(t[Z], ref.tvalues, rtol=1e-8)
    np.testing.assert_allclose(t[P_VALUE], ref.pvalues, rtol=0, atol=1e-8)
    np.testing.assert_allclose(t[P_VALUE], ref.pvalues, rtol=1e-6)  # tiny ones too
    assert fit.log_likelihood == pytest.approx(ref.llf, abs=1e-6)
    assert fit.null_log_likelihood == pytest.approx(ref.llnull, abs=1e-6)
    assert fit.pseudo_r2 == pytest.approx(ref.prsquared, abs=1e-10)
    ci = ref.conf_int(0.05)
    np.testing.assert_allclose(t[COEF_CI_LOW], ci[:, 0], atol=1e-8)
    np.testing.assert_allclose(t[CI_HIGH], np.exp(ci[:, 1]), rtol=1e-8)
    np.testing.assert_allclose(t[ODDS_RATIO], np.exp(ref.params), rtol=1e-8)
    assert fit.n_rows == len(rows) and fit.n_deviations == rows["deviation"].sum()
    assert fit.n_parameters == len(t) == 11 + 1 + 4  # 1 model:cot, 2 x 2 style:gender


def test_cell_table_input_gives_the_same_fit(ssqa):
    results, design = ssqa
    factors = SPEC[1:]
    by_rows = factor_importance(results, design, factors=factors, exclude=NO_BASE,
                                where={"model": "sim-model-B"})
    cells = cell_table(results, [*SPEC, "template"])  # more factors than needed: summed down
    by_cells = factor_importance(cells, design, factors=factors, exclude=NO_BASE,
                                 where={"model": "sim-model-B"})
    pd.testing.assert_frame_equal(by_rows.terms, by_cells.terms, rtol=1e-12)
    pd.testing.assert_frame_equal(by_rows.factor_tests, by_cells.factor_tests, rtol=1e-10)
    assert by_rows.n_rows == by_cells.n_rows == 20646
    assert by_rows.n_cells == by_cells.n_cells == 90


def test_saturated_two_by_two_by_hand():
    # b0: 30/100 deviate, b1: 60/80 deviate
    results = rows_from_cells([("b0", 100, 30), ("b1", 80, 60)])
    design = make_design({"a": ["b0", "b1"]})
    fit = factor_importance(results, design)
    intercept, b1 = fit.terms.iloc[0], fit.terms.iloc[1]
    assert intercept[PROBABILITY] == pytest.approx(0.3, abs=1e-12)
    assert intercept[COEF] == pytest.approx(math.log(30 / 70), abs=1e-12)
    assert b1[COEF] == pytest.approx(math.log((60 / 20) / (30 / 70)), abs=1e-12)
    assert b1[STD_ERR] == pytest.approx(math.sqrt(1 / 30 + 1 / 70 + 1 / 60 + 1 / 20), abs=1e-12)
    assert b1[PROBABILITY] == pytest.approx(0.75, abs=1e-12)
    assert (b1[N], b1[DEVIATIONS], intercept[N], intercept[DEVIATIONS]) == (80, 60, 100, 30)
    assert b1[EFFECT] == "risk" and intercept[EFFECT] == "baseline"
    # the LR test of a 2 x 2 table is the G-test
    g, p, _, _ = stats.chi2_contingency([[30, 70], [60, 20]], correction=False,
                                        lambda_="log-likelihood")
    test = fit.factor_tests.iloc[0]
    assert (test[FACTOR], test[DF]) == ("a", 1)
    assert test[LR_STATISTIC] == pytest.approx(g, rel=1e-10)
    assert test[P_VALUE] == pytest.approx(p, rel=1e-8)
    # probability CI: the Wald interval of the logit, transformed
    se0 = math.sqrt(1 / 30 + 1 / 70)
    z = stats.norm.ppf(0.975)
    expit = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    assert intercept[PROBABILITY_CI_LOW] == pytest.approx(expit(math.log(3 / 7) - z * se0))
    assert intercept[CI_LOW] == pytest.approx(math.exp(math.log(3 / 7) - z * se0))
    se1 = math.sqrt(1 / 60 + 1 / 20)
    assert b1[PROBABILITY_CI_HIGH] == pytest.approx(expit(math.log(3) + z * se1))


def test_likelihood_ratio_tests_equal_two_logit_fits(ssqa):
    results, design = ssqa
    fit = factor_importance(results, design, factors=SPEC, exclude=NO_BASE,
                            interactions=["model:cot"])
    rows = results[results["prompt_style"] != "base"]
    full = sm.Logit(rows["deviation"].to_numpy(), dummies(rows, fit.terms)).fit(disp=0)
    tests = fit.factor_tests.set_index(FACTOR)
    for factor, drop in [("gender", ("gender",)), ("cot", ("cot", "model:cot")),
                         ("model:cot", ("model:cot",))]:
        kept = fit.terms[~fit.terms[FACTOR].isin(drop)]
        reduced = sm.Logit(rows["deviation"].to_numpy(), dummies(rows, kept)).fit(disp=0)
        assert tests.loc[factor, LR_STATISTIC] == pytest.approx(2 * (full.llf - reduced.llf),
                                                                 abs=1e-6)
        assert tests.loc[factor, DF] == len(fit.terms) - len(kept)
    assert tests.loc["cot", DF] == 2
    np.testing.assert_allclose(tests[P_ADJUSTED],
                               multipletests(tests[P_VALUE], method="fdr_bh")[1], rtol=1e-12)


def test_benjamini_hochberg_column_and_labels(ssqa):
    results, design = ssqa
    fit = factor_importance(results, design, factors=SPEC, exclude=NO_BASE,
                            interactions=["prompt_style:pachankis_cluster"])
    t = fit.terms
    assert np.isnan(t[P_ADJUSTED].iloc[0])
    expected = stats.false_discovery_control(t[P_VALUE].iloc[1:], method="bh")
    np.testing.assert_allclose(t[P_ADJUSTED].iloc[1:], expected, rtol=1e-12)
    plain = t[EFFECT].iloc[1:]
    assert set(plain) <= {"risk", "protective", "not significant"}
    assert (plain == "risk").equals((t[P_VALUE].iloc[1:] < 0.05) & (t[COEF].iloc[1:] > 0))
    adjusted = factor_importance(results, design, factors=SPEC, exclude=NO_BASE,
                                 interactions=["prompt_style:pachankis_cluster"],
                                 adjust="bh", alpha=0.01).terms
    flagged = (adjusted[P_ADJUSTED] < 0.01) & (adjusted[COEF] < 0)
    assert (adjusted[EFFECT].iloc[1:] == "protective").equals(flagged.iloc[1:])


# --- recovery of the stated effects --------------------------------------------------------
def test_recovers_the_stated_simulated_effects(ssqa):
    results, design = ssqa
    stated = yaml.safe_load((ROOT / "sample_data" / "ssqa_simulated_effects.yaml").read_text())
    truth = {INTERCEPT: stated["deviation"]["intercept"]}
    references = {}
    for factor, spec in stated["deviation"]["effects"].items():
        references[factor] = spec["reference"]
        truth.update({f"{factor}[{v}]": e for v, e in spec["effects"].items()})
    fit = factor_importance(results, design, factors=SPEC, references=references,
                            exclude=NO_BASE)
    t = fit.terms.set_index(TERM)
    assert set(t.index) == set(truth)
    inside = [t.loc[k, COEF_CI_LOW] <= v <= t.loc[k, COEF_CI_HIGH] for k, v in truth.items()]
    assert sum(inside) >= 0.9 * len(truth)  # 95 % intervals: 10 of 11 here
    for term, effect in truth.items():
        if term == INTERCEPT:
            continue
        expected = "risk" if effect > 0 else "protective" if effect < 0 else "not significant"
        assert t.loc[term, EFFECT] == expected, term
    # the estimates the sample's README reports (statsmodels Logit)
    assert t.loc["model[sim-model-B]", COEF] == pytest.approx(0.616, abs=5e-4)
    assert t.loc["pachankis_cluster[Threatening]", COEF] == pytest.approx(1.106, abs=5e-4)
    assert t.loc[INTERCEPT, STD_ERR] == pytest.approx(0.030, abs=5e-4)
    assert fit.baseline_probability == pytest.approx(1 / (1 + math.exp(1.246)), abs=2e-4)


def test_recovers_an_interaction_on_generic_simulated_data():
    results, design = simulated(seed=3, n=20000)
    fit = factor_importance(results, design, interactions=["a:b"])
    t = fit.terms.set_index(TERM)
    truth = {"a[a1]": 0.4, "a[a2]": -0.6, "b[b1]": 0.8, "c[c3]": 0.5, "a[a1]:b[b1]": 0.7,
             "a[a2]:b[b1]": 0.0}
    inside = [t.loc[k, COEF_CI_LOW] <= v <= t.loc[k, COEF_CI_HIGH] for k, v in truth.items()]
    assert sum(inside) >= 5
    assert t.loc["a[a1]:b[b1]", EFFECT] == "risk"


# --- refusals --------------------------------------------------------------------------------
def test_refuses_the_ssqa_base_prompt_aliasing_and_its_fix_works(ssqa):
    results, design = ssqa
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(results, design, factors=SPEC)
    exc = info.value
    assert exc.reason == "aliased" and isinstance(exc, FitError)
    text = exc.explanation
    for piece in ["prompt_style = 'base'", "pachankis_cluster = 'no stigma'",
                  "gender = 'no gender'", "exactly the same 148 rows",
                  "none of prompt_style, pachankis_cluster and gender determines another",
                  "leave these 148 rows out of the subset (prompt_style != 'base')",
                  # the typical cause is told in the user's own names (no canned example)
                  "every row with prompt_style = 'base' has pachankis_cluster = "
                  "'no stigma' and gender = 'no gender', and no other row does"]:
        assert piece in text, piece
    assert "Possible fixes" in str(exc)
    leave_out = exc.fixes[0]
    assert leave_out.exclude == (("prompt_style", ("base",)),)
    kwargs = apply_fix(leave_out, factors=SPEC)
    fixed = factor_importance(results, design, **kwargs)
    expected = factor_importance(results, design, factors=SPEC, exclude=NO_BASE)
    pd.testing.assert_frame_equal(fixed.terms, expected.terms)
    # keeping only one of the three aliased factors also works
    keep_style = next(f for f in exc.fixes if f.label.endswith("(keep prompt_style)"))
    kwargs = apply_fix(keep_style, factors=SPEC)
    assert kwargs["factors"] == ["model", "cot", "prompt_style"]
    assert factor_importance(results, design, **kwargs).n_rows == len(results)


def test_aliasing_refusal_speaks_of_the_users_own_control_rows():
    """Control rows (tone = 'neutral' exactly when persona = 'none') are explained with
    this table's factors and values, not with another benchmark's example."""
    spec = [(t, p, 30, 8 + 3 * i + j) for i, t in enumerate(["polite", "rude"])
            for j, p in enumerate(["teacher", "nurse"])]
    spec.append(("neutral", "none", 50, 12))
    results = rows_from_cells(spec).rename(columns={"a": "tone", "b": "persona"})
    design = Design((Factor("tone", "domain", ("neutral", "polite", "rude"), "neutral"),
                     Factor("persona", "prompt", ("none", "teacher", "nurse"), "none")),
                    Outcome("deviation"))
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(apply_design(results, design), design)
    text = info.value.explanation
    assert ("tone = 'neutral' and persona = 'none' mark exactly the same 50 rows" in text
            or "persona = 'none' and tone = 'neutral' mark exactly the same 50 rows" in text)
    assert ("every row with persona = 'none' has tone = 'neutral', and no other row does"
            in text)
    assert "leave these 50 rows out of the subset (persona != 'none')" in text
    assert "SSQA" not in str(info.value) and "stigma" not in str(info.value)
    fixed = factor_importance(apply_design(results, design), design,
                              **apply_fix(info.value.fixes[0], factors=["tone", "persona"]))
    assert fixed.n_rows == 120


def test_refuses_nested_factors_naming_the_pair(ssqa):
    results, design = ssqa
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(results, design, factors=["cot", "stigma", "pachankis_cluster"])
    exc = info.value
    assert exc.reason == "aliased"
    assert "pachankis_cluster is nested in stigma" in exc.explanation
    assert "drop stigma (keeps the coarser pachankis_cluster)" in exc.explanation
    drop_stigma = next(f for f in exc.fixes if f.drop_factors == ("stigma",))
    kwargs = apply_fix(drop_stigma, factors=["cot", "stigma", "pachankis_cluster"])
    assert kwargs["factors"] == ["cot", "pachankis_cluster"]
    assert factor_importance(results, design, **kwargs).n_parameters == 7


def test_refuses_a_linear_relation_that_is_not_a_nesting():
    # c = 'c1' exactly when a = 'a1' and b = 'b1' is false: [c1] = [a1] + [b1] - 1 ... here
    # c is fixed by the pair (a, b) and its column is a sum of theirs
    spec = [("a0", "b0", "c0", 40, 10), ("a1", "b0", "c1", 40, 20), ("a0", "b1", "c1", 40, 15),
            ("a1", "b1", "c2", 40, 25)]
    results = rows_from_cells(spec)
    design = make_design({"a": ["a0", "a1"], "b": ["b0", "b1"], "c": ["c0", "c1", "c2"]})
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(apply_design(results, design), design)
    text = info.value.explanation
    assert "The column [c[c2]] equals" in text
    assert "c is fixed by the combination of a and b" in text
    assert {f.drop_factors for f in info.value.fixes} >= {("c",)}


def test_refuses_an_interaction_aliased_with_a_main_effect():
    # a1 occurs only with b1: the interaction column a1:b1 is the column a1
    spec = [("a0", "b0", 50, 10), ("a0", "b1", 50, 20), ("a1", "b1", 50, 30),
            ("a2", "b0", 50, 10), ("a2", "b1", 50, 25)]
    design = make_design({"a": ["a0", "a1", "a2"], "b": ["b0", "b1"]})
    results = apply_design(rows_from_cells(spec), design)
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(results, design, interactions=["a:b"])
    text = info.value.explanation
    assert "The column [a[a1]:b[b1]] equals [a[a1]]" in text
    assert "a = 'a1' occurs only together with b = 'b1'" in text
    assert info.value.fixes[0].drop_interactions == (("a", "b"),)
    assert factor_importance(results, design).n_parameters == 4


def test_refuses_an_absent_reference_and_suggests_the_most_frequent_value(ssqa):
    results, design = ssqa
    where = {"prompt_style": ["doubt", "positive"]}
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(results, design, factors=["cot", "prompt_style"], where=where)
    exc = info.value
    assert exc.reason == "reference_absent"
    assert "prompt_style: the reference 'original' has no row in the subset" in exc.explanation
    assert exc.fixes[0].references == (("prompt_style", "doubt"),)
    kwargs = apply_fix(exc.fixes[0], factors=["cot", "prompt_style"])
    fit = factor_importance(results, design, where=where, **kwargs)
    assert fit.terms[TERM].tolist() == [INTERCEPT, "cot[yes]", "prompt_style[positive]"]


def test_refuses_a_factor_with_a_single_value(ssqa):
    results, design = ssqa
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(results, design, factors=["cot", "model", "prompt_style"],
                          where={"model": "sim-model-A"}, exclude=NO_BASE)
    exc = info.value
    assert exc.reason == "constant_factor"
    assert "model takes only the value 'sim-model-A'" in exc.explanation
    assert exc.fixes[0].drop_factors == ("model",)


def separated_frame() -> tuple[pd.DataFrame, Design]:
    spec = [("x0", "y0", 100, 30), ("x0", "y1", 100, 50), ("x1", "y0", 60, 0),
            ("x1", "y1", 40, 0), ("x2", "y0", 80, 20), ("x2", "y1", 90, 40),
            ("x3", "y0", 5, 5), ("x3", "y1", 5, 5)]
    design = make_design({"a": ["x0", "x1", "x2", "x3"], "b": ["y0", "y1"]})
    return apply_design(rows_from_cells(spec), design), design


def test_refuses_separation_naming_the_values():
    results, design = separated_frame()
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(results, design)
    exc = info.value
    assert exc.reason == "separation"
    assert "a = 'x1': no deviation in 100 rows" in exc.explanation
    assert "a = 'x3': only deviations in 10 rows" in exc.explanation
    assert [f.on_separation for f in exc.fixes[:2]] == ["drop", "merge"]


def test_separation_drop_equals_fitting_without_those_rows():
    results, design = separated_frame()
    fit = factor_importance(results, design, on_separation="drop")
    rows = results[~results["a"].isin(["x1", "x3"])]
    ref = sm.Logit(rows["deviation"].to_numpy(), dummies(rows, fit.terms)).fit(disp=0)
    np.testing.assert_allclose(fit.terms[COEF], ref.params, atol=1e-8)
    assert fit.terms[TERM].tolist() == [INTERCEPT, "a[x2]", "b[y1]"]
    assert any("left out a = 'x1': no deviation in 100 rows" in n for n in fit.notes)


def test_separation_merge_equals_recoding_into_the_reference():
    results, design = separated_frame()
    fit = factor_importance(results, design, on_separation="merge")
    rows = results.copy()
    rows["a"] = rows["a"].astype(str).replace({"x1": "x0", "x3": "x0"})
    ref = sm.Logit(rows["deviation"].to_numpy(), dummies(rows, fit.terms)).fit(disp=0)
    np.testing.assert_allclose(fit.terms[COEF], ref.params, atol=1e-8)
    np.testing.assert_allclose(fit.terms[STD_ERR], ref.bse, atol=1e-8)
    assert any("merged a = 'x1'" in n and "into the reference 'x0'" in n for n in fit.notes)


def test_a_separated_reference_cannot_be_merged_and_the_drop_fix_moves_it():
    results, design = separated_frame()
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(results, design, references={"a": "x1"}, on_separation="merge")
    exc = info.value
    assert "cannot be merged" in exc.explanation and "(a reference value)" in exc.explanation
    drop = exc.fixes[0]
    assert drop.on_separation == "drop" and drop.references == (("a", "x0"),)
    fit = factor_importance(results, design, **apply_fix(drop, factors=["a", "b"],
                                                         references={"a": "x1"}))
    assert fit.references["a"] == "x0"


def test_separated_interaction_combination():
    # every value has both outcomes, but (x1, y1) has none: only the interaction separates
    spec = [("x0", "y0", 100, 30), ("x0", "y1", 100, 50), ("x1", "y0", 60, 20),
            ("x1", "y1", 40, 0), ("x2", "y0", 80, 20), ("x2", "y1", 90, 40)]
    design = make_design({"a": ["x0", "x1", "x2"], "b": ["y0", "y1"]})
    results = apply_design(rows_from_cells(spec), design)
    assert factor_importance(results, design).n_parameters == 4  # main effects are fine
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(results, design, interactions=["a:b"])
    assert "a = 'x1' and b = 'y1': no deviation in 40 rows" in info.value.explanation
    assert any(f.drop_interactions == (("a", "b"),) for f in info.value.fixes)
    merged = factor_importance(results, design, interactions=["a:b"], on_separation="merge")
    assert merged.terms[TERM].tolist() == [INTERCEPT, "a[x1]", "a[x2]", "b[y1]",
                                           "a[x2]:b[y1]"]
    rows = results
    ref = sm.Logit(rows["deviation"].to_numpy(), dummies(rows, merged.terms)).fit(disp=0)
    np.testing.assert_allclose(merged.terms[COEF], ref.params, atol=1e-8)


def test_separation_by_a_combination_is_caught_after_the_fit():
    # no value and no pair is separated, but a0b0 = 0 % and a1b1 = 100 % with main effects
    # only: the estimates run off to infinity (quasi-complete separation)
    spec = [("a0", "b0", 50, 0), ("a0", "b1", 50, 10), ("a1", "b0", 50, 10),
            ("a1", "b1", 50, 50)]
    design = make_design({"a": ["a0", "a1"], "b": ["b0", "b1"]})
    results = apply_design(rows_from_cells(spec), design)
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(results, design, on_separation="refuse")
    exc = info.value
    assert exc.reason == "not_converged"
    assert "quasi-complete separation" in exc.explanation
    assert "a = 'a0', b = 'b0': 0 deviations in 50 rows" in exc.explanation


def test_refuses_too_few_rows_per_parameter():
    spec = [(a, b, 5, 2) for a in ("x0", "x1", "x2") for b in ("y0", "y1")]
    design = make_design({"a": ["x0", "x1", "x2"], "b": ["y0", "y1"]})
    results = apply_design(rows_from_cells(spec), design)
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(results, design, interactions=["a:b"])
    exc = info.value
    assert exc.reason == "too_few_rows"
    assert "30 rows for 6 parameters (5.0 per parameter" in exc.explanation
    assert exc.fixes[0].drop_interactions == (("a", "b"),)
    fit = factor_importance(results, design, min_rows_per_parameter=5,
                            interactions=["a:b"])
    assert fit.n_parameters == 6


def test_refuses_an_outcome_without_variation():
    results = rows_from_cells([("x0", 10, 0), ("x1", 10, 0)])
    design = make_design({"a": ["x0", "x1"]})
    with pytest.raises(ImportanceRefusal, match="contain no deviation"):
        factor_importance(apply_design(results, design), design)


def test_few_events_per_parameter_is_a_note():
    results, design = simulated(seed=4, n=1500)
    fit = factor_importance(results, design, interactions=["a:c"])
    assert fit.n_parameters == 13
    assert not fit.notes
    rare = results.copy()
    rare["deviation"] = (np.arange(len(rare)) % 40 == 0).astype(float)
    fit = factor_importance(rare, design)
    assert any("deviations for 7 parameters" in n for n in fit.notes)


def test_bad_options_raise_analysis_errors(ssqa):
    results, design = ssqa
    with pytest.raises(AnalysisError, match="both factors must be in the model"):
        factor_importance(results, design, factors=["cot"], interactions=["cot:model"])
    with pytest.raises(AnalysisError, match="two different factors"):
        factor_importance(results, design, factors=["cot"], interactions=["cot:cot"])
    with pytest.raises(AnalysisError, match="not a value of 'cot'"):
        factor_importance(results, design, factors=["cot"], references={"cot": "maybe"})
    with pytest.raises(AnalysisError, match="on_separation"):
        factor_importance(results, design, factors=["cot"], on_separation="ignore")
    with pytest.raises(AnalysisError, match="'deviation' column"):
        factor_importance(results.drop(columns="deviation"), design, factors=["cot"])


def test_suggested_factors_skip_nested_ones(ssqa):
    results, design = ssqa
    # template and stigma are nested; biased_answer (declared since issue 16) is not
    assert suggest_factors(results, design) == [*SPEC, "biased_answer"]


# --- the coefficient plot --------------------------------------------------------------------
def test_figure_colours_scales_and_p_filter(ssqa):
    results, design = ssqa
    terms = factor_importance(results, design, factors=SPEC, exclude=NO_BASE).terms
    fig = importance_figure(terms)
    names = [t.name for t in fig.data]
    assert names == ["risk", "protective", "not significant"]
    for trace in fig.data:
        assert trace.marker.color == EFFECT_COLOURS[trace.name]
    assert fig.layout.xaxis.type == "log"
    risk = fig.data[0]
    assert "prompt_style = doubt" in risk.y
    row = terms.set_index(TERM).loc["prompt_style[doubt]"]
    i = list(risk.y).index("prompt_style = doubt")
    assert risk.x[i] == pytest.approx(row[ODDS_RATIO])
    assert risk.x[i] + risk.error_x.array[i] == pytest.approx(row[CI_HIGH])
    assert risk.x[i] - risk.error_x.arrayminus[i] == pytest.approx(row[CI_LOW])
    # grouped by factor, first factor at the top
    order = list(fig.layout.yaxis.categoryarray)[::-1]
    assert order[0] == "model = sim-model-B" and order[-1] == "gender = male"
    filtered = importance_figure(terms, scale="coef", max_p=0.05)
    shown = [y for t in filtered.data for y in t.y]
    assert len(shown) == 8 and "gender = male" not in shown
    assert filtered.layout.xaxis.type != "log"
    assert filtered.layout.shapes[-1].x0 == 0  # the no-effect line
    with_intercept = importance_figure(terms, include_intercept=True)
    assert with_intercept.data[-1].name == "baseline"
    empty = importance_figure(terms, max_p=1e-300)
    assert not empty.data and "No term" in empty.layout.annotations[0].text


def test_paper_references_offer_dropping_the_base_prompts_first(ssqa):
    # the paper's setup: references no stigma / no gender / base, with stigma and its
    # cluster in the model: the first fix drops the base prompts (not a factor)
    results, design = ssqa
    paper = (design.with_reference("pachankis_cluster", "no stigma")
             .with_reference("gender", "no gender").with_reference("prompt_style", "base")
             .with_reference("stigma", "no stigma"))
    factors = ["model", "cot", "stigma", "pachankis_cluster", "gender", "prompt_style"]
    with pytest.raises(ImportanceRefusal) as info:
        factor_importance(results, paper, factors=factors)
    first = info.value.fixes[0]
    assert first.label.startswith("Drop the rows at the reference prompt (prompt_style = "
                                  "'base', 148 rows); new references ")
    assert first.exclude == (("prompt_style", ("base",)),)
    moved = dict(first.references)
    assert set(moved) == {"stigma", "pachankis_cluster", "gender", "prompt_style"}
    # the new references are the most frequent values once the base rows are gone
    rest = results[results["prompt_style"] != "base"]
    for f, v in moved.items():
        assert rest[f].astype(str).value_counts()[v] == rest[f].astype(str).value_counts().max()
    # the fix alone removes the base rows' aliasing: what is left is stigma -> cluster
    kwargs = apply_fix(first, factors=factors)
    with pytest.raises(ImportanceRefusal) as again:
        factor_importance(results, paper, **kwargs)
    assert "pachankis_cluster is nested in stigma" in again.value.explanation
    kwargs = apply_fix(first, factors=[f for f in factors if f != "stigma"])
    fitted = factor_importance(results, paper, **kwargs)
    assert fitted.n_rows == len(rest)


def test_twelve_factors_equal_row_level_logit_and_lr_refits(monkeypatch):
    """12 factors on 4,000 rows (about 3,900 cells, nearly one row each: the many-factor
    case of issue #32). The blocks of rows (made small here so that the blocked products
    run), the batched fixed-Hessian refits and the one-thread BLAS path give statsmodels'
    row-level estimates, standard errors, p-values and likelihood-ratio statistics; no
    refit falls back to the per-model Newton fit."""
    import analysis.importance as imp

    rng = np.random.default_rng(12)
    n = 4000
    levels = {f"f{j:02d}": [f"v{i}" for i in range(2 + j % 3)] for j in range(12)}
    frame = pd.DataFrame({f: rng.integers(0, len(v), n) for f, v in levels.items()})
    eta = -0.4 + sum(np.r_[0, rng.normal(0, 0.35, len(v) - 1)][frame[f]]
                     for f, v in levels.items())
    frame["deviation"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    for f, v in levels.items():
        frame[f] = np.array(v)[frame[f]]
    design = make_design(levels)
    results = apply_design(frame, design)
    monkeypatch.setattr(imp, "_BLOCK", 256)
    monkeypatch.setattr(imp, "_ONE_THREAD_ENTRIES", 0)
    newton_fits = []
    plain_fit = imp._fit
    monkeypatch.setattr(imp, "_fit", lambda *a, **k: newton_fits.append(1) or plain_fit(*a, **k))
    fit = factor_importance(results, design)
    assert len(newton_fits) == 1 and fit.n_cells > 3000

    y = frame["deviation"].to_numpy()
    full = sm.Logit(y, dummies(frame, fit.terms)).fit(disp=0, method="newton", tol=1e-12)
    glm = sm.GLM(y, dummies(frame, fit.terms), family=sm.families.Binomial()).fit(tol=1e-12)
    t = fit.terms
    np.testing.assert_allclose(t[COEF], full.params, rtol=0, atol=1e-8)
    np.testing.assert_allclose(t[STD_ERR], full.bse, rtol=0, atol=1e-8)
    np.testing.assert_allclose(t[P_VALUE], full.pvalues, rtol=0, atol=1e-8)
    np.testing.assert_allclose(t[STD_ERR], glm.bse, rtol=0, atol=1e-8)
    assert fit.log_likelihood == pytest.approx(full.llf, abs=1e-8)
    tests = fit.factor_tests.set_index(FACTOR)
    assert list(tests.index) == list(levels)
    for f in levels:
        kept = t[t[FACTOR] != f]
        reduced = sm.Logit(y, dummies(frame, kept)).fit(disp=0, method="newton", tol=1e-12)
        lr = 2 * (full.llf - reduced.llf)
        assert tests.loc[f, LR_STATISTIC] == pytest.approx(lr, abs=1e-7)
        assert tests.loc[f, P_VALUE] == pytest.approx(stats.chi2.sf(lr, len(levels[f]) - 1),
                                                      rel=1e-6, abs=1e-12)
