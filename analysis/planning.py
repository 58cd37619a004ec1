"""Planning a benchmark: power, minimum detectable effect, prompts to add, fractions.

Three tools for the paper's closing argument (benchmarks should be efficient and well
covered; ``docs/planning.md`` has the formulas and references):

- **Power of a log disparity.** A subgroup of ``n1`` rows at deviation rate ``p1``
  against ``n0`` rows outside it at ``p0``: LD = logit(p1) - logit(p0) is estimated
  with the asymptotic (Woolf) variance ``V = 1 / (n1 p1 q1) + 1 / (n0 p0 q0)`` (q = 1 - p),
  so the two-sided Wald test at level ``alpha`` has power
  ``Phi(|LD| / sqrt(V) - z) + Phi(-|LD| / sqrt(V) - z)``, ``z = Phi^-1(1 - alpha / 2)``.
  :func:`sample_size` inverts it for the total number of rows given the subgroup's share
  and then refines the answer with the exact power of the Wald test as the Subgroups
  page computes it (:func:`exact_ld_power`, a sum over the two binomial distributions);
  :func:`minimum_detectable_ld` gives the smallest |LD| a subgroup of given size can
  detect (normal approximation).
- **Prompts to add** (:func:`plan_additions`): with a budget of N prompts over a factor
  grid, fill empty combinations first, then raise the thinnest ("water filling"). The
  result is majorised by every other way of adding N prompts, so it reaches the highest
  coverage percentage and the lowest Gini index that N prompts can.
- **Fractional factorials** (:func:`fractional_factorial`): a regular s^(k-p) design
  for k factors with the same prime number s of values, built over GF(s), with its
  resolution and defining words (which effects it cannot separate).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.columns import (
    COVERAGE_PERCENTAGE,
    DESIGN_EFFECT,
    DETECTABLE,
    DF,
    GINI_INDEX,
    MDE_LOG_DISPARITY,
    N_CELLS,
    N_OBSERVED_CELLS,
    N_ROWS,
    RATE_OUTSIDE,
    N,
)
from analysis.errors import AnalysisError
from analysis.options.planning import PowerOptions

#: The level and power of :func:`sample_size` (declared with the options:
#: ``analysis/options/planning.py``).
_POWER = PowerOptions()

__all__ = [
    "ADD", "EXACT_MAX_GRID", "FIRST_RUN", "FractionalDesign", "MAX_LD", "PLAN_MAX_CELLS",
    "Plan", "SCAN_MAX", "SCAN_MAX_TOTAL", "STABLE_HORIZON", "STABLE_MARGIN", "add_power",
    "approx_power", "budget_note", "exact_ld_power", "fractional_factorial", "ld_power",
    "ld_variance", "minimum_detectable_ld", "plan_additions", "sample_size", "water_fill",
]


#: Largest factor grid :func:`plan_additions` enumerates.
PLAN_MAX_CELLS = 5_000_000
#: Largest number of (inside, outside) count pairs :func:`exact_ld_power` sums over.
EXACT_MAX_GRID = 4_000_000
#: Largest |LD| searched for a minimum detectable effect (beyond: not detectable).
MAX_LD = 12.0
#: Column with the number of prompts to add to a combination.
ADD = "n"


# --- power ---------------------------------------------------------------------------------
def _check_probability(name: str, value: float) -> None:
    if not math.isfinite(value) or not 0 < value < 1:
        raise AnalysisError(f"{name} must lie strictly between 0 and 1, got {value!r}.")


def _expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def ld_variance(ld: np.ndarray | float, rate_outside: np.ndarray | float,
                n_subgroup: np.ndarray | float, n_outside: np.ndarray | float) -> np.ndarray:
    """Asymptotic variance of the estimated LD when the true LD is ``ld``.

    ``1 / (n1 p1 (1 - p1)) + 1 / (n0 p0 (1 - p0))`` with ``p0 = rate_outside`` and
    ``p1 = expit(logit(p0) + ld)`` (Woolf's variance at its expected counts).
    """
    p0 = np.asarray(rate_outside, dtype=float)
    p1 = _expit(np.log(p0 / (1 - p0)) + np.asarray(ld, dtype=float))
    with np.errstate(divide="ignore"):
        return (1.0 / (np.asarray(n_subgroup, float) * p1 * (1 - p1))
                + 1.0 / (np.asarray(n_outside, float) * p0 * (1 - p0)))


def ld_power(ld: np.ndarray | float, rate_outside: np.ndarray | float,
             n_subgroup: np.ndarray | float, n_outside: np.ndarray | float, *,
             alpha: float = 0.05) -> np.ndarray:
    """Power of the two-sided Wald test of LD = 0 (vectorised over all arguments).

    Returns ``Phi(|LD| / se - z) + Phi(-|LD| / se - z)`` with ``se`` from
    :func:`ld_variance` and ``z`` the ``1 - alpha / 2`` normal quantile.
    """
    from scipy.special import ndtr, ndtri

    _check_probability("alpha", alpha)
    z = float(ndtri(1 - alpha / 2))
    shift = np.abs(np.asarray(ld, dtype=float)) / np.sqrt(
        ld_variance(ld, rate_outside, n_subgroup, n_outside))
    return ndtr(shift - z) + ndtr(-shift - z)


def exact_ld_power(ld: float, rate_outside: float, n_subgroup: int, n_outside: int, *,
                   alpha: float = 0.05) -> float | None:
    """Power of the Wald test of LD = 0 exactly as :func:`analysis.subgroups.subgroups`
    computes it (Woolf SE, 0.5 added to all four counts when one is 0), summed over the
    binomial distributions of the deviations inside and outside the subgroup.

    Counts beyond 7 standard deviations are left out (probability < 1e-11). Returns None
    when that grid exceeds :data:`EXACT_MAX_GRID` pairs (large n: the normal
    approximation of :func:`ld_power` is then accurate).
    """
    from scipy.stats import binom, norm

    n1, n0 = int(n_subgroup), int(n_outside)
    p0 = float(rate_outside)
    p1 = float(_expit(math.log(p0 / (1 - p0)) + ld))

    def support(n: int, p: float) -> np.ndarray:
        sd = math.sqrt(n * p * (1 - p))
        lo, hi = max(0, int(n * p - 7 * sd) - 1), min(n, int(n * p + 7 * sd) + 2)
        return np.arange(lo, hi + 1, dtype=float)

    a, c = support(n1, p1), support(n0, p0)
    if len(a) * len(c) > EXACT_MAX_GRID:
        return None
    # Without the correction the statistic separates: z = (u_a + v_c) / sqrt(s_a + t_c);
    # the rows and columns holding a zero count get the 0.5 correction on their own.
    edge_a = (a == 0) | (a == n1)
    edge_c = (c == 0) | (c == n0)
    with np.errstate(divide="ignore", invalid="ignore"):
        u, s = np.log(a) - np.log(n1 - a), 1 / a + 1 / (n1 - a)
        v, t = np.log(n0 - c) - np.log(c), 1 / c + 1 / (n0 - c)
        z = (u[:, None] + v[None, :]) / np.sqrt(s[:, None] + t[None, :])
    if edge_a.any() or edge_c.any():
        rows, cols = np.flatnonzero(edge_a), np.flatnonzero(edge_c)
        z[rows, :] = _woolf_z(a[rows, None], c[None, :], n1, n0)
        z[:, cols] = _woolf_z(a[:, None], c[None, cols], n1, n0)
    reject = np.abs(z) > norm.ppf(1 - alpha / 2)
    return float(binom.pmf(a, n1, p1) @ reject @ binom.pmf(c, n0, p0))


def _woolf_z(a: np.ndarray, c: np.ndarray, n1: int, n0: int) -> np.ndarray:
    """Wald z of LD on counts (broadcast), 0.5 added to all four counts when one is 0."""
    b, d = n1 - a, n0 - c
    shift = np.where(np.minimum(np.minimum(a, b), np.minimum(c, d)) == 0, 0.5, 0.0)
    a, b, c, d = a + shift, b + shift, c + shift, d + shift
    return (np.log(a) + np.log(d) - np.log(b) - np.log(c)) / np.sqrt(1 / a + 1 / b + 1 / c
                                                                      + 1 / d)


def sample_size(*, rate: float, ld: float, share: float, alpha: float = _POWER.alpha,
                power: float = _POWER.power) -> dict:
    """Rows needed to detect a log disparity ``ld`` of a subgroup with a given share.

    The normal approximation (:func:`ld_power`) gives a first ``n``; the answer is then
    the smallest total **after which** the exact power of the Wald test
    (:func:`exact_ld_power`) stays at or above ``power`` (checked up to ``checked_up_to``,
    5 % + 20 rows beyond, at most 150; not checked above 20,000 rows, where
    ``checked_up_to`` = ``n_total``): exact power is a sawtooth in N, so a smaller total may reach
    the target while the next one falls back (``n_first_reaching``; ``docs/planning.md``).
    At small expected counts the exact and approximate powers differ by several points.
    For very large ``n`` the approximation is kept.

    Parameters
    ----------
    rate
        Deviation rate of the rows outside the subgroup (``p0``).
    ld
        The log disparity to detect (non-zero; either sign).
    share
        The subgroup's share of all rows (``n1 / (n1 + n0)``).
    alpha, power
        Two-sided level and the power wanted.

    Returns
    -------
    dict
        ``n_total`` (rows in all), ``n_subgroup``, ``n_outside`` (its split by
        ``share``, the subgroup rounded up), ``n_first_reaching`` (the smallest total
        found whose exact power reaches ``power``; power may dip below it again before
        ``n_total``), ``checked_up_to`` (the largest total checked), ``rate_subgroup``
        (``p1``),
        ``achieved_power`` (at these sizes), ``approximate_power`` (normal
        approximation at these sizes), ``method`` (``exact`` or ``normal``) and the
        inputs ``rate``, ``ld``, ``share``, ``alpha``, ``power``.
    """
    from scipy.optimize import brentq
    from scipy.special import ndtri

    _check_probability("--rate (deviation rate outside the subgroup)", rate)
    _check_probability("--share (the subgroup's share of the rows)", share)
    _check_probability("alpha", alpha)
    _check_probability("power", power)
    if not math.isfinite(ld) or ld == 0:
        raise AnalysisError("The log disparity to detect must be a non-zero number.")
    if power <= alpha:
        raise AnalysisError("The power must exceed alpha (the power at LD = 0).")
    unit = float(ld_variance(ld, rate, share, 1 - share))  # variance times n_total
    guess = (ndtri(1 - alpha / 2) + ndtri(power)) ** 2 * unit / ld ** 2

    def approx(n_total: float) -> float:
        return float(ld_power(ld, rate, share * n_total, (1 - share) * n_total,
                              alpha=alpha))

    hi = max(guess, 1.0) * 2
    n_normal = brentq(lambda n: approx(n) - power, 1e-9, hi, xtol=1e-6) \
        if approx(hi) > power else guess

    def split(total: int) -> tuple[int, int]:
        n1 = max(int(math.ceil(share * total)), 1)
        return n1, max(total - n1, 1)

    def exact(total: int) -> float | None:
        return exact_ld_power(ld, rate, *split(total), alpha=alpha)

    total = max(int(math.ceil(n_normal - 1e-9)), 2)
    method = "normal" if exact(total) is None else "exact"
    if method == "exact":
        lo, hi_n = max(total // 4, 2), total
        while (exact(hi_n) or 0.0) < power:
            lo, hi_n = hi_n, hi_n * 2
        while hi_n - lo > 1:  # smallest total reaching the power (bisection)
            mid = (lo + hi_n) // 2
            if exact(mid) >= power:
                hi_n = mid
            else:
                lo = mid
        total, first, checked = _stable_total(exact, hi_n, power)
    else:
        first = checked = None
    n1, n0 = split(total)
    achieved = exact(total) if method == "exact" else None
    if achieved is None:
        achieved = approx_power(ld, rate, n1, n0, alpha)
    while achieved < power:  # rounding of the split (normal approximation)
        total += 1
        n1, n0 = split(total)
        achieved = approx_power(ld, rate, n1, n0, alpha)
    return {"n_total": n1 + n0, "n_subgroup": n1, "n_outside": n0,
            "n_first_reaching": first if first is not None else n1 + n0,
            "checked_up_to": checked if checked is not None else n1 + n0,
            "rate": rate, "rate_subgroup": float(_expit(math.log(rate / (1 - rate)) + ld)),
            "ld": ld, "share": share, "alpha": alpha, "power": power,
            "achieved_power": achieved,
            "approximate_power": approx_power(ld, rate, n1, n0, alpha), "method": method}


#: The exact power is checked to stay above the target from the answer up to this factor
#: of it (plus :data:`STABLE_MARGIN` rows).
STABLE_HORIZON = 1.05
STABLE_MARGIN = 20
#: The search for the first N reaching the target stops after this many N in a row below it.
FIRST_RUN = 10
#: Most totals each scan evaluates (the exact power of a total costs ~10 ms at 3,000 rows,
#: ~0.1 s at 50,000), and the total above which the scans are skipped.
SCAN_MAX = 150
SCAN_MAX_TOTAL = 20_000


def _stable_total(exact, reaching: int, power: float) -> tuple[int, int, int]:
    """(smallest N from which ``exact(N) >= power`` for every N up to the horizon,
    smallest N found reaching ``power``, the horizon checked).

    The exact power is a sawtooth in N (the split's rounding and the discrete counts: for
    p0 0.5, LD 0.2, share 0.5 the odd totals fall short while the even ones from 3,130
    reach 0.80), so "the smallest N reaching the target" is not "enough rows": a few more
    rows may fall back below. Scanning down from the horizon finds the last N below the
    target; the answer is the next one. ``reaching`` is any N reaching the target.
    """
    def reaches(total: int) -> bool:
        value = exact(total)  # None: grid too large, where the normal approximation holds
        return value is None or value >= power

    if reaching > SCAN_MAX_TOTAL:
        return reaching, reaching, reaching
    horizon = reaching
    while True:
        step = min(int(math.ceil(horizon * (STABLE_HORIZON - 1))) + STABLE_MARGIN, SCAN_MAX)
        horizon += step
        if reaches(horizon):
            break
    stable = horizon
    while stable > 2 and horizon - stable < 2 * SCAN_MAX and reaches(stable - 1):
        stable -= 1
    first, misses, t = stable, 0, stable - 1
    while t > 2 and misses < FIRST_RUN and stable - t <= SCAN_MAX:
        if reaches(t):
            first, misses = t, 0
        else:
            misses += 1
        t -= 1
    return stable, first, horizon


def approx_power(ld: float, rate: float, n1: int, n0: int, alpha: float) -> float:
    """:func:`ld_power` as a float (normal approximation)."""
    return float(ld_power(ld, rate, n1, n0, alpha=alpha))


def minimum_detectable_ld(n_subgroup: np.ndarray, n_outside: np.ndarray,
                          rate_outside: np.ndarray, *, alpha: float = 0.05,
                          power: float = 0.8) -> np.ndarray:
    """Smallest |LD| detected with ``power`` in both directions (vectorised).

    For each subgroup, the ``d > 0`` at which the power against ``+d`` and against ``-d``
    both reach ``power`` (the larger of the two one-direction roots: a rise and a fall
    of the same size are not equally detectable). Found by bisection on
    ``(0, MAX_LD]`` (the first crossing: power is not monotone in |LD| at extreme
    rates); NaN where the outside rate is 0 or 1 or a size is 0, ``inf`` where no
    |LD| up to ``MAX_LD`` is detectable.
    """
    _check_probability("power", power)
    n1 = np.asarray(n_subgroup, dtype=float)
    n0 = np.asarray(n_outside, dtype=float)
    p0 = np.asarray(rate_outside, dtype=float)
    ok = (n1 > 0) & (n0 > 0) & (p0 > 0) & (p0 < 1)
    out = np.full(n1.shape, np.nan)
    if not ok.any():
        return out
    n1, n0, p0 = n1[ok], n0[ok], p0[ok]
    # power is not monotone in |LD| (at extreme rates the variance explodes), so find the
    # first crossing on a grid, then refine it by bisection inside its grid step
    grid = np.linspace(0.0, MAX_LD, 481)
    best = np.zeros(len(n1))
    for sign in (1.0, -1.0):
        above = ld_power(sign * grid[None, :], p0[:, None], n1[:, None], n0[:, None],
                         alpha=alpha) >= power
        reach = above.any(axis=1)
        first = np.where(reach, above.argmax(axis=1), 1)
        lo, hi = grid[first - 1], grid[first]
        for _ in range(40):
            mid = (lo + hi) / 2
            up = ld_power(sign * mid, p0, n1, n0, alpha=alpha) >= power
            hi = np.where(up, mid, hi)
            lo = np.where(up, lo, mid)
        best = np.maximum(best, np.where(reach, hi, np.inf))
    out[ok] = best
    return out


def _t_factor(df: float | np.ndarray | None, alpha: float, power: float
              ) -> float | np.ndarray:
    """``(t_{1-alpha/2} + t_power) / (z_{1-alpha/2} + z_power)`` on ``df`` (1 without);
    elementwise for an array of df (NaN stays NaN)."""
    from scipy.special import ndtri, stdtrit

    if np.ndim(df):
        df = np.asarray(df, dtype=float)
        return ((stdtrit(df, 1 - alpha / 2) + stdtrit(df, power))
                / (ndtri(1 - alpha / 2) + ndtri(power)))
    if not df:
        return 1.0
    return float((stdtrit(df, 1 - alpha / 2) + stdtrit(df, power))
                 / (ndtri(1 - alpha / 2) + ndtri(power)))


def add_power(table: pd.DataFrame, total_n: int, *, alpha: float = 0.05,
              power: float = 0.8, target_ld: float | None = None,
              reference_df: float | None = None) -> pd.DataFrame:
    """A subgroup table (:func:`analysis.subgroups.subgroups`) with its detectable effect.

    Parameters
    ----------
    table
        Subgroups with ``n`` and ``rate_outside``.
    total_n
        Rows of the table the subgroups are taken from (the rows outside a subgroup are
        ``total_n - n``).
    alpha, power
        Level of the two-sided Wald test of LD = 0 and the power wanted.
    target_ld
        The effect the analyst cares about (optional).
    reference_df
        The df of the t reference when the table has no ``df`` column (G - 1 with
        ``small_sample="cr1"``: the subgroup call's ``reference_df``); None: normal.

    Returns
    -------
    pandas.DataFrame
        A copy with ``mde_log_disparity`` (:func:`minimum_detectable_ld`) and, when
        ``target_ld`` is given, ``detectable`` (the MDE is at most ``|target_ld|``).
        For a cluster-robust table (``design_effect`` column, from
        :func:`analysis.subgroups.subgroups` with a cluster) the MDE is that of the
        effective sizes ``n / design_effect^2`` inside and outside (Kish), times
        ``(t_{1-alpha/2} + t_power) / (z_{1-alpha/2} + z_power)`` on the subgroup's own
        df (its ``df`` column: Satterthwaite by default; else ``reference_df``): the MDE
        of the test printed beside it. The design effect is floored at 1 for planning (a
        robust SE below the independent-rows one, estimated from a few clusters, is noise,
        not a gain). NaN where the subgroup has no cluster-robust test.
    """
    missing = [c for c in (N, RATE_OUTSIDE) if c not in table.columns]
    if missing:
        raise AnalysisError(f"A subgroup table needs the columns {', '.join(missing)}.")
    out = table.copy()
    n = out[N].to_numpy(dtype=float)
    # np.maximum keeps NaN (no cluster-robust test: no MDE)
    deff2 = (np.maximum(out[DESIGN_EFFECT].to_numpy(dtype=float), 1.0) ** 2
             if DESIGN_EFFECT in out.columns else np.ones(len(n)))
    df = out[DF].to_numpy(dtype=float) if DF in out.columns else reference_df
    out[MDE_LOG_DISPARITY] = minimum_detectable_ld(
        n / deff2, (float(total_n) - n) / deff2, out[RATE_OUTSIDE].to_numpy(dtype=float),
        alpha=alpha, power=power) * _t_factor(df, alpha, power)
    if target_ld is not None:
        if not math.isfinite(target_ld) or target_ld == 0:
            raise AnalysisError("The effect of interest must be a non-zero log disparity.")
        out[DETECTABLE] = out[MDE_LOG_DISPARITY] <= abs(target_ld)
    return out


# --- prompts to add --------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """Prompts to add to a factor grid (:func:`plan_additions`).

    Attributes
    ----------
    before, after
        ``{"coverage_percentage", "gini_index", "n_cells", "n_observed_cells",
        "n_rows"}`` of the grid before and after the additions (before a new benchmark:
        coverage 0, Gini index NaN).
    add
        One row per combination that receives prompts: a column per factor and ``n``
        (prompts to add), emptiest combinations first, then in grid order.
    factors
        The factors spanning the grid.
    """

    before: dict
    after: dict
    add: pd.DataFrame
    factors: tuple[str, ...]
    notes: tuple[str, ...] = ()
    #: Combinations never proposed: ruled out by a constraint, or by the observed
    #: structure (:func:`analysis.structure.excluded_cells`) with no variant reaching them.
    n_excluded: int = 0
    #: Empty combinations a constraint rules out, and the other empty ones (design gaps).
    n_constraint: int = 0
    n_gaps: int = 0
    #: Template variants ranked (:func:`analysis.variants.rank_variants`, ``n_planned``:
    #: prompts of this plan from each) and each nested factor crossed with every template.
    variants: pd.DataFrame = field(default_factory=pd.DataFrame)
    crossings: pd.DataFrame = field(default_factory=pd.DataFrame)

    def to_dict(self) -> dict:
        """``{"factors", "before", "after", "add": [{factor: value, ..., "n", "kind",
        "template"}], "notes", "n_excluded", "n_constraint", "n_gaps", "variants",
        "crossings"}``."""
        return {"factors": list(self.factors), "before": self.before, "after": self.after,
                "add": self.add.astype({f: str for f in self.factors}).to_dict(
                    orient="records"), "notes": list(self.notes),
                "n_excluded": self.n_excluded, "n_constraint": self.n_constraint,
                "n_gaps": self.n_gaps,
                "variants": _records(self.variants), "crossings": _records(self.crossings)}


def _records(frame: pd.DataFrame) -> list[dict]:
    """A frame as JSON-ready records (NaN: None)."""
    return [] if not len(frame) else \
        frame.astype(object).where(frame.notna(), None).to_dict(orient="records")


def _grid_summary(counts: np.ndarray) -> dict:
    from analysis.coverage import coverage_percentage, gini_index

    empty = counts.sum() == 0  # a new benchmark: coverage 0, Gini index undefined
    return {COVERAGE_PERCENTAGE: 0.0 if empty else coverage_percentage(counts),
            GINI_INDEX: float("nan") if empty else gini_index(counts), N_CELLS: int(len(counts)),
            N_OBSERVED_CELLS: int((counts > 0).sum()), N_ROWS: int(counts.sum())}


def water_fill(counts: np.ndarray, budget: int) -> np.ndarray:
    """Prompts to add per cell: raise the lowest counts first (ties: lower index first).

    Returns ``extra`` (int64, summing to ``budget``) such that ``counts + extra`` has
    every cell at least at a level ``L`` and the cells below it raised to ``L`` or
    ``L + 1``. Sorting ``counts + extra`` gives a vector majorised by that of any other
    way of adding ``budget``, hence the most coverage and the least Gini index.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if budget < 0:
        raise AnalysisError(f"The budget must be 0 or more prompts, got {budget}.")
    if budget == 0 or len(counts) == 0:
        return np.zeros(len(counts), dtype=np.int64)
    order = np.argsort(counts, kind="stable")
    s = counts[order]
    # cost to raise the first i+1 sorted cells to level s[i]
    cost = s * np.arange(1, len(s) + 1) - np.cumsum(s)
    i = int(np.searchsorted(cost, budget, side="right")) - 1  # cells 0..i reach s[i]
    left = budget - int(cost[i])
    level, rest = divmod(left, i + 1)
    target = np.zeros(len(s), dtype=np.int64)
    target[: i + 1] = s[i] + level
    target[:rest] += 1  # the remainder, to the first (lowest, then earliest) cells
    extra_sorted = np.where(np.arange(len(s)) <= i, target - s, 0)
    extra = np.zeros(len(counts), dtype=np.int64)
    extra[order] = extra_sorted
    return extra


def plan_additions(cells: pd.DataFrame | None, design, *, factors: Sequence[str], budget: int,
                   where: Mapping[str, Sequence[str]] | None = None,
                   within_structure: bool = False, whole_variants: bool = False,
                   template: str | None = None) -> Plan:
    """The ``budget`` prompts to add that most improve coverage and balance.

    Parameters
    ----------
    cells
        Cell table with a column per factor and ``n`` (:func:`analysis.cells.cell_table`
        with ``with_outcome=False``), or a results table with those columns (each row
        counted once); None plans a new benchmark from the design alone (every
        combination empty: the budget is spread as evenly as possible).
    design
        Declares each factor's values; the grid is their product (unseen values count).
    factors
        Factors spanning the grid (at most :data:`PLAN_MAX_CELLS` combinations).
    budget
        Prompts to add.
    where
        Keep only these values of the named factors (the grid shrinks accordingly).
    within_structure
        Stay inside the observed structure: no template variants (the plan before
        design gaps were told apart).
    whole_variants
        Spend the budget on whole template variants first (:class:`BudgetError` when it
        is smaller than one), the rest on fills and plain gaps.
    template
        The template column of ``cells`` whose variants fill design gaps (default: the
        design's cluster when ``cells`` has it).

    Returns
    -------
    Plan
        ``before`` / ``after`` (coverage percentage, Gini index, ...), ``add`` (a column
        per factor, ``n``, ``kind``: fill / gap / variant, ``template``: the template to
        vary for a variant row) and ``notes``. Combinations a constraint rules out
        (:mod:`analysis.constraints`; ``n_constraint``) are never proposed; design gaps
        (``n_gaps``) empty only because each template fixes two factors are filled by
        template variants (``variants``: :func:`analysis.variants.rank_variants` with
        ``n_planned``; ``crossings``: :func:`analysis.variants.crossings`); the other
        combinations the observed structure rules out (a nesting, a value-level alias:
        :func:`analysis.structure.excluded_cells`) are never proposed either
        (``n_excluded`` counts every combination left out), and the notes say how many
        and why (``docs/planning.md``).
    """
    from analysis.coverage import grid_values

    factors = list(factors)
    if not factors:
        raise AnalysisError("Choose at least one factor to plan over.")
    if isinstance(budget, bool) or int(budget) != budget or budget < 1:
        raise AnalysisError(f"The budget must be a positive whole number of prompts, got "
                            f"{budget!r}.")
    values = grid_values(design, factors, where)
    sizes = [len(v) for v in values]
    n_cells = math.prod(sizes)
    if n_cells > PLAN_MAX_CELLS:
        raise AnalysisError(f"The grid of {' x '.join(factors)} has {n_cells:,} combinations "
                            f"(more than {PLAN_MAX_CELLS:,}): plan over fewer factors.")
    counts = np.zeros(n_cells, dtype=np.int64)
    if cells is not None:
        absent = [f for f in factors if f not in cells.columns]
        if absent:
            raise AnalysisError(f"No column for {', '.join(absent)} in the table.")
        from analysis.cells import filter_rows
        from analysis.coverage import coverage_grid  # the same cell counting as the Coverage page

        table = cells if N in cells.columns else cells.assign(**{N: 1})
        # counts inside the subset; the structure below is read on every row given
        grid = coverage_grid(filter_rows(table, where) if where else table, design, factors, where)
        counts[np.asarray(grid.keys, dtype=np.int64)] = grid.counts
    else:
        table = pd.DataFrame(columns=[*factors, N])
    from analysis.structure import excluded_cells

    observed_cells = table[table[N] > 0] if len(table) else table
    ruled_out = excluded_cells(
        observed_cells, factors, values, counts=observed_cells[N].to_numpy(),
        references={f: design.factor(f).reference for f in factors}) \
        if cells is not None and len(observed_cells) else None
    from analysis.plan_gaps import KIND, TEMPLATE, allocate

    if template is None and design.cluster and cells is not None \
            and design.cluster in cells.columns:
        template = design.cluster
    alloc = allocate(observed_cells, design, factors, values, counts, ruled_out, int(budget),
                     template=template, within_structure=within_structure,
                     whole_variants=whole_variants, water_fill=water_fill)
    extra = alloc.extra
    rows = alloc.rows.assign(_count=counts[alloc.rows["cell"].to_numpy(dtype=np.int64)])
    rows = rows.sort_values(["_count", "cell", TEMPLATE], kind="stable")
    codes = np.unravel_index(rows["cell"].to_numpy(dtype=np.int64), sizes)
    add = pd.DataFrame({f: pd.Categorical.from_codes(c, categories=list(v), ordered=True)
                        for f, c, v in zip(factors, codes, values, strict=True)})
    add[ADD] = rows["n"].to_numpy(dtype=np.int64)
    add[KIND] = rows[KIND].to_numpy()
    add[TEMPLATE] = rows[TEMPLATE].to_numpy()
    from analysis.nesting import describe_nesting, find_nestings

    observed = table[table[N] > 0] if len(factors) > 1 and len(table) else table.iloc[:0]
    if where and len(observed):
        observed = filter_rows(observed, where)  # the nesting notes: inside the subset
    nest = find_nestings(observed, factors,
                         references={f: design.factor(f).reference for f in factors}) \
        if len(observed) else pd.DataFrame(columns=["determinant"])
    notes = [describe_nesting(r) for r in nest.to_dict(orient="records")
             if r["determinant"] is not None]
    return Plan(before=_grid_summary(counts), after=_grid_summary(counts + extra),
                add=add.reset_index(drop=True), factors=tuple(factors),
                notes=(*alloc.notes, *notes), n_excluded=alloc.n_excluded,
                n_constraint=alloc.n_constraint, n_gaps=alloc.n_gaps,
                variants=alloc.variants, crossings=alloc.crossings)


# --- fractional factorials over GF(s) ------------------------------------------------------------
@dataclass(frozen=True)
class FractionalDesign:
    """A regular fractional factorial (:func:`fractional_factorial`).

    Attributes
    ----------
    runs
        One row per run, a column per factor (its value).
    resolution
        Length of the shortest defining word (``inf`` for a full factorial): III means
        main effects are aliased with two-factor interactions, IV main effects are clear
        of them but two-factor interactions are aliased with each other, V and up
        separates main effects and two-factor interactions.
    generators
        ``{added factor: "A+2B"}``: each added factor's column as a combination of the
        basic factors (mod s; for s = 2 a product, ``ABC``).
    defining_words
        The defining relation: sets of factors whose (generalised) interaction is
        confounded with the mean; effects differing by a word are aliased.
    aliases
        Human-readable aliasing statements (two-factor interactions that cannot be
        separated from a main effect or from each other).
    """

    runs: pd.DataFrame
    #: Values per factor (0: a full factorial with mixed numbers of values).
    levels: int
    resolution: float
    generators: dict[str, str]
    defining_words: list[list[str]]
    aliases: list[str]

    def to_dict(self) -> dict:
        return {"n_runs": len(self.runs), "levels": self.levels,
                "resolution": None if math.isinf(self.resolution) else int(self.resolution),
                "generators": self.generators,
                "defining_words": [" ".join(w) for w in self.defining_words],
                "aliases": self.aliases, "runs": self.runs.to_dict(orient="records")}


def budget_note(budget: int, frac: FractionalDesign) -> str:
    """What a ``--runs`` budget became, when it is not the number of runs used."""
    used = len(frac.runs)
    if used == budget:
        return ""
    if frac.resolution == float("inf"):
        return (f"--runs {budget}: the full factorial has {used} runs, within the budget; "
                f"{used} runs are used.")
    return (f"--runs {budget} is a budget: a regular fraction of {frac.levels}-value factors "
            f"has a power of {frac.levels} runs, so {used} runs are used (the largest within "
            "the budget). Give a power of the number of values to use the whole budget.")


def _is_prime(s: int) -> bool:
    return s >= 2 and all(s % d for d in range(2, int(s ** 0.5) + 1))


def _candidates(m: int, s: int) -> list[np.ndarray]:
    """Columns of GF(s)^m up to a scalar (first non-zero entry 1), heaviest first."""
    out = []
    for vec in itertools.product(range(s), repeat=m):
        v = np.array(vec)
        nz = np.flatnonzero(v)
        if len(nz) >= 2 and v[nz[0]] == 1:
            out.append(v)
    return sorted(out, key=lambda v: -int((v > 0).sum()))


def _words(G: np.ndarray, s: int) -> np.ndarray:
    """Every non-zero w in GF(s)^k with G w = 0 (mod s), up to a scalar."""
    m, k = G.shape
    p = k - m
    # the kernel is spanned by (e_j - g_j) for each added column j: w = [-(G_add c); c]
    out = []
    for c in itertools.product(range(s), repeat=p):
        c = np.array(c)
        nz = np.flatnonzero(c)
        if not len(nz) or c[nz[0]] != 1:
            continue
        basic = (-(G[:, m:] @ c)) % s
        out.append(np.concatenate([basic, c]))
    return np.array(out).reshape(-1, k)


def fractional_factorial(factors: Mapping[str, Sequence[str]], runs: int, *,
                         max_search: int = 5000) -> FractionalDesign:
    """A balanced regular s^(k-p) fraction for k factors with s values each (s prime).

    ``runs`` is a budget: the full factorial when it fits (for any numbers of values),
    else the largest power of s not above it (at least enough columns for every
    factor). Among the
    choices of generators (at most ``max_search`` sets, heaviest columns first) it keeps
    the one with the highest resolution and then the fewest shortest words (minimum
    aberration within the search). Every pair of factors shows every pair of values
    equally often (an orthogonal array of strength 2) when the resolution is III or more.

    Raises
    ------
    AnalysisError
        Factors with different numbers of values, a non-prime number of values, or a
        budget too small for k factors (s^m runs hold at most (s^m - 1)/(s - 1) factors).
    """
    names = list(factors)
    if len(names) < 2:
        raise AnalysisError("A fractional factorial needs at least two factors.")
    if any(len(v) < 2 for v in factors.values()):
        raise AnalysisError("Every factor of a new benchmark needs at least two values.")
    full = math.prod(len(v) for v in factors.values())
    if full <= runs:  # the budget holds the full factorial (any numbers of values)
        runs_frame = pd.DataFrame(list(itertools.product(*factors.values())), columns=names)
        sizes = {len(v) for v in factors.values()}
        return FractionalDesign(runs_frame, sizes.pop() if len(sizes) == 1 else 0, math.inf,
                                {}, [], _alias_statements([], math.inf))
    levels = {len(v) for v in factors.values()}
    if len(levels) != 1:
        raise AnalysisError("A regular fractional factorial needs the same number of values "
                            "for every factor; got " + ", ".join(
                                f"{f}: {len(v)}" for f, v in factors.items()) + ".")
    s = levels.pop()
    if not _is_prime(s):
        raise AnalysisError(f"Each factor has {s} values; regular fractions are built here "
                            "for a prime number of values (2, 3, 5, 7).")
    k = len(names)
    if runs < s:
        raise AnalysisError(f"A budget of {runs} runs is smaller than {s}.")
    m = min(int(math.floor(math.log(runs, s) + 1e-9)), k)
    if (s ** m - 1) // (s - 1) < k:
        need = next(mm for mm in range(1, k + 1) if (s ** mm - 1) // (s - 1) >= k)
        raise AnalysisError(f"{k} factors with {s} values need at least {s ** need} runs for "
                            f"a fraction where main effects are estimable; the budget is "
                            f"{runs}.")
    basic = np.array(list(itertools.product(range(s), repeat=m)), dtype=np.int64)
    G = np.zeros((m, k), dtype=np.int64)
    G[:, :m] = np.eye(m, dtype=np.int64)
    best = (-1.0, 0, None)
    if k > m:
        for chosen in itertools.islice(itertools.combinations(_candidates(m, s), k - m),
                                       max_search):
            trial = G.copy()
            trial[:, m:] = np.column_stack(chosen)
            lengths = (_words(trial, s) > 0).sum(axis=1)
            res, count = float(lengths.min()), int((lengths == lengths.min()).sum())
            if res > best[0] or (res == best[0] and count < best[1]):
                best = (res, count, trial)
        G = best[2]
        resolution = best[0]
    else:
        resolution = math.inf
    design = (basic @ G) % s
    runs_frame = pd.DataFrame({f: [list(factors[f])[c] for c in design[:, j]]
                               for j, f in enumerate(names)})
    letters = names
    generators = {}
    for j in range(m, k):
        g = G[:, j]
        parts = [("" if g[i] == 1 else f"{g[i]}") + letters[i] for i in range(m) if g[i]]
        generators[names[j]] = ("*" if s == 2 else " + ").join(parts)
    words = [] if k == m else [[names[i] if w[i] == 1 else f"{names[i]}^{w[i]}"
                                for i in range(k) if w[i]] for w in _words(G, s)]
    words.sort(key=len)
    return FractionalDesign(runs_frame, s, resolution, generators, words,
                            _alias_statements(words, resolution))


def _alias_statements(words: list[list[str]], resolution: float) -> list[str]:
    if not words:
        return ["full factorial: every effect is estimable"]
    out = []
    for w in words:
        plain = [x.split("^")[0] for x in w]
        if len(plain) == 3:
            out.append(f"main effect {plain[0]} is aliased with the interaction "
                       f"{plain[1]}:{plain[2]} (and likewise for each factor of the word)")
        elif len(plain) == 4:
            out.append(f"interaction {plain[0]}:{plain[1]} is aliased with "
                       f"{plain[2]}:{plain[3]} (and {plain[0]}:{plain[2]} with "
                       f"{plain[1]}:{plain[3]}, {plain[0]}:{plain[3]} with "
                       f"{plain[1]}:{plain[2]})")
    if resolution >= 5:
        out.append("main effects and two-factor interactions are clear of each other "
                   "(higher interactions are aliased as the defining words say)")
    return out
