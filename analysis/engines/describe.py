"""``describe`` through an engine: column summary, suggested design and nestings in SQL.

Three passes over the rows, none of which brings rows back: per-column statistics
(missing values, approximate distinct counts, mean text length, whether a numeric column
is 0/1), exact value counts of the columns with few values (the factor candidates, one
GROUPING SETS query), and the aggregate over the suggested factors, on which
:func:`analysis.nesting.find_nestings` gives the same answer as on the rows.

The structure (:mod:`analysis.structure`: item id, template, which columns are factors)
is inferred on the first :data:`ENGINE_SAMPLE_ROWS` rows, the one query
that brings rows back; the factors' values still come from the exact counts.

The suggested design and the nestings equal the pandas path's (on files of at most
that many rows); in the column table,
``dtype`` is the engine's type, ``examples`` may be other values, and ``n_unique`` of a
column with more than :data:`EXACT_UP_TO` distinct values is DuckDB's / Spark's
HyperLogLog estimate (a few percent off).
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from analysis.design import (
    SUGGEST_MAX_VALUES,
    Design,
    design_from_structure,
    suggest_outcome,
)
from analysis.engines import sql
from analysis.engines.base import Table, factor_from_counts
from analysis.nesting import find_nestings, nesting_columns
from analysis.structure import infer_structure
from analysis.values import format_value

__all__ = ["ENGINE_SAMPLE_ROWS", "EXACT_UP_TO", "describe_table"]


#: The structure (:mod:`analysis.structure`) is read on at most this many first rows.
ENGINE_SAMPLE_ROWS = 500_000
#: Distinct counts up to this are exact (value counts); above, an estimate.
EXACT_UP_TO = int(SUGGEST_MAX_VALUES * 1.1)


def _stats(table: Table) -> tuple[int, dict[str, dict]]:
    d, q = table.dialect, table.dialect.quote
    parts = ["count(*) AS n_rows"]
    for i, (c, kind) in enumerate(table.kinds.items()):
        miss = sql.missing(d, c, kind)
        parts.append(f"sum(CASE WHEN {miss} THEN 1 ELSE 0 END) AS m{i}")
        parts.append(f"approx_count_distinct(CASE WHEN {miss} THEN NULL ELSE "
                     f"{sql.value_text(d, c, kind)} END) AS u{i}")
        if kind in ("string", "csvbool"):
            parts.append(f"avg(length({q(c)})) AS l{i}")
        if kind in ("int", "float", "decimal", "bool"):
            num = f"CAST({q(c)} AS DOUBLE)"
            parts.append(f"sum(CASE WHEN NOT {miss} AND {num} NOT IN (0.0, 1.0) THEN 1 ELSE 0 "
                         f"END) AS b{i}")
    row = table.query("SELECT " + ", ".join(parts) + " FROM {table}").iloc[0]
    out = {}
    for i, (c, kind) in enumerate(table.kinds.items()):
        out[c] = {"kind": kind, "n_missing": int(row[f"m{i}"]), "n_unique": int(row[f"u{i}"]),
                  "mean_length": float(row[f"l{i}"]) if f"l{i}" in row and pd.notna(
                      row[f"l{i}"]) else 0.0,
                  "binary": bool(f"b{i}" in row and int(row[f"b{i}"]) == 0
                                 and int(row[f"m{i}"]) < int(row["n_rows"]))}
    return int(row["n_rows"]), out


def _value_counts(table: Table, columns: list[str]) -> dict[str, pd.Series]:
    """Exact rows per factor-value string (missing included) of each column, one pass."""
    if not columns:
        return {}
    d = table.dialect
    keys = [f"{sql.value_text(d, c, table.kinds[c])} AS k{i}" for i, c in enumerate(columns)]
    sets = ", ".join(f"(k{i})" for i in range(len(columns)))
    text = (f"SELECT {', '.join(f'k{i}' for i in range(len(columns)))}, "
            f"{', '.join(f'grouping(k{i}) AS g{i}' for i in range(len(columns)))}, "
            f"count(*) AS n FROM (SELECT {', '.join(keys)} FROM {{table}}) AS t "
            f"GROUP BY GROUPING SETS ({sets})")
    agg = table.query(text)
    out = {}
    for i, c in enumerate(columns):
        part = agg[agg[f"g{i}"] == 0]
        out[c] = pd.Series(part["n"].to_numpy(dtype="int64"),
                           index=part[f"k{i}"].astype(str).to_numpy())
    return out


def _role(info: dict, n_unique: int, n_rows: int) -> str:
    """:func:`analysis.design.suggest_role` from the statistics."""
    kind = info["kind"]
    if info["binary"] and kind in ("int", "float", "decimal", "bool"):
        return "outcome"
    if kind == "float" and n_unique > 10:
        return "numeric"
    if kind in ("int", "float", "decimal") and n_unique > SUGGEST_MAX_VALUES:
        return "numeric"
    if 2 <= n_unique <= SUGGEST_MAX_VALUES and n_unique < max(n_rows, 2):
        if kind in ("string", "csvbool") and info["mean_length"] > 60:
            return "text or id"
        return "factor"
    if n_unique <= 1:
        return "constant"
    return "text or id"


def describe_table(table: Table) -> tuple[int, pd.DataFrame, Design, pd.DataFrame]:
    """``(n_rows, columns, suggested design, nestings)`` as the ``describe`` subcommand
    shows them (see the module docstring for what is approximate)."""
    n_rows, stats = _stats(table)
    small = [c for c, s in stats.items() if s["n_unique"] <= EXACT_UP_TO]
    counts = _value_counts(table, small)
    head = table.query("SELECT * FROM {table} LIMIT 1000")  # examples in file order
    rows, factors = [], []
    for c, s in stats.items():
        exact = counts.get(c)
        n_unique = s["n_unique"]
        if exact is not None:
            n_unique = len([v for v in exact.index if v != "(missing)" or s["n_missing"] == 0])
        shown = [format_value(v) for v in head[c].dropna().unique()[:3]]
        if exact is not None:  # values first seen after the first 1000 rows
            shown += [v for v in exact.index if v not in shown and v != "(missing)"]
        examples = ", ".join(shown[:3])[:80]
        role = _role(s, n_unique, n_rows)
        rows.append({"column": c, "dtype": s["kind"], "n_unique": n_unique,
                     "n_missing": s["n_missing"], "examples": examples,
                     "suggested_role": role})
        # suggest_design counts a missing value as a value (nunique(dropna=False))
        if exact is not None and len(exact) <= SUGGEST_MAX_VALUES and _role(
                s, len(exact), n_rows) == "factor":
            factors.append(factor_from_counts(c, exact))
    # the structure (roles, item id, template) is read on the first rows (one query)
    sample = table.query(f"SELECT * FROM {{table}} LIMIT {ENGINE_SAMPLE_ROWS}")
    outcome = suggest_outcome(sample)
    structure = infer_structure(sample, outcome=outcome.column if outcome else None)
    if n_rows > len(sample):
        structure = replace(structure, notes=(*structure.notes, (
            f"Structure inferred on the first {len(sample):,} of the {n_rows:,} rows.")))
    design = design_from_structure(sample, structure, outcome, factors=factors)
    nestings = pd.DataFrame()
    if factors:
        keys = nesting_columns(design)
        agg = table.aggregate(keys, None)
        from analysis.engines.base import fine_cell_table

        cells = fine_cell_table(agg, design, keys, table.name, table.engine)
        nestings = find_nestings(cells, keys,
                                 references={f.name: f.reference for f in design.factors})
    return n_rows, pd.DataFrame(rows), design, nestings
