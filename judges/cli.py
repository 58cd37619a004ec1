"""Command line: ``python -m judges`` (also installed as ``bias-judges``).

::

    python -m judges score IN --provider openai|anthropic|embedding --model M
        [--base-url URL] [--concurrency N] [--cache PATH | --no-cache] --out OUT
        [--samples K] [--both-orders] [--to-results RESULTS]
    python -m judges estimate IN --provider ... --model M [--samples K] [--both-orders]
    python -m judges metrics JUDGED [--out PATH] [--to-results RESULTS] [--json]

Every command that reads a table takes ``--encoding ENC`` (default utf-8) for a text file
without a byte-order mark; a mark names its own encoding and wins, as in
``python -m analysis`` (:func:`analysis.io.load_results`).

Several judges (:mod:`judges.cli_ensemble`): ``score``/``estimate`` with ``--judge
provider:model`` (repeatable) or ``--judges judges.yaml`` and ``--ensemble mean|median``;
``reliability JUDGED [JUDGED2 ...]`` (alpha, ICC, disagreements).

At scale (:mod:`judges.cli_scale`, ``docs/judges_at_scale.md``): ``score --batch``
(provider batch APIs), ``answer``, ``agreement``, ``categorise`` and ``batches``.

Keys come from ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``. Files are CSV, TSV, Parquet
or JSON Lines by extension. ``--to-results RESULTS`` also writes the long results table
and, next to it, ``<RESULTS stem>.design.yaml`` for the analysis commands and pages.

Exit codes: 0 done; 2 bad input or configuration (a message on stderr, as for
``python -m analysis`` and argparse); 3 some requests failed (their
judgments are unscored; rerun to retry them), or no judgment was scored at all; 130
interrupted (what was done is saved); 75 results still waiting in provider batches (run
the same command again later).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from analysis.cli import NON_NEGATIVE_INT, POSITIVE_FLOAT, POSITIVE_INT
from analysis.judge_stats import columns as C
from judges.cache import default_cache_path
from judges.cli_common import (
    EXIT_INPUT,
    EXIT_OK,
    add_encoding_option,
    check_input_encoding,
    finish_run,
    input_encoding,
    judge_config,
    load_for_scoring,
    parse_temperature,
    print_position_bias,
    print_warnings,
    reply_cache,
    report_results,
    run_and_write,
    run_config,
    write_table,
)
from judges.cost import PriceTable
from judges.errors import JudgesError
from judges.judge import (
    JudgeProgress,
    JudgeRun,
    estimate_run,
    judge_frame_async,
    n_judgments,
)
from judges.providers import REASONING_EFFORTS, ChatProvider, make_provider
from judges.rubric import load_rubrics
from judges.runner import RunStats

__all__ = ["EXIT_INPUT", "EXIT_OK", "build_parser", "check_output_paths", "main"]


def _add_judge_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="four-stage test file (CSV, TSV, Parquet, JSON Lines)")
    add_encoding_option(p)
    p.add_argument("--provider", default=None, choices=["openai", "anthropic", "embedding"],
                   help="the judge (or --judge provider:model, repeatable, for several)")
    p.add_argument("--model", default=None,
                   help="judge model (embedding: a local folder, a hub name or 'bundled')")
    p.add_argument("--base-url", default=None,
                   help="OpenAI-compatible or Anthropic endpoint (Ollama, vLLM, llama.cpp)")
    from judges import cli_ensemble  # here: cli_ensemble imports this module

    cli_ensemble.add_options(p)
    p.add_argument("--cache", type=Path, default=None,
                   help=f"SQLite reply cache (default {default_cache_path()})")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--prices", type=Path, default=None, help="price table (YAML)")
    p.add_argument("--rubrics", type=Path, default=None,
                   help="folder with rubric YAML files, or cot: the bundled chain-of-thought "
                        "variant (judges/rubrics/cot.yaml)")
    p.add_argument("--temperature", type=parse_temperature, default=0.0,
                   help="0 by default; 'none' sends none (reasoning models and Anthropic "
                        "take none: a warning names what is not sent)")
    p.add_argument("--max-tokens", type=POSITIVE_INT, default=None,
                   help="reply limit (default 400; 4000 for reasoning models)")
    p.add_argument("--no-structured-output", action="store_true",
                   help="do not ask for JSON through response_format/output_config")
    p.add_argument("--samples", type=POSITIVE_INT, default=1, metavar="K",
                   help="ask each (row, metric) K times (seeds 1..K-1 where the provider "
                        "takes one; use a temperature above 0): the judged file keeps the "
                        "mean and adds <metric>_sd, _n and _scores")
    p.add_argument("--both-orders", action="store_true",
                   help="judge each stage-2 story pair also with the stories swapped; the "
                        "score is the order-averaged one, the position-bias table is printed")
    p.add_argument("--logprobs", action="store_true",
                   help="also ask for token log-probabilities (top 20) and write the "
                        "probability-weighted score <metric>_expected (G-Eval); OpenAI and "
                        "compatible servers only: elsewhere a warning, sampled scores only")
    _add_real_use_options(p)


def _add_real_use_options(p: argparse.ArgumentParser) -> None:
    """Options of issue 18/20: reasoning, unparsed replies, partial files, caches."""
    p.add_argument("--reasoning-effort", choices=list(REASONING_EFFORTS), default=None,
                   help="reasoning models (o-series, gpt-5): effort sent with each request")
    p.add_argument("--reuse-unparsed", action="store_true",
                   help="reuse cached replies that cannot be parsed (default: ask again)")
    p.add_argument("--strict", action="store_true",
                   help="refuse a file with empty answers (default: judge the rest, mark "
                        "those rows 'no answer to judge')")
    p.add_argument("--reset-cache", action="store_true",
                   help="if the cache file is corrupt or foreign, move it aside and start a "
                        "new one")
    p.add_argument("--similarity-threshold", type=float, default=C.SIMILARITY_THRESHOLD,
                   help=f"embedding scorer: similarity below this deviates in --to-results "
                        f"(default {C.SIMILARITY_THRESHOLD}, calibrated on the bundled sample)")
    p.add_argument("--stage2-rows", choices=["pair", "metrics"], default="pair",
                   help="--to-results: one row per stage-2 story pair (default) or one per "
                        "metric")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m judges``."""
    parser = argparse.ArgumentParser(prog="python -m judges",
                                     description="LLM judges for four-stage bias tests.")
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score", help="judge a four-stage file")
    _add_judge_options(score)
    score.add_argument("--concurrency", type=POSITIVE_INT, default=8)
    score.add_argument("--timeout", type=POSITIVE_FLOAT, default=60.0, help="seconds per request")
    score.add_argument("--max-retries", type=NON_NEGATIVE_INT, default=5)
    score.add_argument("--out", type=Path, required=True, help="judged file to write")
    score.add_argument("--to-results", type=Path, default=None,
                       help="also write the results table (+ .design.yaml) for analysis")
    score.add_argument("--quiet", action="store_true", help="no progress lines")
    score.add_argument("--max-cost", type=float, default=None, metavar="USD",
                       help="stop before the run's spending could cross this; rerun to go on")
    from judges import cli_scale  # here, not at the top: cli_scale imports this module

    cli_scale.add_batch_options(score)
    estimate = sub.add_parser("estimate", help="calls, tokens and cost, without requests")
    _add_judge_options(estimate)
    estimate.add_argument("--batch", action="store_true", help="at the batch API's price")
    metrics = sub.add_parser("metrics", help="stage metrics of a judged file")
    metrics.add_argument("judged", help="judged file written by 'score'")
    add_encoding_option(metrics)
    metrics.add_argument("--by", default="stage,sensitive_factor,model",
                         help="grouping columns, comma-separated")
    metrics.add_argument("--out", type=Path, default=None, help="write the table here")
    metrics.add_argument("--to-results", type=Path, default=None,
                         help="write the results table (+ .design.yaml) for analysis")
    metrics.add_argument("--similarity-threshold", type=float, default=C.SIMILARITY_THRESHOLD,
                         help="embedding-scored rows: similarity below this deviates")
    metrics.add_argument("--stage2-rows", choices=["pair", "metrics"], default="pair",
                         help="one results row per stage-2 story pair (default) or per metric")
    metrics.add_argument("--json", action="store_true",
                         help="print {'metrics': [...], 'position_bias': [...]} as JSON "
                              "(position_bias only for a file judged in both orders)")
    cli_scale.register(sub)
    from judges import cli_ensemble

    cli_ensemble.register(sub)
    return parser


