"""Command line of the at-scale features (``docs/judges_at_scale.md``).

Registered into ``python -m judges`` by :mod:`judges.cli` (:func:`register`,
:data:`HANDLERS`, :func:`add_batch_options` on ``score``)::

    python -m judges score IN --provider openai|anthropic --model M --batch --out OUT
        [--poll-interval S] [--max-wait S] [--max-resubmits N]
    python -m judges answer QUESTIONS --provider ... --model M --out OUT [--prompt-col COL]
        [--temperature 0,0.7] [--seed 1,2] [--system-prompt none,careful]
        [--system-prompt-file PATH] [--max-tokens N] [--batch] [--estimate]
    python -m judges agreement FILE [--judge-col ics --human-col human_ics ...]
        [--other JUDGED2] [--ci bootstrap|analytic|none] [--n-boot N] [--out PATH] [--json]
    python -m judges agreement CATEGORISED --categorical [--judge-col category]
        [--human-col human_category] [--categories a,b,c] [--drop-unknown] [--out PATH]
    python -m judges categorise IN --text-col answer --provider ... --model M --out OUT
        [--categories woman,man,non-binary,unclassified | --categories-file YAML]
        [--instruction TEXT] [--context-col question] [--prefix category] [--by model]
    python -m judges batches [--collect] [--cancel BATCH_ID] [--cache PATH]

Exit codes as for ``score`` (0 done, 2 bad input, 3 some requests failed, 130
interrupted), plus 75 (``EX_TEMPFAIL``): results still waiting in provider batches; run
the same command again later to collect them (nothing is submitted twice).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.cli import (
    NON_NEGATIVE_FLOAT,
    NON_NEGATIVE_INT,
    POSITIVE_FLOAT,
    POSITIVE_INT,
    PROBABILITY,
)
from judges.batch import (
    BatchConfig,
    BatchMonitor,
    BatchStore,
    cancel_batch,
    judge_frame_batch_async,
    refresh_batches,
)
from judges.cache import ReplyCache, default_cache_path
from judges.cli_common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    add_encoding_option,
    input_encoding,
    judge_config,
    load_for_scoring,
    parse_temperature,
    print_position_bias,
    print_warnings,
    progress_line,
    reply_cache,
    report_results,
    reporting,
    run_config,
    write_table,
)
from judges.context import RunContext
from judges.cost import PriceTable
from judges.errors import JudgesError
from judges.providers import make_provider
from judges.runner import RunStats
from judges.tasks import TaskProgress

__all__ = [
    "EXIT_PENDING", "HANDLERS", "add_batch_options", "read_table", "register", "score_batch",
]


#: Results still waiting in a provider batch (run again later to collect them).
EXIT_PENDING = 75


# --- shared options ---------------------------------------------------------------------------
def add_batch_options(p: argparse.ArgumentParser) -> None:
    """``--batch`` and how batches are watched."""
    g = p.add_argument_group("batch API (half price, results within 24 h)")
    g.add_argument("--batch", action="store_true",
                   help="use the provider's batch API (OpenAI Batch, Anthropic Message Batches)")
    g.add_argument("--poll-interval", type=POSITIVE_FLOAT, default=30.0,
                   help="seconds between polls")
    g.add_argument("--max-wait", type=NON_NEGATIVE_FLOAT, default=None,
                   help="stop waiting after this many seconds (0: submit and exit); the batch "
                        "keeps running and the next run collects it")
    g.add_argument("--max-resubmits", type=NON_NEGATIVE_INT, default=1,
                   help="re-submit requests that failed transiently this many times")


def _add_provider_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--provider", required=True, choices=["openai", "anthropic"])
    p.add_argument("--model", required=True)
    p.add_argument("--base-url", default=None,
                   help="OpenAI-compatible or Anthropic endpoint (Ollama, vLLM, llama.cpp)")
    p.add_argument("--cache", type=Path, default=None,
                   help=f"SQLite reply cache (default {default_cache_path()})")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--prices", type=Path, default=None, help="price table (YAML)")
    p.add_argument("--concurrency", type=POSITIVE_INT, default=8)
    p.add_argument("--timeout", type=POSITIVE_FLOAT, default=60.0, help="seconds per request")
    p.add_argument("--max-retries", type=NON_NEGATIVE_INT, default=5)
    p.add_argument("--estimate", action="store_true",
                   help="print calls, tokens and cost, make no request")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    add_batch_options(p)


def _batch_config(args: argparse.Namespace) -> BatchConfig | None:
    if not getattr(args, "batch", False):
        return None
    return BatchConfig(poll_interval=args.poll_interval, max_wait=args.max_wait,
                       max_resubmits=args.max_resubmits)


@contextlib.contextmanager
def _open_cache(args: argparse.Namespace) -> Iterator[ReplyCache | None]:
    """The reply cache for a ``with`` block (:func:`~judges.cli_common.reply_cache`);
    ``--batch`` needs one."""
    if args.no_cache and getattr(args, "batch", False):
        raise JudgesError("--batch needs the reply cache (batch ids and results are kept "
                          "there): leave out --no-cache.")
    with reply_cache(args) as cache:
        yield cache


def read_table(path: str | Path, encoding: str = "utf-8") -> pd.DataFrame:
    """Read a CSV, TSV, Parquet or JSON Lines table (errors as :class:`JudgesError`);
    ``encoding`` is that of a text file without a byte-order mark (a mark wins)."""
    from analysis.errors import LoadError
    from analysis.io import load_results

    try:
        return load_results(path, encoding=encoding)
    except LoadError as exc:
        raise JudgesError(str(exc)) from None


def _numbers(text: str, kind: Callable[[str], Any], option: str) -> list[Any]:
    """``"1, 2"`` -> ``[kind("1"), kind("2")]``; a bad item is a :class:`JudgesError`."""
    out = []
    for item in (t.strip() for t in str(text).split(",")):
        if not item:
            continue
        try:
            out.append(kind(item))
        except (ValueError, argparse.ArgumentTypeError) as exc:
            raise JudgesError(f"{option}: {item!r} is not valid ({exc}).") from None
    return out


def _seed(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("a seed is a whole number >= 0")
    return value


def _run(coro_factory: Callable[[threading.Event], Coroutine[Any, Any, Any]],
         report: Callable[[], str] | None) -> Any:
    """Run a coroutine with Ctrl-C / SIGTERM setting ``cancel`` and a progress reporter."""
    cancel = threading.Event()
    return asyncio.run(reporting(lambda: coro_factory(cancel), cancel,
                                 None if report is None else lambda: [report()]))


def _context(args: argparse.Namespace, cache: ReplyCache | None, progress: Any) -> RunContext:
    """The run context of a task command (``--batch``, retries, prices) with ``progress``."""
    return RunContext(cache=cache, run_config=run_config(args), batch=_batch_config(args),
                      prices=PriceTable.load(args.prices), progress=progress)


def _exit_code(stats: RunStats, monitor: BatchMonitor, cancelled: bool) -> int:
    if monitor.pending:
        print(f"{monitor.pending:,} results are still waiting in provider batches: run the "
              "same command again later to collect them.", file=sys.stderr)
        return EXIT_PENDING
    if cancelled:
        print("Interrupted: what was done is saved; run again to finish.", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_FAILED if stats.errors else EXIT_OK


def _print_estimate(estimate: Any) -> int:
    print(estimate.to_frame().to_string(index=False, header=False))
    if estimate.cost_usd is None:
        print("No price for this model: add it to the price table (--prices).", file=sys.stderr)
    return EXIT_OK


# --- score --batch ------------------------------------------------------------------------------
def score_batch(args: argparse.Namespace) -> int:
    """``score --batch``: judge a four-stage file through the provider's batch API."""
    from judges.judge import JudgeProgress, n_judgments
    from judges.rubric import load_rubrics

    if args.provider == "embedding":
        raise JudgesError("--batch is for the openai and anthropic judges.")
    if not args.model:
        raise JudgesError(f"--model is required for the {args.provider} provider.")
    frame = load_for_scoring(args)
    provider = make_provider(args.provider, model=args.model, base_url=args.base_url)
    before = judge_config(args).warnings(provider)
    print_warnings(before)
    with _open_cache(args) as cache:
        assert cache is not None
        if args.max_cost is not None:
            from judges.judge import check_batch_cap

            check_batch_cap(frame, provider, max_cost_usd=args.max_cost,
                            config=judge_config(args), prices=PriceTable.load(args.prices),
                            cache=cache, rubrics=load_rubrics(args.rubrics))
        progress = JudgeProgress(total=n_judgments(frame, judge_config(args)))
        context = _context(args, cache, progress)
        stats, monitor = context.stats, context.monitor
        start = time.monotonic()
        run = _run(lambda cancel: judge_frame_batch_async(
            frame, provider, rubrics=load_rubrics(args.rubrics), config=judge_config(args),
            context=replace(context, cancel=cancel)),
            None if args.quiet else lambda: monitor.snapshot().summary())
    write_table(run.judged, args.out)
    p = run.progress
    print(progress_line(p, time.monotonic() - start), file=sys.stderr)
    print(f"Wrote {args.out}: {p.scored:,} scored, {p.unscored:,} unscored; "
          f"{monitor.summary()}.", file=sys.stderr)
    print_warnings(run.warnings, already=before)
    if args.to_results:
        report_results(run.judged, args.to_results, args)
    print_position_bias(run.judged)
    return _exit_code(stats, monitor, stats.cancelled > 0)


