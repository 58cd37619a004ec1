"""The error types the judge statistics raise (re-exported by :mod:`judges.errors`).

:class:`JudgesError` is the base of every judges-package input problem (a
``ValueError``); it lives here, below :mod:`judges`, so that the statistics on judged
tables raise the same type the judges package and its pages catch.
"""

from __future__ import annotations

__all__ = ["EmbeddingModelError", "JudgesError"]


class JudgesError(ValueError):
    """Base class: bad input or configuration for a judge run."""


class EmbeddingModelError(JudgesError):
    """The sentence-transformers model cannot be found or loaded."""
