"""``native-scores FILE --design D [--by COL [--reference A]]``: the benchmark's own
scores (BBQ's s_DIS / s_AMB per category and subcategory, CrowS-Pairs' pct_stereotype
per bias type, the rate metrics of lm-eval's bias tasks) with cluster-bootstrap
intervals; with ``--by``, their paired deltas between the values of that column
(``docs/native_scores.md``). ``--json`` prints ``{"scores": [...], "notes": [...],
"settings": {...}}``.
"""

from __future__ import annotations

import argparse

__all__ = ["add_native_options", "register", "run", "run_deltas"]


def add_native_options(p: argparse.ArgumentParser) -> None:
    """The bootstrap options of the native scores and the adjustment of their paired
    deltas (also ``compare --native-scores``)."""
    from analysis import cli as cli_types
    from analysis.multiple_testing import METHODS, methods_text
    from analysis.native_scores import DELTA_ADJUST

    p.add_argument("--native-resamples", type=cli_types.int_at_least(20), default=1000,
                   metavar="N", help="bootstrap resamples of the native scores (default 1000)")
    p.add_argument("--native-confidence", type=cli_types.PROBABILITY, default=0.95,
                   metavar="C", help="interval level of the native scores (default 0.95)")
    p.add_argument("--native-adjust", choices=METHODS, default=DELTA_ADJUST,
                   help="with --by: adjust the p-values of a pair's deltas together: "
                        + methods_text(("holm", *(m for m in METHODS if m != "holm")),
                                       default=DELTA_ADJUST))


SUMMARY = ("native-scores",
           "the benchmark's own scores (s_DIS, s_AMB, pct_stereotype ...) with "
           "cluster intervals")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_output_options

    p = sub.add_parser(SUMMARY[0], help=SUMMARY[1],
                       description=__doc__.split("\n\n")[0])
    p.add_argument("file", help="results table: .csv, .parquet ... (.gz ok)")
    p.add_argument("--design", help="the design file (its cluster and prompt unit)")
    p.add_argument("--by", help="paired deltas between the values of this column")
    p.add_argument("--reference", dest="by_reference", metavar="VALUE",
                   help="with --by: every value against this one (default: every pair)")
    p.add_argument("--cluster", help="the column resampled as clusters (default: the "
                                     "design's, else template_id / category x question_index "
                                     "/ doc_id)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    add_native_options(p)
    add_output_options(p)
    p.set_defaults(func=run)


def _emit(args: argparse.Namespace, result) -> None:  # noqa: ANN001 - an api.Result
    from analysis.cli import emit

    emit(args, {"scores": result.table, "notes": list(result.notes),
                "settings": dict(result.settings)}, result.table.drop(columns="interval"))
    if not args.json:
        print()
        print(result.table["interval"].iloc[0] if len(result.table) else "")
        print("\n".join(result.notes))


def run(args: argparse.Namespace) -> None:
    from analysis import api
    from analysis.options import FROM_DESIGN

    kw = {"cluster": args.cluster or FROM_DESIGN, "n_resamples": args.native_resamples,
          "confidence": args.native_confidence, "seed": args.seed}
    if args.by:
        result = api.native_deltas(args.file, args.design, by=args.by,
                                   reference=args.by_reference, adjust=args.native_adjust,
                                   **kw)
    else:
        result = api.native_scores(args.file, args.design, **kw)
    _emit(args, result)


def run_deltas(args: argparse.Namespace, results, design) -> None:  # noqa: ANN001
    """``compare --native-scores``: the paired deltas of the native scores between the
    values of ``--by`` (the compare's rows and design)."""
    from analysis import api

    result = api.native_deltas(results, design, by=args.by,
                                      reference=args.by_reference,
                                      unit=getattr(args, "unit", None),
                                      n_resamples=args.native_resamples,
                                      confidence=args.native_confidence,
                                      seed=getattr(args, "seed", 0) or 0,
                                      adjust=args.native_adjust)
    _emit(args, result)