def _no_samples_for_embeddings(args: argparse.Namespace) -> None:
    if args.provider == "embedding" and (getattr(args, "samples", 1) > 1
                                         or getattr(args, "both_orders", False)):
        raise JudgesError("--samples and --both-orders are for the LLM judges: the "
                          "embedding scorer is deterministic and order-free.")


def _provider(args: argparse.Namespace) -> ChatProvider:
    if not args.model:
        raise JudgesError(f"--model is required for the {args.provider} provider.")
    return make_provider(args.provider, model=args.model, base_url=args.base_url)


def _score(args: argparse.Namespace) -> int:
    from judges import cli_ensemble

    specs = cli_ensemble.resolve(args)  # several judges, or one turned into --provider
    if specs:
        return cli_ensemble.score_multi(args, specs)
    if args.batch:
        from judges.cli_scale import score_batch

        return score_batch(args)
    _no_samples_for_embeddings(args)
    frame = load_for_scoring(args)
    if args.provider == "embedding":
        from analysis.embedding import EmbeddingScorer
        from judges.embedding import score_similarity

        judged = score_similarity(frame, EmbeddingScorer(args.model))
        write_table(judged, args.out)
        print(f"Wrote {args.out} ({len(judged):,} rows, cosine similarity).", file=sys.stderr)
        if args.to_results:
            report_results(judged, args.to_results, args)
        return EXIT_OK
    provider = _provider(args)
    config = judge_config(args)
    before = config.warnings(provider)
    print_warnings(before)
    rubrics = load_rubrics(args.rubrics)
    prices = PriceTable.load(args.prices)
    progress = JudgeProgress(total=n_judgments(frame, config))
    stats = RunStats()
    run_result: JudgeRun = run_and_write(args, lambda cache, cancel: judge_frame_async(
        frame, provider, rubrics=rubrics, config=config, run_config=run_config(args),
        cache=cache, prices=prices, cancel=cancel, progress=progress, stats=stats,
        max_cost_usd=args.max_cost), progress, stats)
    p = run_result.progress
    print(f"Wrote {args.out}: {p.scored:,} scored, {p.unscored:,} unscored; "
          f"{stats.http_attempts:,} requests ({stats.retries:,} retries), "
          f"{stats.cache_hits:,} from the cache ({stats.shared:,} shared with an identical "
          f"request), {stats.reasked:,} unparsed cached replies asked again.", file=sys.stderr)
    print_warnings(run_result.warnings, already=before)
    return finish_run(run_result.judged, stats, run_result.cancelled, args, p)


