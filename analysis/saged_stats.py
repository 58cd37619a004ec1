"""SAGED's other group statistics: baseline comparison, mode, range, percentile, scaling.

The SAGED paper (``../shared/papers/saged.txt``, section 4 and appendix C.5) summarises a
feature per group with location and spread statistics and with three comparisons against
the *baseline* (the same feature measured on a baseline text, row by row); by default it
computes mean, variance, correlation, KL divergence, precision and selection rate.
:mod:`analysis.disparity` has mean, variance and selection rates; this module adds the
rest (``docs/disparity.md``, "SAGED baseline statistics"):

- ``kl_divergence``: ``sum_j p_j * log(p_j / q_j)`` (natural log) between the group's
  feature distribution P and its baseline's Q, both as histograms over the same ``bins``
  equal-width bins (default 10, SAGED's) spanning the pooled range of the two. *Smoothing*:
  an empty bin gets probability ``epsilon`` = 1e-10 (SAGED's choice) and the histograms
  are not renormalised, so KL is finite and 0 for identical distributions.
- ``precision``: share of the group's rows with ``|feature - baseline| <= tolerance``
  (default tolerance 0, SAGED's: exact agreement).
- ``pearson`` and ``spearman``: correlation of feature and baseline within the group.
- ``mode``: the midpoint of the most populated bin of width ``mode_bin_width`` (default 0.5,
  SAGED's), bins starting at the group's minimum; ties go to the lowest bin.
- ``range``: max - min; ``percentile``: the chosen percentile (linear interpolation).

Normalisation (:func:`normalize`) rescales the feature and its baseline together before any
comparison: ``zscore`` ``(x - mean) / std`` (ddof 0) or ``minmax`` ``(x - min) / (max - min)``,
with mean, std, min and max of the pooled values of both columns, so calibration
(feature - baseline) stays meaningful.

Rows whose feature is missing are left out; the baseline statistics use the rows where
both are present (``n_paired``). With a baseline, mode, range and percentile describe the
**calibrated** feature (``feature - baseline`` on the paired rows), like the mean,
selection rate and impact ratio of :mod:`analysis.disparity` and like SAGED, whose
statistics run on the calibrated columns; KL divergence, precision and the correlations
compare the feature with its baseline, so they use both columns as measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

from analysis.columns import (
    GROUP,
    KL_DIVERGENCE,
    MODE,
    N_PAIRED,
    PEARSON,
    PERCENTILE,
    PRECISION,
    RANGE,
    SPEARMAN,
    N,
)
from analysis.errors import AnalysisError
from analysis.values import small_integers

__all__ = [
    "DEFAULT_BINS", "DEFAULT_MODE_BIN_WIDTH", "DEFAULT_PERCENTILE", "DEFAULT_TOLERANCE",
    "GROUP_SEPARATOR", "KL_EPSILON", "NORMALIZATIONS", "Normalization", "STATISTIC_COLUMNS",
    "binned_mode", "correlation", "kl_divergence", "normalize", "precision", "saged_disparity",
    "saged_statistics",
]


Normalization = Literal["none", "zscore", "minmax"]
NORMALIZATIONS: tuple[str, ...] = get_args(Normalization)
#: SAGED's defaults (declared with the options: ``analysis/options/disparity.py``).
from analysis.options.disparity import SagedOptions as _Saged  # noqa: E402

DEFAULT_BINS: int = _Saged.default("bins")
DEFAULT_TOLERANCE: float = _Saged.default("precision_tolerance")
DEFAULT_MODE_BIN_WIDTH: float = _Saged.default("mode_bin_width")
KL_EPSILON = 1e-10
DEFAULT_PERCENTILE: float = _Saged.default("percentile")
GROUP_SEPARATOR = " / "


def _numbers(frame: pd.DataFrame, column: str, what: str) -> np.ndarray:
    if column not in frame.columns:
        raise AnalysisError(f"No {what} column {column!r} in the table.")
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = frame[column].notna() & values.isna()
    if bad.any():
        raise AnalysisError(f"The {what} column {column!r} holds {int(bad.sum()):,} values "
                            "that are not numbers.")
    return values.to_numpy(dtype=float)


def normalize(frame: pd.DataFrame, columns: Sequence[str], method: Normalization = "none"
              ) -> pd.DataFrame:
    """A copy of ``frame`` with ``columns`` rescaled together (pooled parameters).

    Raises
    ------
    AnalysisError
        An unknown method, no values, or constant values (std or range 0).
    """
    if method not in NORMALIZATIONS:
        raise AnalysisError(f"Normalisation is one of {', '.join(NORMALIZATIONS)}, not "
                            f"{method!r}.")
    columns = [c for c in dict.fromkeys(columns) if c]
    if method == "none" or not columns:
        return frame
    arrays = {c: _numbers(frame, c, "feature") for c in columns}
    pooled = np.concatenate(list(arrays.values()))
    pooled = pooled[~np.isnan(pooled)]
    if not len(pooled):
        raise AnalysisError(f"No values in {', '.join(columns)} to normalise.")
    if method == "zscore":
        shift, scale = float(pooled.mean()), float(pooled.std())
    else:
        shift, scale = float(pooled.min()), float(pooled.max() - pooled.min())
    if scale == 0:
        raise AnalysisError(f"{', '.join(columns)}: every value is {pooled[0]:g}, so there is "
                            f"nothing to rescale ({method}).")
    out = frame.copy()
    for c, x in arrays.items():
        out[c] = (x - shift) / scale
    return out


# --- the statistics of one group -------------------------------------------------------------
def kl_divergence(x: np.ndarray, baseline: np.ndarray, *, bins: int = DEFAULT_BINS,
                  epsilon: float = KL_EPSILON) -> float:
    """KL(P || Q) of the histograms of ``x`` (P) and ``baseline`` (Q); see module docstring."""
    x, baseline = np.asarray(x, float), np.asarray(baseline, float)
    x, baseline = x[~np.isnan(x)], baseline[~np.isnan(baseline)]
    if not len(x) or not len(baseline):
        return float("nan")
    if bins < 1:
        raise AnalysisError("KL divergence needs at least one bin.")
    lo = min(x.min(), baseline.min())
    hi = max(x.max(), baseline.max())
    if hi == lo:
        return 0.0
    p = np.histogram(x, bins=bins, range=(lo, hi))[0] / len(x)
    q = np.histogram(baseline, bins=bins, range=(lo, hi))[0] / len(baseline)
    p = np.where(p > 0, p, epsilon)
    q = np.where(q > 0, q, epsilon)
    return float(np.sum(p * np.log(p / q)))


def precision(x: np.ndarray, baseline: np.ndarray, *, tolerance: float = DEFAULT_TOLERANCE
              ) -> float:
    """Share of pairs with ``|x - baseline| <= tolerance`` (pairs with a NaN left out)."""
    x, baseline = np.asarray(x, float), np.asarray(baseline, float)
    both = ~np.isnan(x) & ~np.isnan(baseline)
    if not both.any():
        return float("nan")
    # a hair of slack so that 0.3 - 0.1 <= 0.2 holds in floating point
    return float(np.mean(np.abs(x[both] - baseline[both]) <= tolerance + 1e-12))


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """``sum(a * b)`` by numpy's own loop: BLAS ``dot`` splits the sum over threads (its
    last digit depends on the thread count) and, on a busy machine, waits for them:
    ~10x slower here than ``einsum``."""
    return float(np.einsum("i,i->", a, b))


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2:
        return float("nan")
    a, b = a - a.mean(), b - b.mean()
    denominator = np.sqrt(_dot(a, a) * _dot(b, b))
    return float(_dot(a, b) / denominator) if denominator > 0 else float("nan")


def _ranks(a: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their positions): the c rows of a value with
    ``first`` smaller values hold ranks first + 1 .. first + c, mean first + (c + 1) / 2
    (exact in floating point). Small integers are counted without a sort."""
    small = small_integers(a)
    if small is None:
        _, inverse, counts = np.unique(a, return_inverse=True, return_counts=True)
    else:
        inverse, counts = small, np.bincount(small)
    first = np.cumsum(counts) - counts
    return (first + (counts + 1) / 2)[inverse]


