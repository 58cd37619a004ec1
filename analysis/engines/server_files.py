"""Files on the machine that runs the app: a configured data folder, read through DuckDB.

The app's "Large file on this machine" source opens a path or glob *under one folder*,
named by the environment variable :data:`DATA_DIR_ENV` (or ``data_dir`` in the app's
secrets). Anything outside it is refused, symbolic links included: the browser user
must not read the server's other files.

DuckDB reads the files without an upload and returns a compact table: numbers and
booleans as they are, text columns with at most ``max_values`` distinct values as
pandas categoricals (one or two bytes a row instead of a string object), and free-text
columns (answers, prompts, ids) left out and listed in ``TableMeta.dropped_columns``:
no count-based statistic reads them, and they hold most of a results table's bytes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from analysis.design import MAX_FACTOR_VALUES
from analysis.errors import LoadError
from analysis.io import check_regular_file
from analysis.limits import check_decoded
from analysis.table_meta import LoadedTable

__all__ = [
    "BATCH_ROWS", "DATA_DIR_ENV", "SAMPLE_ROWS", "data_folder", "read_compact", "resolve_under",
]


#: Environment variable naming the folder the app may read files from.
DATA_DIR_ENV = "BIAS_WORKBENCH_DATA_DIR"
_WILDCARD = re.compile(r"[*?\[]")


def data_folder(configured: str | Path | None = None) -> Path | None:
    """The data folder: ``configured`` (app secrets) or :data:`DATA_DIR_ENV`; None if unset.

    Raises
    ------
    LoadError
        The configured folder does not exist.
    """
    text = configured or os.environ.get(DATA_DIR_ENV)
    if not text:
        return None
    folder = Path(text).expanduser()
    if not folder.is_dir():
        raise LoadError(f"The data folder {folder} (set by {DATA_DIR_ENV} or data_dir in the "
                        "app's secrets) does not exist.")
    return folder.resolve()


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def resolve_under(text: str, folder: Path) -> tuple[str, list[str]]:
    """``text`` (a path or glob, absolute or relative to ``folder``) and its files.

    Returns
    -------
    (pattern, files)
        The absolute path or glob, and the files it matches (resolved, checked inside the
        folder and regular): read ``files``, not ``pattern``, so that nothing added or
        swapped after the check (a symbolic link) is read.

    Raises
    ------
    LoadError
        The path leaves the folder (``..``, an absolute path elsewhere, a symbolic link
        pointing out), matches nothing, is not a regular results file (a FIFO, a device),
        or cannot be opened (a name too long).
    """
    from analysis.engines.duckdb_engine import expand

    text = text.strip()
    if not text:
        raise LoadError("Give a file name, a glob such as runs/*.parquet, or a folder.")
    folder = folder.resolve()
    candidate = Path(text).expanduser()
    if not candidate.is_absolute():
        candidate = folder / candidate
    parts = candidate.parts
    fixed = Path(*[p for p in parts[:next((i for i, p in enumerate(parts)
                                           if _WILDCARD.search(p)), len(parts))]])
    outside = (f"{text} is outside the data folder {folder}: this source only opens files "
               f"under it (set {DATA_DIR_ENV} to another folder).")
    try:
        if ".." in parts or not _inside(fixed.resolve(), folder):
            raise LoadError(outside)
        files = [str(Path(f).resolve()) for f in expand(str(candidate))]
        if any(not _inside(Path(f), folder) for f in files):
            raise LoadError(outside)
        for f in files:  # FIFOs, devices (a FIFO would park the reading thread forever)
            check_regular_file(Path(f))
    except OSError as exc:  # a name too long for the file system, a loop of links ...
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise LoadError(f"{shown!r} cannot be opened: {exc.strerror or type(exc).__name__}."
                        ) from None
    return str(candidate), files


#: Rows at the start of the source in which a text column with more than ``max_values``
#: distinct values is left out before the full pass (its count only grows after them).
SAMPLE_ROWS = 100_000
#: Rows per Arrow batch of the full pass (each text column is dictionary-encoded per batch).
BATCH_ROWS = 1_000_000


def read_compact(source: str | list[str], *, max_values: int = MAX_FACTOR_VALUES,
                 name: str | None = None, with_meta: bool = False
                 ) -> pd.DataFrame | LoadedTable:
    """Every row of ``source`` (a path or glob, or the list of files
    :func:`resolve_under` checked) through DuckDB, as a compact pandas table (module
    docstring).

    One full pass over the rows: the first :data:`SAMPLE_ROWS` rows rule out the text
    columns with more than ``max_values`` distinct values (free text, ids); the other
    columns stream as Arrow batches, text dictionary-encoded batch by batch (memory: the
    codes, never the strings), and a text column whose values pass ``max_values`` on the
    way is left out too. Text columns become unordered categoricals with sorted categories.

    Returns
    -------
    pandas.DataFrame
        The source's columns minus the left-out ones, in file order: numbers and booleans
        as DuckDB types them (DECIMAL as float), text as categoricals (missing stays
        missing; booleans read as text become ``"true"``/``"false"``).
    LoadedTable
        With ``with_meta``: that table and its :class:`~analysis.table_meta.TableMeta`:
        ``source_name``, ``dropped_columns`` (file order), ``decimal_comma_columns`` (text
        files with decimal commas) and ``compact``.

    Raises
    ------
    LoadError
        DuckDB cannot read the files, or they differ in columns.
    """
    from analysis.engines.duckdb_engine import DuckDBTable

    table = DuckDBTable(source, name=name)
    try:
        text_cols = [c for c, k in table.kinds.items() if k in ("string", "csvbool", "other")]
        dropped = set(_many_values_at_start(table, text_cols, max_values))
        frame, too_many = _stream_compact(table, [c for c in table.kinds if c not in dropped],
                                          set(text_cols), max_values)
        dropped |= too_many
    finally:
        table.close()
    if not with_meta:
        return frame
    return LoadedTable(frame, table.meta(compact=True).but(
        source_name=name or table.name,
        dropped_columns=tuple(c for c in table.kinds if c in dropped)))


def _text_value(table, column: str) -> str:  # noqa: ANN001 - a DuckDBTable
    """A text column's value as the compact table holds it (NULL stays NULL)."""
    from analysis.engines import sql

    q, kind = table.dialect.quote(column), table.kinds[column]
    if kind == "string":
        return q
    return f"(CASE WHEN {q} IS NULL THEN NULL ELSE {sql.value_text(sql.DUCKDB, column, kind)} END)"


