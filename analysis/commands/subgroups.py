"""``subgroups FILE --factors a,b --level K``: log disparity of every subgroup up to level K.

``--ci bootstrap [--cluster COL] [--n-boot B] [--seed S]`` adds bootstrap percentile
intervals of LD (``boot_ci_low``, ``boot_ci_high``, ``boot_se``), resampling whole
clusters when a cluster is named (or set in the design). ``--power P [--effect LD]`` adds
the minimum detectable |LD| per subgroup (and whether it is at most LD; the figure then
greys out the others).
"""

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
    from analysis.commands._bootstrap_options import add_bootstrap_options

    add_bootstrap_options(p, n_boot=1000)
    g = p.add_argument_group("power")
    g.add_argument("--power", type=float, metavar="P",
                   help="add mde_log_disparity: the smallest |LD| each subgroup detects with "
                        "power P (e.g. 0.8) at the two-sided 0.05 level")
    g.add_argument("--effect", type=float, metavar="LD",
                   help="with --power: add detectable (MDE <= |LD|)")
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
    if args.ci == "bootstrap":  # adds boot_se, boot_ci_low, boot_ci_high
        from analysis.bootstrap import bootstrap_log_disparity
        from analysis.commands._bootstrap_options import bootstrap_settings

        table = bootstrap_log_disparity(results, factors, max_level=args.level, table=table,
                                        confidence=args.confidence,
                                        **bootstrap_settings(args, design))
    if args.power is not None:  # adds mde_log_disparity (and detectable with --effect)
        from analysis.planning import add_power

        table = add_power(table, int(cells["n"].sum()), power=args.power,
                          target_ld=args.effect)
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.subgroups import sunburst_figure

        write_figure(sunburst_figure(table, factors,
                                     grey_undetectable=args.effect is not None
                                     and args.power is not None), args.figure)
    payload = table.drop(columns=[SUBGROUP])
    for f in factors:  # JSON: the value, or null where the subgroup does not fix the factor
        payload[f] = payload[f].astype(object).where(payload[f].notna(), None)
    emit(args, payload, table)
