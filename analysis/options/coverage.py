"""Options of coverage (``analysis.coverage``: coverage percentage and Gini index of the
factor grid; the ``coverage`` command, the Coverage page, the report's coverage
section)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.options import Options, register
from analysis.options.common import option
from analysis.options.types import POSITIVE_INT

__all__ = ["COUNTS", "CoverageOptions"]

#: What a cell of the grid counts (``analysis.coverage.PROMPTS`` / ``RESPONSES``).
COUNTS = ("prompts", "responses")


@register
@dataclass(frozen=True, kw_only=True)
class CoverageOptions(Options):
    """Coverage percentage and Gini index of the design's grid (methods.md §1)."""

    NAME = "coverage"
    COMMAND = "coverage"

    count: str = option("prompts", "what a cell counts: distinct prompts (default) or "
                        "response rows", choices=COUNTS, label="Cells count")
    limit: int = option(20, "list this many empty and thinnest cells (default %(default)s)",
                        type=POSITIVE_INT, metavar="K", label="Cells listed")
