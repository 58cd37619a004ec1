"""Files on the machine that runs the app: a configured data folder, read through DuckDB.

The app's "Large file on this machine" source opens a path or glob *under one folder*,
named by the environment variable :data:`DATA_DIR_ENV` (or ``data_dir`` in the app's
secrets). Anything outside it is refused, symbolic links included: the browser user
must not read the server's other files.

DuckDB reads the files without an upload and returns a compact table: numbers and
booleans as they are, text columns with at most ``max_values`` distinct values as
pandas categoricals (one or two bytes a row instead of a string object), and free-text
columns (answers, prompts, ids) left out and listed in ``attrs["dropped_columns"]``:
no count-based statistic reads them, and they hold most of a results table's bytes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from analysis.design import MAX_FACTOR_VALUES
from analysis.errors import LoadError

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
        The absolute path or glob, and the files it matches (resolved).

    Raises
    ------
    LoadError
        The path leaves the folder (``..``, an absolute path elsewhere, a symbolic link
        pointing out), matches nothing, or is not a results file.
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
    if ".." in parts or not _inside(fixed.resolve(), folder):
        raise LoadError(outside)
    files = [str(Path(f).resolve()) for f in expand(str(candidate))]
    if any(not _inside(Path(f), folder) for f in files):
        raise LoadError(outside)
    return str(candidate), files


def read_compact(source: str, *, max_values: int = MAX_FACTOR_VALUES,
                 name: str | None = None) -> pd.DataFrame:
    """Every row of ``source`` through DuckDB, as a compact pandas table (module docstring).

    Raises
    ------
    LoadError
        DuckDB cannot read the files, or they differ in columns.
    """
    from analysis.engines import sql
    from analysis.engines.duckdb_engine import DuckDBTable

    table = DuckDBTable(source, name=name)
    try:
        q = table.dialect.quote
        text_cols = [c for c, k in table.kinds.items() if k in ("string", "csvbool", "other")]
        counts = {}
        if text_cols:
            stats = table.query("SELECT " + ", ".join(
                f"approx_count_distinct({q(c)}) AS c{i}" for i, c in enumerate(text_cols))
                + " FROM {table}")
            counts = {c: int(stats[f"c{i}"].iloc[0]) for i, c in enumerate(text_cols)}
        # approximate counts err by a few percent: keep a margin, then check exactly
        keep_text = [c for c in text_cols if counts[c] <= max_values * 1.1]
        dropped = [c for c in text_cols if c not in keep_text]
        view = "bias_workbench_large"
        table.relation.create_view(view, replace=True)
        connection = table.connection
        selects = []
        for i, (c, kind) in enumerate(table.kinds.items()):
            if c in dropped:
                continue
            if c in keep_text:
                enum = f"bw_enum_{i}"
                value = q(c) if kind == "string" else (
                    f"(CASE WHEN {q(c)} IS NULL THEN NULL "
                    f"ELSE {sql.value_text(sql.DUCKDB, c, kind)} END)")
                connection.execute(f"CREATE OR REPLACE TYPE {enum} AS ENUM (SELECT DISTINCT "
                                   f"{value} FROM {view} WHERE {q(c)} IS NOT NULL)")
                selects.append(f"CAST({value} AS {enum}) AS {q(c)}")
            else:
                selects.append(q(c))
        frame = connection.sql(f"SELECT {', '.join(selects)} FROM {view}").df()
    finally:
        table.close()
    for c in keep_text:
        frame[c] = frame[c].cat.as_unordered()
        if len(frame[c].cat.categories) > max_values:
            frame = frame.drop(columns=c)
            dropped.append(c)
    frame.attrs["source_name"] = name or table.name
    frame.attrs["dropped_columns"] = dropped
    return frame
