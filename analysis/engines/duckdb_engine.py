"""DuckDB: CSV / TSV / Parquet / JSON Lines paths, globs and folders, aggregated from disk.

DuckDB is embedded (nothing to start) and streams files out of core: only the aggregate
comes back to pandas. A ``duckdb.DuckDBPyRelation`` is accepted as it is.
"""

from __future__ import annotations

import contextlib
import glob as globmod
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from analysis.engines import sql, text_files
from analysis.engines.base import Table
from analysis.errors import LoadError
from analysis.io import check_regular_file

__all__ = ["DuckDBTable", "MEMORY_LIMIT", "expand", "file_format", "is_relation"]


#: Memory DuckDB may use before spilling to a temporary folder (documented in docs/engines.md).
MEMORY_LIMIT = "2GB"

_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".txt": "csv",
            ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
            ".json": "jsonl"}
_lock = threading.Lock()


def is_relation(obj: object) -> bool:
    """Whether ``obj`` is a DuckDB relation (without importing duckdb needlessly)."""
    return type(obj).__module__.startswith("duckdb") and hasattr(obj, "query")


def file_format(path: str) -> str | None:
    """``parquet``, ``csv``, ``tsv`` or ``jsonl`` from a file name (``.gz`` allowed)."""
    name = path.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return _FORMATS.get(Path(name).suffix)


def expand(source: str | Path) -> list[str]:
    """The files a path, a glob or a folder stands for, sorted.

    Raises
    ------
    LoadError
        Nothing matches, or a folder holds no results file.
    """
    text = str(source)
    if any(ch in text for ch in "*?["):
        files = sorted(f for f in globmod.glob(text, recursive=True) if Path(f).is_file())
        if not files:
            raise LoadError(f"{text}: no file matches this pattern.")
        return files
    path = Path(text)
    if path.is_dir():
        files = sorted(str(f) for f in path.rglob("*") if f.is_file() and file_format(str(f)))
        if not files:
            raise LoadError(f"{path} is a folder without CSV, TSV, Parquet or JSON Lines files.")
        return files
    if not path.exists():
        raise LoadError(f"{path}: no such file.")
    check_regular_file(path)  # a FIFO would block the reading thread forever
    return [str(path)]


def _reader(files: list[str], fmt: str, sep: str | None, encoding: str,
            as_text: Sequence[str] = ()) -> str:
    listed = "[" + ", ".join(sql.DUCKDB.literal(f) for f in files) + "]"
    if fmt == "parquet":
        return f"read_parquet({listed})"
    if fmt == "jsonl":
        return f"read_json({listed}, format='auto')"
    nulls = "[" + ", ".join(sql.DUCKDB.literal(v) for v in text_files.PANDAS_NA) + "]"
    # pandas reads dates and yes/no as text: DuckDB may only infer numbers and booleans,
    # and the columns it would read as BOOLEAN are read as text (kind "csvbool").
    opts = [f"nullstr={nulls}", "header=true",
            "auto_type_candidates=['BOOLEAN', 'BIGINT', 'DOUBLE', 'VARCHAR']"]
    if as_text:
        typed = ", ".join(f"{sql.DUCKDB.literal(c)}: 'VARCHAR'" for c in as_text)
        opts.append(f"types={{{typed}}}")
    delim = sep or ("\t" if fmt == "tsv" else None)
    if delim:
        opts.append(f"delim={sql.DUCKDB.literal(delim)}")
    if encoding.lower().replace("-", "") not in ("utf8",):
        opts.append(f"encoding={sql.DUCKDB.literal(encoding)}")
    return f"read_csv({listed}, {', '.join(opts)})"


