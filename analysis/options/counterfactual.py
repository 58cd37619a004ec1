"""Options of the counterfactual pairs (``analysis.counterfactual.counterfactual_pairs``;
the ``counterfactual`` command, the Counterfactual page, the report's counterfactual
section). What is swapped (``swap``, ``reference``, ``values``, ``unit``, ``template``,
``score``, ``text``) is the analysis's input, not an option."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.multiple_testing import methods_text
from analysis.options import FROM_DESIGN, Options, option, register
from analysis.options.compare import ADJUSTMENTS, DUPLICATE_RULES, MCNEMAR_TESTS
from analysis.options.features import name_list
from analysis.options.types import PROBABILITY

__all__ = ["CounterfactualOptions", "TEXT_MEASURES"]

#: Kept literal here (no pandas): ``analysis.counterfactual.MEASURES``.
TEXT_MEASURES = ("sentiment_difference", "rouge_l", "embedding_distance")


@register
@dataclass(frozen=True, kw_only=True)
class CounterfactualOptions(Options):
    """Counterfactual pairs: one factor swapped within its template (docs/counterfactual.md)."""

    NAME = "counterfactual"
    COMMAND = "counterfactual"
    FUNCTION = "analysis.counterfactual:counterfactual_pairs"

    test: str = option(
        "auto", "McNemar without a cluster: auto (default: exact binomial below 25 "
        "discordant pairs, chi-square with continuity correction otherwise), exact or chi2",
        choices=MCNEMAR_TESTS, label="McNemar's test")
    adjust: str = option(
        "holm", "adjust the p-values of the values together: "
        + methods_text(ADJUSTMENTS, default="holm"), choices=ADJUSTMENTS,
        label="Values adjusted by")
    cluster: str | None = option(
        FROM_DESIGN, "pairs sharing COL are correlated (default: the design's cluster, else "
        "the template column): Durkalski's clustered McNemar, CR2 intervals with "
        "Satterthwaite df", cluster=True, label="Cluster (pairs sharing it are correlated)")
    duplicates: str = option(
        "mean", "a prompt answered twice under one value: mean (default, averaged) or refuse",
        choices=DUPLICATE_RULES, label="A prompt answered twice")
    confidence: float = option(0.95, "interval level (default %(default)s)", type=PROBABILITY,
                               label="Confidence level")
    measures: tuple[str, ...] = option(
        TEXT_MEASURES[:2], f"with a text column: comma-separated, from "
        f"{', '.join(TEXT_MEASURES)} (default: the first two; embedding_distance loads the "
        "offline MiniLM)", type=name_list, metavar="A,B", label="Text measures")
