"""Resource limits on inputs, each configurable through an environment variable.

A results file, an upload or a design file could otherwise take the whole machine
(and, in the app, every user's session) down: a gzip "bomb" that expands a thousand
times, a YAML file whose nested aliases expand to gigabytes ("billion laughs"),
``/dev/zero`` or a FIFO given as a path. The checks run while streaming, so a refused
input costs little memory and time. ``docs/limits.md`` lists every limit.

Each limit is read from the environment when it is used, so a deployment (or a test)
can change it without code: ``BIAS_WORKBENCH_MAX_DECOMPRESSED_MB=4096 python -m analysis ...``.
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.errors import LimitError

__all__ = [
    "LIMITS", "Limit", "MAX_COLUMNS", "MAX_DECODED", "MAX_DECOMPRESSED", "MAX_DESIGN_SIZE",
    "MAX_DESIGN_VALUES", "MAX_INPUT", "MAX_JSON_DEPTH", "MAX_RATIO", "MAX_ROWS",
    "MAX_ZIP_ENTRIES", "MB", "RATIO_CHECK_FROM", "check_columns", "check_decoded",
    "check_json_depth", "check_rows", "check_zip", "json_depth", "max_bytes",
]


@dataclass(frozen=True)
class Limit:
    """One limit: its environment variable, default, unit and what it bounds."""

    env: str
    default: float
    unit: str
    what: str

    def value(self) -> float:
        """The configured value (the environment variable, else the default)."""
        raw = os.environ.get(self.env, "").strip()
        if not raw:
            return self.default
        try:
            value = float(raw)
        except ValueError:
            raise LimitError(f"{self.env}={raw!r} is not a number ({self.what}).") from None
        if value <= 0:
            raise LimitError(f"{self.env}={raw!r} must be positive ({self.what}).")
        return value

    def how_to_raise(self) -> str:
        """A sentence naming the variable that raises the limit."""
        return f"To allow more, set the environment variable {self.env} (see docs/limits.md)."


MB = 1024 * 1024

#: Largest file or upload read (compressed size), in MB.
MAX_INPUT = Limit("BIAS_WORKBENCH_MAX_INPUT_MB", 1024, "MB",
                  "the largest results file or upload read")
#: Largest size a compressed (gzip) input may expand to, in MB.
MAX_DECOMPRESSED = Limit("BIAS_WORKBENCH_MAX_DECOMPRESSED_MB", 1024, "MB",
                         "the largest size a gzip file may expand to")
#: Largest expansion ratio of a gzip input, checked once it has expanded past
#: :data:`RATIO_CHECK_FROM` bytes (small files legitimately compress very well).
MAX_RATIO = Limit("BIAS_WORKBENCH_MAX_COMPRESSION_RATIO", 100, "x",
                  "the largest expansion ratio of a gzip file")
RATIO_CHECK_FROM = 16 * MB
#: Largest design file (YAML or JSON), in KB.
MAX_DESIGN_SIZE = Limit("BIAS_WORKBENCH_MAX_DESIGN_KB", 8192, "KB",
                        "the largest design file read")
#: Most values a design may declare, all factors together.
MAX_DESIGN_VALUES = Limit("BIAS_WORKBENCH_MAX_DESIGN_VALUES", 1_000_000, "values",
                          "the most values a design may declare")

#: Most rows a table may have once read into memory (uploads, the CLI, sessions).
MAX_ROWS = Limit("BIAS_WORKBENCH_MAX_ROWS", 10_000_000, "rows",
                 "the most rows a table read into memory may have")
#: Largest size a table may take in memory once decoded, in MB (checked while reading).
MAX_DECODED = Limit("BIAS_WORKBENCH_MAX_DECODED_MB", 2048, "MB",
                    "the largest size a table may take in memory once decoded")

#: Most columns a table may have (checked from the header or footer before parsing, and
#: before any structure inference): a results table in long form has tens of columns.
MAX_COLUMNS = Limit("BIAS_WORKBENCH_MAX_COLUMNS", 2_000, "columns",
                    "the most columns a results table may have")

#: Deepest nesting of arrays and objects in a JSON input (importers' logs and samples).
MAX_JSON_DEPTH = Limit("BIAS_WORKBENCH_MAX_JSON_DEPTH", 200, "levels",
                       "the deepest nesting of arrays and objects in a JSON input")
#: Most members of a ZIP input (an Inspect .eval log).
MAX_ZIP_ENTRIES = Limit("BIAS_WORKBENCH_MAX_ZIP_ENTRIES", 200_000, "entries",
                        "the most members of a ZIP input")

LIMITS: tuple[Limit, ...] = (MAX_INPUT, MAX_DECOMPRESSED, MAX_RATIO, MAX_DESIGN_SIZE,
                             MAX_DESIGN_VALUES, MAX_ROWS, MAX_DECODED, MAX_COLUMNS,
                             MAX_JSON_DEPTH, MAX_ZIP_ENTRIES)


def max_bytes(limit: Limit) -> int:
    """A size limit (MB or KB) in bytes."""
    factor = {"MB": MB, "KB": 1024}[limit.unit]
    return int(limit.value() * factor)


def check_rows(rows: int, label: str, *, found: str | None = None) -> None:
    """Refuse a table of more than :data:`MAX_ROWS` rows.

    ``found`` describes what was counted (default ``"<rows> rows"``), e.g. "more than N
    rows (already M read)" or "N lines".

    Raises
    ------
    LimitError
        Naming what was found and the variable.
    """
    limit = int(MAX_ROWS.value())
    if rows > limit:
        raise LimitError(f"{label} has {found or f'{rows:,} rows'}, more than the {limit:,} "
                         f"rows allowed for a table read into memory. "
                         f"{MAX_ROWS.how_to_raise()} Larger tables: the Data page's 'Large "
                         "file on this machine' or the CLI's --engine duckdb.")


def check_columns(n_columns: int, label: str) -> None:
    """Refuse a table of more than :data:`MAX_COLUMNS` columns (before parsing its rows
    or inferring anything from it).

    Raises
    ------
    LimitError
        Naming the number of columns, the limit and the variable.
    """
    limit = int(MAX_COLUMNS.value())
    if n_columns > limit:
        raise LimitError(f"{label} has {n_columns:,} columns, more than the {limit:,} columns "
                         "allowed for a results table (one row per response, a column per "
                         "factor, text or score). A table with one column per model or "
                         "setting can be melted first (`import wide`). "
                         f"{MAX_COLUMNS.how_to_raise()}")


def check_decoded(nbytes: int, label: str) -> None:
    """Refuse a table whose decoded size (so far) passes :data:`MAX_DECODED`.

    Raises
    ------
    LimitError
        Naming the size reached and the variable.
    """
    if nbytes > max_bytes(MAX_DECODED):
        raise LimitError(f"{label} decodes to more than {MAX_DECODED.value():,.0f} MB in "
                         f"memory (stopped at {nbytes / MB:,.0f} MB), more than allowed for a "
                         f"table. {MAX_DECODED.how_to_raise()}")


_ESCAPES = re.compile(rb"\\.", re.DOTALL)  # a backslash and the byte it escapes
_OTHER_BYTES = bytes(b for b in range(256) if b not in b'"[]{}')
_STEP = np.zeros(256, dtype=np.int64)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON (or JSON Lines) ``data``, found in
    linear time without parsing (brackets inside strings are not counted).

    Escapes are blanked, every byte but quotes and brackets is deleted (``bytes.translate``),
    the quotes' running parity marks the brackets inside strings and the running sum of
    the others is the depth.
    """
    marks = np.frombuffer(_ESCAPES.sub(b"__", data).translate(None, _OTHER_BYTES),
                          dtype=np.uint8)
    if not len(marks):
        return 0
    inside = np.cumsum(marks == ord('"')) % 2 == 1
    levels = np.cumsum(np.where(inside, 0, _STEP[marks]))
    return max(int(levels.max()), 0)


