"""Text files (CSV, TSV, JSON Lines) read by DuckDB or Spark as the pandas loader reads them.

:func:`analysis.io.load_results` decodes a whole file before parsing it; the engines
stream files they never hold. What the loader decides from the bytes is decided here
from the first megabyte of the first file and 64 KiB of each further file of a glob
(decompressed for ``.gz``), with the loader's messages:

* binary data, an Excel workbook or image renamed ``.csv``, an HTML page, UTF-16 without
  a byte-order mark: refused (``analysis.io.check_text_bytes``);
* the encoding: a byte-order mark wins over the chosen one; bytes that the encoding
  cannot decode in that megabyte get the loader's "is not valid ... text" message;
* the delimiter is sniffed by :func:`analysis.io.sniff_header` (and the header checked:
  no blank or duplicate names, not a row of numbers), then given to the engine;
* decimal commas: text columns whose every value is a number written with a decimal
  comma (``0,5``) in a file not delimited by commas become numbers. The first megabyte
  names the candidates; one query over the candidates decides (:func:`decimal_commas`).

Encodings: DuckDB's CSV reader decodes UTF-8, UTF-16 (little-endian) and Latin-1 itself;
Spark's reader is given UTF-8 or Latin-1. Any other encoding (UTF-16 big-endian, UTF-32,
cp1252, ...) is refused with a message naming the two ways round it (``--engine pandas``
or a one-time conversion to UTF-8 or Parquet) rather than read wrongly: DuckDB reads a
big-endian UTF-16 file as an empty table without complaint.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from analysis.errors import LoadError

__all__ = [
    "DUCKDB_ENCODINGS", "HEAD_BYTES", "OTHER_HEAD_BYTES", "PANDAS_NA", "SPARK_ENCODINGS",
    "TextLayout", "decimal_comma_query", "decimal_commas", "decimal_number", "layout",
    "read_head",
]


#: Bytes read from the start of the first file to decide encoding, delimiter and candidates.
HEAD_BYTES = 1 << 20
#: Bytes read from each further file of a glob (a folder may hold thousands of parts).
OTHER_HEAD_BYTES = 1 << 16
#: Python codec name (``codecs.lookup(...).name``) -> DuckDB's ``read_csv`` encoding.
DUCKDB_ENCODINGS = {"utf-8": "utf-8", "ascii": "utf-8", "utf-16-le": "utf-16",
                    "utf-16": "utf-16", "iso8859-1": "latin-1"}
#: Python codec name -> the charset Spark's CSV reader is given.
SPARK_ENCODINGS = {"utf-8": "UTF-8", "ascii": "UTF-8", "iso8859-1": "ISO-8859-1"}
#: pandas' default missing-value markers (read_csv ``na_values``): CSV cells read as NULL.
PANDAS_NA = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
             "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]


@dataclass(frozen=True)
class TextLayout:
    """What the first megabyte of the files says.

    ``encoding`` is the Python codec name in effect (the byte-order mark's, else the
    chosen one); ``delimiter`` is None for JSON Lines; ``decimal_candidates`` are the
    columns whose values in that megabyte are all numbers with a decimal comma (or
    missing), to be checked over every row by :func:`decimal_commas`.
    """

    encoding: str
    delimiter: str | None
    header: tuple[str, ...]
    decimal_candidates: tuple[str, ...]
    quoted_line_breaks: bool = False

    def engine_encoding(self, engine: str, label: str, fmt: str = "csv") -> str:
        """The encoding name for DuckDB's or Spark's reader of ``fmt`` files.

        Raises
        ------
        LoadError
            The engine cannot decode this encoding (the message names the routes round it).
        """
        table = DUCKDB_ENCODINGS if engine == "duckdb" else SPARK_ENCODINGS
        if fmt == "jsonl":  # JSON readers take UTF-8 only
            table = {k: v for k, v in table.items() if v.lower() == "utf-8"}
        if self.encoding in table:
            return table[self.encoding]
        readable = ("UTF-8, UTF-16 (little-endian) or Latin-1" if engine == "duckdb"
                    else "UTF-8 or Latin-1")
        if fmt == "jsonl":
            readable = "JSON Lines in UTF-8 only"
        name = "DuckDB" if engine == "duckdb" else "Spark"
        iconv = re.sub(r"-(LE|BE)$", r"\1", self.encoding.upper())  # UTF-16BE, CP1252
        raise LoadError(
            f"{label} is {self.encoding} text, which {name} cannot read ({name} reads "
            f"{readable}). Read it with --engine pandas (in memory; on the Data page, upload "
            f"it), or convert it once to UTF-8 (iconv -f {iconv} -t UTF-8) or to "
            "Parquet.")


def read_head(path: str, size: int = HEAD_BYTES) -> tuple[bytes, bool]:
    """The first ``size`` bytes of ``path`` (decompressed when gzip), and whether that is
    the whole file. A gzip stream that cannot be read gives ``(b"", False)``: the engine
    reports it."""
    try:
        with open(path, "rb") as handle:
            gzipped = handle.read(2) == b"\x1f\x8b"
        opener = gzip.open if gzipped else open
        with opener(path, "rb") as handle:
            data = handle.read(size + 1)
    except (OSError, EOFError, zlib.error):
        return b"", False
    return data[:size], len(data) <= size


def _decode_head(head: bytes, whole: bool, label: str, encoding: str) -> tuple[str, str]:
    """``(text, codec)`` as :func:`analysis.io._decode` would decode the file's start."""
    from analysis.io import BOMS, check_text_bytes, decode_error, detect_bom

    bom = detect_bom(head)
    if bom is None:
        check_text_bytes(head, label, encoding)
        codec = encoding
    else:
        codec, head = bom, head[len(next(b for b, n in BOMS if n == bom)):]
    decoder = codecs.getincrementaldecoder(codec)()
    try:
        text = decoder.decode(head, final=whole)
    except UnicodeDecodeError as exc:
        raise decode_error(exc, head, label, codec) from None
    if not whole:  # the last line may be cut at the megabyte
        cut = max(text.rfind("\n"), text.rfind("\r"))
        text = text[: cut + 1] if cut > 0 else text
    return text, codecs.lookup(codec).name


