"""``subgroups FILE --factors a,b --level K``: log disparity of every subgroup up to level K.

The rows of :func:`analysis.api.subgroups` (its docstring lists the columns ``--ci
bootstrap``, ``--power``, ``--judge-noise`` and ``--pooled`` add). The cluster is
``--cluster COL``, the design's, or without ``--design`` the one inferred from the table
(``analysis.cli.infer_cluster``); ``--no-cluster``: independent rows. The figure greys
out the subgroups not detectable at ``--effect`` (with ``--power``) and is coloured by the
pooled LD with ``--pooled`` (JSON ``"pooling"``: the model's terms and variances).
``--json`` prints ``{"subgroups": [...], "settings": {...}}``: one object per distinct
subgroup (subgroups with the same rows reported once, the others named in
``same_rows_as``), and the options with the rows analysed and left out; with
``--judge-noise``, also ``"judge_noise": {"settings", "summary", "rows"}``; with a
continuous outcome (the design declares it), also ``"group_means"``: the mean score per
factor value, its difference from the reference and a Welch CI and p-value (with a
cluster: CR2 with Satterthwaite df, ``df``, ``n_clusters`` and ``note``;
:func:`analysis.continuous.group_means`, as the Subgroups page shows it).
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("subgroups", "deviation rate and log disparity of every subgroup")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_output_options, command_parser
    from analysis.options.subgroups import SubgroupsOptions

    p = command_parser(sub, SUMMARY, factors=False, outcome=True,
                       description="Every subgroup fixing 1..K of the factors: n, deviations, "
                                   "rate, log disparity against the rows outside it, Woolf CI, "
                                   "p-value and adjusted p-value (--adjust).")
    p.add_argument("--exclude", action="append", default=[], metavar="FACTOR=VALUE",
                   help="leave out rows with this value (repeatable; VALUE may be a,b)")
    add_output_options(p, figure=True)
    # every option of the analysis, its bootstrap, judge noise and power, written once
    SubgroupsOptions.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    """Options -> :func:`analysis.api.subgroups` -> print its Result."""
    from analysis import api as bw
    from analysis.cli import cluster_settings, emit, load_with_design, row_counts, split_list
    from analysis.columns import SUBGROUP
    from analysis.design import parse_assignments
    from analysis.multiple_testing import LABELS as ADJUSTMENT_LABELS
    from analysis.options.subgroups import SubgroupsOptions

    opts = SubgroupsOptions.from_args(args)
    results, design, meta = load_with_design(args, with_meta=True)
    factors = design.names
    renamed = getattr(args, "renamed", {})
    exclude = {renamed.get(k, k): split_list(v)
               for k, v in parse_assignments(args.exclude, "--exclude").items()}
    if opts.judge_noise:
        from analysis.commands._noise_options import needs_rows

        needs_rows(results, meta)
    counts = row_counts(bw.subset_rows(results, exclude=exclude) if exclude else results,
                        meta=meta)
    result = bw.subgroups(results, design, options=opts, exclude=exclude, applied=True)
    full, table, s = result.tables["all"], result.table, result.settings
    cluster = s.get("cluster")
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.subgroups import sunburst_figure
        from analysis.pooling import POOLED_COLOUR_TITLE, swap_pooled

        write_figure(sunburst_figure(swap_pooled(full) if opts.pooled else full, factors,
                                     grey_undetectable=opts.effect is not None
                                     and opts.power is not None,
                                     colour_title=POOLED_COLOUR_TITLE if opts.pooled else None),
                     args.figure)
    noise = None
    if opts.judge_noise:
        from analysis.commands._noise_options import noise_rows_payload

        noise = noise_rows_payload(table, result.meta, SUBGROUP, "log_disparity",
                                   "p_adjusted")
    rows = table.drop(columns=[SUBGROUP])
    for f in factors:  # JSON: the value, or null where the subgroup does not fix the factor
        rows[f] = rows[f].astype(object).where(rows[f].notna(), None)
    notes = list(result.meta["warnings"])
    settings = {**s, "where": args.where, "exclude": args.exclude, "renamed": renamed,
                **counts, **cluster_settings(args), "notes": notes}
    payload = {"subgroups": rows, "settings": settings}
    if noise is not None:
        payload["judge_noise"] = noise
    if "pooling" in result.tables:
        payload["pooling"] = result.tables["pooling"]
    means = result.tables.get("group_means")  # a continuous outcome's mean scores
    if means is not None:
        payload["group_means"] = means
    emit(args, payload, table)
    if not args.json:
        if means is not None:
            from analysis.multiple_testing import adjusted_label

            how = (f"CR2 over the clusters of {cluster}, Satterthwaite df" if cluster
                   else "Welch")
            print(f"\nMean {design.outcome.column} per factor value (difference from the "
                  f"reference, {how} CI and p-value, {adjusted_label(s['adjust'])} over "
                  f"the non-reference values; subgroups above use the 0/1 deviation "
                  f"{design.outcome.rule()}):")
            print(means.round(4).to_string(index=False))
        print(f"Uncertainty: {s['uncertainty']}")
        for note in notes:
            if not note.startswith("CIs and p-values are cluster-robust"):
                print(f"Note: {note}")
        if noise is not None:
            print(noise["summary"])
        if counts.get("n_missing_outcome"):
            print(f"{counts['n_missing_outcome']:,} rows without an outcome are left out.")
        if len(full) > len(table):
            print(f"{len(full) - len(table)} subgroups have the same rows as another one: "
                  f"reported once (same_rows_as) and counted once in the "
                  f"{ADJUSTMENT_LABELS[opts.adjust]} adjustment.")

