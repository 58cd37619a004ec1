"""Options of the subgroups analysis (``analysis.subgroups.subgroups``, the bootstrap of
LD, the judge noise and the power columns; the ``subgroups`` command, the Subgroups page,
the report's subgroups section)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.options import register
from analysis.options.common import (
    BootstrapOptions,
    ClusterOptions,
    NoiseOptions,
    adjust_option,
    confidence_option,
    noise_alpha_option,
    option,
)
from analysis.options.types import FINITE_FLOAT, NON_NEGATIVE_FLOAT, NON_NEGATIVE_INT, POSITIVE_INT

__all__ = ["SubgroupsOptions", "TESTS"]

#: p-value of a subgroup (``analysis.subgroups.TESTS``, literal here: no pandas import).
TESTS = ("auto", "wald", "fisher")

_POWER = "power"


@register
@dataclass(frozen=True, kw_only=True)
class SubgroupsOptions(ClusterOptions, BootstrapOptions, NoiseOptions):
    """Log disparity of every subgroup up to a level (methods.md §2-3)."""

    NAME = "subgroups"
    COMMAND = "subgroups"
    FROM_DATA = ("level",)

    level: int | None = option(
        None, "highest subgroup level (1 = one factor fixed; default 2, or 1 with a single "
        "factor)", type=POSITIVE_INT, label="Highest level")
    test: str = option(
        "auto", "p-value: auto (default: Fisher's exact for small-n subgroups and tables "
        "with a zero cell, Wald elsewhere), wald or fisher", choices=TESTS, label="p-value")
    confidence: float = confidence_option()
    adjust: str = adjust_option("the distinct subgroups (and a continuous outcome's group "
                                "means over the non-reference values)")
    min_n: int = option(30, "flag subgroups with fewer rows (default %(default)s)",
                        type=NON_NEGATIVE_INT, label="Small n below")
    min_expected: float = option(
        5.0, "flag 2x2 tables with a smaller expected count (default %(default)s)",
        type=NON_NEGATIVE_FLOAT, label="Small expected count below")
    pooled: bool = option(
        False, "add partially pooled estimates beside the raw ones (rate_pooled, ld_pooled "
        "and their intervals: a multilevel model over the factors, docs/pooling.md); the "
        "sunburst and the top findings then use the pooled values", call=False,
        label="Pooled estimates for thin subgroups (partial pooling)")
    noise_alpha: float = noise_alpha_option()
    power: float | None = option(
        None, "add mde_log_disparity: the smallest |LD| each subgroup detects with power P "
        "(e.g. 0.8) at the two-sided 0.05 level", type=FINITE_FLOAT, metavar="P", group=_POWER,
        call=False, label="Power")
    effect: float | None = option(
        None, "with --power: add detectable (MDE <= |LD|)", type=FINITE_FLOAT, metavar="LD",
        group=_POWER, call=False, label="Target |LD|")

    def kwargs(self) -> dict[str, object]:
        """The keyword arguments of :func:`analysis.subgroups.subgroups` (``max_level``
        for ``level``; the bootstrap's and the noise's are apart)."""
        return {"max_level": self.level, "test": self.test, "confidence": self.confidence,
                "min_n": self.min_n, "min_expected": self.min_expected,
                "cluster": self.cluster, "small_sample": self.small_sample,
                "adjust": self.adjust}
