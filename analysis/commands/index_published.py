"""``index-published FILE --polarity COL``: LLMBI as its paper computes it.

Per response ``0.2 + 2.5 * |polarity|`` (the paper's constants; ``--penalty`` and
``--lambda`` change them), aggregated per ``--by`` group with optional ``--dimension`` and
``--weights`` (:mod:`analysis.index_published`, ``docs/bias_index.md``). ``--text-col``
scores the texts first (TextBlob polarity, the paper's lexicon, or ``--lexicon vader``).
``--json`` prints ``variant``, ``lexicon``, ``totals`` and, with ``--responses``,
the per-response scores. The composite index of this app is ``analysis index``.
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("index-published", "LLMBI as published: 0.2 + 2.5 |polarity| per response, aggregated")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_output_options, command_parser
    from analysis.options.index_published import IndexPublishedOptions

    p = command_parser(sub, SUMMARY)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--polarity", help="numeric polarity column in [-1, 1]")
    src.add_argument("--text-col", help="score this text column first (see --lexicon)")
    p.add_argument("--by", default="", help="comma-separated columns: one index per group")
    p.add_argument("--dimension", help="column naming each response's bias dimension")
    p.add_argument("--weights", action="append", default=[], metavar="VALUE=W",
                   help="weight of a dimension value (repeatable; default 1)")
    IndexPublishedOptions.add_arguments(p)  # the paper's constants etc., written once
    add_output_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis import api as bw
    from analysis.cli import emit, split_list
    from analysis.design import parse_assignments
    from analysis.errors import AnalysisError
    from analysis.index_published import PUBLISHED
    from analysis.io import load_results
    from analysis.options.index_published import IndexPublishedOptions

    options = IndexPublishedOptions.from_args(args)
    weights = {}
    for key, value in parse_assignments(args.weights, "--weights").items():
        try:
            weights[key] = float(value)
        except ValueError:
            raise AnalysisError(f"--weights {key}={value}: the weight must be a number.") from None
    index = bw.index_published(load_results(args.file, sep=args.sep, encoding=args.encoding),
                               polarity=args.polarity, text_column=args.text_col,
                               by=split_list(args.by), dimension=args.dimension,
                               weights=weights, options=options).raw
    payload = {"variant": PUBLISHED, "lexicon": index.lexicon, "totals": index.totals}
    if options.responses:
        payload["responses"] = index.responses
    emit(args, payload, index.totals)
    if not args.json:
        print(f"\nLLMBI as published; polarity: {index.lexicon}.")
