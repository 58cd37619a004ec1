"""What the Disparity and Cohorts pages open on, without Streamlit: the steps that read the
rows, their cache keys and the opening choices, shared by the pages and the app's
load-time job (``ui/disparity_job.py``, run in a worker process where no script runs), so
that the job computes what the pages ask for by the pages' own code."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from analysis.design import Design, factor_values
from analysis.factor_defaults import default_group, unnested_factors, useful_factors

__all__ = ["KINDS", "category_columns", "cohort_factors", "cohort_within", "disparity_by",
           "observed_categories", "result_key", "start_factors", "step_key"]

#: The factor kinds, in order, a page's default factors are taken from
#: (``ui.defaults.page_defaults``).
KINDS = ("domain", "prompt", "model")


def step_key(fn: Callable, *args: object, **kwargs: object) -> tuple[str, str]:
    """``(name, arguments)``: :func:`ui.common.per_table`'s key of ``fn(results, *args,
    **kwargs)`` (arguments told apart by their ``repr``)."""
    return f"{fn.__module__}.{fn.__qualname__}", repr((args, sorted(kwargs.items())))


def result_key(name: str, options: object, inputs: dict) -> tuple[str, str, str]:
    """:func:`ui.common.analysis_result`'s key of ``analysis.api.<name>`` with
    ``options`` and ``inputs``."""
    return name, repr(options), repr(sorted(inputs.items()))


def category_columns(results: pd.DataFrame, design: Design) -> list[str]:
    """Columns that can be a categorical outcome (2..50 values, not floats), the default
    first: :func:`analysis.cohort_inputs.category_candidates` (columns fixed by the prompt,
    such as its text, last; then factors; then by name and number of categories)."""
    from analysis.cohort_inputs import category_candidates
    from analysis.columns import DEVIATION
    from analysis.distribution import MAX_CATEGORIES

    return category_candidates(results, design.names, design.prompt_unit_columns(),
                               exclude=(DEVIATION,), max_categories=MAX_CATEGORIES)


def observed_categories(results: pd.DataFrame, category: str) -> list[str]:
    """The categories of ``category`` as the analysis labels them (booleans as "true" /
    "false", 7.0 as "7"), in the factor's value order."""
    return factor_values(results[category].dropna())[1]


def cohort_factors(design: Design, category: str) -> tuple[list[str], int]:
    """The Cohorts page's cohort factors for the outcome ``category`` and the default's
    position among them (:func:`analysis.factor_defaults.default_cohort`)."""
    from analysis.factor_defaults import default_cohort

    return [f for f in design.names if f != category], default_cohort(design, category)


def cohort_within(design: Design, category: str, cohort: str) -> list[str]:
    """The Cohorts page's default "within" factors: the first domain factor that is neither
    the outcome nor the cohort factor."""
    return [f for f in design.of_kind("domain") if f not in (category, cohort)][:1]


def start_factors(frame: pd.DataFrame, design: Design, k: int | None,
                  kinds: Sequence[str] = KINDS, exclude: Sequence[str] = (), *,
                  coded: Callable[..., pd.DataFrame] | None = None) -> list[str]:
    """The useful factors of ``kinds`` (:func:`analysis.factor_defaults.useful_factors`)
    and, with ``k``, up to ``k`` of them with no nested pair. ``coded(frame, factors,
    counts=...)``: the table the counts and the nesting tests read (default ``frame``;
    the pages': ``ui.defaults._coded``)."""
    coded = coded or (lambda table, factors, counts=False: table)
    names = [f for kind in kinds for f in design.of_kind(kind) if f in frame.columns]
    order = useful_factors(coded(frame, names, counts=True), design, kinds, exclude=exclude)
    if k is None:
        return order
    return unnested_factors(coded(frame, order), design, order, k)


def disparity_by(design: Design, start: Callable[[Design, int], list[str]]) -> list[str]:
    """The Disparity page's opening grouping: the first factor ``start(design, 1)`` gives
    (the page's ``ui.defaults.page_defaults``), else
    :func:`analysis.factor_defaults.default_group` (never a constant factor)."""
    return list(start(design, 1)) or default_group(design)
