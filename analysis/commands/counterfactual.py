"""``counterfactual FILE --design D --swap gender [--reference V] [--text COL]``: the same
prompt with one factor swapped, within its template (``docs/counterfactual.md``).

Pairs the rows of each value of ``--swap`` with those of the reference that agree on the
swap unit (the template column plus every other factor but those that are functions of
the swapped one; ``--unit COLS`` chooses), then per value: the paired counts, McNemar's
test (Durkalski's clustered test and CR2 intervals with a cluster; ``--score COL``: paired
t / Wilcoxon), adjusted together (``--adjust``). ``--text COL``: the paired text measures
of open-ended answers. ``--missing-out FILE`` writes the missing swaps as plan rows
(``kind = swap``) for ``generate --plan``, also when the data hold no pair (exit 2 then).
``--json`` prints ``{"pairs": [...], "text": [...], "missing_swaps": n, "notes": [...],
"settings": {...}}``.
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("counterfactual", "counterfactual pairs: one factor swapped within its template")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_output_options, command_parser
    from analysis.options.counterfactual import CounterfactualOptions

    p = command_parser(sub, SUMMARY, outcome=True,
                       description="Pair the rows of each value of --swap with the reference's "
                                   "on the same template and other factors; McNemar's test "
                                   "(clustered by template), paired tests for a score, paired "
                                   "text measures for open-ended answers, the missing swaps "
                                   "as plan rows.")
    p.add_argument("--swap", required=True, help="the swapped factor (gender, stigma ...)")
    p.add_argument("--reference", dest="swap_reference", metavar="VALUE",
                   help="compare every value with this one (default: the design's reference)")
    p.add_argument("--values", dest="swap_values", metavar="A,B",
                   help="the values compared (default: every value but control values)")
    p.add_argument("--unit", metavar="COLS",
                   help="columns held fixed (default: the template column and every other "
                        "factor that is not a function of --swap)")
    p.add_argument("--template", dest="template_column", metavar="COL",
                   help="the template column (default: the design's cluster, else 'template')")
    p.add_argument("--score", metavar="COL",
                   help="compare this numeric column (paired t, Wilcoxon) instead of the 0/1 "
                        "deviation")
    p.add_argument("--text", dest="text_column", metavar="COL",
                   help="open-ended answers: paired sentiment difference, ROUGE-L and "
                        "embedding distances")
    p.add_argument("--model", dest="embedding_model", metavar="NAME",
                   help="embedding model folder (default: the bundled all-MiniLM-L6-v2)")
    p.add_argument("--missing-out", metavar="FILE",
                   help="write the missing swaps as plan rows (CSV, kind = swap)")
    p.add_argument("--where", action="append", default=[], metavar="FACTOR=VALUE",
                   help="keep only rows with this value (repeatable; VALUE may be a,b)")
    CounterfactualOptions.add_arguments(p)
    add_output_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis import api as bw
    from analysis.cli import emit, load_with_design, split_list
    from analysis.counterfactual import NoPairsError
    from analysis.options.counterfactual import CounterfactualOptions
    from analysis.safe_write import write_table

    options = CounterfactualOptions.from_args(args)
    need = args.score is None and args.text_column is None
    if not args.design:  # the factors: the swapped one and the columns held fixed
        held = split_list(args.unit) or [c for c in [args.template_column] if c]
        args.factors = ",".join(dict.fromkeys([args.swap, *held]))
    results, design = load_with_design(args, need_outcome=need)
    renamed = getattr(args, "renamed", {})
    swap = renamed.get(args.swap, args.swap)
    try:
        result = bw.counterfactual(
            results, design, swap=swap, reference=args.swap_reference,
            values=split_list(args.swap_values) or None, unit=split_list(args.unit) or None,
            template=args.template_column, score=args.score, text=args.text_column,
            model=args.embedding_model, options=options, applied=True)
    except NoPairsError as exc:
        if args.missing_out:
            write_table(exc.missing_swaps, args.missing_out)
            raise NoPairsError(f"{exc} Written to {args.missing_out}.",
                               exc.missing_swaps) from None
        raise
    missing = result.tables["missing_swaps"]
    if args.missing_out:
        write_table(missing, args.missing_out)  # atomic; cells neutralised
    payload = {"pairs": result.table, "text": result.tables.get("text"),
               "missing_swaps": len(missing), "notes": list(result.notes),
               "settings": {**result.settings, "renamed": renamed}}
    emit(args, payload, result.table)
    if not args.json:
        text = result.tables.get("text")
        if text is not None and len(text):
            print()
            emit(argparse.Namespace(json=False, out=None), None, text)
        print()
        print("\n".join(result.notes))
