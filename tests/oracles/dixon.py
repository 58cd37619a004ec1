"""Dixon's critical values by simulation: a check of the exact values of
:mod:`analysis.dixon` (``tests/analysis/test_disparity.py`` compares them)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.disparity import DIXON_ALPHAS, DIXON_VARIANTS, DixonVariant, _dixon_ratios
from analysis.errors import AnalysisError


def simulate_dixon_critical(variant: DixonVariant, n: int, *,
                            alphas: Sequence[float] = DIXON_ALPHAS, n_draws: int = 200_000,
                            seed: int = 0) -> list[float]:
    """Two-tailed critical values of a Dixon ratio for normal samples, by simulation.

    Draws ``n_draws`` standard normal samples of size ``n`` and returns, for each alpha,
    the ``1 - alpha / 2`` quantile of the ratio at one end (both ends of every sample are
    used).
    """
    if variant not in DIXON_VARIANTS:
        raise AnalysisError(f"Unknown Dixon ratio {variant!r}.")
    rng = np.random.default_rng(seed)
    chunks, left = [], int(n_draws)
    while left > 0:
        m = min(left, 250_000)
        xs = np.sort(rng.standard_normal((m, n)), axis=1)
        lo_gap, lo_den, hi_gap, hi_den = _dixon_ratios(xs.T, variant)
        chunks += [lo_gap / lo_den, hi_gap / hi_den]
        left -= m
    r = np.concatenate(chunks)
    return [float(np.quantile(r, 1 - a / 2)) for a in alphas]
