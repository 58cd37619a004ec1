"""Loading a results table from CSV, TSV, Parquet or JSON Lines.

Every problem becomes a :class:`~analysis.errors.LoadError` whose message names the
file and, where it can, the column, line or byte concerned. Large text files go
through pandas' pyarrow engine; if that engine refuses a file, the C engine reads it
again so the message can point at the offending line.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO, Literal

import numpy as np
import pandas as pd

from analysis.errors import LoadError

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


def load_results(
    source: Source,
    *,
    name: str | None = None,
    format: Format | None = None,
    sep: str | None = None,
    encoding: str = "utf-8",
) -> pd.DataFrame:
    """Read a results table (one row per benchmark response).

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

    Returns
    -------
    pandas.DataFrame
        The table as read, with ``attrs["source_name"]`` set to ``name``. Columns are
        whatever the file holds; nothing is renamed. Nested JSON objects become dotted
        columns (``model.name``); lists (JSON arrays, Parquet list columns) become JSON
        text, so every column can be counted.

    Raises
    ------
    LoadError
        Empty file, header without rows, no header row, a delimiter that leaves one
        column, undecodable bytes, duplicate or blank column names, ragged rows,
        malformed JSON lines, an unreadable Parquet file.
    """
    if isinstance(source, pd.DataFrame):
        label = name or "the DataFrame"
        _check_columns([str(c) for c in source.columns], label)
        frame = source.copy()
        frame.columns = [str(c) for c in frame.columns]
        frame.attrs["source_name"] = label
        return frame

    data, label = _read_bytes(source, name)
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:  # truncated or corrupt
            raise LoadError(
                f"{label}: looks gzip-compressed but cannot be decompressed ({exc})."
            ) from None
        label_for_ext = label[:-3] if label.lower().endswith(".gz") else label
    else:
        label_for_ext = label
    if not data.strip():
        raise LoadError(f"{label} is empty: there is no header and no rows.")

    fmt = format or _guess_format(data, label_for_ext)
    if fmt == "parquet":
        frame = _read_parquet(data, label)
    elif fmt == "jsonl":
        frame = _read_jsonl(data, label, encoding)
    elif fmt in ("csv", "tsv"):
        frame = _read_text(data, label, fmt, sep, encoding)
    else:
        raise LoadError(f"{label}: unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
    if len(frame) == 0:
        raise LoadError(f"{label} has a header but no rows.")
    if fmt in ("parquet", "jsonl"):
        _nested_values_to_json(frame)
    frame.attrs["source_name"] = label
    return frame


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


def _read_bytes(source: Source, name: str | None) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray)):
        return bytes(source), name or "the uploaded file"
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise LoadError(f"{path}: no such file.")
        if path.is_dir():
            raise LoadError(f"{path} is a folder, not a results file.")
        return path.read_bytes(), name or path.name
    if hasattr(source, "read"):
        data = source.read()
        if isinstance(data, str):
            data = data.encode("utf-8")
        # str(): a file object's ``name`` may be an int (a descriptor, e.g. TemporaryFile)
        return data, str(name or getattr(source, "name", None) or "the uploaded file")
    raise LoadError(f"Cannot read a results table from a {type(source).__name__}.")


def _guess_format(data: bytes, label: str) -> str:
    suffix = Path(label).suffix.lower()
    if suffix in _EXTENSIONS:
        fmt = _EXTENSIONS[suffix]
        if fmt != "parquet" and data[:4] == b"PAR1":
            return "parquet"
        return fmt
    if data[:4] == b"PAR1":
        return "parquet"
    if data.lstrip()[:1] == b"{":
        return "jsonl"
    return "csv"


def _decode(data: bytes, label: str, encoding: str) -> str:
    try:
        return data.decode("utf-8-sig" if encoding.lower() in ("utf-8", "utf8") else encoding)
    except LookupError:
        raise LoadError(f"{label}: {encoding!r} is not a known text encoding.") from None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        bad = data[exc.start : exc.start + 4]
        raise LoadError(
            f"{label} is not valid {encoding} text: byte {bad!r} at position {exc.start} "
            f"(line {line}) cannot be decoded. Save the file as UTF-8, or choose its encoding "
            "(for example latin-1 or cp1252)."
        ) from None


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


def _read_text(data: bytes, label: str, fmt: str, sep: str | None, encoding: str) -> pd.DataFrame:
    text = _decode(data, label, encoding)
    lines = [ln for ln in text.splitlines()[:50] if ln.strip()]
    default = "\t" if fmt == "tsv" else ","
    delim = sep or _sniff_delimiter(lines) or default
    header = next(csv.reader([lines[0]], delimiter=delim))
    if len(header) == 1:
        others = [d for d in _DELIMITERS if d != delim and d in lines[0]]
        if others and len(lines) > 1:
            names = " or ".join(_DELIMITER_NAMES[d] for d in others)
            raise LoadError(
                f"{label}: reading it with a {_DELIMITER_NAMES.get(delim, repr(delim))} "
                f"delimiter gives a single column named {header[0][:60]!r}, but its header "
                f"contains {names} characters. Choose that delimiter."
            )
    _check_columns(header, label)
    _check_header_is_not_data(header, label)

    engine = "pyarrow" if len(data) >= PYARROW_THRESHOLD else "c"
    try:
        frame = pd.read_csv(io.StringIO(text), sep=delim, engine=engine)
    except Exception as exc:  # noqa: BLE001 - re-read below for a precise message
        if engine == "c":
            raise _parser_error(exc, label) from None
        try:
            frame = pd.read_csv(io.StringIO(text), sep=delim, engine="c")
        except Exception as exc2:  # noqa: BLE001
            raise _parser_error(exc2, label) from None
    return frame


def _parser_error(exc: Exception, label: str) -> LoadError:
    msg = str(exc).strip()
    if "Expected" in msg and "fields" in msg:
        return LoadError(
            f"{label}: a row has more fields than the header ({msg}). "
            "Check for an unquoted delimiter inside a text value."
        )
    return LoadError(f"{label} could not be parsed as delimited text: {msg}")


def _check_columns(columns: list[str], label: str) -> None:
    blank = [i + 1 for i, c in enumerate(columns) if not str(c).strip()]
    if blank:
        where = ", ".join(str(i) for i in blank[:10])
        raise LoadError(f"{label}: column(s) {where} have no name in the header row.")
    dupes = [c for c, k in Counter(columns).items() if k > 1]
    if dupes:
        raise LoadError(
            f"{label}: duplicate column names {', '.join(repr(d) for d in dupes)}. "
            "Every column needs a unique name."
        )


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


def _read_parquet(data: bytes, label: str) -> pd.DataFrame:
    try:
        frame = pd.read_parquet(io.BytesIO(data), engine="pyarrow")
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types
        raise LoadError(f"{label} is not a readable Parquet file: {exc}") from None
    _check_columns([str(c) for c in frame.columns], label)
    frame.columns = [str(c) for c in frame.columns]
    return frame


def _read_jsonl(data: bytes, label: str, encoding: str) -> pd.DataFrame:
    text = _decode(data, label, encoding)
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
    return pd.json_normalize(records)


def write_atomic(outputs: dict[str | Path, Callable[[Path], None]]) -> list[Path]:
    """Write several files so that none is ever half-written.

    Each writer gets a temporary path in the target's own folder; only when every
    writer has succeeded are the temporary files renamed onto their targets (a rename
    within a folder is atomic). On any error the temporary files are removed and the
    targets are left as they were.

    Returns
    -------
    list of Path
        The targets written.
    """
    done: list[tuple[Path, Path]] = []
    try:
        for target, writer in outputs.items():
            target = Path(target)
            if not target.parent.is_dir():
                raise LoadError(f"{target}: the folder {target.parent} does not exist.")
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                       dir=target.parent)
            os.close(fd)
            done.append((Path(tmp), target))
            try:
                writer(Path(tmp))
            except OSError as exc:
                raise LoadError(f"Cannot write {target}: {exc.strerror or exc}.") from None
    except BaseException:
        for tmp, _ in done:
            tmp.unlink(missing_ok=True)
        raise
    umask = os.umask(0)
    os.umask(umask)
    for tmp, target in done:
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, target)
    return [t for _, t in done]


def table_writer(frame: pd.DataFrame, target: str | Path) -> Callable[[Path], None]:
    """A writer for :func:`write_atomic`: Parquet if ``target`` ends in ``.parquet``,
    else CSV (gzip-compressed if it ends in ``.gz``)."""
    name = str(target).lower()

    def write(tmp: Path) -> None:
        if name.endswith(".parquet"):
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False, compression="gzip" if name.endswith(".gz") else None)

    return write
