"""``import SOURCE PATH... --out OUT``: a raw benchmark file or harness log -> a results table.

Runs an importer of :mod:`analysis.importers` (``bbq``, ``lm-eval``, ``inspect``,
``wide``), writes the table (CSV or Parquet), optionally the suggested design and, for
BBQ, the bias scores; prints the row accounting and the importer's notes. All outputs
are written to temporary files first and renamed together, so a failure leaves nothing
half-written.
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.importers import SOURCES

    p = sub.add_parser("import", help="import a raw benchmark file or an evaluation log",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("source", choices=list(SOURCES), help="the file's format")
    p.add_argument("paths", nargs="+", metavar="PATH", help="input file(s)")
    p.add_argument("--out", required=True, help="the results table: .csv, .csv.gz or .parquet")
    p.add_argument("--design-out", metavar="DESIGN",
                   help="also write the suggested design (.yaml or .json)")
    p.add_argument("--model", help="model name (bbq: for every prediction column)")
    p.add_argument("--prediction-col", action="append", default=[], metavar="COL",
                   help="a prediction column (repeatable; default: the importer's pattern)")
    p.add_argument("--scores-out", metavar="SCORES",
                   help="write the native scores with their cluster-bootstrap intervals "
                        "(BBQ: s_DIS, s_AMB per category x model x format; other bias "
                        "tasks: their metrics) to this CSV")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a further importer option (repeatable; see docs/import_<source>.md)")
    p.add_argument("--json", action="store_true", help="print counts and notes as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis.cli import emit
    from analysis.design import parse_assignments
    from analysis.errors import AnalysisError
    from analysis.importers import import_results
    from analysis.safe_write import table_writer, write_files

    options = dict(parse_assignments(args.option, "--option"))
    if args.model:
        options["model"] = args.model
    if args.prediction_col:
        options["prediction_cols"] = list(args.prediction_col)
    result = import_results(args.source, args.paths, **options)
    outputs = {args.out: table_writer(result.frame, args.out)}
    if args.design_out:
        as_json = str(args.design_out).lower().endswith(".json")
        text = result.design.to_json() if as_json else result.design.to_yaml()
        outputs[args.design_out] = lambda tmp: tmp.write_text(text, encoding="utf-8")
    if args.scores_out:
        from analysis.native_scores import scores_out_table

        scores = scores_out_table(result.extras)
        if scores is None:
            raise AnalysisError(f"--scores-out: these {args.source} results have no native "
                                "score (BBQ's s_DIS / s_AMB, or a bias task's metric such "
                                "as pct_stereotype).")
        outputs[args.scores_out] = table_writer(scores, args.scores_out)
    written = write_files(outputs)
    payload = {"source": result.source, "counts": result.counts, "notes": result.notes,
               "written": [str(p) for p in written],
               "design": result.design.to_dict()}
    if args.json:
        emit(args, payload)
        return
    print(f"{result.source}: {len(result.frame):,} rows -> {args.out}")
    for key, value in result.counts.items():
        print(f"  {key}: {value:,}")
    for note in result.notes:
        print(f"note: {note}")
    for path in written[1:]:
        print(f"wrote {path}")
