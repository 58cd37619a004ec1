"""Design study (D-study): projected standard errors for other designs, their cost, and
the cheapest design reaching a target (docs/measurement_error.md).

From a fitted G-study (:mod:`analysis.variance_components`), the variance of a headline
number (a model's rate, the difference between two models) is a sum of components::

    Var = sum over groups g of sigma2_g * e_g + sigma2_e * e_e

where ``e_g = sum_l a_l^2`` is the number's weights on the levels of group ``g`` in the
observed design (``1 / levels`` when balanced) and ``e_e = sum_c a_c^2 / n_c``. A new
design multiplies a facet's levels by ``m_f`` (levels within each level of the facets it
is nested in: 10 more templates, 2 seeds instead of 1 ...). Group ``g``'s levels are then
multiplied by ``L_g = m_f x (the multipliers of the facets f is nested in)`` and ``e_g``
divided by it; the rows (and ``e_e``) by the product of every facet's multiplier. This
is exact for balanced designs and a first-order projection otherwise.

Cost: ``answer_cost`` per prompt answered and ``judge_cost`` per judge call, both given
by the caller (the judges' cost model lives in ``judges/cost.py``, above this layer).
Facets on the judging side (a judge column, and samples per judgment when there is a
judge column) multiply judge calls, not answers.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError
from analysis.variance_components import JUDGE_WORDS, RESIDUAL, GStudy, contribution, name_words

__all__ = ["DStudy", "MULTIPLIERS", "d_study", "judge_side", "one_or_ten", "project"]

#: Multipliers of each facet's levels tried by the search for the cheapest design.
MULTIPLIERS: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 10.0)
_SAMPLE_WORDS = ("sample", "samples", "draw", "repeat", "repetition", "epoch")


@dataclass
class DStudy:
    """What :func:`d_study` returns.

    Attributes
    ----------
    current
        One row: the observed design (columns as ``designs``).
    changes
        One row per single change (one facet +1 level, +10 levels, x2): ``change``,
        ``facet``, the levels of every facet (``levels_<facet>``), ``rows``, ``answers``,
        ``judge_calls``, ``cost``, ``se_rate``, ``se_difference``, ``g_coefficient``,
        ``phi``, ``extra_cost`` (over the current design), ``se_gain`` (how much the
        target's SE falls), ``se_gain_per_cost``.
    designs
        Every design searched (multipliers :data:`MULTIPLIERS` of each facet), same columns.
    cheapest
        The cheapest design whose target SE is at most ``target_se`` (empty if none);
        ``best_at_cost``: the design with the smallest target SE at no more than the
        current cost (a reallocation).
    """

    current: pd.DataFrame
    changes: pd.DataFrame
    designs: pd.DataFrame
    cheapest: pd.DataFrame
    best_at_cost: pd.DataFrame
    target: str
    target_se: float | None
    notes: list[str]


def judge_side(facets: Sequence[str]) -> list[str]:
    """Facets that multiply judge calls rather than answers: a judge column, and a
    samples-per-judgment column when there is a judge column."""
    def words(name: str) -> set[str]:
        import re

        return set(re.split(r"[^a-z0-9]+", name.lower()))

    judges = [f for f in facets if words(f) & set(JUDGE_WORDS)]
    samples = [f for f in facets if judges and f not in judges and words(f) & set(_SAMPLE_WORDS)]
    return [*judges, *samples]


def one_or_ten(ds: DStudy, facets: Sequence[str]) -> str | None:
    """The answer to "one more judge or ten more templates?" as one sentence with the
    numbers of ``ds.changes``: the target's SE now, after one more level of the judging
    facet (a judge column, else samples per judgment or a seed / replicate column) and
    after ten more levels of the first other facet (the template), each with its extra
    cost, and which gains more SE per unit of cost. None when the fit has no such pair.
    """
    from analysis.values import REPLICATE_WORDS

    judging = judge_side(facets)
    replicate = [f for f in facets if set(name_words(f)) & set(REPLICATE_WORDS)]
    one = next(iter([*judging, *replicate]), None)
    ten = next((f for f in facets if f != one and f not in judging and f not in replicate),
               None)
    if one is None or ten is None:
        return None
    key = "se_difference" if ds.target == "difference" else "se_rate"
    changes = ds.changes.set_index("change")
    if f"+1 {one}" not in changes.index or f"+10 {ten}" not in changes.index:
        return None
    a, b = changes.loc[f"+1 {one}"], changes.loc[f"+10 {ten}"]
    now = float(ds.current[key].iloc[0])
    plural = ten if ten.endswith("s") else f"{ten}s"
    text = (f"One more {one}: SE of the {ds.target} {now:.4g} -> {a[key]:.4g} for "
            f"{a['extra_cost']:,.4g} more; ten more {plural}: {now:.4g} -> {b[key]:.4g} for "
            f"{b['extra_cost']:,.4g} more.")
    gain_a, gain_b = now - float(a[key]), now - float(b[key])
    if a["extra_cost"] <= 0 or b["extra_cost"] <= 0:
        free = one if a["extra_cost"] <= 0 else plural
        return text + (f" The {free} cost nothing at these prices (set the cost per judge "
                       f"call / per answer); in SE alone, "
                       + (f"ten more {plural}" if gain_b > gain_a else f"one more {one}")
                       + " gains more.")
    per_a, per_b = gain_a / a["extra_cost"], gain_b / b["extra_cost"]
    if per_a >= per_b:
        verdict = (f"Per unit of cost one more {one} is the better buy "
                   f"({per_a / per_b:.2g} x the SE gain of ten more {plural})."
                   if per_b > 0 else f"Only one more {one} lowers the SE.")
    else:
        verdict = (f"Per unit of cost ten more {plural} are the better buy "
                   f"({per_b / per_a:.2g} x the SE gain of one more {one})."
                   if per_a > 0 else f"Only ten more {plural} lower the SE.")
    return f"{text} {verdict}"




def _headline_weights(gs: GStudy) -> tuple[list[np.ndarray], list[np.ndarray]]:
    cells = gs.cells
    w = cells["n"].to_numpy(dtype=float)
    if gs.model is None:
        return [w / w.sum()], []
    rates = []
    for m in pd.unique(cells[gs.model]):
        mask = (cells[gs.model] == m).to_numpy()
        rates.append(np.where(mask, w / w[mask].sum(), 0.0))
    return rates, [a - rates[0] for a in rates[1:]]


def _efficiencies(gs: GStudy, vectors: list[np.ndarray]) -> dict[str, float]:
    """Mean over ``vectors`` of each component's variance factor ``e`` (not x sigma2)."""
    if not vectors:
        return {}
    out: dict[str, float] = {}
    for a in vectors:
        for name, v in contribution(gs, a).items():
            sigma2 = gs.variance(name)
            e = v / sigma2 if sigma2 > 0 else _raw_factor(gs, name, a)
            out[name] = out.get(name, 0.0) + e / len(vectors)
    return out


def _raw_factor(gs: GStudy, name: str, a: np.ndarray) -> float:
    if name == RESIDUAL:
        return float(np.sum(a ** 2 / gs.cells["n"].to_numpy(dtype=float)))
    group = next(g for g in gs.groups if g.name == name)
    per_level = np.bincount(group.codes, weights=a, minlength=group.levels)
    return float(per_level @ per_level)


def project(gs: GStudy, multipliers: Mapping[str, float]) -> dict[str, float]:
    """Projected variances of the headline numbers for facet multipliers
    ``{facet: m}`` (missing facets: 1): ``var_rate`` (a model's rate, averaged over
    the models), ``var_difference`` (a model minus the first, averaged), ``var_relative``
    (one model's error relative to the others: facet x model interactions and residual),
    ``rows_factor`` (rows of the new design / rows now)."""
    m = {f: float(multipliers.get(f, 1.0)) for f in _facets(gs)}
    level_factor = {f: m[f] * float(np.prod([m[p] for p in gs.nested_in.get(f, [])]))
                    for f in m}
    rows_factor = float(np.prod(list(m.values()))) if m else 1.0
    rate_v, diff_v = _headline_weights(gs)
    out = {"rows_factor": rows_factor}
    for key, vectors in (("var_rate", rate_v), ("var_difference", diff_v)):
        eff = _efficiencies(gs, vectors)
        if not eff:
            out[key] = np.nan
            continue
        total = 0.0
        for g in gs.groups:
            total += gs.variance(g.name) * eff.get(g.name, 0.0) / level_factor[g.facet]
        total += gs.variance(RESIDUAL) * eff.get(RESIDUAL, 0.0) / rows_factor
        out[key] = total
    eff = _efficiencies(gs, rate_v)
    out["var_relative"] = (sum(gs.variance(g.name) * eff.get(g.name, 0.0)
                               / level_factor[g.facet] for g in gs.groups if g.interaction)
                           + gs.variance(RESIDUAL) * eff.get(RESIDUAL, 0.0) / rows_factor)
    return out


def _facets(gs: GStudy) -> list[str]:
    return list(dict.fromkeys(g.facet for g in gs.groups))


def _total_levels(gs: GStudy, observed: Mapping[str, float], mult: Mapping[str, float],
                  f: str) -> float:
    """Levels of facet ``f`` in the design ``mult``: a nested facet's (seeds within
    templates) grow with the facets it is nested in, as :func:`project` assumes."""
    return observed[f] * mult.get(f, 1.0) * float(
        np.prod([mult.get(p, 1.0) for p in gs.nested_in.get(f, [])]))


def _model_variance(gs: GStudy) -> float:
    """Variance of the models' true rates (the universe-score variance when models are
    the objects of measurement), by moments: the rates' variance less the mean error."""
    if gs.model is None:
        return np.nan
    cells = gs.cells
    rates = (cells.groupby(gs.model, observed=True)
             .apply(lambda c: np.average(c["_ybar"], weights=c["n"]), include_groups=False))
    if len(rates) < 2:
        return np.nan
    return max(float(np.var(rates.to_numpy(), ddof=1)) - project(gs, {})["var_relative"], 0.0)


def d_study(gs: GStudy, *, levels: Mapping[str, int] | None = None,
            target_se: float | None = None, target: str | None = None,
            answer_cost: float = 1.0, judge_cost: float = 0.0,
            max_cost: float | None = None) -> DStudy:
    """Projected SE, generalizability coefficient and cost of other designs (see
    :func:`_d_study`, whose docstring lists the parameters and tables)."""
    from analysis.variance_components import one_thread

    with one_thread():  # many small dot products: BLAS threads only contend
        return _d_study(gs, levels=levels, target_se=target_se, target=target,
                        answer_cost=answer_cost, judge_cost=judge_cost, max_cost=max_cost)


def _d_study(gs: GStudy, *, levels: Mapping[str, int] | None = None,
             target_se: float | None = None, target: str | None = None,
             answer_cost: float = 1.0, judge_cost: float = 0.0,
             max_cost: float | None = None) -> DStudy:
    """Projected SE, generalizability coefficient and cost of other designs.

    Parameters
    ----------
    gs
        A fitted G-study.
    levels
        A design to project besides the search (``{facet: levels}``), shown as the
        ``changes`` row ``"as asked"``.
    target_se
        The SE wanted for the target number: the cheapest design reaching it is found.
    target
        ``"difference"`` (between models; the default with two or more models) or
        ``"rate"`` (a model's rate).
    answer_cost, judge_cost
        Cost of one prompt answered and of one judge call (any unit: dollars, seconds).
    max_cost
        Leave out designs costing more.

    Returns
    -------
    DStudy
        Tables documented on :class:`DStudy`.

    Raises
    ------
    AnalysisError
        A negative cost, an unknown facet in ``levels``, an unknown ``target``.
    """
    if answer_cost < 0 or judge_cost < 0:
        raise AnalysisError("Costs must be zero or more (answer_cost, judge_cost).")
    facets = _facets(gs)
    observed = {f: next(g.levels for g in gs.groups if g.facet == f and not g.interaction)
                for f in facets}
    has_models = gs.model is not None and gs.cells[gs.model].nunique() > 1
    target = target or ("difference" if has_models else "rate")
    if target not in ("rate", "difference"):
        raise AnalysisError(f"target must be 'rate' or 'difference', not {target!r}.")
    if target == "difference" and not has_models:
        raise AnalysisError("target='difference' needs two or more models: use target='rate'.")
    unknown = [f for f in (levels or {}) if f not in observed]
    if unknown:
        raise AnalysisError(f"Not a fitted facet: {', '.join(map(repr, unknown))} "
                            f"(facets: {', '.join(facets) or 'none'}).")
    judging = judge_side(facets)
    judged_now = float(np.prod([observed[f] for f in judging])) if judging else 1.0
    answers_now = gs.n_rows / judged_now
    tau2 = _model_variance(gs)
    notes = []
    if judge_cost > 0 and not judging:
        notes.append("No judge facet in the table: one judge call per answer is counted.")

    def row(mult: Mapping[str, float]) -> dict[str, float]:
        p = project(gs, mult)
        answer_factor = float(np.prod([mult.get(f, 1.0) for f in facets if f not in judging]))
        answers = answers_now * answer_factor
        calls = p["rows_factor"] * gs.n_rows if judging else (answers if judge_cost > 0
                                                                else 0.0)
        out = {f"levels_{f}": _total_levels(gs, observed, mult, f) for f in facets}
        abs_err = p["var_rate"]
        out.update(rows=p["rows_factor"] * gs.n_rows, answers=answers, judge_calls=calls,
                   cost=answers * answer_cost + calls * judge_cost,
                   se_rate=np.sqrt(p["var_rate"]), se_difference=np.sqrt(p["var_difference"]),
                   g_coefficient=tau2 / (tau2 + p["var_relative"]) if tau2 == tau2 else np.nan,
                   phi=tau2 / (tau2 + abs_err) if tau2 == tau2 else np.nan)
        return out

    key = "se_difference" if target == "difference" else "se_rate"
    current = pd.DataFrame([{"change": "current design", "facet": "", **row({})}])
    now_se, now_cost = float(current[key].iloc[0]), float(current["cost"].iloc[0])
    changes = []
    for f in facets:
        for label, new in ((f"+1 {f}", observed[f] + 1), (f"+10 {f}", observed[f] + 10),
                           (f"x2 {f}", 2 * observed[f])):
            changes.append({"change": label, "facet": f, **row({f: new / observed[f]})})
    if levels:
        changes.append({"change": "as asked", "facet": ",".join(levels),
                        **row({f: int(v) / observed[f] for f, v in levels.items()})})
    changes_t = pd.DataFrame(changes)
    grid = []
    for combo in itertools.product(MULTIPLIERS, repeat=len(facets)):
        mult = dict(zip(facets, combo, strict=True))
        if any(round(observed[f] * m) < 2 for f, m in mult.items()):
            continue
        mult = {f: round(observed[f] * m) / observed[f] for f, m in mult.items()}
        grid.append({"change": ", ".join(f"{int(round(_total_levels(gs, observed, mult, f)))}"
                                         f" {f}" for f in mult), "facet": "", **row(mult)})
    designs = pd.DataFrame(grid).drop_duplicates(subset=[f"levels_{f}" for f in facets])
    if max_cost is not None:
        designs = designs[designs["cost"] <= max_cost]
    for table in (changes_t, designs):
        if len(table):
            table["extra_cost"] = table["cost"] - now_cost
            table["se_gain"] = now_se - table[key]
            table["se_gain_per_cost"] = table["se_gain"] / table["extra_cost"].where(
                table["extra_cost"] > 0)
    designs = designs.sort_values(["cost", key]).reset_index(drop=True)
    cheapest = designs.iloc[0:0]
    if target_se is not None:
        if target_se <= 0:
            raise AnalysisError("target_se must be positive.")
        reach = designs[designs[key] <= target_se]
        cheapest = reach.iloc[:1]
        if reach.empty:
            notes.append(f"No design searched (up to x{max(MULTIPLIERS):g} each facet) "
                         f"reaches SE {target_se:g} for the {target}; the smallest is "
                         f"{designs[key].min():.4g}.")
    at_cost = designs[designs["cost"] <= now_cost * (1 + 1e-9)]
    best = at_cost.sort_values(key).iloc[:1]
    return DStudy(current, changes_t, designs, cheapest.reset_index(drop=True),
                  best.reset_index(drop=True), target, target_se, notes)
