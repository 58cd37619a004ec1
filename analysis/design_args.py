"""Command-line helpers for designs: ``FACTOR=VALUE`` options (``--reference``, ``--where``).

Import :func:`parse_assignments` from :mod:`analysis.design`.
"""

from __future__ import annotations

from collections.abc import Sequence

from analysis.errors import DesignError

__all__ = ["parse_assignments"]


def parse_assignments(items: Sequence[str], what: str = "--reference") -> dict[str, str]:
    """Parse ``["a=x", "b=y"]`` into ``{"a": "x", "b": "y"}`` (CLI helper)."""
    out = {}
    for item in items:
        if "=" not in item:
            raise DesignError(f"{what} takes FACTOR=VALUE, got {item!r}.")
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    return out
