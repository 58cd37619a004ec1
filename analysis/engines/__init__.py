"""Engines: the same pandas cell table from pandas, DuckDB or Spark.

Every count-based statistic starts from the cell table, and only the one GROUP BY that
builds it needs the raw rows. An engine runs that GROUP BY where the data lives:

* ``pandas``: the reference path (:func:`analysis.io.load_results`,
  :func:`analysis.design.apply_design`, :func:`analysis.cells.cell_table`); the whole
  table sits in memory.
* ``duckdb``: CSV / TSV / Parquet / JSON Lines paths, globs and folders (or a DuckDB
  relation) aggregated straight from disk, out of core.
* ``spark``: a ``pyspark.sql.DataFrame`` (or files Spark reads), aggregated in Spark.
* ``auto``: pandas for DataFrames and files below :data:`AUTO_DUCKDB_BYTES`; DuckDB for
  larger files, globs and folders; the engine of a relation or a Spark DataFrame.

The design's outcome mapping and factor-value formatting become SQL expressions
(:mod:`analysis.engines.sql`); design checks, ``where`` filters and the cell table then
run on the small aggregate (:mod:`analysis.engines.base`). Decisions: ``docs/engines.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import pandas as pd

from analysis.columns import DEVIATION
from analysis.design import Design, Outcome
from analysis.engines.base import N_ALL, Table, Where
from analysis.errors import DesignError, EngineError

Engine = Literal["pandas", "duckdb", "spark", "auto"]
ENGINES: tuple[str, ...] = ("pandas", "duckdb", "spark", "auto")
#: ``auto`` hands a file (or the files of a glob) of at least this many bytes to DuckDB.
AUTO_DUCKDB_BYTES = 100 * 2**20

__all__ = ["AUTO_DUCKDB_BYTES", "ENGINES", "N_ALL", "Engine", "Table", "cell_table",
           "fine_cells", "fine_cells_from_table", "open_table",
           "resolve_engine"]


def resolve_engine(source: object, engine: str = "auto") -> str:
    """The engine that will read ``source``: ``engine`` itself unless it is ``auto``.

    Raises
    ------
    EngineError
        An unknown engine name.
    LoadError
        A path, glob or folder that matches no file (``auto`` looks at file sizes).
    """
    from analysis.engines.duckdb_engine import expand, is_relation
    from analysis.engines.spark_engine import is_spark_frame

    if engine not in ENGINES:
        raise EngineError(f"Unknown engine {engine!r}; use one of {', '.join(ENGINES)}.")
    if engine != "auto":
        return engine
    if isinstance(source, pd.DataFrame):
        return "pandas"
    if is_spark_frame(source):
        return "spark"
    if is_relation(source):
        return "duckdb"
    if isinstance(source, (str, Path)):
        files = expand(source)
        if len(files) > 1 or Path(source).is_dir():
            return "duckdb"
        return "duckdb" if os.path.getsize(files[0]) >= AUTO_DUCKDB_BYTES else "pandas"
    return "pandas"  # bytes and file objects (uploads)


def open_table(source: object, engine: str, *, name: str | None = None,
               sep: str | None = None, encoding: str = "utf-8") -> Table:
    """``source`` as a DuckDB or Spark :class:`~analysis.engines.base.Table`.

    A pandas DataFrame is accepted by both (DuckDB scans it in place; Spark copies it).
    """
    if engine == "duckdb":
        from analysis.engines.duckdb_engine import DuckDBTable

        if isinstance(source, pd.DataFrame):
            import duckdb

            return DuckDBTable(duckdb.connect().from_df(source),
                               name=name or "the DataFrame")
        return DuckDBTable(source, name=name, sep=sep, encoding=encoding)
    if engine == "spark":
        from analysis.engines.spark_engine import SparkTable, session

        if isinstance(source, pd.DataFrame):
            source = session().createDataFrame(source)
        return SparkTable(source, name=name, sep=sep, encoding=encoding)
    raise EngineError(f"open_table takes duckdb or spark, not {engine!r}.")


def _keys(design: Design | None, *groups: Sequence[str]) -> list[str]:
    names = list(design.names) if design is not None else []
    for g in groups:
        names += [str(k) for k in g]
    return list(dict.fromkeys(names))


def _complete(design: Design | None, agg: pd.DataFrame, table: Table, factors: Sequence[str],
              outcome: Outcome | None) -> Design:
    """``design`` plus factors built from the data for requested columns it lacks."""
    from analysis.engines.base import design_from_counts

    known = design.names if design is not None else []
    extra = design_from_counts(agg, [f for f in factors if f not in known], table.kinds, None)
    if design is None:
        return Design(factors=extra.factors, outcome=outcome)
    return Design(factors=design.factors + extra.factors, outcome=design.outcome,
                  name=design.name)


def fine_cells_from_table(table: Table, design: Design | None, *,
                          factors: Sequence[str] = (), where: Where | None = None,
                          extra_keys: Sequence[str] = (),
                          references: Mapping[str, str] | None = None
                          ) -> tuple[pd.DataFrame, Design]:
    """One aggregate over ``table``, checked against ``design`` and filtered by ``where``.

    ``references`` (factor -> value) replace the design's references, as ``--reference``.

    Returns
    -------
    (cells, design)
        The fine cell table over the design's factors, ``factors``, the ``where`` and
        ``extra_keys`` columns (see :func:`analysis.engines.base.fine_cell_table`), and
        the design actually used (completed with factors built from the data for
        requested columns it does not declare; without a design, the outcome is a 0/1
        ``deviation`` column when there is one).
    """
    from analysis.engines import base

    outcome = design.outcome if design is not None else (
        Outcome(DEVIATION, "binary") if DEVIATION in table.kinds else None)
    keys = _keys(design, factors, where or {}, extra_keys)
    present = [k for k in keys if k in table.kinds]
    outcome_error = None
    if outcome is not None:
        from analysis.engines import sql

        try:
            sql.outcome_columns(table.dialect, outcome, table.kinds)
        except DesignError as exc:
            outcome_error, outcome = str(exc), None
    if design is None or any(f not in design.names for f in factors):
        missing = [f for f in factors if f not in table.kinds]
        if missing:
            raise DesignError(f"There is no column {missing[0]!r} in the results table.")
    declared = {f.name: f.values for f in design.factors} if design is not None else {}
    agg = table.aggregate(present, outcome, declared=declared)
    full = _complete(design, agg, table, factors, outcome)
    for name, ref in (references or {}).items():
        full = full.with_reference(name, ref)
    check = full if outcome_error is None else full.with_outcome(None)
    # raises on an error; its warnings are dropped, as apply_design drops them on the
    # pandas path (nothing read them from the cells' attrs)
    base.check_aggregate(table, agg, check, outcome_error)
    agg = base.filter_aggregate(agg, where, table.kinds)
    return base.fine_cell_table(agg, full, present, table.name, table.engine), full


def fine_cells(source: object, design: Design | None = None, *, factors: Sequence[str] = (),
               where: Where | None = None, extra_keys: Sequence[str] = (),
               engine: str = "auto", name: str | None = None, sep: str | None = None,
               encoding: str = "utf-8") -> pd.DataFrame:
    """The fine cell table of ``source`` through DuckDB or Spark (see
    :func:`fine_cells_from_table`); ``engine`` ``auto`` picks DuckDB for a path."""
    chosen = resolve_engine(source, engine)
    if chosen == "pandas":
        chosen = "duckdb"
    table = open_table(source, chosen, name=name, sep=sep, encoding=encoding)
    try:
        return fine_cells_from_table(table, design, factors=factors, where=where,
                                     extra_keys=extra_keys)[0]
    finally:
        table.close()


def cell_table(source: object, factors: Sequence[str], *, design: Design | None = None,
               where: Where | None = None, with_outcome: bool = True, engine: str = "auto",
               name: str | None = None, sep: str | None = None, encoding: str = "utf-8"
               ) -> pd.DataFrame:
    """The cell table of ``source`` over ``factors``, whatever holds the rows.

    Parameters
    ----------
    source
        A pandas DataFrame (raw rows), a path / glob / folder of CSV, TSV, Parquet or
        JSON Lines files, a DuckDB relation or a Spark DataFrame.
    factors
        The factors defining the cells.
    design
        Factors, values, references and outcome; factors it does not declare (and every
        factor when it is None) get their observed values, ordered as
        :func:`analysis.design.make_factor` orders them. Without a design the outcome is
        a 0/1 ``deviation`` column when the source has one.
    where, with_outcome
        As in :func:`analysis.cells.cell_table`.
    engine
        ``pandas``, ``duckdb``, ``spark`` or ``auto`` (:func:`resolve_engine`).

    Returns
    -------
    pandas.DataFrame
        Identical, for every engine, to ``analysis.cells.cell_table(apply_design(rows,
        design), factors, where=where, with_outcome=with_outcome)``.

    Raises
    ------
    DesignMismatchError, AnalysisError, LoadError, EngineError
        With the pandas path's messages for the design and the filters.
    """
    from analysis.cell_counts import frame_cell_table

    chosen = resolve_engine(source, engine)
    if chosen == "pandas":
        from analysis.engines.pandas_engine import rows_with_design

        rows, _ = rows_with_design(source, design, factors, name=name, sep=sep,
                                   encoding=encoding)
        return frame_cell_table(rows, factors, where=where, with_outcome=with_outcome)
    table = open_table(source, chosen, name=name, sep=sep, encoding=encoding)
    try:
        fine, _ = fine_cells_from_table(table, design, factors=factors, where=where)
    finally:
        table.close()
    return frame_cell_table(fine, factors, with_outcome=with_outcome)
