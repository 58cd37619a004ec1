"""A permutation p-value at its floor 1 / (m + 1) is a bound, printed "<= 0.0001" (issue 38
item 5): in format_p, in the KS table's note (shown by the CLI, JSON, pages and report)
and in the report's tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis.columns import DEVIATION_RATE, P_VALUE
from analysis.ecdf import ks_tests
from analysis.formatting import format_p, permutation_floors
from analysis.report_text import display_table


def test_format_p_with_a_floor():
    assert format_p(1 / 10000, floor=1 / 10000) == "<= 0.0001"
    assert format_p(2 / 10000, floor=1 / 10000) == "0.0002"
    assert format_p(1 / 10000) == "0.0001"  # no floor known: the number


def _separated_ties() -> pd.DataFrame:
    """Two curves of 40 tied rates each that never overlap: every random split has a
    smaller KS statistic than the observed 1, so p = 1 / (m + 1)."""
    xa = np.repeat([0.0, 0.1], 20)
    xb = np.repeat([0.5, 0.6], 20)
    return pd.DataFrame({"model": ["a"] * 40 + ["b"] * 40, DEVIATION_RATE: np.r_[xa, xb]})


def test_ks_permutation_p_at_its_floor_is_a_bound():
    rates = _separated_ties()
    # every split drawn (the sequential default settles this clear case by its tail bound)
    ks = ks_tests(rates, by="model", n_resamples=9999, seed=0, adaptive=False)
    row = ks.iloc[0]
    assert row["method"] == "permutation (ties)" and row[P_VALUE] == 1 / 10000
    # the exact p of this split is far smaller (scipy's continuous-data p here)
    assert stats.ks_2samp(rates[DEVIATION_RATE][:40], rates[DEVIATION_RATE][40:]).pvalue < 1e-15
    assert "p at its floor 1/(9,999 + 1): p <= 0.0001 (a bound" in row["note"]
    assert permutation_floors(ks) == [1 / 10000]
    shown = display_table(ks)
    assert shown.iloc[0][[c for c in shown.columns if c.lower().startswith("p")][0]] \
        == "<= 0.0001"
