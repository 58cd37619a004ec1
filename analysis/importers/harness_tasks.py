"""Task-aware reading of lm-eval's own bias tasks (``docs/harness_tasks.md``).

lm-eval's bias tasks log per-sample metrics that are tuples for their own aggregations
(BBQ's bias scores, DiscrimEval's regression inputs), so the generic importer
(:mod:`analysis.importers.lm_eval`) cannot use them as scores. A *task family* module
recognises its task from the metric names a samples file logs and turns its records
into the columns the analysis needs (the chosen answer, ``biased_answer``, ``logit_yes``,
the demographics) and into hints for the suggested design (outcome, references,
cluster, numeric covariates). One module per family:

- :mod:`analysis.importers.harness_bbq` (``bbq``, ``bbq_multiple_choice*``),
- :mod:`analysis.importers.harness_crows_pairs` (``crows_pairs_*``),
- :mod:`analysis.importers.harness_discrim_eval` (``discrim_eval_explicit`` / ``_implicit``).

This module holds what the families share (:class:`TaskImport`, the design hints);
:mod:`analysis.importers.harness_families` asks each family in turn.

Winogender, ToxiGen and simple co-occurrence bias log plain numbers and need no family
module; every other tuple metric is listed as left out (with why).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.design import Design, Outcome, make_factor

__all__ = ["TaskImport", "apply_hints", "record_where"]


@dataclass
class TaskImport:
    """What a family module makes of one samples file.

    Attributes
    ----------
    family
        ``"bbq"``, ``"crows_pairs"``, ``"discrim_eval"``.
    columns
        New (or replaced) columns, one value per record, in order.
    unpacked
        Tuple metrics the module used (no longer "left out").
    outcome
        The outcome the family's own analysis uses.
    references
        Factor -> reference value (the family's control groups).
    factor_columns
        Columns to offer as factors (kind, column).
    drop_factors
        Columns that must not be factors (the cluster, numeric covariates).
    cluster
        The column whose rows are correlated (DiscrimEval's decision question).
    covariates
        Numeric covariates of the family's model (DiscrimEval's ``age``).
    scores
        A further table (BBQ's bias scores), or None.
    notes
        What was done, in words.
    """

    family: str
    columns: dict[str, list[Any]] = field(default_factory=dict)
    unpacked: list[str] = field(default_factory=list)
    outcome: Outcome | None = None
    references: dict[str, str] = field(default_factory=dict)
    factor_columns: list[tuple[str, str]] = field(default_factory=list)
    drop_factors: list[str] = field(default_factory=list)
    cluster: str | None = None
    covariates: tuple[str, ...] = ()
    scores: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)


def apply_hints(design: Design, frame: pd.DataFrame, imports: Sequence[TaskImport],
                notes: list[str], *, covered: bool = True) -> Design:
    """The suggested design with the families' outcome, references, cluster, covariates.

    With several families in one import (or rows of tasks no family reads, ``covered``
    False), only the factors and references are merged; the outcome and cluster stay the
    generic choice and a note says so.
    """
    if not imports:
        return design
    factors = {f.name: f for f in design.factors}
    drop = {c for t in imports for c in t.drop_factors}
    for t in imports:
        for kind, col in t.factor_columns:
            if col in frame.columns and col not in factors and col not in drop \
                    and frame[col].nunique(dropna=True) > 1:
                factors[col] = make_factor(frame, col, kind=kind)  # type: ignore[arg-type]
    for col in drop:
        factors.pop(col, None)
    for t in imports:
        for col, ref in t.references.items():
            if col in factors and ref in factors[col].values:
                factors[col] = replace(factors[col], reference=ref)
    out = Design(factors=tuple(factors.values()), outcome=design.outcome, name=design.name,
                 cluster=design.cluster, covariates=design.covariates)
    families = list(dict.fromkeys(t.family for t in imports))
    if len(families) > 1 or not covered:
        notes.append(f"Several task families in one import ({', '.join(families)} and "
                     "others): the outcome and cluster are the generic choice; import one "
                     "family at a time for its own outcome.")
        return out
    first = imports[0]
    if first.outcome is not None:
        out = out.with_outcome(first.outcome)
        notes[:] = [n for n in notes if not n.startswith(_GENERIC_OUTCOME_NOTES)
                    and " rows have no " not in n]
        notes.append(f"Outcome ({first.family}): {first.outcome.column}"
                     + (" (continuous; 0/1 deviation where " if first.outcome.type ==
                        "continuous" else ", deviation where ")
                     + first.outcome.rule() + (")." if first.outcome.type == "continuous"
                                                   else "."))
    if first.cluster:
        out = out.with_cluster(first.cluster)
    if first.covariates:
        out = out.with_covariates(first.covariates)
    return out


#: Notes of the generic outcome choice that a family's own outcome replaces.
_GENERIC_OUTCOME_NOTES = ("Outcome:", "Other candidate outcomes:", "No score column holds")


def record_where(path: Path, number: int) -> str:
    """``file, record N`` (1-based line of the samples file) for messages."""
    return f"{path}, record {number}"
