"""Helpers for a team's own test suite (``docs/checks.md``)::

    from analysis.testing import assert_bias_checks

    def test_release_candidate_is_not_more_biased():
        assert_bias_checks("results.parquet", "design.yaml", "criteria.yaml",
                           baseline="baseline.parquet")
"""

from __future__ import annotations

from typing import Any

from analysis.gate import FAIL, UNCERTAIN, CheckReport

__all__ = ["assert_bias_checks"]


def assert_bias_checks(results: Any, design: Any, criteria: Any, *, baseline: Any = None,
                       allow_uncertain: bool = False) -> CheckReport:
    """Evaluate the criteria (as ``bias-workbench check`` does) and raise
    ``AssertionError`` with the Markdown summary when the gate does not pass.

    Parameters
    ----------
    results, design, criteria
        The results table (path or DataFrame), its design (path, Design or mapping) and
        the criteria file (path or its content).
    baseline
        A baseline run for ``compare: baseline`` criteria.
    allow_uncertain
        Let criteria that are too uncertain to decide pass (default: they fail, as exit
        code 3 fails a CI job).

    Returns
    -------
    CheckReport
        The evaluated criteria (when the gate passes).

    Raises
    ------
    AssertionError
        A criterion failed (or a required one was not evaluated), or one is uncertain
        and ``allow_uncertain`` is False.
    analysis.gate.CriteriaError, analysis.errors.AnalysisError
        Bad input (the criteria file, the results, the design).
    """
    from analysis.api import check

    report = check(results, design, criteria=criteria, baseline=baseline).raw
    if report.verdict == FAIL or (report.verdict == UNCERTAIN and not allow_uncertain):
        raise AssertionError(f"bias checks: {report.verdict}\n\n{report.markdown()}")
    return report
