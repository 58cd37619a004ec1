"""Constraints, design gaps and template variants in a plan (``docs/planning.md``).

:func:`analysis.planning.plan_additions` counts the grid; this module decides which empty
combinations it may fill and with what:

- **ruled out by a constraint** (:mod:`analysis.constraints`: declared in the design, or
  proposed for control values when the design declares none): never proposed;
- **design gaps reached by a template variant** (:mod:`analysis.variants`): empty only
  because each template fixes two factors; proposed by default (kind ``variant``, the
  template to vary named), not with ``within_structure``;
- **plain gaps** (empty, allowed by the observed structure): kind ``gap``;
- combinations the observed structure rules out (:func:`analysis.structure.excluded_cells`)
  that no variant reaches: never proposed, as before.

Observed combinations levelled up are kind ``fill``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError, BudgetError

__all__ = ["KIND", "SHOWN_VARIANTS", "TEMPLATE", "Allocation", "allocate",
           "template_columns", "variants_text"]

#: Ranked variants the plan command prints.
SHOWN_VARIANTS = 12

#: Columns of a plan's rows: what the row is (fill, gap, variant) and the template to vary.
KIND = "kind"
TEMPLATE = "template"


@dataclass(frozen=True)
class Allocation:
    """Where a plan's budget goes (:func:`allocate`)."""

    extra: np.ndarray
    rows: pd.DataFrame  # cell (grid position), n, kind, template
    notes: tuple[str, ...]
    n_excluded: int
    n_constraint: int
    n_gaps: int
    variants: pd.DataFrame = field(default_factory=pd.DataFrame)
    crossings: pd.DataFrame = field(default_factory=pd.DataFrame)


def _constraints(design, table: pd.DataFrame, factors: Sequence[str], references) -> tuple:
    """The design's constraints, or (none declared) those proposed from the table."""
    from analysis.constraints import propose_constraints

    if design.constraints is not None:
        return tuple(design.constraints), "declared in the design"
    if not len(table):
        return (), ""
    proposed = propose_constraints(table, list(factors), counts=table["n"].to_numpy(),
                                   references=references)
    return proposed, ("proposed by the structure inference for control values (confirm "
                      "them on the Design page or under constraints: in the design file)")


