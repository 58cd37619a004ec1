"""What the commands of ``python -m judges`` share (``judges.cli``, ``judges.cli_ensemble``,
``judges.cli_scale``): exit codes, the encoding option, the reply cache, loading the input,
progress lines, finishing a run and writing tables.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.judge_stats import columns as C
from judges.cache import ReplyCache, default_cache_path, open_cache
from judges.fourstage import empty_texts, load_fourstage
from judges.judge import (
    JudgeConfig,
    JudgeProgress,
)
from judges.runner import RunConfig, RunStats

__all__ = [
    "EXIT_FAILED", "EXIT_INPUT", "EXIT_INTERRUPTED", "EXIT_OK", "add_encoding_option",
    "check_input_encoding", "finish_run", "input_encoding", "judge_config", "load_for_scoring",
    "open_reply_cache", "parse_temperature", "print_position_bias", "print_warnings",
    "progress_line", "reply_cache", "report_results", "reporting", "run_and_write",
    "run_config", "run_reporting",
    "write_results", "write_table",
]


EXIT_OK, EXIT_INPUT, EXIT_FAILED, EXIT_INTERRUPTED = 0, 2, 3, 130


def write_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write ``frame`` as CSV, TSV, Parquet or JSON Lines according to the extension.

    Atomic (a temporary file renamed at the end: a full disk leaves no partial file) and
    with CSV cells neutralised (:mod:`analysis.safe_write`); a missing folder is created.
    """
    from analysis.safe_write import write_table as safe_write_table

    return safe_write_table(frame, path, create_parent=True)


def write_results(judged: pd.DataFrame, path: str | Path, *,
                  similarity_threshold: float = C.SIMILARITY_THRESHOLD,
                  stage2_rows: str = "pair") -> tuple[Path, Path]:
    """Write the results table of ``judged`` and its design (``<stem>.design.yaml``)."""
    from judges.to_results import to_results

    results, design = to_results(judged, similarity_threshold=similarity_threshold,
                                 stage2_rows=stage2_rows)  # type: ignore[arg-type]
    table = write_table(results, path)
    design_path = table.with_name(f"{table.stem}.design.yaml")
    design.save(design_path)
    return table, design_path


def parse_temperature(text: str) -> float | None:
    """``--temperature``: a number >= 0, or ``none`` / ``default`` (the provider's)."""
    if text.strip().lower() in ("none", "default", ""):
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"temperature must be a number or 'none', not {text!r}"
                                         ) from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"temperature must be a number >= 0 or 'none', "
                                         f"not {text!r}")
    return value


def add_encoding_option(p: argparse.ArgumentParser) -> None:
    """``--encoding ENC``: the encoding of the input tables (checked by
    :func:`check_input_encoding` before anything is read)."""
    p.add_argument("--encoding", default="utf-8", metavar="ENC",
                   help="text encoding of the input table(s) without a byte-order mark "
                        "(default utf-8; for example latin-1, cp1252, utf-16-le); a mark wins")


def input_encoding(args: argparse.Namespace) -> str:
    """The ``--encoding`` of ``args`` (utf-8 for a command without the option)."""
    return getattr(args, "encoding", None) or "utf-8"


def check_input_encoding(args: argparse.Namespace) -> None:
    """Refuse an unknown ``--encoding`` before any file is read or request made
    (:class:`~analysis.errors.LoadError`, the message of ``python -m analysis``)."""
    from analysis.io import check_encoding

    if getattr(args, "encoding", None) is not None:
        check_encoding(args.encoding)


def judge_config(args: argparse.Namespace) -> JudgeConfig:
    """The :class:`~judges.judge.JudgeConfig` the options describe."""
    return JudgeConfig(temperature=args.temperature, max_tokens=args.max_tokens,
                       structured_output=not args.no_structured_output,
                       reasoning_effort=getattr(args, "reasoning_effort", None),
                       reuse_unparsed=getattr(args, "reuse_unparsed", False),
                       samples=getattr(args, "samples", 1),
                       both_orders=getattr(args, "both_orders", False),
                       logprobs=getattr(args, "logprobs", False))


def print_position_bias(judged: pd.DataFrame) -> None:
    """The position-bias table of a file judged in both orders, on stdout (nothing
    otherwise)."""
    from judges.position import has_both_orders, position_bias

    if not has_both_orders(judged):
        return
    table = position_bias(judged)
    print("Position bias (stage-2 pairs judged in both orders; diff = as given - swapped):")
    with pd.option_context("display.width", 200):
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3g}"))


def open_reply_cache(args: argparse.Namespace) -> ReplyCache | None:
    """The reply cache of ``--cache`` (None with ``--no-cache``); an unusable one is moved aside."""
    if args.no_cache:
        return None
    cache, moved = open_cache(args.cache or default_cache_path(),
                              reset=getattr(args, "reset_cache", False))
    if moved is not None:
        print(f"The unusable cache was moved to {moved}; a new cache starts at {cache.path}.",
              file=sys.stderr)
    return cache


@contextlib.contextmanager
def reply_cache(args: argparse.Namespace) -> Iterator[ReplyCache | None]:
    """:func:`open_reply_cache` for a ``with`` block, which closes it."""
    cache = open_reply_cache(args)
    try:
        yield cache
    finally:
        if cache is not None:
            cache.close()


