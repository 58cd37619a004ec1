"""Exact critical values of Dixon's ratios for normal samples, by numerical integration:
the computation behind :data:`analysis.dixon.DIXON_EXACT` (the product keeps the table;
``tests/analysis/test_disparity.py`` checks it against this integration).

Dixon's ratios compare a gap at one end of the sorted sample ``x(1) <= ... <= x(n)`` with
a range: ``r_{k,l} = (x(1+k) - x(1)) / (x(n-l) - x(1))`` (low end) with ``(k, l)`` =
``(1, 0)`` for r10, ``(1, 1)`` r11, ``(2, 1)`` r21, ``(2, 2)`` r22; the high end mirrors it
and has the same distribution. Given the smallest value ``x(1) = a`` and the
``(n-l)``-th, ``x(n-l) = b``, the ``m = n - l - 2`` values between them are independent
normals truncated to ``(a, b)``, so

``P(R <= r | a, b) = P(Binomial(m, p) >= k)``, ``p = (Phi(a + r (b - a)) - Phi(a)) /
(Phi(b) - Phi(a))``,

and the joint density of ``(x(1), x(n-l))`` is ``n! / (m! l!) phi(a) phi(b)
(Phi(b) - Phi(a))^m (1 - Phi(b))^l``. The distribution function ``G(r)`` is the integral
of their product over ``a < b``, computed on a tensor Gauss-Legendre grid (``a`` in
``[-9, 9]``, ``b - a`` in ``[0, 14]``, 160 x 160 nodes; doubling the nodes changes
``G`` by less than 1e-12, and ``G(1) = 1`` to 1e-13). The two-tailed critical value at
level alpha solves ``G(r) = 1 - alpha / 2``. The table was computed with
:func:`exact_dixon_critical`; ``python -m tests.reference.dixon_exact`` prints it (about
30 s), run from the repository root.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.dixon import ALPHAS, GAPS, MAX_N, MIN_N
from analysis.errors import AnalysisError


class DixonDistribution:
    """The null distribution of one Dixon ratio for n normal values (see module doc)."""

    def __init__(self, variant: str, n: int, *, nodes: int = 160):
        from scipy import special

        if variant not in GAPS:
            raise AnalysisError(f"Unknown Dixon ratio {variant!r}.")
        k, top = GAPS[variant]
        if n < MIN_N[variant]:
            raise AnalysisError(f"{variant} needs at least {MIN_N[variant]} values, got {n}.")
        self.k, self.m = k, n - top - 2
        xg, wg = np.polynomial.legendre.leggauss(int(nodes))
        a = (9.0 * xg)[:, None]
        d = (7.0 * (xg + 1.0))[None, :]
        weight = (9.0 * wg)[:, None] * (7.0 * wg)[None, :]
        b = a + d
        phi_a = special.ndtr(a)
        inner = special.ndtr(b) - phi_a
        ok = inner > 0
        safe = np.where(ok, inner, 1.0)
        log_density = (math.lgamma(n + 1) - math.lgamma(self.m + 1) - math.lgamma(top + 1)
                       - (a ** 2 + b ** 2) / 2 - math.log(2 * math.pi)
                       + self.m * np.log(safe) + top * special.log_ndtr(-b))
        self._w = np.where(ok, weight * np.exp(log_density), 0.0)
        self._a, self._d, self._phi_a, self._inner = a, d, phi_a, safe

    def cdf(self, r: float) -> float:
        """``G(r) = P(R <= r)`` for ``0 <= r <= 1``."""
        from scipy import special

        p = np.clip((special.ndtr(self._a + r * self._d) - self._phi_a) / self._inner, 0, 1)
        return float(np.sum(self._w * special.betainc(self.k, self.m - self.k + 1, p)))

    def sf(self, r: float) -> float:
        """``P(R > r)``: the one-tailed size of the critical value r."""
        return 1.0 - self.cdf(r)

    def ppf(self, q: float) -> float:
        """The r with ``G(r) = q``."""
        from scipy.optimize import brentq

        return float(brentq(lambda r: self.cdf(r) - q, 1e-12, 1 - 1e-12, xtol=1e-12))


def exact_dixon_critical(variant: str, n: int, alpha: float) -> float:
    """Two-tailed critical value: reject the suspect when its ratio exceeds it."""
    return DixonDistribution(variant, n).ppf(1.0 - alpha / 2.0)


def compute_table(decimals: int = 4) -> dict[str, dict[int, tuple[float, float, float]]]:
    """Every ratio for every n from its minimum to :data:`MAX_N`, at :data:`ALPHAS`."""
    out: dict[str, dict[int, tuple[float, float, float]]] = {}
    for variant in GAPS:
        out[variant] = {}
        for n in range(MIN_N[variant], MAX_N + 1):
            dist = DixonDistribution(variant, n)
            out[variant][n] = tuple(round(dist.ppf(1 - a / 2), decimals) for a in ALPHAS)
    return out


if __name__ == "__main__":  # regenerates analysis.dixon.DIXON_EXACT
    table = compute_table()
    print("DIXON_EXACT = {")
    for variant, rows in table.items():
        print(f'    "{variant}": {{')
        for n, vals in rows.items():
            print(f"        {n}: ({vals[0]:.4f}, {vals[1]:.4f}, {vals[2]:.4f}),")
        print("    },")
    print("}")
