"""``variance FILE [--facet COL ...]``: variance components of the random facets (a
G-study) and the total-error intervals of the headline numbers.

REML on crossed random effects (``analysis/variance_components.py``): each facet
(default: the design's cluster and the seed / sample / temperature / judge columns; name
others with ``--facet COL``, repeatable) and its interaction with the model; the design's
other factors fixed. ``--json`` prints ``{"components": [...], "total_error": [...],
"settings": {...}, "notes": [...]}`` (the columns of :func:`analysis.api.variance_components`).
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("variance", "variance components of templates, seeds, judges: total-error intervals")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_output_options, command_parser
    from analysis.options.variance import VarianceOptions

    p = command_parser(sub, SUMMARY, factors=False, outcome=True,
                       description="REML variance components of the random facets "
                                   "(template, seed, judge ...) and their interactions with "
                                   "the model, each facet's share, and the total-error "
                                   "interval of each model's rate, the differences between "
                                   "models and each domain value's rate and log disparity.")
    add_output_options(p)
    VarianceOptions.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    """Options -> :func:`analysis.api.variance_components` -> print its Result."""
    from analysis import api as bw
    from analysis.cli import emit, load_with_design
    from analysis.options.variance import VarianceOptions

    opts = VarianceOptions.from_args(args)
    results, design = load_with_design(args, need_outcome=opts.score_column is None)
    result = bw.variance_components(results, design, options=opts, applied=True)
    errors = result.tables["total_error"]
    payload = {"components": result.table, "total_error": errors,
               "settings": dict(result.settings), "notes": list(result.notes)}
    emit(args, payload, result.table)
    if not args.json:
        shown = errors[["quantity", "label", "estimate", "ci_low_sampling", "ci_high_sampling",
                        "ci_low", "ci_high", "se_ratio", "dominant"]]
        print("\nSampling vs total-error intervals (over the facets):")
        emit(argparse.Namespace(json=False, out=None), None, shown.round(4))
        print(f"Method: {result.settings['method']}.")
        for note in result.notes:
            print(f"Note: {note}")
