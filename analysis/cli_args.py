"""Small helpers of the command line shared by :mod:`analysis.cli` and the engines'
loader (:mod:`analysis.engines.cli_load`): lists, the outcome options, notes on stderr.

Light on purpose (no pandas): ``python -m analysis --help`` imports it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from analysis.errors import AnalysisError

__all__ = ["counts_prompts", "note_decimal_commas", "outcome_from_args", "split_list"]


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
