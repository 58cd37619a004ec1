"""Command line: ``python -m analysis SUBCOMMAND ...``.

Shared pieces live here (input, outcome and factor options; loading a file with a
design; JSON/table output); each subcommand is a module in ``analysis/commands/`` with
a ``register(subparsers)`` function. Outcome options mean the same in every
subcommand: ``--outcome COL`` with one of ``--deviation-values``,
``--deviation-equals``, ``--deviation-below``, ``--deviation-above`` (none: COL is 0/1
or boolean), or ``--design FILE`` for factors, references and outcome at once.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from analysis.cli_args import (
    cluster_settings,
    counts_prompts,
    infer_cluster,
    note_decimal_commas,
    outcome_from_args,
    split_list,
)
from analysis.commands import MODULES, SUMMARIES
from analysis.errors import AnalysisError

if TYPE_CHECKING:
    from analysis.table_meta import TableMeta

__all__ = [
    "FINITE_FLOAT", "NON_NEGATIVE_FLOAT", "NON_NEGATIVE_INT", "POSITIVE_FLOAT", "POSITIVE_INT",
    "PROBABILITY", "UNIT_INTERVAL", "add_engine_option", "add_factor_options", "add_input",
    "add_outcome_options", "add_output_options", "build_parser", "check_output_paths",
    "GC_THRESHOLD", "cluster_settings", "run",
    "command_in", "command_parser", "emit", "float_in", "int_at_least", "jsonable", "load_notes",
    "load_with_design", "main", "note_decimal_commas", "row_counts", "single_character",
    "show", "split_list", "warm_up_export", "write_json", "NUMPY_HUGEPAGE",
    "BLAS_SPIN", "BLAS_THREAD_TIMEOUT",
]


# --- argument types: a bad number is an argparse error (usage + message, exit 2); the
# options' value types (analysis/options/types.py), so the CLI and the API parse alike
from analysis.options.types import (  # noqa: E402
    FINITE_FLOAT,
    NON_NEGATIVE_FLOAT,
    NON_NEGATIVE_INT,
    POSITIVE_FLOAT,
    POSITIVE_INT,
    PROBABILITY,
    UNIT_INTERVAL,
    float_in,
    int_at_least,
)


def single_character(text: str) -> str:
    """An argparse ``type`` for ``--sep``: one character (``\\t`` or ``tab`` for a tab)."""
    from analysis.io import check_sep

    try:
        return check_sep(text)  # type: ignore[return-value]
    except AnalysisError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def check_output_paths(args: argparse.Namespace) -> None:
    """Refuse ``--out`` / ``--figure`` paths that cannot be written, before any work."""
    for option in ("out", "figure", "to_results"):
        value = getattr(args, option, None)
        if value:
            from analysis.safe_write import check_output_path  # only with a path to write

            check_output_path(value)


def warm_up_export(args: argparse.Namespace) -> None:
    """With ``--figure`` to an image format or a report ``--zip`` (its figures as images),
    start the export browser in the background (:func:`analysis.export.warm_up`) so that
    it starts while the command computes.

    Called once the input has loaded (:func:`load_with_design`): a command that fails on
    its input exits at once instead of waiting at exit for a browser it will not use."""
    figure = getattr(args, "figure", None)
    if (isinstance(figure, str) and figure.lower().endswith((".png", ".svg", ".pdf"))
            or getattr(args, "zip", None)):
        from analysis.export import warm_up

        warm_up()


def command_parser(sub: argparse._SubParsersAction, summary: tuple[str, str], *,
                   factors: bool | None = None, outcome: bool = False,
                   **parser_options: Any) -> argparse.ArgumentParser:
    """A subcommand's parser, its help the module's ``SUMMARY``, with the input options
    (:func:`add_input`), with ``factors`` not None :func:`add_factor_options` (``factors``:
    whether ``--factors`` is required) and with ``outcome`` :func:`add_outcome_options`."""
    name, help_text = summary
    parser = sub.add_parser(name, help=help_text, **parser_options)
    add_input(parser)
    if factors is not None:
        add_factor_options(parser, required=factors)
    if outcome:
        add_outcome_options(parser)
    return parser


def add_input(parser: argparse.ArgumentParser) -> None:
    """The results file and how to read it."""
    parser.add_argument("file", help="results table: .csv, .tsv, .parquet or .jsonl (.gz ok)")
    parser.add_argument("--sep", type=single_character,
                        help="delimiter of a text file, one character; \\t or tab for a tab "
                             "(default: sniffed)")
    parser.add_argument("--encoding", default="utf-8", help="text encoding (default utf-8)")
    add_engine_option(parser)


def add_engine_option(parser: argparse.ArgumentParser) -> None:
    """``--engine pandas|duckdb|spark|auto`` (``analysis.engines``; docs/engines.md)."""
    parser.add_argument(
        "--engine", choices=("pandas", "duckdb", "spark", "auto"), default="auto",
        help="what reads the rows: pandas (in memory), duckdb (from disk, out of core; FILE "
             "may be a glob or a folder of Parquet files), spark (SPARK_MASTER / SPARK_REMOTE) "
             "or auto (default: duckdb for globs, folders and files of 100 MiB or more)")


def add_outcome_options(parser: argparse.ArgumentParser) -> None:
    """``--outcome`` and the deviation mapping options, plus ``--design``."""
    g = parser.add_argument_group("outcome (how a row counts as a deviation)")
    g.add_argument("--design", help="design file (YAML/JSON) with factors and outcome")
    g.add_argument("--outcome", help="outcome column (0/1 or boolean unless mapped below)")
    m = g.add_mutually_exclusive_group()
    m.add_argument("--deviation-values", help="comma-separated values that count as deviation")
    m.add_argument("--deviation-equals", metavar="COL2",
                   help="deviation where the outcome equals this column in the same row")
    m.add_argument("--deviation-below", type=FINITE_FLOAT, metavar="T",
                   help="deviation where the numeric outcome is below T")
    m.add_argument("--deviation-above", type=FINITE_FLOAT, metavar="T",
                   help="deviation where the numeric outcome is above T")


def add_factor_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """``--factors``, ``--reference`` and ``--where``."""
    parser.add_argument("--factors", required=required,
                        help="comma-separated factor columns (default: the design's)")
    parser.add_argument("--reference", action="append", default=[], metavar="FACTOR=VALUE",
                        help="reference value of a factor (repeatable)")
    parser.add_argument("--where", action="append", default=[], metavar="FACTOR=VALUE",
                        help="keep only rows with this value (repeatable; VALUE may be a,b)")


def add_output_options(parser: argparse.ArgumentParser, *, figure: bool = False) -> None:
    """``--json``, ``--out`` and optionally ``--figure``."""
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--out", help="also write the table to this CSV/Parquet path")
    if figure:
        parser.add_argument("--figure", metavar="PATH",
                            help="write the figure (.png, .svg, .pdf or .html)")


def load_with_design(args: argparse.Namespace, *, need_outcome: bool = True,
                     extra: Sequence[str] = (), with_meta: bool = False):
    """Read ``args.file`` and build the design from ``--design`` and the options.

    Factors (and ``extra`` columns) named like an output column are renamed first
    (:func:`analysis.names.clash_free`); the mapping is stored in ``args.renamed``, a note
    goes to stderr, and ``--where`` / ``--reference`` may use the original names.

    Returns
    -------
    (results, design)
        ``results`` from :func:`analysis.design.apply_design` (filtered by ``--where``),
        ``design`` restricted to ``--factors`` when given. With ``--engine`` duckdb or
        spark (or auto on a large file), ``results`` is the engine's fine cell table, or
        only the needed columns for the subcommands that need rows
        (:mod:`analysis.engines.cli_load`).
    (results, design, meta)
        With ``with_meta``: also the table's :class:`~analysis.table_meta.TableMeta`
        (``source_name``; ``engine`` and ``n_rows`` for an engine's cell table), to pass to
        :func:`row_counts` and the JSON's ``file``.
    """
    from analysis.cells import filter_rows
    from analysis.design import Design, apply_design, parse_assignments
    from analysis.design_guess import NO_OUTCOME
    from analysis.io import read_results
    from analysis.names import clash_free, rename_note

    if getattr(args, "engine", "pandas") != "pandas":  # DuckDB / Spark: analysis.engines
        from analysis.engines.cli_load import load_with_engine

        args.renamed = {}  # no renaming here: a clash reaching a statistic exits 2
        loaded = load_with_engine(args, need_outcome=need_outcome, with_meta=with_meta)
        if loaded is not None:
            warm_up_export(args)
            return loaded
    from analysis.engines.cli_load import pandas_columns

    frame, meta = read_results(args.file, sep=getattr(args, "sep", None),
                               encoding=getattr(args, "encoding", "utf-8"),
                               columns=None if extra else pandas_columns(args))
    load_notes(meta)
    factors = split_list(getattr(args, "factors", None))
    outcome = outcome_from_args(args)
    suggested: list[str] = []  # without a design file: what the API would suggest, said so
    if getattr(args, "design", None):
        design = Design.load(args.design)
        if factors:
            design = design.subset(factors)
    else:
        design, suggested = _suggested(frame, factors, need_outcome and outcome is None)
    if outcome is not None:
        design = design.with_outcome(outcome)
    for name, ref in parse_assignments(getattr(args, "reference", []) or []).items():
        design = design.with_reference(name, ref)
    if need_outcome and design.outcome is None:
        raise AnalysisError(NO_OUTCOME)
    for note in suggested:
        print(f"note: {note}", file=sys.stderr)
    frame, design, renamed = clash_free(frame, design, extra=extra)
    args.renamed = renamed
    if counts_prompts(args):  # what a prompt is, read from the table (docs/structure.md)
        from analysis.structure import infer_prompt_unit

        unit, args.unit_reason = infer_prompt_unit(frame, design.names)
        design = design.with_prompt_unit(unit)
    design = infer_cluster(args, frame, design)
    if renamed:
        print(f"note: {rename_note(renamed)}", file=sys.stderr)
    results = apply_design(frame, design)
    where = {renamed.get(k, k): split_list(v) for k, v in
             parse_assignments(getattr(args, "where", []) or [], "--where").items()}
    results = filter_rows(results, where)
    warm_up_export(args)  # the input is good: start the export browser while we compute
    return (results, design, meta) if with_meta else (results, design)


def _suggested(frame, factors: list[str], want_outcome: bool):  # noqa: ANN001, ANN202
    """Without a design file, the design of ``--factors`` (else the suggested factors) with
    the suggested outcome when ``want_outcome`` (no ``--outcome``), as the API does
    (:func:`analysis.design.suggest_design`), and the notes saying so. The cluster is
    left to :func:`infer_cluster` (the same inference, with its own note)."""
    from analysis.design import Design, make_factor
    from analysis.design_guess import suggest_design, suggestion_notes

    if factors and not want_outcome:
        return Design(factors=tuple(make_factor(frame, f) for f in factors)), []
    guess = suggest_design(frame)
    if factors:
        design = Design(factors=tuple(make_factor(frame, f) for f in factors))
    elif guess.factors:
        design = Design(factors=guess.factors, prompt_unit=guess.prompt_unit)
    else:
        raise AnalysisError("Say which factors to use: --factors a,b,c or --design FILE "
                            "(none could be suggested from the table).")
    if want_outcome and guess.outcome is not None:
        design = design.with_outcome(guess.outcome)
    return design, suggestion_notes(design, factors=not factors, outcome=want_outcome,
                                    cluster=False)


def load_notes(meta: TableMeta) -> None:
    """Say on stderr what the loader decided for the user (columns read with a decimal
    comma, from the table's :class:`~analysis.table_meta.TableMeta`), as the Data page
    does in a caption."""
    note_decimal_commas(meta.decimal_comma_columns)


def row_counts(results, *, columns: Sequence[str] = (),  # noqa: ANN001 - a DataFrame
               meta: TableMeta | None = None) -> dict[str, int]:
    """Rows analysed and rows left out, for the ``settings`` of a command's JSON.

    ``meta`` (from :func:`load_with_design` with ``with_meta``) says whether ``results``
    is an engine's fine cell table (``meta.engine``): its rows are then summed from
    ``n_all`` and ``n``.

    ``n_rows``: rows after ``--where``; ``n_missing_outcome``: of those, rows whose outcome
    is missing (the ``deviation`` column is NaN; they drop out of every outcome analysis);
    ``n_missing_<col>`` for each of ``columns`` (e.g. a feature or category column): rows
    where it is missing. Factor values are never missing (an empty value is the explicit
    value ``"(missing)"``).
    """
    from analysis.cells import N_ALL
    from analysis.columns import DEVIATION, DEVIATIONS, N

    if N_ALL in results.columns and N in results.columns and meta is not None and meta.engine:
        # an engine's fine cell table (analysis.engines): one row per cell, counts summed
        n_all = int(results[N_ALL].sum())
        out = {"n_rows": n_all}
        if DEVIATIONS in results.columns:
            out["n_missing_outcome"] = n_all - int(results[N].sum())
        return out
    out = {"n_rows": int(len(results))}
    if DEVIATION in results.columns:
        out["n_missing_outcome"] = int(results[DEVIATION].isna().sum())
    for c in columns:
        if c in results.columns:
            out[f"n_missing_{c}"] = int(results[c].isna().sum())
    return out


def jsonable(obj: Any) -> Any:
    """Convert numpy/pandas scalars and NaN (-> null) for ``json.dumps``."""
    import numpy as np
    import pandas as pd

    if isinstance(obj, pd.DataFrame):
        return [jsonable(r) for r in obj.to_dict(orient="records")]
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return None if math.isnan(float(obj)) or math.isinf(float(obj)) else float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if obj is None or obj is pd.NA or obj is pd.NaT:
        return None
    return obj


def write_json(obj: Any, stream, depth: int = 0) -> None:  # noqa: ANN001 - a text stream
    """Write ``json.dumps(jsonable(obj), indent=2, ensure_ascii=False)`` to ``stream``.

    The same characters, in one pass: a DataFrame is encoded column by column (a numeric
    column's values formatted as ``json`` does, ``null`` for NaN/inf) and written row by
    row, instead of first converting every cell to a Python object and then walking the
    nested lists again with ``json``'s pure-Python indenting encoder (about 4x faster on
    the 4,731 rows of ``benchmarks/bench_cli.py``: 0.05 s instead of 0.20 s of CPU;
    docs/performance.md).
    """
    import pandas as pd

    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(obj, pd.DataFrame):
        if len(obj) == 0:
            stream.write("[]")
            return
        if len(obj.columns) == 0:
            stream.write("[\n" + ",\n".join([inner + "{}"] * len(obj)) + "\n" + pad + "]")
            return
        field = "  " * (depth + 2)
        keys = [field + json.dumps(str(k), ensure_ascii=False) + ": " for k in obj.columns]
        columns = [_json_column(obj.iloc[:, i], depth + 2) for i in range(obj.shape[1])]
        stream.write("[\n")
        close = "\n" + inner + "}"
        for i, cells in enumerate(zip(*columns, strict=True)):
            if i:
                stream.write(",\n")
            stream.write(inner + "{\n" + ",\n".join(map(str.__add__, keys, cells)) + close)
        stream.write("\n" + pad + "]")
    elif isinstance(obj, dict) and obj:
        stream.write("{\n")
        for i, (key, value) in enumerate(obj.items()):
            stream.write((",\n" if i else "") + inner
                         + json.dumps(str(key), ensure_ascii=False) + ": ")
            write_json(value, stream, depth + 1)
        stream.write("\n" + pad + "}")
    elif isinstance(obj, (list, tuple)) and obj:
        stream.write("[\n")
        for i, value in enumerate(obj):
            stream.write((",\n" if i else "") + inner)
            write_json(value, stream, depth + 1)
        stream.write("\n" + pad + "]")
    else:
        stream.write(_json_value(obj, depth))


def _json_value(value: Any, depth: int) -> str:
    """One value as ``json.dumps(jsonable(value), indent=2)`` writes it at ``depth``."""
    text = json.dumps(jsonable(value), indent=2, ensure_ascii=False)
    return text.replace("\n", "\n" + "  " * depth) if "\n" in text else text


def _json_column(column, depth: int) -> list[str]:  # noqa: ANN001 - a pandas Series
    """A column's values as JSON text: numpy float/int/bool columns formatted directly
    (``float.__repr__`` as ``json`` does), strings through ``json``'s C string encoder,
    anything else value by value."""
    import numpy as np

    kind = column.dtype.kind if isinstance(column.dtype, np.dtype) else "O"
    values = column.tolist()
    if kind == "f":
        return [float.__repr__(v) if math.isfinite(v) else "null" for v in values]
    if kind in "iu":
        return [int.__repr__(v) for v in values]
    if kind == "b":
        return ["true" if v else "false" for v in values]
    from json.encoder import encode_basestring  # what json.dumps(ensure_ascii=False) uses

    def one(v: Any) -> str:
        if v.__class__ is str:
            return encode_basestring(v)
        if v is None:
            return "null"
        if v.__class__ is float:  # e.g. NaN where a text column is missing
            return float.__repr__(v) if math.isfinite(v) else "null"
        return _json_value(v, depth)

    return [one(v) for v in column.to_numpy(dtype=object).tolist()]


def emit(args: argparse.Namespace, payload: Any, table=None) -> None:
    """Print ``payload`` as JSON with ``--json``, else ``table`` (or payload) readably."""
    import pandas as pd

    if getattr(args, "out", None) and isinstance(table, pd.DataFrame):
        from analysis.safe_write import write_table

        write_table(table, args.out)  # atomic; CSV cells neutralised
    if args.json:
        write_json(payload, sys.stdout)
        sys.stdout.write("\n")
        return
    shown = table if table is not None else payload
    if isinstance(shown, pd.DataFrame):
        with pd.option_context("display.max_rows", 200, "display.max_columns", 50,
                               "display.width", 160):
            print(shown.to_string(index=False))
    else:
        print(shown)


def show(table, *, out: str | None = None) -> None:  # noqa: ANN001 - a pandas DataFrame
    """Print ``table`` readably (and write it to ``out`` when given): :func:`emit` without
    JSON, for the further tables a command prints after its main one."""
    emit(argparse.Namespace(json=False, out=out), None, table)


def _prog() -> str:
    """The name the user typed: ``bias-workbench`` (the installed command) or ``python -m
    analysis`` (issue 42: ``bias-workbench --help`` said ``python -m analysis``)."""
    name = os.path.basename(sys.argv[0] or "")
    return name if name.startswith("bias-workbench") else "python -m analysis"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered.

    With ``command`` (the name the user typed), only that subcommand's module is imported
    and registered in full; the others get a placeholder parser carrying their one-line
    help from :data:`analysis.commands.SUMMARIES`, so ``--help`` and a command import
    only what they use. Without it, every subcommand is registered in full.
    """
    parser = argparse.ArgumentParser(
        prog=_prog(),
        description="Analyse an LLM bias benchmark as a designed experiment.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    for name in MODULES:
        summary = SUMMARIES.get(name)
        if command is None or summary is None or summary[0] == command:
            importlib.import_module(f"analysis.commands.{name}").register(sub)
        else:
            sub.add_parser(summary[0], help=summary[1], add_help=False)
    return parser


def command_in(argv: Sequence[str]) -> str:
    """The subcommand named in ``argv`` (its first positional argument), or ``""``.

    The top-level parser has no option taking a value, so the first argument not starting
    with ``-`` is the subcommand (or an unknown word argparse will refuse).
    """
    for arg in argv:
        if arg == "--":
            return ""
        if not arg.startswith("-"):
            return arg
    return ""


#: Modules whose presence means something still needs Python's normal exit: a browser or
#: JVM child process to stop (kaleido's Chrome, Spark), worker processes, model weights,
#: a DuckDB connection (its spill files are removed when it closes).
NEEDS_TEARDOWN = ("kaleido", "choreographer", "pyspark", "py4j", "multiprocessing",
                  "concurrent.futures.process", "torch", "sentence_transformers", "duckdb")


#: Young-generation threshold of the cyclic garbage collector in a one-shot CLI process.
GC_THRESHOLD = 50_000
#: The environment variable numpy reads at import: madvise huge pages for large arrays.
NUMPY_HUGEPAGE = "NUMPY_MADVISE_HUGEPAGE"
#: The environment variable OpenBLAS reads when it loads: how long (2**n CPU cycles, n in
#: 4..30, default 28: ~0.1 s) an idle BLAS thread busy-waits for more work before sleeping.
BLAS_THREAD_TIMEOUT = "OPENBLAS_THREAD_TIMEOUT"
#: Its value in a one-shot CLI process: 2**20 cycles, a few tenths of a millisecond.
BLAS_SPIN = "20"


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """``python -m analysis`` and the ``bias-workbench`` command: :func:`main`, then exit.

    Once the output is flushed, a command that started no child process or thread exits
    with ``os._exit``, skipping Python's teardown of the interpreter (freeing every module
    of pandas, pyarrow and numpy and the loaded table: 0.07-0.1 s, a tenth of
    ``importance`` on a million rows; docs/performance.md). Otherwise (an export browser,
    Spark, another thread: :data:`NEEDS_TEARDOWN`) it exits normally.

    The process collects reference cycles after :data:`GC_THRESHOLD` new container
    objects instead of Python's 700: the ~150,000 objects of the imports (modules,
    classes, functions) live until exit, and walking them again and again in the young
    and middle generations cost 0.05-0.09 s of ``importance``'s CPU (one collection
    instead of ~200; docs/importance.md, "The CLI end to end"). Cyclic garbage is still
    collected, later.

    Before numpy is imported, ``NUMPY_MADVISE_HUGEPAGE`` is set to ``0`` unless the
    environment says otherwise: numpy then does not ask the kernel for transparent huge
    pages for its large arrays, which a short process fills once and frees (each fault
    zeroes 2 MB and may compact memory first; the median CPU of ``importance`` at 1M rows
    fell ~10 %, docs/importance.md). Memory advice only: every number is the same.

    Likewise ``OPENBLAS_THREAD_TIMEOUT`` is set to :data:`BLAS_SPIN` unless set: after each
    multi-threaded BLAS call (and when a thread limit is lifted, :func:`analysis.importance`'s
    one-thread fits) numpy's OpenBLAS keeps its idle threads spinning for 2**28 cycles
    (~0.1 s of a core each time), CPU that a short process only burns; they now sleep after
    ~2**20 cycles. The same threads, the same work, the same numbers.
    """
    import gc

    os.environ.setdefault(NUMPY_HUGEPAGE, "0")
    os.environ.setdefault(BLAS_THREAD_TIMEOUT, BLAS_SPIN)
    gc.set_threshold(GC_THRESHOLD)
    code = main(argv)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # a closed pipe: nothing more can be said
        pass
    import threading

    if threading.active_count() > 1 or any(m in sys.modules for m in NEEDS_TEARDOWN):
        sys.exit(code)
    if "logging" in sys.modules:
        import logging

        logging.shutdown()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (2 with a message on bad input)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(command_in(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # bad option: argparse printed usage and the reason
        return int(exc.code or 0)
    from analysis.lazy_numpy import defer_unused_numpy_modules

    defer_unused_numpy_modules()  # what SciPy's import touches and no command uses
    try:
        check_output_paths(args)
        code = args.func(args)  # the gate (check) returns its own exit code
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head
        return 0
    return code if isinstance(code, int) else 0
