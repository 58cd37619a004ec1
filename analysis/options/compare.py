"""Options of the paired comparison (``analysis.compare.compare``; the ``compare``
command, the Compare page, the report's compare section). What is compared (``by``,
``reference``, ``factors``, ``level``, ``unit``, ``score``) is the analysis's input, not
an option."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.multiple_testing import METHODS, methods_text
from analysis.options import FROM_DESIGN, Options, option, register
from analysis.options.types import NON_NEGATIVE_INT, PROBABILITY, int_at_least

__all__ = ["ADJUSTMENTS", "DUPLICATE_RULES", "MCNEMAR_TESTS", "CompareOptions"]

#: Kept literal here (no pandas): ``analysis.compare``'s tuples of the same names.
MCNEMAR_TESTS = ("auto", "exact", "chi2")
#: Compare's adjustments: every method of ``analysis.multiple_testing``, Holm first.
ADJUSTMENTS = ("holm", *(m for m in METHODS if m != "holm"))
DUPLICATE_RULES = ("mean", "refuse")
#: What ``analysis.compare`` called the design's cluster before :data:`FROM_DESIGN`
#: (report settings and pages may still say it).
DESIGN_CLUSTER = "design"


@register
@dataclass(frozen=True, kw_only=True)
class CompareOptions(Options):
    """Paired comparison of the values of a factor on the same prompts (docs/compare.md)."""

    NAME = "compare"
    COMMAND = "compare"

    duplicates: str = option(
        "mean", "a prompt answered twice by one value: mean (default, averaged) or refuse "
        "(exit 2)", choices=DUPLICATE_RULES, label="A prompt answered twice")
    test: str = option(
        "auto", "McNemar: auto (default: exact binomial below 25 discordant pairs, "
        "chi-square with continuity correction otherwise), exact or chi2",
        choices=MCNEMAR_TESTS, label="McNemar's test")
    adjust: str = option(
        "holm", "adjust the p-values of all pairs together: "
        + methods_text(ADJUSTMENTS, default="holm"), choices=ADJUSTMENTS,
        label="Pairs adjusted by")
    subgroup_adjust: str = option(
        "bh", "adjust the p-values of a pair's subgroups together (p_adjusted, "
        "ld_p_adjusted and each value's own LD verdict): " + methods_text(default="bh"),
        choices=METHODS, label="Subgroups adjusted by")
    cluster: str | None = option(
        FROM_DESIGN, "cluster column (default: the design's); pairs in one cluster are "
        "resampled together", cluster=True, group="intervals",
        label="Resample whole clusters")
    n_resamples: int = option(
        1000, "bootstrap replicates per subgroup table (default %(default)s)", flag="n-boot",
        type=int_at_least(20), metavar="N", group="intervals", label="Bootstrap replicates")
    seed: int = option(0, "bootstrap seed (default %(default)s)", type=NON_NEGATIVE_INT,
                       group="intervals", label="Seed")
    confidence: float = option(0.95, "interval level (default %(default)s)", type=PROBABILITY,
                               group="intervals", label="Confidence level")
    alpha: float = option(
        0.05, "level of 'differs' and of the subgroup verdicts (default %(default)s)",
        type=PROBABILITY, group="intervals", label="Significance level")

    @classmethod
    def from_settings(cls, settings: Any, **kwargs: Any) -> CompareOptions:  # type: ignore[override]
        """:meth:`Options.from_settings`, reading the old ``cluster: design`` as the
        design's cluster."""
        if settings.get("cluster") == DESIGN_CLUSTER:
            settings = {**settings, "cluster": FROM_DESIGN}
        return super().from_settings(settings, **kwargs)
