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


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_input, add_output_options

    p = sub.add_parser("index-published",
                       help="LLMBI as published: 0.2 + 2.5 |polarity| per response, aggregated")
    add_input(p)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--polarity", help="numeric polarity column in [-1, 1]")
    src.add_argument("--text-col", help="score this text column first (see --lexicon)")
    p.add_argument("--lexicon", choices=["textblob", "vader"], default="textblob",
                   help="with --text-col: TextBlob polarity (the paper's) or VADER compound")
    p.add_argument("--by", default="", help="comma-separated columns: one index per group")
    p.add_argument("--dimension", help="column naming each response's bias dimension")
    p.add_argument("--weights", action="append", default=[], metavar="VALUE=W",
                   help="weight of a dimension value (repeatable; default 1)")
    p.add_argument("--penalty", type=float, default=0.2, help="diversity penalty (paper: 0.2)")
    p.add_argument("--lambda", dest="scale", type=float, default=1.5,
                   help="scale of the sentiment term (paper: 1.5)")
    p.add_argument("--responses", action="store_true", help="also print per-response scores")
    add_output_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis.cli import emit, split_list
    from analysis.design import parse_assignments
    from analysis.errors import AnalysisError
    from analysis.features import POLARITY_TEXTBLOB, SENTIMENT_VADER, extract_features
    from analysis.index_published import PUBLISHED, published_llmbi
    from analysis.io import load_results

    frame = load_results(args.file, sep=args.sep, encoding=args.encoding)
    polarity = args.polarity
    if args.text_col:
        polarity = POLARITY_TEXTBLOB if args.lexicon == "textblob" else SENTIMENT_VADER
        frame, _ = extract_features(frame, args.text_col, [polarity])
    weights = {}
    for key, value in parse_assignments(args.weights, "--weights").items():
        try:
            weights[key] = float(value)
        except ValueError:
            raise AnalysisError(f"--weights {key}={value}: the weight must be a number.") from None
    index = published_llmbi(frame, polarity=polarity, by=split_list(args.by),
                            dimension=args.dimension, weights=weights,
                            diversity_penalty=args.penalty, scale=args.scale)
    payload = {"variant": PUBLISHED, "lexicon": index.lexicon, "totals": index.totals}
    if args.responses:
        payload["responses"] = index.responses
    emit(args, payload, index.totals)
    if not args.json:
        print(f"\nLLMBI as published; polarity: {index.lexicon}.")
