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


def register(sub: argparse._SubParsersAction) -> None:
    from analysis import cli as cli_types
    from analysis.cli import add_input, add_outcome_options, add_output_options
    from analysis.compare import ADJUSTMENTS, DEFAULT_N_BOOT, DUPLICATE_RULES, MCNEMAR_TESTS

    p = sub.add_parser("compare", help="paired comparison of models (or settings) on the "
                                       "same prompts",
                       description="Pair the rows of each value of --by on the prompt unit; "
                                   "McNemar's test (or paired t / Wilcoxon for a score), the "
                                   "paired difference with its interval per pair of values, "
                                   "and per subgroup of --factors with bootstrap intervals.")
    add_input(p)
    add_outcome_options(p)
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
    p.add_argument("--duplicates", choices=DUPLICATE_RULES, default="mean",
                   help="a prompt answered twice by one value: mean (default, averaged) or "
                        "refuse (exit 2)")
    p.add_argument("--test", choices=MCNEMAR_TESTS, default="auto",
                   help="McNemar: auto (default: exact binomial below 25 discordant pairs, "
                        "chi-square with continuity correction otherwise), exact or chi2")
    p.add_argument("--adjust", choices=ADJUSTMENTS, default="holm",
                   help="adjust the p-values of all pairs together: holm (default) or bh")
    p.add_argument("--where", action="append", default=[], metavar="FACTOR=VALUE",
                   help="keep only rows with this value (repeatable; VALUE may be a,b)")
    g = p.add_argument_group("intervals")
    g.add_argument("--cluster", help="cluster column (default: the design's); pairs in one "
                                     "cluster are resampled together")
    g.add_argument("--no-cluster", action="store_true",
                   help="treat prompt units as independent even if the design names a cluster")
    g.add_argument("--n-boot", type=cli_types.int_at_least(20), default=DEFAULT_N_BOOT,
                   help=f"bootstrap replicates per subgroup table (default {DEFAULT_N_BOOT})")
    g.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    g.add_argument("--confidence", type=cli_types.PROBABILITY, default=0.95,
                   help="interval level (default 0.95)")
    g.add_argument("--alpha", type=cli_types.PROBABILITY, default=0.05,
                   help="level of 'differs' and of the subgroup verdicts (default 0.05)")
    add_output_options(p, figure=True)
    p.add_argument("--figure-kind", choices=("dumbbell", "sunburst"), default="dumbbell",
                   help="with --figure: dumbbell of the subgroup rates (default) or sunburst "
                        "coloured by the difference in log disparity")
    p.add_argument("--pair", metavar="A,B", help="the pair the figure shows (default: first)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis.cli import emit, load_with_design, split_list
    from analysis.compare import MODEL_A, MODEL_B, compare
    from analysis.errors import AnalysisError, PairingError

    factors = split_list(args.compare_factors)
    if not args.design:  # factors come from the options: the compared one and the subgroups
        args.factors = ",".join(dict.fromkeys([args.by, *factors]))
    if args.cluster and args.no_cluster:
        raise AnalysisError("--cluster and --no-cluster contradict each other.")
    results, design = load_with_design(args, need_outcome=args.score is None)
    renamed = getattr(args, "renamed", {})
    by = renamed.get(args.by, args.by)
    factors = [renamed.get(f, f) for f in factors]
    if by not in design.names:
        raise PairingError(f"--by {args.by!r} is not a factor of the design (factors: "
                           f"{', '.join(design.names)}).")
    cluster = None if args.no_cluster else (args.cluster or "design")
    comparison = compare(results, design, by, reference=args.by_reference, factors=factors,
                         max_level=args.level, unit=split_list(args.unit) or None,
                         score=args.score, cluster=cluster, duplicates=args.duplicates,
                         test=args.test, adjust=args.adjust, n_boot=args.n_boot,
                         seed=args.seed, confidence=args.confidence, alpha=args.alpha)
    overall, subs, pairing = comparison.overall, comparison.subgroups, comparison.pairing
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
    rows = []
    for table in subs.values():
        t = table.copy()
        for f in factors:  # JSON: the value, or null where the subgroup does not fix it
            t[f] = t[f].astype(object).where(t[f].notna(), None)
        rows.append(t)
    import pandas as pd

    sub_rows = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    first = next(iter(subs.values()), None)
    settings = {"by": by, "reference": args.by_reference, "factors": factors,
                "level": int(first["level"].max()) if first is not None else None,
                "test": args.test, "adjust": args.adjust, "duplicates": args.duplicates,
                "score": args.score, "n_boot": args.n_boot, "seed": args.seed,
                "confidence": args.confidence, "alpha": args.alpha, "where": args.where,
                "renamed": renamed,
                "resampled": first.attrs["resampled"] if first is not None else None}
    pairing_info = {"unit": pairing.unit, "unit_source": pairing.unit_source,
                    "outcome": pairing.outcome, "cluster": pairing.cluster,
                    "values": pairing.values,
                    "counts": pairing.counts.to_dict(orient="records")}
    payload = {"overall": overall, "subgroups": sub_rows, "pairing": pairing_info,
               "notes": comparison.notes, "settings": settings}
    emit(args, payload, overall)
    if not args.json:
        if len(sub_rows):
            from analysis.compare import CI_HIGH, CI_LOW, DIFFERENCE, DIFFERS, P_ADJUSTED

            cols = [MODEL_A, MODEL_B, "subgroup", "n", DIFFERENCE, CI_LOW, CI_HIGH,
                    P_ADJUSTED, DIFFERS]
            print()
            emit(args, None, sub_rows[[c for c in cols if c in sub_rows]])
        print()
        print("\n".join(comparison.notes))


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
