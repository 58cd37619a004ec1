"""The multiple-testing step of factor importance (logistic and linear): which method
computes ``p_adjusted`` for an ``adjust`` option, and the factor tests' adjusted columns.

Importance's ``adjust`` takes every method of :mod:`analysis.multiple_testing` plus
``"none"``, its older meaning: the risk / protective (higher / lower) labels use the
unadjusted ``p_value`` while ``p_adjusted`` stays Benjamini-Hochberg (docs/importance.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.columns import P_ADJUSTED, P_ADJUSTED_LR, P_VALUE, P_VALUE_LR
from analysis.multiple_testing import adjust_p

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["adjust_tests", "adjusted_by", "adjustment_sentence"]


def adjusted_by(adjust: str) -> str:
    """The method of ``p_adjusted`` for importance's ``adjust`` (``"none"``: ``"bh"``).

    Examples
    --------
    >>> adjusted_by("holm"), adjusted_by("none")
    ('holm', 'bh')
    """
    return "bh" if adjust == "none" else adjust


def adjust_tests(tests: pd.DataFrame, adjust: str) -> pd.DataFrame:
    """The factor tests with ``p_adjusted`` (and ``p_adjusted_lr``) by the method of
    ``adjust`` over the tests of the column (each its own family). Benjamini-Hochberg,
    which the tests are computed with, returns ``tests`` itself."""
    method = adjusted_by(adjust)
    if method == "bh" or len(tests) == 0:
        return tests
    out = tests.copy()
    for p_col, adj_col in ((P_VALUE, P_ADJUSTED), (P_VALUE_LR, P_ADJUSTED_LR)):
        if p_col in out.columns and adj_col in out.columns:
            out[adj_col] = adjust_p(out[p_col].to_numpy(dtype=float), method)
    return out


def adjustment_sentence(adjust: str, alpha: float) -> str:
    """What the terms' p-values are and which the labels use, in words (the CLI's and the
    report's sentence; the page says the same from the Result's ``settings``).

    Examples
    --------
    >>> adjustment_sentence("holm", 0.05).split("; ")[1:]
    ['p_adjusted is the Holm adjustment over the terms', 'the labels use p_adjusted < 0.05.']
    """
    from analysis.multiple_testing import NAMES

    return (f"p_value is per term and not adjusted for multiple testing; p_adjusted is the "
            f"{NAMES[adjusted_by(adjust)]} adjustment over the terms; the labels use "
            f"{'p_value' if adjust == 'none' else 'p_adjusted'} < {alpha:g}.")
