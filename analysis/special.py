"""The few special functions the default fits need, without importing SciPy.

``import scipy.special`` costs 0.1-0.25 s of a command's start-up (it builds an
array-API compatibility layer over numpy on import), which is a tenth to a quarter of
``python -m analysis importance`` on a million rows (issue #32, docs/performance.md).
The logistic fit and its Wald and likelihood-ratio tests need only these functions, each
an exact identity evaluated with numpy or the standard library:

- :func:`expit`, :func:`log_expit`, :func:`logit`: ``1 / (1 + e^-x)``,
  ``-log(1 + e^-x)`` as ``-logaddexp(0, -x)``, ``log(p / (1 - p))``;
- :func:`normal_sf2` (two-sided normal tail ``2 * Phi(-|z|)``) as ``erfc(|z| / sqrt(2))``
  (``math.erfc``), :func:`normal_ppf` as ``statistics.NormalDist().inv_cdf``
  (Wichura's AS 241, about 16 digits);
- :func:`chi2_sf`, the chi-square tail for an integer number of degrees of freedom, from
  the closed form of the regularised upper incomplete gamma function at integer and
  half-integer shape (a finite sum of Poisson terms, plus ``erfc`` for odd df), in logs
  so nothing overflows. Past :data:`CLOSED_FORM_MAX_DF` degrees of freedom (a sum that
  long) it hands over to ``scipy.special.chdtrc``.

``tests/analysis/test_special.py`` checks each against SciPy over wide grids (relative
differences below 5e-13 where the values are normal floating-point numbers).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CLOSED_FORM_MAX_DF", "chi2_sf", "expit", "log_expit", "logit", "normal_ppf",
           "normal_sf2"]

#: Degrees of freedom up to which :func:`chi2_sf` sums its closed form.
CLOSED_FORM_MAX_DF = 400


def expit(x: np.ndarray) -> np.ndarray:
    """The logistic function ``1 / (1 + exp(-x))`` (as ``scipy.special.expit``)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(over="ignore"):  # exp(-x) = inf for x < -709: the result is 0
        return 1.0 / (1.0 + np.exp(-x))


def log_expit(x: np.ndarray) -> np.ndarray:
    """``log(expit(x))`` without underflow (as ``scipy.special.log_expit``)."""
    return -np.logaddexp(0.0, -np.asarray(x, dtype=float))


def logit(p: np.ndarray) -> np.ndarray:
    """``log(p / (1 - p))`` (as ``scipy.special.logit``)."""
    p = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(p / (1.0 - p))  # 1 - p is exact for p >= 0.5, accurate below


def normal_sf2(z: np.ndarray) -> np.ndarray:
    """Two-sided normal tail probability ``2 * Phi(-|z|)`` (NaN stays NaN)."""
    z = np.asarray(z, dtype=float)
    out = np.array([math.erfc(abs(v) / math.sqrt(2.0)) if v == v else math.nan
                    for v in z.ravel()], dtype=float)
    return out.reshape(z.shape)


def normal_ppf(q: float) -> float:
    """The standard normal quantile at ``q`` (``scipy.special.ndtri``)."""
    if q <= 0.0:
        return -math.inf if q == 0.0 else math.nan
    if q >= 1.0:
        return math.inf if q == 1.0 else math.nan
    from statistics import NormalDist  # not at import: statistics loads fractions, decimal,
    # random (the clustered default never asks for a normal quantile)

    return NormalDist().inv_cdf(q)


def chi2_sf(df: int, x: float) -> float:
    """``P(X >= x)`` for X chi-square with ``df`` (a positive integer) degrees of freedom
    (the argument order of ``scipy.special.chdtrc``).

    With ``y = x / 2``: for even df, ``Q = sum_{i < df/2} e^-y y^i / i!``; for odd df,
    ``Q = erfc(sqrt(y)) + sum_{i = 1}^{(df-1)/2} e^-y y^(i-1/2) / Gamma(i + 1/2)``. The
    terms are formed in logs and summed from the largest, so neither ``e^-y`` underflowing
    nor ``y^i`` overflowing loses the result.
    """
    x = float(x)
    if not (df >= 1 and float(df).is_integer()) or math.isnan(x):
        return math.nan
    df = int(df)
    if x <= 0.0:
        return 1.0
    if math.isinf(x):
        return 0.0
    if df > CLOSED_FORM_MAX_DF:
        from scipy.special import chdtrc

        return float(chdtrc(df, x))
    y = x / 2.0
    log_y = math.log(y)
    if df % 2 == 0:
        logs = [-y + i * log_y - math.lgamma(i + 1.0) for i in range(df // 2)]
        head = 0.0
    else:
        logs = [-y + (i - 0.5) * log_y - math.lgamma(i + 0.5) for i in range(1, (df + 1) // 2)]
        head = math.erfc(math.sqrt(y))
    if not logs:
        return head
    top = max(logs)
    total = math.fsum(math.exp(v - top) for v in logs)
    if top == -math.inf:
        return head
    return min(1.0, head + math.exp(top + math.log(total)))