def allocate(table: pd.DataFrame, design, factors: Sequence[str],
             values: Sequence[Sequence[str]], counts: np.ndarray, structure, budget: int, *,
             template: str | None = None, within_structure: bool = False,
             whole_variants: bool = False, water_fill=None) -> Allocation:  # noqa: ANN001
    """Spend ``budget`` prompts over the grid (see the module docstring).

    Parameters
    ----------
    table
        Observed cells (every row; ``n`` > 0 kept) with the factors and, for variants,
        the ``template`` column.
    counts
        Rows per grid position (C order over ``factors`` and ``values``).
    structure
        :class:`analysis.structure.Exclusions` of the observed structure, or None.
    template
        The template column (variants need it; None: no variants).
    within_structure
        Stay inside the observed structure: the variants are ranked and reported, no
        prompt comes from them.
    whole_variants
        Spend the budget on whole variants (ranked order) and the rest on fills and plain
        gaps; a budget below the smallest useful variant is a :class:`BudgetError`.
    water_fill
        :func:`analysis.planning.water_fill` (passed in: planning imports this module).
    """
    from analysis.constraints import constraint_mask

    references = {f: design.factor(f).reference for f in factors}
    n_cells = len(counts)
    if template and len(table) and template not in table.columns:
        raise AnalysisError(f"No template column {template!r} in the table: name the column "
                            "whose values are the templates (--template COL).")
    observed = table[table["n"] > 0] if len(table) else table
    constraints, source = _constraints(design, observed, factors, references)
    c_mask, c_reasons = constraint_mask(constraints, factors, values)
    c_mask &= counts == 0
    s_mask = np.zeros(n_cells, dtype=bool) if structure is None else structure.mask.copy()
    s_mask &= ~c_mask
    variants: list = []
    nested: list[str] = []
    if template in factors:  # a planned factor: its values are combinations, not templates
        template = None
    if template and template in observed.columns and len(observed):
        from analysis.variants import candidate_variants

        variants, nested = candidate_variants(observed, template, factors, values, ~c_mask,
                                              references=references)
    reach = np.zeros(n_cells, dtype=bool)
    for v in variants:
        reach[v.cells] = True
    empty = counts == 0
    via_variant = empty & s_mask & reach  # gaps only a variant fills
    possible = ~c_mask & (~s_mask | (via_variant & (not within_structure)))
    plain = empty & ~c_mask & ~s_mask
    n_gaps = int((empty & ~c_mask).sum())
    from analysis.variants import crossings, rank_variants

    useful = [v for v in variants if via_variant[v.cells].any()]
    ranked = rank_variants(variants, counts) if useful else pd.DataFrame()
    crossed = crossings(variants, counts) if useful else pd.DataFrame()
    extra = np.zeros(n_cells, dtype=np.int64)
    rows: list[tuple[int, int, str, str]] = []  # cell, n, kind, template
    planned = np.zeros(len(variants), dtype=np.int64)  # prompts of this plan per variant
    if within_structure:  # reported, not used
        extra[possible] = water_fill(counts[possible], int(budget))
        rows += [(int(c), int(extra[c]), "fill" if counts[c] else "gap", "")
                 for c in np.flatnonzero(extra)]
    elif whole_variants and useful:
        left = int(budget)
        smallest = min(useful, key=lambda v: (v.n_prompts, variants.index(v)))
        if left < smallest.n_prompts:
            raise BudgetError(
                f"A budget of {left:,} prompt{'s' if left != 1 else ''} is smaller than one "
                f"template variant: the smallest that fills a gap, {smallest.describe()}, yields "
                f"{smallest.n_prompts:,} prompts. Raise the budget to at least "
                f"{smallest.n_prompts:,}, or plan without whole variants (prompts for part "
                "of a variant).")
        for r in ranked.itertuples():
            v = variants[int(r.variant)]
            if v.n_prompts <= left and not np.isnan(r.rank):
                extra[v.cells] += 1
                left -= v.n_prompts
                planned[int(r.variant)] = v.n_prompts
                rows += [(int(c), 1, "variant", v.template) for c in v.cells]
        if left:
            rest = np.flatnonzero(possible & ~via_variant)
            fill = water_fill(counts[rest] + extra[rest], left)
            extra[rest] += fill
            rows += [(int(c), int(k), "fill" if counts[c] else "gap", "")
                     for c, k in zip(rest, fill, strict=True) if k]
    else:
        extra[possible] = water_fill(counts[possible], int(budget))
        need = np.where(via_variant, extra, 0)
        for r in ranked.itertuples() if len(ranked) else ():
            v = variants[int(r.variant)]
            take = v.cells[need[v.cells] > 0]
            need[take] -= 1
            planned[int(r.variant)] = len(take)
            rows += [(int(c), 1, "variant", v.template) for c in take]
        for c in np.flatnonzero(extra):
            k = int(need[c]) if via_variant[c] else int(extra[c])  # need: unattributed
            if k:
                rows.append((int(c), k, "fill" if counts[c] else "gap", ""))
    frame = pd.DataFrame(rows, columns=["cell", "n", KIND, TEMPLATE])
    frame = frame.groupby(["cell", KIND, TEMPLATE], sort=False, as_index=False)["n"].sum()
    notes = _notes(counts, c_mask, c_reasons, source, s_mask & ~via_variant, structure,
                   via_variant, plain, factors, values, nested, crossed, within_structure,
                   template, frame, budget, variants)
    if len(ranked):
        ranked = ranked.assign(n_planned=planned[ranked["variant"].to_numpy(dtype=np.int64)]
                               ).drop(columns="variant")
    n_excluded = int((c_mask | (s_mask & ~(via_variant & (not within_structure)))).sum())
    return Allocation(extra, frame, tuple(notes), n_excluded, int(c_mask.sum()), n_gaps,
                      ranked, crossed)


