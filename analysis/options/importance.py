"""Options of factor importance (``analysis.importance.factor_importance``; the
``importance`` command, the Importance page, the report's importance section)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.multiple_testing import methods_text
from analysis.options import register
from analysis.options.common import ADJUST_METHODS, ClusterOptions, NoiseOptions, option
from analysis.options.types import NON_NEGATIVE_INT, PROBABILITY, UNIT_INTERVAL

__all__ = ["ImportanceOptions", "SEPARATION"]

#: What to do with values whose rows are all (or none) deviations.
SEPARATION = ("refuse", "drop", "merge")


@register
@dataclass(frozen=True, kw_only=True)
class ImportanceOptions(ClusterOptions, NoiseOptions):
    """Logistic regression of deviation on the factors (methods.md §4)."""

    NAME = "importance"
    COMMAND = "importance"

    interactions: tuple[str, ...] = option(
        (), "two-factor interaction (repeatable)", flag="interaction", repeat=True,
        metavar="A:B", label="Two-factor interactions")
    on_separation: str = option(
        "refuse", "values with no or only deviations: refuse (default), drop their rows, or "
        "merge them into the reference", choices=SEPARATION,
        label="Values with no or only deviations (separation)")
    alpha: float = option(
        0.05, "p-value threshold of the risk/protective labels (default %(default)s)",
        type=PROBABILITY, label="Significance level")
    adjust: str = option(
        "bh", "adjust the p-values over the terms (and the factor tests), and label the "
        f"terms risk/protective by them: {methods_text(default='bh')}; or none (label by "
        "the unadjusted p; p_adjusted stays Benjamini-Hochberg)",
        choices=(*ADJUST_METHODS, "none"), label="Adjusted p-values by")
    confidence: float = option(0.95, "CI level (default %(default)s)", type=PROBABILITY,
                               label="Confidence level")
    likelihood_ratio: bool = option(True, "skip the likelihood-ratio tests", negate="no-lr",
                                    label="Likelihood-ratio tests")
    gee: bool = option(False, "with a cluster: GEE fit with exchangeable correlation",
                       label="GEE (exchangeable correlation)")
    seed: int = option(0, "random seed (default %(default)s)", type=NON_NEGATIVE_INT,
                       group="judge noise (results tables of a judge run with --samples K)",
                       call=False)
    scale: str = option("odds_ratio", "x axis of --figure (default %(default)s)",
                        choices=("odds_ratio", "coef"), call=False, label="Scale")
    max_p: float | None = option(None, "--figure shows only terms with p <= this",
                                 type=UNIT_INTERVAL, call=False, label="Show terms with p at most")
