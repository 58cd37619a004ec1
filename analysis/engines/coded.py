"""The engine's aggregate as integer codes: no Python string per cell (issue 44.5).

:meth:`analysis.engines.base.Table.aggregate` used to let the engine regroup its raw
groups by the factor-value *strings* and hand every cell's strings to pandas (7 text
columns of 3.8M cells at 10M rows: ~7 s of string hashing in the engine, ~7 s and 2 GB
to build the Python strings). Here the engine returns one row per *raw* group with the
formatted strings as Arrow columns (no second GROUP BY); Arrow dictionary-encodes each
column (the distinct strings once, an int32 code per cell), and the groups whose raw
values format alike (NULL and NaN, ``0.0`` and ``-0.0``, ``True`` and ``true`` ...)
are merged here by their integer codes. The result is the frame the string path gives:
the same groups and sums, every key a categorical with its categories sorted as
``astype("category")`` sorts them; only the row order may differ (it was the engine's
hash order before too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from analysis.engines import sql
from analysis.errors import AnalysisError
from analysis.values import combine_codes

__all__ = ["DENSE_GRID", "MAX_CODE", "MAX_ENUM", "MAX_LISTED", "SUMS", "TooManyGroups",
           "coded_frame", "dictionary_columns", "streamed_frame"]

#: The summed columns of an aggregate (``sql.aggregate_query``), next to the keys.
SUMS = (sql.N_ALL, sql.N_KNOWN, sql.DEV_SUM, sql.N_BAD, sql.N_HIT)


def _codes(column) -> tuple[np.ndarray, list[str]]:
    """Codes (over the sorted distinct strings) and those strings of an Arrow column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    encoded = pc.dictionary_encode(column)
    values = [str(v) for v in encoded.dictionary.to_pylist()]
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    order = sorted(range(len(values)), key=values.__getitem__)
    rank = np.empty(len(values), dtype=np.int64)
    rank[order] = np.arange(len(values))
    return (rank[codes] if len(values) else codes), [values[i] for i in order]


def coded_frame(arrow_table, keys: Sequence[str]) -> pd.DataFrame:
    """The aggregate of ``sql.aggregate_query(..., regroup=False)`` (an Arrow table: one
    row per raw group), regrouped by the keys' integer codes.

    Returns
    -------
    pandas.DataFrame
        One row per combination of the keys' factor-value strings: the keys (categorical,
        categories sorted), ``__n_all``, ``__n_known``, ``__dev_sum``, ``__n_bad``,
        ``__n_hit`` (summed over the raw groups that format alike).
    """
    coded = [_codes(arrow_table.column(k)) for k in keys]
    sums = {c: arrow_table.column(c).to_numpy() for c in SUMS}
    return _merged(keys, coded, sums, arrow_table.num_rows)


def _merged(keys: Sequence[str], coded: list[tuple[np.ndarray, list[str]]],
            sums: dict[str, np.ndarray], rows: int, *, merge: bool = True) -> pd.DataFrame:
    """The frame of :func:`coded_frame` from each key's codes over its sorted strings and
    the sums per raw group; raw groups with the same codes are merged (``merge=False``:
    the caller knows there are none)."""
    if merge and keys and rows:
        key = combine_codes([c for c, _ in coded], [max(len(v), 1) for _, v in coded], n=rows)
        first = ~pd.Series(key).duplicated().to_numpy()
        if not first.all():  # raw values that format alike: one group, sums added
            uniq, inverse = np.unique(key, return_inverse=True)
            inverse = inverse.reshape(-1)
            at = np.zeros(len(uniq), dtype=np.int64)
            at[inverse[::-1]] = np.arange(rows)[::-1]  # each group's first raw row
            coded = [(c[at], v) for c, v in coded]
            sums = {c: np.bincount(inverse, weights=x.astype(float), minlength=len(uniq))
                    for c, x in sums.items()}
    out = pd.DataFrame({k: pd.Categorical.from_codes(c, categories=v)
                        for k, (c, v) in zip(keys, coded, strict=True)},
                       index=pd.RangeIndex(len(next(iter(sums.values())))))
    for c, x in sums.items():
        out[c] = x.astype(float) if c == sql.DEV_SUM else np.rint(x).astype(np.int64)
    return out


