"""``describe FILE``: columns, suggested factors and outcome, nestings."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run"]


SUMMARY = ("describe", "columns, suggested factors and nested factors")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import command_parser

    p = command_parser(sub, SUMMARY)
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis import api as bw
    from analysis.cli import emit, load_notes, note_decimal_commas
    from analysis.design import describe_columns, suggest_design
    from analysis.engines import open_table, resolve_engine
    from analysis.engines.describe import describe_table
    from analysis.io import read_results
    from analysis.nesting_text import describe_nesting

    engine = getattr(args, "engine", "pandas")
    if engine != "pandas" and resolve_engine(args.file, engine) != "pandas":
        table = open_table(args.file, resolve_engine(args.file, engine), sep=args.sep,
                           encoding=args.encoding)
        note_decimal_commas(table.decimal_comma_columns)
        try:  # SQL passes, no rows in memory (analysis.engines.describe)
            n_rows, columns, design, nestings = describe_table(table)
        finally:
            table.close()
        name = table.name
    else:
        frame, meta = read_results(args.file, sep=args.sep, encoding=args.encoding)
        load_notes(meta)
        n_rows, name = len(frame), meta.source_name
        columns = describe_columns(frame)
        design = suggest_design(frame)
        nestings = bw.nesting(frame, design, applied=True).table
    proposed = []
    if engine == "pandas" or resolve_engine(args.file, engine) == "pandas":
        from analysis.constraints import propose_constraints

        proposed = [{**c.to_dict(), "reason": c.reason, "message": c.describe()}
                    for c in propose_constraints(frame, design.names)]
    structure = design.inferred or {}
    payload = {
        "file": name,
        "n_rows": n_rows,
        "columns": columns,
        "suggested_design": design.to_dict(),
        "structure": structure,
        "nestings": [dict(r, message=describe_nesting(r)) for r in
                     nestings.to_dict(orient="records")],
        "proposed_constraints": proposed,
    }
    for note in structure.get("notes", []):  # what was assumed where nothing was found
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        emit(args, payload)
        return
    print(f"{payload['file']}: {n_rows:,} rows, {len(columns)} columns\n")
    emit(args, None, columns)
    print("\nStructure (analysis.structure; docs/structure.md says how to override):")
    reasons = structure.get("reasons", [])
    aliases = [r for r in reasons if r.startswith("alias: ")]
    for line in [r for r in reasons if not r.startswith("alias: ")] + aliases[:10]:
        print(f"  {line}")
    if len(aliases) > 10:
        print(f"  ... and {len(aliases) - 10} more aliases (--json lists them all)")
    print("\nSuggested factors:")
    for f in design.factors:
        print(f"  {f.name} ({f.kind}, {len(f.values)} values, reference {f.reference!r})")
    print(f"Suggested outcome: {design.outcome.describe() if design.outcome else 'none'}")
    print(f"Cluster: {design.cluster or 'none (rows independent)'}; prompt unit: "
          f"{', '.join(design.prompt_unit) or 'the domain and prompt factors'}")
    print("\nNested factors:" if len(nestings) else "\nNo nested factors among them.")
    for r in payload["nestings"]:
        print(f"  - {r['message']}")
    if proposed:
        print("\nProposed constraints (combinations that cannot exist; declare them under "
              "constraints: in the design file, docs/planning.md):")
        for c in proposed:
            print(f"  - {c['message']}: {c['reason']}")
