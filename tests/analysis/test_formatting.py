"""p-values as people read them (analysis/formatting.py)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from analysis.formatting import format_p, is_p_column


@pytest.mark.parametrize(("p", "text"), [
    (1.0, "1"), (0.5, "0.5"), (0.0342, "0.034"), (0.0001, "0.0001"), (9.87e-5, "9.9e-5"),
    (1.234e-70, "1.2e-70"), (0.0, "<1e-300"), (1e-300, "<1e-300"), (2e-300, "2.0e-300"),
    (math.nan, ""), (None, ""),
])
def test_format_p(p, text):
    assert format_p(p) == text


def test_a_real_chi_square_p_value_is_short():
    table = [[900, 100], [100, 900]]
    p = stats.chi2_contingency(table, correction=False).pvalue
    assert 0 < p < 1e-200 and format_p(p) == f"{p:.1e}"  # e.g. 3.4e-291
    assert len(format_p(p)) <= 8


def test_p_columns_are_recognised():
    assert [c for c in ["p", "p_value", "p_adjusted", "perm_p", "n", "pachankis_cluster",
                        "ks_p_value"] if is_p_column(c)] == \
        ["p", "p_value", "p_adjusted", "perm_p", "ks_p_value"]


def test_p_value_columns_config_only_for_float_p_columns():
    from ui.widgets import p_value_columns

    table = pd.DataFrame({"p_value": [1e-70], "p_note": ["x"], "statistic": [3.0]})
    assert list(p_value_columns(table)) == ["p_value"]