# --- answer -----------------------------------------------------------------------------------
def _answer(args: argparse.Namespace) -> int:
    from judges.answer import (
        ANSWER_ISSUES,
        answer_frame_async,
        estimate_answers,
        load_answer_prompts,
        n_answer_requests,
        prompt_column_of,
        question_items,
        settings_grid,
        system_prompt,
    )

    frame = read_table(args.input, input_encoding(args))
    prompt_column = prompt_column_of(frame, args.prompt_col)
    prompts = load_answer_prompts(args.prompts)
    systems = [system_prompt(prompts, name) for name in args.system_prompt.split(",")
               if name.strip()]
    if args.system_prompt_file:
        text = _read_text_file(Path(args.system_prompt_file), "--system-prompt-file")
        systems = [system_prompt(prompts, text=text)]
    settings = settings_grid(
        temperatures=_numbers(args.temperature, parse_temperature, "--temperature") or [None],
        seeds=_numbers(args.seed, _seed, "--seed") or [None],
        system_prompts=systems or [("none", "")], max_tokens=args.max_tokens)
    provider = make_provider(args.provider, model=args.model, base_url=args.base_url)
    print_warnings(dict.fromkeys(w for s in settings for w in provider.param_warnings(s.params())))
    with _open_cache(args) as cache:
        if args.estimate:
            return _print_estimate(estimate_answers(
                frame, provider, settings=settings, prompts=prompts,
                prices=PriceTable.load(args.prices), cache=cache, batch=args.batch,
                prompt_column=prompt_column))
        progress = TaskProgress(total=n_answer_requests(
            question_items(frame, prompt_column), len(settings), prompt_column))
        context = _context(args, cache, progress)
        stats, monitor = context.stats, context.monitor
        run = _run(lambda cancel: answer_frame_async(
            frame, provider, settings=settings, prompts=prompts, prompt_column=prompt_column,
            context=replace(context, cancel=cancel)),
            None if args.quiet else lambda: _task_line(progress, "answered"))
    write_table(run.answered, args.out)
    issues = int((run.answered[ANSWER_ISSUES] != "").sum())
    print(f"Wrote {args.out}: {len(run.answered):,} rows ({len(settings)} setting(s)), "
          f"{_task_line(run.progress, 'answered')}; {issues:,} rows with issues "
          f"(see {ANSWER_ISSUES}).", file=sys.stderr)
    return _exit_code(stats, monitor, run.cancelled)


