"""Variance components when the outcome is a function of the template (no residual
variance): the covariance's finite-difference steps underflow; the fit returns instead of
raising (the Planner page's measurement-error section crashed on such a table)."""

from __future__ import annotations

import analysis.api as bw
from tests.analysis.test_generate_variants_loop import gendered_design, ssqa_gendered


def test_an_outcome_fixed_by_the_template_does_not_crash():
    frame = ssqa_gendered().assign(model="mut-1", answer="no")
    deviates = frame["answer"] == frame["biased_answer"]
    # every template's rows deviate all or none: nothing varies within a template
    assert deviates.groupby(frame["template"]).nunique().eq(1).all()
    result = bw.variance_components(frame, gendered_design(frame))
    variance = result.table.set_index("component")["variance"]
    assert variance["residual"] < 1e-12
