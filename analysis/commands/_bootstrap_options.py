"""``--ci bootstrap``, ``--cluster``, ``--n-boot``, ``--seed``: shared by subgroups, ecdf
and index (not a subcommand)."""

from __future__ import annotations

import argparse

__all__ = ["add_bootstrap_options", "bootstrap_settings"]


def add_bootstrap_options(parser: argparse.ArgumentParser, *, n_boot: int) -> None:
    """The bootstrap options, with ``n_boot`` replicates by default."""
    g = parser.add_argument_group("uncertainty (bootstrap)")
    g.add_argument("--ci", choices=("none", "bootstrap"), default="none",
                   help="add bootstrap percentile intervals (cluster bootstrap with --cluster)")
    which = g.add_mutually_exclusive_group()
    which.add_argument("--cluster", metavar="COL",
                       help="resample whole clusters (template, prompt id, seed); default: "
                            "the design's cluster")
    which.add_argument("--no-cluster", action="store_true",
                       help="resample rows independently even when the design names a cluster")
    from analysis import cli as cli_types

    g.add_argument("--n-boot", type=cli_types.POSITIVE_INT, default=n_boot,
                   help=f"bootstrap replicates (default {n_boot})")
    # One seed for every random step of the command (bootstrap; also ecdf's KS splits).
    g.add_argument("--seed", type=cli_types.NON_NEGATIVE_INT, default=0,
                   help="random seed (default 0)")


def bootstrap_settings(args: argparse.Namespace, design) -> dict:
    """Keyword arguments of the ``analysis.bootstrap`` functions from the options."""
    cluster = None if getattr(args, "no_cluster", False) else (args.cluster or design.cluster)
    return {"cluster": cluster, "n_boot": args.n_boot, "seed": args.seed}
