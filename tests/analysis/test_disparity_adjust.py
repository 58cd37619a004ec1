"""Disparity's ``adjust`` option (issue 37 item 3): the permutation tests' ``p_adjusted``
is statsmodels ``multipletests`` of their p-values for every method; the Result's
settings and the report's header name it; the default is Benjamini-Hochberg, unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from analysis import api as bw
from analysis.design import Design, Factor
from analysis.disparity import permutation_test
from analysis.errors import AnalysisError
from analysis.multiple_testing import METHODS
from analysis.options.disparity import DisparityOptions
from analysis.subgroups import benjamini_hochberg

SM = {"bh": "fdr_bh", "by": "fdr_by", "holm": "holm", "bonferroni": "bonferroni",
      "hommel": "hommel"}


def _rows(seed: int = 2, n: int = 1200) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = rng.choice(list("abcdef"), n)
    shift = pd.Series(g).map(dict(zip("abcdef", [0, 0.15, -0.1, 0.05, 0.3, 0.0],
                                      strict=True)))
    return pd.DataFrame({"g": g, "score": rng.normal(0, 1, n) + shift})


@pytest.mark.parametrize("method", METHODS)
def test_permutation_p_adjusted_is_multipletests(method):
    out = permutation_test(_rows(), "score", "g", n_resamples=199, seed=1, adjust=method)
    expected = multipletests(out["p_value"], method=SM[method])[1]
    np.testing.assert_allclose(out["p_adjusted"], expected, rtol=1e-12)


def test_default_is_bh_and_bit_identical():
    rows = _rows()
    out = permutation_test(rows, "score", "g", n_resamples=199, seed=1)
    assert np.array_equal(out["p_adjusted"].to_numpy(), benjamini_hochberg(out["p_value"]))
    holm = permutation_test(rows, "score", "g", n_resamples=199, seed=1, adjust="holm")
    assert np.array_equal(out["p_value"].to_numpy(), holm["p_value"].to_numpy())
    with pytest.raises(AnalysisError, match="Unknown p-value adjustment"):
        permutation_test(rows, "score", "g", n_resamples=19, adjust="sidak")


def test_the_result_and_its_settings_name_the_method():
    rows = _rows()
    design = Design(factors=(Factor("g", "domain", tuple("abcdef"), "a"),))
    result = bw.disparity(rows, design, feature="score", by="g", applied=True,
                          options=DisparityOptions(adjust="bonferroni", n_resamples=99))
    assert result.settings["adjust"] == "bonferroni"
    perm = result.tables["permutation"]
    np.testing.assert_allclose(perm["p_adjusted"],
                               np.minimum(perm["p_value"] * perm["p_value"].notna().sum(), 1))
    default = bw.disparity(rows, design, feature="score", by="g", applied=True,
                           options=DisparityOptions(n_resamples=99))
    assert default.settings["adjust"] == "bh"