def _estimate(args: argparse.Namespace) -> int:
    from judges import cli_ensemble

    specs = cli_ensemble.resolve(args)
    if specs:
        return cli_ensemble.estimate_multi(args, specs)
    _no_samples_for_embeddings(args)
    frame = load_for_scoring(args)
    if args.provider == "embedding":
        print(f"{len(frame):,} rows: {len(frame):,} similarities, no requests, no cost.")
        return EXIT_OK
    provider = _provider(args)
    print_warnings(judge_config(args).warnings(provider))
    with reply_cache(args) as cache:
        est = estimate_run(frame, provider, rubrics=load_rubrics(args.rubrics),
                           config=judge_config(args), prices=PriceTable.load(args.prices),
                           cache=cache)
    if args.batch and est.cost_usd is not None:
        from dataclasses import replace

        from judges.batch import BATCH_DISCOUNT

        est = replace(est, cost_usd=est.cost_usd * BATCH_DISCOUNT)
    for quantity, value in est.to_frame().itertuples(index=False):
        print(f"{quantity + ':':<22}{value}")
    if args.logprobs and provider.logprobs_unavailable() is None:
        print(f"{'log-probabilities:':<22}asked (top 20 per token; no extra billed tokens)")
    if est.cost_usd is None:
        print(f"No price for {est.model!r} in section {est.price_section!r}: add it to the "
              "price table (--prices).", file=sys.stderr)
    return EXIT_OK


def _metrics(args: argparse.Namespace) -> int:
    from analysis import api
    from judges.cli_scale import read_table

    judged = read_table(args.judged, input_encoding(args))
    by = [c.strip() for c in args.by.split(",") if c.strip()]
    table = api.judge_stage_metrics(judged, by=by).table
    if args.out:
        write_table(table, args.out)
        print(f"Wrote {args.out}.", file=sys.stderr)
    if args.json:
        print(_metrics_json(table, judged))
    else:
        if not args.out:
            with pd.option_context("display.width", 200, "display.max_rows", 500):
                print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        print_position_bias(judged)
    if args.to_results:
        report_results(judged, args.to_results, args)
    unscored = int(table[C.N_UNSCORED].sum())
    if unscored:
        print(f"{unscored:,} judgments are unscored (see the unscored_reason column).",
              file=sys.stderr)
    return EXIT_OK


def _metrics_json(table: pd.DataFrame, judged: pd.DataFrame) -> str:
    """``{"metrics": records, "position_bias": records}`` (the second only for a file
    judged in both orders); NaN as ``null``."""
    import json

    from judges.position import has_both_orders, position_bias

    def records(frame: pd.DataFrame) -> list[dict]:
        return json.loads(frame.to_json(orient="records"))

    out: dict[str, object] = {"metrics": records(table)}
    if has_both_orders(judged):
        out["position_bias"] = records(position_bias(judged))
    return json.dumps(out, indent=2)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # bad option: argparse printed usage and the reason (exit 2)
        return int(exc.code or 0)
    handlers = {"score": _score, "estimate": _estimate, "metrics": _metrics}
    from analysis.errors import AnalysisError
    from judges.cli_ensemble import HANDLERS as ENSEMBLE_HANDLERS
    from judges.cli_scale import HANDLERS

    handlers.update(HANDLERS)
    handlers.update(ENSEMBLE_HANDLERS)

    try:
        check_input_encoding(args)
        check_output_paths(args)  # before any request is paid for
        return handlers[args.command](args)
    except (JudgesError, AnalysisError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except UnicodeDecodeError as exc:  # a settings file (prompts, prices...) that is not UTF-8
        print(f"error: a file given is not UTF-8 text: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:  # a missing or unreadable settings file: the path is in the message
        print(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "),
              file=sys.stderr)
        return EXIT_INPUT


def check_output_paths(args: argparse.Namespace) -> None:
    """Refuse ``--out`` / ``--to-results`` paths that cannot be written, before any request.

    A missing folder is created (as :func:`write_table` does); a folder in the file's
    place, or a parent that is a file, is an :class:`~analysis.errors.OutputError`.
    """
    from analysis.safe_write import check_output_path

    for option in ("out", "to_results"):
        value = getattr(args, option, None)
        if value:
            check_output_path(value, create_parent=True)
