"""Options of the cohorts analysis (``analysis.distribution.homogeneity_test`` after
``category_distribution``; the ``cohorts`` command, the Cohorts page, the report's
cohorts section)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.multiple_testing import METHODS, methods_text
from analysis.options import Options, option, register
from analysis.options.types import NON_NEGATIVE_INT

__all__ = ["CAPSULE_STARS", "TEST_METHODS", "CohortsOptions"]

#: Kept literal here (no pandas): ``analysis.distribution.TEST_METHODS``.
TEST_METHODS = ("auto", "chi2", "monte_carlo")
#: What ``*`` marks in the time-capsule table (``analysis.capsules.capsule_table``).
CAPSULE_STARS = ("across_cohorts", "among_subcategories")


@register
@dataclass(frozen=True, kw_only=True)
class CohortsOptions(Options):
    """A categorical outcome across cohorts: percentages, spread, chi-square (methods.md
    s. 7)."""

    NAME = "cohorts"
    COMMAND = "cohorts"

    renormalise: bool = option(
        False, "percentages among the chosen categories only (default: of every answer with "
        "a known category, left-out ones such as 'neither' too)", call=False,
        label="Percentages among the chosen categories only (renormalise)")
    method: str = option(
        "auto", "chi-square, Monte Carlo, or auto (Monte Carlo for small counts)",
        choices=TEST_METHODS, label="Test")
    n_resamples: int = option(9999, "Monte Carlo tables (default %(default)s)",
                              flag="resamples", type=NON_NEGATIVE_INT,
                              metavar="N", label="Monte Carlo tables")
    seed: int = option(0, "random seed of the Monte Carlo test (default %(default)s)",
                       type=NON_NEGATIVE_INT, label="Seed")
    refusals: str = option(
        "count", "answers that are refusals (REFUSED, declined ...): counted where the table "
        "puts them, with a note (default), or left out of n, the shares and the test",
        choices=("count", "leave_out"), call=False, label="Refusals")
    capsule_star: str = option(
        "across_cohorts", "with --demographics: what * marks in the paper-shaped table: the "
        "subcategory's share differs between cohorts (default), or the prompt's "
        "subcategories differ from each other (the paper's Table 4 note)",
        choices=CAPSULE_STARS, call=False, label="`*` in the table marks")
    adjust: str = option(
        "bh", "with --demographics: adjust the time capsules' p-values over the tests of "
        "one kind (p_adjusted, and the table's second mark): " + methods_text(default="bh"),
        choices=METHODS, call=False, label="Time capsules' p-values adjusted by")