def run_config(args: argparse.Namespace) -> RunConfig:
    """The live run's :class:`~judges.runner.RunConfig` of ``--concurrency``, ``--timeout``
    and ``--max-retries``."""
    return RunConfig(concurrency=args.concurrency, timeout=args.timeout,
                     max_retries=args.max_retries)


def load_for_scoring(args: argparse.Namespace) -> pd.DataFrame:
    """The four-stage file (read with ``--encoding``); rows with empty texts are reported
    (refused with ``--strict``)."""
    frame = load_fourstage(args.input, allow_empty_texts=not getattr(args, "strict", False),
                           encoding=input_encoding(args))
    empty = empty_texts(frame)
    if empty:
        cols = sorted({c for cs in empty.values() for c in cs})
        print(f"{len(empty):,} of {len(frame):,} rows have an empty {', '.join(cols)}: their "
              f"judgments are unscored ('{C.NO_ANSWER}'); --strict refuses such a file.",
              file=sys.stderr)
    return frame


def print_warnings(warnings: Sequence[str], *, already: Sequence[str] = ()) -> None:
    """Each warning on stderr, except those in ``already`` (printed before the run)."""
    for text in warnings:
        if text not in already:
            print(f"warning: {text}", file=sys.stderr)


def progress_line(p: JudgeProgress, elapsed: float | None = None, *, verb: str = "judged",
                  unscored: str = "unscored") -> str:
    """One progress line for stderr (a task's: ``verb`` "answered", ``unscored`` "without a
    result", no ``elapsed``)."""
    cost = f"${p.cost_usd:,.4f}" + (" + unpriced" if p.unpriced else "")
    line = (f"{p.done:,}/{p.total:,} {verb}, {p.unscored:,} {unscored}, {p.cached:,} cached, "
            f"{p.input_tokens + p.output_tokens:,} tokens, {cost}")
    return line if elapsed is None else f"{line}, {elapsed:,.0f}s"


async def reporting(work: Callable[[], Awaitable[Any]], cancel: threading.Event,
                    report: Callable[[], Iterable[str]] | None) -> Any:
    """Await ``work()`` with Ctrl-C / SIGTERM setting ``cancel`` and, every 2 s, the lines
    of ``report()`` (if given) on stderr."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # pragma: no cover - OS
            loop.add_signal_handler(sig, cancel.set)

    async def reporter() -> None:
        while True:
            await asyncio.sleep(2)
            for line in report():
                print(line, file=sys.stderr)

    task = None if report is None else asyncio.ensure_future(reporter())
    try:
        return await work()
    finally:
        if task is not None:
            task.cancel()


async def run_reporting(work: Callable[[], Awaitable[Any]], progress: JudgeProgress,
                        cancel: threading.Event, *, quiet: bool, start: float,
                        stats: RunStats | None = None) -> Any:
    """:func:`reporting` with, unless ``quiet``, a progress line every 2 s and each new long
    wait the server asked for (``stats.waiting``) as a ``note:`` line."""
    said = None

    def lines() -> Iterator[str]:
        nonlocal said
        yield progress_line(progress.snapshot(), time.monotonic() - start)
        if stats is not None and stats.waiting != said:
            said = stats.waiting
            yield f"note: {said}"

    return await reporting(work, cancel, None if quiet else lines)


def run_and_write(args: argparse.Namespace,
                  work: Callable[[ReplyCache | None, threading.Event], Awaitable[Any]],
                  progress: JudgeProgress, stats: RunStats | None = None) -> Any:
    """``work(cache, cancel)`` (a judge run) with the ``--cache`` reply cache, Ctrl-C and the
    progress lines of :func:`run_reporting`; its judged file written to ``--out`` and the
    final progress line on stderr. Returns the run."""
    cancel = threading.Event()
    with reply_cache(args) as cache:
        start = time.monotonic()
        result = asyncio.run(run_reporting(lambda: work(cache, cancel), progress, cancel,
                                           quiet=args.quiet, start=start, stats=stats))
    write_table(result.judged, args.out)
    print(progress_line(result.progress, time.monotonic() - start), file=sys.stderr)
    return result


def finish_run(judged: pd.DataFrame, stats: RunStats, cancelled: bool,
               args: argparse.Namespace, progress: JudgeProgress | None = None) -> int:
    """After a written run: ``--to-results``, then the exit code (stopped early: 3 for the
    cost cap, else 2; interrupted 130; failed requests, or nothing scored at all, 3; else
    0)."""
    if args.to_results:
        report_results(judged, args.to_results, args)
    print_position_bias(judged)
    if stats.stopped is not None:
        print(f"error: {stats.stopped}", file=sys.stderr)
        return EXIT_FAILED if stats.stopped.startswith("cost cap") else EXIT_INPUT
    if cancelled:
        print("Interrupted: the judgments made are saved; run again to finish.", file=sys.stderr)
        return EXIT_INTERRUPTED
    if progress is not None and progress.total and not progress.scored:
        print(f"error: none of the {progress.total:,} judgments was scored (the "
              "unscored_reason column says why for each).", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_FAILED if stats.errors else EXIT_OK


def report_results(judged: pd.DataFrame, path: Path, args: argparse.Namespace) -> None:
    """Write the results table and design of ``--to-results`` and say so on stderr."""
    table, design = write_results(judged, path, similarity_threshold=args.similarity_threshold,
                                  stage2_rows=args.stage2_rows)
    print(f"Wrote results table {table} and design {design}.", file=sys.stderr)