#: The streamed path keeps a dense count per combination of raw values: at most this many.
DENSE_GRID = 1 << 23
#: Past the grid, DuckDB groups one BIGINT per combination of raw values (the mixed-radix
#: code): at most this many combinations (else the raw values are grouped as text).
MAX_CODE = 1 << 58
#: ... and an ENUM of each key's distinct raw values: at most this many each.
MAX_ENUM = 1 << 16
#: Rows per Arrow batch of the streamed path (at least; up to 4x for a larger grid).
BATCH_ROWS = 1 << 20
_names = iter(range(1 << 62))
#: A dictionary-encoded key with at most this many raw values is coded by
#: ``list_position`` (evaluated on the Parquet dictionary, not per row), else by an ENUM.
MAX_LISTED = 1024


def dictionary_columns(connection, files: Sequence[str], columns: Sequence[str]) -> set[str]:
    """The ``columns`` that every file stores dictionary-encoded in every data page.

    DuckDB hands such a column to expressions as a dictionary vector, and
    ``list_position(constant list, column)`` then runs once per dictionary entry instead
    of once per row: 7 keys of 10M Parquet rows cost 0.8 s of CPU against 2.1 s by a cast
    to an ENUM (which looks up every row). On a column with plain-encoded pages the same
    search is linear per row (1.5-20x the ENUM's cost), so only the columns read from
    the Parquet metadata as dictionary-only are listed (``encoding_stats``: no data page
    of another encoding; files without those statistics list nothing).
    """
    from analysis.engines.sql import DUCKDB

    listed = "[" + ", ".join(DUCKDB.literal(str(f)) for f in files) + "]"
    names = ", ".join(DUCKDB.literal(c) for c in columns)
    import duckdb

    try:
        rows = connection.execute(
            "SELECT path_in_schema, bool_and(dictionary_page_offset IS NOT NULL "
            "AND len(coalesce(encoding_stats, [])) > 0 "
            "AND len(list_filter(encoding_stats, lambda s: s.page_type LIKE 'DATA_PAGE%' "
            "AND s.encoding NOT LIKE '%DICTIONARY')) = 0), count(DISTINCT file_name) "
            f"FROM parquet_metadata({listed}) WHERE path_in_schema IN ({names}) "
            "GROUP BY path_in_schema").fetchall()
    except duckdb.Error:  # a DuckDB without these statistics: ENUMs throughout
        return set()
    return {str(c) for c, every, n in rows if every and n == len(files)}


def _text_codes(texts: list[str]) -> tuple[np.ndarray, list[str]]:
    """Each raw code's factor-value string as a code over the sorted distinct strings."""
    values = sorted(set(texts))
    where = {v: i for i, v in enumerate(values)}
    return np.array([where[t] for t in texts], dtype=np.int64), values


def _release_arrow_memory() -> None:
    """Arrow's allocator keeps the freed batches for reuse: handed back to the system
    after the stream (what follows allocates with numpy)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


class _Undeclared(Exception):
    """A row holds a value outside the design's declared values (the guessed lists)."""