def _whole_rows(text: str, whole: bool) -> str:
    """``text`` up to its last line end outside quotes (a cut head may end inside a
    quoted value that holds a line break)."""
    if whole:
        return text
    quotes = text.count('"')
    for i in range(len(text) - 1, -1, -1):
        ch = text[i]
        if ch == '"':
            quotes -= 1
        elif ch == "\n" and quotes % 2 == 0:
            return text[: i + 1]
    return ""


def _quoted_line_break(text: str) -> bool:
    """Whether a quoted value in ``text`` holds a line break."""
    inside = False
    for part in re.split(r'(["\n])', text):
        if part == '"':
            inside = not inside
        elif part == "\n" and inside:
            return True
    return False


def _check_json(text: str, whole: bool, label: str) -> None:
    """:func:`analysis.io.read_jsonl`'s checks on the complete lines of the head (an
    array file only when it is whole): DuckDB reads scalars and arrays as a column."""
    from analysis.io import read_jsonl

    if text.lstrip().startswith("[") and not whole:
        return
    if not whole:
        text = text[: text.rfind("\n") + 1]
    if text.strip():
        read_jsonl(text.encode("utf-8"), label, "utf-8")


def _candidates(text: str, delimiter: str, header: Sequence[str]) -> tuple[str, ...]:
    """Columns whose values in ``text`` are all decimal-comma numbers or missing."""
    from analysis.io import DECIMAL_COMMA

    number = re.compile(DECIMAL_COMMA)
    na = set(PANDAS_NA)
    ok = [True] * len(header)
    rows = csv.reader(io.StringIO(text), delimiter=delimiter)
    next(rows, None)
    for row in rows:
        for i, value in enumerate(row[: len(header)]):
            if ok[i] and value not in na and not number.fullmatch(value.strip()):
                ok[i] = False
        if not any(ok):
            break
    return tuple(c for c, keep in zip(header, ok, strict=True) if keep)


