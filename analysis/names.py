"""User column names that clash with output column names, renamed once at the start.

A factor called ``subgroup``, ``n``, ``level``, ``deviations`` or ``deviation`` would
collide with a column the analysis adds beside the factor columns (the cell table's
``n`` and ``deviations``, the subgroup table's ``level`` and ``subgroup``, the derived
``deviation`` ...): the table would hold two columns of one name, or the factor would be
overwritten. Rather than namespacing every output column (which would change every
table, figure and JSON key), such a factor is renamed before the design is applied:
``n`` becomes ``n_factor`` (with more underscores if that name is taken). The rename is
reported (a note on the page, ``settings.renamed`` and a note on stderr in the CLI), and
options naming the factor by its original name keep working (:func:`rename_option`).
The names concerned are :data:`analysis.columns.BESIDE_FACTORS`; decisions in
``docs/architecture.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

import pandas as pd

from analysis.columns import BESIDE_FACTORS
from analysis.design import Design
from analysis.errors import AnalysisError

__all__ = [
    "ColumnClashError", "SUFFIX", "check_no_clash", "clash_free", "rename_note",
    "rename_option",
]


SUFFIX = "_factor"


class ColumnClashError(AnalysisError):
    """A factor (or grouping column) has the name of an output column."""


def clash_free(frame: pd.DataFrame, design: Design, *, extra: Iterable[str] = ()
               ) -> tuple[pd.DataFrame, Design, dict[str, str]]:
    """Rename factor columns (and ``extra`` columns, e.g. a cohort's category column)
    whose names are output column names.

    Parameters
    ----------
    frame
        The results table *before* :func:`analysis.design.apply_design`.
    design
        Its design; factors, the outcome's columns and polarity keys are renamed alike.
    extra
        Other columns that appear beside our columns in an output (category, cohort).

    Returns
    -------
    (frame, design, renamed)
        A renamed copy (the inputs themselves when nothing clashes) and the mapping
        ``{old: new}`` (empty when nothing clashes).
    """
    wanted = [c for c in dict.fromkeys([*design.names, *extra]) if c in BESIDE_FACTORS]
    if not wanted:
        return frame, design, {}
    taken = set(map(str, frame.columns)) | BESIDE_FACTORS
    renamed: dict[str, str] = {}
    for old in wanted:
        new = old + SUFFIX
        while new in taken:
            new += "_"
        renamed[old] = new
        taken.add(new)
    frame = frame.rename(columns=renamed)
    factors = tuple(replace(f, name=renamed.get(f.name, f.name)) for f in design.factors)
    outcome = design.outcome
    if outcome is not None:
        outcome = replace(outcome, column=renamed.get(outcome.column, outcome.column),
                          other_column=renamed.get(outcome.other_column or "",
                                                   outcome.other_column))
    polarity = tuple((renamed.get(c, c), v) for c, v in design.polarity)
    return frame, replace(design, factors=factors, outcome=outcome, polarity=polarity), renamed


def rename_note(renamed: Mapping[str, str]) -> str:
    """One sentence naming the renamed columns (empty when none)."""
    if not renamed:
        return ""
    parts = ", ".join(f"'{old}' as '{new}'" for old, new in renamed.items())
    return (f"Renamed to avoid a clash with output columns of the same name: {parts}. "
            "Options may still use the original names.")


def rename_option(value: str | None, renamed: Mapping[str, str]) -> str | None:
    """A column name given in an option, after the rename (unchanged when not renamed)."""
    return None if value is None else renamed.get(value, value)


def check_no_clash(names: Iterable[str], what: str = "factor",
                   reserved: Iterable[str] = BESIDE_FACTORS) -> None:
    """Raise :class:`ColumnClashError` when a name is one of the ``reserved`` output
    column names.

    The statistics functions call this on the factors they put beside their own columns,
    so that a clash that was not renamed is a clear error rather than a wrong table.
    """
    reserved = set(reserved)
    bad = [n for n in names if n in reserved]
    if bad:
        raise ColumnClashError(
            f"The {what} {', '.join(repr(b) for b in bad)} has the name of an output column "
            f"and would clash with it; rename it (analysis.names.clash_free renames it to "
            f"{bad[0] + SUFFIX!r}).")
