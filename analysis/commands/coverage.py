"""``coverage FILE --factors a,b,c``: coverage percentage and Gini index of the design.

``--json`` prints an object with ``n_cells``, ``n_observed_cells``, ``n_empty_cells``,
``n_rows``, ``coverage_percentage`` (a fraction in [0, 1], as ``docs/methods.md`` §1
defines it), ``gini_index``, ``gini_index_observed``, ``per_factor_gini``
(``{factor: value}``), ``per_factor`` (the per-factor rows), ``empty_cells`` and
``thinnest_cells`` (the first ``--limit`` of each), ``settings`` (``Result.settings``:
every option used), ``model_coverage`` (when the design
has model factors), ``nestings`` and ``reading`` (plain-language sentences).

Cells count distinct prompts (``--count prompts``, the default; a prompt is a distinct
combination of the design's ``prompt_unit`` columns, or of its domain and prompt
factors), or rows with ``--count responses``; the payload's ``count`` says which.
Model coverage respects prompt factors nested in model factors (seeds only with
chain-of-thought); ``nested_prompt_factors`` lists them.

``--exclude`` takes a value out of the grid too, so it does not count as empty cells
(``--where`` keeps values instead). Without ``--factors`` the design's domain and prompt
factors are used. ``--figure`` writes a heatmap of the first two factors (rows per
combination, empty ones in red), or a bar chart of rows per value when there is one
factor. ``--out`` writes the summary table (joint row + one row per factor).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run"]

SUMMARY = ("coverage", "coverage percentage and Gini index of the factor grid")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_output_options, command_parser
    from analysis.options.coverage import CoverageOptions

    p = command_parser(sub, SUMMARY, factors=False, outcome=True)
    add_output_options(p, figure=True)
    p.add_argument("--exclude", action="append", default=[], metavar="FACTOR=VALUE",
                   help="leave out rows with this value, and the value from the grid "
                        "(repeatable; VALUE may be a,b)")
    CoverageOptions.add_arguments(p)  # --count, --limit: written once
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    """Options -> :func:`analysis.api.coverage` -> print its Result."""
    from dataclasses import replace

    from analysis import api as bw
    from analysis.cli import emit, load_with_design, show, split_list
    from analysis.columns import COVERAGE_PERCENTAGE, FACTORS, GINI_INDEX, SCOPE
    from analysis.design import Design, parse_assignments
    from analysis.errors import AnalysisError
    from analysis.options.coverage import CoverageOptions

    opts = CoverageOptions.from_args(args)
    if opts.limit < 0:
        raise AnalysisError("--limit must be 0 or more.")
    results, design, loaded = load_with_design(args, need_outcome=False, with_meta=True)
    # model coverage asks about the design file's model factors even when --factors
    # leaves them out of the grid (renamed like the factors when they clash)
    whole = Design.load(args.design) if args.design else design
    models = tuple(replace(f, name=args.renamed.get(f.name, f.name)) for f in whole.factors
                   if f.kind == "model" and args.renamed.get(f.name, f.name) not in design.names)
    exclude = {args.renamed.get(k, k): split_list(v)
               for k, v in parse_assignments(args.exclude, "--exclude").items()}
    unit_reason = getattr(args, "unit_reason", None)  # no design file: read from the table
    if unit_reason:
        print(f"note: prompt unit inferred: {unit_reason}", file=sys.stderr)
    result = bw.coverage(results, replace(design, factors=design.factors + models),
                         options=opts, factors=design.names if args.factors else None,
                         where={args.renamed.get(k, k): split_list(v) for k, v in
                                parse_assignments(args.where, "--where").items()},
                         exclude=exclude, applied=True)
    summary, factors, meta, tables = result.table, result.settings["factors"], result.meta, \
        result.tables
    joint, unit = summary.iloc[0], meta["count_unit"]
    payload = {
        "file": loaded.source_name or args.file,
        "factors": factors,
        "count": opts.count,
        **{k: joint[k] for k in summary.columns if k not in (SCOPE, FACTORS)},
        "per_factor_gini": meta["per_factor_gini"],
        "per_factor": tables["per_factor"],
        "empty_cells": tables["empty_cells"].astype(str),
        "thinnest_cells": tables["thinnest_cells"].astype({f: str for f in factors}),
        "nestings": meta["nesting_reading"],
        "prompt_unit": design.prompt_unit_columns() if opts.count == "prompts" else None,
        # what the cells count: the item id when the structure has one (docs/coverage.md)
        "count_unit": list(unit.columns),
        "count_label": unit.label,
        "prompt_unit_reason": unit_reason,
        "reading": list(result.notes),
        "settings": result.settings,  # every option used (issue 37: JSON = Result.settings)
    }
    if "models" in tables:
        payload["nested_prompt_factors"] = meta["nested_prompt_factors"]
        payload["model_reading"] = meta["model_reading"]
        payload["model_coverage"] = tables["models"].astype(
            {m: str for m in meta["model_factors"]})
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.coverage import coverage_heatmap, marginal_bar

        write_figure(coverage_heatmap(tables["pairs"], *factors[:2]) if "pairs" in tables
                     else marginal_bar(tables["marginals"], factors[0]), args.figure)
    if args.json:
        emit(args, payload, summary)
        return
    show(summary, out=args.out)
    print(f"\nCoverage {100 * joint[COVERAGE_PERCENTAGE]:.2f} % (fraction "
          f"{joint[COVERAGE_PERCENTAGE]:.6g}), Gini index {joint[GINI_INDEX]:.4f} "
          f"(cells count {'distinct prompts' if opts.count == 'prompts' else 'responses'})\n")
    for line in payload["reading"] + payload["nestings"] + payload.get("model_reading", []):
        print(f"- {line}")
    for title, key in (("Model coverage", "model_coverage"),
                       (f"First {opts.limit} empty cells", "empty_cells"),
                       (f"{opts.limit} thinnest cells", "thinnest_cells")):
        if key in payload and len(payload[key]):
            print(f"\n{title}:")
            show(payload[key])