def _many_values_at_start(table, text_cols: list[str], max_values: int) -> list[str]:  # noqa: ANN001
    """Text columns with more than ``max_values`` distinct values in the first rows."""
    if not text_cols:
        return []
    counts = table.query("SELECT " + ", ".join(
        f"count(DISTINCT {_text_value(table, c)}) AS c{i}" for i, c in enumerate(text_cols))
        + f" FROM (SELECT * FROM {{table}} LIMIT {SAMPLE_ROWS}) AS start_")
    return [c for i, c in enumerate(text_cols) if int(counts[f"c{i}"].iloc[0]) > max_values]


def _stream_compact(table, columns: list[str], text_cols: set[str],  # noqa: ANN001
                    max_values: int) -> tuple[pd.DataFrame, set[str]]:
    """The one full pass: ``columns`` as a pandas frame, and the text columns left out
    because their values passed ``max_values``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    q = table.dialect.quote
    selects = [f"{_text_value(table, c)} AS {q(c)}" if c in text_cols else
               f"CAST({q(c)} AS DOUBLE) AS {q(c)}" if table.kinds[c] == "decimal" else q(c)
               for c in columns]
    if not selects:
        return pd.DataFrame(index=pd.RangeIndex(table.n_rows())), set()
    relation = table.relation.query("results_", f"SELECT {', '.join(selects)} FROM results_")
    # DuckDB 1.4+ names it to_arrow_reader; earlier versions record_batch
    to_reader = getattr(relation, "to_arrow_reader", None) or relation.record_batch
    reader = to_reader(BATCH_ROWS)
    chunks: dict[str, list] = {c: [] for c in columns}
    too_many: set[str] = set()
    used = 0  # bytes kept (codes and dictionaries of text, copies of the rest)
    for batch in reader:
        for c in columns:
            if c in too_many:
                continue
            array = batch.column(c)
            if c in text_cols:
                array = pc.dictionary_encode(array)
                if len(array.dictionary) > max_values:
                    too_many.add(c)
                    used -= sum(a.nbytes for a in chunks[c])
                    chunks[c] = []
                    continue
            else:  # a copy: a column imported from DuckDB keeps its whole batch alive
                array = pa.concat_arrays([array])
            chunks[c].append(array)
            used += array.nbytes
        check_decoded(used, table.name)
    kept = [c for c in columns if c not in too_many]
    types = {f.name: f.type for f in reader.schema}
    arrow = pa.table({c: pa.chunked_array(
        chunks[c], type=pa.dictionary(pa.int32(), types[c]) if c in text_cols else types[c])
        for c in kept})
    del chunks  # the table holds them; self_destruct frees each column once converted
    # integers and booleans with missing values: pandas' masked dtypes, as DuckDB's .df()
    masked = [c for c in kept if c not in text_cols and arrow.column(c).null_count
              and (pa.types.is_integer(types[c]) or pa.types.is_boolean(types[c]))]
    extra = arrow.select(masked).to_pandas(types_mapper=_masked_dtype) if masked else None
    frame = arrow.drop_columns(masked).to_pandas(split_blocks=True, self_destruct=True)
    if extra is not None:
        frame = pd.concat([frame, extra], axis=1)[kept]
    for c in kept:
        if c not in text_cols:
            continue
        categories = frame[c].cat.categories
        if len(categories) > max_values:
            too_many.add(c)
            frame = frame.drop(columns=c)
        else:
            frame[c] = frame[c].cat.reorder_categories(sorted(categories)).cat.as_unordered()
    return frame, too_many


def _masked_dtype(arrow_type):  # noqa: ANN001, ANN202 - pyarrow's types_mapper protocol
    """pandas' masked dtype of an Arrow integer or boolean type (``Int64``, ``boolean``)."""
    import pyarrow as pa

    if pa.types.is_boolean(arrow_type):
        return pd.BooleanDtype()
    if pa.types.is_integer(arrow_type):
        return pd.api.types.pandas_dtype(("UInt" if pa.types.is_unsigned_integer(arrow_type)
                                          else "Int") + str(arrow_type.bit_width))
    return None
