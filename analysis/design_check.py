"""Checking a design against a table: every mismatch at once, errors and warnings.

Import these names from :mod:`analysis.design`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pandas as pd

from analysis.columns import DEVIATION
from analysis.design_model import Design
from analysis.design_outcome import deviation
from analysis.errors import DesignError, DesignMismatchError, did_you_mean
from analysis.values import (
    MAX_FACTOR_VALUES,
    check_frame,
    first_appearance,
    too_many_values,
    value_counts_coded,
)

__all__ = ["Problem", "check_design", "check_frame", "design_problems", "too_many_values"]


@dataclass(frozen=True)
class Problem:
    """One mismatch between a design and a table. ``severity`` is ``error`` or ``warning``."""

    severity: Literal["error", "warning"]
    message: str


def design_problems(design: Design, frame: pd.DataFrame, *, _memo: dict | None = None
                    ) -> list[Problem]:
    """Every mismatch between ``design`` and ``frame``.

    Errors (the design cannot be applied): a factor or outcome column that does not
    exist, a factor with more than ``MAX_FACTOR_VALUES`` values, values in the data
    that the design does not declare, a reference value absent from the data, an
    outcome column whose values do not fit its mapping. Warnings: declared values
    never seen in the data (they are legitimate empty cells for coverage).

    ``_memo`` (internal) receives each factor's :func:`analysis.values.value_counts_coded`
    and the deviation computed on the way, so :func:`apply_design` does not compute them
    twice.
    """
    check_frame(frame, "design_problems")
    if not isinstance(design, Design):
        raise DesignError(f"A design (analysis.design.Design: Design.load(path), "
                          f"suggest_design(frame) ...) is needed, not "
                          f"{'nothing' if design is None else type(design).__name__}.")
    memo = {} if _memo is None else _memo
    problems: list[Problem] = []
    for f in design.factors:
        if f.name not in frame.columns:
            problems.append(Problem("error", f"Factor column {f.name!r} is not in the table."
                                    + did_you_mean(f.name, list(frame.columns), sentence=True)))
            continue
        codes, labels, counts = memo[f.name] = value_counts_coded(frame[f.name])
        seen = {lab for lab, c in zip(labels, counts, strict=True) if c}
        if len(seen) > MAX_FACTOR_VALUES:
            problems.append(Problem("error", too_many_values(f.name, len(seen))))
            continue
        declared = set(f.values)  # a set: a 200k-value design checks in linear time
        if not seen <= declared:  # listed in order of first appearance
            count = dict(zip(labels, counts, strict=True))
            undeclared = [(v, int(count[v])) for v in first_appearance(codes, labels)
                          if v not in declared]
            listing = ", ".join(f"{v!r} ({c:,} rows)" for v, c in undeclared[:8])
            more = f" and {len(undeclared) - 8} more" if len(undeclared) > 8 else ""
            problems.append(Problem("error", f"Factor {f.name!r}: values in the data that the "
                                             f"design does not declare: {listing}{more}."))
        if f.reference not in seen:
            problems.append(Problem("error", f"Factor {f.name!r}: the reference value "
                                             f"{f.reference!r} does not occur in the data."))
        unseen = [v for v in f.values if v not in seen and v != f.reference]
        if unseen:
            problems.append(Problem(
                "warning", f"Factor {f.name!r}: declared values never seen in the data "
                           f"(empty cells): {', '.join(repr(v) for v in unseen[:8])}"
                           f"{' ...' if len(unseen) > 8 else ''}."))
    if design.cluster is not None:
        from analysis.clusters import cluster_note

        # missing, constant, or one row per cluster: the analyses then treat rows as
        # independent and say so in the same words (analysis.clusters.resolve_cluster)
        note = cluster_note(frame, design.cluster)
        if note:
            problems.append(Problem("warning", note))
    absent_unit = [c for c in design.prompt_unit if c not in frame.columns]
    if absent_unit:
        # only coverage counts prompts (and says so itself): a warning, not an error
        problems.append(Problem("warning", f"Prompt unit column(s) not in the table: "
                                           f"{', '.join(repr(c) for c in absent_unit)}; "
                                           "coverage cannot count prompts."))
    if design.constraints:
        from analysis.constraints import constraint_problems

        problems += [Problem("error", m) for m in constraint_problems(design, frame)]
    if design.outcome is not None:
        col = design.outcome.column
        if col in frame.columns and len(frame) and frame[col].isna().all():
            problems.append(Problem("error", f"Outcome column {col!r} is empty: all "
                                             f"{len(frame):,} values are missing, so no row "
                                             "has a deviation. Choose another outcome."))
            return problems
        try:
            memo[DEVIATION] = deviation(frame, design.outcome)
        except DesignError as exc:
            problems.append(Problem("error", str(exc)))
    return problems


def check_design(design: Design, frame: pd.DataFrame) -> list[str]:
    """Raise :class:`DesignMismatchError` listing every error; return the warnings."""
    problems = design_problems(design, frame)
    errors = [p.message for p in problems if p.severity == "error"]
    if errors:
        raise DesignMismatchError(errors)
    return [p.message for p in problems if p.severity == "warning"]

