"""Spark: a ``pyspark.sql.DataFrame`` (or files read by Spark) aggregated where it lives.

The session is the active one if there is one; otherwise one is built from the usual
settings: ``SPARK_REMOTE`` (Spark Connect) or ``SPARK_MASTER`` (default ``local[2]``).
Only the aggregate is collected to the driver (``toPandas`` on a small table).
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from analysis.engines import sql, text_files
from analysis.engines.base import Table
from analysis.engines.duckdb_engine import expand, file_format
from analysis.errors import EngineError, LoadError

__all__ = ["SparkTable", "is_spark_frame", "read", "session"]


_views = itertools.count()


def is_spark_frame(obj: object) -> bool:
    """Whether ``obj`` is a Spark DataFrame (classic or Connect) without importing pyspark."""
    module = type(obj).__module__
    return module.startswith("pyspark.sql") and type(obj).__name__ == "DataFrame"


def session():
    """The active Spark session, or a new one from ``SPARK_REMOTE`` / ``SPARK_MASTER``.

    Raises
    ------
    EngineError
        pyspark is not installed or the session cannot start (no Java, bad master URL).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise EngineError("The Spark engine needs pyspark: pip install 'bias-workbench[spark]' "
                          "(and Java 17).") from None
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    try:
        builder = SparkSession.builder.appName("bias-workbench")
        if os.environ.get("SPARK_REMOTE"):
            builder = builder.remote(os.environ["SPARK_REMOTE"])
        else:
            builder = (builder.master(os.environ.get("SPARK_MASTER", "local[2]"))
                       .config("spark.ui.enabled", "false")
                       .config("spark.driver.host", os.environ.get("SPARK_DRIVER_HOST",
                                                                   "127.0.0.1")))
        return builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - Py4J, Java and connection errors vary
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EngineError(f"Spark could not start: {message}. Check that Java 17 is installed "
                          "(JAVA_HOME) and that SPARK_MASTER / SPARK_REMOTE name a reachable "
                          "cluster, or use --engine duckdb.") from None


def read(source, *, sep: str | None = None, encoding: str = "utf-8",
         layout: text_files.TextLayout | None = None):
    """A Spark DataFrame of a path, glob or folder (Parquet, CSV/TSV, JSON Lines).

    A URI (``s3a://``, ``hdfs://``, ``abfss://`` ...) goes to Spark as it is: Parquet unless
    its name ends in another format's extension. Local text files are read with the
    pandas loader's delimiter and encoding (``layout``, :mod:`analysis.engines.text_files`;
    computed when not given); CSV quotes are escaped by doubling, as in pandas.
    """
    if "://" in str(source):
        files = [str(source)]
        formats = {file_format(str(source)) or "parquet"}
    else:
        files = expand(source)
        formats = {file_format(f) for f in files}
    if None in formats or len(formats) > 1:
        raise LoadError(f"{source}: Spark reads one format at a time (CSV, TSV, Parquet or "
                        "JSON Lines).")
    fmt = formats.pop()
    options: dict[str, object] = {}
    if fmt != "parquet" and "://" not in str(source):
        label = Path(files[0]).name if len(files) == 1 else str(source)
        layout = layout or text_files.layout(files, fmt, sep, encoding)
        options["encoding"] = layout.engine_encoding("spark", label, fmt)
        sep = layout.delimiter
        if layout.quoted_line_breaks:  # a record may span lines: one task per file
            options["multiLine"] = True
    reader = session().read
    try:
        if fmt == "parquet":
            frame = reader.parquet(*files)
        elif fmt == "jsonl":
            frame = reader.json(files, **options)
        else:
            frame = reader.csv(files, header=True, inferSchema=True, escape='"',
                               sep=sep or ("\t" if fmt == "tsv" else ","), **options)
    except Exception as exc:  # noqa: BLE001
        raise LoadError(f"{source}: Spark cannot read it: {str(exc).splitlines()[0]}") from None
    return frame


class SparkTable(Table):
    """A Spark DataFrame queried through a temporary view."""

    engine = "spark"
    dialect = sql.SPARK

    def __init__(self, source, *, name: str | None = None, sep: str | None = None,
                 encoding: str = "utf-8"):
        layout = None
        if is_spark_frame(source):
            frame, label = source, name or "the Spark DataFrame"
        else:
            label = name or str(source)
            if "://" not in str(source):
                files = expand(source)
                fmt = file_format(files[0])
                if fmt in ("csv", "tsv", "jsonl"):
                    layout = text_files.layout(files, fmt, sep, encoding, name=name)
                # the pandas and DuckDB engines' label: one file by its name (same JSON)
                label = name or (Path(files[0]).name if len(files) == 1 else str(source))
            frame = read(source, sep=sep, encoding=encoding, layout=layout)
        self.frame = frame
        self.view = f"bias_workbench_{next(_views)}"
        frame.createOrReplaceTempView(self.view)
        self.spark = frame.sparkSession
        super().__init__(label, {c: sql.kind_of(t) for c, t in frame.dtypes})
        if layout is not None and layout.decimal_candidates:
            found = text_files.decimal_commas(self, layout.decimal_candidates)
            if found:  # as analysis.io reads them: numbers (one query over the candidates)
                from pyspark.sql import functions

                self.frame = frame.withColumns({c: functions.expr(
                    text_files.decimal_number(self.dialect, c)) for c in found})
                self.frame.createOrReplaceTempView(self.view)
                self.kinds.update({c: "float" for c in found})
                self.decimal_comma_columns = found

    def query(self, text: str) -> pd.DataFrame:
        try:
            return self.spark.sql(text.replace("{table}", self.view)).toPandas()
        except Exception as exc:  # noqa: BLE001
            raise EngineError(f"{self.name}: Spark failed: {str(exc).splitlines()[0]}") from None

    def collect(self, columns: Sequence[str]) -> pd.DataFrame:
        return self.frame.select(*[self.dialect.quote(c) for c in columns]).toPandas()

    def close(self) -> None:
        with contextlib.suppress(Exception):  # the session may be gone already
            self.spark.catalog.dropTempView(self.view)
