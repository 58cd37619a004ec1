"""``disparity FILE --feature COL --by a[,b]``: a numeric feature across groups (SAGED)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    from analysis import cli as cli_types
    from analysis.cli import add_factor_options, add_input, add_outcome_options, add_output_options
    from analysis.disparity import (
        COMPARES,
        COMPARISONS,
        DEFAULT_PERMUTATIONS,
        DIRECTIONS,
        DIXON_ALPHAS,
        STANDARDS,
        STATISTICS,
    )

    p = sub.add_parser(
        "disparity", help="numeric feature across groups: statistics, impact ratio, Dixon's Q",
        description="A numeric feature (sentiment, toxicity, a judge score ...) per group of "
                    "--by: summary statistics, selection rates and the four-fifths rule, "
                    "min/max ratio, range, std, max Z-score, Dixon's Q test and permutation "
                    "p-values (docs/methods.md s. 5).")
    add_input(p)
    p.add_argument("--feature", required=True, help="numeric column to compare")
    p.add_argument("--by", required=True, help="comma-separated grouping factors")
    p.add_argument("--baseline", help="column of the baseline feature: use feature - baseline")
    p.add_argument("--statistic", choices=STATISTICS, default="mean",
                   help="statistic per group for the disparity metrics (default mean)")
    p.add_argument("--quantiles", default="0.25,0.75",
                   help="lower,upper quantile of quantile_range (default 0.25,0.75)")
    p.add_argument("--standard", choices=STANDARDS, default="mean",
                   help="selection standard over all rows (default mean)")
    p.add_argument("--quantile", type=cli_types.UNIT_INTERVAL, default=0.5,
                   help="quantile of --standard quantile")
    p.add_argument("--value", type=cli_types.FINITE_FLOAT, help="fixed number for --standard value")
    p.add_argument("--direction", choices=DIRECTIONS, default=None,
                   help="selected when above / below / within --tolerance of the standard "
                        "(default: the favourable side, below for a harmful feature)")
    p.add_argument("--comparison", choices=COMPARISONS, default="inclusive",
                   help="above / below: inclusive x >= s, x <= s (default, as SAGED) or "
                        "strict x > s, x < s")
    p.add_argument("--polarity", choices=("harmful", "favourable"), default=None,
                   help="whether higher feature values are harmful or favourable (default: "
                        "the design's polarity; the deviation column is harmful)")
    p.add_argument("--tolerance", type=cli_types.NON_NEGATIVE_FLOAT,
                   help="half-width for --direction within")
    p.add_argument("--alpha", type=float, choices=DIXON_ALPHAS, default=0.05,
                   help="significance level of Dixon's Q (0.1, 0.05 or 0.01)")
    p.add_argument("--permutations", type=cli_types.NON_NEGATIVE_INT, default=DEFAULT_PERMUTATIONS,
                   help=f"most label permutations (default {DEFAULT_PERMUTATIONS}; 0 = none)")
    p.add_argument("--no-adaptive", action="store_true",
                   help="run every permutation instead of stopping once each p-value is "
                        "clearly above or below alpha")
    p.add_argument("--compare", choices=COMPARES, default="rest",
                   help="each group against the rest (default) or all rows")
    p.add_argument("--seed", type=cli_types.NON_NEGATIVE_INT, default=0,
                   help="random seed of the permutations")
    add_factor_options(p, required=False)
    add_outcome_options(p)
    add_output_options(p, figure=True)
    from analysis.commands.saged_options import add_saged_options

    add_saged_options(p)
    p.add_argument("--figure-kind", choices=["selection", "statistic", "box"],
                   default="selection", help="which figure --figure writes")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis.cli import emit, load_with_design, split_list
    from analysis.disparity import disparity_report, feature_polarity
    from analysis.errors import AnalysisError

    by = split_list(args.by)
    try:
        quantiles = tuple(float(q) for q in split_list(args.quantiles))
    except ValueError:
        raise AnalysisError(f"--quantiles takes two numbers, got {args.quantiles!r}.") from None
    if len(quantiles) != 2:
        raise AnalysisError(f"--quantiles takes two numbers, got {args.quantiles!r}.")
    load_args = argparse.Namespace(**vars(args))
    if not args.factors and not args.design:
        load_args.factors = ",".join(by)
    results, design = load_with_design(load_args, need_outcome=False, extra=by)
    by = [load_args.renamed.get(b, b) for b in by]
    polarity = args.polarity or feature_polarity(design, args.feature)
    from analysis.commands.saged_options import conventions, normalized, saged_payload

    results = normalized(args, results)
    report = disparity_report(
        results, args.feature, by, baseline=args.baseline, statistic=args.statistic,
        quantiles=quantiles, standard=args.standard, quantile=args.quantile, value=args.value,
        direction=args.direction, tolerance=args.tolerance, comparison=args.comparison,
        polarity=polarity, alpha=args.alpha, n_permutations=args.permutations,
        adaptive=not args.no_adaptive, compare=args.compare, random_state=args.seed,
        conventions=conventions(args))
    if args.figure:
        _write_figure(args, results, by, report)
    payload = {
        "settings": report.settings,
        "impact_ratio": report.impact_ratio,
        "passes_four_fifths": report.passes_four_fifths,
        "summary": report.summary,
        "selection": report.selection,
        "metrics": report.metrics,
        "dixon": report.dixon.to_dict(),
        "permutation": report.permutation,
        **saged_payload(args, results, by),
    }
    emit(args, payload, report.summary)
    if not args.json:
        verdict = {True: "passes", False: "fails", None: "undefined for"}[
            report.passes_four_fifths]
        rule = report.settings["selection_rule"]
        print(f"\nSelection rates ({rule}, standard {args.standard}); impact ratio "
              f"{report.impact_ratio:.3f}: {verdict} the four-fifths rule")
        print(report.selection.to_string(index=False))
        print("\nDisparity across groups:")
        print(report.metrics.to_string(index=False))
        if report.permutation is not None:
            used = report.settings["n_permutations_used"]
            print(f"\nPermutation tests (up to {used} of at most {args.permutations} "
                  f"permutations, seed {args.seed}):")
            print(report.permutation.to_string(index=False))
        print("\nSAGED statistics per group:")
        print(payload["saged_statistics"].to_string(index=False))


def _write_figure(args, results, by, report) -> None:
    from analysis.disparity import grouped_values
    from analysis.export import write_figure
    from analysis.figures import disparity as figs

    feature = args.feature + (f" - {args.baseline}" if args.baseline else "")
    if args.figure_kind == "selection":
        fig = figs.selection_figure(report.selection, feature=feature)
    elif args.figure_kind == "statistic":
        fig = figs.statistic_figure(report.summary, args.statistic, feature=feature)
    else:
        fig = figs.box_figure(grouped_values(results, args.feature, by, baseline=args.baseline),
                              feature=feature)
    write_figure(fig, args.figure)
