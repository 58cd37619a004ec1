"""Checks of the settings every request carries, shared by the judges' config classes.

The CLI refuses bad numbers in argparse (exit 2); these checks give the Python API the
same refusals as typed :class:`~judges.errors.JudgesError` exceptions, before anything is
sent or paid for (``JudgeConfig(max_tokens=0)`` used to be accepted).
"""

from __future__ import annotations

import math
from typing import Any

from judges.errors import JudgesError

__all__ = ["check_generation"]


def check_generation(owner: str, *, temperature: Any, max_tokens: Any,
                     seed: Any = None) -> None:
    """Refuse a temperature that is not ``None`` or a finite number >= 0, a ``max_tokens``
    that is not a whole number >= 1, and a seed that is not ``None`` or a whole number >= 0.

    Raises
    ------
    JudgesError
        Naming ``owner`` (e.g. ``"JudgeConfig"``), the setting and the value.
    """
    if temperature is not None and (
            isinstance(temperature, bool) or not isinstance(temperature, (int, float))
            or not math.isfinite(temperature) or temperature < 0):
        raise JudgesError(f"{owner}: temperature must be None or a number >= 0, "
                          f"not {temperature!r}.")
    if max_tokens is not None and (  # None: the model's default limit (judges.judge)
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise JudgesError(f"{owner}: max_tokens must be None or a whole number >= 1, not "
                          f"{max_tokens!r}.")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise JudgesError(f"{owner}: seed must be None or a whole number >= 0, not {seed!r}.")
