"""``extend RESULTS ANSWERED --out combined.csv``: the answered new prompts joined to the
results table, marked ``added``, with coverage before and after.

ANSWERED is the output of ``python -m judges answer prompts.csv ...`` on the prompts of
``generate``: it must have every factor of the design (and the outcome's columns when
the design has an outcome); ``--design`` is the results' design file. The combined
table has the results' rows (``added`` False) and the answered rows (``added`` True);
the same design file reads it, so every analysis runs on it as before (when the new rows
bring values the design lacks, e.g. another model's name, ``<out stem>.design.yaml``
is written beside it with those values added). ``--json``
prints ``{"before", "after", "n_added", "n_rows"}`` (the coverage summaries).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run"]


SUMMARY = ("extend",
           "join answered new prompts to the results (added column), coverage "
           "before / after")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import single_character

    p = sub.add_parser(SUMMARY[0], help=SUMMARY[1])
    p.add_argument("file", help="the results table")
    p.add_argument("answered", help="the answered prompts (python -m judges answer)")
    p.add_argument("--sep", type=single_character, help="delimiter of a text file")
    p.add_argument("--encoding", default="utf-8", help="text encoding (default utf-8)")
    p.add_argument("--design", required=True, help="the results' design file (YAML/JSON)")
    p.add_argument("--factors", help="comma-separated factors of the coverage grid "
                                     "(default: the design's domain and prompt factors)")
    p.add_argument("--out", required=True, help="write the combined table (CSV/Parquet)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis import api as bw
    from analysis.cli import emit, load_notes
    from analysis.design import Design
    from analysis.io import load_results, read_results
    from analysis.safe_write import write_table

    results, meta = read_results(args.file, sep=args.sep, encoding=args.encoding)
    load_notes(meta)
    answered = load_results(args.answered, encoding=args.encoding)
    result = bw.extend_results(results, answered, Design.load(args.design),
                               factors=args.factors)
    if result.meta["new_values"]:  # the combined table's design beside it
        from pathlib import Path

        from analysis.safe_write import table_writer, write_files

        out = Path(args.out)
        design_path = out.with_name(out.name.split(".")[0] + ".design.yaml")
        write_files({out: table_writer(result.raw, out),
                     design_path: lambda p: p.write_text(result.meta["design"].to_yaml(),
                                                         encoding="utf-8")})
        print(f"Wrote the combined table's design to {design_path} (new values).",
              file=sys.stderr)
    else:
        write_table(result.raw, args.out)  # atomic; CSV cells neutralised
    summary = result.table.set_index("when")
    payload = {"before": summary.loc["before"].to_dict(),
               "after": summary.loc["after"].to_dict(),
               "n_added": int(result.meta["n_added"]), "n_rows": int(len(result.raw))}
    if args.json:
        emit(argparse.Namespace(json=True, out=None), payload)
        return
    b, a = payload["before"], payload["after"]
    print(f"Coverage {100 * b['coverage_percentage']:.2f} % -> "
          f"{100 * a['coverage_percentage']:.2f} %, Gini index {b['gini_index']:.4f} -> "
          f"{a['gini_index']:.4f}; {payload['n_added']:,} rows added (added = true), "
          f"{payload['n_rows']:,} rows in {args.out}.")
    for note in result.notes:
        print(f"Note: {note}")
