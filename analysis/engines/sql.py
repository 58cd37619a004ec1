"""Design semantics as SQL expressions (DuckDB and Spark SQL dialects).

Every expression here reproduces, row by row, what the pandas path computes:

* :func:`value_text` is :func:`analysis.design.factor_values`' formatting of a value as a
  factor-value string (missing -> ``"(missing)"``, booleans -> ``"true"``/``"false"``,
  integral floats -> ``"7"``, NaN counts as missing);
* :func:`outcome_columns` is :func:`analysis.design.deviation` (1.0 / 0.0 / NULL where
  the outcome is missing) plus the counters the design check needs (rows whose value
  does not fit the mapping; rows at one of the deviating values).

Known, documented differences (``docs/engines.md``): Python's ``str.casefold`` and
Unicode whitespace in ``strip`` versus SQL ``lower`` and ASCII whitespace, and Spark's
Java formatting of very large or very small doubles used as factor values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from analysis.design import MISSING_VALUE, Outcome
from analysis.errors import DesignError

__all__ = [
    "DEV_SUM", "DUCKDB", "Dialect", "FALSE_TEXT", "Kind", "N_ALL", "N_BAD", "N_HIT", "N_KNOWN",
    "SPARK", "TRUE_TEXT", "aggregate_query", "bad_examples_query", "distinct_query", "kind_of",
    "missing", "outcome_columns", "value_text",
]


#: ``csvbool``: a CSV text column DuckDB would read as BOOLEAN; read as text, its
#: True/TRUE/true and False/FALSE/false become "true"/"false" as pandas' bool columns do.
Kind = Literal["bool", "csvbool", "int", "float", "decimal", "string", "other"]

#: Outcome text counted as 1 / 0 by the ``binary`` mapping (as in analysis.design).
TRUE_TEXT = ("1", "true", "yes", "1.0")
FALSE_TEXT = ("0", "false", "no", "0.0")

#: Names of the helper columns an aggregate query returns next to the keys.
N_ALL, N_KNOWN, DEV_SUM, N_BAD, N_HIT = "__n_all", "__n_known", "__dev_sum", "__n_bad", "__n_hit"


_EDGE_SPACE = r"^\s+|\s+$"


@dataclass(frozen=True)
class Dialect:
    """What differs between DuckDB and Spark SQL in the expressions used here."""

    name: Literal["duckdb", "spark"]

    def quote(self, column: str) -> str:
        """A quoted identifier."""
        if self.name == "spark":
            return "`" + column.replace("`", "``") + "`"
        return '"' + column.replace('"', '""') + '"'

    @property
    def text(self) -> str:
        """The string type name."""
        return "STRING" if self.name == "spark" else "VARCHAR"

    def strip(self, expr: str) -> str:
        """Leading and trailing whitespace removed (Python's ``str.strip`` on ASCII)."""
        flags = "" if self.name == "spark" else ", 'g'"
        pattern = self.literal(_EDGE_SPACE)
        return f"regexp_replace({expr}, {pattern}, ''{flags})"

    def literal(self, value: str) -> str:
        """A string literal (Spark escapes with backslashes, DuckDB doubles quotes)."""
        if self.name == "spark":
            return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + str(value).replace("'", "''") + "'"


DUCKDB = Dialect("duckdb")
SPARK = Dialect("spark")



def kind_of(type_name: str) -> Kind:
    """The kind of a DuckDB or Spark type name (``BIGINT``, ``double``, ``DECIMAL(5,2)``)."""
    t = type_name.strip().lower()
    if t in ("boolean", "bool"):
        return "bool"
    if t in ("tinyint", "smallint", "integer", "int", "bigint", "hugeint", "utinyint",
             "usmallint", "uinteger", "ubigint", "uhugeint", "long", "short", "byte"):
        return "int"
    if t in ("float", "double", "real"):
        return "float"
    if t.startswith("decimal"):
        return "decimal"
    if t in ("varchar", "string", "text") or t.startswith("varchar") or t.startswith("char"):
        return "string"
    return "other"


def missing(d: Dialect, column: str, kind: Kind) -> str:
    """True where pandas would see a missing value (NULL, or NaN in a float column)."""
    c = d.quote(column)
    return f"({c} IS NULL OR isnan({c}))" if kind == "float" else f"({c} IS NULL)"


def value_text(d: Dialect, column: str, kind: Kind) -> str:
    """The factor-value string of every row (as ``analysis.design.factor_values``)."""
    c, miss = d.quote(column), d.literal(MISSING_VALUE)
    if kind == "bool":
        return f"(CASE WHEN {c} IS NULL THEN {miss} WHEN {c} THEN 'true' ELSE 'false' END)"
    if kind == "float":
        return (f"(CASE WHEN {c} IS NULL OR isnan({c}) THEN {miss} "
                f"WHEN {c} = floor({c}) AND abs({c}) < 9.0e18 "
                f"THEN CAST(CAST({c} AS BIGINT) AS {d.text}) ELSE CAST({c} AS {d.text}) END)")
    if kind == "string":
        return f"coalesce({c}, {miss})"
    if kind == "csvbool":
        return (f"(CASE WHEN {c} IS NULL THEN {miss} WHEN {c} IN ('True', 'TRUE', 'true') "
                f"THEN 'true' WHEN {c} IN ('False', 'FALSE', 'false') THEN 'false' ELSE {c} END)")
    return f"coalesce(CAST({c} AS {d.text}), {miss})"


def outcome_columns(d: Dialect, outcome: Outcome, kinds: Mapping[str, Kind]
                    ) -> dict[str, str]:
    """Row expressions ``dev`` (1.0/0.0/NULL), ``bad`` (0/1) and ``hit`` (0/1).

    ``bad`` marks rows whose value does not fit the mapping (non-0/1 for ``binary``,
    non-numbers for a threshold); ``hit`` marks rows at a deviating value (``values``).

    Raises
    ------
    DesignError
        The outcome (or compared) column is absent, with the pandas path's message.
    """
    col = outcome.column
    if col not in kinds:
        raise DesignError(f"Outcome column {col!r} is not in the table.")
    kind, c = kinds[col], d.quote(col)
    miss = missing(d, col, kind)
    hit = "0"
    if outcome.mapping == "binary":
        if kind in ("bool", "int", "float", "decimal"):
            num = f"CAST({c} AS DOUBLE)"
            bad = f"(NOT {miss} AND {num} NOT IN (0.0, 1.0))"
            dev = f"(CASE WHEN {miss} THEN NULL ELSE {num} END)"
        else:
            text = f"lower({d.strip(f'CAST({c} AS {d.text})')})"
            trues = ", ".join(d.literal(v) for v in TRUE_TEXT)
            known = ", ".join(d.literal(v) for v in TRUE_TEXT + FALSE_TEXT)
            bad = f"(NOT {miss} AND {text} NOT IN ({known}))"
            dev = f"(CASE WHEN {miss} THEN NULL WHEN {text} IN ({trues}) THEN 1.0 ELSE 0.0 END)"
    elif outcome.mapping == "values":
        listed = ", ".join(d.literal(v) for v in outcome.values)
        hit = f"(CASE WHEN {value_text(d, col, kind)} IN ({listed}) THEN 1 ELSE 0 END)"
        bad = "FALSE"
        dev = f"(CASE WHEN {miss} THEN NULL ELSE CAST({hit} AS DOUBLE) END)"
    elif outcome.mapping == "equals":
        other = outcome.other_column
        if other not in kinds:
            raise DesignError(f"Comparison column {other!r} (for outcome {col!r}) is not in "
                              "the table.")
        a = f"lower({d.strip(value_text(d, col, kind))})"
        b = f"lower({d.strip(value_text(d, other, kinds[other]))})"
        either = f"({miss} OR {missing(d, other, kinds[other])})"
        bad = "FALSE"
        dev = f"(CASE WHEN {either} THEN NULL WHEN {a} = {b} THEN 1.0 ELSE 0.0 END)"
    else:
        if kind in ("bool", "int", "float", "decimal"):
            num = f"CAST({c} AS DOUBLE)"
        else:
            num = f"TRY_CAST({d.strip(f'CAST({c} AS {d.text})')} AS DOUBLE)"
        sign = "<" if outcome.mapping == "below" else ">"
        bad = f"(NOT {miss} AND ({num} IS NULL OR isnan({num})))"
        dev = (f"(CASE WHEN {miss} OR {num} IS NULL THEN NULL "
               f"WHEN {num} {sign} {float(outcome.threshold)!r} THEN 1.0 ELSE 0.0 END)")
    return {"dev": dev, "bad": f"(CASE WHEN {bad} THEN 1 ELSE 0 END)", "hit": hit}


def aggregate_query(d: Dialect, table: str, keys: list[str], kinds: Mapping[str, Kind],
                    outcome: Outcome | None, *, limit: int | None = None,
                    regroup: bool = True) -> str:
    """One GROUP BY over the rows: per combination of ``keys`` (factor-value strings),
    all rows, rows with a known outcome, the deviation sum, bad and hit rows.

    ``regroup=False``: one row per combination of the *raw* key values, with their
    factor-value strings (rows whose values format alike are not merged: the caller
    merges them by integer codes, :func:`analysis.engines.coded.coded_frame`).

    The rows are grouped by the *raw* key values (integers and booleans group faster
    than text, and each distinct value is formatted once); the small result is then
    regrouped by the factor-value strings, which merges the raw values that format alike
    (NULL and NaN both become ``"(missing)"``).
    """
    raw = [f"{d.quote(k)} AS __k{i}" for i, k in enumerate(keys)]
    if outcome is not None:
        expr = outcome_columns(d, outcome, kinds)
        raw += [f"{expr['dev']} AS __dev", f"{expr['bad']} AS __bad", f"{expr['hit']} AS __hit"]
    else:
        raw += ["CAST(NULL AS DOUBLE) AS __dev", "0 AS __bad", "0 AS __hit"]
    raw_keys = [f"__k{i}" for i in range(len(keys))]
    grouped = raw_keys + [
        "count(*) AS __n", "count(__dev) AS __known", "sum(__dev) AS __devs",
        "sum(__bad) AS __bads", "sum(__hit) AS __hits"]
    inner = (f"SELECT {', '.join(grouped)} FROM (SELECT {', '.join(raw)} FROM {table}) AS rows_"
             + (f" GROUP BY {', '.join(raw_keys)}" if keys else ""))
    texts = [value_text(d, f"__k{i}", kinds[k]) for i, k in enumerate(keys)]
    tail = f" LIMIT {int(limit)}" if limit else ""
    if not regroup:
        plain = [f"{t} AS {d.quote(k)}" for t, k in zip(texts, keys, strict=True)] + [
            f"CAST(__n AS BIGINT) AS {N_ALL}", f"CAST(__known AS BIGINT) AS {N_KNOWN}",
            f"CAST(coalesce(__devs, 0.0) AS DOUBLE) AS {DEV_SUM}",
            f"CAST(coalesce(__bads, 0) AS BIGINT) AS {N_BAD}",
            f"CAST(coalesce(__hits, 0) AS BIGINT) AS {N_HIT}"]
        return f"SELECT {', '.join(plain)} FROM ({inner}) AS groups_{tail}"
    outer = [f"{t} AS {d.quote(k)}" for t, k in zip(texts, keys, strict=True)] + [
        f"CAST(sum(__n) AS BIGINT) AS {N_ALL}", f"CAST(sum(__known) AS BIGINT) AS {N_KNOWN}",
        f"coalesce(sum(__devs), 0.0) AS {DEV_SUM}",
        f"CAST(coalesce(sum(__bads), 0) AS BIGINT) AS {N_BAD}",
        f"CAST(coalesce(sum(__hits), 0) AS BIGINT) AS {N_HIT}"]
    group = f" GROUP BY {', '.join(texts)}" if keys else ""
    return f"SELECT {', '.join(outer)} FROM ({inner}) AS groups_{group}{tail}"


def bad_examples_query(d: Dialect, table: str, outcome: Outcome, kinds: Mapping[str, Kind],
                       limit: int = 5) -> str:
    """A few distinct outcome values that do not fit the mapping (error messages only)."""
    expr = outcome_columns(d, outcome, kinds)
    text = value_text(d, outcome.column, kinds[outcome.column])
    return (f"SELECT DISTINCT {text} AS v FROM {table} WHERE {expr['bad']} = 1 "
            f"LIMIT {int(limit)}")


def distinct_query(d: Dialect, table: str, column: str, kind: Kind, limit: int) -> str:
    """Distinct factor-value strings of one column (error messages only)."""
    return (f"SELECT DISTINCT {value_text(d, column, kind)} AS v FROM {table} "
            f"LIMIT {int(limit)}")