def check_json_depth(data: bytes, label: str) -> None:
    """Refuse JSON nested deeper than :data:`MAX_JSON_DEPTH` before any parser sees it
    (parsers recurse: 100,000 levels took an Inspect log reader to 11 GB).

    Raises
    ------
    LimitError
        Naming the depth found and the variable.
    """
    limit = int(MAX_JSON_DEPTH.value())
    depth = json_depth(data)
    if depth > limit:
        raise LimitError(f"{label}: a JSON value is nested {depth:,} levels deep, more than "
                         f"the {limit:,} levels allowed. {MAX_JSON_DEPTH.how_to_raise()}")


def check_zip(path: str | Path, label: str) -> zipfile.ZipFile:
    """Open a ZIP input after checking its directory: entries (:data:`MAX_ZIP_ENTRIES`),
    the size its members declare (:data:`MAX_DECOMPRESSED`, all together) and each
    member's expansion ratio (:data:`MAX_RATIO`, past :data:`RATIO_CHECK_FROM`). Python's
    zipfile never returns more than a member declares, so the declared sizes bound the
    memory of reading it. The caller closes the returned file.

    Raises
    ------
    LimitError
        A limit is exceeded (the member is named).
    """
    archive = zipfile.ZipFile(path)
    try:
        members = archive.infolist()
        if len(members) > MAX_ZIP_ENTRIES.value():
            raise LimitError(f"{label} holds {len(members):,} ZIP entries, more than the "
                             f"{MAX_ZIP_ENTRIES.value():,.0f} allowed. "
                             f"{MAX_ZIP_ENTRIES.how_to_raise()}")
        total = sum(m.file_size for m in members)
        if total > max_bytes(MAX_DECOMPRESSED):
            raise LimitError(f"{label} expands to {total / MB:,.0f} MB, more than the "
                             f"{MAX_DECOMPRESSED.value():,.0f} MB allowed for a decompressed "
                             f"file. {MAX_DECOMPRESSED.how_to_raise()}")
        for m in members:
            if m.file_size > RATIO_CHECK_FROM and \
                    m.file_size > MAX_RATIO.value() * max(m.compress_size, 1):
                raise LimitError(
                    f"{label}: its member {m.filename[:80]!r} expands "
                    f"{m.file_size / max(m.compress_size, 1):,.0f} times (a member this "
                    f"repetitive is likely a decompression bomb). {MAX_RATIO.how_to_raise()}")
    except BaseException:
        archive.close()
        raise
    return archive
