"""The ``importance`` options and output for a continuous outcome (not a command itself).

With a 0/1 outcome, ``--covariate`` adds numeric covariates to the logistic model
(:func:`analysis.importance_linear.logistic_with_covariates`). ``--outcome-type
continuous`` (or ``auto``, the default, with a design whose outcome is declared
continuous) fits :func:`analysis.importance_linear.
linear_importance`: least squares on the factors and ``--covariate`` columns
(standardised unless ``--raw-covariates``), cluster-robust over the cluster; ``--mixed``
fits a mixed model with random effects per cluster (``--random-effects slopes`` as
lm-eval's DiscrimEval, or ``intercept``).
"""

from __future__ import annotations

import argparse

__all__ = ["fix_hint", "run_linear", "wants_linear"]


def wants_linear(args: argparse.Namespace, design) -> bool:
    """Whether the command fits the linear model (the outcome is continuous)."""
    from analysis.errors import AnalysisError
    from analysis.options.importance_linear import LinearOptions

    lin = LinearOptions.from_args(args)
    kind = lin.outcome_type
    linear = kind == "continuous" or (kind == "auto" and design.outcome is not None
                                      and design.outcome.type == "continuous")
    if not linear and lin.mixed:
        raise AnalysisError("--mixed needs a continuous outcome (--outcome-type continuous, "
                            "or a design that declares it).")
    if not linear and lin.covariates and (args.gee or args.interactions or args.judge_noise
                                          or args.on_separation != "refuse"):
        raise AnalysisError("--covariate in the logistic model does not combine with --gee, "
                            "--interaction, --judge-noise or --on-separation yet.")
    if lin.no_covariates and lin.covariates:
        raise AnalysisError("--no-covariates and --covariate contradict each other.")
    if linear and (args.gee or args.interactions or args.judge_noise):
        raise AnalysisError("--gee, --interaction and --judge-noise apply to the logistic "
                            "model of a 0/1 outcome, not to a continuous one.")
    return linear


def run_linear(args: argparse.Namespace, results, design, *, exclude, cluster) -> None:
    """Fit (:func:`analysis.api.importance_linear`) and print (or ``--json``) the linear /
    mixed model."""
    import pandas as pd

    from analysis import api as bw
    from analysis.cli import emit
    from analysis.errors import AnalysisError
    from analysis.importance import ImportanceRefusal
    from analysis.options.importance_linear import LinearOptions

    lin = LinearOptions.from_args(args)
    factors = [f for f in design.names if f not in (lin.covariates or design.covariates)]
    try:
        result = bw.importance_linear(
            results, design, options=lin, factors=factors, exclude=exclude, cluster=cluster,
            alpha=args.alpha, adjust=args.adjust, confidence=args.confidence,
            small_sample=args.small_sample, applied=True)
    except ImportanceRefusal as exc:
        hints = "\n".join(fix_hint(f) for f in exc.fixes)
        raise AnalysisError(exc.explanation + (f"\nPossible fixes:\n{hints}" if hints else "")
                            ) from None
    fit = result.raw
    if args.json:
        emit(args, {"terms": fit.terms, "tests": fit.factor_tests, "notes": list(fit.notes),
                    "settings": dict(result.settings)}, fit.terms)
        return
    model = {"ols": "linear model (least squares)",
             "cluster": "linear model (least squares), cluster-robust",
             "mixed": "mixed model"}[fit.covariance]
    print(f"Outcome {fit.outcome} (continuous): {model}; {fit.n_rows:,} rows in "
          f"{fit.n_cells:,} cells; {fit.n_parameters} parameters; R2 {fit.r2:.4f}")
    print("References: " + ", ".join(f"{k} = {v}" for k, v in fit.references.items()))
    print()
    with pd.option_context("display.max_rows", 500, "display.width", 200,
                           "display.max_columns", 20):
        print(fit.terms.drop(columns=["factor", "value"]).round(4).to_string(index=False))
    if len(fit.factor_tests):
        print("\nWald test per factor / covariate"
              + (" (HTZ: CR2 with small-sample df):" if fit.df_method == "satterthwaite"
                 else " (F on Satterthwaite denominator df, lmerTest's anova):"
                 if "df_denominator" in fit.factor_tests else ":"))
        print(fit.factor_tests.round(4).to_string(index=False))
    for note in fit.notes:
        print(f"Note: {note}")
    if args.out:
        from analysis.safe_write import write_table

        write_table(fit.terms, args.out)


def fix_hint(fix) -> str:  # noqa: ANN001 - an importance Fix
    """The command-line options that carry out a suggested fix."""
    parts = []
    if fix.drop_factors:
        parts.append(f"leave {', '.join(fix.drop_factors)} out of --factors")
    parts += [f"drop --interaction {a}:{b}" for a, b in fix.drop_interactions]
    parts += [f"--exclude {f}={','.join(v)}" for f, v in fix.exclude]
    parts += [f"--reference {f}={v}" for f, v in fix.references]
    if fix.on_separation:
        parts.append(f"--on-separation {fix.on_separation}")
    return f"- {fix.label}: {'; '.join(parts)}"
