"""Design constraints: combinations of factor values that cannot exist.

A benchmark's control rows make some combinations impossible by construction: SSQA's
base prompt (``prompt_style = base``) names no stigma and no gender, so ``base`` with a
stigma is not an empty cell to fill but a logical impossibility. A design declares these
as ``constraints:`` (``docs/planning.md``)::

    constraints:
      - if: {prompt_style: base}
        then: {stigma: no stigma, gender: no gender}
      - if: {stigma: no stigma}
        then: {prompt_style: base}

Each constraint reads "every row with all the ``if`` values has, for each ``then``
factor, one of the listed values". Every *other* empty combination is a design gap that
the planner may fill (:func:`analysis.planning.plan_additions`).

:func:`propose_constraints` reads them off a table for control values (a reference, or a
value named like "none" / "no ..." / "base" that occurs only with control values of
another factor); the Design page shows the proposals for confirmation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analysis.errors import DesignError
from analysis.values import REFERENCE_PATTERN, factor_values

__all__ = ["MIN_PROPOSAL_ROWS", "Constraint", "constraint_mask", "constraint_problems",
           "parse_constraints", "propose_constraints", "violating_rows"]

#: Rows a control value needs before a constraint is proposed for it.
MIN_PROPOSAL_ROWS = 2
#: Rows a violation message lists by number.
SHOWN_ROWS = 8


@dataclass(frozen=True)
class Constraint:
    """``if`` every factor in ``when`` has its value, ``then`` each factor of ``then`` has
    one of its values.

    Attributes
    ----------
    when
        ``((factor, value), ...)``: the condition (all must hold).
    then
        ``((factor, (value, ...)), ...)``: the allowed values of each constrained factor.
    reason
        Why it was proposed (empty when declared); not part of the design's identity.
    """

    when: tuple[tuple[str, str], ...]
    then: tuple[tuple[str, tuple[str, ...]], ...]
    reason: str = field(default="", compare=False)

    def describe(self) -> str:
        """``"prompt_style = base implies stigma = no stigma and gender = no gender"``."""
        cond = " and ".join(f"{f} = {v}" for f, v in self.when)
        parts = [f"{f} = {vs[0]}" if len(vs) == 1 else f"{f} in {{{', '.join(vs)}}}"
                 for f, vs in self.then]
        return f"{cond} implies {' and '.join(parts)}"

    def to_dict(self) -> dict[str, Any]:
        """``{"if": {factor: value}, "then": {factor: value or [values]}}`` (the file form)."""
        return {"if": dict(self.when),
                "then": {f: vs[0] if len(vs) == 1 else list(vs) for f, vs in self.then}}

    @property
    def factors(self) -> list[str]:
        """Every factor the constraint names (the condition's first)."""
        return list(dict.fromkeys([f for f, _ in self.when] + [f for f, _ in self.then]))

    def restricted(self, names: Sequence[str]) -> Constraint | None:
        """The constraint on a grid of ``names`` only: None when its condition names a
        factor outside them (it cannot be read there), its ``then`` cut to ``names``."""
        names = set(names)
        if any(f not in names for f, _ in self.when):
            return None
        then = tuple((f, vs) for f, vs in self.then if f in names)
        return Constraint(self.when, then, self.reason) if then else None


def parse_constraints(raw: Any) -> tuple[Constraint, ...]:
    """The ``constraints:`` block of a design file as :class:`Constraint` objects.

    Raises
    ------
    DesignError
        Not a list of ``{if: {factor: value}, then: {factor: value or [values]}}``
        mappings (which item and what is wrong).
    """
    if raw is None:
        return ()
    if not isinstance(raw, (list, tuple)):
        raise DesignError("'constraints' must be a list of {if: {factor: value}, then: "
                          "{factor: value or [values]}}.")
    out = []
    for i, item in enumerate(raw, start=1):
        where = f"Constraint #{i}"
        if not isinstance(item, Mapping):
            raise DesignError(f"{where} must be a mapping with 'if' and 'then'.")
        unknown = sorted(set(map(str, item)) - {"if", "then", "reason"})
        if unknown or "if" not in item or "then" not in item:
            raise DesignError(f"{where} needs exactly the keys 'if' and 'then'"
                              + (f" (unknown: {', '.join(unknown)})" if unknown else "") + ".")
        cond, then = item["if"], item["then"]
        if not isinstance(cond, Mapping) or not cond:
            raise DesignError(f"{where}: 'if' must map at least one factor to one value.")
        if not isinstance(then, Mapping) or not then:
            raise DesignError(f"{where}: 'then' must map at least one factor to a value or "
                              "a list of values.")
        when = tuple((_scalar(f, f"{where}: a factor of 'if'"),
                      _scalar(v, f"{where}: the value of {f!r} in 'if'"))
                     for f, v in cond.items())
        allowed = []
        for f, vs in then.items():
            name = _scalar(f, f"{where}: a factor of 'then'")
            vs = list(vs) if isinstance(vs, (list, tuple)) else [vs]
            if not vs:
                raise DesignError(f"{where}: 'then' gives {name!r} no value.")
            allowed.append((name, tuple(_scalar(v, f"{where}: a value of {name!r} in "
                                                   "'then'") for v in vs)))
        both = {f for f, _ in when} & {f for f, _ in allowed}
        if both:
            raise DesignError(f"{where} names {', '.join(sorted(both))} in both 'if' and "
                              "'then'.")
        reason = item.get("reason", "")
        out.append(Constraint(when, tuple(allowed), str(reason) if reason else ""))
    return tuple(out)


def _scalar(value: Any, what: str) -> str:
    """A factor name or value as text (lists, mappings and nulls refused)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int, float)):
        return str(value)
    raise DesignError(f"{what} is {type(value).__name__ if value is not None else 'empty'}; "
                      "it must be text or a number.")


def constraint_problems(design: Any, frame: pd.DataFrame | None = None) -> list[str]:
    """What is wrong with ``design.constraints``: a factor the design does not declare, a
    value it does not declare, and (with ``frame``) rows of the table that violate a
    constraint, named by their row number (1 = the first data row)."""
    problems = []
    names = set(design.names)
    for i, c in enumerate(design.constraints or (), start=1):
        label = f"Constraint #{i} ({c.describe()})"
        for f in c.factors:
            if f not in names:
                problems.append(f"{label} names {f!r}, which is not a factor of the design.")
        for f, values in [(f, (v,)) for f, v in c.when] + list(c.then):
            if f not in names:
                continue
            bad = [v for v in values if v not in design.factor(f).values]
            if bad:
                problems.append(f"{label}: {', '.join(repr(v) for v in bad)} is not a "
                                f"declared value of {f!r}.")
    if problems or frame is None:
        return problems
    for i, c in enumerate(design.constraints or (), start=1):
        if any(f not in frame.columns for f in c.factors):
            continue
        rows = violating_rows(c, frame)
        if len(rows):
            shown = ", ".join(str(r) for r in rows[:SHOWN_ROWS])
            more = f" and {len(rows) - SHOWN_ROWS:,} more" if len(rows) > SHOWN_ROWS else ""
            problems.append(f"Constraint #{i} ({c.describe()}) is violated by {len(rows):,} "
                            f"row{'s' if len(rows) != 1 else ''} of the table: row"
                            f"{'s' if len(rows) != 1 else ''} {shown}{more} (1 = the first "
                            "data row). Correct the rows or the constraint.")
    return problems


def violating_rows(constraint: Constraint, frame: pd.DataFrame) -> np.ndarray:
    """Row numbers (1 = the first row of ``frame``) that meet the condition of
    ``constraint`` and break its ``then``."""
    hit = np.ones(len(frame), dtype=bool)
    for f, v in constraint.when:
        hit &= frame[f].astype(str).to_numpy() == v
    broken = np.zeros(len(frame), dtype=bool)
    for f, vs in constraint.then:
        broken |= ~np.isin(frame[f].astype(str).to_numpy(), list(vs))
    return np.flatnonzero(hit & broken) + 1


def constraint_mask(constraints: Sequence[Constraint], factors: Sequence[str],
                    values: Sequence[Sequence[str]]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Which combinations of the grid ``values`` (C order over ``factors``) the
    constraints rule out, and one ``"N by <constraint>"`` reason per constraint that rules
    some out (each combination counted once, under the first constraint that rules it
    out). Constraints naming factors outside the grid are cut to it
    (:meth:`Constraint.restricted`)."""
    sizes = [len(v) for v in values]
    n_cells = int(np.prod(sizes)) if sizes else 0
    mask = np.zeros(n_cells, dtype=bool)
    if not n_cells:
        return mask, ()
    grid = np.unravel_index(np.arange(n_cells), sizes)
    index = {f: i for i, f in enumerate(factors)}
    reasons = []
    for c in constraints:
        cut = c.restricted(factors)
        if cut is None:
            continue
        hit = np.ones(n_cells, dtype=bool)
        for f, v in cut.when:
            vals = list(values[index[f]])
            hit &= grid[index[f]] == (vals.index(v) if v in vals else -1)
        broken = np.zeros(n_cells, dtype=bool)
        for f, vs in cut.then:
            ok = np.isin(np.asarray(values[index[f]], dtype=object), list(vs))
            broken |= ~ok[grid[index[f]]]
        new = hit & broken & ~mask
        if new.any():
            mask |= new
            reasons.append(f"{int(new.sum()):,} by {cut.describe()}")
    return mask, tuple(reasons)


def _controls(labels: Sequence[str]) -> np.ndarray:
    """Values named like a control ("none", "no ...", "base"): a design's reference is
    often just its first value, so it does not count here."""
    return np.array([bool(REFERENCE_PATTERN.search(v.strip())) for v in labels])


def propose_constraints(frame: pd.DataFrame, factors: Sequence[str], *,
                        counts: Sequence[int] | np.ndarray | None = None,
                        references: Mapping[str, str] | None = None
                        ) -> tuple[Constraint, ...]:
    """Constraints read off ``frame`` for control values, each with its reason.

    For a factor ``a`` and one of its control values ``v`` (a value named like "none" /
    "no ..." / "base"; :data:`analysis.values.REFERENCE_PATTERN`; a reference that is
    only the first value does not count)
    seen on at least :data:`MIN_PROPOSAL_ROWS` rows: every other factor ``b`` whose
    values on those rows are control values of ``b`` only, while ``b`` takes other values
    elsewhere, joins ``then``. SSQA: ``prompt_style = base`` implies ``stigma = no stigma``
    and ``gender = no gender``. Only control values are read this way: ``gender = female``
    occurring only with ``biased_answer = no`` is a design gap (each template fixes
    both), not a constraint.

    Parameters
    ----------
    frame
        Rows, or a cell table with ``counts``.
    factors
        Factor columns.
    counts
        Rows behind each row of ``frame`` (default 1 each; zero-count rows are ignored).
    references
        Accepted for symmetry with :func:`analysis.nesting.find_nestings`; unused.

    Returns
    -------
    tuple of Constraint
        One per (factor, control value) that implies something, ``reason`` saying how
        many rows show it.
    """
    weights = (np.ones(len(frame), dtype=np.int64) if counts is None
               else np.asarray(counts, dtype=np.int64))
    keep = weights > 0
    coded = {}
    for f in factors:
        c, labels = factor_values(frame[f])
        codes = c.to_numpy(dtype=np.int64)[keep]
        present = np.bincount(codes, minlength=len(labels)) > 0
        coded[f] = (codes, list(labels), _controls(labels), present)
    w = weights[keep]
    out = []
    for a in factors:
        codes_a, labels_a, control_a, _ = coded[a]
        for i in np.flatnonzero(control_a):
            rows = codes_a == i
            n_rows = int(w[rows].sum())
            if n_rows < MIN_PROPOSAL_ROWS:
                continue
            then = []
            for b in factors:
                if b == a:
                    continue
                codes_b, labels_b, control_b, present_b = coded[b]
                seen = np.bincount(codes_b[rows], minlength=len(labels_b)) > 0
                if seen.any() and (seen <= control_b).all() and (present_b & ~seen).any():
                    then.append((b, tuple(labels_b[j] for j in np.flatnonzero(seen))))
            if then:
                c = Constraint(((a, labels_a[i]),), tuple(then))
                listed = " and ".join(f"{b} = {', '.join(vs)}" for b, vs in then)
                out.append(Constraint(c.when, c.then,
                                      f"all {n_rows:,} rows with {a} = {labels_a[i]} have "
                                      f"{listed} (control values; elsewhere the factor"
                                      f"{'s take' if len(then) > 1 else ' takes'} other "
                                      "values)"))
    return tuple(out)
