"""``power --rate R --ld LD --share S``: rows needed to detect a log disparity.

A subgroup holding a share S of the rows, the rows outside it deviating at rate R, and a
log disparity LD to detect with a two-sided Wald test at level ``--alpha`` (0.05) with
power ``--power`` (0.8). ``--json`` prints ``n_total``, ``n_subgroup``, ``n_outside``,
``rate_subgroup``, ``achieved_power`` and the inputs (``analysis.planning.sample_size``;
formulas in ``docs/planning.md``).
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("power", "rows needed to detect a log disparity (power analysis)")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.options.planning import PowerOptions

    p = sub.add_parser(SUMMARY[0], help=SUMMARY[1])
    p.add_argument("--rate", type=float, required=True,
                   help="deviation rate of the rows outside the subgroup")
    p.add_argument("--ld", type=float, required=True, help="log disparity to detect")
    p.add_argument("--share", type=float, required=True,
                   help="the subgroup's share of all rows, e.g. 0.1")
    PowerOptions.add_arguments(p)  # --alpha, --power (written once)
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis import api as bw
    from analysis.cli import emit
    from analysis.options.planning import PowerOptions

    out = bw.power(rate=args.rate, ld=args.ld, share=args.share,
                   options=PowerOptions.from_args(args)).raw
    if args.json:
        emit(args, out)
        return
    print(f"{out['n_total']:,} rows in all ({out['n_subgroup']:,} in the subgroup, "
          f"{out['n_outside']:,} outside) detect LD = {args.ld:g} (subgroup rate "
          f"{out['rate_subgroup']:.4f} against {args.rate:g}) with power "
          f"{out['achieved_power']:.3f} at alpha = {args.alpha:g} (two-sided Wald test).")
    if out["n_first_reaching"] < out["n_total"]:
        print(f"Exact power is a sawtooth in N: {out['n_first_reaching']:,} rows already "
              f"reach {args.power:g}, but some totals between fall back below it; from "
              f"{out['n_total']:,} on it stays above (checked up to "
              f"{out['checked_up_to']:,}).")
