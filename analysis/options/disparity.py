"""Options of the disparity analysis (``analysis.disparity.disparity_report``; the
``disparity`` command, the Disparity page, the report's disparity section) and of its
SAGED statistics (``analysis.saged_stats``; the page's "SAGED statistics" section, the
command's ``saged_statistics`` JSON)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.options import Options, option, register
from analysis.options.common import adjust_option
from analysis.options.types import (
    FINITE_FLOAT,
    NON_NEGATIVE_FLOAT,
    NON_NEGATIVE_INT,
    POSITIVE_FLOAT,
    POSITIVE_INT,
    UNIT_INTERVAL,
    float_in,
)

__all__ = ["POLARITY_FROM_DESIGN", "SAGED_FIELDS", "DisparityOptions", "SagedOptions"]

#: Kept literal here (no pandas): ``analysis.disparity``'s ``STATISTICS``, ``STANDARDS``,
#: ``DIRECTIONS``, ``COMPARISONS``, ``COMPARES``, ``CONVENTIONS``, ``DIXON_ALPHAS`` and
#: ``analysis.saged_stats.NORMALIZATIONS`` (a test checks they agree).
STATISTICS = ("mean", "median", "variance", "std", "skewness", "kurtosis", "quantile_range")
STANDARDS = ("mean", "median", "quantile", "value")
DIRECTIONS = ("above", "below", "within")
COMPARISONS = ("inclusive", "strict")
COMPARES = ("rest", "overall")
CONVENTIONS = ("workbench", "saged")
DIXON_ALPHAS = (0.10, 0.05, 0.01)
NORMALIZATIONS = ("none", "zscore", "minmax")
#: ``polarity``'s default: the polarity the design declares for the feature (resolved
#: once the feature is known: :meth:`DisparityOptions.resolved`).
POLARITY_FROM_DESIGN = "design"

def quantile_pair(text: Any) -> tuple[float, float]:
    """``--quantiles LO,HI``: two numbers (a string ``"0.25,0.75"`` or a pair); the range
    is checked by the analysis."""
    import argparse

    parts = text.split(",") if isinstance(text, str) else text
    try:
        pair = tuple(float(str(q).strip()) for q in parts)
    except (TypeError, ValueError):
        pair = ()
    if len(pair) != 2:
        raise argparse.ArgumentTypeError(f"takes two numbers, got {text!r}")
    return pair  # type: ignore[return-value]


quantile_pair.__name__ = "two numbers"

_SAGED = ("SAGED statistics (mode, range, percentile; KL divergence, precision, correlation "
          "with --baseline)")


@dataclass(frozen=True, kw_only=True)
class SagedOptions(Options):
    """The SAGED statistics per group (``analysis.saged_stats.saged_statistics``)."""

    normalization: str = option(
        "none", "rescale feature and baseline together first (default %(default)s)",
        flag="normalize", choices=NORMALIZATIONS, call=False, group=_SAGED,
        label="Normalise first")
    bins: int = option(10, "histogram bins of the KL divergence (default %(default)s)",
                       type=POSITIVE_INT, call=False, group=_SAGED, label="KL bins")
    precision_tolerance: float = option(
        0.0, "|feature - baseline| counted as agreement up to this (default %(default)s)",
        type=NON_NEGATIVE_FLOAT, call=False, group=_SAGED, label="Precision tolerance")
    percentile: float = option(50.0, "percentile per group, 0-100 (default %(default)s)",
                               type=float_in(0, 100), call=False, group=_SAGED,
                               label="Percentile")
    mode_bin_width: float = option(0.5, "bin width of the mode (default %(default)s)",
                                   type=POSITIVE_FLOAT, call=False, group=_SAGED,
                                   label="Mode bin width")

    def saged_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`analysis.saged_stats.saged_statistics`."""
        return {"normalization": self.normalization, "bins": self.bins,
                "tolerance": self.precision_tolerance, "percentile": self.percentile,
                "mode_bin_width": self.mode_bin_width}


#: The SAGED statistics' options (page-only in the report: not a section setting).
SAGED_FIELDS = ("normalization", "bins", "precision_tolerance", "percentile", "mode_bin_width")


@register
@dataclass(frozen=True, kw_only=True)
class DisparityOptions(SagedOptions):
    """A numeric feature across groups (methods.md s. 5)."""

    NAME = "disparity"
    COMMAND = "disparity"

    baseline: str | None = option(
        None, "column of the baseline feature: use feature - baseline", type=str,
        metavar="COL", label="Baseline column (calibration)")
    statistic: str = option(
        "mean", "statistic per group for the disparity metrics (default %(default)s)",
        choices=STATISTICS, label="Statistic per group")
    quantiles: tuple[float, float] = option(
        (0.25, 0.75), "lower,upper quantile of quantile_range (default 0.25,0.75)",
        type=quantile_pair, metavar="LO,HI", label="Quantile range")
    standard: str = option(
        "mean", "selection standard over all rows (default %(default)s)", choices=STANDARDS,
        label="Selection standard")
    quantile: float = option(0.5, "quantile of --standard quantile (default %(default)s)",
                             type=UNIT_INTERVAL, label="Standard quantile")
    value: float | None = option(None, "fixed number for --standard value", type=FINITE_FLOAT,
                                 label="Standard value")
    direction: str | None = option(
        None, "selected when above / below / within --tolerance of the standard (default: "
        "the favourable side, below for a harmful feature)", choices=DIRECTIONS,
        label="Selected when the value is")
    tolerance: float | None = option(None, "half-width for --direction within",
                                     type=NON_NEGATIVE_FLOAT, label="Tolerance ('within')")
    comparison: str = option(
        "inclusive", "above / below: inclusive x >= s, x <= s (default, as SAGED) or strict "
        "x > s, x < s", choices=COMPARISONS, label="Above / below")
    polarity: str | None = option(
        POLARITY_FROM_DESIGN, "whether higher feature values are harmful or favourable "
        "(default: the design's polarity; the deviation column is harmful)",
        choices=(POLARITY_FROM_DESIGN, "harmful", "favourable", None),
        metavar="{harmful,favourable}", label="Higher values are")
    alpha: float = option(0.05, "significance level of Dixon's Q (0.1, 0.05 or 0.01)",
                          type=float, choices=DIXON_ALPHAS, label="alpha (Dixon's Q)")
    n_resamples: int = option(
        999, "most label permutations (default %(default)s; 0 = none)", flag="permutations",
        type=NON_NEGATIVE_INT, metavar="N", label="Most permutations (0: none)")
    adaptive: bool = option(
        True, "run every permutation instead of stopping once each p-value is clearly above "
        "or below alpha", negate="no-adaptive", label="Stop early when clear")
    compare: str = option("rest", "each group against the rest (default) or all rows",
                          choices=COMPARES, label="Each group against")
    seed: int = option(0, "random seed of the permutations (default %(default)s)",
                       type=NON_NEGATIVE_INT, label="Seed")
    adjust: str = adjust_option("the groups (permutation tests)")
    conventions: str = option(
        "workbench", "the SAGED library's numbers: variance/std ddof 0, scipy's default "
        "skew/kurtosis, max Z = largest signed scipy zscore (ddof 0), min/max whenever "
        "max != 0 (docs/disparity.md)", flag="saged-conventions", choices=CONVENTIONS,
        switch="saged", group=_SAGED, label="SAGED library's conventions")
