"""Template variants: the prompts that fill design gaps a template structure leaves.

When each template fixes two factors (SSQA's templates fix ``gender`` and
``biased_answer``), a pair of values no template holds (``gender = female`` with
``biased_answer = yes``) is empty by construction, not by logic: a *variant* of a
template, its text with one of those factors changed ("template 6 with
biased_answer = yes"), yields prompts for it. This module lists the candidate variants
(:func:`candidate_variants`), ranks them by coverage and Gini gain (:func:`rank_variants`)
and sums the complete crossing of each nested factor with the templates
(:func:`crossings`); :func:`analysis.planning.plan_additions` spends a budget on them
(``docs/planning.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.values import REFERENCE_PATTERN, factor_values

__all__ = ["GINI_SHORTLIST", "MAX_CANDIDATES", "MAX_RANKED", "Variant", "candidate_variants",
           "crossings",
           "nested_in_template", "rank_variants"]

#: Most candidate variants examined, and most ranked (the rest keep their order).
MAX_CANDIDATES = 2_000
MAX_RANKED = 400
#: Candidates tied on coverage whose Gini index after them is computed at each step (those
#: whose combinations hold the fewest prompts on average).
GINI_SHORTLIST = 16


@dataclass(frozen=True)
class Variant:
    """Template ``template`` with ``factor`` changed from ``fixed`` to ``value``.

    ``cells`` are the grid positions (C order) of its prompts, one prompt each: the
    template's combinations with ``factor = fixed``, with ``value`` instead, less those a
    constraint rules out.
    """

    template: str
    factor: str
    fixed: str
    value: str
    cells: np.ndarray

    @property
    def n_prompts(self) -> int:
        """Prompts the whole variant yields."""
        return int(len(self.cells))

    def describe(self) -> str:
        """``"template 6 with biased_answer = yes (instead of no)"``."""
        return f"template {self.template} with {self.factor} = {self.value} (instead of " \
               f"{self.fixed})"


def nested_in_template(rows: pd.DataFrame, template: str, factors: Sequence[str], *,
                       references: Mapping[str, str] | None = None) -> list[str]:
    """The ``factors`` whose value each template fixes (also outside control values:
    :func:`analysis.nesting.find_nestings` with the template as determinant)."""
    from analysis.nesting import find_nestings

    found = find_nestings(rows, [template, *factors], references=references)
    return [r["dependent"] for r in found.to_dict(orient="records")
            if r["determinant"] == template and r["dependent"] in factors
            and r["kind"] in ("nested", "nested outside reference", "equivalent")]


def candidate_variants(rows: pd.DataFrame, template: str, factors: Sequence[str],
                       values: Sequence[Sequence[str]], allowed: np.ndarray, *,
                       references: Mapping[str, str] | None = None
                       ) -> tuple[list[Variant], list[str]]:
    """Every variant of every template that changes one nested factor to another value
    of the grid, and the nested factors.

    Parameters
    ----------
    rows
        Observed rows or cells (``n`` > 0 kept) with the ``template`` column and every
        factor.
    template
        The template column (a design's cluster).
    factors, values
        The grid (C order over ``factors``).
    allowed
        Grid positions no constraint rules out (a variant's prompts there are dropped).
    references
        Reference value per factor (for :func:`nested_in_template`). Control values
        (named like "none" / "no ..." / "base") are not changed by a variant: SSQA's base
        prompt keeps "no gender" in every gender variant.
    """
    if "n" in rows.columns:
        rows = rows[rows["n"] > 0]
    nested = nested_in_template(rows, template, factors, references=references)
    if not nested or not len(rows):
        return [], nested
    sizes = [len(v) for v in values]
    index = {f: i for i, f in enumerate(factors)}
    codes = []
    for f, vals in zip(factors, values, strict=True):
        raw, labels_f = factor_values(rows[f])
        pos = {v: i for i, v in enumerate(vals)}
        remap = np.array([pos.get(lab, -1) for lab in labels_f], dtype=np.int64)
        codes.append(remap[raw.to_numpy(dtype=np.int64)])
    codes = np.vstack(codes)
    inside = (codes >= 0).all(axis=0)
    t_codes, t_labels = factor_values(rows[template])
    t_codes = t_codes.to_numpy(dtype=np.int64)
    order = np.argsort(t_codes, kind="stable")  # each template's rows: one slice
    bounds = np.searchsorted(t_codes[order], np.arange(len(t_labels) + 1))
    out: list[Variant] = []
    for f in nested:
        j = index[f]
        # values named like a control ("no gender"): a reference such as "gender
        # neutral" is an ordinary value a template may fix
        control = np.array([bool(REFERENCE_PATTERN.search(v.strip())) for v in values[j]])
        for t in range(len(t_labels)):
            mine = order[bounds[t]:bounds[t + 1]]
            mine = mine[inside[mine]]
            own = np.unique(codes[j, mine])
            own = own[~control[own]] if (~control[own]).any() else own
            if len(own) != 1:
                continue
            fixed = int(own[0])
            base = codes[:, mine[codes[j, mine] == fixed]]
            for v in range(sizes[j]):
                if v == fixed:
                    continue
                moved = base.copy()
                moved[j] = v
                cells = np.unique(np.ravel_multi_index(tuple(moved), sizes))
                cells = cells[allowed[cells]]
                if len(cells):
                    out.append(Variant(str(t_labels[t]), f, values[j][fixed], values[j][v],
                                       cells))
                if len(out) >= MAX_CANDIDATES:
                    return out, nested
    return out, nested


def _factor_order(variants: Sequence[Variant]) -> dict[str, int]:
    """Nested factors by the cost of crossing them with every template (the prompts of
    all their variants), cheapest first: the tie-break between equal variants."""
    cost: dict[str, int] = {}
    for v in variants:
        cost[v.factor] = cost.get(v.factor, 0) + v.n_prompts
    return {f: i for i, f in enumerate(sorted(cost, key=lambda f: (cost[f], f)))}


def rank_variants(variants: Sequence[Variant], counts: np.ndarray) -> pd.DataFrame:
    """The variants in the order a greedy planner adds them, with the grid after each.

    Each step adds the variant that fills the most empty combinations; among those, one
    of the nested factor that is cheapest to cross with every template
    (:func:`_factor_order`: the prompts of all its variants; SSQA's ``biased_answer``,
    20,720 prompts, before ``gender``, 41,292, for the same 1,116 gaps); then the one
    leaving the lowest Gini index (computed for the :data:`GINI_SHORTLIST` candidates
    whose combinations hold the fewest prompts on average); then the first template.
    Once no variant fills a gap, the cheapest factor's variants come first: its complete
    crossing is the plan's recommended extension. Variants with the same combinations
    are ranked as one group (one sparse product per step).

    Returns
    -------
    pandas.DataFrame
        One row per variant (ranked first, at most :data:`MAX_RANKED`; the rest follow
        unranked with NaN after-values): ``rank``, ``template``, ``factor``, ``from_value``
        (the template's value), ``value``, ``n_prompts`` (prompts of the whole variant),
        ``new_cells`` (empty combinations it fills at its rank), ``coverage_percentage``
        and ``gini_index`` (of the grid after it and every variant ranked before it),
        ``variant`` (the position in ``variants``).
    """
    from scipy import sparse

    from analysis.coverage import coverage_percentage, gini_index

    columns = ["rank", "template", "factor", "from_value", "value", "n_prompts",
               "new_cells", "coverage_percentage", "gini_index", "variant"]
    current = np.asarray(counts, dtype=np.int64).copy()
    if not variants:
        return pd.DataFrame(columns=columns)
    order_f = _factor_order(variants)
    groups: dict[bytes, list[int]] = {}
    for i, v in enumerate(variants):
        groups.setdefault(v.cells.tobytes(), []).append(i)
    members = [sorted(m, key=lambda i: (order_f[variants[i].factor], i))
               for m in groups.values()]
    cells = [variants[m[0]].cells for m in members]
    size = np.array([len(c) for c in cells], dtype=float)
    incidence = sparse.csr_matrix(
        (np.ones(int(size.sum())), np.concatenate(cells),
         np.concatenate([[0], np.cumsum(size).astype(np.int64)])),
        shape=(len(cells), len(current)))
    rank_f = np.array([order_f[variants[m[0]].factor] for m in members], dtype=float)
    left = np.array([len(m) for m in members])
    rows = []
    while left.any() and len(rows) < MAX_RANKED:
        live = left > 0
        new = incidence @ (current == 0).astype(float)
        score = np.where(live, -new * (len(order_f) + 1) + rank_f, np.inf)
        tied = np.flatnonzero(score == score.min())
        if len(tied) > 1:
            mean = (incidence[tied] @ current.astype(float)) / size[tied]
            tied = tied[np.argsort(mean, kind="stable")[:GINI_SHORTLIST]]
            ginis = []
            for g in tied:
                current[cells[g]] += 1
                ginis.append(gini_index(current))
                current[cells[g]] -= 1
            g = int(tied[int(np.argmin(ginis))])
        else:
            g = int(tied[0])
        pick = members[g][len(members[g]) - int(left[g])]
        left[g] -= 1
        v = variants[pick]
        filled = int((current[v.cells] == 0).sum())
        current[v.cells] += 1
        rows.append({"rank": len(rows) + 1, "template": v.template, "factor": v.factor,
                     "from_value": v.fixed, "value": v.value, "n_prompts": v.n_prompts,
                     "new_cells": filled, "coverage_percentage": coverage_percentage(current),
                     "gini_index": gini_index(current), "variant": pick})
    ranked = {r["variant"] for r in rows}
    for i, v in enumerate(variants):
        if i not in ranked:
            rows.append({"rank": np.nan, "template": v.template, "factor": v.factor,
                         "from_value": v.fixed, "value": v.value, "n_prompts": v.n_prompts,
                         "new_cells": np.nan, "coverage_percentage": np.nan,
                         "gini_index": np.nan, "variant": i})
    return pd.DataFrame(rows, columns=columns)


def crossings(variants: Sequence[Variant], counts: np.ndarray) -> pd.DataFrame:
    """Each nested factor crossed with every template: all its variants added at once.

    Returns
    -------
    pandas.DataFrame
        One row per nested factor, cheapest first: ``factor``, ``n_variants``,
        ``n_prompts``, ``new_cells`` (empty combinations filled), ``coverage_percentage``
        and ``gini_index`` of the grid after them.
    """
    from analysis.coverage import coverage_percentage, gini_index

    counts = np.asarray(counts, dtype=np.int64)
    rows = []
    for f in _factor_order(variants):
        after = counts.copy()
        mine = [v for v in variants if v.factor == f]
        for v in mine:
            after[v.cells] += 1
        rows.append({"factor": f, "n_variants": len(mine),
                     "n_prompts": sum(v.n_prompts for v in mine),
                     "new_cells": int(((counts == 0) & (after > 0)).sum()),
                     "coverage_percentage": coverage_percentage(after),
                     "gini_index": gini_index(after)})
    return pd.DataFrame(rows, columns=["factor", "n_variants", "n_prompts", "new_cells",
                                       "coverage_percentage", "gini_index"])
