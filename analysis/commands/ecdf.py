"""``ecdf FILE --factors a,b --by model``: deviation metric per curve and KS tests.

``--pooled``: the curves and the deviation metric from partially pooled subgroup rates
(``docs/pooling.md``), the raw metric beside (``deviation_metric_raw`` ...), JSON
``"pooling"``: the model's terms and variances."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("ecdf", "eCDF of subgroup deviation rates: deviation metric, KS")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_output_options, command_parser
    from analysis.options.ecdf import EcdfOptions

    p = command_parser(sub, SUMMARY, factors=True, outcome=True,
                       description="Subgroups of --factors within each value of --by: the "
                                   "deviation metric (mean |rate - C|) per value and "
                                   "two-sample Kolmogorov-Smirnov tests between them.")
    p.add_argument("--by", required=True, help="comparison factor: one curve per value")
    add_output_options(p, figure=True)
    EcdfOptions.add_arguments(p)  # the analysis's and the bootstrap's options, written once
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    """Options -> :func:`analysis.api.ecdf` -> print its Result."""
    from analysis import api as bw
    from analysis.cli import cluster_settings, emit, load_with_design, row_counts, split_list
    from analysis.columns import (
        MC_SE,
        METHOD,
        N_RESAMPLES,
        N_SUBGROUPS,
        NOTE,
        P_VALUE,
        STATISTIC,
    )
    from analysis.errors import AnalysisError
    from analysis.formatting import level_text
    from analysis.options.ecdf import EcdfOptions

    opts = EcdfOptions.from_args(args)
    factors = split_list(args.factors)
    if args.by in factors:
        raise AnalysisError(f"--by {args.by} is also in --factors; give it in one place.")
    load_args = argparse.Namespace(**vars(args))
    load_args.factors = ",".join([args.by, *factors])
    results, design, meta = load_with_design(load_args, with_meta=True)
    by = load_args.renamed.get(args.by, args.by)
    result = bw.ecdf(results, design, options=opts, by=by, applied=True)
    summary, ks, rates = result.table, result.tables["ks"], result.tables["rates"]
    factors = result.settings["factors"]
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.ecdf import ecdf_figure
        from analysis.pooling import pooled_ecdf_title, swap_pooled

        write_figure(ecdf_figure(swap_pooled(rates), summary, by=by, ideal=opts.ideal,
                                 cutoff=opts.cutoff, ks=ks,
                                 title=pooled_ecdf_title(by) if opts.pooled else None),
                     args.figure)
    groups = {str(r.pop(by)): dict(r, **{N_SUBGROUPS: int(r[N_SUBGROUPS])})
              for r in summary.to_dict(orient="records")}
    if len(summary) == 2:
        ks_out = {k: ks[k].iloc[0]
                  for k in (STATISTIC, P_VALUE, METHOD, N_RESAMPLES, MC_SE, NOTE)}
    else:
        ks_out = ks.to_dict(orient="records")
    settings = {**result.settings, "resamples": opts.ks_resamples, "where": args.where,
                "renamed": load_args.renamed, **row_counts(results, meta=meta)}
    payload = {"by": by, "factors": factors, "ideal": opts.ideal, "cutoff": opts.cutoff,
               "groups": groups, "ks": ks_out, "settings": settings}
    if "pooling" in result.tables:
        payload["pooling"] = result.tables["pooling"]
    boot = result.tables.get("bootstrap")
    if boot is not None:
        payload["bootstrap"] = {"settings": opts.bootstrap_json(result.settings["cluster"]),
                                "intervals": boot, **cluster_settings(load_args)}
    emit(args, payload, rates)  # --out writes the subgroup rates; --json prints the payload
    if not args.json:
        print("\nSubgroup rates per curve:")
        print(summary.to_string(index=False))
        print("\nKolmogorov-Smirnov:" if len(ks) else "\nOne curve only: no KS test.")
        if len(ks):
            print(ks.to_string(index=False))
        if boot is not None:
            print(f"\nBootstrap percentile intervals ({level_text(opts.confidence)}):")
            print(boot.to_string(index=False))
            for note in result.meta["bootstrap"].get("notes", []):
                print(f"Note: {note}")