def layout(files: Sequence[str], fmt: str, sep: str | None, encoding: str, *,
           name: str | None = None) -> TextLayout:
    """The encoding, delimiter, header and decimal-comma candidates of text ``files``
    (every file is checked; the first one's delimiter and header are used).

    Raises
    ------
    LoadError
        With :func:`analysis.io.load_results`' message for an empty file, binary data,
        undecodable bytes, a bad header; or the files differ in encoding or delimiter.
    """
    from analysis.io import check_ragged, sniff_header

    first: tuple[str, TextLayout] | None = None
    breaks_anywhere = False
    for f in files:
        label = name if name and len(files) == 1 else Path(f).name
        head, whole = read_head(f, HEAD_BYTES if first is None else OTHER_HEAD_BYTES)
        if not head and not whole:
            continue  # unreadable gzip: the engine says so
        if not head.strip():
            raise LoadError(f"{label} is empty: there is no header and no rows.")
        text, codec = _decode_head(head, whole, label, encoding)
        delimiter, header, candidates = None, (), ()
        if fmt == "jsonl":
            _check_json(text, whole, label)
        else:
            if "\r" in text and "\n" not in text:  # classic Mac line ends
                text = text.replace("\r", "\n")
            delimiter, header = sniff_header(text, label, fmt, sep)
            if whole and sum(1 for line in text.splitlines() if line.strip()) < 2:
                raise LoadError(f"{label} has a header but no rows.")
            text = _whole_rows(text, whole)
            check_ragged(text, delimiter, len(header), label)  # DuckDB would pad or guess
            if first is None and delimiter != ",":
                candidates = _candidates(text, delimiter, header)
        breaks = delimiter is not None and _quoted_line_break(text)
        breaks_anywhere = breaks_anywhere or breaks
        found = TextLayout(codec, delimiter, tuple(header), candidates, breaks)
        if first is None:
            first = (f, found)
            continue
        other = first[1]
        if (found.encoding, found.delimiter) != (other.encoding, other.delimiter):
            raise LoadError(
                f"{Path(f).name} is {found.encoding} text delimited by {found.delimiter!r}, "
                f"{Path(first[0]).name} {other.encoding} delimited by {other.delimiter!r}: "
                "the files of one table must share encoding and delimiter.")
    if first is None:
        return TextLayout(codecs.lookup(encoding).name, sep, (), ())
    return replace(first[1], quoted_line_breaks=breaks_anywhere)


def decimal_comma_query(dialect, columns: Sequence[str]) -> str:  # noqa: ANN001 - sql.Dialect
    """One pass deciding which ``columns`` hold only decimal-comma numbers (with at least
    one comma), as :func:`analysis.io._decimal_commas` decides for pandas."""
    q = dialect.quote
    pattern = dialect.literal(r"^\s*[+-]?[0-9]+(,[0-9]+)?\s*$")
    parts = []
    for i, c in enumerate(columns):
        match = (f"regexp_full_match({q(c)}, {pattern})" if dialect.name == "duckdb"
                 else f"({q(c)} RLIKE {pattern})")
        parts += [f"bool_and({match}) AS a{i}", f"bool_or(instr({q(c)}, ',') > 0) AS o{i}"]
    return "SELECT " + ", ".join(parts) + " FROM {table}"


def decimal_commas(table, candidates: Sequence[str]) -> list[str]:  # noqa: ANN001 - a Table
    """The candidates (text columns of ``table``) that hold decimal-comma numbers only."""
    columns = [c for c in candidates if table.kinds.get(c) == "string"]
    if not columns:
        return []
    row = table.query(decimal_comma_query(table.dialect, columns)).iloc[0]

    def true(value: object) -> bool:  # NULL (no value at all in the column) is not true
        return value is not None and not pd.isna(value) and bool(value)

    return [c for i, c in enumerate(columns) if true(row[f"a{i}"]) and true(row[f"o{i}"])]


def decimal_number(dialect, column: str) -> str:  # noqa: ANN001 - sql.Dialect
    """``column`` (text such as `` 0,5``) as a DOUBLE."""
    return (f"CAST(replace({dialect.strip(dialect.quote(column))}, ',', '.') AS DOUBLE)")
