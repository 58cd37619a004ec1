"""Options of the benchmarks' own scores (``analysis.native_scores``; the ``native-scores``
command, ``compare --native-scores``, the report's native section, the pages' expanders):
the cluster bootstrap's cluster, replicates, level and seed, and the paired deltas'
adjustment. What is scored and paired (``by``, ``reference``, ``unit``, ``breakdowns``) is
the analysis's input, not an option."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.multiple_testing import METHODS, methods_text
from analysis.options import FROM_DESIGN, Options, option, register
from analysis.options.types import NON_NEGATIVE_INT, PROBABILITY, int_at_least

__all__ = ["ADJUSTMENTS", "DELTA_ADJUST", "NativeDeltasOptions", "NativeOptions"]

#: The multiple-testing method of a pair's deltas by default (family-wise, as the
#: comparison of the pairs themselves).
DELTA_ADJUST = "holm"
#: The deltas' adjustments: every method of ``analysis.multiple_testing``, the default first.
ADJUSTMENTS = (DELTA_ADJUST, *(m for m in METHODS if m != DELTA_ADJUST))


@register
@dataclass(frozen=True, kw_only=True)
class NativeOptions(Options):
    """The native scores' cluster-bootstrap intervals (docs/native_scores.md)."""

    NAME = "native_scores"
    COMMAND = "native-scores"
    FUNCTION = "analysis.api:native_scores"

    cluster: str | None = option(
        FROM_DESIGN, "the column resampled as clusters (default: the design's, else "
        "template_id / category x question_index / doc_id)", cluster=True,
        label="Resample whole clusters of")
    n_resamples: int = option(1000, "bootstrap resamples of the native scores (default "
                              "%(default)s)", flag="native-resamples", type=int_at_least(20),
                              metavar="N", label="Bootstrap resamples")
    confidence: float = option(0.95, "interval level of the native scores (default "
                               "%(default)s)", flag="native-confidence", type=PROBABILITY,
                               metavar="C", label="Confidence level")
    seed: int = option(0, "bootstrap seed (default %(default)s)", type=NON_NEGATIVE_INT,
                       label="Seed")


@register
@dataclass(frozen=True, kw_only=True)
class NativeDeltasOptions(NativeOptions):
    """The paired deltas of the native scores: the bootstrap's options and the
    adjustment of a pair's deltas."""

    NAME = "native_deltas"
    FUNCTION = "analysis.api:native_deltas"

    adjust: str = option(
        DELTA_ADJUST, "with --by: adjust the p-values of a pair's deltas together: "
        + methods_text(ADJUSTMENTS, default=DELTA_ADJUST), flag="native-adjust",
        choices=ADJUSTMENTS, label="Deltas adjusted by")
