"""Options of the G-study and the D-study (``analysis/variance_components.py``,
``analysis/d_study.py``; the ``variance`` command, ``plan --d-study``, the Planner page's
measurement-error section, the report's variance section; docs/measurement_error.md).

Which facets are random is an option (``facet``, repeatable; default: the design's
cluster and the replicate / seed / temperature / judge columns of the table); the
model and domain factors stay fixed."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.options import Options, option, register
from analysis.options.common import confidence_option
from analysis.options.types import NON_NEGATIVE_FLOAT, NON_NEGATIVE_INT, POSITIVE_FLOAT

__all__ = ["DStudyOptions", "VarianceOptions"]

_GROUP = "variance components"
_D_GROUP = "design study"


@register
@dataclass(frozen=True, kw_only=True)
class VarianceOptions(Options):
    """REML variance components of the random facets and total-error intervals."""

    NAME = "variance_components"
    COMMAND = "variance"
    FUNCTION = "analysis.api:variance_components"

    facets: tuple[str, ...] = option(
        (), "a random facet: a column whose levels are a sample of many possible ones "
        "(template, seed, judge, paraphrase; repeatable; default: the design's cluster and "
        "the seed / sample / temperature / judge columns)", flag="facet", repeat=True,
        metavar="COL", group=_GROUP, label="Random facets")
    score_column: str | None = option(
        None, "a numeric column to decompose instead of the 0/1 deviation (a continuous "
        "score)", metavar="COL", group=_GROUP, label="Numeric score (instead of deviation)")
    interactions: bool = option(
        True, "no facet x model interaction components", negate="no-interactions",
        group=_GROUP, label="Facet x model interactions")
    n_resamples: int = option(
        100, "parametric bootstrap draws of the components' intervals (0: none; default "
        "%(default)s)", flag="n-boot", type=NON_NEGATIVE_INT, metavar="B", group=_GROUP,
        label="Bootstrap draws")
    confidence: float = confidence_option()
    seed: int = option(0, "random seed of the bootstrap (default %(default)s)",
                       type=NON_NEGATIVE_INT, group=_GROUP, label="Seed")


@register
@dataclass(frozen=True, kw_only=True)
class DStudyOptions(VarianceOptions):
    """Projected SE and cost of other designs, the cheapest design reaching a target SE."""

    NAME = "d_study"
    COMMAND = "plan"
    FUNCTION = "analysis.api:d_study"

    n_resamples: int = option(
        0, "parametric bootstrap draws of the components' intervals (default %(default)s: "
        "the D-study uses the estimates)", flag="n-boot", type=NON_NEGATIVE_INT,
        metavar="B", group=_GROUP, label="Bootstrap draws")
    target_se: float | None = option(
        None, "the standard error wanted for the target number (the cheapest design "
        "reaching it is shown)", type=POSITIVE_FLOAT, metavar="SE", group=_D_GROUP,
        label="Target standard error")
    target: str = option(
        "auto", "the number whose SE is targeted: difference between models, a model's "
        "rate (default auto: difference with two or more models)",
        choices=("auto", "difference", "rate"), group=_D_GROUP, label="Target number")
    answer_cost: float = option(
        1.0, "cost of one prompt answered (default %(default)s)", type=NON_NEGATIVE_FLOAT,
        group=_D_GROUP, label="Cost per prompt answered")
    judge_cost: float = option(
        0.0, "cost of one judge call (default %(default)s; the Judges page's cost model "
        "gives it in dollars)", type=NON_NEGATIVE_FLOAT, group=_D_GROUP,
        label="Cost per judge call")


