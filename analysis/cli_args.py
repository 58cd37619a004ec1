"""Small helpers of the command line shared by :mod:`analysis.cli` and the engines'
loader (:mod:`analysis.engines.cli_load`): lists, the outcome options, notes on stderr.

Light on purpose (no pandas): ``python -m analysis --help`` imports it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from analysis.errors import AnalysisError

__all__ = ["CLUSTER_COMMANDS", "cluster_settings", "counts_prompts", "infer_cluster",
           "infers_cluster", "note_decimal_commas", "outcome_from_args", "split_list",
           "uses_cluster"]


def split_list(text: str | None) -> list[str]:
    """``"a, b,c"`` -> ``["a", "b", "c"]``."""
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def outcome_from_args(args: argparse.Namespace):
    """The :class:`~analysis.design.Outcome` the options describe, or None."""
    from analysis.design import Outcome

    if not getattr(args, "outcome", None):
        for opt in ("deviation_values", "deviation_equals", "deviation_below", "deviation_above"):
            if getattr(args, opt, None) is not None:
                raise AnalysisError(f"--{opt.replace('_', '-')} needs --outcome COL.")
        return None
    if args.deviation_values is not None:
        return Outcome(args.outcome, "values", values=tuple(split_list(args.deviation_values)))
    if args.deviation_equals is not None:
        return Outcome(args.outcome, "equals", other_column=args.deviation_equals)
    if args.deviation_below is not None:
        return Outcome(args.outcome, "below", threshold=args.deviation_below)
    if args.deviation_above is not None:
        return Outcome(args.outcome, "above", threshold=args.deviation_above)
    return Outcome(args.outcome, "binary")


def counts_prompts(args: argparse.Namespace) -> bool:
    """Whether the command counts distinct prompts without a design file (``coverage``):
    the prompt unit is then inferred from the table."""
    return (getattr(args, "command", None) == "coverage" and not getattr(args, "design", None)
            and getattr(args, "count", "prompts") == "prompts")


def note_decimal_commas(converted: Sequence[str] | None) -> None:
    """The note on columns read as numbers with a decimal comma (pandas and the engines)."""
    if converted:
        print(f"note: read as numbers written with a decimal comma (0,5 = 0.5): "
              f"{', '.join(converted)}", file=sys.stderr)


#: Subcommands whose numbers use the design's cluster whatever the options (the others
#: that take ``--no-cluster`` use it for ``--ci bootstrap`` only).
CLUSTER_COMMANDS = ("subgroups", "importance", "compare")


def uses_cluster(args: argparse.Namespace) -> bool:
    """Whether the command would use a design's cluster with these options: it takes
    ``--no-cluster`` and either always clusters (:data:`CLUSTER_COMMANDS`) or resamples
    (``--ci bootstrap``)."""
    return hasattr(args, "no_cluster") and (
        getattr(args, "command", None) in CLUSTER_COMMANDS
        or getattr(args, "ci", None) == "bootstrap")


def infers_cluster(args: argparse.Namespace) -> bool:
    """Whether :func:`infer_cluster` reads the cluster from the table: no ``--design``,
    ``--cluster`` or ``--no-cluster``, and a command that uses a cluster."""
    return not (getattr(args, "design", None) or getattr(args, "no_cluster", False)
                or getattr(args, "cluster", None)) and uses_cluster(args)


def infer_cluster(args: argparse.Namespace, frame, design,  # noqa: ANN001, ANN201
                  factors: Sequence[str] | None = None):
    """Without a design file, the cluster the table's structure implies, as on the Data
    page (:func:`analysis.structure.inferred_cluster`; ``docs/structure.md``).

    Sets ``args.cluster_inferred`` (the column, or None) and ``args.cluster_reason``, and
    prints a note on stderr saying which column and how to turn it off. Nothing is
    inferred with ``--design``, ``--cluster COL``, ``--no-cluster``, or for a command
    that would not use a cluster; an inferred cluster that is one of the ``factors``
    (default: the design's) is not used (its values get their own parameters; a note
    says so). With ``--engine duckdb`` / ``spark``, ``frame`` is the engine's sample.
    """
    args.cluster_inferred, args.cluster_reason = None, None
    if not infers_cluster(args):
        return design
    from analysis.structure import inferred_cluster

    outcome = design.outcome.column if design.outcome is not None else None
    column, reason = inferred_cluster(frame, outcome=outcome)
    if column is None:
        return design
    if column in (design.names if factors is None else factors):
        print(f"note: the table's structure makes {column!r} the cluster ({reason}), but it "
              "is a factor of this analysis: it is not used as the cluster (rows are "
              "treated as independent given the factors).", file=sys.stderr)
        return design
    args.cluster_inferred, args.cluster_reason = column, reason
    print(f"note: no design file: rows are clustered by {column!r}, inferred from the "
          f"table ({reason}); standard errors, p-values and bootstraps account for it. "
          "--no-cluster treats rows as independent; --cluster COL names another column.",
          file=sys.stderr)
    return design.with_cluster(column)


def cluster_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``cluster_inferred`` (the column inferred without a design file, or None) and its
    ``cluster_reason``, for the ``settings`` of a command's JSON."""
    return {"cluster_inferred": getattr(args, "cluster_inferred", None),
            "cluster_reason": getattr(args, "cluster_reason", None)}
