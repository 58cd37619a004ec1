"""Options of factor importance for a continuous outcome (``analysis.importance_linear``:
the linear / mixed model, and numeric covariates in the logistic model). They are flags
of the ``importance`` command (help section "continuous outcome") beside
:class:`analysis.options.importance.ImportanceOptions`; the fit's own options (``alpha``,
``adjust``, ``confidence``, ``cluster``) are that class's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.options import Options, register
from analysis.options.common import option

__all__ = ["OUTCOME_TYPES", "LinearOptions", "RANDOM_EFFECTS"]

OUTCOME_TYPES = ("auto", "binary", "continuous")
RANDOM_EFFECTS = ("slopes", "intercept")
_GROUP = "continuous outcome (linear / mixed model)"


@register
@dataclass(frozen=True, kw_only=True)
class LinearOptions(Options):
    """Linear (cluster-robust) or mixed model of a continuous score (methods.md §4b)."""

    NAME = "importance_linear"
    COMMAND = "importance"

    outcome_type: str = option(
        "auto", "binary: logistic model of the 0/1 deviation; continuous: linear model of the "
        "score itself; auto (default): continuous when the design declares it",
        choices=OUTCOME_TYPES, group=_GROUP, call=False, label="Outcome")
    covariates: tuple[str, ...] = option(
        (), "numeric covariate beside the factors (repeatable; default for a continuous "
        "outcome: the design's covariates); in the logistic model too", flag="covariate",
        repeat=True, metavar="COL", group=_GROUP, label="Numeric covariates")
    no_covariates: bool = option(False, "continuous outcome: no covariate, not even the "
                                 "design's", group=_GROUP, call=False,
                                 label="No covariates")
    standardise: bool = option(
        True, "enter covariates as they are (default: standardised, (x - mean) / sd)",
        negate="raw-covariates", group=_GROUP,
        label="Standardise covariates ((x - mean) / sd)")
    mixed: bool = option(False, "mixed model with random effects per cluster (statsmodels "
                         "MixedLM)", group=_GROUP, label="Mixed model (random effects per "
                                                             "cluster)")
    random_effects: str = option(
        "slopes", "--mixed: random intercept and slopes of every term (default, lm-eval's "
        "DiscrimEval model) or a random intercept only", choices=RANDOM_EFFECTS,
        group=_GROUP, label="Random effects")
    accept_unconverged: bool = option(
        False, "--mixed: report a fit that did not converge (with a note) instead of refusing "
        "it", group=_GROUP, label="Accept a mixed fit that did not converge")

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`analysis.importance_linear.linear_importance`
        (``covariates`` None: the design's; ``random_slopes`` from ``random_effects``)."""
        return {"covariates": [] if self.no_covariates else (list(self.covariates) or None),
                "standardise": self.standardise, "mixed": self.mixed,
                "random_slopes": self.random_effects == "slopes",
                "accept_unconverged": self.accept_unconverged}