class DuckDBTable(Table):
    """A file, glob, folder or relation seen through DuckDB."""

    engine = "duckdb"
    dialect = sql.DUCKDB

    def __init__(self, source, *, name: str | None = None, sep: str | None = None,
                 encoding: str = "utf-8", memory_limit: str = MEMORY_LIMIT,
                 threads: int | None = None, dense_grid: int | None = None):
        import duckdb

        #: Combinations counted in a dense grid; past it DuckDB groups their integer
        #: codes (None: ``coded.DENSE_GRID``; a test lowers it to take that path).
        self.dense_grid = dense_grid
        bools: list[str] = []
        text: text_files.TextLayout | None = None
        #: The Parquet files read (None: another format or a relation passed in).
        self.parquet_files: list[str] | None = None
        if is_relation(source):
            self.relation = source
            label = name or "the DuckDB relation"
        else:  # a list: files already resolved (and checked) by the caller
            files = [str(f) for f in source] if isinstance(source, list | tuple) \
                else expand(source)
            if isinstance(source, list | tuple):  # messages name the source, not a list
                source = name or ", ".join(Path(f).name for f in files[:3])
            formats = {file_format(f) for f in files}
            if None in formats or len(formats) > 1:
                raise LoadError(f"{source}: the files must all be CSV, TSV, Parquet or JSON "
                                "Lines, one format at a time (found "
                                f"{', '.join(sorted(Path(f).name for f in files[:5]))}).")
            fmt = formats.pop()
            label = name or (Path(files[0]).name if len(files) == 1 else str(source))
            if fmt != "parquet":  # the pandas loader's decisions (analysis.engines.text_files)
                text = text_files.layout(files, fmt, sep, encoding, name=name)
                sep, encoding = text.delimiter, text.engine_encoding("duckdb", label, fmt)
            con = duckdb.connect(config={"memory_limit": memory_limit,
                                         **({"threads": threads} if threads else {})})
            con.execute("SET enable_progress_bar = false")
            self._check_same_columns(con, files, fmt, sep, encoding, str(source))
            try:
                reader = _reader(files, fmt, sep, encoding)
                self.relation = con.sql(f"SELECT * FROM {reader}")
                if fmt in ("csv", "tsv"):
                    bools = [c for c, t in zip(self.relation.columns, self.relation.types,
                                               strict=True) if str(t) == "BOOLEAN"]
                if bools:
                    reader = _reader(files, fmt, sep, encoding, bools)
                    self.relation = con.sql(f"SELECT * FROM {reader}")
            except duckdb.Error as exc:
                raise LoadError(f"{source}: DuckDB cannot read it: "
                                f"{_csv_error(exc, files) or _first_line(exc)}") from None
            self.connection = con
            self.parquet_files = files if fmt == "parquet" else None
        kinds = {c: sql.kind_of(str(t)) for c, t in
                 zip(self.relation.columns, self.relation.types, strict=True)}
        kinds.update({c: "csvbool" for c in bools})
        super().__init__(label, kinds)
        if text is not None and text.decimal_candidates:
            self._read_decimal_commas(text.decimal_candidates, reader)

    def _read_decimal_commas(self, candidates: Sequence[str], reader: str) -> None:
        """Text columns holding only numbers with a decimal comma become DOUBLE columns, as
        :func:`analysis.io.load_results` reads them (one query over the candidates)."""
        found = text_files.decimal_commas(self, candidates)
        if not found:
            return
        replace = ", ".join(f"{text_files.decimal_number(self.dialect, c)} AS "
                            f"{self.dialect.quote(c)}" for c in found)
        self.relation = self.connection.sql(f"SELECT * REPLACE ({replace}) FROM {reader}")
        self.kinds.update({c: "float" for c in found})
        self.decimal_comma_columns = found

    @staticmethod
    def _check_same_columns(con, files: list[str], fmt: str, sep: str | None,
                            encoding: str, label: str) -> None:
        """Files of one glob must have the same columns (names, order irrelevant)."""
        import duckdb

        if len(files) < 2:
            return
        first = None
        for f in files:
            try:
                cols = con.sql(f"SELECT * FROM {_reader([f], fmt, sep, encoding)} LIMIT 0"
                               ).columns
            except duckdb.Error as exc:
                raise LoadError(f"{f}: DuckDB cannot read it: {_first_line(exc)}") from None
            if first is None:
                first = (f, cols)
            elif sorted(cols) != sorted(first[1]):
                extra = sorted(set(cols) - set(first[1]))
                lacking = sorted(set(first[1]) - set(cols))
                raise LoadError(
                    f"{label}: the files have different columns: {Path(f).name} "
                    + (f"has {', '.join(extra)} " if extra else "")
                    + ("and " if extra and lacking else "")
                    + (f"lacks {', '.join(lacking)} " if lacking else "")
                    + f"compared with {Path(first[0]).name}. Point at files of one table.")

    def query(self, text: str) -> pd.DataFrame:
        import duckdb

        with _lock:  # one relation, possibly several app threads
            try:
                return self.relation.query("results_", text.replace("{table}", "results_")).df()
            except duckdb.Error as exc:
                raise LoadError(f"{self.name}: DuckDB failed: {_first_line(exc)}") from None

    def _coded_aggregate(self, keys: Sequence[str], outcome, *,
                         declared: Mapping[str, Sequence[str]] | None = None
                         ) -> pd.DataFrame | None:
        """One row per raw group as Arrow, regrouped by integer codes (no Python string
        per cell: issue 44.5). More raw groups than ``MAX_GROUPS`` are refused as the
        string path refuses more combinations."""
        import duckdb

        from analysis.engines.base import MAX_GROUPS
        from analysis.engines.coded import TooManyGroups, coded_frame, streamed_frame

        con = getattr(self, "connection", None)
        if con is not None:
            too_many = False
            with _lock:
                try:
                    frame = streamed_frame(con, self.relation, "results_", self.dialect,
                                           list(keys), self.kinds, outcome,
                                           dictionary=self._dictionary_columns(keys),
                                           declared=declared, dense_grid=self.dense_grid,
                                           max_groups=MAX_GROUPS)
                except duckdb.Error as exc:
                    raise LoadError(f"{self.name}: DuckDB failed: {_first_line(exc)}"
                                    ) from None
                except TooManyGroups:  # past the dense grid: refused as the GROUP BY
                    frame, too_many = None, True  # of the raw values refuses them
            if too_many:
                self._refuse_groups(keys)  # (outside the lock: it queries)
            if frame is not None:
                return frame
        text = sql.aggregate_query(self.dialect, "results_", list(keys), self.kinds, outcome,
                                   limit=MAX_GROUPS + 1, regroup=False)
        with _lock:
            try:
                result = self.relation.query("results_", text).arrow()
            except duckdb.Error as exc:
                raise LoadError(f"{self.name}: DuckDB failed: {_first_line(exc)}") from None
        if hasattr(result, "read_all"):  # a RecordBatchReader (newer DuckDB)
            result = result.read_all()
        if result.num_rows > MAX_GROUPS:
            self._refuse_groups(keys)
        return coded_frame(result, list(keys))

    def _dictionary_columns(self, keys: Sequence[str]) -> set[str]:
        """The text keys that every Parquet file stores dictionary-encoded in every data
        page (:func:`analysis.engines.coded.dictionary_columns`); empty for other sources."""
        from analysis.engines.coded import dictionary_columns

        text = [k for k in keys if self.kinds.get(k) == "string"]
        if not self.parquet_files or not text:
            return set()
        return dictionary_columns(self.connection, self.parquet_files, text)

    def collect(self, columns: Sequence[str]) -> pd.DataFrame:
        cols = ", ".join(self.dialect.quote(c) for c in columns)
        return self.query(f"SELECT {cols} FROM {{table}}")

    def close(self) -> None:
        con = getattr(self, "connection", None)
        if con is not None:
            con.close()


