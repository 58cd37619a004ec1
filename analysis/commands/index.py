"""``index FILE --outcome COL --dimensions a,b``: the composite bias index (LLMBI) per model."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("index", "composite bias index (LLMBI) per model with every component")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_output_options, command_parser
    from analysis.options.index import IndexOptions

    p = command_parser(
        sub, SUMMARY, outcome=True,
        description="LLMBI = (1/n) sum w_i B_i + P(D) + lambda S (docs/methods.md s. 6). The "
                    "index is a weighted summary: its value depends on every option below.")
    p.add_argument("--dimensions", required=True, help="comma-separated sensitive factors")
    p.add_argument("--reference", action="append", default=[], metavar="FACTOR=VALUE",
                   help=argparse.SUPPRESS)
    p.add_argument("--where", action="append", default=[], metavar="FACTOR=VALUE",
                   help="keep only rows with this value (repeatable; VALUE may be a,b)")
    add_output_options(p, figure=True)
    IndexOptions.add_arguments(p)  # the index's and the bootstrap's options, written once
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    """Options -> :func:`analysis.api.bias_index` -> print its Result."""
    from dataclasses import replace

    from analysis import api as bw
    from analysis.cli import cluster_settings, emit, load_with_design, row_counts, split_list
    from analysis.formatting import level_text
    from analysis.options.index import IndexOptions

    opts = IndexOptions.from_args(args)
    dims = split_list(args.dimensions)
    opts.dimensions(dims)  # bad --scores / --weights: said before the table is read
    penalty_factors = split_list(opts.penalty_factors)
    extra = [opts.model, opts.sentiment_by, *penalty_factors]
    load_args = argparse.Namespace(**vars(args))
    load_args.factors = ",".join(dict.fromkeys(f for f in [*dims, *extra] if f))
    results, design, meta = load_with_design(load_args, with_meta=True)
    r = load_args.renamed  # factors named like an output column, renamed
    opts = replace(opts, model=r.get(opts.model, opts.model),
                   sentiment_by=r.get(opts.sentiment_by, opts.sentiment_by),
                   penalty_factors=",".join(r.get(f, f) for f in penalty_factors) or None)
    result = bw.bias_index(results, design, options=opts, factors=[r.get(d, d) for d in dims],
                           applied=True)
    totals, components = result.table, result.tables["components"]
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.index import index_figure

        write_figure(index_figure(components, totals), args.figure)
    settings = {"renamed": load_args.renamed, **row_counts(results, meta=meta)}
    # then every option and input of the Result (its where: the command's --where)
    settings.update({k: v for k, v in result.settings.items() if k != "where"})
    payload = {"totals": totals, "components": components, "settings": settings}
    boot = result.tables.get("bootstrap")
    if boot is not None:  # intervals of the index and of every component per model
        payload["bootstrap"] = {"settings": opts.bootstrap_json(result.settings["cluster"]),
                                **cluster_settings(load_args), "intervals": boot}
    emit(args, payload, totals)
    if not args.json:
        print("\nComponents:")
        print(components.to_string(index=False))
        if boot is not None:
            print(f"\nBootstrap percentile intervals ({level_text(opts.confidence)}):")
            print(boot.to_string(index=False))
