"""``plan FILE --factors a,b,c --budget N``: the prompts to add; or a new fraction.

With a results FILE (or only ``--design FILE``: a new benchmark, every combination
empty): the ``N`` prompts that most raise coverage and balance over the
grid of ``--factors`` (empty combinations first, then the thinnest). ``--json`` prints
``{"factors", "before": {"coverage_percentage", "gini_index", ...}, "after": {...},
"add": [{a, b, c, "n"}]}``; ``--out`` writes the combinations as CSV to generate prompts.

``plan FILE --d-study [--target-se SE] [--judge-cost C]``: the design study instead
(projected SE and cost of more templates, seeds, judges; ``analysis/commands/d_study.py``).

Without FILE, for a new benchmark: ``plan --new a=x,y --new b=x,y ... --runs R`` (or
``--design d.yaml --factors ... --runs R`` for the design's values) gives a regular
fractional factorial with its resolution, generators, defining words and aliasing.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run"]


SUMMARY = ("plan", "prompts to add for coverage; fractional factorials")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_outcome_options
    from analysis.options.planning import PlanOptions

    p = sub.add_parser(SUMMARY[0], help=SUMMARY[1])
    p.add_argument("file", nargs="?", help="results table (omit for a new benchmark)")
    p.add_argument("--sep", help="delimiter of a text file (default: sniffed)")
    p.add_argument("--encoding", default="utf-8", help="text encoding (default utf-8)")
    p.add_argument("--factors", help="comma-separated factors spanning the grid")
    p.add_argument("--where", action="append", default=[], metavar="FACTOR=VALUE",
                   help="plan within rows with this value (repeatable; VALUE may be a,b)")
    p.add_argument("--new", action="append", default=[], metavar="FACTOR=V1,V2",
                   help="a factor of a new benchmark and its values (repeatable)")
    PlanOptions.add_arguments(p)  # --budget, --runs (written once)
    add_outcome_options(p)
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("--out", help="write the combinations (prompts to add, or runs) as CSV")
    from analysis.commands.d_study import add_d_study_arguments

    add_d_study_arguments(p)  # --d-study and its options (analysis/commands/d_study.py)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis.cli import emit, split_list
    from analysis.errors import AnalysisError
    from analysis.options.planning import PlanOptions

    options = PlanOptions.from_args(args)
    if getattr(args, "d_study", False):
        from analysis.commands.d_study import run_d_study

        run_d_study(args)
        return
    if args.file:
        if options.budget is None:
            raise AnalysisError("plan FILE needs --budget N (prompts to add).")
        _additions(args)
        return
    if options.budget is not None and args.design and options.runs is None:
        _additions(args, from_design=True)
        return
    if options.runs is None:
        raise AnalysisError("Give a results FILE with --budget, --design FILE with --budget "
                            "(a new benchmark from its values), or --new FACTOR=V1,V2 ... "
                            "(or --design) with --runs for a fractional factorial.")
    from analysis import api as bw
    from analysis.cli import show
    from analysis.design import parse_assignments
    from analysis.safe_write import write_table

    if not args.new and not args.design:
        raise AnalysisError("A new benchmark needs its factors: --new FACTOR=V1,V2 "
                            "(repeatable) or --design FILE.")
    result = bw.fractional_factorial(design=args.design, runs=options.runs, factors={
        k: split_list(v) for k, v in parse_assignments(args.new, "--new").items()}
        if args.new else args.factors)
    frac, note = result.raw, result.meta["note"]
    if note:
        print(note, file=sys.stderr)
    if args.out:
        write_table(frac.runs, args.out)  # atomic; cells neutralised against formulas
    if args.json:
        emit(args, {"budget": options.runs, "note": note, **frac.to_dict()})
        return
    res = "full factorial" if frac.resolution == float("inf") else \
        f"resolution {int(frac.resolution)}"
    print(f"{len(frac.runs)} runs, {res}; generators: "
          + (", ".join(f"{k} = {v}" for k, v in frac.generators.items()) or "none"))
    for line in frac.aliases:
        print(f"- {line}")
    print()
    show(frac.runs)


def _inferred_template(results):  # noqa: ANN001, ANN202 - a results table
    """The template column the table's structure implies (its inferred cluster), said on
    stderr."""
    from analysis import api

    column, reason = api.inferred_template(results)
    if column:
        print(f"note: template variants vary {column!r}, the table's template ({reason}); "
              "--template COL names another, --within-structure uses none.", file=sys.stderr)
    return column


def _additions(args: argparse.Namespace, *, from_design: bool = False) -> None:
    """The prompts to add (:func:`analysis.api.plan`): of a results table, or of a new
    benchmark from its design (every combination empty)."""
    from dataclasses import replace

    from analysis import api as bw
    from analysis.cli import emit, load_with_design, show, split_list
    from analysis.design import parse_assignments
    from analysis.options.planning import PlanOptions
    from analysis.safe_write import write_table

    options = PlanOptions.from_args(args)
    where = {k: split_list(v) for k, v in parse_assignments(args.where, "--where").items()}
    if from_design:  # a new benchmark: every combination starts empty
        result = bw.plan(None, args.design, factors=split_list(args.factors) or None,
                         where=where, options=replace(options, template=None))
    else:
        # every row: --where narrows the grid inside the plan, while the structure
        # (what is impossible) is read on all the rows
        results, design = load_with_design(argparse.Namespace(**{**vars(args), "where": []}),
                                           need_outcome=False)
        template = args.template or design.cluster or _inferred_template(results)
        result = bw.plan(results, design, where={getattr(args, "renamed", {}).get(k, k): v
                                                 for k, v in where.items()},
                         options=replace(options, template=template), applied=True)
    plan = result.raw
    if args.out:
        write_table(plan.add, args.out)  # atomic; cells neutralised against formulas
    if args.json:
        emit(args, plan.to_dict())
        return
    b, a = plan.before, plan.after
    print(f"Coverage {100 * b['coverage_percentage']:.2f} % -> "
          f"{100 * a['coverage_percentage']:.2f} %, Gini index {b['gini_index']:.4f} -> "
          f"{a['gini_index']:.4f} with {args.budget:,} prompts over "
          f"{len(plan.add[list(plan.factors)].drop_duplicates()):,} combinations:")
    show(plan.add)
    for note in plan.notes:
        print(f"Note: {note}")
    if len(plan.variants):
        from analysis.plan_gaps import variants_text

        print(variants_text(plan.variants))
