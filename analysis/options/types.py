"""Value types of options: each parses a string (a CLI argument, a page's text, a string an
API user passes) and checks a number's range.

A bad value raises :class:`argparse.ArgumentTypeError` (the CLI prints usage and the
message and exits 2); :meth:`analysis.options.Options.coerce` turns it into an
:class:`analysis.options.OptionError`. Light on purpose: building the CLI's parser imports
this module and nothing heavy.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = [
    "FINITE_FLOAT",
    "NON_NEGATIVE_FLOAT",
    "NON_NEGATIVE_INT",
    "POSITIVE_FLOAT",
    "POSITIVE_INT",
    "PROBABILITY",
    "UNIT_INTERVAL",
    "float_in",
    "int_at_least",
]


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` accepting whole numbers >= ``minimum`` (``--concurrency 0``)."""
    def parse(text: str) -> int:
        if isinstance(text, bool):
            raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}")
        if isinstance(text, float) and text.is_integer():
            text = str(int(text))
        try:
            value = int(str(text).strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    parse.__name__ = f"whole number >= {minimum}"
    return parse


def float_in(low: float | None = None, high: float | None = None, *,
             low_open: bool = False, high_open: bool = False) -> Callable[[str], float]:
    """An argparse ``type`` accepting finite numbers in a range (open or closed ends)."""
    def parse(text: str) -> float:
        if isinstance(text, bool):
            raise argparse.ArgumentTypeError(f"expected a number, not {text!r}")
        try:
            value = float(str(text).strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, not {text!r}")
        if low is not None and (value <= low if low_open else value < low):
            raise argparse.ArgumentTypeError(
                f"must be {'greater than' if low_open else 'at least'} {low:g}, not {value:g}")
        if high is not None and (value >= high if high_open else value > high):
            raise argparse.ArgumentTypeError(
                f"must be {'less than' if high_open else 'at most'} {high:g}, not {value:g}")
        return value

    parse.__name__ = "number"
    return parse


#: Common argument types.
POSITIVE_INT = int_at_least(1)
NON_NEGATIVE_INT = int_at_least(0)
POSITIVE_FLOAT = float_in(0, low_open=True)
NON_NEGATIVE_FLOAT = float_in(0)
FINITE_FLOAT = float_in()
PROBABILITY = float_in(0, 1, low_open=True, high_open=True)
UNIT_INTERVAL = float_in(0, 1)