def correlation(x: np.ndarray, baseline: np.ndarray, method: str = "pearson") -> float:
    """Pearson or Spearman (Pearson of average ranks) correlation of the complete pairs."""
    x, baseline = np.asarray(x, float), np.asarray(baseline, float)
    both = ~np.isnan(x) & ~np.isnan(baseline)
    a, b = x[both], baseline[both]
    if method == "spearman":
        a, b = _ranks(a), _ranks(b)
    elif method != "pearson":
        raise AnalysisError(f"Correlation is pearson or spearman, not {method!r}.")
    return _pearson(a, b)


def binned_mode(x: np.ndarray, *, bin_width: float = DEFAULT_MODE_BIN_WIDTH) -> float:
    """Midpoint of the most populated bin ``[min + i w, min + (i + 1) w)``; lowest on ties."""
    x = np.asarray(x, float)
    x = x[~np.isnan(x)]
    if not len(x):
        return float("nan")
    if not bin_width > 0:
        raise AnalysisError("The mode's bin width must be positive.")
    index = np.floor((x - x.min()) / bin_width).astype(np.int64)
    counts = np.bincount(index)
    return float(x.min() + (int(np.argmax(counts)) + 0.5) * bin_width)


# --- the table -------------------------------------------------------------------------------
def saged_statistics(
    results: pd.DataFrame | Any,
    feature: str,
    by: str | Sequence[str],
    *,
    baseline: str | None = None,
    normalization: Normalization = "none",
    bins: int = DEFAULT_BINS,
    tolerance: float = DEFAULT_TOLERANCE,
    percentile: float = DEFAULT_PERCENTILE,
    mode_bin_width: float = DEFAULT_MODE_BIN_WIDTH,
    epsilon: float = KL_EPSILON,
) -> pd.DataFrame:
    """SAGED's mode, range, percentile and baseline comparison per group.

    Parameters
    ----------
    results
        One row per response, or the :func:`analysis.disparity.grouping` of those rows for
        the same feature and groups without a baseline (normalisation ``none``): the
        same numbers without grouping the rows again.
    feature
        Numeric feature column (uncalibrated: the baseline comparison needs both sides;
        mode, range and percentile are computed on ``feature - baseline``).
    by
        Grouping columns.
    baseline
        The same feature measured on the baseline text; without it the table has no
        baseline columns.
    normalization
        ``none``, ``zscore`` or ``minmax`` of feature and baseline together, first.
    bins, epsilon
        KL histogram bins (SAGED: 10) and the probability given to an empty bin (1e-10).
    tolerance
        Precision's tolerance (SAGED: 0).
    percentile
        Which percentile, 0-100 (default 50).
    mode_bin_width
        Bin width of the mode (SAGED: 0.5).

    Returns
    -------
    pandas.DataFrame
        One row per group (the ``by`` columns, ``group`` label, ``n`` rows with a feature
        value): ``mode``, ``range``, ``percentile`` (of the calibrated feature on the
        ``n_paired`` rows when there is a baseline); with a baseline also ``n_paired``,
        ``kl_divergence``, ``precision``, ``pearson``, ``spearman``.
        ``docs/disparity.md`` (SAGED baseline statistics).
    """
    by = [by] if isinstance(by, str) else list(by)
    if not by:
        raise AnalysisError("Choose at least one factor to group by.")
    from analysis.disparity import Grouping

    absent = [] if isinstance(results, Grouping) else [b for b in by
                                                         if b not in results.columns]
    if absent:
        raise AnalysisError(f"Not columns of the table: {', '.join(absent)}.")
    if not 0 <= percentile <= 100:
        raise AnalysisError(f"The percentile must lie in 0-100, got {percentile:g}.")
    if tolerance < 0:
        raise AnalysisError("The precision tolerance must be 0 or more.")
    if int(bins) != bins or bins < 1:
        raise AnalysisError("KL divergence needs a whole number of bins (1 or more).")
    if baseline is not None and baseline == feature:
        raise AnalysisError("The baseline column must differ from the feature column.")
    if isinstance(results, Grouping):
        return _of_grouping(results, feature, by, baseline, normalization, mode_bin_width,
                            percentile)
    frame = normalize(results, [feature, baseline or ""], normalization)
    x_all = _numbers(frame, feature, "feature")
    b_all = _numbers(frame, baseline, "baseline") if baseline else None
    keep = ~np.isnan(x_all)
    if not keep.any():
        raise AnalysisError(f"The feature {feature!r} is missing in every row.")
    keys = frame.loc[keep, by].reset_index(drop=True)
    x_kept = x_all[keep]
    b_kept = b_all[keep] if b_all is not None else None
    rows = []
    for key, part in keys.groupby(by, sort=True, observed=True, dropna=False):
        key = tuple(str(k) for k in (key if isinstance(key, tuple) else (key,)))
        pos = part.index.to_numpy()
        x = x_kept[pos]
        b = b_kept[pos] if b_kept is not None else None
        both = ~np.isnan(b) if b is not None else np.ones(len(x), dtype=bool)
        located = x[both] - b[both] if b is not None else x  # calibrated with a baseline
        row = {**dict(zip(by, key, strict=True)), GROUP: GROUP_SEPARATOR.join(key), N: len(x),
               **_location(located, mode_bin_width, percentile)}
        if b is not None:
            row.update({N_PAIRED: int(both.sum()),
                        KL_DIVERGENCE: kl_divergence(x[both], b[both], bins=int(bins),
                                                     epsilon=epsilon),
                        PRECISION: precision(x, b, tolerance=tolerance),
                        PEARSON: correlation(x, b, "pearson"),
                        SPEARMAN: correlation(x, b, "spearman")})
        rows.append(row)
    return pd.DataFrame(rows)


