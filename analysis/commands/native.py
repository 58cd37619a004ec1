"""``native-scores FILE --design D [--by COL [--reference A]] [--where F=V]``: the benchmark's own
scores (BBQ's s_DIS / s_AMB per category and subcategory, CrowS-Pairs' pct_stereotype
per bias type, the rate metrics of lm-eval's bias tasks) with cluster-bootstrap
intervals; with ``--by``, their paired deltas between the values of that column
(``docs/native_scores.md``). ``--json`` prints ``{"scores": [...], "notes": [...],
"settings": {...}}``.
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run", "run_deltas"]


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
    p.add_argument("--where", action="append", default=[], metavar="FACTOR=VALUE",
                   help="keep only rows with this value (repeatable; VALUE may be a,b)")
    from analysis.options.native import NativeDeltasOptions

    NativeDeltasOptions.add_arguments(p)
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
    from analysis.cli import split_list
    from analysis.design import parse_assignments
    from analysis.options.native import NativeDeltasOptions, NativeOptions

    where = {k: split_list(v) for k, v in parse_assignments(args.where, "--where").items()}
    if args.by:
        result = api.native_deltas(args.file, args.design, by=args.by,
                                   reference=args.by_reference, where=where or None,
                                   options=NativeDeltasOptions.from_args(args))
    else:
        result = api.native_scores(args.file, args.design, where=where or None,
                                   options=NativeOptions.from_args(args))
    _emit(args, result)


def run_deltas(args: argparse.Namespace, results, design) -> None:  # noqa: ANN001
    """``compare --native-scores``: the paired deltas of the native scores between the
    values of ``--by`` (the compare's rows and design, its ``--cluster`` and ``--seed``)."""
    from analysis import api
    from analysis.options.native import NativeDeltasOptions

    result = api.native_deltas(results, design, by=args.by, reference=args.by_reference,
                               unit=getattr(args, "unit", None),
                               options=NativeDeltasOptions.from_args(args))
    _emit(args, result)
