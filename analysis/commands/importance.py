"""``importance FILE --factors a,b,c``: logistic regression of deviation on factors.

Treatment coding against each factor's reference (``--reference f=VALUE``, default the
design's), on the rows kept by ``--where`` / left by ``--exclude``; the options are
:func:`analysis.api.importance`'s (``--help``). ``--json`` prints one object per term.
Refusals (aliased factors, separation, ...) exit with status 2 and say which options
would fix them. A continuous outcome gets a linear or mixed model
(``analysis/commands/importance_linear.py``).
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("importance", "logistic regression: risk and protective values")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_output_options, command_parser

    p = command_parser(sub, SUMMARY, factors=False, outcome=True)
    add_output_options(p, figure=True)
    p.add_argument("--exclude", action="append", default=[], metavar="FACTOR=VALUE",
                   help="leave out rows with this value (repeatable; VALUE may be a,b)")
    from analysis.options.importance import ImportanceOptions

    ImportanceOptions.add_arguments(p)  # every option of the fit, written once
    from analysis.options.importance_linear import LinearOptions

    LinearOptions.add_arguments(p)  # --outcome-type, --covariate, --mixed (importance_linear)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    """Options -> :func:`analysis.api.importance` (:func:`analysis.api.importance_linear`
    for a continuous outcome) -> print its Result."""
    import pandas as pd

    from analysis import api as bw
    from analysis.cli import cluster_settings, emit, load_with_design, row_counts, split_list
    from analysis.columns import (
        CI_HIGH,
        CI_LOW,
        COEF,
        DESIGN_EFFECT,
        DEVIATION_RATE,
        EFFECT,
        ODDS_RATIO,
        P_ADJUSTED,
        P_VALUE,
        ROBUST_MODEL_SE_RATIO,
        STD_ERR,
        TERM,
        N,
    )
    from analysis.design import parse_assignments
    from analysis.errors import AnalysisError
    from analysis.importance import ROBUST_TERM_COLUMNS, ImportanceRefusal
    from analysis.options.importance import ImportanceOptions
    from analysis.options.importance_linear import LinearOptions

    results, design, meta = load_with_design(args, with_meta=True)
    if not args.factors:  # every factor of the design: leave out the one-valued ones
        design = _without_constant_factors(results, design)
    exclude = {k: split_list(v) for k, v in
               parse_assignments(args.exclude, "--exclude").items()}
    options = ImportanceOptions.from_args(args)
    from analysis.commands.importance_linear import fix_hint, run_linear, wants_linear

    named = None if args.no_cluster else (args.cluster or design.cluster)
    if wants_linear(args, design):  # a continuous outcome: linear or mixed model
        run_linear(args, results, design, exclude=exclude, cluster=named)
        return
    if args.judge_noise:
        from analysis.commands._noise_options import needs_rows

        needs_rows(results, meta)  # refuses an engine's cell table
    lin = LinearOptions.from_args(args)
    try:
        result = bw.importance(results, design, options=options, exclude=exclude,
                               covariates=lin.covariates, standardise=lin.standardise,
                               applied=True)
    except ImportanceRefusal as exc:
        hints = "\n".join(fix_hint(f) for f in exc.fixes)
        raise AnalysisError(exc.explanation + (f"\nPossible fixes:\n{hints}" if hints else "")
                            ) from None
    fit, terms, noise = result.raw, result.table, None
    p_column = P_VALUE if options.adjust == "none" else P_ADJUSTED
    if options.judge_noise:  # adds noise_same_sign, noise_significant, noise_survives
        from analysis.commands._noise_options import noise_rows_payload

        noise = noise_rows_payload(terms, result.meta, TERM, COEF, p_column)
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.importance import importance_figure

        write_figure(importance_figure(fit.terms, scale=args.scale, max_p=args.max_p,
                                       p_column=p_column, confidence=args.confidence),
                     args.figure)
    s = result.settings
    counts = row_counts(results, meta=meta)
    if args.json:
        settings = {**s, "where": args.where, "exclude": args.exclude,
                    "n_missing_outcome": counts.get("n_missing_outcome", 0),
                    **cluster_settings(args)}
        payload = {"terms": terms, "tests": fit.factor_tests, "notes": list(fit.notes),
                   "settings": settings}
        if noise is not None:
            payload["judge_noise"] = noise
        emit(args, payload, terms)
        return
    if counts.get("n_missing_outcome"):
        print(f"{counts['n_missing_outcome']:,} rows without an outcome are left out.")
    print(f"{s['n_rows']:,} rows ({s['n_deviations']:,} deviations) in {s['n_cells']:,} cells; "
          f"{s['n_parameters']} parameters; {s['iterations']} iterations; McFadden R2 "
          f"{s['pseudo_r2']:.4f}")
    print(f"Deviation probability at all references: {s['baseline_probability']:.4f}")
    print("References: " + ", ".join(f"{k} = {v}" for k, v in fit.references.items()))
    print(f"Standard errors: {s['uncertainty']}")
    columns = [TERM, N, DEVIATION_RATE, COEF, STD_ERR, P_VALUE, P_ADJUSTED, ODDS_RATIO,
               CI_LOW, CI_HIGH, EFFECT]
    for ratio in (*ROBUST_TERM_COLUMNS[::-1], DESIGN_EFFECT, ROBUST_MODEL_SE_RATIO):
        if ratio in fit.terms:
            columns.insert(5, ratio)
    columns += [c for c in terms.columns if c.startswith("noise_")]
    shown = terms[columns]
    print()
    with pd.option_context("display.max_rows", 500, "display.width", 200,
                           "display.max_columns", 20):
        print(shown.round(4).to_string(index=False))
    if len(fit.factor_tests):
        print(("\nFactor tests (the factor and its interactions removed): p_value is the "
               "cluster-robust Wald test (" + ("HTZ, CR2 with small-sample df"
                                               if fit.df_method == "satterthwaite" else
                                               "robust_wald_df columns") + "), p_value_lr the "
               "likelihood-ratio test, which assumes independent rows:") if fit.cluster
              else "\nLikelihood-ratio test per factor (the factor and its interactions "
                   "removed):")
        print(fit.factor_tests.to_string(index=False))
    print("\n" + bw.importance_adjustment_sentence(args.adjust, args.alpha))
    for note in fit.notes:
        print(f"Note: {note}")
    if noise is not None:
        print(f"Judge noise: {noise['summary']}")
    if args.out:  # the full table, as with --json
        from analysis.safe_write import write_table

        write_table(terms, args.out)


def _without_constant_factors(results, design):  # noqa: ANN001, ANN202 - table, Design
    """The design without factors that take a single value in the table (an importer's
    ``model`` factor with one model: it is declared so that imports concatenate), each
    left out with a note on stderr, as the pages do; named ``--factors`` stay as given
    (the fit then refuses a constant one with its fixes)."""
    import sys

    kept, dropped = [], []
    for name in design.names:
        values = results[name].dropna().unique() if name in results.columns else []
        (dropped if len(values) == 1 else kept).append((name, values))
    if not dropped or not kept:
        return design
    for name, values in dropped:
        print(f"note: factor {name} takes only the value {str(values[0])!r} in the table: "
              "left out of the model (it cannot explain any difference)", file=sys.stderr)
    return design.subset([name for name, _ in kept])
