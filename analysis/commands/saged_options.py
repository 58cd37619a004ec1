"""SAGED statistics options of ``analysis disparity`` (a helper, not a subcommand).

``--normalize`` rescales the feature (and ``--baseline``) before everything else;
``--bins``, ``--precision-tolerance``, ``--percentile`` and ``--mode-bin-width`` set the
statistics of :func:`analysis.saged_stats.saged_statistics`, added to the JSON as
``saged_statistics`` (per group) and ``saged_disparity`` (across groups).
``--saged-conventions`` computes the summary and disparity metrics as the SAGED library
does (``analysis.disparity.Conventions``).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_saged_options", "conventions", "normalized", "saged_payload"]


def add_saged_options(p: argparse.ArgumentParser) -> None:
    """The options (SAGED's defaults)."""
    from analysis import saged_stats as S

    g = p.add_argument_group("SAGED statistics (mode, range, percentile; KL divergence, "
                             "precision, correlation with --baseline)")
    g.add_argument("--normalize", choices=S.NORMALIZATIONS, default="none",
                   help="rescale feature and baseline together first (default none)")
    g.add_argument("--bins", type=int, default=S.DEFAULT_BINS,
                   help=f"histogram bins of the KL divergence (default {S.DEFAULT_BINS})")
    g.add_argument("--precision-tolerance", type=float, default=S.DEFAULT_TOLERANCE,
                   help="|feature - baseline| counted as agreement up to this (default 0)")
    g.add_argument("--percentile", type=float, default=S.DEFAULT_PERCENTILE,
                   help="percentile per group, 0-100 (default 50)")
    g.add_argument("--mode-bin-width", type=float, default=S.DEFAULT_MODE_BIN_WIDTH,
                   help=f"bin width of the mode (default {S.DEFAULT_MODE_BIN_WIDTH})")
    g.add_argument("--saged-conventions", action="store_true",
                   help="the SAGED library's numbers: variance/std ddof 0, scipy's default "
                        "skew/kurtosis, max Z = largest signed scipy zscore (ddof 0), "
                        "min/max whenever max != 0 (docs/disparity.md)")


def normalized(args: argparse.Namespace, results):
    """``results`` with the feature (and baseline) rescaled as ``--normalize`` asks."""
    from analysis.saged_stats import normalize

    return normalize(results, [args.feature, args.baseline or ""], args.normalize)


def saged_payload(args: argparse.Namespace, results, by: list[str]) -> dict[str, Any]:
    """``saged_statistics`` and ``saged_disparity`` for the JSON (already normalised)."""
    from analysis.saged_stats import saged_disparity, saged_statistics

    table = saged_statistics(results, args.feature, by, baseline=args.baseline,
                             bins=args.bins, tolerance=args.precision_tolerance,
                             percentile=args.percentile, mode_bin_width=args.mode_bin_width)
    return {"saged_statistics": table,
            "saged_disparity": saged_disparity(table, alpha=args.alpha,
                                               conventions=conventions(args)),
            "normalization": args.normalize}


def conventions(args: argparse.Namespace) -> str:
    """``saged`` with ``--saged-conventions``, else ``workbench``."""
    return "saged" if getattr(args, "saged_conventions", False) else "workbench"