def _notes(counts, c_mask, c_reasons, source, s_left, structure, via_variant, plain,
           factors, values, nested, crossed, within_structure, template, frame, budget,
           variants) -> list[str]:
    """The plan's notes on the kinds of empty combinations and the variants."""
    n_cells = len(counts)
    empty = int((counts == 0).sum())
    notes = []
    if not empty:
        return notes
    parts = [f"Of the {empty:,} empty combinations of the {n_cells:,}:"]
    if c_mask.any():
        parts.append(f"{int(c_mask.sum()):,} are ruled out by constraints, never proposed "
                     f"({'; '.join(c_reasons)}; {source});")
    gaps = int(((counts == 0) & ~c_mask).sum())
    parts.append(f"{gaps:,} are design gaps" if gaps else "none is a design gap")
    if via_variant.any():
        sizes = [len(v) for v in values]
        grid = np.unravel_index(np.flatnonzero(via_variant), sizes)
        idx = [factors.index(f) for f in nested]
        combos = pd.Series(list(zip(*[np.asarray(values[i], dtype=object)[grid[i]]
                                      for i in idx], strict=True))).value_counts(sort=False)
        listed = ", ".join(f"{n:,} with " + " and ".join(
            f"{f} = {v}" for f, v in zip(nested, key, strict=True))
            for key, n in combos.items())
        parts.append(f"({int(via_variant.sum()):,} empty only because each {template} fixes "
                     f"{' and '.join(nested)}: {listed}; "
                     + ("not proposed: --within-structure keeps to the observed structure"
                        if within_structure else "filled by template variants") + ")")
    if plain.any():
        parts.append(f"({int(plain.sum()):,} allowed by the observed structure: kind gap)")
    notes.append(" ".join(parts) + ".")
    if s_left.any() and structure is not None:
        notes.append(f"Left out {int(s_left.sum()):,} combinations that the observed "
                     "structure rules out and no template variant reaches (never proposed): "
                     + "; ".join(structure.reasons) + ".")
    if len(crossed):
        for r in crossed.itertuples():
            notes.append(f"Every {template} in every value of {r.factor}: {r.n_variants:,} "
                         f"variants, {r.n_prompts:,} prompts, filling {r.new_cells:,} gaps "
                         f"(coverage {100 * r.coverage_percentage:.2f} %, Gini index "
                         f"{r.gini_index:.4f} after).")
    from analysis.variants import MAX_CANDIDATES, MAX_RANKED

    if len(variants) >= MAX_CANDIDATES:
        notes.append(f"The first {MAX_CANDIDATES:,} candidate template variants were "
                     "examined (more exist): plan over fewer factors or a subset to see all.")
    if len(variants) > MAX_RANKED:
        notes.append(f"The first {MAX_RANKED:,} template variants are ranked; the other "
                     f"{len(variants) - MAX_RANKED:,} follow unranked, in the order found.")
    used = frame[frame[KIND] == "variant"]
    if len(used):
        whole = {(v.template, v.factor, v.value): v.n_prompts for v in variants}
        n_t = used.groupby(TEMPLATE)["n"].sum()
        notes.append(f"{int(used['n'].sum()):,} of the {int(budget):,} prompts come from "
                     f"variants of {len(n_t)} {template}(s) ("
                     + ", ".join(f"{t}: {int(n):,}" for t, n in n_t.items())
                     + f"); a whole variant yields {min(whole.values()):,} to "
                     f"{max(whole.values()):,} prompts.")
    return notes


def template_columns(design, table: pd.DataFrame, template: str | None = None
                     ) -> list[str]:
    """The design's factors and the template column (``template``, default the design's
    cluster) when ``table`` has it: the columns of the cell table a plan counts."""
    template = template or design.cluster
    extra = template if template and template in table.columns \
        and template not in design.names else None
    return [*design.names, *([extra] if extra else [])]


def variants_text(variants: pd.DataFrame, top: int = SHOWN_VARIANTS) -> str:
    """The first ``top`` ranked variants as lines of text (the ``plan`` command)."""
    ranked = variants[variants["rank"].notna()]
    lines = [f"Template variants, ranked by coverage and Gini gain ({len(variants):,} "
             f"candidates; the first {min(top, len(ranked))}):"]
    for r in ranked.head(top).itertuples():
        lines.append(f"  {int(r.rank):>3}. template {r.template} with {r.factor} = {r.value} "
                     f"(instead of {r.from_value}): {int(r.n_prompts):,} prompts, "
                     f"{int(r.new_cells):,} new combinations -> coverage "
                     f"{100 * r.coverage_percentage:.2f} %, Gini index {r.gini_index:.4f}"
                     f"; {int(r.n_planned):,} in this plan")
    return "\n".join(lines)