def _of_grouping(grouping: Any, feature: str, by: list[str], baseline: str | None,
                 normalization: str, mode_bin_width: float, percentile: float
                 ) -> pd.DataFrame:
    """:func:`saged_statistics` of the rows of an :class:`analysis.disparity.Grouping`
    (the same numbers: each group's values in row order, without grouping the rows again;
    issue 44)."""
    if (grouping.feature, list(grouping.by), grouping.baseline, baseline, normalization) != \
            (feature, by, None, None, "none"):
        raise AnalysisError("SAGED statistics of a grouping need its feature and groups, no "
                            "baseline and no normalisation: give the rows instead.")
    table = grouping.groups.table
    keys = [table[b].astype(str).tolist() for b in by]
    return pd.DataFrame([
        {**{b: k[i] for b, k in zip(by, keys, strict=True)}, GROUP: label, N: len(x),
         **_location(x, mode_bin_width, percentile)}
        for i, (label, x) in enumerate(zip(table[GROUP], grouping.values_by_group(),
                                           strict=True))])


def _location(x: np.ndarray, mode_bin_width: float, percentile: float) -> dict[str, float]:
    """Mode, range and percentile of ``x`` (NaN when it is empty)."""
    if not len(x):
        return {MODE: float("nan"), RANGE: float("nan"), PERCENTILE: float("nan")}
    return {MODE: binned_mode(x, bin_width=mode_bin_width), RANGE: float(x.max() - x.min()),
            PERCENTILE: float(np.percentile(x, percentile))}


#: The columns of :func:`saged_statistics` that :func:`analysis.disparity.disparity_metrics`
#: can summarise across groups.
STATISTIC_COLUMNS = (MODE, RANGE, PERCENTILE, KL_DIVERGENCE, PRECISION, PEARSON, SPEARMAN)


def saged_disparity(table: pd.DataFrame, *, alpha: float = 0.05,
                    conventions: str = "workbench") -> pd.DataFrame:
    """Across-group disparity (min/max ratio, range, std, max Z, Dixon's Q) of each column
    (``conventions`` as :func:`analysis.disparity.disparity_metrics`).

    Returns
    -------
    pandas.DataFrame
        :func:`analysis.disparity.disparity_metrics` stacked over the statistics present,
        ``quantity`` naming the statistic.
    """
    from analysis.disparity import disparity_metrics

    parts = [disparity_metrics(pd.Series(table[c].to_numpy(dtype=float),
                                         index=table[GROUP]), alpha=alpha, quantity=c,
                                conventions=conventions)  # type: ignore[arg-type]
             for c in STATISTIC_COLUMNS if c in table.columns]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
