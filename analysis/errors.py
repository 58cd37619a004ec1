"""Typed exceptions of the analysis package.

Every exception derives from :class:`AnalysisError` (itself a ``ValueError``), so the
app and the CLI can catch one type and show ``str(exc)``, which is always written for
an analyst: it names the file, column, rows or values concerned.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

__all__ = [
    "AnalysisError", "BudgetError", "ClusterError", "CounterfactualError", "CriteriaError",
    "DesignError", "DesignMismatchError", "EngineError", "FitError", "GenerationError",
    "LimitError", "LoadError", "NoPairsError", "OutputError", "PairingError", "PoolingError",
    "PromptUnitError", "SectionSkipped", "did_you_mean",
]


class AnalysisError(ValueError):
    """Base class: bad input to an analysis function, with an analyst-readable message."""


class GenerationError(AnalysisError):
    """Templates or prompts that cannot be derived, read or filled (analysis.generate):
    the message names the rows, templates or slots."""


class LoadError(AnalysisError):
    """A results file could not be read into a table (format, encoding, header...)."""


class DesignError(AnalysisError):
    """A design is malformed on its own (unknown kind, reference not among values...)."""


class DesignMismatchError(DesignError):
    """A design does not fit a results table. ``problems`` lists every mismatch."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        listing = "\n".join(f"- {p}" for p in self.problems)
        super().__init__(f"The design does not fit this results table:\n{listing}")


class BudgetError(AnalysisError):
    """A plan's budget cannot buy what was asked (less than one whole template variant)."""


class FitError(AnalysisError):
    """A statistical model cannot be fitted as asked (aliasing, separation, too few rows)."""


class PoolingError(FitError):
    """Pooled subgroup estimates cannot be formed (an outcome without variation, every
    subgroup of at most one row: ``analysis/pooling.py``)."""


class ClusterError(AnalysisError):
    """A cluster column named by the caller cannot be used (absent from the table)."""


class OutputError(AnalysisError):
    """An output file cannot be written (missing folder, a folder in its place, disk full).

    Nothing is left half-written: writes go to a temporary file that is renamed at the end.
    """


class LimitError(LoadError):
    """An input exceeds a configured limit (size, decompression ratio, declared values).

    The message names the limit and the environment variable that raises it
    (``docs/limits.md``).
    """
class EngineError(AnalysisError):
    """An engine (DuckDB, Spark) cannot run as asked: not installed, cannot start, failed."""


class PairingError(AnalysisError):
    """Rows cannot be paired as a paired comparison needs (``analysis.compare``): a compared
    factor with one value, values sharing no prompt, duplicates refused, a reference that
    is not among the values ..."""


class CounterfactualError(PairingError):
    """A swap that cannot be analysed (``analysis.counterfactual``): an unknown factor, a
    factor with one value, a reference that is a control value or absent."""


class NoPairsError(CounterfactualError):
    """No unit holds two values of the swapped factor: nothing to test. ``missing_swaps``
    holds the plan rows that would create the pairs
    (:func:`analysis.counterfactual.missing_swaps`; a pandas DataFrame, or None)."""

    def __init__(self, message: str, missing_swaps=None):  # noqa: ANN001 - a DataFrame
        super().__init__(message)
        self.missing_swaps = missing_swaps


class PromptUnitError(PairingError):
    """A prompt unit that cannot be one (``analysis.prompt_unit``): a column missing, every
    row its own prompt, prompts that mix values of a prompt factor. ``suggested_unit``: a
    unit that would pair, when one was found (else None)."""

    def __init__(self, message: str, suggested_unit: list[str] | None = None):
        super().__init__(message)
        self.suggested_unit = suggested_unit


class SectionSkipped(AnalysisError):
    """A report section cannot be built from this table and design; ``str(exc)`` says why."""


class CriteriaError(AnalysisError):
    """A criteria file of the gate (``analysis.gate``, ``docs/checks.md``) that cannot be
    used: not YAML, a typo in a key, an unknown metric, factor or value; the message names
    the file, the line and the fix."""


def did_you_mean(name: object, choices: Sequence[object], sentence: bool = False) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` (difflib, cutoff 0.75, case
    ignored), else an empty string; ``sentence``: `` Did you mean 'x'?``."""
    by_lower = {str(c).lower(): str(c) for c in choices}
    close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=1, cutoff=0.75)
    if not close:
        return ""
    return (f" Did you mean {by_lower[close[0]]!r}?" if sentence
            else f" (did you mean {by_lower[close[0]]!r}?)")
