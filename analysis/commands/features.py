"""``features IN --text-col COL --features a,b --out OUT``: numeric text features.

Adds one numeric column per feature (``sentiment_vader``, ``polarity_textblob``,
``subjectivity_textblob``, ``embedding_similarity``; see :mod:`analysis.features` and
``docs/features.md``) and writes the table to ``OUT`` (all or nothing). ``--json`` prints
``rows``, ``out`` and ``features`` (the per-feature report: available, n_scored, reason).
A feature whose package is missing exits 2 naming the package, unless
``--skip-unavailable`` (then it is listed with the reason and left out).
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("features",
           "numeric text features (VADER sentiment, TextBlob "
           "polarity/subjectivity, embedding similarity), offline")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import command_parser
    from analysis.options.features import FeaturesOptions

    p = command_parser(sub, SUMMARY)
    p.add_argument("--text-col", required=True, help="column holding the response texts")
    ref = p.add_mutually_exclusive_group()
    ref.add_argument("--reference-col", help="embedding_similarity: compare with this column")
    ref.add_argument("--reference-text", help="embedding_similarity: compare with this text")
    FeaturesOptions.add_arguments(p)  # every option of the extraction, written once
    p.add_argument("--out", required=True, help="the table with features: .csv, .csv.gz, "
                                                ".parquet")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis import api as bw
    from analysis.cli import emit
    from analysis.io import load_results
    from analysis.options.features import FeaturesOptions
    from analysis.safe_write import table_writer, write_files

    result = bw.features(load_results(args.file, sep=args.sep, encoding=args.encoding),
                         text_column=args.text_col, reference_column=args.reference_col,
                         reference_text=args.reference_text,
                         options=FeaturesOptions.from_args(args))
    table, report = result.tables["data"], result.table
    write_files({args.out: table_writer(table, args.out)})
    if args.json:
        args.out_written, args.out = args.out, None
        emit(args, {"rows": len(table), "out": args.out_written, "features": report})
        return
    print(report.to_string(index=False))
    print(f"\n{len(table):,} rows -> {args.out}")
