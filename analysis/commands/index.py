"""``index FILE --outcome COL --dimensions a,b``: the composite bias index (LLMBI) per model."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    from analysis import cli as cli_types
    from analysis.cli import add_input, add_outcome_options, add_output_options
    from analysis.index import DIMENSION_SCORES, SENTIMENT_SCORES

    p = sub.add_parser(
        "index", help="composite bias index (LLMBI) per model with every component",
        description="LLMBI = (1/n) sum w_i B_i + P(D) + lambda S (docs/methods.md s. 6). The "
                    "index is a weighted summary: its value depends on every option below.")
    add_input(p)
    add_outcome_options(p)
    p.add_argument("--dimensions", required=True, help="comma-separated sensitive factors")
    p.add_argument("--scores", default="deviation_metric",
                   help="score per dimension, one or one per dimension: "
                        f"{', '.join(DIMENSION_SCORES)} (default deviation_metric)")
    p.add_argument("--weights", default="", help="comma-separated weights (default all 1)")
    p.add_argument("--model", help="factor with one index per value (default: all rows)")
    p.add_argument("--ideal", type=cli_types.FINITE_FLOAT, default=0.0,
                   help="C of the deviation metric")
    p.add_argument("--printed-equation", action="store_true",
                   help="the LLMBI paper's equation as printed: sum w_i B_i (weights as "
                        "given, no 1/n; its code divides by n)")
    p.add_argument("--no-normalize", action="store_true",
                   help="use (1/n) sum w_i B_i literally instead of the weighted mean")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--penalty", type=cli_types.FINITE_FLOAT, default=0.0,
                   help="constant diversity penalty")
    g.add_argument("--penalty-gini", type=cli_types.FINITE_FLOAT, metavar="SCALE",
                   help="penalty = SCALE x coverage Gini index of the design")
    p.add_argument("--penalty-factors", help="factors of the coverage grid (default: dimensions)")
    p.add_argument("--sentiment", help="numeric column for the sentiment-bias score S")
    p.add_argument("--sentiment-by", help="factor S is compared across (default: 1st dimension)")
    p.add_argument("--sentiment-score", choices=SENTIMENT_SCORES,
                   default="one_minus_impact_ratio", help="how S is computed")
    p.add_argument("--lambda", dest="scale", type=cli_types.FINITE_FLOAT, default=1.0,
                   help="scale lambda of the sentiment term (default 1)")
    p.add_argument("--reference", action="append", default=[], metavar="FACTOR=VALUE",
                   help=argparse.SUPPRESS)
    p.add_argument("--where", action="append", default=[], metavar="FACTOR=VALUE",
                   help="keep only rows with this value (repeatable; VALUE may be a,b)")
    add_output_options(p, figure=True)
    from analysis.commands._bootstrap_options import add_bootstrap_options

    add_bootstrap_options(p, n_boot=200)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis.cli import emit, load_with_design, row_counts, split_list
    from analysis.errors import AnalysisError
    from analysis.index import Dimension, bias_index

    dims = split_list(args.dimensions)
    scores = split_list(args.scores) or ["deviation_metric"]
    if len(scores) == 1:
        scores = scores * len(dims)
    try:
        weights = [float(w) for w in split_list(args.weights)] or [1.0] * len(dims)
    except ValueError:
        raise AnalysisError(f"--weights takes numbers, got {args.weights!r}.") from None
    if len(scores) != len(dims) or len(weights) != len(dims):
        raise AnalysisError("Give one --scores entry (or one per dimension) and one weight per "
                            "dimension.")
    penalty_factors = split_list(args.penalty_factors)
    extra = [args.model, args.sentiment_by, *penalty_factors]
    load_args = argparse.Namespace(**vars(args))
    load_args.factors = ",".join(dict.fromkeys(f for f in [*dims, *extra] if f))
    results, design = load_with_design(load_args)
    r = load_args.renamed  # factors named like an output column, renamed
    dims = [r.get(d, d) for d in dims]
    penalty_factors = [r.get(f, f) for f in penalty_factors]
    gini = args.penalty_gini is not None
    options = dict(
        dimensions=[Dimension(f, s, w) for f, s, w in zip(dims, scores, weights, strict=True)],
        model=r.get(args.model, args.model), ideal=args.ideal,
        normalize_weights=not args.no_normalize, printed_equation=args.printed_equation,
        penalty_kind="coverage_gini" if gini else "constant",
        penalty_value=args.penalty_gini if gini else args.penalty,
        penalty_factors=penalty_factors or None, sentiment=args.sentiment,
        sentiment_by=r.get(args.sentiment_by, args.sentiment_by),
        sentiment_score=args.sentiment_score,
        sentiment_scale=args.scale)
    index = bias_index(results, design, **options)
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.index import index_figure

        write_figure(index_figure(index.components, index.totals), args.figure)
    payload = {"totals": index.totals, "components": index.components,
               "settings": {"renamed": load_args.renamed, **row_counts(results)}}
    if args.ci == "bootstrap":  # intervals of the index and of every component per model
        from analysis.bootstrap import bootstrap_index
        from analysis.commands._bootstrap_options import bootstrap_settings

        settings = bootstrap_settings(args, design)
        payload["bootstrap"] = {"settings": settings,
                                "intervals": bootstrap_index(results, design, **settings,
                                                             **options)}
    emit(args, payload, index.totals)
    if not args.json:
        print("\nComponents:")
        print(index.components.to_string(index=False))
        if "bootstrap" in payload:
            print("\nBootstrap percentile intervals (95 %):")
            print(payload["bootstrap"]["intervals"].to_string(index=False))
