"""Options of the eCDF analysis (``analysis.ecdf``: subgroup rates per curve, the
deviation metric, KS tests; the bootstrap of the metric; the ``ecdf`` command, the eCDF
page, the report's ecdf section)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.options import register
from analysis.options.common import (
    BootstrapOptions,
    adjust_option,
    confidence_option,
    option,
)
from analysis.options.types import FINITE_FLOAT, POSITIVE_INT

__all__ = ["EcdfOptions"]


@register
@dataclass(frozen=True, kw_only=True)
class EcdfOptions(BootstrapOptions):
    """Deviation metric per curve and two-sample KS tests (methods.md §5)."""

    NAME = "ecdf"
    COMMAND = "ecdf"
    FROM_DATA = ("level",)

    level: int | None = option(None, "factors fixed per subgroup (default: all of --factors)",
                               type=POSITIVE_INT, label="Factors fixed per subgroup")
    ideal: float = option(0.0, "ideal value C of the deviation metric (default %(default)s)",
                          type=FINITE_FLOAT, label="Ideal value C")
    cutoff: float = option(0.2, "'no bias' cutoff drawn and counted (default %(default)s)",
                           type=FINITE_FLOAT, label="Cutoff line")
    # the KS permutation p-value's random splits: a count of its own beside the bootstrap's
    ks_resamples: int = option(
        9999, "random splits of the KS permutation p-value with tied rates, when the splits "
        "are too many to enumerate (default %(default)s)", flag="resamples", type=POSITIVE_INT,
        metavar="N", label="KS random splits")
    adjust: str = adjust_option("the pairs of curves (KS tests)")
    pooled: bool = option(
        False, "the curves and the deviation metric from partially pooled subgroup rates "
        "(each curve's subgroups pooled over the factors, docs/pooling.md; the raw metric "
        "beside, the KS tests on the raw rates)", call=False,
        label="Pooled subgroup rates (partial pooling)")
    confidence: float = confidence_option()
