"""What every out-of-core engine provides, and the engine-blind finishing steps.

An engine (:mod:`analysis.engines.duckdb_engine`, :mod:`analysis.engines.spark_engine`)
opens a source as a :class:`Table` and answers a handful of SQL queries built by
:mod:`analysis.engines.sql`. The one query that reads every row is the *aggregate*: a
GROUP BY over the factor-value strings of the key columns returning, per combination,
all rows, rows with a known outcome, the deviation sum and the counters the design
check needs. Everything after it (design check with the pandas path's messages, the
``where`` filter, categorical factor columns, the cell table) runs here on that small
pandas frame, identically for every engine.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from analysis.cell_counts import N_ALL
from analysis.columns import DEVIATIONS, N
from analysis.design import Design, Factor, Outcome
from analysis.engines import sql
from analysis.errors import AnalysisError, DesignError, DesignMismatchError
from analysis.table_meta import TableMeta
from analysis.values import (
    MAX_FACTOR_VALUES,
    REFERENCE_PATTERN,
    guess_kind,
    order_values,
    too_many_values,
)

__all__ = [
    "MAX_GROUPS", "N_ALL", "Table", "Where", "check_aggregate", "design_from_counts",
    "factor_from_counts", "filter_aggregate", "fine_cell_table", "value_counts",
    "fine_cell_meta",
]


#: A GROUP BY returning more combinations than this is refused (an id used as a factor).
MAX_GROUPS = 5_000_000

Where = Mapping[str, str | Sequence[str]]


class Table(ABC):
    """A results table held by an engine; only small aggregates come back to pandas."""

    engine: str = ""
    dialect: sql.Dialect = sql.DUCKDB

    def __init__(self, name: str, kinds: Mapping[str, sql.Kind]):
        self.name = name
        self.kinds = dict(kinds)
        #: Text columns read as numbers written with a decimal comma (as the pandas
        #: loader's ``TableMeta.decimal_comma_columns``).
        self.decimal_comma_columns: list[str] = []

    def meta(self, **more: object) -> TableMeta:
        """What was decided about the table (its name, the decimal-comma columns) plus
        ``more`` fields of :class:`~analysis.table_meta.TableMeta`."""
        return TableMeta(source_name=self.name,
                         decimal_comma_columns=tuple(self.decimal_comma_columns),
                         **more)  # type: ignore[arg-type]

    @abstractmethod
    def query(self, text: str) -> pd.DataFrame:
        """Run ``text`` (SQL with the table named ``{table}``) and return the result."""

    @abstractmethod
    def collect(self, columns: Sequence[str]) -> pd.DataFrame:
        """The listed columns of every row as a pandas DataFrame (row-level fallback)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the table holds (temporary views)."""

    @property
    def columns(self) -> list[str]:
        """Column names in file order."""
        return list(self.kinds)

    def aggregate(self, keys: Sequence[str], outcome: Outcome | None, *,
                  declared: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
        """The one pass over the rows (see the module docstring); ``declared`` (key -> the
        design's values) may spare the engine a query per key (a hint: the result is
        the same)."""
        agg = self._coded_aggregate(keys, outcome, declared=declared)
        if agg is None:
            text = sql.aggregate_query(self.dialect, "{table}", list(keys), self.kinds,
                                       outcome, limit=MAX_GROUPS + 1)
            agg = self.query(text)
        if len(agg) > MAX_GROUPS:
            self._refuse_groups(keys)
        for k in keys:  # categorical: the values once, codes per cell (Python strings per
            agg[k] = agg[k].astype("category")  # cell cost ~1 KB a cell at millions of cells)
        for c in (sql.N_ALL, sql.N_KNOWN, sql.N_BAD, sql.N_HIT):
            agg[c] = agg[c].astype(np.int64)
        agg[sql.DEV_SUM] = agg[sql.DEV_SUM].astype(float)
        return agg

    def _coded_aggregate(self, keys: Sequence[str], outcome: Outcome | None, *,
                         declared: Mapping[str, Sequence[str]] | None = None
                         ) -> pd.DataFrame | None:
        """The aggregate with integer-coded keys (:mod:`analysis.engines.coded`), for an
        engine that returns Arrow tables; None: the engine regroups by the strings."""
        return None

    def _refuse_groups(self, keys: Sequence[str]) -> None:
        for k in keys:
            value = sql.value_text(self.dialect, k, self.kinds[k])
            text = f"SELECT count(DISTINCT {value}) AS n FROM " + "{table}"
            n = int(self.query(text)["n"].iloc[0])
            if n > MAX_FACTOR_VALUES:
                raise DesignError(too_many_values(k, n))
        raise AnalysisError(f"{self.name}: more than {MAX_GROUPS:,} combinations of "
                            f"{', '.join(keys)}; use fewer factors.")

    def distinct(self, column: str, limit: int = MAX_FACTOR_VALUES + 1) -> list[str]:
        """Distinct factor-value strings of ``column`` (messages only)."""
        text = sql.distinct_query(self.dialect, "{table}", column, self.kinds[column], limit)
        return [str(v) for v in self.query(text)["v"]]

    def bad_examples(self, outcome: Outcome) -> list[str]:
        """Up to five outcome values that do not fit the mapping (messages only)."""
        text = sql.bad_examples_query(self.dialect, "{table}", outcome, self.kinds)
        return [str(v) for v in self.query(text)["v"]]

    def n_present(self, column: str) -> int:
        """Rows where ``column`` is not missing (asked only when no row has an outcome)."""
        miss = sql.missing(self.dialect, column, self.kinds[column])
        text = f"SELECT count(*) AS n FROM {{table}} WHERE NOT {miss}"
        return int(self.query(text)["n"].iloc[0])

    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.query("SELECT count(*) AS n FROM {table}")["n"].iloc[0])


# --- from the aggregate to a design -----------------------------------------------------------
def value_counts(agg: pd.DataFrame, column: str) -> pd.Series:
    """Rows per factor value of ``column`` in an aggregate."""
    return agg.groupby(column, sort=False)[sql.N_ALL].sum()


def factor_from_counts(name: str, counts: pd.Series) -> Factor:
    """What :func:`analysis.design.make_factor` returns, from value counts.

    Ordered values, and the reference :func:`analysis.design.default_reference` picks: a
    value named like none / no ... / base / control, else the most frequent.
    """
    values = [str(v) for v in counts.index]
    if len(values) > MAX_FACTOR_VALUES:
        raise DesignError(too_many_values(name, len(values)))
    ordered = order_values(values)
    ref = next((v for v in ordered if REFERENCE_PATTERN.search(v.strip())), None)
    if ref is None:
        by_value = dict(zip(values, counts.to_numpy(), strict=True))
        ref = max(ordered, key=lambda v: by_value[v])
    return Factor(name=name, kind=guess_kind(name), values=tuple(ordered), reference=ref)


def design_from_counts(agg: pd.DataFrame, names: Sequence[str], kinds: Mapping[str, object],
                       outcome: Outcome | None) -> Design:
    """A design over ``names`` built from the data, as the CLI does without ``--design``."""
    for n in names:
        if n not in kinds:
            raise DesignError(f"There is no column {n!r} in the results table.")
    return Design(factors=tuple(factor_from_counts(n, value_counts(agg, n)) for n in names),
                  outcome=outcome)


def check_aggregate(table: Table, agg: pd.DataFrame, design: Design,
                    outcome_error: str | None) -> list[str]:
    """:func:`analysis.design.check_design` on an aggregate: raise or return the warnings."""
    errors, warnings = [], []
    for f in design.factors:
        if f.name not in table.kinds:
            errors.append(f"Factor column {f.name!r} is not in the table.")
            continue
        counts = value_counts(agg, f.name)
        values = [str(v) for v in counts.index]
        if len(values) > MAX_FACTOR_VALUES:
            errors.append(too_many_values(f.name, len(values)))
            continue
        undeclared = [(v, int(c)) for v, c in zip(values, counts.to_numpy(), strict=True)
                      if v not in f.values]
        if undeclared:
            listing = ", ".join(f"{v!r} ({c:,} rows)" for v, c in undeclared[:8])
            more = f" and {len(undeclared) - 8} more" if len(undeclared) > 8 else ""
            errors.append(f"Factor {f.name!r}: values in the data that the design does not "
                          f"declare: {listing}{more}.")
        seen = set(values)
        if f.reference not in seen:
            errors.append(f"Factor {f.name!r}: the reference value {f.reference!r} does not "
                          "occur in the data.")
        unseen = [v for v in f.values if v not in seen and v != f.reference]
        if unseen:
            warnings.append(f"Factor {f.name!r}: declared values never seen in the data "
                            f"(empty cells): {', '.join(repr(v) for v in unseen[:8])}"
                            f"{' ...' if len(unseen) > 8 else ''}.")
    if outcome_error:
        errors.append(outcome_error)
    elif design.outcome is not None:
        message = _outcome_problem(table, agg, design.outcome)
        if message:
            errors.append(message)
    if errors:
        raise DesignMismatchError(errors)
    return warnings


def _outcome_problem(table: Table, agg: pd.DataFrame, outcome: Outcome) -> str | None:
    col = outcome.column
    n_all = int(agg[sql.N_ALL].sum())
    if n_all and int(agg[sql.N_KNOWN].sum()) == 0 and table.n_present(col) == 0:
        return (f"Outcome column {col!r} is empty: all {n_all:,} values are missing, so no "
                "row has a deviation. Choose another outcome.")
    n_bad = int(agg[sql.N_BAD].sum())
    if outcome.mapping == "binary" and n_bad:
        examples = ", ".join(repr(v) for v in table.bad_examples(outcome))
        return (f"Outcome {col!r} should be 0/1 or true/false, but {n_bad:,} rows hold "
                f"other values ({examples}). Map it with a set of deviating values, a "
                "comparison column or a threshold instead.")
    if outcome.mapping in ("below", "above") and n_bad:
        examples = ", ".join(repr(v) for v in table.bad_examples(outcome))
        return (f"Outcome {col!r} needs numbers for a threshold, but {n_bad:,} rows are not "
                f"numeric ({examples}).")
    if outcome.mapping == "values" and int(agg[sql.N_HIT].sum()) == 0:
        values = table.distinct(col)
        return (f"Outcome {col!r}: none of the deviating values "
                f"({', '.join(sorted(set(outcome.values)))}) occurs in the column; its values "
                f"are {', '.join(sorted(values)[:10])}.")
    return None


def filter_aggregate(agg: pd.DataFrame, where: Where | None, kinds: Mapping[str, object]
                     ) -> pd.DataFrame:
    """:func:`analysis.cells.filter_rows` on the aggregate, with the same messages."""
    if not where:
        return agg
    mask = np.ones(len(agg), dtype=bool)
    for column, wanted in where.items():
        if column not in kinds:
            raise AnalysisError(f"Cannot filter on {column!r}: there is no such column.")
        wanted = [wanted] if isinstance(wanted, str) else [str(w) for w in wanted]
        text = agg[column].astype(str)
        values = list(dict.fromkeys(text))
        absent = [w for w in wanted if w not in values]
        if absent:
            raise AnalysisError(
                f"Filter {column} = {', '.join(absent)}: no row has that value "
                f"(values: {', '.join(values[:12])}{', ...' if len(values) > 12 else ''}).")
        mask &= text.isin(wanted).to_numpy()
    out = agg[mask]
    if len(out) == 0:
        raise AnalysisError("No row matches all the filters together.")
    return out


def fine_cell_table(agg: pd.DataFrame, design: Design, keys: Sequence[str], source_name: str,
                    engine: str) -> pd.DataFrame:
    """The aggregate as a cell table over ``keys``: categorical factors over the declared
    values, ``n`` (rows with a known outcome; every row without an outcome), ``deviations``
    (with an outcome) and ``n_all`` (every row, for coverage).

    :func:`analysis.cells.cell_table` sums such a table over any subset of ``keys``. That
    it is an engine's cell table (``engine``, ``n_rows``, ``source_name``) is said by
    :func:`fine_cell_meta`, which the caller passes on beside it.
    """
    declared = {f.name: list(f.values) for f in design.factors}
    columns: dict[str, object] = {}
    sort_codes = []
    for k in keys:
        if k in declared:  # by the distinct values (factorize), not value by value
            if isinstance(agg[k].dtype, pd.CategoricalDtype) and not agg[k].isna().any():
                codes, uniques = agg[k].cat.codes.to_numpy(), agg[k].cat.categories
            else:
                codes, uniques = pd.factorize(agg[k], use_na_sentinel=False)
            where = pd.Index(declared[k]).get_indexer([str(u) for u in uniques])
            columns[k] = pd.Categorical.from_codes(where[codes] if len(codes) else codes,
                                                   categories=declared[k], ordered=True)
            sort_codes.append(columns[k].codes)
        elif isinstance(agg[k].dtype, pd.CategoricalDtype):  # the category strings once:
            # a categorical of the values present (the cluster of 100M rows: 6.6M cells,
            # ~140 MB as text; every reader takes the values, not their order or dtype)
            codes = agg[k].cat.codes.to_numpy()
            seen = np.bincount(codes[codes >= 0], minlength=len(agg[k].cat.categories)) > 0
            position = np.append(np.cumsum(seen) - 1, -1)  # code -1 (missing) stays -1
            columns[k] = pd.Categorical.from_codes(
                position[codes], categories=[str(c) for c, s in
                                             zip(agg[k].cat.categories, seen, strict=True) if s])
        else:
            columns[k] = agg[k].astype(str).to_numpy().astype(object)
    has_outcome = design.outcome is not None
    n_all = agg[sql.N_ALL].to_numpy(dtype=np.int64)
    counts = {N: agg[sql.N_KNOWN].to_numpy(dtype=np.int64) if has_outcome else n_all}
    if has_outcome:
        counts[DEVIATIONS] = np.rint(agg[sql.DEV_SUM].to_numpy(dtype=float)).astype(np.int64)
    counts[N_ALL] = n_all
    # sorted by the declared factors' codes before the frame is built (no second copy)
    order = np.lexsort(sort_codes[::-1]) if sort_codes else slice(None)
    out = pd.DataFrame(index=pd.RangeIndex(len(agg)))
    for k, column in {**columns, **counts}.items():
        out[k] = column[order]
    return out


def fine_cell_meta(table: Table, cells: pd.DataFrame) -> TableMeta:
    """The :class:`~analysis.table_meta.TableMeta` of ``table``'s fine cell table ``cells``
    (:func:`fine_cell_table`): its ``engine`` and the rows it stands for."""
    return table.meta(engine=table.engine, n_rows=int(cells[N_ALL].sum()))
