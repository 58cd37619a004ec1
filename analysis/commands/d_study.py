"""``plan FILE --d-study``: the design study (``analysis/d_study.py``).

From the variance components of FILE's facets, the projected SE of the difference
between models (or a model's rate, ``--target rate``) and its cost for other designs:
one more level of each facet, ten more, twice as many ("one more judge or ten more
templates?"), the cheapest design reaching ``--target-se``, and the design with the
smallest SE at the current cost. Costs: ``--answer-cost`` per prompt answered and
``--judge-cost`` per judge call (the Judges page's cost model gives dollars).
``--json`` prints ``{"current", "changes", "cheapest", "best_at_cost", "components",
"settings", "notes", "one_or_ten"}`` (``one_or_ten``: the sentence answering "one more
judge or ten more templates?", null without such a pair of facets); ``--out`` writes
every design searched as CSV.

Not a subcommand of its own: the ``plan`` command registers these arguments.
"""

from __future__ import annotations

import argparse

__all__ = ["add_d_study_arguments", "run_d_study"]

_SHOWN = ["change", "cost", "extra_cost", "se_rate", "se_difference", "g_coefficient",
          "se_gain_per_cost"]


def add_d_study_arguments(parser: argparse.ArgumentParser) -> None:
    """``--d-study`` and the options of :class:`analysis.options.variance.DStudyOptions`."""
    from analysis.options.variance import DStudyOptions

    parser.add_argument("--d-study", action="store_true",
                        help="design study: projected SE and cost of more templates, "
                             "seeds, judges (needs FILE)")
    DStudyOptions.add_arguments(parser)


def run_d_study(args: argparse.Namespace) -> None:
    """Options -> :func:`analysis.api.d_study` -> print its Result."""
    import pandas as pd

    from analysis import api as bw
    from analysis.cli import emit, load_with_design
    from analysis.errors import AnalysisError
    from analysis.options.variance import DStudyOptions

    if not args.file:
        raise AnalysisError("plan --d-study needs a results FILE: the facets' variances "
                            "are estimated from it.")
    opts = DStudyOptions.from_args(args)
    results, design = load_with_design(args, need_outcome=opts.score_column is None)
    result = bw.d_study(results, design, options=opts, applied=True)
    t = result.tables
    payload = {"current": t["current"], "changes": result.table, "cheapest": t["cheapest"],
               "best_at_cost": t["best_at_cost"], "components": t["components"],
               "settings": dict(result.settings), "notes": list(result.notes),
               "one_or_ten": result.meta.get("one_or_ten")}
    if args.out:
        from analysis.safe_write import write_table

        write_table(t["designs"], args.out)  # atomic; cells neutralised against formulas
    if args.json:
        emit(args, payload)
        return
    shown = pd.concat([t["current"], result.table, t["cheapest"].assign(change=lambda d:
                       "cheapest reaching target: " + d["change"]),
                       t["best_at_cost"].assign(change=lambda d: "best at current cost: "
                                                + d["change"])], ignore_index=True)
    print(f"Design study (target: the {result.settings['target']}; "
          f"{result.settings['method']}):")
    shown = shown[[c for c in _SHOWN if c in shown]].copy()
    shown["se_gain_per_cost"] = shown["se_gain_per_cost"].map(
        lambda v: "" if pd.isna(v) else f"{v:.3g}")
    emit(argparse.Namespace(json=False, out=None), None, shown.round(5))
    for note in result.notes:
        print(f"Note: {note}")
