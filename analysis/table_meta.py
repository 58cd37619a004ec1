"""What a loader decided about a table, returned beside the table.

pandas calls ``DataFrame.attrs`` experimental: a copy, a filter or ``concat`` keeps, drops
or merges it by rules of its own, so metadata put there at load time may or may not reach
the command or page that reads it. The loaders therefore return it as a value:
:func:`analysis.io.read_results` (and the engines' readers) give a :class:`LoadedTable`,
the table and its :class:`TableMeta`; the command or page passes ``meta`` on explicitly.
See ``docs/architecture.md`` ("Metadata travels as values").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

__all__ = ["LoadedTable", "TableMeta"]


@dataclass(frozen=True)
class TableMeta:
    """A loaded table's provenance.

    Attributes
    ----------
    source_name
        The name the messages use (a file name, a glob, "the DataFrame").
    decimal_comma_columns
        Text columns read as numbers written with a decimal comma (``0,5`` = 0.5).
    dropped_columns
        Columns left out by the compact reader (free text, ids), in file order.
    engine
        ``"duckdb"`` or ``"spark"`` when the table is an engine's *fine cell table* (one row
        per cell with ``n``, ``deviations``, ``n_all``) rather than rows; else None.
    n_rows
        Rows the table stands for (an engine's cell table: the sum of ``n_all``).
    compact
        Rows read by :func:`analysis.engines.server_files.read_compact` (the app's "Large
        file on this machine": DuckDB, free text left out).
    """

    source_name: str | None = None
    decimal_comma_columns: tuple[str, ...] = ()
    dropped_columns: tuple[str, ...] = ()
    engine: str | None = None
    n_rows: int | None = None
    compact: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "decimal_comma_columns", tuple(self.decimal_comma_columns))
        object.__setattr__(self, "dropped_columns", tuple(self.dropped_columns))

    def but(self, **changes: Any) -> TableMeta:
        """A copy with ``changes`` (``dataclasses.replace``)."""
        return replace(self, **changes)

    @classmethod
    def of_sources(cls, name: str | None, parts: Sequence[TableMeta]) -> TableMeta:
        """The metadata of several files read as one table named ``name``: the decimal-comma
        and dropped columns of any part, in first-seen order."""
        def union(field: str) -> tuple[str, ...]:
            return tuple(dict.fromkeys(c for p in parts for c in getattr(p, field)))

        return cls(source_name=name, decimal_comma_columns=union("decimal_comma_columns"),
                   dropped_columns=union("dropped_columns"))


@dataclass(frozen=True)
class LoadedTable:
    """A table and its :class:`TableMeta` (unpacks as ``frame, meta = loaded``)."""

    frame: pd.DataFrame
    meta: TableMeta

    def __iter__(self) -> Iterator[Any]:
        return iter((self.frame, self.meta))
