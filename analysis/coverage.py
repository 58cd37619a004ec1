"""Coverage of the design: how completely and how evenly the factor grid is filled.

The benchmark is a tensor whose modes are the chosen factors; mode j has one slot per
declared value of factor j, and cell c holds n_c, the number of rows (prompts) with that
combination. N = prod |V_j| counts every cell, zeros included (``docs/methods.md`` §1):

- coverage percentage ``CP = #{c : n_c > 0} / N`` (a fraction in [0, 1], ideal 1;
  the app shows it as a percentage);
- Gini index of all N cell counts, sorted ascending,
  ``GI = 1 - 2 * sum_k (n_(k) / sum(n)) * ((N - k + 1/2) / N)`` (ideal 0);
- per-factor Gini: the same formula over one factor's marginal counts.

Nothing here materialises the tensor: the N - M empty cells occupy the first sorted
positions, so CP and GI need only the M observed counts of the cell table, and a
12-factor design with 10^12 cells costs what its observed cells cost. Writing the
observed counts ascending as m_(1..M), the formula reduces to
``GI = 1 - 2 / (N * S) * sum_i m_(i) * (M - i + 1/2)``, equivalently
``GI = 1 - CP * (1 - GI_observed)`` with GI_observed the Gini of the M observed counts
alone. That identity separates *holes* (1 - CP) from *unequal filling* (GI_observed).

For small designs (up to :data:`DENSE_MAX_CELLS` cells) :func:`count_tensor` builds
the dense count tensor with tensorly, and :func:`tensor_marginal` gives its unfoldings'
marginals; they agree with the sparse functions (the tests check it).

**What is counted.** The methods count *prompts* per combination. A results table has
one row per response, and a prompt answered by 2 models x 5 seeds is 10 rows, so
:func:`coverage_cells` builds the cell table whose ``n`` is the number of distinct
benchmark units per cell (:func:`count_unit`): the **items** when the table's structure
has an item id (BBQ's ``example_id``: an item asked in 3 input formats counts once per
format cell), else the prompts (a prompt = a distinct combination of
:meth:`~analysis.design.Design.prompt_unit_columns`: a prompt id column named by the
design, or its domain and prompt factors); ``unit="responses"`` counts rows instead.
The cell table's ``attrs`` keep what was counted and the number of rows, so the summary
states rows (``n_rows``) and counted units (``n_counted``) separately.

All functions take a cell table (:func:`coverage_cells`, or
:func:`analysis.cells.cell_table` with ``with_outcome=False`` to count responses) and
the :class:`~analysis.design.Design` whose declared values span the grid. A cell
table over more factors than asked is summed down to the asked ones. ``where`` (the
row filter the cell table was built with) restricts the grid of a filtered factor to
its kept values: after keeping one model, the other models' cells are not "missing".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.columns import (
    COVERAGE_PERCENTAGE,
    FACTOR,
    FACTORS,
    GINI_INDEX,
    GINI_INDEX_OBSERVED,
    N_CELLS,
    N_EMPTY_CELLS,
    N_EXPECTED_PROMPT_CELLS,
    N_MISSING_PROMPT_CELLS,
    N_OBSERVED_CELLS,
    N_ROWS,
    SCOPE,
    VALUE,
    N,
)
from analysis.coverage_text import MARGINAL, percent_text
from analysis.design import Design
from analysis.errors import AnalysisError
from analysis.factor_defaults import grid_factors as default_factors  # the grid's default
from analysis.options.coverage import COUNTS
from analysis.values import combine_codes, factor_codes, split_codes

__all__ = [
    "COUNT_UNIT_ATTR", "COVERAGE_OF_POSSIBLE", "COVERAGE_UNITS", "CountUnit", "CoverageGrid",
    "DENSE_MAX_CELLS", "IMPOSSIBLE_MAX_CELLS", "JOINT", "MARGINAL", "N_COUNTED",
    "N_IMPOSSIBLE_CELLS", "impossible_keys", "PROMPTS", "RESPONSES", "ROWS_ATTR", "SUMMARY_COLUMNS",
    "TIMES", "Where", "count_tensor", "CountedCells", "count_unit", "counted_noun", "counted_unit",
    "coverage_cells",
    "coverage_grid", "coverage_nestings", "coverage_percentage", "coverage_summary",
    "default_factors", "describe_coverage", "describe_model_coverage", "empty_cells",
    "empty_cells_page", "exclude_from_grid", "gini_index", "grid_values", "marginal_counts",
    "model_coverage",
    "pair_counts", "per_factor_gini", "percent_text",
    "tensor_marginal", "thinnest_cells",
]


Where = Mapping[str, str | Sequence[str]]

#: Largest grid :func:`count_tensor` builds densely (about 80 MB of int64).
DENSE_MAX_CELLS = 10_000_000
#: ``scope`` of the summary row over all chosen factors and of the per-factor rows.
JOINT = "joint"
#: Separator of factor names in the ``factors`` column of the summary.
TIMES = " x "
#: What a cell count counts: distinct prompts (the methods' definition) or response rows.
PROMPTS, RESPONSES = COUNTS
COVERAGE_UNITS = COUNTS

#: ``n_counted``: the sum of the cell counts (distinct items or prompts, or rows).
N_COUNTED = "n_counted"
#: ``n_impossible_cells``: unobserved combinations a nesting rules out (a subcategory
#: with another category's value); they are not "empty". ``coverage_of_possible``:
#: observed / (all - impossible).
N_IMPOSSIBLE_CELLS, COVERAGE_OF_POSSIBLE = "n_impossible_cells", "coverage_of_possible"
#: Grids up to this many cells are checked for impossible (nested) combinations.
IMPOSSIBLE_MAX_CELLS = 1_000_000
#: Former ``attrs`` keys of a :func:`coverage_cells` table (the unit and rows now travel
#: in a :class:`CountedCells`); kept for old imports.
COUNT_UNIT_ATTR, ROWS_ATTR = "count_unit", "n_rows"

SUMMARY_COLUMNS = [SCOPE, FACTORS, N_CELLS, N_OBSERVED_CELLS, N_EMPTY_CELLS,
                   N_IMPOSSIBLE_CELLS, N_ROWS, N_COUNTED, COVERAGE_PERCENTAGE,
                   COVERAGE_OF_POSSIBLE, GINI_INDEX, GINI_INDEX_OBSERVED]


@dataclass(frozen=True)
class CountUnit:
    """What a coverage cell counts: distinct combinations of ``columns``.

    ``noun`` is the plural the sentences use (``items``, ``prompts``, ``rows``),
    ``label`` names it with its columns (``items (example_id)``) and ``reason`` says
    where it comes from (the inferred structure, the design's prompt unit).
    """

    columns: tuple[str, ...]
    noun: str
    label: str
    reason: str


@dataclass(frozen=True)
class CountedCells:
    """A :func:`coverage_cells` table (``frame``: the factors' columns and ``n``) with what
    its ``n`` counts (``unit``) and the rows those come from (``n_rows``): returned by
    ``coverage_cells(..., with_unit=True)`` and accepted wherever the cells are."""

    frame: pd.DataFrame
    unit: CountUnit
    n_rows: int


def _frame(cells: pd.DataFrame | CountedCells) -> pd.DataFrame:
    return cells.frame if isinstance(cells, CountedCells) else cells


def counted_unit(table: pd.DataFrame | CountedCells) -> CountUnit | None:
    """The :class:`CountUnit` of :class:`CountedCells`, or None for a cell table of other
    origin (a plain DataFrame)."""
    return table.unit if isinstance(table, CountedCells) else None


def counted_noun(cells: pd.DataFrame | CountedCells) -> str:
    """What the ``n`` of a :func:`coverage_cells` table counts, as a plural noun
    (``items``, ``prompts``, ``rows``; a cell table of other origin counts rows)."""
    unit = counted_unit(cells)
    return unit.noun if unit is not None else "rows"


def count_unit(results: pd.DataFrame, design: Design, *, unit: str = "prompts",
               structure: object = None) -> CountUnit:
    """What :func:`coverage_cells` counts on ``results`` with ``design``.

    With ``unit="responses"``: rows. Else the **item id** of the table's structure (the
    design's ``inferred`` block when it has one, else :func:`analysis.structure.
    infer_structure` on ``results`` with the design's factors declared), unless the
    design declares a prompt unit naming a column the structure does not call a factor
    or template (a prompt id the analyst chose: used as written); without an item id,
    the design's prompt unit columns.
    """
    if unit == RESPONSES:
        return CountUnit((), "rows", "rows (responses)", "every row counts")
    declared = tuple(design.prompt_unit)
    inferred = design.inferred or {}
    item, roles = inferred.get("item_id"), dict(inferred.get("roles") or {})
    why = "the item id of the suggested design's structure"
    if item is None or item not in results.columns:
        if structure is None:
            from analysis.structure import infer_structure

            names = [f for f in design.names if f in results.columns]
            structure = infer_structure(results, factors=names,
                                        outcome=design.outcome.column if design.outcome
                                        and design.outcome.column in results else None)
        item = getattr(structure, "item_id", None)
        roles = {c.column: c.role for c in getattr(structure, "columns", ())}
        why = "the item id inferred from the table (docs/structure.md)"
    chosen = [c for c in declared if roles.get(c, "factor") not in ("factor", "template")]
    if item is not None and (item in declared or not chosen):
        return CountUnit((item,), "items", f"items ({item})",
                         f"`{item}` is {why}: a cell counts its distinct items")
    columns = tuple(design.prompt_unit_columns())
    return CountUnit(columns, "prompts", f"prompts ({', '.join(columns)})",
                     "the design's prompt unit" if declared else
                     "no item id: a prompt is one combination of the domain and prompt "
                     "factors")


def _check_counts(counts, n_cells: int | None) -> tuple[np.ndarray, int]:
    x = np.asarray(counts, dtype=float).ravel()
    if np.isnan(x).any() or (x < 0).any():
        raise AnalysisError("Cell counts must be non-negative numbers.")
    if n_cells is None:
        n_cells = x.size
    n_cells = int(n_cells)
    if n_cells < 1:
        raise AnalysisError("A design has at least one cell.")
    if np.count_nonzero(x) > n_cells:
        raise AnalysisError(f"{np.count_nonzero(x):,} non-empty counts cannot fit in "
                            f"{n_cells:,} cells.")
    return x, n_cells


def coverage_percentage(counts: Sequence[float] | np.ndarray, *, n_cells: int | None = None
                        ) -> float:
    """Share of cells holding at least one row: ``#{c : n_c > 0} / N``.

    Parameters
    ----------
    counts
        Cell counts: every cell of the grid (dense, zeros included) or, with
        ``n_cells``, only some of them (typically the observed, non-zero ones).
    n_cells
        N, the number of cells of the whole grid (may exceed 2**63). Default:
        ``len(counts)``.

    Returns
    -------
    float
        A fraction in [0, 1] (``docs/methods.md`` §1; ideal 1), not a percentage.
    """
    x, n_cells = _check_counts(counts, n_cells)
    return np.count_nonzero(x) / n_cells


def gini_index(counts: Sequence[float] | np.ndarray, *, n_cells: int | None = None) -> float:
    """Gini index of the cell counts (``docs/methods.md`` §1); 0 = all cells equal.

    Without ``n_cells`` the counts are the whole grid and the formula is applied
    literally: sort all N counts ascending and compute
    ``1 - 2 * sum_k (n_(k) / S) * ((N - k + 1/2) / N)``. With ``n_cells`` the counts
    are the non-empty cells (zeros among them are ignored) and the ``n_cells - M``
    missing cells are zeros in the first sorted positions, which contribute nothing:
    ``1 - 2 / (N S) * sum_i m_(i) (M - i + 1/2)``. Both give the same number.

    Raises
    ------
    AnalysisError
        Negative or missing counts, or all counts zero (no rows: the index is undefined).
    """
    dense = n_cells is None
    x, n_cells = _check_counts(counts, n_cells)
    total = float(x.sum())
    if total <= 0:
        raise AnalysisError("The Gini index needs at least one row; every cell is empty.")
    if dense:  # the formula as written, over all N sorted counts
        k = np.arange(1, n_cells + 1, dtype=float)
        return float(1.0 - 2.0 * np.sum((np.sort(x) / total) * ((n_cells - k + 0.5) / n_cells)))
    return _gini_of_sorted(np.sort(x[x > 0]), n_cells)


def _gini_of_sorted(m: np.ndarray, n_cells: int) -> float:
    """Sparse Gini: ``m`` the non-zero counts ascending, ``n_cells - len(m)`` zeros implied."""
    weights = len(m) - np.arange(1, len(m) + 1, dtype=float) + 0.5
    return float(1.0 - 2.0 * float(np.dot(m, weights)) / (float(m.sum()) * float(n_cells)))


# --- the grid of a cell table --------------------------------------------------------------
@dataclass(frozen=True)
class CoverageGrid:
    """Observed cells of a grid: one entry per non-empty cell, in key (declared) order."""

    factors: tuple[str, ...]
    values: tuple[tuple[str, ...], ...]
    codes: tuple[np.ndarray, ...]  # per factor, position in ``values`` of each cell
    counts: np.ndarray  # int64 rows per observed cell
    keys: np.ndarray  # mixed-radix cell index (int64, or Python ints for huge grids)

    @property
    def sizes(self) -> list[int]:
        return [len(v) for v in self.values]

    @property
    def n_cells(self) -> int:
        return math.prod(self.sizes)


def grid_values(design: Design, factors: Sequence[str], where: Where | None = None
                ) -> list[tuple[str, ...]]:
    """Declared values of each factor, restricted to the kept ones for filtered factors."""
    out = []
    for name in factors:
        declared = design.factor(name).values
        if where and where.get(name):
            wanted = where[name]
            wanted = {wanted} if isinstance(wanted, str) else {str(w) for w in wanted}
            unknown = sorted(wanted - set(declared))
            if unknown:
                raise AnalysisError(f"Subset {name} = {', '.join(unknown)}: not a declared "
                                    f"value of {name!r}.")
            declared = tuple(v for v in declared if v in wanted)
        out.append(tuple(declared))
    return out


def coverage_grid(cells: pd.DataFrame | CountedCells, design: Design,
                  factors: Sequence[str] | None, where: Where | None) -> CoverageGrid:
    """The observed cells of ``cells`` (a cell table or :class:`CountedCells`) over
    ``factors`` (the design's default factors for None), filtered by ``where``, as a
    :class:`CoverageGrid`."""
    cells = _frame(cells)
    factors = list(default_factors(design) if factors is None else factors)
    if not factors:
        raise AnalysisError("Choose at least one factor for coverage.")
    if len(set(factors)) < len(factors):
        raise AnalysisError("A factor is listed twice.")
    values = grid_values(design, factors, where)
    if N not in cells.columns:
        raise AnalysisError(f"The cell table has no {N!r} column (use analysis.cells."
                            "cell_table).")
    absent = [f for f in factors if f not in cells.columns]
    if absent:
        raise AnalysisError(f"The cell table has no column for {', '.join(absent)}: build it "
                            "over these factors.")
    n = cells[N].to_numpy(dtype=np.int64)
    keep = n > 0
    codes = []
    for f, declared in zip(factors, values, strict=True):
        raw, labels = factor_codes(cells[f])
        position = {v: i for i, v in enumerate(declared)}
        remap = np.array([position.get(lab, -1) for lab in labels] + [-1], dtype=np.int64)
        mapped = remap[raw]  # raw == -1 (missing) maps to the trailing -1
        outside = keep & (mapped < 0)
        if outside.any():
            bad = sorted({labels[r] if r >= 0 else "(missing)" for r in raw[outside]})
            full = design.factor(f).values
            why = ("outside the subset" if all(b in full for b in bad)
                   else "not declared by the design")
            raise AnalysisError(f"Factor {f!r}: the cell table holds rows with values {why}: "
                                f"{', '.join(repr(b) for b in bad[:8])}.")
        codes.append(mapped)
    codes = [c[keep] for c in codes]
    n = n[keep]
    sizes = [len(v) for v in values]
    key = combine_codes(codes, sizes)
    if len(key) > 1 and not (key.dtype != object and bool(np.all(np.diff(key) > 0))):
        # not already one row per cell in key order (e.g. a cell table over more factors)
        if key.dtype == object:
            uniq, inverse = np.unique(np.column_stack(codes), axis=0, return_inverse=True)
            key = combine_codes([uniq[:, j] for j in range(len(factors))], sizes)
        else:
            key, inverse = np.unique(key, return_inverse=True)
        n = np.bincount(inverse.reshape(-1), weights=n, minlength=len(key))
        n = np.rint(n).astype(np.int64)
        codes = split_codes(key, sizes)
    return CoverageGrid(tuple(factors), tuple(values), tuple(np.asarray(c, dtype=np.int64)
                                                      for c in codes),
                 np.asarray(n, dtype=np.int64), key)


def _frame_of(factors: Sequence[str], values: Sequence[Sequence[str]],
              codes: Sequence[np.ndarray]) -> pd.DataFrame:
    return pd.DataFrame({
        f: pd.Categorical.from_codes(c, categories=list(v), ordered=True)
        for f, c, v in zip(factors, codes, values, strict=True)
    })


# --- the cell table coverage counts ------------------------------------------------------
def coverage_cells(
    results: pd.DataFrame,
    design: Design,
    factors: Sequence[str],
    *,
    unit: str = PROMPTS,
    where: Where | None = None,
    counted: CountUnit | None = None,
    with_unit: bool = False,
) -> pd.DataFrame | CountedCells:
    """Cell table over ``factors`` counting distinct items or prompts (default) or
    responses.

    Parameters
    ----------
    results
        The results table (:func:`analysis.design.apply_design`).
    design
        Names what a prompt is: :meth:`~analysis.design.Design.prompt_unit_columns`.
    factors
        The factors spanning the grid.
    unit
        ``"prompts"``: ``n`` = distinct items (when the structure has an item id) or
        prompts with the cell's values (one answered by several models or seeds counts
        once), see :func:`count_unit`; ``"responses"``: ``n`` = rows.
    where
        Row filter applied first (:func:`analysis.cells.filter_rows`).
    counted
        What to count (default :func:`count_unit`).

    Returns
    -------
    pandas.DataFrame
        Observed cells: one categorical column per factor and ``n`` (int64), as
        :func:`analysis.cells.cell_table` with ``with_outcome=False``.
        ``docs/coverage.md`` (what is counted).
    CountedCells
        With ``with_unit``: that table with its :class:`CountUnit` and the rows counted
        (what :func:`coverage_summary` puts in ``n_rows``).
    """
    from analysis.cells import cell_table

    if unit not in COVERAGE_UNITS:
        raise AnalysisError(f"Coverage counts {' or '.join(COVERAGE_UNITS)}, not {unit!r}.")
    factors = list(factors)
    if unit == RESPONSES:
        out = cell_table(results, factors, where=where, with_outcome=False)
        return CountedCells(out, count_unit(results, design, unit=unit), int(out[N].sum())
                            ) if with_unit else out
    counted = counted or count_unit(results, design, unit=unit)
    prompt_columns = list(counted.columns)
    absent = [c for c in prompt_columns if c not in results.columns]
    if absent:
        raise AnalysisError(f"The prompt unit names columns that are not in the table: "
                            f"{', '.join(absent)}.")
    extra = [c for c in prompt_columns if c not in factors]
    distinct = cell_table(results, factors + extra, where=where, with_outcome=False)
    n_rows = int(distinct[N].sum())
    if not extra:  # every counted column is a grid factor: one unit per observed cell
        out = distinct.assign(**{N: np.ones(len(distinct), dtype=np.int64)})
    else:
        out = cell_table(distinct[factors], factors, with_outcome=False)
        if counted.noun == "items":  # grid factors varying within an item: counted per value
            item = counted.columns[0]
            per = [f for f in factors if len(distinct) and int(
                distinct[distinct[N] > 0].groupby(item, observed=True)[f].nunique().max()) > 1]
            if per:
                from dataclasses import replace

                # an item asked in several variants of the grid: each (item, variant)
                # is one prompt, counted in its variant's cell
                counted = replace(counted, noun="prompts",
                                  label=f"prompts ({' x '.join((item, *per))}: an item "
                                        f"counted once per {' x '.join(per)})")
    return CountedCells(out, counted, n_rows) if with_unit else out


def impossible_keys(grid: CoverageGrid, design: Design) -> tuple[np.ndarray, tuple[str, ...]]:
    """Sorted keys of the grid's unobserved combinations that a nesting among its factors
    rules out (:func:`analysis.structure.excluded_cells`, nesting rule only: BBQ's
    subcategory fixes its category, so a subcategory with another category is impossible,
    not empty), and the rules' one-line reasons. Only grids of at most
    :data:`IMPOSSIBLE_MAX_CELLS` cells are checked (larger: none)."""
    none = np.zeros(0, dtype=np.int64)
    if len(grid.factors) < 2 or grid.n_cells > IMPOSSIBLE_MAX_CELLS or not len(grid.keys):
        return none, ()
    from analysis.structure import excluded_cells

    observed = _frame_of(grid.factors, grid.values, list(grid.codes))
    refs = {f: design.factor(f).reference for f in grid.factors}
    rules = excluded_cells(observed, list(grid.factors), [list(v) for v in grid.values],
                           references=refs, aliasing=False)
    return np.flatnonzero(rules.mask).astype(np.int64), rules.reasons


# --- summaries -----------------------------------------------------------------------------
def coverage_summary(
    cells: pd.DataFrame | CountedCells,
    design: Design,
    *,
    factors: Sequence[str] | None = None,
    where: Where | None = None,
    return_reasons: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, list[str]]:
    """Coverage percentage and Gini index over the chosen factors, and per factor.

    Parameters
    ----------
    cells
        Cell table with a column per factor and ``n`` (see module docstring), or
        :class:`CountedCells` (then ``n_rows`` is its rows, not the sum of ``n``).
    design
        Declares the values of each factor; declared values never seen count as empty.
    factors
        The factors spanning the grid. Default: :func:`default_factors` (domain and
        prompt factors). Include model factors to ask whether every model answered
        every prompt.
    where
        The subset the cell table was filtered with; a filtered factor's grid keeps only
        its chosen values.

    Returns
    -------
    pandas.DataFrame
        First row ``scope = "joint"`` over the whole grid, then one ``"marginal"`` row per
        factor (cells = its declared values, counts = its marginal counts). Columns:
        ``scope``, ``factors`` (names joined by ``" x "``), ``n_cells`` (N, zeros
        included; Python int, may exceed 2**63), ``n_observed_cells`` (M), ``n_empty_cells``
        (N - M), ``n_rows`` (S), ``coverage_percentage`` (M / N, a fraction in [0, 1]),
        ``gini_index`` (over all N counts) and ``gini_index_observed`` (over the M
        non-empty counts only; ``gini_index = 1 - CP * (1 - gini_index_observed)``).
        ``docs/methods.md`` §1.
    (summary, reasons)
        With ``return_reasons``: also the one-line reasons of the impossible cells (for
        :func:`describe_coverage`'s ``impossible_reasons``).
    """
    n_rows = cells.n_rows if isinstance(cells, CountedCells) else None
    grid = coverage_grid(_frame(cells), design, factors, where)
    if grid.counts.sum() == 0:
        raise AnalysisError("No rows in these cells: coverage is undefined.")
    impossible, reasons = impossible_keys(grid, design)
    rows = [_summary_row(JOINT, TIMES.join(grid.factors), grid.counts, grid.n_cells, n_rows,
                         len(impossible))]
    for f, c, v in zip(grid.factors, grid.codes, grid.values, strict=True):
        marginal = np.bincount(c, weights=grid.counts, minlength=len(v))
        rows.append(_summary_row(MARGINAL, f, marginal[marginal > 0], len(v), n_rows))
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    return (out, list(reasons)) if return_reasons else out


def _summary_row(scope: str, name: str, counts: np.ndarray, n_cells: int,
                 n_rows: int | None = None, n_impossible: int = 0) -> dict:
    m = np.sort(np.asarray(counts, dtype=float)[np.asarray(counts) > 0])
    counted = int(round(float(m.sum())))
    return {SCOPE: scope, FACTORS: name, N_CELLS: n_cells, N_OBSERVED_CELLS: len(m),
            N_EMPTY_CELLS: n_cells - len(m) - n_impossible, N_IMPOSSIBLE_CELLS: n_impossible,
            N_ROWS: counted if n_rows is None else n_rows,
            N_COUNTED: counted, COVERAGE_OF_POSSIBLE: len(m) / max(n_cells - n_impossible, 1),
            COVERAGE_PERCENTAGE: len(m) / n_cells,
            GINI_INDEX: _gini_of_sorted(m, n_cells),
            GINI_INDEX_OBSERVED: _gini_of_sorted(m, len(m))}


def per_factor_gini(summary: pd.DataFrame) -> dict[str, float]:
    """``{factor: Gini index of its marginal counts}`` from :func:`coverage_summary`."""
    rows = summary[summary[SCOPE] == MARGINAL]
    return {str(f): float(g) for f, g in zip(rows[FACTORS], rows[GINI_INDEX], strict=True)}


def marginal_counts(
    cells: pd.DataFrame,
    design: Design,
    *,
    factors: Sequence[str] | None = None,
    where: Where | None = None,
) -> pd.DataFrame:
    """Rows per declared value of each factor, zeros included.

    Returns
    -------
    pandas.DataFrame
        Long table in declared order; columns ``factor``, ``value`` (str) and ``n``
        (int64 rows; 0 for a declared value never seen). ``docs/methods.md`` §1
        (per-factor Gini).
    """
    grid = coverage_grid(cells, design, factors, where)
    parts = []
    for f, c, v in zip(grid.factors, grid.codes, grid.values, strict=True):
        counts = np.bincount(c, weights=grid.counts, minlength=len(v))
        parts.append(pd.DataFrame({FACTOR: f, VALUE: list(v),
                                   N: np.rint(counts).astype(np.int64)}))
    return pd.concat(parts, ignore_index=True)


def pair_counts(
    cells: pd.DataFrame,
    design: Design,
    row_factor: str,
    col_factor: str,
    *,
    where: Where | None = None,
    within: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Rows per combination of two factors, every declared combination listed.

    With ``within`` (the factors spanning the whole grid, including both), a design of at
    most :data:`DENSE_MAX_CELLS` cells is counted once as a dense tensorly tensor and the
    heatmap is its 2-D marginal (:func:`tensor_marginal`); larger grids, or no
    ``within``, sum the observed cells directly. Both give the same counts (tested).

    Returns
    -------
    pandas.DataFrame
        ``|V_row| * |V_col|`` rows in declared order (row factor slowest); columns
        ``<row_factor>``, ``<col_factor>`` (categoricals over the declared values) and
        ``n`` (int64, 0 for an empty combination). The 2-D marginal behind a coverage
        heatmap (``docs/methods.md`` §1).
    """
    if row_factor == col_factor:
        raise AnalysisError(f"Choose two different factors (got {row_factor!r} twice).")
    grid = coverage_grid(cells, design, [row_factor, col_factor], where)
    n_rows, n_cols = grid.sizes
    within = list(within or [])
    if row_factor in within and col_factor in within and coverage_grid(
            cells, design, within, where).n_cells <= DENSE_MAX_CELLS:
        tensor = count_tensor(cells, design, factors=within, where=where)
        marginal = tensor_marginal(tensor, [within.index(row_factor), within.index(col_factor)])
        counts = np.asarray(marginal, dtype=np.int64).reshape(-1)
    else:
        counts = np.zeros(n_rows * n_cols, dtype=np.int64)
        counts[grid.keys.astype(np.int64)] = grid.counts
    full = np.arange(n_rows * n_cols, dtype=np.int64)
    out = _frame_of(grid.factors, grid.values, split_codes(full, grid.sizes))
    out[N] = counts
    return out


def empty_cells(
    cells: pd.DataFrame,
    design: Design,
    *,
    factors: Sequence[str] | None = None,
    where: Where | None = None,
    offset: int = 0,
    limit: int = 100,
) -> pd.DataFrame:
    """Empty combinations (no row), in declared order, ``limit`` of them from ``offset``;
    combinations a nesting rules out (:func:`impossible_keys`) are not empty.

    The k-th empty cell is found by a binary search over the sorted observed cell
    indices, so a page of a 10^12-cell grid costs O(limit * log M) and never lists the
    whole grid. The total number of empty cells is ``n_empty_cells`` of
    :func:`coverage_summary`.

    Returns
    -------
    pandas.DataFrame
        One row per empty cell, one categorical column per factor (first factor
        slowest). Empty when ``offset`` is past the last empty cell.
    """
    if offset < 0 or limit < 0:
        raise AnalysisError("offset and limit must be non-negative.")
    grid = coverage_grid(cells, design, factors, where)
    taken = grid.keys
    impossible, _ = impossible_keys(grid, design)
    if len(impossible):  # impossible (nested) combinations are not empty
        taken = np.union1d(grid.keys.astype(np.int64), impossible)
    n_empty = grid.n_cells - len(taken)
    stop = min(offset + limit, n_empty)
    if stop <= offset:
        none = [np.zeros(0, dtype=np.int64)] * len(grid.factors)
        return _frame_of(grid.factors, grid.values, none)
    big = taken.dtype == object
    # empties before taken cell i (0-based) = taken[i] - i, a non-decreasing sequence
    gaps = taken - np.arange(len(taken), dtype=object if big else np.int64)
    if big:
        wanted = np.array([int(t) for t in range(offset, stop)], dtype=object)
    else:
        wanted = np.arange(offset, stop, dtype=np.int64)
    before = np.searchsorted(gaps, wanted, side="right")
    keys = wanted + (before.astype(object) if big else before)
    return _frame_of(grid.factors, grid.values, split_codes(keys, grid.sizes))


def thinnest_cells(
    cells: pd.DataFrame,
    design: Design,
    *,
    factors: Sequence[str] | None = None,
    where: Where | None = None,
    limit: int = 20,
) -> pd.DataFrame:
    """The observed cells with the fewest rows (what to add next, after the empty ones).

    Returns
    -------
    pandas.DataFrame
        Up to ``limit`` observed cells sorted by ``n`` ascending, ties in declared
        order; one categorical column per factor and ``n`` (int64).
    """
    if limit < 0:
        raise AnalysisError("limit must be non-negative.")
    grid = coverage_grid(cells, design, factors, where)
    limit = min(limit, len(grid.counts))
    if limit < len(grid.counts):
        # the limit-th smallest count, then every cell up to it, sorted stably
        cut = np.partition(grid.counts, limit - 1)[limit - 1] if limit else -1
        pick = np.flatnonzero(grid.counts <= cut)
    else:
        pick = np.arange(len(grid.counts))
    pick = pick[np.argsort(grid.counts[pick], kind="stable")][:limit]
    out = _frame_of(grid.factors, grid.values, [c[pick] for c in grid.codes])
    out[N] = grid.counts[pick]
    return out


def model_coverage(
    cells: pd.DataFrame,
    design: Design,
    *,
    model_factors: Sequence[str] | None = None,
    prompt_factors: Sequence[str] | None = None,
    where: Where | None = None,
    respect_nesting: bool = True,
    return_nested: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, list[str]]:
    """Did every model see every prompt? Coverage of the prompt grid per model.

    A prompt factor can be nested in a model factor: SSQA run with 5 seeds only under
    chain-of-thought has ``seed`` determining ``cot`` (the seed "none" goes with cot = no,
    seeds 1-5 with cot = yes). A model x seed combination is then compared with the
    prompts *of its own* cot value, not with every prompt, so a complete run reads as
    complete. The nested prompt factors are found with
    :func:`analysis.nesting.find_nestings` on the observed cells (model factor ->
    prompt factor, any kind but "constant").

    Parameters
    ----------
    model_factors
        Default: the design's model factors.
    prompt_factors
        The factors defining a prompt. Default: domain and prompt factors.
    respect_nesting
        ``False``: compare every model combination with every prompt combination any
        model answered (the check without nesting).

    Returns
    -------
    pandas.DataFrame
        One row per declared combination of the model factors (one categorical column
        each), with ``n_rows``, ``n_observed_cells`` (prompt combinations it answered),
        ``coverage_percentage`` (that over all declared prompt combinations, a
        fraction), ``n_expected_prompt_cells`` (the prompt combinations some model
        answered that agree with this combination's values of the nested prompt
        factors; all of them without nesting) and ``n_missing_prompt_cells`` (expected
        but not answered; 0 for every model = every model saw every prompt it should
        have). ``docs/methods.md`` §1, ``docs/coverage.md``.
    (table, nested)
        With ``return_nested``: also the prompt factors found nested in model factors
        (for :func:`describe_model_coverage`'s ``nested``).
    """
    model_factors = list(design.of_kind("model") if model_factors is None else model_factors)
    prompt_factors = list(default_factors(design) if prompt_factors is None
                          else prompt_factors)
    prompt_factors = [f for f in prompt_factors if f not in model_factors]
    if not model_factors or not prompt_factors:
        raise AnalysisError("Model coverage needs at least one model factor and one other "
                            "factor.")
    grid = coverage_grid(cells, design, model_factors + prompt_factors, where)
    k = len(model_factors)
    model_sizes, prompt_sizes = grid.sizes[:k], grid.sizes[k:]
    n_models = math.prod(model_sizes)
    model_key = combine_codes(list(grid.codes[:k]), model_sizes).astype(np.int64)
    prompt_key = combine_codes(list(grid.codes[k:]), prompt_sizes)
    nested = _nested_prompt_factors(grid, k, design) if respect_nesting else []
    if nested:
        at = [grid.factors.index(f) for f in nested]
        stratum = combine_codes([grid.codes[i] for i in at], [grid.sizes[i] for i in at]
                        ).astype(np.int64)
    else:
        stratum = np.zeros(len(model_key), dtype=np.int64)
    # distinct prompts (across models) per stratum, then each model's strata
    pairs = np.unique(np.column_stack([stratum.astype(object), prompt_key.astype(object)])
                      if prompt_key.dtype == object else
                      np.column_stack([stratum, prompt_key]), axis=0)
    strata, per_stratum = np.unique(pairs[:, 0].astype(np.int64), return_counts=True)
    union_of = dict(zip(strata.tolist(), per_stratum.tolist(), strict=True))
    model_strata = np.unique(np.column_stack([model_key, stratum]), axis=0)
    expected = np.zeros(n_models, dtype=np.int64)
    for m, st in model_strata:
        expected[m] += union_of[int(st)]
    observed = np.bincount(model_key, minlength=n_models)  # cells are unique per model+prompt
    expected[observed == 0] = len(pairs)  # never run: nothing says which stratum it is in
    rows = np.rint(np.bincount(model_key, weights=grid.counts, minlength=n_models))
    every_model = split_codes(np.arange(n_models, dtype=np.int64), model_sizes)
    out = _frame_of(model_factors, grid.values[:k], every_model)
    n_prompt_cells = math.prod(prompt_sizes)
    out[N_ROWS] = rows.astype(np.int64)
    out[N_OBSERVED_CELLS] = observed.astype(np.int64)
    out[COVERAGE_PERCENTAGE] = observed / n_prompt_cells
    out[N_EXPECTED_PROMPT_CELLS] = expected
    out[N_MISSING_PROMPT_CELLS] = (expected - observed).astype(np.int64)
    return (out, nested) if return_nested else out


def _nested_prompt_factors(grid: CoverageGrid, k: int, design: Design) -> list[str]:
    """Prompt factors of the grid that some model factor determines (see model_coverage)."""
    from analysis.columns import DEPENDENT, DETERMINANT, NESTING_KIND
    from analysis.nesting import find_nestings

    observed = _frame_of(grid.factors, grid.values, list(grid.codes))
    refs = {f: design.factor(f).reference for f in grid.factors}
    found = find_nestings(observed, list(grid.factors), references=refs)
    models, prompts = set(grid.factors[:k]), grid.factors[k:]
    hit = {d for a, d, kind in zip(found[DETERMINANT], found[DEPENDENT], found[NESTING_KIND],
                                   strict=True)
           if kind != "constant" and a in models and d in prompts}
    return [f for f in prompts if f in hit]


def coverage_nestings(
    cells: pd.DataFrame,
    design: Design,
    *,
    factors: Sequence[str] | None = None,
    where: Where | None = None,
) -> pd.DataFrame:
    """Nested factors among the grid's factors, found from the cell table.

    :func:`analysis.nesting.find_nestings` over the observed cells of the grid (with the
    design's references): a functional dependency holds on the rows exactly when it
    holds on their distinct observed combinations, so the cells give the rows' answer.

    Returns
    -------
    pandas.DataFrame
        The columns of :func:`analysis.nesting.find_nestings` (``determinant``,
        ``dependent``, ``n_determinant_values``, ``n_dependent_values``, ``kind``).
        ``docs/methods.md`` §1 (nested factors).
    """
    from analysis.nesting import find_nestings

    grid = coverage_grid(cells, design, factors, where)
    # keys stay Python integers past int64 (10^20-cell grids): no cast here
    observed = _frame_of(grid.factors, grid.values, split_codes(grid.keys, grid.sizes))
    refs = {f: design.factor(f).reference for f in grid.factors}
    return find_nestings(observed, grid.factors, references=refs)


# --- dense (tensorly), for small designs and views ---------------------------------------
def count_tensor(
    cells: pd.DataFrame,
    design: Design,
    *,
    factors: Sequence[str] | None = None,
    where: Where | None = None,
    max_cells: int = DENSE_MAX_CELLS,
):
    """The dense count tensor (tensorly, numpy backend): mode j = declared values of factor j.

    Raises
    ------
    AnalysisError
        The grid has more than ``max_cells`` cells (use the sparse functions).
    """
    import tensorly as tl

    grid = coverage_grid(cells, design, factors, where)
    if grid.n_cells > max_cells:
        raise AnalysisError(f"The grid of {TIMES.join(grid.factors)} has {grid.n_cells:,} "
                            f"cells, more than the {max_cells:,} a dense tensor may hold; the "
                            "sparse coverage functions handle it.")
    flat = np.zeros(grid.n_cells, dtype=np.int64)
    flat[grid.keys.astype(np.int64)] = grid.counts
    return tl.tensor(flat.reshape(grid.sizes), dtype=tl.int64)


def tensor_marginal(tensor, modes: Sequence[int]) -> np.ndarray:
    """Counts summed over every mode not in ``modes``, axes in the order of ``modes``.

    A single mode is the row sums of the tensor's mode-``j`` unfolding.
    """
    import tensorly as tl

    modes = list(modes)
    if not modes or len(set(modes)) < len(modes):
        raise AnalysisError("Give one or more distinct modes.")
    if len(modes) == 1:
        return tl.to_numpy(tl.sum(tl.unfold(tensor, modes[0]), axis=1))
    others = tuple(i for i in range(tl.ndim(tensor)) if i not in modes)
    summed = tl.to_numpy(tl.sum(tensor, axis=others)) if others else tl.to_numpy(tensor)
    kept = sorted(modes)
    return np.transpose(summed, [kept.index(m) for m in modes])


# --- words ---------------------------------------------------------------------------------
def describe_coverage(summary: pd.DataFrame, marginals: pd.DataFrame | None = None, *,
                      unit: str = RESPONSES, n_rows: int | None = None,
                      counted: CountUnit | None = None,
                      impossible_reasons: Sequence[str] = ()) -> list[str]:
    """Plain-language sentences reading :func:`coverage_summary` (and the marginals).

    E.g. ``"25.5 % of the 27,824 combinations of template x stigma x prompt_style x
    cot have no prompt (7,104 empty cells)."`` ``unit`` says what the cells count
    (:func:`coverage_cells`): with ``"prompts"`` the sentence names the prompts and,
    when ``n_rows`` is given, the rows they come from; ``counted`` is the cells'
    :class:`CountUnit` (:class:`CountedCells`), ``impossible_reasons`` the summary's
    (``coverage_summary(..., return_reasons=True)``).
    """
    joint = summary[summary[SCOPE] == JOINT].iloc[0]
    n, m = int(joint[N_CELLS]), int(joint[N_OBSERVED_CELLS])
    cp, gi, gi_obs = (float(joint[c]) for c in (COVERAGE_PERCENTAGE, GINI_INDEX,
                                                GINI_INDEX_OBSERVED))
    impossible = int(joint[N_IMPOSSIBLE_CELLS]) if N_IMPOSSIBLE_CELLS in joint.index else 0
    what = f"the {n:,} combinations of {joint[FACTORS]}"
    if impossible:
        what = (f"the {n - impossible:,} possible combinations of {joint[FACTORS]} (of "
                f"{n:,}; {impossible:,} are impossible: "
                + "; ".join(impossible_reasons) + ")")
    noun = counted.noun if counted is not None else ("prompts" if unit == PROMPTS else "rows")
    one = "item" if noun not in ("prompts", "rows") else "prompt"
    if n_rows is None and counted is not None:
        n_rows = int(joint[N_ROWS])
    out = []
    if m == n - impossible:
        out.append(f"Every one of {what} has at least one {one}.")
    else:
        held = int(joint[N_COUNTED]) if N_COUNTED in joint.index else int(joint[N_ROWS])
        if unit == PROMPTS:
            rows = f" of the {n_rows:,} rows" if n_rows is not None else ""
            label = counted.label if counted is not None else "prompts"
            things = f"the {held:,} distinct {label}{rows}"
        else:
            things = f"the {held:,} rows"
        empty = n - m - impossible
        out.append(f"{percent_text(empty / (n - impossible))} % of {what} have no {one} "
                   f"({empty:,} empty "
                   f"cells); {m:,} hold {things} "
                   f"({held / max(m, 1):,.1f} per non-empty cell on average).")
    if m > 1:
        empties = "the empty and impossible cells" if impossible else "the empty cells"
        out.append(f"Gini index {gi:.3f} (0 = every combination equally represented, 1 = a "
                   f"few hold everything): {1 - cp:.3f} of it comes from {empties} and "
                   f"{cp * gi_obs:.3f} from unequal filling of the non-empty ones (their own "
                   f"Gini index is {gi_obs:.3f}).")
    else:
        out.append(f"Gini index {gi:.3f}: all rows sit in a single combination.")
    factors = summary[summary[SCOPE] == MARGINAL]
    for row in factors.itertuples(index=False):
        empty = int(getattr(row, N_EMPTY_CELLS))
        name = getattr(row, FACTORS)
        if empty:
            unseen = ""
            if marginals is not None:
                zero = marginals[(marginals[FACTOR] == name) & (marginals[N] == 0)][VALUE]
                unseen = f": {', '.join(repr(v) for v in zero.head(5))}"
                unseen += " ..." if len(zero) > 5 else ""
            verb = "never occurs" if empty == 1 else "never occur"
            out.append(f"{name}: {empty} of its {int(getattr(row, N_CELLS))} declared values "
                       f"{verb}{unseen}.")
    if len(factors):
        worst = factors.loc[factors[GINI_INDEX].idxmax()]
        if worst[GINI_INDEX] >= 0.1:
            text = (f"The most unevenly represented factor is {worst[FACTORS]} "
                    f"(Gini {worst[GINI_INDEX]:.3f})")
            if marginals is not None:
                mine = marginals[marginals[FACTOR] == worst[FACTORS]]
                lo, hi = mine.loc[mine[N].idxmin()], mine.loc[mine[N].idxmax()]
                text += (f": {lo[VALUE]!r} has {int(lo[N]):,} {noun}, {hi[VALUE]!r} "
                         f"{int(hi[N]):,}")
            out.append(text + ".")
        else:
            out.append("Every factor's values are about equally represented (per-factor Gini "
                       "below 0.1).")
    return out


def describe_model_coverage(table: pd.DataFrame, model_factors: Sequence[str], *,
                            nested: Sequence[str] = ()) -> list[str]:
    """Plain-language sentences reading :func:`model_coverage` (``nested``: its prompt
    factors nested in model factors, ``model_coverage(..., return_nested=True)``)."""
    names = [" / ".join(str(v) for v in vals) for vals in
             zip(*(table[f] for f in model_factors), strict=True)]
    expected_col = (table[N_EXPECTED_PROMPT_CELLS] if N_EXPECTED_PROMPT_CELLS in table
                    else table[N_OBSERVED_CELLS] + table[N_MISSING_PROMPT_CELLS])
    nested = list(nested)
    absent = [nm for nm, r in zip(names, table[N_ROWS], strict=True) if r == 0]
    missing = [(nm, int(k), int(e)) for nm, k, e, r in
               zip(names, table[N_MISSING_PROMPT_CELLS], expected_col, table[N_ROWS],
                   strict=True) if k and r]
    out = []
    if nested:
        out.append(f"{', '.join(nested)} {'is' if len(nested) == 1 else 'are'} nested in the "
                   f"model factors: each model combination is compared with the prompt "
                   f"combinations at its own value of {', '.join(nested)}.")
    if not missing:
        if nested:
            out.append("Every model combination that has rows answered every prompt "
                       "combination expected of it.")
        else:
            union = int(expected_col.max()) if len(expected_col) else 0
            out.append(f"Every model that has rows answered all {union:,} prompt "
                       "combinations found in the data.")
    for nm, k, e in missing:
        out.append(f"{nm} misses {k:,} of the {e:,} prompt combinations that another "
                   "model answered.")
    if absent:
        out.append(f"No rows at all for {', '.join(absent[:8])}"
                   f"{' ...' if len(absent) > 8 else ''} (declared but never run).")
    return out


# --- tables for display --------------------------------------------------------------------


def empty_cells_page(
    cells: pd.DataFrame | CountedCells,
    design: Design,
    *,
    page: int,
    page_size: int,
    first: pd.DataFrame,
    factors: Sequence[str] | None = None,
    where: Where | None = None,
) -> pd.DataFrame:
    """Page ``page`` (1-based) of :func:`empty_cells`, ``page_size`` rows per page.

    ``first`` holds the first empty cells already listed; a page inside it is sliced
    from it, a later one is found with :func:`empty_cells`.
    """
    offset = (int(page) - 1) * page_size
    if offset + page_size <= len(first):
        return first.iloc[offset:offset + page_size]
    return empty_cells(cells, design, factors=factors, where=where, offset=offset,
                       limit=page_size)


def exclude_from_grid(results, design, exclude: dict) -> tuple:  # noqa: ANN001
    """Rows without the excluded values, and the design without them (an excluded value
    is not counted as empty cells; declared values never seen stay in the grid)."""
    from dataclasses import replace

    from analysis.cells import exclude_rows
    from analysis.errors import AnalysisError

    if not exclude:
        return results, design
    results = exclude_rows(results, exclude)
    factors = []
    for f in design.factors:
        gone = {str(v) for v in exclude.get(f.name, ())}
        kept = tuple(v for v in f.values if v not in gone)
        if not kept:
            raise AnalysisError(f"--exclude leaves no value of {f.name!r}.")
        factors.append(replace(f, values=kept,
                               reference=f.reference if f.reference in kept else kept[0]))
    return results, replace(design, factors=tuple(factors))
