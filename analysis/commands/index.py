"""``index FILE --outcome COL --dimensions a,b``: the composite bias index (LLMBI) per model."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_input, add_outcome_options, add_output_options
    from analysis.options.index import IndexOptions

    p = sub.add_parser(
        "index", help="composite bias index (LLMBI) per model with every component",
        description="LLMBI = (1/n) sum w_i B_i + P(D) + lambda S (docs/methods.md s. 6). The "
                    "index is a weighted summary: its value depends on every option below.")
    add_input(p)
    add_outcome_options(p)
    p.add_argument("--dimensions", required=True, help="comma-separated sensitive factors")
    p.add_argument("--reference", action="append", default=[], metavar="FACTOR=VALUE",
                   help=argparse.SUPPRESS)
    p.add_argument("--where", action="append", default=[], metavar="FACTOR=VALUE",
                   help="keep only rows with this value (repeatable; VALUE may be a,b)")
    add_output_options(p, figure=True)
    IndexOptions.add_arguments(p)  # the index's and the bootstrap's options, written once
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from dataclasses import replace

    from analysis.cli import cluster_settings, emit, load_with_design, row_counts, split_list
    from analysis.index import as_dimensions, bias_index
    from analysis.options.index import IndexOptions

    opts = IndexOptions.from_args(args)
    dims = split_list(args.dimensions)
    opts.dimensions(dims)  # bad --scores / --weights: said before the table is read
    penalty_factors = split_list(opts.penalty_factors)
    extra = [opts.model, opts.sentiment_by, *penalty_factors]
    load_args = argparse.Namespace(**vars(args))
    load_args.factors = ",".join(dict.fromkeys(f for f in [*dims, *extra] if f))
    results, design = load_with_design(load_args)
    r = load_args.renamed  # factors named like an output column, renamed
    opts = replace(opts, model=r.get(opts.model, opts.model),
                   sentiment_by=r.get(opts.sentiment_by, opts.sentiment_by),
                   penalty_factors=",".join(r.get(f, f) for f in penalty_factors) or None)
    options = opts.index_kwargs([r.get(d, d) for d in dims])
    options["dimensions"] = as_dimensions(options["dimensions"])
    index = bias_index(results, design, **options)
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.index import index_figure

        write_figure(index_figure(index.components, index.totals), args.figure)
    payload = {"totals": index.totals, "components": index.components,
               "settings": {"renamed": load_args.renamed, **row_counts(results)}}
    if opts.ci == "bootstrap":  # intervals of the index and of every component per model
        from analysis.bootstrap import bootstrap_index
        from analysis.commands._bootstrap_options import bootstrap_cluster, bootstrap_json

        cluster = bootstrap_cluster(opts, design)
        payload["bootstrap"] = {"settings": bootstrap_json(opts, cluster),
                                **cluster_settings(load_args),
                                "intervals": bootstrap_index(
                                    results, design, confidence=opts.confidence,
                                    **opts.bootstrap_kwargs(cluster), **options)}
    emit(args, payload, index.totals)
    if not args.json:
        print("\nComponents:")
        print(index.components.to_string(index=False))
        if "bootstrap" in payload:
            print("\nBootstrap percentile intervals (95 %):")
            print(payload["bootstrap"]["intervals"].to_string(index=False))
