"""``prepare IN --recipe RECIPE --out OUT``: apply Prepare steps (analysis.prepare)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("prepare",
           "apply recipe steps (melt, match, recode, threshold, filter) to a "
           "results file")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import command_parser

    p = command_parser(sub, SUMMARY)
    p.add_argument("--recipe", required=True,
                   help="YAML/JSON: a list of steps, or a design file with a 'recipe'")
    p.add_argument("--out", required=True, help="the prepared table: .csv, .csv.gz or .parquet")
    p.add_argument("--json", action="store_true", help="print the step report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis.cli import emit
    from analysis.io import load_results
    from analysis.prepare import apply_recipe, load_recipe
    from analysis.safe_write import table_writer, write_files

    recipe = load_recipe(args.recipe)
    frame = load_results(args.file, sep=args.sep, encoding=args.encoding)
    table, report = apply_recipe(frame, recipe)
    write_files({args.out: table_writer(table, args.out)})
    if args.json:
        args.out_written, args.out = args.out, None  # emit must not write the report there
        emit(args, {"rows": len(table), "out": args.out_written, "steps": report})
        return
    import pandas as pd

    with pd.option_context("display.max_columns", 10, "display.width", 160,
                           "display.max_colwidth", 70):
        print(report.to_string(index=False))
    print(f"\n{len(table):,} rows -> {args.out}")
