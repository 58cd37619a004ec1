"""Which lm-eval bias-task family reads a samples file (``docs/harness_tasks.md``).

Each family module (:mod:`analysis.importers.harness_bbq`, ``harness_crows_pairs``,
``harness_discrim_eval``) builds on :mod:`analysis.importers.harness_tasks`; this module
sits above them all and asks each in turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.importers import harness_bbq, harness_crows_pairs, harness_discrim_eval
from analysis.importers.harness_tasks import TaskImport

__all__ = ["families", "unpack"]


def families() -> list[Any]:
    """The family modules, in the order they are asked."""
    return [harness_bbq, harness_crows_pairs, harness_discrim_eval]


def unpack(records: list[dict[str, Any]], metric_names: Sequence[str], path: Path
           ) -> TaskImport | None:
    """The family reading of one samples file, or None when no family recognises it."""
    for module in families():
        if module.detect(metric_names, records):
            return module.unpack(records, path)
    return None
