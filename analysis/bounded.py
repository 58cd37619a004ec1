"""Reading tables within a memory budget: the decoded size and the row count are bounded
*while* reading, not estimated from a file's metadata.

A Parquet file's metadata says what its pages hold, not what they decode to: 20 million
rows of one dictionary-encoded 100-character value take 335 KB on disk and about 310 KB
"uncompressed", yet 10.8 GB once pandas holds one Python string per row (issue 26).
:func:`read_parquet_bounded` therefore

- refuses a file whose footer declares more than :data:`analysis.limits.MAX_ROWS` rows
  before decoding anything;
- reads text columns as Arrow dictionaries (``read_dictionary``: the codes and each
  distinct value once, never one string per row) in batches (:func:`batch_rows`: about
  :data:`BATCH_BYTES` of the file's declared uncompressed data, at least
  :data:`BATCH_ROWS` rows), adding each batch's decoded size to a running total that must
  stay within :data:`analysis.limits.MAX_DECODED`, and counting the rows actually decoded;
- returns repetitive text columns of large tables as pandas categoricals
  (:func:`keep_as_category`), the others as the text columns pandas gives (``str``),
  whose cost (every row's characters and an offset) is counted before converting.

No Streamlit here; ``docs/limits.md`` documents the limits.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.errors import LoadError
from analysis.limits import check_decoded, check_rows

__all__ = ["BATCH_BYTES", "BATCH_ROWS", "CATEGORY_FROM_ROWS", "MAX_BATCH_ROWS", "ONE_THREAD_BYTES",
           "batch_rows",
           "check_column_names",
           "keep_as_category", "read_parquet_bounded"]


#: Rows per decoded batch, at least (and for files whose rows are wide).
BATCH_ROWS = 65_536
#: Rows per decoded batch, at most.
MAX_BATCH_ROWS = 1_048_576
#: Declared uncompressed bytes per batch: narrow rows are read in fewer, larger batches
#: (each batch costs a fixed overhead per column: 16 batches of 65,536 rows of 8 columns
#: took 2-3x the time of one batch of 1M rows).
BATCH_BYTES = 64 * 1024 * 1024
#: Columns declaring at most this many uncompressed bytes are decoded on the calling
#: thread: Arrow's thread pool then costs more CPU than it saves time (1M rows of 8
#: columns, 3.2 MB declared: 0.06-0.09 s of CPU on one thread against 0.07-0.28 s with the
#: pool, in no more time; docs/importance.md, "Threads that only wait").
ONE_THREAD_BYTES = 16 * 1024 * 1024
#: Tables of at least this many rows keep repetitive text columns as categoricals.
CATEGORY_FROM_ROWS = 100_000
#: The text dtype pandas gives a Parquet string column.
_STRING = pd.StringDtype(na_value=np.nan)


def keep_as_category(n_rows: int, n_distinct: int) -> bool:
    """Whether a text column stays categorical: a table of :data:`CATEGORY_FROM_ROWS` rows
    or more, and at most one distinct value per two rows (smaller tables keep the object
    columns they always had)."""
    return n_rows >= CATEGORY_FROM_ROWS and n_distinct * 2 <= n_rows


def _text_fields(schema) -> list[str]:
    import pyarrow as pa

    return [f.name for f in schema
            if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]


def batch_rows(metadata) -> int:  # noqa: ANN001 - a pyarrow FileMetaData
    """Rows per decoded batch for a file with ``metadata``: about :data:`BATCH_BYTES` of
    the uncompressed size its column chunks declare, between :data:`BATCH_ROWS` and
    :data:`MAX_BATCH_ROWS`.

    The declared size is only an estimate (issue 26: dictionary pages decode to far more
    than they declare once text becomes one string per row, which :func:`_to_pandas`
    counts apart); what bounds memory is the decoded size checked after every batch, so a
    batch can overshoot the budget by at most one batch, as with fixed batches.
    """
    rows = metadata.num_rows
    if rows <= 0:
        return BATCH_ROWS
    declared = sum(metadata.row_group(i).total_byte_size
                   for i in range(metadata.num_row_groups))
    per_row = max(declared / rows, 1.0)
    return int(min(MAX_BATCH_ROWS, max(BATCH_ROWS, BATCH_BYTES // per_row)))


def read_parquet_bounded(data: bytes, label: str,
                         columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Decode Parquet ``data`` within the row and memory limits (module docstring).

    ``columns``: decode only these columns (in the file's order, with the index columns
    its pandas metadata names), when the file has every one of them; otherwise, or when
    None, every column. The column names are checked on the whole file either way, and
    the decoded-size limit counts what is decoded.

    Returns
    -------
    pandas.DataFrame
        The file's columns (or ``columns``) as pandas reads them, except that text
        columns of large tables with repeated values are categoricals
        (:func:`keep_as_category`).

    Raises
    ------
    LoadError
        Not a readable Parquet file.
    LimitError
        More rows than ``BIAS_WORKBENCH_MAX_ROWS`` (declared or decoded), or a decoded
        size past ``BIAS_WORKBENCH_MAX_DECODED_MB``; the message names the variable.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        plain = pq.ParquetFile(io.BytesIO(data))
        check_rows(plain.metadata.num_rows, label)
        schema = plain.schema_arrow
        wanted = _wanted_columns(schema, columns)
        if wanted is not None:
            check_column_names([str(c) for c in schema.names], label)
            schema = _narrowed(schema, wanted)
        text = _text_fields(schema)
        reader = pq.ParquetFile(io.BytesIO(data), read_dictionary=text)
        batches, rows, used = [], 0, 0
        for batch in reader.iter_batches(batch_size=batch_rows(plain.metadata),
                                         columns=wanted,
                                         use_threads=_threaded(plain.metadata, wanted)):
            rows += batch.num_rows
            used += batch.nbytes
            check_rows(rows, label, found=f"more rows than declared (already {rows:,} read)")
            check_decoded(used, label)
            batches.append(batch)
        table = (pa.Table.from_batches(batches) if batches
                 else _narrowed(reader.schema_arrow, wanted).empty_table())
    except LoadError:
        raise
    except (ValueError, OSError, pa.ArrowException) as exc:
        raise LoadError(f"{label} is not a readable Parquet file: {exc}") from None
    del batches
    check_column_names([str(c) for c in table.column_names], label)
    table = _binary_as_text(_check_pandas_metadata(table, label), label)
    table = table.unify_dictionaries()
    return _to_pandas(table, text, used, label)


def _threaded(metadata, wanted: list[str] | None) -> bool:  # noqa: ANN001 - FileMetaData
    """Whether to decode with Arrow's thread pool: when the column chunks read (``wanted``,
    None: all) declare more than :data:`ONE_THREAD_BYTES` uncompressed."""
    keep = None if wanted is None else set(wanted)
    declared = 0
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        for j in range(group.num_columns):
            chunk = group.column(j)
            path = chunk.path_in_schema  # "a.b" for a nested field of column a
            if keep is None or path in keep or path.split(".")[0] in keep:
                declared += chunk.total_uncompressed_size
                if declared > ONE_THREAD_BYTES:
                    return True
    return False


def _wanted_columns(schema, columns: Sequence[str] | None) -> list[str] | None:  # noqa: ANN001
    """The columns :func:`read_parquet_bounded` decodes: ``columns`` and the index columns
    of the pandas metadata, in the file's order; None (every column) when ``columns`` is
    None, names a column the file lacks (the messages about it stay those of the whole
    table), or the file repeats a name."""
    import json

    names = [str(c) for c in schema.names]
    if columns is None or not set(columns) <= set(names) or len(set(names)) < len(names):
        return None
    keep = set(columns)
    raw = (schema.metadata or {}).get(b"pandas")
    if raw is not None:
        try:
            index = json.loads(raw).get("index_columns", [])
        except (ValueError, RecursionError, AttributeError):  # checked after reading
            return None
        if not isinstance(index, list):
            return None
        keep |= {c for c in index if isinstance(c, str)}
    return [c for c in names if c in keep]


def _narrowed(schema, wanted: list[str] | None):  # noqa: ANN001, ANN202 - pyarrow objects
    """``schema`` with only the ``wanted`` columns (all of them when None)."""
    import pyarrow as pa

    if wanted is None:
        return schema
    return pa.schema([schema.field(c) for c in wanted], metadata=schema.metadata)


def check_column_names(columns: list[str], label: str) -> None:
    """Refuse blank or duplicate column names (:class:`LoadError` naming them)."""
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


def _check_pandas_metadata(table, label: str):  # noqa: ANN001, ANN202 - a pyarrow Table
    """``table`` after checking the pandas metadata its schema carries (``b"pandas"``): JSON
    nested at most :data:`~analysis.limits.MAX_JSON_DEPTH` deep (100,000 levels were a
    ``RecursionError``) whose index columns are columns of the file (a missing one was a
    ``KeyError``). Raises :class:`LoadError` naming what is wrong."""
    import json

    from analysis.limits import check_json_depth

    raw = (table.schema.metadata or {}).get(b"pandas")
    if raw is None:
        return table
    what = f"{label}: its pandas metadata (the 'pandas' key of the Parquet schema)"
    try:
        check_json_depth(raw, what)
        meta = json.loads(raw)
    except LoadError:
        raise
    except (ValueError, RecursionError) as exc:
        raise LoadError(f"{what} is not valid JSON ({exc}); write the file again with "
                        "pandas or pyarrow.") from None
    index = meta.get("index_columns", []) if isinstance(meta, dict) else None
    if not isinstance(index, list):
        raise LoadError(f"{what} is damaged: 'index_columns' is not a list.")
    missing = [c for c in index if isinstance(c, str) and c not in table.column_names]
    if missing:
        raise LoadError(f"{what} names the index column {missing[0]!r}, which the file does "
                        "not have; write the file again (pandas: to_parquet(index=False)).")
    return table


def _binary_as_text(table, label: str):  # noqa: ANN001, ANN202 - a pyarrow Table
    """Binary columns as UTF-8 text (pandas would hold ``bytes`` that no analysis reads);
    one that is not UTF-8 is refused with the column and the first bad row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for i, field in enumerate(table.schema):
        if not (pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type)):
            continue
        column = table.column(i)
        valid = pc.utf8_is_valid(column) if hasattr(pc, "utf8_is_valid") else None
        try:
            text = column.cast(pa.string() if pa.types.is_binary(field.type)
                               else pa.large_string())
        except pa.ArrowInvalid:
            row = _first_non_utf8(column) if valid is None else \
                next(j for j, ok in enumerate(valid.to_pylist()) if ok is False)
            raise LoadError(f"{label}: column {field.name!r} holds binary data that is not "
                            f"UTF-8 text (row {row + 1:,} is the first); store text columns "
                            "as strings.") from None
        table = table.set_column(i, field.name, text)
    return table


def _first_non_utf8(column) -> int:  # noqa: ANN001 - a pyarrow ChunkedArray
    for j, value in enumerate(column.to_pylist()):
        if value is not None:
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                return j
    return 0


def _to_pandas(table, text: list[str], used: int, label: str) -> pd.DataFrame:
    """``table`` as pandas; dictionary text columns categorical or object (module doc)."""
    frame = table.to_pandas(split_blocks=True, self_destruct=True)
    n = len(frame)
    for name in text:
        if name not in frame.columns:
            continue
        col = frame[name]
        if not isinstance(col.dtype, pd.CategoricalDtype):
            continue
        categories = col.cat.categories
        if keep_as_category(n, len(categories)):
            continue
        # A text column as pandas reads it: every row's characters and an offset per row.
        codes = col.cat.codes.to_numpy()
        counts = np.bincount(codes[codes >= 0], minlength=len(categories))
        lengths = categories.str.len().to_numpy(dtype=np.int64)
        used += n * 8 + int((counts * lengths).sum())
        check_decoded(used, label)
        frame[name] = col.astype(_STRING)
    return frame
