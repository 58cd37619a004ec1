"""``disparity FILE --feature COL --by a[,b]``: a numeric feature across groups (SAGED)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("disparity", "numeric feature across groups: statistics, impact ratio, Dixon's Q")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_factor_options, add_input, add_outcome_options, add_output_options
    from analysis.options.disparity import DisparityOptions

    p = sub.add_parser(
        SUMMARY[0], help=SUMMARY[1],
        description="A numeric feature (sentiment, toxicity, a judge score ...) per group of "
                    "--by: summary statistics, selection rates and the four-fifths rule, "
                    "min/max ratio, range, std, max Z-score, Dixon's Q test and permutation "
                    "p-values (docs/methods.md s. 5).")
    add_input(p)
    p.add_argument("--feature", required=True, help="numeric column to compare")
    p.add_argument("--by", required=True, help="comma-separated grouping factors")
    # every option of the analysis and of its SAGED statistics, written once
    DisparityOptions.add_arguments(p)
    add_factor_options(p, required=False)
    add_outcome_options(p)
    add_output_options(p, figure=True)
    p.add_argument("--figure-kind", choices=["selection", "statistic", "box"],
                   default="selection", help="which figure --figure writes")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    """Options -> :func:`analysis.api.disparity` -> print its Result."""
    from analysis import api as bw
    from analysis.cli import emit, load_with_design, split_list
    from analysis.options.disparity import DisparityOptions

    by = split_list(args.by)
    load_args = argparse.Namespace(**vars(args))
    if not args.factors and not args.design:
        load_args.factors = ",".join(by)
    results, design = load_with_design(load_args, need_outcome=False, extra=by)
    by = [load_args.renamed.get(b, b) for b in by]
    options = DisparityOptions.from_args(args)
    result = bw.disparity(results, design, feature=args.feature, by=by, options=options,
                          applied=True, values=args.figure and args.figure_kind == "box")
    report, options = result.raw, result.meta["options"]  # the design's polarity resolved
    if args.figure:
        _write_figure(args, result)
    settings = dict(report.settings)  # then every other option and input of the Result
    settings.update({k: v for k, v in result.settings.items()
                     if k not in settings and k != "where"})
    payload = {
        "settings": settings,
        "impact_ratio": report.impact_ratio,
        "passes_four_fifths": report.passes_four_fifths,
        **{k: result.tables.get(k)
           for k in ("summary", "selection", "metrics", "dixon", "permutation",
                     "saged_statistics", "saged_disparity")},
        "dixon": report.dixon.to_dict(),
        "normalization": options.normalization,
    }
    emit(args, payload, report.summary)
    if not args.json:
        verdict = {True: "passes", False: "fails", None: "undefined for"}[
            report.passes_four_fifths]
        rule = report.settings["selection_rule"]
        print(f"\nSelection rates ({rule}, standard {options.standard}); impact ratio "
              f"{report.impact_ratio:.3f}: {verdict} the four-fifths rule")
        print(report.selection.to_string(index=False))
        print("\nDisparity across groups:")
        print(report.metrics.to_string(index=False))
        if report.permutation is not None:
            used = report.settings["n_permutations_used"]
            print(f"\nPermutation tests (up to {used} of at most {options.n_resamples} "
                  f"permutations, seed {options.seed}):")
            print(report.permutation.to_string(index=False))
        print("\nSAGED statistics per group:")
        print(payload["saged_statistics"].to_string(index=False))


def _write_figure(args, result) -> None:  # noqa: ANN001
    from analysis.export import write_figure
    from analysis.figures import disparity as figs

    feature = args.feature + (f" - {args.baseline}" if args.baseline else "")
    report = result.raw
    if args.figure_kind == "selection":
        fig = figs.selection_figure(report.selection, feature=feature)
    elif args.figure_kind == "statistic":
        fig = figs.statistic_figure(report.summary, args.statistic, feature=feature)
    else:  # the values as analysed (--normalize rescales them first)
        fig = figs.box_figure(result.tables["values"], feature=feature)
    write_figure(fig, args.figure)
