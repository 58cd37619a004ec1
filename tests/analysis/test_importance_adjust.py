"""Factor importance's ``adjust`` option (issue 37 item 3): every method of the
multiple-testing kernel computes ``p_adjusted`` over the terms (= statsmodels
``multipletests`` on the term p-values) and the factor tests, the labels follow it, the
header and the sentence name it; ``"none"`` keeps its old meaning (labels by the raw p,
``p_adjusted`` Benjamini-Hochberg)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from analysis import api as bw
from analysis.columns import COEF, EFFECT, P_ADJUSTED, P_ADJUSTED_LR, P_VALUE, P_VALUE_LR
from analysis.design import Design, Factor, Outcome, apply_design
from analysis.errors import AnalysisError
from analysis.importance import factor_importance
from analysis.importance_linear import linear_importance
from analysis.multiple_testing import METHODS
from analysis.options.importance import ImportanceOptions
from analysis.report_text import header
from analysis.subgroups import benjamini_hochberg

SM = {"bh": "fdr_bh", "by": "fdr_by", "holm": "holm", "bonferroni": "bonferroni",
      "hommel": "hommel"}


def _binary(seed: int = 3, n: int = 3000) -> tuple[pd.DataFrame, Design]:
    rng = np.random.default_rng(seed)
    levels = {"a": ["a0", "a1", "a2", "a3", "a4"], "b": ["b0", "b1", "b2"]}
    eff = {"a": [0, 0.25, -0.2, 0.1, 0.35], "b": [0, 0.15, -0.1]}
    codes = {f: rng.integers(0, len(v), n) for f, v in levels.items()}
    eta = -0.6 + sum(np.array(eff[f])[codes[f]] for f in levels)
    frame = pd.DataFrame({f: np.array(v)[codes[f]] for f, v in levels.items()})
    frame["deviation"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    frame["g"] = rng.integers(0, 30, n).astype(str)
    design = Design(factors=tuple(Factor(f, "domain", tuple(v), v[0])
                                  for f, v in levels.items()),
                    outcome=Outcome("deviation", "above", threshold=0.5))
    return apply_design(frame, design), design


def _continuous(seed: int = 4, n: int = 2000) -> tuple[pd.DataFrame, Design]:
    rng = np.random.default_rng(seed)
    a = rng.choice(["x", "y", "z", "w"], n)
    frame = pd.DataFrame({"a": a, "score": rng.normal(0, 1, n)
                          + pd.Series(a).map({"x": 0, "y": 0.08, "z": -0.1, "w": 0.05})})
    design = Design(factors=(Factor("a", "domain", ("x", "y", "z", "w"), "x"),),
                    outcome=Outcome("score", "above", threshold=0.0, type="continuous"))
    return frame, design


@pytest.fixture(scope="module")
def binary():
    return _binary()


@pytest.mark.parametrize("method", METHODS)
def test_logistic_p_adjusted_is_multipletests_and_labels_follow(binary, method):
    results, design = binary
    fit = factor_importance(results, design, cluster=None, adjust=method, alpha=0.05)
    t = fit.terms
    p = t[P_VALUE].iloc[1:].to_numpy()
    expected = multipletests(p, method=SM[method])[1]
    np.testing.assert_allclose(t[P_ADJUSTED].iloc[1:], expected, rtol=1e-12, atol=0)
    assert np.isnan(t[P_ADJUSTED].iloc[0])
    risk = (t[P_ADJUSTED] < 0.05) & (t[COEF] > 0)
    protective = (t[P_ADJUSTED] < 0.05) & (t[COEF] < 0)
    assert (t[EFFECT].iloc[1:] == "risk").equals(risk.iloc[1:])
    assert (t[EFFECT].iloc[1:] == "protective").equals(protective.iloc[1:])
    tests = fit.factor_tests
    np.testing.assert_allclose(tests[P_ADJUSTED],
                               multipletests(tests[P_VALUE], method=SM[method])[1], rtol=1e-12)
    assert fit.summary()["adjust"] == method


def test_methods_give_different_numbers_and_the_default_is_bh_unchanged(binary):
    results, design = binary
    default = factor_importance(results, design, cluster=None)
    bh = factor_importance(results, design, cluster=None, adjust="bh")
    pd.testing.assert_frame_equal(default.terms, bh.terms)
    p = default.terms[P_VALUE].iloc[1:].to_numpy()
    # bit-identical to the BH the column was computed with before the option
    assert np.array_equal(default.terms[P_ADJUSTED].iloc[1:].to_numpy(),
                          benjamini_hochberg(p))
    bonf = factor_importance(results, design, cluster=None, adjust="bonferroni").terms
    np.testing.assert_allclose(bonf[P_ADJUSTED].iloc[1:], np.minimum(p * len(p), 1))
    assert (bonf[P_ADJUSTED].iloc[1:] >= default.terms[P_ADJUSTED].iloc[1:]).all()
    assert not np.allclose(bonf[P_ADJUSTED].iloc[1:], default.terms[P_ADJUSTED].iloc[1:])


def test_none_labels_by_the_raw_p_and_keeps_bh(binary):
    results, design = binary
    fit = factor_importance(results, design, cluster=None, adjust="none", alpha=0.05)
    t = fit.terms
    np.testing.assert_allclose(t[P_ADJUSTED].iloc[1:],
                               multipletests(t[P_VALUE].iloc[1:], method="fdr_bh")[1])
    raw = (t[P_VALUE] < 0.05) & (t[COEF] > 0)
    assert (t[EFFECT].iloc[1:] == "risk").equals(raw.iloc[1:])


def test_clustered_factor_tests_adjust_both_columns(binary):
    results, design = binary
    fit = factor_importance(results, design, cluster="g", adjust="holm")
    tests = fit.factor_tests
    for p_col, adj_col in ((P_VALUE, P_ADJUSTED), (P_VALUE_LR, P_ADJUSTED_LR)):
        np.testing.assert_allclose(tests[adj_col],
                                   multipletests(tests[p_col], method="holm")[1], rtol=1e-12)


@pytest.mark.parametrize("method", ["holm", "by", "hommel"])
def test_linear_p_adjusted_is_multipletests(method):
    frame, design = _continuous()
    fit = linear_importance(frame, design, cluster=None, adjust=method)
    t = fit.terms
    np.testing.assert_allclose(t[P_ADJUSTED].iloc[1:],
                               multipletests(t[P_VALUE].iloc[1:], method=SM[method])[1],
                               rtol=1e-12)
    higher = (t[P_ADJUSTED] < 0.05) & (t[COEF] > 0)
    assert (t[EFFECT].iloc[1:] == "higher").equals(higher.iloc[1:])
    tests = fit.factor_tests
    np.testing.assert_allclose(tests[P_ADJUSTED],
                               multipletests(tests[P_VALUE], method=SM[method])[1])


def test_an_unknown_method_is_refused(binary):
    results, design = binary
    with pytest.raises(AnalysisError, match="adjust must be one of"):
        factor_importance(results, design, cluster=None, adjust="fdr")


def test_the_option_the_header_and_the_sentence_name_the_method(binary):
    assert set(ImportanceOptions.choices("adjust")) == {*METHODS, "none"}
    assert ImportanceOptions.default("adjust") == "bh"
    results, design = binary
    result = bw.importance(results, design, options=ImportanceOptions(adjust="holm",
                                                                      cluster=None),
                           applied=True)
    assert result.settings["adjust"] == "holm"
    assert header("p_adjusted", "holm") == "p (Holm)"
    sentence = bw.importance_adjustment_sentence("holm", 0.05)
    assert "p_adjusted is the Holm adjustment over the terms" in sentence
    assert sentence.endswith("the labels use p_adjusted < 0.05.")
    none = bw.importance_adjustment_sentence("none", 0.01)
    assert "Benjamini-Hochberg adjustment" in none and none.endswith("p_value < 0.01.")
