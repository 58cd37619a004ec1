"""``compare FILE --design D --by model [--reference A] [--factors a,b --level K]``: paired
comparison of the values of a factor on the same prompts (``docs/compare.md``).

Pairs rows on the prompt unit (the design's ``prompt_unit``, else an id column such as
``example_id``, else the domain/prompt factors; ``--unit COLS`` chooses), then per pair
of values (or each against ``--reference``): McNemar's test and the paired difference in
deviation rate (``--score COL``: paired t and Wilcoxon on a numeric score), adjusted
together (``--adjust holm|bh``); with ``--factors``, the per-subgroup paired differences
with bootstrap intervals (prompt units or the design's clusters resampled).
``--json`` prints ``{"overall": [...], "subgroups": [...], "pairing": {...},
"notes": [...], "settings": {...}}``. ``--figure F`` writes the dumbbell chart of the
first pair (``--pair A,B`` another; ``--figure-kind sunburst`` the sunburst of the
difference in log disparity).
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("compare", "paired comparison of models (or settings) on the same prompts")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis import cli as cli_types
    from analysis.cli import add_output_options, command_parser
    from analysis.options.compare import CompareOptions

    p = command_parser(sub, SUMMARY, outcome=True,
                       description="Pair the rows of each value of --by on the prompt unit; "
                                   "McNemar's test (or paired t / Wilcoxon for a score), the "
                                   "paired difference with its interval per pair of values, "
                                   "and per subgroup of --factors with bootstrap intervals.")
    p.add_argument("--by", required=True, help="the compared factor (model, input format ...)")
    p.add_argument("--reference", dest="by_reference", metavar="VALUE",
                   help="compare every value of --by against this one (default: every pair)")
    p.add_argument("--factors", dest="compare_factors", metavar="A,B",
                   help="prompt-level factors for the per-subgroup comparison")
    p.add_argument("--level", type=cli_types.POSITIVE_INT, default=None,
                   help="highest subgroup level (default 2, or 1 with a single factor)")
    p.add_argument("--unit", metavar="COLS",
                   help="columns identifying a prompt (default: the design's prompt_unit, "
                        "else an id column such as example_id, else the domain/prompt "
                        "factors)")
    p.add_argument("--score", metavar="COL",
                   help="compare this numeric column (paired t, Wilcoxon) instead of the "
                        "0/1 deviation")
    p.add_argument("--where", action="append", default=[], metavar="FACTOR=VALUE",
                   help="keep only rows with this value (repeatable; VALUE may be a,b)")
    CompareOptions.add_arguments(p)  # every option of the comparison, written once
    add_output_options(p, figure=True)
    p.add_argument("--figure-kind", choices=("dumbbell", "sunburst"), default="dumbbell",
                   help="with --figure: dumbbell of the subgroup rates (default) or sunburst "
                        "coloured by the difference in log disparity")
    p.add_argument("--pair", metavar="A,B", help="the pair the figure shows (default: first)")
    p.add_argument("--native-scores", action="store_true",
                   help="instead: the paired deltas of the benchmark's own scores (s_DIS, "
                        "s_AMB, pct_stereotype ...) with paired cluster-bootstrap intervals")
    from analysis.options.native import NativeDeltasOptions

    NativeDeltasOptions.add_arguments(p, skip=("cluster", "seed"))  # the comparison's own
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    """Options -> :func:`analysis.api.compare` -> print its Result."""
    from analysis import api as bw
    from analysis.cli import cluster_settings, emit, load_with_design, split_list
    from analysis.errors import AnalysisError, PairingError
    from analysis.options.compare import CompareOptions

    options = CompareOptions.from_args(args)
    factors = split_list(args.compare_factors)
    if not args.design:  # factors come from the options: the compared one and the subgroups
        args.factors = ",".join(dict.fromkeys([args.by, *factors]))
    results, design = load_with_design(args, need_outcome=args.score is None)
    renamed = getattr(args, "renamed", {})
    by = renamed.get(args.by, args.by)
    factors = [renamed.get(f, f) for f in factors]
    if by not in design.names:
        raise PairingError(f"--by {args.by!r} is not a factor of the design (factors: "
                           f"{', '.join(design.names)}).")
    if args.native_scores:  # docs/native_scores.md
        from analysis.commands.native import run_deltas

        return run_deltas(args, results, design)
    result = bw.compare(results, design, by=by, reference=args.by_reference,
                        subgroups=factors, level=args.level,
                        unit=split_list(args.unit) or None, score=args.score, options=options,
                        applied=True)
    overall, subs, pairing = result.table, result.raw.subgroups, result.raw.pairing
    if args.figure:
        pair = _figure_pair(args.pair, overall)
        if pair not in subs:
            raise AnalysisError("--figure shows per-subgroup differences: give --factors "
                                f"(and a pair that is compared; compared: "
                                f"{', '.join('/'.join(p) for p in subs) or 'none'}).")
        from analysis.export import write_figure
        from analysis.figures.compare import difference_sunburst, dumbbell_figure

        fig = (dumbbell_figure(subs[pair]) if args.figure_kind == "dumbbell"
               else difference_sunburst(subs[pair], factors))
        write_figure(fig, args.figure)
    import pandas as pd

    sub_rows = result.tables.get("subgroups", pd.DataFrame()).copy()
    for f in factors:  # JSON: the value, or null where the subgroup does not fix it
        sub_rows[f] = sub_rows[f].astype(object).where(sub_rows[f].notna(), None)
    s = result.settings
    settings = {"by": by, "reference": args.by_reference, "factors": factors,
                "level": s["level_used"], "test": options.test, "adjust": options.adjust,
                "duplicates": options.duplicates, "score": args.score,
                # JSON keys as before the options were written once
                "n_boot": options.n_resamples, "seed": options.seed,
                "confidence": options.confidence, "alpha": options.alpha, "where": args.where,
                "renamed": renamed, **cluster_settings(args), "resampled": s["resampled"]}
    # then every other option and input of the Result (cluster, n_resamples, unit ...)
    settings.update({k: v for k, v in s.items() if k not in settings and k != "level_used"})
    pairing_info = {"unit": pairing.unit, "unit_source": pairing.unit_source,
                    "outcome": pairing.outcome, "cluster": pairing.cluster,
                    "values": pairing.values,
                    "counts": pairing.counts.to_dict(orient="records")}
    notes = list(result.raw.notes)
    payload = {"overall": overall, "subgroups": sub_rows, "pairing": pairing_info,
               "notes": notes, "settings": settings}
    emit(args, payload, overall)
    if not args.json:
        if len(sub_rows):
            from analysis.compare import (
                CI_HIGH,
                CI_LOW,
                DIFFERENCE,
                DIFFERS,
                MODEL_A,
                MODEL_B,
                P_ADJUSTED,
            )

            cols = [MODEL_A, MODEL_B, "subgroup", "n", DIFFERENCE, CI_LOW, CI_HIGH,
                    P_ADJUSTED, DIFFERS]
            print()
            emit(args, None, sub_rows[[c for c in cols if c in sub_rows]])
        print()
        print("\n".join(notes))


def _figure_pair(text: str | None, overall) -> tuple[str, str]:  # noqa: ANN001
    from analysis.cli import split_list
    from analysis.compare import MODEL_A, MODEL_B
    from analysis.errors import AnalysisError

    pairs = list(zip(overall[MODEL_A], overall[MODEL_B], strict=True))
    if not text:
        return pairs[0]
    a, b = (split_list(text) + ["", ""])[:2]
    if (a, b) in pairs:
        return a, b
    if (b, a) in pairs:
        return b, a
    raise AnalysisError(f"--pair {text!r} is not a compared pair (compared: "
                        f"{', '.join(f'{x},{y}' for x, y in pairs)}).")