def streamed_frame(connection, relation, view: str, dialect: sql.Dialect,
                   keys: Sequence[str], kinds, outcome, *, dictionary: Sequence[str] = (),
                   declared: Mapping[str, Sequence[str]] | None = None,
                   dense_grid: int | None = None, max_groups: int | None = None
                   ) -> pd.DataFrame | None:
    """The aggregate of :meth:`analysis.engines.base.Table.aggregate` without a hash
    table over the combinations (DuckDB; ``relation`` queried as ``view``).

    Each key's distinct raw values (one small query per key, with their factor-value
    strings) become an ENUM; the rows stream out as one integer per row (the mixed-radix
    code of the raw values, NULL as the last code) with the outcome's ``dev`` / ``bad`` /
    ``hit``, in Arrow batches, counted with ``bincount`` into a dense grid of at most
    :data:`DENSE_GRID` entries: memory is the grid and one batch, whatever the number of
    rows. The raw codes are then mapped to the codes of their factor-value strings and
    merged (:func:`coded_frame`). Keys in ``dictionary`` (text columns stored
    dictionary-encoded, :func:`dictionary_columns`) with at most :data:`MAX_LISTED`
    values are coded by ``list_position`` instead of an ENUM (the same codes). None (the
    caller groups in SQL) when a key has no value, more than :data:`MAX_ENUM`, or two
    that print alike, or the combinations pass :data:`MAX_CODE`. A value that was not
    listed (the data changed between the queries) raises :class:`AnalysisError`.

    Past ``dense_grid`` entries (default :data:`DENSE_GRID`; e.g. 1,000 templates x
    27,648 factor combinations) the same integer is computed as a BIGINT and DuckDB
    groups the rows by it (``GROUP BY k`` with the five counts; :func:`_grouped`): the
    same cells and sums, in the same (ascending) order, with DuckDB's hash table over
    one integer per occupied combination instead of the raw text keys. More than
    ``max_groups`` (default ``base.MAX_GROUPS``) raw groups there raise
    :class:`TooManyGroups` (the caller refuses as it refuses too many combinations).

    ``declared`` (key -> the design's values) saves the per-key query of a text key:
    its declared values are taken as its raw values (a text column's value prints as
    itself), coded by a lookup that gives NULL for any other value; a row with such a
    value (or a NULL the design does not declare as ``(missing)``) ends the stream and
    the aggregate is made again with the distinct values queried (the design check then
    names the undeclared values). At 100M rows the six queries cost ~7 s of CPU.
    """
    if max_groups is None:
        from analysis.engines.base import MAX_GROUPS as max_groups
    limits = (DENSE_GRID if dense_grid is None else dense_grid, max_groups)
    try:
        return _streamed(connection, relation, view, dialect, keys, kinds, outcome,
                         dictionary, limits, declared or {})
    except _Undeclared:
        return _streamed(connection, relation, view, dialect, keys, kinds, outcome,
                         dictionary, limits, {})


def _streamed(connection, relation, view: str, dialect: sql.Dialect, keys: Sequence[str],
              kinds, outcome, dictionary: Sequence[str], limits: tuple[int, int],
              declared: Mapping[str, Sequence[str]]) -> pd.DataFrame | None:
    """:func:`streamed_frame` with the text keys in ``declared`` listed from it."""
    import math

    from analysis.design import MISSING_VALUE

    if not keys:
        return None
    quote = dialect.quote
    dense_grid, max_groups = limits
    raws, texts, sizes, guessed = [], [], [], set()
    for k in keys:
        raw = quote(k) if kinds[k] == "string" else f"CAST({quote(k)} AS VARCHAR)"
        listed = [str(v) for v in declared.get(k, ())]
        if kinds[k] == "string" and listed and len(listed) <= MAX_ENUM \
                and len(set(listed)) == len(listed):
            nulls = MISSING_VALUE in listed  # a NULL prints "(missing)": the last code
            raws.append((raw, listed, nulls))
            texts.append(listed + ([MISSING_VALUE] if nulls else []))
            sizes.append(len(listed) + nulls)
            guessed.add(k)
            continue
        text = sql.value_text(dialect, k, kinds[k])
        found = relation.query(view, f"SELECT DISTINCT {raw} AS r, {text} AS v FROM {view} "
                                     f"LIMIT {MAX_ENUM + 2}").fetchall()
        known = [(r, v) for r, v in found if r is not None]
        if not known or len(found) > MAX_ENUM or len({r for r, _ in known}) < len(known):
            return None
        missing = [v for r, v in found if r is None]  # NULL: the last code, if it occurs
        raws.append((raw, [r for r, _ in known], bool(missing)))
        texts.append([v for _, v in known] + missing)
        sizes.append(len(known) + len(missing))
    grid = math.prod(sizes)
    sparse = grid > dense_grid  # past the dense grid: DuckDB groups the integer codes
    if sparse and grid > MAX_CODE:
        return None
    names = [f"__bw_enum_{next(_names)}" for _ in keys]
    try:
        # INTEGER arithmetic in the grid (<= 2^23 entries): ~15 % less CPU than BIGINT;
        # past it a BIGINT (at most MAX_CODE combinations, times 16 in ``_grouped``)
        key = f"CAST(0 AS {'BIGINT' if sparse else 'INTEGER'})"
        for k, name, (raw, values, nulls), size in zip(keys, names, raws, sizes, strict=True):
            listed = ", ".join(dialect.literal(v) for v in values)
            if k in dictionary and len(values) <= MAX_LISTED:  # NULL: not found, below
                code = f"CAST(list_position([{listed}], {raw}) - 1 AS INTEGER)"
                if nulls:
                    code = f"(CASE WHEN {raw} IS NULL THEN {size - 1} ELSE {code} END)"
            else:  # a guessed list: TRY_CAST (another value is NULL, not an error)
                connection.execute(f"CREATE TYPE {name} AS ENUM ({listed})")
                cast = "TRY_CAST" if k in guessed else "CAST"
                code = f"CAST(enum_code({cast}({raw} AS {name})) AS INTEGER)"
                if nulls and k in guessed:  # only a NULL takes the last code
                    code = f"(CASE WHEN {raw} IS NULL THEN {size - 1} ELSE {code} END)"
                elif nulls:
                    code = f"coalesce({code}, {size - 1})"
            key = f"({key}) * {size} + {code}"
        flags = _flags(dialect, kinds, outcome)
        if sparse:
            where, sums = _grouped(relation, view, key, flags, max_groups, bool(guessed))
        else:
            where, sums = _counted(relation, view, key, flags, grid, bool(guessed))
    finally:
        for name in names:  # (a key coded by list_position made no type)
            connection.execute(f"DROP TYPE IF EXISTS {name}")
    coded, merge, rest = [], False, where
    for size, labels in zip(sizes[::-1], texts[::-1], strict=True):  # last key first
        to_text, values = _text_codes(labels)
        coded.append((to_text.astype(np.int32)[rest % size], values))
        rest = rest // size
        merge = merge or len(values) < len(labels)  # two raw values print alike
    del rest
    return _merged(list(keys), coded[::-1], sums, len(where), merge=merge)


