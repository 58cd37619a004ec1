"""``ecdf FILE --factors a,b --by model``: deviation metric per curve and KS tests."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    from analysis import cli as cli_types
    from analysis.cli import add_factor_options, add_input, add_outcome_options, add_output_options
    from analysis.ecdf import CUTOFF

    p = sub.add_parser("ecdf", help="eCDF of subgroup deviation rates: deviation metric, KS",
                       description="Subgroups of --factors within each value of --by: the "
                                   "deviation metric (mean |rate - C|) per value and "
                                   "two-sample Kolmogorov-Smirnov tests between them.")
    add_input(p)
    add_factor_options(p, required=True)
    add_outcome_options(p)
    p.add_argument("--by", required=True, help="comparison factor: one curve per value")
    p.add_argument("--level", type=cli_types.POSITIVE_INT, default=None,
                   help="factors fixed per subgroup (default: all of --factors)")
    p.add_argument("--ideal", type=cli_types.FINITE_FLOAT, default=0.0,
                   help="ideal value C of the deviation metric (default 0)")
    p.add_argument("--cutoff", type=cli_types.FINITE_FLOAT, default=CUTOFF,
                   help=f"'no bias' cutoff drawn and counted (default {CUTOFF:g})")
    p.add_argument("--resamples", type=cli_types.POSITIVE_INT, default=9999,
                   help="random splits of the KS permutation p-value with tied rates, when "
                        "the splits are too many to enumerate (default 9999)")
    add_output_options(p, figure=True)
    from analysis.commands._bootstrap_options import add_bootstrap_options

    add_bootstrap_options(p, n_boot=1000)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis.cells import cell_table
    from analysis.cli import emit, load_with_design, row_counts, split_list
    from analysis.columns import METHOD, N_RESAMPLES, N_SUBGROUPS, NOTE, P_VALUE, STATISTIC
    from analysis.ecdf import ecdf_summary, ks_tests, subgroup_rates
    from analysis.errors import AnalysisError

    factors = split_list(args.factors)
    if args.by in factors:
        raise AnalysisError(f"--by {args.by} is also in --factors; give it in one place.")
    load_args = argparse.Namespace(**vars(args))
    load_args.factors = ",".join([args.by, *factors])
    results, design = load_with_design(load_args)
    by = load_args.renamed.get(args.by, args.by)
    factors = [f for f in design.names if f != by]
    cells = cell_table(results, [by, *factors])
    rates = subgroup_rates(cells, factors, by=by, level=args.level)
    summary = ecdf_summary(rates, by=by, ideal=args.ideal, cutoff=args.cutoff)
    ks = ks_tests(rates, by=by, n_resamples=args.resamples, random_state=args.seed)
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.ecdf import ecdf_figure

        write_figure(ecdf_figure(rates, summary, by=by, ideal=args.ideal,
                                 cutoff=args.cutoff, ks=ks), args.figure)
    groups = {str(r.pop(by)): dict(r, **{N_SUBGROUPS: int(r[N_SUBGROUPS])})
              for r in summary.to_dict(orient="records")}
    if len(summary) == 2:
        ks_out = {k: ks[k].iloc[0] for k in (STATISTIC, P_VALUE, METHOD, N_RESAMPLES, NOTE)}
    else:
        ks_out = ks.to_dict(orient="records")
    settings = {"level": args.level, "resamples": args.resamples, "seed": args.seed,
                "where": args.where, "renamed": load_args.renamed, **row_counts(results)}
    payload = {"by": by, "factors": factors, "ideal": args.ideal, "cutoff": args.cutoff,
               "groups": groups, "ks": ks_out, "settings": settings}
    boot = None
    if args.ci == "bootstrap":
        from analysis.bootstrap import bootstrap_ecdf
        from analysis.commands._bootstrap_options import bootstrap_settings

        settings = bootstrap_settings(args, design)
        boot = bootstrap_ecdf(results, factors, by=args.by, level=args.level,
                              ideal=args.ideal, **settings)
        payload["bootstrap"] = {"settings": settings, "intervals": boot}
    emit(args, payload, rates)  # --out writes the subgroup rates; --json prints the payload
    if not args.json:
        print("\nSubgroup rates per curve:")
        print(summary.to_string(index=False))
        print("\nKolmogorov-Smirnov:" if len(ks) else "\nOne curve only: no KS test.")
        if len(ks):
            print(ks.to_string(index=False))
        if boot is not None:
            print("\nBootstrap percentile intervals (95 %):")
            print(boot.to_string(index=False))
            for note in boot.attrs["bootstrap"].get("notes", []):
                print(f"Note: {note}")
