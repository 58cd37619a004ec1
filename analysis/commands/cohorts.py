"""``cohorts FILE --category COL --cohort F``: a categorical outcome across cohorts."""

from __future__ import annotations

import argparse
import sys

__all__ = ["categories_option", "register", "run"]


SUMMARY = ("cohorts", "categorical outcome across cohorts: percentages, spread, chi-square")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_factor_options, add_output_options, command_parser
    from analysis.options.cohorts import CohortsOptions

    p = command_parser(
        sub, SUMMARY,
        description="Percentages of each category of --category per value of --cohort "
                    "(within each group of --by), the standard deviation of the category "
                    "percentages and a chi-square test of homogeneity (docs/methods.md s. 7).")
    p.add_argument("--category", required=True, help="categorical outcome column")
    p.add_argument("--cohort", required=True, help="cohort factor (e.g. model, decade)")
    p.add_argument("--by", default="", help="comma-separated role / prompt / demographic "
                                            "factors (one distribution per combination)")
    p.add_argument("--categories",
                   help="keep only these categories, in this order: a,b,c, or a JSON list "
                        "('[\"a, b\", \" c\", \"\"]') for values with commas, leading or "
                        "trailing spaces, or the empty string")
    p.add_argument("--demographics", default=None,
                   help="time-capsule statistics per demographic, e.g. "
                        "'gender=woman,man,non-binary;race=White,Asian,Black': shares, "
                        "Kruskal-Wallis per subcategory and among the subcategories beside the "
                        "chi-square, spreads within "
                        "each demographic, the paper-shaped table (docs/cohorts.md)")
    p.add_argument("--demographic-col", default=None,
                   help="with --demographics: the column naming each row's demographic")
    CohortsOptions.add_arguments(p)  # every option of the analysis, written once
    p.add_argument("--design", help="design file (YAML/JSON): value order of the cohorts")
    add_factor_options(p, required=False)
    add_output_options(p, figure=True)
    p.add_argument("--figure-kind", choices=["bar", "line", "spread"], default="bar",
                   help="which figure --figure writes (default stacked bars)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis import api as bw
    from analysis.cli import emit, load_with_design, row_counts, split_list
    from analysis.options.cohorts import CohortsOptions

    options = CohortsOptions.from_args(args)
    by = split_list(args.by)
    load_args = argparse.Namespace(**vars(args))
    if not args.factors and not args.design:
        load_args.factors = ",".join([args.cohort, *by])
    results, design, meta = load_with_design(load_args, need_outcome=False, with_meta=True,
                                             extra=[args.category, args.cohort, *by])
    r = load_args.renamed  # columns named like an output column, renamed
    args.category, args.cohort = r.get(args.category, args.category), r.get(args.cohort,
                                                                            args.cohort)
    by = [r.get(b, b) for b in by]
    result = bw.cohorts(results, design, category=args.category, cohort=args.cohort, by=by,
                        categories=categories_option(args.categories), options=options,
                        applied=True, demographics=args.demographics,
                        demographic_col=args.demographic_col)
    dist, test = result.table, result.tables["homogeneity"]
    spread, across = result.tables["spread"], result.tables["spread_across_cohorts"]
    refusal_note = result.meta["refusal_note"]
    if refusal_note:  # a refusal is neither biased nor not: how it was counted
        print(f"note: {refusal_note.replace('refusals=leave_out', '--refusals leave_out')}",
              file=sys.stderr)
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.distribution import distribution_figure, spread_figure

        fig = (spread_figure(spread, args.cohort, by=by) if args.figure_kind == "spread" else
               distribution_figure(dist, args.category, args.cohort, by=by,
                                   kind=args.figure_kind))
        write_figure(fig, args.figure)
    payload = {"category": args.category, "cohort": args.cohort, "by": by,
               "distribution": dist, "spread_within_cohorts": spread,
               "spread_across_cohorts": across, "homogeneity": test,
               # JSON keys as before the options were written once
               "settings": {"method": options.method, "resamples": options.n_resamples,
                            "seed": options.seed, "where": args.where, "renamed": r,
                            **row_counts(results, columns=[args.category], meta=meta)}}
    payload["settings"].update(renormalise=options.renormalise, demographics=args.demographics,
                               demographic_col=args.demographic_col,
                               refusal_note=refusal_note)
    # then every other option and input of the Result (cluster-free: its where is --where)
    payload["settings"].update({k: v for k, v in result.settings.items()
                                if k not in payload["settings"]})
    capsules = {k: v for k, v in result.tables.items() if k.startswith("capsule_")}
    if capsules:  # the paper-shaped table with its column levels joined by " / "
        capsule_table = capsules["capsule_table"]
        flat = capsule_table.copy()
        flat.columns = [" / ".join(map(str, c)) for c in capsule_table.columns]
        capsules["capsule_table"] = flat.reset_index()
    payload.update(capsules)
    wide = result.tables["percentages"]
    payload["percentages"] = wide  # columns: dm.wide_column_names (docs/cohorts.md)
    emit(args, payload, wide)
    if not args.json:
        print("\nSD of the category percentages within each cohort:")
        print(spread.to_string(index=False))
        print("\nChi-square test of homogeneity:")
        print(test.to_string(index=False))
    if capsules and not args.json:
        from analysis.capsules import BH_MARK
        from analysis.multiple_testing import NAMES

        what = ("the subcategory's share differs between cohorts" if options.capsule_star ==
                "across_cohorts" else "the prompt's subcategories differ from each other")
        print(f"\nTime capsules: percentages of all answers per demographic (* = {what}, "
              f"Kruskal-Wallis p < 0.05; *{BH_MARK} = also after {NAMES[options.adjust]}):")
        print(capsule_table.to_string())
        print("\nTests (each with the question it answers):")
        print(capsules["capsule_tests"].drop(columns="question").to_string(index=False))


def categories_option(text: str | None) -> list[str] | None:
    """``--categories``: a comma-separated list (items stripped), or a JSON list of strings
    taken verbatim (``["a, b", " c", ""]``); None when not given."""
    from analysis.cli import split_list
    from analysis.errors import AnalysisError

    if text is None or not text.strip():
        return None
    if text.lstrip().startswith("["):
        import json

        try:
            values = json.loads(text)
        except ValueError as exc:
            raise AnalysisError(f"--categories: not a JSON list ({exc}).") from None
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise AnalysisError("--categories: a JSON list must hold strings only.")
        return values or None
    return split_list(text) or None