def _flags(dialect: sql.Dialect, kinds, outcome) -> str:
    """One byte of flags per row: the outcome's dev (0, 1; 2 = unknown) in bits 0-1, bad
    in bit 2, hit in bit 3 (``sql.outcome_columns``: dev is 1.0 / 0.0 / NULL, bad and hit
    0 / 1)."""
    if outcome is not None and outcome.mapping == "binary" \
            and kinds.get(outcome.column) == "bool":
        # a BOOLEAN 0/1 outcome: never bad, never a hit; dev is the value itself
        # (``sql.outcome_columns``' expressions reduce to this: ~1.5 s at 100M rows)
        return f"coalesce(CAST({dialect.quote(outcome.column)} AS UTINYINT), 2)"
    if outcome is not None:
        expr = sql.outcome_columns(dialect, outcome, kinds)
        return (f"CAST(coalesce(CAST({expr['dev']} AS UTINYINT), 2) + 4 * ({expr['bad']})"
                f" + 8 * ({expr['hit']}) AS UTINYINT)")
    return "CAST(2 AS UTINYINT)"


def _unlisted(guessed: bool) -> Exception:
    """A row whose raw value is not in its key's list (a NULL code)."""
    if guessed:
        return _Undeclared()
    return AnalysisError("The data changed while it was read "
                         "(a value not seen a moment before); read it again.")


