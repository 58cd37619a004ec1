"""Typed exceptions of the judges package.

Every input problem derives from :class:`JudgesError` (a ``ValueError``), so the page and
the CLI can catch one type and show ``str(exc)``: the message is written for an analyst
and names the file, row, column, rubric or model concerned. Messages never contain an
API key.
"""

from __future__ import annotations

from analysis.judge_stats.errors import EmbeddingModelError, JudgesError

__all__ = ["CacheError", "EmbeddingModelError", "FourStageError", "JudgesError",
           "PriceError", "ProviderConfigError", "ReplyParseError", "RubricError"]


class FourStageError(JudgesError):
    """A four-stage test file is malformed. ``problems`` lists every problem found."""

    def __init__(self, problems: list[str] | str, *, max_shown: int = 25):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        shown = self.problems[:max_shown]
        listing = "\n".join(f"- {p}" for p in shown)
        more = len(self.problems) - len(shown)
        if more > 0:
            listing += f"\n- ... and {more} more"
        if len(self.problems) == 1:
            super().__init__(self.problems[0])
        else:
            super().__init__(f"The four-stage file has {len(self.problems)} problems:\n{listing}")


class RubricError(JudgesError):
    """A rubric file is malformed (missing field, wrong level numbers, bad template)."""


class PriceError(JudgesError):
    """The price table is malformed."""


class ProviderConfigError(JudgesError):
    """A provider cannot be set up: unknown name, SDK not installed, no API key."""


class CacheError(JudgesError):
    """A reply cache file is corrupt, foreign (another program's database, another schema)
    or not a file. ``path`` names it; :func:`judges.cache.move_aside` sets it aside so a new
    cache can start (``--reset-cache`` on the CLI, a button on the pages)."""

    def __init__(self, message: str, *, path: str = ""):
        self.path = path
        super().__init__(message)


class ReplyParseError(ValueError):
    """A judge reply holds no usable structured answer; ``str(exc)`` is the reason."""
