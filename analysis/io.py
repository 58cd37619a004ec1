"""Loading a results table from CSV, TSV, Parquet or JSON Lines.

Every problem becomes a :class:`~analysis.errors.LoadError` whose message names the
file and, where it can, the column, line or byte concerned. Large text files go
through pandas' pyarrow engine; if that engine refuses a file, the C engine reads it
again so the message can point at the offending line.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
import re
import stat
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Literal

import numpy as np
import pandas as pd

from analysis.bounded import check_column_names as _check_column_names
from analysis.bounded import read_parquet_bounded
from analysis.errors import LimitError, LoadError
from analysis.limits import (
    MAX_DECOMPRESSED,
    MAX_INPUT,
    MAX_RATIO,
    RATIO_CHECK_FROM,
    check_columns,
    check_decoded,
    check_rows,
    max_bytes,
)
from analysis.table_meta import LoadedTable, TableMeta

__all__ = [
    "BOMS", "DECIMAL_COMMA", "FORMATS", "Format", "PYARROW_THRESHOLD", "Source",
    "check_encoding", "check_lines", "check_ragged", "check_regular_file", "check_sep",
    "check_text_bytes", "decode_error", "detect_bom", "gunzip_limited", "load_results",
    "read_input_bytes", "read_jsonl", "sniff_header", "read_results",
]


Format = Literal["csv", "tsv", "parquet", "jsonl"]
FORMATS: tuple[str, ...] = ("csv", "tsv", "parquet", "jsonl")

_EXTENSIONS = {
    ".csv": "csv",
    ".txt": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
}
_DELIMITERS = (",", "\t", ";", "|")
_DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe"}
#: Above this size (bytes) text files are parsed with the pyarrow engine.
PYARROW_THRESHOLD = 5_000_000

Source = str | Path | bytes | bytearray | IO[bytes] | pd.DataFrame

#: Byte-order marks and the encoding each names (UTF-32 before UTF-16: FF FE 00 00
#: starts with the UTF-16 LE mark).
BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CHUNK = 1024 * 1024


def load_results(
    source: Source,
    *,
    name: str | None = None,
    format: Format | None = None,
    sep: str | None = None,
    encoding: str = "utf-8",
) -> pd.DataFrame:
    """Read a results table (one row per benchmark response): the table of
    :func:`read_results`, without its metadata."""
    return read_results(source, name=name, format=format, sep=sep, encoding=encoding).frame


def read_results(
    source: Source,
    *,
    name: str | None = None,
    format: Format | None = None,
    sep: str | None = None,
    encoding: str = "utf-8",
    columns: Sequence[str] | None = None,
) -> LoadedTable:
    """Read a results table (one row per benchmark response) and say what was decided.

    Parameters
    ----------
    source
        A path, the raw bytes of an upload, a binary file object, or a DataFrame
        (returned as a copy after the same column checks).
    name
        Display name used in messages and to guess the format from its extension
        (``.csv``, ``.tsv``, ``.parquet``, ``.jsonl``, optionally ``.gz``). Defaults to the
        path's file name.
    format
        Force a format instead of guessing it.
    sep
        Force a delimiter for text files; by default it is sniffed from the first lines.
    encoding
        Text encoding of CSV/TSV/JSON Lines files.
    columns
        Parquet only: decode just these columns (and the file's pandas index columns) when
        the file has all of them (:func:`analysis.bounded.read_parquet_bounded`); the
        other formats, or a file lacking one of them, are read whole.

    Returns
    -------
    LoadedTable
        ``frame``: the table as read. Columns are whatever the file holds; nothing is
        renamed. Nested JSON objects become dotted columns (``model.name``); lists (JSON
        arrays, Parquet list columns) become JSON text, so every column can be counted.
        ``meta``: a :class:`~analysis.table_meta.TableMeta` with ``source_name`` (``name``,
        else the file's name) and ``decimal_comma_columns``.

    Raises
    ------
    LoadError
        Empty file, header without rows, no header row, a delimiter that leaves one
        column, undecodable bytes, duplicate or blank column names, ragged rows,
        malformed JSON lines, an unreadable Parquet file, a path that is a folder, a
        FIFO or a device, a delimiter that is not one character, an unknown encoding.
    LimitError
        The input exceeds a limit of :mod:`analysis.limits` (size, decompressed size,
        compression ratio); the message names the variable that raises it.
    """
    sep = check_sep(sep)
    encoding = check_encoding(encoding)
    if isinstance(source, pd.DataFrame):
        label = name or "the DataFrame"
        if source.shape[1] == 0:
            raise LoadError(f"{label} has no columns.")
        if len(source) == 0:
            raise LoadError(f"{label} has columns but no rows.")
        _check_columns([str(c) for c in source.columns], label)
        frame = source.copy()
        frame.columns = [str(c) for c in frame.columns]
        return LoadedTable(frame, TableMeta(source_name=label))

    data, label = _read_bytes(source, name)
    if data[:2] == b"\x1f\x8b":
        data = gunzip_limited(data, label)
        label_for_ext = label[:-3] if label.lower().endswith(".gz") else label
    else:
        label_for_ext = label
    if not data[:65536].strip() and not data.strip():  # a slice first: no copy
        raise LoadError(f"{label} is empty: there is no header and no rows.")

    fmt = format or _guess_format(data, label_for_ext)
    decimal_commas: list[str] = []
    if fmt == "parquet":
        frame = _read_parquet(data, label, columns)
    elif fmt == "jsonl":
        frame = read_jsonl(data, label, encoding)
    elif fmt in ("csv", "tsv"):
        frame = _read_text(data, label, fmt, sep, encoding, decimal_commas)
    else:
        raise LoadError(f"{label}: unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
    check_rows(len(frame), label)
    if fmt != "parquet":  # the Parquet reader counts while it decodes
        check_decoded(int(frame.memory_usage(deep=True).sum()), label)
    if len(frame) == 0:
        raise LoadError(f"{label} has a header but no rows.")
    if fmt in ("parquet", "jsonl"):
        _nested_values_to_json(frame)
    return LoadedTable(frame, TableMeta(source_name=label,
                                        decimal_comma_columns=tuple(decimal_commas)))


def _nested_values_to_json(frame: pd.DataFrame) -> None:
    """Lists and mappings in cells (JSON arrays, Parquet list/struct columns) -> JSON text.

    Unhashable cell values would break every count (``nunique``, ``factorize``); as text
    they are ordinary values (usually "text or id" columns).
    """
    for col in frame.columns:
        s = frame[col]
        if s.dtype != object:
            continue
        nested = s.map(lambda v: isinstance(v, (list, dict, np.ndarray)))
        if nested.any():
            frame[col] = s.where(~nested, s[nested].map(
                lambda v: json.dumps(v.tolist() if isinstance(v, np.ndarray) else v,
                                     ensure_ascii=False, default=str)))


def check_sep(sep: str | None) -> str | None:
    """The separator as one character (``"tab"``, ``"\\t"``, ``"comma"`` ... named ones
    translated; None passes), else :class:`LoadError`."""
    if sep is None:
        return None
    if not isinstance(sep, str):
        raise LoadError(f"The delimiter must be one character, not a {type(sep).__name__}.")
    named = {"\\t": "\t", "tab": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}
    sep = named.get(sep.lower(), sep)
    if len(sep) != 1 or sep in ('"', "\n", "\r"):
        raise LoadError(f"The delimiter must be one character such as , ; | or a tab "
                        f"(written \\t or 'tab'), not {sep!r}.")
    return sep


def check_encoding(encoding: str) -> str:
    """``encoding`` if Python knows the codec, else a :class:`LoadError` naming examples
    (the message of ``--encoding`` in both command lines and of :func:`load_results`)."""
    if not isinstance(encoding, str) or not encoding.strip():
        raise LoadError(f"{encoding!r} is not a text encoding name.")
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise LoadError(f"{encoding!r} is not a known text encoding (for example utf-8, "
                        "latin-1, cp1252, utf-16).") from None
    return encoding


def _too_big(label: str, size: int | None = None) -> LimitError:
    limit = MAX_INPUT.value()
    what = f" ({size / 1024 / 1024:,.0f} MB)" if size is not None else ""
    return LimitError(f"{label} is larger{what} than the {limit:,.0f} MB allowed for a "
                      f"results file. {MAX_INPUT.how_to_raise()}")


def check_regular_file(path: Path) -> os.stat_result:
    """``os.stat`` of ``path`` if it is a regular file; :class:`LoadError` otherwise.

    Refuses folders, FIFOs (reading one blocks), devices such as ``/dev/zero``
    (endless) and sockets before anything is opened.
    """
    try:
        info = path.stat()  # follows symbolic links: a link to /dev/zero is refused too
    except FileNotFoundError:
        raise LoadError(f"{path}: no such file.") from None
    except OSError as exc:
        raise LoadError(f"{path} cannot be read: {exc.strerror or exc}.") from None
    if stat.S_ISDIR(info.st_mode):
        raise LoadError(f"{path} is a folder, not a results file.")
    if not stat.S_ISREG(info.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) else
                "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else
                "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
        raise LoadError(f"{path} is {kind}, not a regular file: save the data to a file "
                        "and read that.")
    return info


def _read_bytes(source: Source, name: str | None) -> tuple[bytes, str]:
    limit = max_bytes(MAX_INPUT)
    if isinstance(source, (bytes, bytearray)):
        label = name or "the uploaded file"
        if len(source) > limit:
            raise _too_big(label, len(source))
        return bytes(source), label
    if isinstance(source, (str, Path)):
        path = Path(source)
        info = check_regular_file(path)
        label = name or path.name
        if info.st_size > limit:
            raise _too_big(label, info.st_size)
        try:
            with path.open("rb") as handle:
                data = handle.read(limit + 1)
        except OSError as exc:
            raise LoadError(f"{path} cannot be read: {exc.strerror or exc}.") from None
        if len(data) > limit:  # grew while being read
            raise _too_big(label)
        return data, label
    if hasattr(source, "read"):
        # str(): a file object's ``name`` may be an int (a descriptor, e.g. TemporaryFile)
        label = str(name or getattr(source, "name", None) or "the uploaded file")
        data = source.read(limit + 1)
        if isinstance(data, str):
            data = data.encode("utf-8", errors="surrogatepass")
        if len(data) > limit:
            raise _too_big(label)
        return data, label
    raise LoadError(f"Cannot read a results table from a {type(source).__name__}.")


def read_input_bytes(path: str | Path, name: str | None = None) -> tuple[bytes, str]:
    """The bytes of an input file (an importer's log or samples file) within the limits
    every results file has: a regular file of at most ``BIAS_WORKBENCH_MAX_INPUT_MB``,
    gzip data decompressed by :func:`gunzip_limited` (size and ratio checked while it
    streams). Returns ``(data, label)``.

    Raises
    ------
    LimitError, LoadError
        As :func:`load_results` for the same file.
    """
    data, label = _read_bytes(Path(path), name)
    if data[:2] == b"\x1f\x8b":
        data = gunzip_limited(data, label)
    return data, label


def gunzip_limited(data: bytes, label: str) -> bytes:
    """Decompress gzip ``data`` while checking the size and ratio limits as it streams.

    A "gzip bomb" (a small file expanding to gigabytes) is refused as soon as its
    output passes :data:`~analysis.limits.MAX_DECOMPRESSED` or, beyond
    :data:`~analysis.limits.RATIO_CHECK_FROM` bytes, expands more than
    :data:`~analysis.limits.MAX_RATIO` times the compressed bytes read so far: memory
    stays bounded by the limit, not by the bomb. Concatenated gzip members are read
    one after another, as ``gzip.decompress`` does.

    Raises
    ------
    LimitError
        A limit is exceeded (the message names it and how to raise it).
    LoadError
        The data is truncated or corrupt.
    """
    max_out = max_bytes(MAX_DECOMPRESSED)
    max_ratio = MAX_RATIO.value()
    parts: list[bytes] = []
    produced = 0
    pos = 0  # compressed bytes handed to the decompressor so far
    while pos < len(data):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = b""
        try:
            while not d.eof:
                if not pending and pos < len(data):
                    pending = data[pos:pos + _CHUNK]
                    pos += len(pending)
                # with no input left, zlib may still hold output (a match cut by _CHUNK)
                chunk = d.decompress(pending, _CHUNK)
                pending = d.unconsumed_tail
                if not chunk and not pending and pos >= len(data) and not d.eof:
                    raise LoadError(f"{label}: looks gzip-compressed but cannot be "
                                    "decompressed: the data is truncated (it ends "
                                    "mid-stream).")
                produced += len(chunk)
                parts.append(chunk)
                consumed = max(pos - len(pending), 1)
                if produced > max_out:
                    raise LimitError(
                        f"{label} expands to more than the {MAX_DECOMPRESSED.value():,.0f} MB "
                        f"allowed for a decompressed file. {MAX_DECOMPRESSED.how_to_raise()}")
                if produced > RATIO_CHECK_FROM and produced / consumed > max_ratio:
                    raise LimitError(
                        f"{label} expands more than {max_ratio:,.0f} times (a compressed file "
                        f"this repetitive is likely a decompression bomb). "
                        f"{MAX_RATIO.how_to_raise()}")
        except zlib.error as exc:
            raise LoadError(f"{label}: looks gzip-compressed but cannot be decompressed "
                            f"({exc}).") from None
        # the bytes read past this member's end are in unused_data (unconsumed_tail may
        # repeat them at eof, depending on the Python version: do not count them twice)
        pos -= len(d.unused_data)
        if data[pos:].strip(b"\x00") == b"":  # trailing padding, as gzip allows
            break
        if data[pos:pos + 2] != b"\x1f\x8b":
            raise LoadError(f"{label}: unexpected bytes after the gzip data at byte {pos}.")
    return b"".join(parts)


def _guess_format(data: bytes, label: str) -> str:
    suffix = Path(label).suffix.lower()
    if suffix in _EXTENSIONS:
        fmt = _EXTENSIONS[suffix]
        if fmt != "parquet" and data[:4] == b"PAR1":
            return "parquet"
        return fmt
    if data[:4] == b"PAR1":
        return "parquet"
    if data[:4096].lstrip()[:1] == b"{":
        return "jsonl"
    return "csv"


def detect_bom(data: bytes) -> str | None:
    """The encoding named by ``data``'s byte-order mark (UTF-8, UTF-16/32 LE/BE), or None."""
    for bom, name in BOMS:
        if data.startswith(bom):
            return name
    return None


#: File signatures of formats that are sometimes uploaded instead of a text table.
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a ZIP archive (an Excel .xlsx workbook is one)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office file (Excel .xls)"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"BZh", "a bzip2-compressed file"),
    (b"\xfd7zXZ\x00", "an xz-compressed file"),
    (b"(\xb5/\xfd", "a zstd-compressed file"),
)
_WIDE = ("utf-16", "utf_16", "utf16", "utf-32", "utf_32", "utf32")


def check_text_bytes(data: bytes, label: str, encoding: str) -> None:
    """Refuse binary data with a message saying what it is, before any decoding.

    Known signatures (an Excel workbook, an image, a PDF, other compressions) are named;
    NUL bytes in every other position are UTF-16 without a byte-order mark (decoded as
    UTF-8 they would give column names full of NULs); other NUL bytes are binary data.
    """
    for magic, what in _SIGNATURES:
        if data.startswith(magic):
            raise LoadError(f"{label} is {what}, not a text table. Export the results as CSV, "
                            "TSV, Parquet or JSON Lines (gzip is read as it is).")
    head = data[:4096].lstrip().lower()  # a slice: never copy a large file to look at it
    if head.startswith((b"<!doctype html", b"<html>", b"<html ")):
        raise LoadError(f"{label} is an HTML web page, not a results table (a download that "
                        "saved an error or login page?). Download the data file itself.")
    if encoding.lower().replace("_", "-").startswith(_WIDE):
        return
    sample = data[:65536]
    nul = sample.find(b"\x00")
    if nul == -1:
        return
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    half = len(sample) // 2
    if half and max(even, odd) > 0.4 * half and min(even, odd) < 0.05 * half:
        order, codec = ("little", "utf-16-le") if odd > even else ("big", "utf-16-be")
        raise LoadError(f"{label} looks like UTF-16 text ({order}-endian) without a "
                        "byte-order mark: every other byte is zero. Choose the encoding "
                        f"{codec} (the Data page's Encoding choice, or --encoding {codec}).")
    line = sample[:nul].count(b"\n") + 1
    raise LoadError(f"{label} contains a NUL byte at position {nul} (line {line}): it looks "
                    "like binary data, not a text table. Export the results as CSV, TSV, "
                    "Parquet or JSON Lines.")


def _decode(data: bytes, label: str, encoding: str) -> str:
    bom_encoding = detect_bom(data)
    if bom_encoding is None:
        check_text_bytes(data, label, encoding)
    if bom_encoding is not None:  # the mark names the encoding: it wins over the default
        encoding = bom_encoding
        data = data[len(next(b for b, n in BOMS if n == bom_encoding)):]
        if encoding.startswith(("utf-16", "utf-32")) and b"\x00" not in data[:4096]:
            _check_wrong_mark(data, label, encoding)
    try:
        return data.decode("utf-8-sig" if encoding.lower() in ("utf-8", "utf8") else encoding)
    except LookupError:
        raise LoadError(f"{label}: {encoding!r} is not a known text encoding.") from None
    except UnicodeDecodeError as exc:
        raise decode_error(exc, data, label, encoding) from None


def _check_wrong_mark(body: bytes, label: str, encoding: str) -> None:
    """Refuse a UTF-16/32 byte-order mark before a body that is UTF-8: its delimiters and
    line ends would hold zero bytes in UTF-16, and decoding it so gives one line of
    garbage ("has a header but no rows")."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return
    raise LoadError(f"{label} starts with a {encoding.upper()} byte-order mark, but the text "
                    "after it is UTF-8 (no zero bytes): the mark is wrong. Save the file again "
                    "as UTF-8, or remove its first bytes.")


def decode_error(exc: UnicodeDecodeError, data: bytes, label: str, encoding: str) -> LoadError:
    """The message for bytes of ``data`` that ``encoding`` cannot decode (line and byte)."""
    line = data[: exc.start].count(b"\n") + 1
    bad = data[exc.start : exc.start + 4]
    return LoadError(
        f"{label} is not valid {encoding} text: byte {bad!r} at position {exc.start} "
        f"(line {line}) cannot be decoded. Save the file as UTF-8, or choose its encoding "
        "(for example latin-1 or cp1252): the Encoding choice under the upload, or "
        "--encoding on the command line."
    )


def _sniff_delimiter(lines: list[str]) -> str | None:
    """The delimiter found the same (non-zero) number of times on most sample lines."""
    best, best_score = None, 0.0
    for delim in _DELIMITERS:
        counts = [_count_outside_quotes(line, delim) for line in lines]
        if not counts or counts[0] == 0:
            continue
        agree = sum(c == counts[0] for c in counts) / len(counts)
        score = agree * (1 + min(counts[0], 50) / 100)
        if score > best_score:
            best, best_score = delim, score
    return best


def _count_outside_quotes(line: str, delim: str) -> int:
    try:
        return len(next(csv.reader([line], delimiter=delim))) - 1
    except (csv.Error, StopIteration):
        return line.count(delim)


def _read_text(data: bytes, label: str, fmt: str, sep: str | None, encoding: str,
               decimal_commas: list[str] | None = None) -> pd.DataFrame:
    """The text table; the columns read with a decimal comma are appended to
    ``decimal_commas``."""
    text = _decode(data, label, encoding)
    if "\r" in text and "\n" not in text:  # classic Mac line ends (Excel's "CSV (Macintosh)")
        text = text.replace("\r", "\n")
    delim, header = sniff_header(text, label, fmt, sep)
    check_lines(text, label)

    _check_longest_line(data, text, label, delim)
    engine = "pyarrow" if len(data) >= PYARROW_THRESHOLD else "c"
    if engine == "c":  # pyarrow refuses ragged rows itself; the C engine pads them
        check_ragged(text, delim, len(header), label)
    try:
        frame = pd.read_csv(io.StringIO(text), sep=delim, engine=engine)
    except Exception as exc:  # noqa: BLE001 - re-read below for a precise message
        if engine == "c":
            raise _parser_error(exc, label) from None
        check_ragged(text, delim, len(header), label)
        try:
            frame = pd.read_csv(io.StringIO(text), sep=delim, engine="c")
        except Exception as exc2:  # noqa: BLE001
            raise _parser_error(exc2, label) from None
    if delim != ",":
        converted = _decimal_commas(frame)
        if decimal_commas is not None:
            decimal_commas.extend(converted)
    return frame


def _first_lines(text: str, n: int) -> list[str]:
    """The first ``n`` lines of ``text`` without splitting all of it (``splitlines`` of a
    200 MB text is a second copy of it); lines after the first (the header, kept whole)
    are cut at 1 MB, enough to sniff a delimiter."""
    if text.count("\n", 0, 1 << 20) >= n:
        return text[:1 << 20].splitlines()[:n]
    out, begin = [], 0
    while len(out) < n and begin < len(text):
        end = text.find("\n", begin)
        end = len(text) if end < 0 else end
        out.extend(text[begin:end if not out else min(end, begin + (1 << 20))].splitlines()
                   or [""])
        begin = end + 1
    return out[:n]


def sniff_header(text: str, label: str, fmt: str, sep: str | None) -> tuple[str, list[str]]:
    """The delimiter (``sep``, else sniffed from the first 50 lines, else the format's)
    and the header row of decoded ``text``, checked (names, "looks like data", a
    delimiter that leaves one column). The DuckDB and Spark engines call it on a file's
    first megabyte, so they read text files with the same delimiter and messages."""
    lines = [ln for ln in _first_lines(text, 50) if ln.strip()]
    hint = re.fullmatch(r'"?sep=(.)"?\s*', lines[0]) if lines else None
    if hint:
        raise LoadError(f"{label}: line 1 is Excel's delimiter line 'sep={hint.group(1)}', "
                        "not the header: remove that line (or save from Excel as \"CSV UTF-8\", "
                        "which does not write it); the delimiter is sniffed from the rows.")
    default = "\t" if fmt == "tsv" else ","
    delim = sep or _sniff_delimiter(lines) or default
    try:
        header = next(csv.reader([lines[0]], delimiter=delim))
    except csv.Error as exc:  # "field larger than field limit (131072)"
        raise LoadError(f"{label}: line 1, the header, cannot be read: {exc}; a column name "
                        f"of {max(map(len, lines[0].split(delim))):,} characters is not a "
                        "name.") from None
    if len(header) == 1:
        others = [d for d in _DELIMITERS if d != delim and d in lines[0]]
        if others and len(lines) > 1:
            names = " or ".join(_DELIMITER_NAMES[d] for d in others)
            raise LoadError(
                f"{label}: reading it with a {_DELIMITER_NAMES.get(delim, repr(delim))} "
                f"delimiter gives a single column named {header[0][:60]!r}, but its header "
                f"contains {names} characters. Choose that delimiter."
            )
    _check_header_is_not_data(header, label)  # first: "1,0,1" is no header, not duplicates
    _check_columns(header, label)
    return delim, header


#: A number written with a decimal comma (``0,5``, ``-2``); the whole (stripped) value.
DECIMAL_COMMA = r"[+-]?\d+(?:,\d+)?"


def _decimal_commas(frame: pd.DataFrame) -> list[str]:
    """Text columns of numbers written with a decimal comma (``0,5``; Excel in most of
    Europe saves them with a semicolon or tab delimiter) -> numbers, in place. Returns
    their names (``TableMeta.decimal_comma_columns``) so the app and CLI can say so."""
    converted = []
    for col in frame.columns:
        s = frame[col]
        if pd.api.types.is_numeric_dtype(s) or not pd.api.types.is_string_dtype(s):
            continue
        values = s.dropna()
        if values.empty or not values.map(lambda v: isinstance(v, str)).all():
            continue
        values = values.str.strip()
        if values.str.contains(",", regex=False).any() and \
                values.str.fullmatch(DECIMAL_COMMA).all():
            frame[col] = pd.to_numeric(s.str.strip().str.replace(",", ".", regex=False))
            converted.append(str(col))
    return converted


def _check_longest_line(data: bytes, text: str, label: str, delim: str) -> None:
    """Refuse a value longer than the ``csv`` module's field limit (131,072 characters)
    before parsing: a 200 MB cell took 2.4 GB (parsers copy the text several times) before
    that limit stopped it. The longest line and its widest value are found on the bytes
    (numpy, in steps of 16 MB, no copy of the text)."""
    limit = csv.field_size_limit()
    if len(data) <= limit:
        return
    view = np.frombuffer(data, dtype=np.uint8)
    last, longest, number, count, first = -1, 0, 0, 0, 0  # the longest line: its length,
    for start in range(0, len(view), 16 * 2**20):  # number and first byte
        ends = start + np.flatnonzero(view[start:start + 16 * 2**20] == 10)
        starts = np.concatenate(([last], ends))
        gaps = np.diff(starts)
        if len(gaps) and int(gaps.max()) - 1 > longest:
            at = int(gaps.argmax())
            longest, number, first = int(gaps.max()) - 1, count + at, int(starts[at]) + 1
        count += len(ends)
        last = int(ends[-1]) if len(ends) else last
    if len(view) - last - 1 > longest:
        longest, number, first = len(view) - last - 1, count, last + 1
    if longest <= limit:
        return
    # the line's widest value: the longest run between delimiters (quotes aside: a quoted
    # delimiter only makes the run look shorter), from the bytes in steps, no copy
    widest, previous, sep = 0, first - 1, ord(delim) if len(delim) == 1 and ord(delim) < 128 \
        else 44
    for begin in range(first, first + longest, 16 * 2**20):
        stop = min(begin + 16 * 2**20, first + longest)
        cuts = begin + np.flatnonzero(view[begin:stop] == sep)
        gaps = np.diff(np.concatenate(([previous], cuts, [stop])))
        widest = max(widest, int(gaps.max()) - 1)
        previous = int(cuts[-1]) if len(cuts) else previous
    if widest > limit:
        raise LoadError(f"{label}: line {number + 1}: a value of {widest:,} bytes, more than "
                        f"the {limit:,} a table cell may have; a results cell this long is "
                        "not a value (long texts belong in a file of their own).")


def check_ragged(text: str, delim: str, n_columns: int, label: str) -> None:
    """Refuse rows with fewer or more fields than the header (pandas would pad a short row
    with missing values, or silently turn the first column of a long one into an index)."""
    try:
        reader = csv.reader(io.StringIO(text), delimiter=delim)
        next(reader, None)
        start = reader.line_num + 1
        for row in reader:
            if row and len(row) != n_columns and any("\n" in v for v in row) \
                    and text.count('"') % 2:
                raise LoadError(
                    f"{label}: line {start}: a quoted value starts there and is never closed "
                    f"(it runs to line {reader.line_num}, the end of the file). A closing "
                    'quote (") is missing.')
            if row and len(row) != n_columns:
                fewer = len(row) < n_columns
                raise LoadError(
                    f"{label}: line {reader.line_num}: a row has {'fewer' if fewer else 'more'} "
                    f"fields than the header ({len(row)} instead of {n_columns}). "
                    + (_fewer_hint(row, delim) if fewer
                       else "Check for an unquoted delimiter inside a text value."))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise LoadError(f"{label} could not be parsed as delimited text: {exc}") from None


def _fewer_hint(row: list[str], delim: str) -> str:
    """Why a row may have too few fields: another delimiter inside it, or a cut."""
    text = delim.join(row)
    others = [d for d in _DELIMITERS if d != delim and d in text]
    if others:
        return (f"Its fields seem to be separated by {_DELIMITER_NAMES[others[0]]}s, but the "
                f"header by {_DELIMITER_NAMES.get(delim, repr(delim))}s: save the file with "
                "one delimiter throughout.")
    return "A delimiter may be missing, or the row cut short."


def _parser_error(exc: Exception, label: str) -> LoadError:
    msg = str(exc).strip()
    if "EOF inside string" in msg:
        row = msg.rsplit("row", 1)[-1].strip()
        return LoadError(f"{label}: a quoted value that starts in data row {row} is never "
                         'closed: a closing quote (") is missing.')
    if "Expected" in msg and "fields" in msg:
        return LoadError(
            f"{label}: a row has more fields than the header ({msg}). "
            "Check for an unquoted delimiter inside a text value."
        )
    return LoadError(f"{label} could not be parsed as delimited text: {msg}")


def _check_columns(columns: list[str], label: str) -> None:
    check_columns(len(columns), label)
    _check_column_names(columns, label)


def _looks_numeric(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def _check_header_is_not_data(header: list[str], label: str) -> None:
    if header and all(_looks_numeric(h.strip()) for h in header):
        raise LoadError(
            f"{label}: the first row ({', '.join(header[:5])}{', ...' if len(header) > 5 else ''})"
            " looks like data, not column names. Add a header row naming each column."
        )


def check_lines(text: str, label: str) -> None:
    """Refuse decoded ``text`` with more lines than ``BIAS_WORKBENCH_MAX_ROWS`` allows rows
    (plus a header line), before parsing it."""
    lines = text.count("\n") + (not text.endswith("\n"))
    check_rows(lines - 1, label, found=f"{lines:,} lines")


def _read_parquet(data: bytes, label: str,
                  columns: Sequence[str] | None = None) -> pd.DataFrame:
    try:
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(io.BytesIO(data)).metadata
        expanded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types
        raise LoadError(f"{label} is not a readable Parquet file: {exc}") from None
    check_columns(meta.num_columns, label)
    if expanded > max_bytes(MAX_DECOMPRESSED):
        raise LimitError(f"{label} expands to {expanded / 1024 / 1024:,.0f} MB, more than the "
                         f"{MAX_DECOMPRESSED.value():,.0f} MB allowed for a decompressed file. "
                         f"{MAX_DECOMPRESSED.how_to_raise()}")
    frame = read_parquet_bounded(data, label, columns)
    _check_columns([str(c) for c in frame.columns], label)
    frame.columns = [str(c) for c in frame.columns]
    return frame


def read_jsonl(data: bytes, label: str, encoding: str) -> pd.DataFrame:
    """The records of JSON-lines ``data`` as a table (:class:`LoadError` on bad JSON)."""
    try:
        return _read_json_records(data, label, encoding)
    except RecursionError:
        raise LoadError(f"{label}: a JSON value is nested too deeply to read (thousands of "
                        "levels of arrays or objects); results need one flat object per "
                        "row.") from None


def _read_json_records(data: bytes, label: str, encoding: str) -> pd.DataFrame:
    text = _decode(data, label, encoding)
    check_lines(text, label)
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            records = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise LoadError(f"{label}: invalid JSON at line {exc.lineno}: {exc.msg}.") from None
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise LoadError(f"{label}: a JSON file must hold an array of objects with named "
                            "fields (or one object per line).")
    else:
        records = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LoadError(
                    f"{label}: line {number} is not valid JSON ({exc.msg}). "
                    "JSON Lines files need one complete JSON object per line."
                ) from None
            if not isinstance(record, dict):
                raise LoadError(f"{label}: line {number} is a JSON {type(record).__name__}, "
                                "not an object with named fields.")
            records.append(record)
    if not records:
        raise LoadError(f"{label} holds no JSON records.")
    check_columns(max(len(r) for r in records), label)  # before flattening them
    try:
        frame = pd.json_normalize(records)
    except UnicodeEncodeError:  # a "\\ud800" escape: a lone surrogate, not a character
        raise LoadError(_surrogate_message(text, label)) from None
    check_columns(frame.shape[1], label)
    return frame


_LONE_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
                             r"|(?<![0-9a-fA-F]{2})(?<!\\u[dD][89abAB])"
                             r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def _surrogate_message(text: str, label: str) -> str:
    match = _LONE_SURROGATE.search(text)
    where = f"line {text.count(chr(10), 0, match.start()) + 1}: " if match else ""
    escape = f" ({match.group(0)})" if match else ""
    return (f"{label}: {where}a JSON string holds an unpaired surrogate escape{escape}, half "
            "of a UTF-16 pair and not a character; the program that wrote the file cut a "
            "character in two. Fix or remove that value.")
