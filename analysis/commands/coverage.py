"""``coverage FILE --factors a,b,c``: coverage percentage and Gini index of the design.

``--json`` prints an object with ``n_cells``, ``n_observed_cells``, ``n_empty_cells``,
``n_rows``, ``coverage_percentage`` (a fraction in [0, 1], as ``docs/methods.md`` §1
defines it), ``gini_index``, ``gini_index_observed``, ``per_factor_gini``
(``{factor: value}``), ``per_factor`` (the per-factor rows), ``empty_cells`` and
``thinnest_cells`` (the first ``--limit`` of each), ``model_coverage`` (when the design
has model factors), ``nestings`` and ``reading`` (plain-language sentences).

Cells count distinct prompts (``--count prompts``, the default; a prompt is a distinct
combination of the design's ``prompt_unit`` columns, or of its domain and prompt
factors), or rows with ``--count responses``; the payload's ``count`` says which.
Model coverage respects prompt factors nested in model factors (seeds only with
chain-of-thought); ``nested_prompt_factors`` lists them.

``--exclude FACTOR=VALUE`` (repeatable, as for ``subgroups`` and ``importance``) leaves out
the rows with that value and takes the value out of the grid, so it does not count as empty
cells; ``--where`` keeps values instead.

Without ``--factors`` the design's domain and prompt factors are used. ``--figure``
writes a heatmap of the first two factors (rows per combination, empty ones in red),
or a bar chart of rows per value when there is one factor. ``--out`` writes the
summary table (joint row + one row per factor).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run"]

from analysis.coverage import exclude_from_grid  # noqa: E402 - moved there; the API uses it


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_factor_options, add_input, add_outcome_options, add_output_options
    from analysis.options.coverage import CoverageOptions

    p = sub.add_parser("coverage", help="coverage percentage and Gini index of the factor grid")
    add_input(p)
    add_factor_options(p, required=False)
    add_outcome_options(p)
    add_output_options(p, figure=True)
    p.add_argument("--exclude", action="append", default=[], metavar="FACTOR=VALUE",
                   help="leave out rows with this value, and the value from the grid "
                        "(repeatable; VALUE may be a,b)")
    CoverageOptions.add_arguments(p)  # --count, --limit: written once
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis import api as bw
    from analysis import coverage as cov
    from analysis.cells import cell_table
    from analysis.cli import emit, load_with_design, split_list
    from analysis.columns import COVERAGE_PERCENTAGE, FACTORS, GINI_INDEX, SCOPE
    from analysis.design import Design, parse_assignments
    from analysis.errors import AnalysisError
    from analysis.nesting import describe_nesting
    from analysis.options.coverage import CoverageOptions

    opts = CoverageOptions.from_args(args)
    if opts.limit < 0:
        raise AnalysisError("--limit must be 0 or more.")
    results, design = load_with_design(args, need_outcome=False)
    # --factors lists exactly the grid; a design file alone means its domain + prompt factors
    factors = design.names if args.factors else cov.default_factors(design)
    # model coverage asks about the design file's model factors even when --factors
    # leaves them out of the grid
    whole = Design.load(args.design) if args.design else design
    if args.renamed:  # factors named like an output column were renamed on loading
        from dataclasses import replace
        whole = replace(whole, factors=tuple(replace(f, name=args.renamed.get(f.name, f.name))
                                             for f in whole.factors))
    models = [m for m in whole.of_kind("model") if m not in factors and m in results]
    where = {args.renamed.get(k, k): split_list(v)
             for k, v in parse_assignments(args.where, "--where").items()}
    exclude = {args.renamed.get(k, k): split_list(v)
               for k, v in parse_assignments(args.exclude, "--exclude").items()}
    unit_reason = getattr(args, "unit_reason", None)  # no design file: read from the table
    if unit_reason:
        print(f"note: prompt unit inferred: {unit_reason}", file=sys.stderr)
    result = bw.coverage(results, design, options=opts, factors=factors, where=where,
                         exclude=exclude, applied=True)
    summary, cells = result.table, result.raw
    results, design = exclude_from_grid(results, design, exclude)  # as the API
    joint = summary.iloc[0]
    nestings = result.tables["nestings"]  # found by the API from the observed cells
    payload = {
        "file": results.attrs.get("source_name", args.file),
        "factors": factors,
        "count": opts.count,
        **{k: joint[k] for k in summary.columns if k not in (SCOPE, FACTORS)},
        "per_factor_gini": cov.per_factor_gini(summary),
        "per_factor": summary[summary[SCOPE] == cov.MARGINAL],
        "empty_cells": result.tables["empty_cells"].astype(str),
        "thinnest_cells": result.tables["thinnest_cells"].astype({f: str for f in factors}),
        "nestings": [describe_nesting(r) for r in nestings.to_dict(orient="records")],
        "prompt_unit": design.prompt_unit_columns() if opts.count == "prompts" else None,
        # what the cells count: the item id when the structure has one (docs/coverage.md)
        "count_unit": list(cov.counted_unit(cells).columns),
        "count_label": cov.counted_unit(cells).label,
        "prompt_unit_reason": unit_reason,
        "reading": list(result.notes),
    }
    all_models = [m for m in factors if m in design.of_kind("model")] + models
    if all_models and [f for f in factors if f not in all_models]:
        grid_design = whole.subset(list(dict.fromkeys(factors + models)))
        model_cells = cell_table(results, factors + models, where=where, with_outcome=False)
        by_model = cov.model_coverage(model_cells, grid_design, model_factors=all_models,
                                      prompt_factors=factors, where=where)
        payload["nested_prompt_factors"] = by_model.attrs["nested_prompt_factors"]
        payload["model_reading"] = cov.describe_model_coverage(by_model, all_models)
        payload["model_coverage"] = by_model.astype({m: str for m in all_models})
    if args.figure:
        from analysis.export import write_figure
        from analysis.figures.coverage import coverage_heatmap, marginal_bar

        if len(factors) >= 2:
            pairs = cov.pair_counts(cells, design, factors[0], factors[1], where=where)
            fig = coverage_heatmap(pairs, factors[0], factors[1])
        else:
            fig = marginal_bar(result.tables["marginals"], factors[0])
        write_figure(fig, args.figure)
    if args.json:
        emit(args, payload, summary)
        return
    emit(argparse.Namespace(json=False, out=args.out), None, summary)
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
            emit(argparse.Namespace(json=False, out=None), None, payload[key])

