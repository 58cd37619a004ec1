"""``subgroups FILE --factors a,b --level K``: log disparity of every subgroup up to level K."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    from analysis import cli as cli_types
    from analysis.cli import add_factor_options, add_input, add_outcome_options, add_output_options
    from analysis.subgroups import MIN_EXPECTED, MIN_N, TESTS

    p = sub.add_parser("subgroups", help="deviation rate and log disparity of every subgroup",
                       description="Every subgroup fixing 1..K of the factors: n, deviations, "
                                   "rate, log disparity against the rows outside it, Woolf CI, "
                                   "p-value and Benjamini-Hochberg adjusted p-value.")
    add_input(p)
    add_factor_options(p, required=False)
    add_outcome_options(p)
    p.add_argument("--level", type=cli_types.POSITIVE_INT, default=None,
                   help="highest subgroup level (1 = one factor fixed; default 2, or 1 with "
                        "a single factor)")
    p.add_argument("--test", choices=TESTS, default="wald",
                   help="p-value: Wald z on the log odds ratio (default) or Fisher's exact")
    p.add_argument("--confidence", type=cli_types.PROBABILITY, default=0.95,
                   help="CI level (default 0.95)")
    p.add_argument("--min-n", type=cli_types.NON_NEGATIVE_INT, default=MIN_N,
                   help=f"flag subgroups with fewer rows (default {MIN_N})")
    p.add_argument("--min-expected", type=cli_types.NON_NEGATIVE_FLOAT, default=MIN_EXPECTED,
                   help=f"flag 2x2 tables with a smaller expected count (default {MIN_EXPECTED:g})")
    add_output_options(p, figure=True)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis.cells import cell_table
    from analysis.cli import emit, load_with_design
    from analysis.columns import SUBGROUP
    from analysis.subgroups import subgroups

    results, design = load_with_design(args)
    factors = design.names
    cells = cell_table(results, factors)
    table = subgroups(cells, factors, max_level=args.level, test=args.test,
                      confidence=args.confidence, min_n=args.min_n,
                      min_expected=args.min_expected)
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.subgroups import sunburst_figure

        write_figure(sunburst_figure(table, factors), args.figure)
    payload = table.drop(columns=[SUBGROUP])
    for f in factors:  # JSON: the value, or null where the subgroup does not fix the factor
        payload[f] = payload[f].astype(object).where(payload[f].notna(), None)
    emit(args, payload, table)
