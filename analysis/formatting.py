"""Numbers as people read them: p-values (``1.2e-70``, ``<1e-300``, ``0.034``), interval
levels (``95 %``)."""

from __future__ import annotations

import math

__all__ = ["P_FLOOR", "P_FORMAT", "format_p", "is_p_column", "level_text"]


#: printf format for p-value columns of app tables (two significant digits).
P_FORMAT = "%.2g"
#: Below this a p-value is shown as ``<1e-300`` (doubles underflow around 1e-308).
P_FLOOR = 1e-300


def format_p(p: float | None) -> str:
    """A p-value with two significant digits; ``<1e-300`` at or below the floor.

    Examples
    --------
    >>> [format_p(x) for x in (0.5, 0.0342, 1.234e-70, 0.0, float("nan"))]
    ['0.5', '0.034', '1.2e-70', '<1e-300', '']
    """
    if p is None or not math.isfinite(p):
        return ""
    if p <= P_FLOOR:
        return "<1e-300"
    if p >= 1e-4:
        return f"{p:.2g}" if p < 1 else "1"
    mantissa, exponent = f"{p:.1e}".split("e")
    return f"{mantissa}e-{int(exponent[1:])}"


def is_p_column(name: str) -> bool:
    """Whether a column holds p-values (``p``, ``p_value``, ``p_adjusted``, ``p_bh`` ...)."""
    return name == "p" or name.startswith(("p_", "p-")) or name.endswith(("_p", "_p_value"))


def level_text(confidence: float) -> str:
    """An interval's level as a label names it.

    Examples
    --------
    >>> [level_text(x) for x in (0.95, 0.5, 0.999)]
    ['95 %', '50 %', '99.9 %']
    """
    return f"{100 * float(confidence):.10g} %"