def _read_text_file(path: Path, option: str) -> str:
    """A small UTF-8 text file given on the command line (errors as :class:`JudgesError`)."""
    from analysis.errors import AnalysisError
    from analysis.io import check_regular_file

    try:
        check_regular_file(path)
        return path.read_text(encoding="utf-8")
    except AnalysisError as exc:
        raise JudgesError(f"{option}: {exc}") from None
    except UnicodeDecodeError:
        raise JudgesError(f"{option}: {path} is not UTF-8 text.") from None
    except OSError as exc:
        raise JudgesError(f"{option}: {path} cannot be read: {exc.strerror or exc}.") from None


def _task_line(progress: Any, verb: str) -> str:
    return progress_line(progress.snapshot(), verb=verb, unscored="without a result")


# --- categorise --------------------------------------------------------------------------------
def _categorise(args: argparse.Namespace) -> int:
    from judges.categorise import (
        CategoriseConfig,
        categorise_frame_async,
        category_counts,
        category_spec,
        estimate_categorise,
        load_category_spec,
        n_categorise_requests,
    )

    frame = read_table(args.input, input_encoding(args))
    if args.categories:
        spec = category_spec(args.categories, instruction=args.instruction)
    else:
        spec = load_category_spec(args.categories_file)
    config = CategoriseConfig(temperature=args.temperature, max_tokens=args.max_tokens,
                              structured_output=not args.no_structured_output)
    provider = make_provider(args.provider, model=args.model, base_url=args.base_url)
    kwargs = {"text_column": args.text_col, "context_column": args.context_col}
    with _open_cache(args) as cache:
        if args.estimate:
            return _print_estimate(estimate_categorise(
                frame, provider, spec, config=config, prices=PriceTable.load(args.prices),
                cache=cache, batch=args.batch, **kwargs))
        progress = TaskProgress(total=n_categorise_requests(frame, args.text_col))
        context = _context(args, cache, progress)
        stats, monitor = context.stats, context.monitor
        run = _run(lambda cancel: categorise_frame_async(
            frame, provider, spec, prefix=args.prefix, config=config,
            context=replace(context, cancel=cancel), **kwargs),
            None if args.quiet else lambda: _task_line(progress, "classified"))
    write_table(run.categorised, args.out)
    print(f"Wrote {args.out}: {_task_line(run.progress, 'classified')}.", file=sys.stderr)
    by = [c.strip() for c in (args.by or "").split(",") if c.strip()]
    counts = category_counts(run.categorised, prefix=args.prefix, by=by)
    print(counts.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return _exit_code(stats, monitor, run.cancelled)


# --- agreement ---------------------------------------------------------------------------------
def _print_json(payload: dict) -> None:
    """``--json`` of ``agreement``: tables as lists of records (NaN as null)."""
    import json

    from judges.cli_ensemble import json_records

    print(json.dumps({k: json_records(v) if isinstance(v, pd.DataFrame) else v
                      for k, v in payload.items()}, indent=1))


def _category_agreement(args: argparse.Namespace, frame: pd.DataFrame) -> int:
    from analysis.judge_stats.category_agreement import category_agreement

    if len(args.judge_col) > 1 or len(args.human_col) > 1:
        raise JudgesError("--categorical compares one pair: give --judge-col and --human-col "
                          "at most once.")
    categories = [c.strip() for c in (args.categories or "").split(",") if c.strip()]
    result = category_agreement(
        frame, (args.judge_col or ["category"])[0], (args.human_col or [None])[0],
        categories=categories or None, unknown="drop" if args.drop_unknown else "error",
        ci=args.ci, n_resamples=args.n_boot, confidence=args.confidence, seed=args.seed)
    if args.out:
        write_table(result.table, args.out)
        confusion = args.out.with_name(f"{args.out.stem}.confusion.csv")
        from analysis.safe_write import write_csv

        # atomic; row and column labels neutralised against formulas
        write_csv(result.confusion, confusion, create_parent=True, index=True)
        print(f"Wrote {args.out} and {confusion}.", file=sys.stderr)
    if args.json:
        _print_json({"agreement": result.table, "confusion": {
            "labels": [str(v) for v in result.confusion.index],
            "columns": [str(v) for v in result.confusion.columns],
            "counts": result.confusion.to_numpy().tolist()}})
    elif not args.out:
        with pd.option_context("display.width", 250, "display.max_columns", 50):
            print(result.table.drop(columns=["ci_method"]).to_string(
                index=False, float_format=lambda x: f"{x:.3f}", na_rep=""))
            print()
            print(result.confusion.to_string())
    return EXIT_OK


def _agreement(args: argparse.Namespace) -> int:
    from analysis import api
    from analysis.judge_stats.agreement import merge_judged

    frame = read_table(args.input, input_encoding(args))
    if args.categorical:
        return _category_agreement(args, frame)
    pairs: list[tuple[str, str]] | None = None
    if args.other:
        frame, pairs = merge_judged(frame, read_table(args.other, input_encoding(args)))
    if args.judge_col or args.human_col:
        if len(args.judge_col) != len(args.human_col):
            raise JudgesError("Give --judge-col and --human-col the same number of times "
                              "(they are paired in order).")
        pairs = list(zip(args.judge_col, args.human_col, strict=True))
    table = api.judge_agreement(frame, pairs, by_stage=not args.no_stages, ci=args.ci,
                                n_resamples=args.n_boot, confidence=args.confidence,
                                seed=args.seed).table
    if args.out:
        write_table(table, args.out)
        print(f"Wrote {args.out}.", file=sys.stderr)
    if args.json:
        _print_json({"agreement": table})
    elif not args.out:
        shown = [c for c in table.columns if not c.endswith("_p") and c != "ci_method"]
        with pd.option_context("display.width", 250, "display.max_columns", 50):
            print(table[shown].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return EXIT_OK


# --- batches -------------------------------------------------------------------------------------
def _batches(args: argparse.Namespace) -> int:
    path = args.cache or default_cache_path()
    with ReplyCache(path) as cache, BatchStore(path) as store:
        if args.cancel:
            stored = store.get(args.cancel)
            if stored is None:
                raise JudgesError(f"No stored batch {args.cancel!r} in {path}.")
            status = asyncio.run(cancel_batch(store, _stored_provider(stored), stored.batch_id))
            print(f"{status.batch_id}: {status.status}", file=sys.stderr)
        if args.collect:
            statuses = asyncio.run(refresh_batches(store, cache, _stored_provider,
                                                   config=BatchConfig()))
            ended = sum(s.ended for s in statuses)
            print(f"Looked at {len(statuses)} open batch(es); {ended} ended and collected "
                  "into the cache (run the same command again to use them).", file=sys.stderr)
        table = store.table(open_only=not args.all)
    if table.empty:
        print("No open batches." if not args.all else "No batches.")
    else:
        with pd.option_context("display.width", 250, "display.max_columns", 20):
            print(table.drop(columns=["message"]).to_string(index=False))
    return EXIT_OK


def _stored_provider(stored: Any):
    return make_provider(stored.api, model=stored.model, base_url=stored.endpoint)


# --- parser ------------------------------------------------------------------------------------
def register(sub: argparse._SubParsersAction) -> None:
    """Add ``answer``, ``agreement``, ``categorise`` and ``batches`` (see :data:`HANDLERS`)."""
    answer = sub.add_parser("answer", help="fill the answers of a four-stage question file by "
                                           "asking the model under test")
    add_encoding_option(answer)
    answer.add_argument("input", help="four-stage question file, or a plain list of prompts "
                                      "(CSV, TSV, Parquet, JSON Lines)")
    answer.add_argument("--prompt-col", default=None,
                        help="read the file as a plain list of prompts from this text column "
                             "(default: a file without 'stage' uses its 'prompt' column)")
    _add_provider_options(answer)
    answer.add_argument("--temperature", default="",
                        help="comma-separated temperatures (one run each; default: none sent)")
    answer.add_argument("--seed", default="", help="comma-separated seeds (OpenAI only)")
    answer.add_argument("--system-prompt", default="none",
                        help="comma-separated names from the prompt file (none, assistant, "
                             "careful)")
    answer.add_argument("--system-prompt-file", type=Path, default=None,
                        help="your own system prompt (id custom-<hash>)")
    answer.add_argument("--max-tokens", type=POSITIVE_INT, default=1024)
    answer.add_argument("--prompts", type=Path, default=None, help="answer-prompt YAML file")
    answer.add_argument("--out", type=Path, required=True)

    agree = sub.add_parser("agreement", help="agreement of judge scores with human labels")
    add_encoding_option(agree)
    agree.add_argument("input", help="judged file with human label columns (human_<metric>)")
    agree.add_argument("--judge-col", action="append", default=[],
                       help="judge score column (repeat; paired with --human-col)")
    agree.add_argument("--human-col", action="append", default=[],
                       help="human label (or second judge) column")
    agree.add_argument("--other", type=Path, default=None,
                       help="a second judged file: agreement between the two judges")
    agree.add_argument("--ci", choices=["bootstrap", "analytic", "none"], default="bootstrap")
    agree.add_argument("--n-boot", type=POSITIVE_INT, default=1000)
    agree.add_argument("--confidence", type=PROBABILITY, default=0.95)
    agree.add_argument("--seed", type=NON_NEGATIVE_INT, default=0, help="bootstrap seed")
    agree.add_argument("--no-stages", action="store_true", help="no per-stage rows")
    agree.add_argument("--categorical", action="store_true",
                       help="compare categories (categorise output, default column category) "
                            "with human labels: Cohen's kappa, confusion matrix, precision "
                            "and recall per category")
    agree.add_argument("--categories", default=None,
                       help="with --categorical: the category list, comma-separated")
    agree.add_argument("--drop-unknown", action="store_true",
                       help="with --categorical: leave out rows whose label is not a category "
                            "(default: an error naming them)")
    agree.add_argument("--out", type=Path, default=None)
    agree.add_argument("--json", action="store_true",
                       help="print JSON ({agreement: [rows]}, with --categorical also "
                            "{confusion: {labels, columns, counts}}) instead of a table")

    cat = sub.add_parser("categorise", help="put each completion into one of your categories")
    add_encoding_option(cat)
    cat.add_argument("input", help="any table with a text column")
    cat.add_argument("--text-col", required=True, help="the column to classify")
    cat.add_argument("--context-col", default=None, help="shown as the request (optional)")
    cat.add_argument("--categories", default=None,
                     help="comma-separated names, e.g. woman,man,non-binary,unclassified")
    cat.add_argument("--categories-file", type=Path, default=None,
                     help="YAML with instruction and categories (default: bundled gender list)")
    cat.add_argument("--instruction", default=None, help="what to decide (with --categories)")
    cat.add_argument("--prefix", default="category", help="output column prefix")
    cat.add_argument("--by", default="", help="grouping columns of the printed counts")
    _add_provider_options(cat)
    cat.add_argument("--temperature", type=parse_temperature, default=0.0)
    cat.add_argument("--max-tokens", type=POSITIVE_INT, default=300)
    cat.add_argument("--no-structured-output", action="store_true")
    cat.add_argument("--out", type=Path, required=True)

    batches = sub.add_parser("batches", help="list, collect or cancel stored provider batches")
    batches.add_argument("--cache", type=Path, default=None,
                         help=f"cache file holding the batches (default {default_cache_path()})")
    batches.add_argument("--collect", action="store_true",
                         help="poll open batches once and collect the ended ones into the cache")
    batches.add_argument("--cancel", default=None, metavar="BATCH_ID")
    batches.add_argument("--all", action="store_true", help="also list collected batches")


#: The subcommands :func:`register` adds, and their handlers (``args -> exit code``).
HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "answer": _answer, "agreement": _agreement, "categorise": _categorise, "batches": _batches}
