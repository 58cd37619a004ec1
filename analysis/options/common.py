"""Options several analyses share: the cluster of the standard errors, the judge-noise
redraws, the bootstrap. An analysis's options class inherits the ones it takes."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.multiple_testing import METHODS, methods_text
from analysis.options import FROM_DESIGN, Options, option
from analysis.options.types import NON_NEGATIVE_INT, POSITIVE_INT, PROBABILITY, int_at_least

__all__ = [
    "ADJUST_METHODS", "BOOTSTRAP_FIELDS", "BootstrapOptions", "CI_CHOICES", "ClusterOptions",
    "NOISE_FIELDS", "NOISE_MODES", "NoiseOptions", "SMALL_SAMPLE", "adjust_option",
    "confidence_option", "n_resamples_option", "noise_alpha_option", "option"
]

#: The judge-noise options: a report section keeps them in its ``judge_noise`` mapping.
NOISE_FIELDS = ("judge_noise", "noise_mode", "noise_alpha", "seed")

#: The bootstrap options: a report section keeps them beside its own settings (``ci``,
#: ``cluster``, ``n_resamples``, ``seed``, ``confidence``: ``analysis.report.ci_defaults``).
BOOTSTRAP_FIELDS = ("ci", "cluster", "n_resamples", "seed", "confidence")

#: The values of the ``ci`` option.
CI_CHOICES = ("none", "bootstrap")

#: Small-sample corrections of cluster-robust inference (``analysis/clusters.py``).
SMALL_SAMPLE = ("cr2", "cr1", "none")

#: p-value adjustments: :data:`analysis.multiple_testing.METHODS` (no numpy imported).
ADJUST_METHODS: tuple[str, ...] = METHODS

#: Judge-noise redraw modes (``analysis/judge_noise.py``).
NOISE_MODES = ("mean", "single", "confusion")

_NOISE = "judge noise (results tables of a judge run with --samples K)"
_BOOT = "uncertainty (bootstrap)"


@dataclass(frozen=True, kw_only=True)
class ClusterOptions(Options):
    """Cluster-robust inference: the cluster column and the small-sample correction."""

    cluster: str | None = option(
        FROM_DESIGN, "rows sharing COL (template, prompt id, seed) are correlated: "
        "cluster-robust std_err, z, p-values and CIs (default: the design's cluster; without "
        "--design, the one inferred from the table, if any)",
        cluster=True, label="Cluster (rows sharing it are correlated)")
    small_sample: str = option(
        "cr2", "with a cluster: cr2 (default: bias-reduced covariance; importance compares "
        "each coefficient with t on its own Satterthwaite df and tests factors by HTZ), cr1 "
        "(sandwich, t with G-1 df) or none (sandwich, normal = statsmodels)",
        choices=SMALL_SAMPLE,
        label="Small-sample correction")


@dataclass(frozen=True, kw_only=True)
class NoiseOptions(Options):
    """Judge noise: redraw a judged table's scores and refit (``analysis/judge_noise.py``;
    the keyword arguments: :func:`analysis.judge_noise.noise_arguments`)."""

    judge_noise: int | None = option(
        None, "redraw the judge's scores R times (e.g. 200), rerun the analysis with the "
        "same settings and report how often each conclusion keeps its sign and "
        "significance (JSON: judge_noise)", type=POSITIVE_INT, metavar="R", group=_NOISE,
        call=False, label="Judge-noise replicates")
    noise_mode: str = option(
        "mean", "mean: resample the K samples and average (default); single: one sample (a "
        "one-call judge); confusion: a score from P(human | judge) estimated on the rows "
        "with human_<metric> labels", choices=NOISE_MODES, group=_NOISE, call=False,
        label="Noise model")


def noise_alpha_option() -> object:
    """``--noise-alpha`` for an analysis whose tests have no alpha of their own."""
    return option(0.05, "a subgroup counts as significant in a replicate when its "
                  "adjusted p-value (--adjust) is below this (default %(default)s)",
                  type=PROBABILITY, group=_NOISE, call=False,
                  label="Significant at adjusted p below")


def adjust_option(what: str) -> object:
    """``--adjust``: the multiple-testing adjustment of ``p_adjusted`` over ``what``."""
    return option("bh", f"adjust the p-values over {what}: {methods_text(default='bh')}",
                  choices=ADJUST_METHODS, label="Adjusted p-values by")


def n_resamples_option(default: int) -> object:
    """``--n-boot B``: the bootstrap replicates (``default`` differs per analysis)."""
    return option(default, "bootstrap replicates, at least 20 (default %(default)s)",
                  flag="n-boot", type=int_at_least(20), metavar="B", group=_BOOT,
                  label="Replicates")


def confidence_option(*, flag: str | None = "") -> object:
    """The confidence level of the intervals (``flag=None``: not on the command line)."""
    return option(0.95, "CI level (default %(default)s)", type=PROBABILITY, flag=flag,
                  label="Confidence level")


@dataclass(frozen=True, kw_only=True)
class BootstrapOptions(Options):
    """Bootstrap percentile intervals (``analysis/bootstrap.py``): on or off, the cluster
    resampled as a unit, the replicates and the seed. An analysis redeclares
    ``n_resamples`` with :func:`n_resamples_option` for its own default, and declares
    ``confidence`` (:func:`confidence_option`)."""

    ci: str = option("none", "add bootstrap percentile intervals (cluster bootstrap with "
                     "--cluster)", choices=CI_CHOICES, group=_BOOT, call=False,
                     label="Compute bootstrap percentile intervals (seeded)")
    cluster: str | None = option(
        FROM_DESIGN, "resample whole clusters (template, prompt id, seed); default: the "
        "design's cluster (without --design, the inferred one)", cluster=True, group=_BOOT,
        label="Resample whole clusters of")
    n_resamples: int = n_resamples_option(1000)
    # one seed for every random step of the command (bootstrap; ecdf's KS splits; noise)
    seed: int = option(0, "random seed (default %(default)s)", type=NON_NEGATIVE_INT,
                       group=_BOOT, label="Seed")

    def bootstrap_kwargs(self, cluster: str | None) -> dict[str, object]:
        """Keyword arguments of the ``analysis.bootstrap`` functions (``cluster``: the
        resolved column, or None)."""
        return {"cluster": cluster, "n_resamples": self.n_resamples, "seed": self.seed}

    def bootstrap_json(self, cluster: str | None) -> dict[str, object]:
        """The ``bootstrap`` settings of a command's JSON (subgroups, ecdf, index): their
        keys as they always were (``n_boot``: the option ``n_resamples``)."""
        return {"cluster": cluster, "n_boot": self.n_resamples, "seed": self.seed}
