"""Options of planning (``analysis/planning.py``): the prompts to add for coverage and a
fractional factorial (the ``plan`` command, the Planner page) and the rows needed to
detect a log disparity (the ``power`` command, the Planner page's power calculator).

What the plan or the power analysis is about (the grid's factors, a new benchmark's
values; the rate, log disparity and share of a subgroup) is its input, not an option."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.options import Options, option, register

__all__ = ["PlanOptions", "PowerOptions"]


@register
@dataclass(frozen=True, kw_only=True)
class PlanOptions(Options):
    """The budgets of a plan: prompts to add to a table's grid, or runs of a new
    fractional factorial (docs/planning.md)."""

    NAME = "plan"
    COMMAND = "plan"

    # plain int: a budget of 0 or less is refused by the planner with its own message
    budget: int | None = option(None, "prompts to add (with FILE)", type=int,
                                label="Prompts to add")
    runs: int | None = option(None, "run budget of a new fractional factorial", type=int,
                              call=False, label="Run budget")
    within_structure: bool = option(
        False, "stay inside the observed structure: no template variants for design gaps",
        label="Stay inside the observed structure")
    template: str | None = option(
        None, "template column whose variants fill design gaps (default: the design's "
              "cluster, or the one the table's structure implies)", metavar="COL",
        label="Template column")
    whole_variants: bool = option(
        False, "spend the budget on whole template variants first (each yields one prompt "
               "per combination of its template)", label="Whole template variants")


@register
@dataclass(frozen=True, kw_only=True)
class PowerOptions(Options):
    """The level and power of the two-sided Wald test of a log disparity
    (``analysis.planning.sample_size``; docs/planning.md)."""

    NAME = "power"
    COMMAND = "power"

    # plain float: sample_size says which input is out of range (--alpha, --power)
    alpha: float = option(0.05, "two-sided level (default %(default)s)", type=float,
                          label="Significance level (two-sided)")
    power: float = option(0.8, "power wanted (default %(default)s)", type=float,
                          label="Power")