def _counted(relation, view: str, key: str, flags: str, grid: int, guessed: bool
             ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The rows streamed as ``key`` (an INTEGER below ``grid``) and ``flags``, counted
    with ``bincount`` into a dense grid. Returns the occupied grid entries (ascending)
    and the :data:`SUMS` there."""
    stream = None
    try:
        # batches of at least the grid's size: the per-batch bincounts over the whole
        # grid cost no more than the rows they count
        stream = relation.query(view, f"SELECT CAST({key} AS INTEGER) AS k, {flags} AS f "
                                      f"FROM {view}").arrow(
            batch_size=int(min(max(grid, BATCH_ROWS), 2 * BATCH_ROWS)))
        grids = [np.zeros(grid) for _ in SUMS]  # n_all, n_known, dev, bad, hit

        def count(k: np.ndarray, f: np.ndarray) -> None:
            rows = np.bincount(k, minlength=grid)
            grids[0] += rows
            dev = f & 3
            known = dev != 2
            if known.all():  # every outcome known (the usual case): one bincount less
                grids[1] += rows
                grids[2] += np.bincount(k[dev == 1], minlength=grid)  # the same integers
            elif known.any():
                grids[1] += np.bincount(k, weights=known, minlength=grid)
                grids[2] += np.bincount(k, weights=dev == 1, minlength=grid)
            for j, bit in ((3, 4), (4, 8)):  # counters of the design check, mostly zero
                flag = (f & bit) > 0
                if flag.any():
                    grids[j] += np.bincount(k, weights=flag, minlength=grid)

        # DuckDB hands ~1M-row batches whatever the batch size asked; each bincount
        # allocates (and the kernel zeroes) a whole grid, so the batches are gathered
        # into buffers of at least twice the grid's size (at most 2^23 rows) first
        chunk = int(min(max(2 * grid, BATCH_ROWS), 1 << 23))
        kbuf, fbuf, filled = np.empty(chunk, np.intp), np.empty(chunk, np.uint8), 0
        batches = stream.to_batches() if hasattr(stream, "to_batches") else stream
        for batch in batches:
            if batch.column(0).null_count:  # a raw value missing from its list
                raise _unlisted(guessed)
            k, f = batch.column(0).to_numpy(), batch.column(1).to_numpy()
            if filled + len(k) > chunk:
                count(kbuf[:filled], fbuf[:filled])
                filled = 0
            if len(k) > chunk:
                count(k.astype(np.intp), f)
            else:
                kbuf[filled:filled + len(k)], fbuf[filled:filled + len(k)] = k, f
                filled += len(k)
            del k, f, batch
        if filled:
            count(kbuf[:filled], fbuf[:filled])
        del kbuf, fbuf
        _release_arrow_memory()
    finally:
        if stream is not None and hasattr(stream, "close"):
            stream.close()  # an open result would block the next query
    where = np.flatnonzero(grids[0])
    sums = {}
    for j, c in enumerate(SUMS):  # one grid at a time: the grids freed as they are read
        sums[c] = grids[j][where]
        grids[j] = None
    return where, sums


class TooManyGroups(Exception):
    """The sparse path met more raw groups than it may return (the caller refuses)."""


def _grouped(relation, view: str, key: str, flags: str, max_groups: int, guessed: bool
             ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Past the dense grid: DuckDB groups the rows by ``key`` (a BIGINT: one integer per
    combination of raw values, no text) and its byte of ``flags``, as one BIGINT
    ``key * 16 + flags`` with one count (its hash table: two integers per occupied
    (combination, flags) pair; it spills beyond the connection's ``memory_limit``; five
    counts per combination took ~40 % more memory), sorted by DuckDB (no sorting copy
    here). The :data:`SUMS` are then added per combination from the sorted pairs.
    Returns the occupied keys (ascending, as the
    dense grid's) and the sums there; more than ``max_groups`` raw groups raise
    :class:`TooManyGroups`."""
    text = (f"SELECT k * 16 + f AS kf, count(*) AS n FROM (SELECT {key} AS k, {flags} AS f "
            f"FROM {view}) GROUP BY kf ORDER BY kf NULLS FIRST "
            f"LIMIT {16 * (max_groups + 1)}")
    result = relation.query(view, text).arrow()
    if hasattr(result, "read_all"):  # a RecordBatchReader (newer DuckDB)
        result = result.read_all()
    if result.num_rows and result.column("kf")[0].as_py() is None:  # a raw value missing
        raise _unlisted(guessed)  # from its list (NULLS FIRST)
    kf = np.concatenate([c.to_numpy() for c in result.column("kf").chunks]) \
        if result.num_rows else np.zeros(0, np.int64)
    n = np.concatenate([c.to_numpy() for c in result.column("n").chunks]) \
        if result.num_rows else np.zeros(0, np.int64)
    del result
    _release_arrow_memory()
    k, f = kf >> 4, (kf & 15).astype(np.uint8)
    del kf
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if len(k) else np.zeros(0, int)
    if len(starts) > max_groups:
        raise TooManyGroups
    dev = f & 3

    def added(mask: np.ndarray | None) -> np.ndarray:
        if not len(starts):
            return np.zeros(0, np.int64)
        return np.add.reduceat(n if mask is None else np.where(mask, n, 0), starts)

    sums = dict(zip(SUMS, (added(None), added(dev != 2), added(dev == 1),
                           added((f & 4) > 0), added((f & 8) > 0)), strict=True))
    return k[starts], sums
