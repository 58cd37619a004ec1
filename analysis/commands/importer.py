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


SUMMARY = ("import", "import a raw benchmark file or an evaluation log")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.importers import SOURCES

    p = sub.add_parser(SUMMARY[0], help=SUMMARY[1],
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
    p.add_argument("--task-family", metavar="FAMILY",
                   help="lm-eval: import only the tasks of this family (bbq, crows_pairs, "
                        "discrim_eval, or a task's name)")
    p.add_argument("--each-family", action="store_true",
                   help="lm-eval: with several task families, also write each family's own "
                        "table (and design) as OUT_<family> beside OUT")
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
    if args.task_family:
        options["task_family"] = args.task_family
    result = import_results(args.source, args.paths, **options)
    outputs = {args.out: table_writer(result.frame, args.out)}
    if args.design_out:
        outputs[args.design_out] = _design_writer(result.design, args.design_out)
    if args.each_family:
        if not result.parts:
            raise AnalysisError(f"--each-family: these {args.source} results hold one task "
                                "family only: OUT is its table.")
        for family, part in result.parts.items():
            outputs[_beside(args.out, family)] = table_writer(part.frame,
                                                              _beside(args.out, family))
            if args.design_out:
                outputs[_beside(args.design_out, family)] = _design_writer(
                    part.design, _beside(args.design_out, family))
    if args.scores_out:
        from analysis import api as bw

        try:
            scores = bw.scores_out(result.extras).table
        except AnalysisError as exc:  # the same words, naming the option and the source
            words = str(exc).replace("These", f"these {args.source}", 1)
            raise AnalysisError(f"--scores-out: {words}") from None
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


def _design_writer(design, path: str):  # noqa: ANN001, ANN202 - a Design, a writer
    as_json = str(path).lower().endswith(".json")
    text = design.to_json() if as_json else design.to_yaml()
    return lambda tmp: tmp.write_text(text, encoding="utf-8")


def _beside(path: str, family: str) -> str:
    """``results.csv`` -> ``results_<family>.csv`` (the family as a file-name slug; a
    double suffix such as ``.csv.gz`` is kept)."""
    import re
    from pathlib import Path

    p = Path(path)
    suffixes = "".join(p.suffixes[-2:]) if p.name.lower().endswith(".gz") else p.suffix
    stem = p.name[:len(p.name) - len(suffixes)] if suffixes else p.name
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", family).strip("._") or "family"
    return str(p.with_name(f"{stem}_{slug}{suffixes}"))