_CSV_LINE = re.compile(r"CSV Error on Line: \d+\s*\nOriginal Line: (?P<line>[^\n]*)\n"
                       r"(?P<reason>[^\n]*)")


def _csv_error(exc: Exception, files: Sequence[str]) -> str | None:
    """DuckDB's CSV error with the file's real line number: "CSV Error on Line: 1" counts
    from where its reader started (issue 43: a cell on line 3 was "Line: 1"). The line is
    found by its first bytes (``Original Line``), reading the file in 16 MB steps; None
    when the message is not such an error or the line is not found."""
    match = _CSV_LINE.search(str(exc))
    if match is None:
        return None
    needle = b"\n" + match["line"][:200].encode("utf-8", errors="replace")
    step = 16 * 2**20
    for name in files:
        with contextlib.suppress(OSError), open(name, "rb") as handle:
            base, data, found = -1, b"\n", None  # a newline before the first byte
            while found is None and (chunk := handle.read(step)):
                data += chunk
                at = data.find(needle)
                if at >= 0:
                    found = base + at + 1  # the offset of the line's first byte
                else:
                    keep = min(len(data), len(needle))
                    base += len(data) - keep
                    data = data[len(data) - keep:]
            if found is None:
                continue
            handle.seek(0)
            newlines, read = 0, 0
            while read < found:
                chunk = handle.read(min(step, found - read))
                if not chunk:
                    break
                newlines += chunk.count(b"\n")
                read += len(chunk)
            return f"line {newlines + 1}: {match['reason'].strip()}"
    return None


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
