"""Numbers as people read them: p-values (``1.2e-70``, ``<1e-300``, ``0.034``), interval
levels (``95 %``), and the labels that name the method behind a number from the
settings it was computed with (:func:`interval_header`, :func:`adjusted_header`: every
view's headers come from these, never a hand-written "95 %" or "p (BH)")."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["P_FLOOR", "P_FORMAT", "adjusted_header", "format_p", "interval_header",
           "is_p_column", "level_text", "percent_text", "permutation_floors"]


#: printf format for p-value columns of app tables (two significant digits).
P_FORMAT = "%.2g"
#: Below this a p-value is shown as ``<1e-300`` (doubles underflow around 1e-308).
P_FLOOR = 1e-300


def format_p(p: float | None, floor: float | None = None) -> str:
    """A p-value with two significant digits; ``<1e-300`` at or below the floor.

    ``floor``: the smallest value the p-value's method can give (a permutation p-value
    ``(b + 1) / (m + 1)`` is at least ``1 / (m + 1)``); at that floor the p-value is a
    bound, shown as ``<= 0.0001`` (issue 38: scipy's exact p of such a table was 1.3e-18).

    Examples
    --------
    >>> [format_p(x) for x in (0.5, 0.0342, 1.234e-70, 0.0, float("nan"))]
    ['0.5', '0.034', '1.2e-70', '<1e-300', '']
    >>> format_p(1 / 10000, floor=1 / 10000)
    '<= 0.0001'
    """
    if p is None or not math.isfinite(p):
        return ""
    if floor is not None and math.isfinite(floor) and p <= floor * (1 + 1e-9):
        return f"<= {format_p(floor)}"
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


def interval_header(settings: Mapping[str, Any], side: str, what: str = "CI") -> str:
    """The header of an interval's bound, naming its level (``settings["confidence"]``,
    a :class:`analysis.api.Result`'s settings or a report section's; default 0.95).

    Examples
    --------
    >>> interval_header({"confidence": 0.9}, "low"), interval_header({}, "high", "")
    ('90 % CI low', '95 % high')
    """
    level = level_text(float(settings.get("confidence", 0.95)))
    return " ".join(w for w in (level, what, side) if w)


def adjusted_header(settings: Mapping[str, Any], default: str = "bh") -> str:
    """The header of an adjusted p-value, naming its method (``settings["adjust"]``; the
    analysis's own default when the settings do not say, e.g. Compare's ``"holm"``).

    Examples
    --------
    >>> adjusted_header({"adjust": "holm"}), adjusted_header({})
    ('p (Holm)', 'p (BH)')
    """
    from analysis.multiple_testing import adjusted_label

    return adjusted_label(str(settings.get("adjust") or default))


def permutation_floors(table) -> list[float | None] | None:  # noqa: ANN001 - a DataFrame
    """Per row, the floor ``1 / (m + 1)`` of a Monte Carlo permutation p-value (rows with
    ``n_resamples`` m > 0 and a ``method`` naming a permutation that is not exact), else
    None; None for a table without those columns."""
    if "n_resamples" not in getattr(table, "columns", ()) or "method" not in table.columns:
        return None
    out: list[float | None] = []
    for m, method in zip(table["n_resamples"], table["method"], strict=True):
        text = str(method)
        ok = "permutation" in text and "exact" not in text and m == m and int(m) > 0
        out.append(1 / (int(m) + 1) if ok else None)
    return out


def percent_text(x: float) -> str:
    """A fraction as a percentage with one decimal, more where that would read 0 or 100
    (also ``analysis.coverage.percent_text``)."""
    p = 100.0 * x
    text = f"{p:.1f}"
    if text == "100.0" and p < 100:
        return f"{p:.{max(1, math.ceil(-math.log10(100 - p)) + 1)}f}"
    if text == "0.0" and p > 0:
        return f"{p:.2g}"
    return text
