"""Agreement of a judge with human labels, or of two judges (``docs/methods.md`` section 8).

For each pair of score columns (judge, human) the table reports, per stage and over all
stages (and, with several pairs, pooled over all metrics): the number of complete pairs
``n``, Pearson r, Spearman rho, Kendall tau-b (with scipy's p-values), the
quadratic-weighted Cohen's kappa and the share of exact agreement, each coefficient with
a confidence interval:

- ``ci="bootstrap"`` (default): percentile interval of ``n_resamples`` resamples of the pairs,
  drawn with a seeded generator (``seed``), so a table is reproducible;
- ``ci="analytic"``: Fisher z intervals for the correlations (standard errors
  ``1/sqrt(n-3)`` for Pearson, ``sqrt((1 + rho^2/2)/(n-3))`` for Spearman after Bonett &
  Wright 2000, ``sqrt(0.437/(n-4))`` for Kendall after Fieller, Hartley & Pearson 1957)
  and the large-sample standard error of weighted kappa (Fleiss, Cohen & Everitt 1969),
  a normal interval clipped to [-1, 1];
- ``ci="none"``: no intervals.

The weighted kappa is computed from the confusion matrix over the score categories
(1-5 for the judge metrics; otherwise every whole number between the smallest and the
largest score seen): weights ``(i - j)^2 / (k - 1)^2``,
``kappa = 1 - sum(W * O) / sum(W * E)`` with ``E`` the product of the margins. It is
NaN when a column holds non-whole numbers (e.g. cosine similarities) or when the
expected disagreement is 0. Rows with a score missing on either side are left out
(counted in ``n_missing``); a coefficient needs ``n >= 3`` (Kendall's analytic interval
``n >= 5``), else it is NaN.

**Averaged human labels** (FairMonitor's procedure: the mean of three annotators, e.g.
3.67) are not whole numbers, so kappa cannot use them as categories. When every score of
both columns lies on the 1-5 scale but some are not whole, kappa and the exact agreement
are computed on the labels *rounded half up* (3.5 -> 4, 3.33 -> 3), and the column
``kappa_labels`` says so (``"rounded half up"``; ``"as given"`` otherwise, empty when
there is no kappa). Two coefficients use the raw (unrounded) values whatever they are:

- ``icc_a1``: the intraclass correlation ICC(A,1) of McGraw & Wong (1996), two-way
  random effects, absolute agreement, single rater (Shrout & Fleiss ICC(2,1), pingouin's
  ``ICC2``), with the two columns as the two raters:
  ``(MSR - MSE) / (MSR + (k-1) MSE + k (MSC - MSE) / n)``, k = 2; analytic interval from
  the F distribution (McGraw & Wong 1996, case 2A);
- ``alpha_interval``: Krippendorff's alpha with the interval metric (squared
  differences), two coders and no missing values:
  ``1 - (2n - 1) sum (x - y)^2 / (2n sum over all 2n values (v - mean)^2)``; intervals by
  bootstrap only (NaN with ``ci="analytic"``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from analysis.judge_stats import columns as C
from analysis.judge_stats.errors import JudgesError
from analysis.judge_stats.names import HUMAN_PATTERNS, human_pairs

__all__ = [
    "AGREEMENT_COLUMNS", "ALL", "ALPHA", "AS_GIVEN", "CIMethod", "CI_METHOD", "COEFFICIENTS",
    "CORRELATIONS", "EXACT", "HUMAN_COLUMN", "HUMAN_PATTERNS", "ICC", "JUDGE_COLUMN", "KAPPA",
    "KAPPA_LABELS", "KENDALL", "MERGE_KEYS", "N", "N_MISSING", "PEARSON", "ROUNDED", "SCALE",
    "SPEARMAN", "agreement", "alpha_interval", "confusion_matrix", "high", "human_pairs",
    "icc_a1", "icc_a1_interval", "icc_a_interval", "kappa_labels", "kappa_se", "low",
    "merge_judged", "p_value", "pair_agreement", "quadratic_kappa", "quadratic_weights",
    "round_half_up", "score_categories", "weighted_kappa", "weighted_kappa_se",
]


CIMethod = Literal["bootstrap", "analytic", "none"]
#: Label of the rows pooled over all stages (``stage``) or all metrics (``metric``).
ALL = "all"
#: Metrics whose scores are on the 1-5 scale.
SCALE: tuple[int, ...] = (1, 2, 3, 4, 5)

# --- output columns -------------------------------------------------------------------------
JUDGE_COLUMN = "judge_column"
HUMAN_COLUMN = "human_column"
N = "n"
N_MISSING = "n_missing"
PEARSON, SPEARMAN, KENDALL, KAPPA = "pearson_r", "spearman_rho", "kendall_tau", "kappa_qw"
ICC, ALPHA = "icc_a1", "alpha_interval"
#: The coefficients with a p-value column (scipy's tests).
CORRELATIONS: tuple[str, ...] = (PEARSON, SPEARMAN, KENDALL)
COEFFICIENTS: tuple[str, ...] = (PEARSON, SPEARMAN, KENDALL, KAPPA, ICC, ALPHA)
#: Which labels kappa and the exact agreement used: "as given" or "rounded half up".
KAPPA_LABELS = "kappa_labels"
AS_GIVEN, ROUNDED = "as given", "rounded half up"
EXACT = "exact_agreement"
CI_METHOD = "ci_method"


def low(name: str) -> str:
    """The lower-bound column of a coefficient (``pearson_r`` -> ``pearson_r_low``)."""
    return f"{name}_low"


def high(name: str) -> str:
    """The upper-bound column of a coefficient."""
    return f"{name}_high"


def p_value(name: str) -> str:
    """The p-value column of a correlation (``pearson_r`` -> ``pearson_r_p``)."""
    return f"{name}_p"


AGREEMENT_COLUMNS: tuple[str, ...] = (
    C.METRIC, C.STAGE, JUDGE_COLUMN, HUMAN_COLUMN, N, N_MISSING,
    PEARSON, low(PEARSON), high(PEARSON), p_value(PEARSON),
    SPEARMAN, low(SPEARMAN), high(SPEARMAN), p_value(SPEARMAN),
    KENDALL, low(KENDALL), high(KENDALL), p_value(KENDALL),
    KAPPA, low(KAPPA), high(KAPPA), KAPPA_LABELS,
    ICC, low(ICC), high(ICC), ALPHA, low(ALPHA), high(ALPHA), EXACT, CI_METHOD,
)


# --- kappa --------------------------------------------------------------------------------
def confusion_matrix(a: Sequence[float], b: Sequence[float],
                     categories: Sequence[int]) -> np.ndarray:
    """Counts ``O[i, j]`` of pairs with ``a == categories[i]`` and ``b == categories[j]``.

    Raises
    ------
    ValueError
        A value that is not one of ``categories``.
    """
    index = {float(c): i for i, c in enumerate(categories)}
    try:
        ia = np.array([index[float(v)] for v in a], dtype=np.int64)
        ib = np.array([index[float(v)] for v in b], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"score {exc.args[0]} is not one of the categories "
                         f"{list(categories)}") from None
    k = len(categories)
    return np.bincount(ia * k + ib, minlength=k * k).reshape(k, k).astype(float)


def quadratic_weights(k: int) -> np.ndarray:
    """Disagreement weights ``(i - j)^2 / (k - 1)^2``."""
    i = np.arange(k)
    return (i[:, None] - i[None, :]) ** 2 / max(k - 1, 1) ** 2


def weighted_kappa(table: np.ndarray) -> float:
    """Quadratic-weighted Cohen's kappa of a square confusion matrix (NaN if undefined)."""
    table = np.asarray(table, dtype=float)
    n = table.sum()
    if n == 0:
        return math.nan
    w = quadratic_weights(table.shape[0])
    expected = np.outer(table.sum(1), table.sum(0)) / n
    denominator = (w * expected).sum()
    return math.nan if denominator == 0 else float(1 - (w * table).sum() / denominator)


def weighted_kappa_se(table: np.ndarray) -> float:
    """Large-sample standard error of the quadratic-weighted kappa (Fleiss, Cohen &
    Everitt 1969), with agreement weights ``1 - (i - j)^2 / (k - 1)^2``."""
    table = np.asarray(table, dtype=float)
    n = table.sum()
    kappa = weighted_kappa(table)
    if n == 0 or not np.isfinite(kappa):
        return math.nan
    p = table / n
    w = 1 - quadratic_weights(table.shape[0])
    pe = (w * np.outer(p.sum(1), p.sum(0))).sum()
    return math.nan if pe >= 1 else kappa_se(p, w, kappa, pe, n)


def kappa_se(p: np.ndarray, w: np.ndarray, kappa: float, pe: float, n: float) -> float:
    """The large-sample standard error of Fleiss, Cohen & Everitt (1969) of a kappa with
    agreement weights ``w``, from the cell proportions ``p`` of ``n`` pairs and the
    expected (weighted) agreement ``pe``; NaN if its variance comes out negative."""
    rows, cols = p.sum(1), p.sum(0)
    w_row = w @ cols          # w_i. = sum_j w_ij p_.j
    w_col = rows @ w          # w_.j = sum_i w_ij p_i.
    terms = (p * (w - (w_row[:, None] + w_col[None, :]) * (1 - kappa)) ** 2).sum()
    var = (terms - (kappa - pe * (1 - kappa)) ** 2) / ((1 - pe) ** 2 * n)
    return float(math.sqrt(var)) if var >= 0 else math.nan


def score_categories(a: np.ndarray, b: np.ndarray) -> tuple[int, ...] | None:
    """The kappa categories of two score arrays: 1-5 if inside it, else every whole number
    from the smallest to the largest score; ``None`` if any score is not a whole number."""
    both = np.concatenate([a, b])
    if len(both) == 0 or not np.all(np.isfinite(both)) or not np.all(both == np.round(both)):
        return None
    lo, hi = int(both.min()), int(both.max())
    if lo >= SCALE[0] and hi <= SCALE[-1]:
        return SCALE
    if hi - lo > 100:
        return None
    return tuple(range(lo, hi + 1))


def quadratic_kappa(a: Sequence[float], b: Sequence[float],
                    categories: Sequence[int] | None = None) -> float:
    """Quadratic-weighted Cohen's kappa of two raters' scores (NaN if undefined)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    categories = categories if categories is not None else score_categories(a, b)
    if categories is None:
        return math.nan
    return weighted_kappa(confusion_matrix(a, b, categories))


def round_half_up(values: np.ndarray) -> np.ndarray:
    """Round to whole numbers with halves going up (3.5 -> 4), unlike numpy's half-to-even."""
    return np.floor(np.asarray(values, dtype=float) + 0.5)


def kappa_labels(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, str] | None:
    """The labels kappa is computed on, and how they were obtained.

    Whole scores are used as given; scores on the 1-5 scale that are not all whole (human
    labels averaged over annotators) are rounded half up; anything else (e.g. cosine
    similarities) has no kappa (``None``).
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if score_categories(a, b) is not None:
        return a, b, AS_GIVEN
    both = np.concatenate([a, b])
    if (len(both) and np.all(np.isfinite(both)) and both.min() >= SCALE[0]
            and both.max() <= SCALE[-1]):
        return round_half_up(a), round_half_up(b), ROUNDED
    return None


def _anova_two_raters(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Mean squares of the two-way layout subjects x 2 raters, over the last axis.

    Returns ``(MSR, MSC, MSE)``: rows (subjects), columns (raters), residual.
    """
    n = x.shape[-1]
    grand = (x.sum(-1) + y.sum(-1)) / (2 * n)
    rows = (x + y) / 2
    ssr = 2 * ((rows - grand[..., None]) ** 2).sum(-1)
    ssc = n * ((x.mean(-1) - grand) ** 2 + (y.mean(-1) - grand) ** 2)
    sst = ((x - grand[..., None]) ** 2).sum(-1) + ((y - grand[..., None]) ** 2).sum(-1)
    sse = sst - ssr - ssc
    return ssr / (n - 1), ssc, sse / (n - 1)


def icc_a1(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> np.ndarray:
    """ICC(A,1) of two raters (two-way random, absolute agreement, single rater).

    Works along the last axis, so a stack of resamples gives one value each; NaN when
    undefined (fewer than 2 subjects, or no variance at all).
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape[-1] < 2:
        return np.full(x.shape[:-1], np.nan)
    msr, msc, mse = _anova_two_raters(x, y)
    n = x.shape[-1]
    denominator = msr + mse + 2 * (msc - mse) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (msr - mse) / denominator, np.nan)


def icc_a_interval(n: int, k: int, msr: float, msc: float, mse: float,
                   confidence: float) -> tuple[float, float]:
    """F-based interval of ICC(A,1) (= Shrout & Fleiss' ICC(2,1)) of n targets x k raters
    from the mean squares of rows, columns and error (McGraw & Wong 1996, case 2A, with
    their Satterthwaite df; pingouin's ``CI95`` of ICC(A,1)). NaN when undefined."""
    denominator = msr + (k - 1) * mse + k * (msc - mse) / n
    if n < 2 or k < 2 or mse <= 0 or denominator <= 0:
        return math.nan, math.nan
    icc = (msr - mse) / denominator
    fc = msc / mse
    vn = (k - 1) * (n - 1) * (k * icc * fc + n * (1 + (k - 1) * icc) - k * icc) ** 2
    vd = (n - 1) * k ** 2 * icc ** 2 * fc ** 2 + (n * (1 + (k - 1) * icc) - k * icc) ** 2
    if vd <= 0:
        return math.nan, math.nan
    v = vn / vd
    tail = (1 - confidence) / 2
    fu = stats.f.ppf(1 - tail, n - 1, v)
    fl = stats.f.ppf(1 - tail, v, n - 1)
    lower = n * (msr - fu * mse) / (fu * (k * msc + (k * n - k - n) * mse) + n * msr)
    upper = n * (fl * msr - mse) / (k * msc + (k * n - k - n) * mse + n * fl * msr)
    return float(lower), float(upper)


def icc_a1_interval(x: np.ndarray, y: np.ndarray, confidence: float) -> tuple[float, float]:
    """F-based interval of ICC(A,1) for two raters (McGraw & Wong 1996, case 2A)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3:
        return math.nan, math.nan
    msr, msc, mse = (float(v) for v in _anova_two_raters(x, y))
    return icc_a_interval(len(x), 2, msr, msc, mse, confidence)


def alpha_interval(x: Sequence[float] | np.ndarray,
                   y: Sequence[float] | np.ndarray) -> np.ndarray:
    """Krippendorff's alpha, interval metric, two coders, no missing values (last axis)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = x.shape[-1]
    if n < 2:
        return np.full(x.shape[:-1], np.nan)
    values = np.concatenate([x, y], axis=-1)
    ss = ((values - values.mean(-1, keepdims=True)) ** 2).sum(-1)
    observed = ((x - y) ** 2).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ss > 0, 1 - (2 * n - 1) * observed / (2 * n * ss), np.nan)


# --- correlations and intervals -------------------------------------------------------------
def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of two 2-D arrays (NaN for a constant row)."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    denominator = np.sqrt((xc ** 2).sum(1) * (yc ** 2).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (xc * yc).sum(1) / denominator, np.nan)


def _correlations(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pr = stats.pearsonr(x, y)
        sr = stats.spearmanr(x, y)
        kt = stats.kendalltau(x, y)
    return {PEARSON: float(pr.statistic), p_value(PEARSON): float(pr.pvalue),
            SPEARMAN: float(sr.statistic), p_value(SPEARMAN): float(sr.pvalue),
            KENDALL: float(kt.statistic), p_value(KENDALL): float(kt.pvalue)}


def _fisher_interval(r: float, se: float, z: float) -> tuple[float, float]:
    if not (np.isfinite(r) and np.isfinite(se)):
        return math.nan, math.nan
    r = float(np.clip(r, -1 + 1e-12, 1 - 1e-12))
    centre = math.atanh(r)
    return math.tanh(centre - z * se), math.tanh(centre + z * se)


def _analytic(row: dict[str, float], table: np.ndarray | None, n: int,
              confidence: float) -> None:
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    ses = {PEARSON: 1 / math.sqrt(n - 3) if n > 3 else math.nan,
           SPEARMAN: (math.sqrt((1 + row[SPEARMAN] ** 2 / 2) / (n - 3))
                      if n > 3 and np.isfinite(row[SPEARMAN]) else math.nan),
           KENDALL: math.sqrt(0.437 / (n - 4)) if n > 4 else math.nan}
    for name, se in ses.items():
        row[low(name)], row[high(name)] = _fisher_interval(row[name], se, z)
    se = weighted_kappa_se(table) if table is not None else math.nan
    if np.isfinite(se) and np.isfinite(row[KAPPA]):
        row[low(KAPPA)] = max(-1.0, row[KAPPA] - z * se)
        row[high(KAPPA)] = min(1.0, row[KAPPA] + z * se)


def _tables(x: np.ndarray, y: np.ndarray, idx: np.ndarray,
            categories: Sequence[int]) -> np.ndarray:
    """The confusion matrices of every resample (rows of ``idx``) at once."""
    k = len(categories)
    lookup = {float(c): i for i, c in enumerate(categories)}
    codes = (np.array([lookup[float(v)] for v in x]) * k
             + np.array([lookup[float(v)] for v in y]))[idx]
    codes += np.arange(len(idx))[:, None] * k * k
    return np.bincount(codes.ravel(), minlength=len(idx) * k * k).reshape(len(idx), k, k)


def _kappas(tables: np.ndarray) -> np.ndarray:
    """Quadratic-weighted kappa of a stack of confusion matrices (vectorised)."""
    n = tables.sum(axis=(1, 2)).astype(float)
    w = quadratic_weights(tables.shape[1])
    expected = tables.sum(2)[:, :, None] * tables.sum(1)[:, None, :] / n[:, None, None]
    denominator = (w * expected).sum(axis=(1, 2))
    observed = (w * tables).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, 1 - observed / denominator, np.nan)


def _kendalls(tables: np.ndarray) -> np.ndarray:
    """Kendall tau-b of a stack of confusion matrices of ordered categories (vectorised).

    Concordant pairs: cells below and to the right of each cell; discordant: below and to
    the left; ties are handled through the margins (tau-b).
    """
    t = tables.astype(float)
    below = np.cumsum(t[:, ::-1, :], axis=1)[:, ::-1, :]          # rows >= i
    below = np.concatenate([below[:, 1:, :], np.zeros_like(t[:, :1, :])], axis=1)  # rows > i
    right = np.cumsum(below[:, :, ::-1], axis=2)[:, :, ::-1]      # cols >= j
    right = np.concatenate([right[:, :, 1:], np.zeros_like(t[:, :, :1])], axis=2)
    left = np.cumsum(below, axis=2)                              # cols <= j
    left = np.concatenate([np.zeros_like(t[:, :, :1]), left[:, :, :-1]], axis=2)
    concordant = (t * right).sum(axis=(1, 2))
    discordant = (t * left).sum(axis=(1, 2))
    n = t.sum(axis=(1, 2))
    pairs = n * (n - 1) / 2
    ties_x = (t.sum(2) * (t.sum(2) - 1) / 2).sum(1)
    ties_y = (t.sum(1) * (t.sum(1) - 1) / 2).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        denominator = np.sqrt((pairs - ties_x) * (pairs - ties_y))
        return np.where(denominator > 0, (concordant - discordant) / denominator, np.nan)


#: Kendall's bootstrap uses confusion matrices up to this many distinct values.
_MAX_KENDALL_CATEGORIES = 60


def _bootstrap(x: np.ndarray, y: np.ndarray,
               labels: tuple[np.ndarray, np.ndarray, Sequence[int]] | None,
               row: dict[str, float], *, n_resamples: int, confidence: float,
               rng: np.random.Generator) -> None:
    n = len(x)
    idx = rng.integers(0, n, size=(n_resamples, n))
    bx, by = x[idx], y[idx]
    draws = {PEARSON: _pearson_rows(bx, by),
             SPEARMAN: _pearson_rows(stats.rankdata(bx, axis=1), stats.rankdata(by, axis=1)),
             ICC: icc_a1(bx, by), ALPHA: alpha_interval(bx, by)}
    if labels is not None:
        draws[KAPPA] = _kappas(_tables(labels[0], labels[1], idx, labels[2]))
    distinct = np.unique(np.r_[x, y])
    if len(distinct) <= _MAX_KENDALL_CATEGORIES:  # ordered categories: tau-b from tables
        draws[KENDALL] = _kendalls(_tables(x, y, idx, distinct))
    else:  # many distinct values: Kendall one resample at a time
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            draws[KENDALL] = np.array([stats.kendalltau(bx[i], by[i]).statistic
                                       for i in range(n_resamples)])
    tail = (1 - confidence) / 2
    for name, values in draws.items():
        values = values[np.isfinite(values)]
        # An interval needs most resamples to be defined (not constant on one side).
        if np.isfinite(row[name]) and len(values) >= 0.5 * n_resamples:
            row[low(name)], row[high(name)] = (float(v) for v in
                                               np.quantile(values, [tail, 1 - tail]))


def pair_agreement(judge: Sequence[float], human: Sequence[float], *,
                   ci: CIMethod = "bootstrap", n_resamples: int = 1000, confidence: float = 0.95,
                   seed: int | np.random.Generator | None = 0) -> dict[str, Any]:
    """Agreement statistics of two score arrays of equal length (missing pairs dropped).

    Returns
    -------
    dict
        ``n``, ``n_missing``, the coefficients (Pearson, Spearman, Kendall, quadratic
        kappa, ICC(A,1), Krippendorff's alpha interval) with ``_low``/``_high`` bounds,
        the correlations' ``_p`` values, ``kappa_labels`` and ``exact_agreement`` (see
        :data:`AGREEMENT_COLUMNS`).
    """
    x = pd.to_numeric(pd.Series(list(judge)), errors="coerce").to_numpy(dtype=float)
    y = pd.to_numeric(pd.Series(list(human)), errors="coerce").to_numpy(dtype=float)
    if len(x) != len(y):
        raise ValueError(f"judge and human scores differ in length ({len(x)} vs {len(y)}).")
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    n = int(keep.sum())
    row: dict[str, Any] = {N: n, N_MISSING: int((~keep).sum())}
    for name in COEFFICIENTS:
        row[name] = row[low(name)] = row[high(name)] = math.nan
        if name in CORRELATIONS:
            row[p_value(name)] = math.nan
    labels = kappa_labels(x, y) if n else None
    categories = score_categories(labels[0], labels[1]) if labels is not None else None
    if categories is None:
        labels = None
    row[KAPPA_LABELS] = labels[2] if labels is not None and n >= 3 else ""
    row[EXACT] = (float(np.mean(labels[0] == labels[1])) if labels is not None
                  else float(np.mean(x == y)) if n else math.nan)
    if n < 3:
        return row
    row.update(_correlations(x, y))
    row[ICC] = float(icc_a1(x, y))
    row[ALPHA] = float(alpha_interval(x, y))
    table = (confusion_matrix(labels[0], labels[1], categories)
             if labels is not None and categories is not None else None)
    row[KAPPA] = weighted_kappa(table) if table is not None else math.nan
    if ci == "analytic":
        _analytic(row, table, n, confidence)
        row[low(ICC)], row[high(ICC)] = icc_a1_interval(x, y, confidence)
    elif ci == "bootstrap":
        rng = (seed if isinstance(seed, np.random.Generator)
               else np.random.default_rng(seed))
        _bootstrap(x, y, (labels[0], labels[1], categories)
                   if labels is not None and categories is not None else None,
                   row, n_resamples=n_resamples,
                   confidence=confidence, rng=rng)
    elif ci != "none":
        raise ValueError(f"ci must be 'bootstrap', 'analytic' or 'none', not {ci!r}.")
    return row


# --- tables ---------------------------------------------------------------------------------
def agreement(frame: pd.DataFrame, pairs: Sequence[tuple[str, str]] | None = None, *,
              by_stage: bool = True, ci: CIMethod = "bootstrap", n_resamples: int = 1000,
              confidence: float = 0.95, seed: int | None = 0) -> pd.DataFrame:
    """Agreement of judge scores with human labels (or a second judge) per metric and stage.

    Parameters
    ----------
    frame
        A table with both score columns on each row (a judged file with human labels, or
        two judged files merged with :func:`merge_judged`).
    pairs
        ``(judge column, human column)`` pairs; ``None`` finds them with
        :func:`human_pairs`.
    by_stage
        Add one row per stage (when ``frame`` has a ``stage`` column).
    ci, n_resamples, confidence, seed
        Confidence intervals (module docstring); the bootstrap is seeded with
        ``seed`` and each row draws from its own generator, so adding a metric
        does not change the others' intervals.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`AGREEMENT_COLUMNS`. One row per pair and stage, then the pair over
        all stages (``stage == "all"``); with several pairs, rows pooling every pair's
        scores (``metric == "all"``). ``metric`` is the judge column's name.

    Raises
    ------
    JudgesError
        No pairs found or given; a column is missing.
    """
    if not 0 < confidence < 1:
        raise JudgesError(f"confidence must be between 0 and 1, got {confidence}.")
    pairs = list(pairs) if pairs is not None else human_pairs(frame)
    if not pairs:
        raise JudgesError("No human label columns found: name them human_<metric> (e.g. "
                          "human_ics) or say which columns to compare.")
    missing = sorted({c for p in pairs for c in p if c not in frame.columns})
    if missing:
        raise JudgesError(f"Column(s) {', '.join(missing)} not in the file; columns: "
                          f"{', '.join(map(str, frame.columns))}.")
    has_stage = by_stage and C.STAGE in frame.columns
    stages = (pd.to_numeric(frame[C.STAGE], errors="coerce").to_numpy()
              if has_stage else np.zeros(len(frame)))
    groups: list[tuple[str, str, str, str, np.ndarray, np.ndarray]] = []
    pooled: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    for judge_col, human_col in pairs:
        x = pd.to_numeric(frame[judge_col], errors="coerce").to_numpy(dtype=float)
        y = pd.to_numeric(frame[human_col], errors="coerce").to_numpy(dtype=float)
        labelled = np.isfinite(x) | np.isfinite(y)
        if has_stage:
            for stage in sorted(set(stages[labelled & np.isfinite(stages)])):
                mask = labelled & (stages == stage)
                groups.append((judge_col, str(int(stage)), judge_col, human_col, x[mask],
                               y[mask]))
                xs, ys = pooled.setdefault(str(int(stage)), ([], []))
                xs.append(x[mask])
                ys.append(y[mask])
        groups.append((judge_col, ALL, judge_col, human_col, x[labelled], y[labelled]))
        xs, ys = pooled.setdefault(ALL, ([], []))
        xs.append(x[labelled])
        ys.append(y[labelled])
    if len(pairs) > 1:
        for stage, (xs, ys) in pooled.items():
            groups.append((ALL, stage, ALL, ALL, np.concatenate(xs), np.concatenate(ys)))
    seeds = np.random.SeedSequence(seed).spawn(len(groups))
    rows = []
    for (metric, stage, jc, hc, x, y), group_seed in zip(groups, seeds, strict=True):
        row = pair_agreement(x, y, ci=ci, n_resamples=n_resamples, confidence=confidence,
                             seed=np.random.default_rng(group_seed))
        rows.append({C.METRIC: metric, C.STAGE: stage, JUDGE_COLUMN: jc, HUMAN_COLUMN: hc,
                     **row, CI_METHOD: ci})
    table = pd.DataFrame(rows, columns=list(AGREEMENT_COLUMNS))
    order = {m: i for i, (m, _) in enumerate(pairs)} | {ALL: len(pairs)}
    table["_m"] = table[C.METRIC].map(order)
    table["_s"] = table[C.STAGE].map(lambda s: 99 if s == ALL else int(s))
    table = table.sort_values(["_m", "_s"], kind="stable").drop(columns=["_m", "_s"])
    return table.reset_index(drop=True).astype({N: "int64", N_MISSING: "int64"})


#: Columns that identify a judged row when two judged files are merged.
MERGE_KEYS: tuple[str, ...] = (C.ID, C.STAGE, C.SENSITIVE_FACTOR, C.SCENARIO, C.MODEL)


def merge_judged(first: pd.DataFrame, second: pd.DataFrame, *, suffix: str = "_other",
                 on: Sequence[str] | None = None) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """Two judged files side by side, to measure agreement between two judges.

    Returns
    -------
    (pandas.DataFrame, list)
        The rows present in both (joined on :data:`MERGE_KEYS` that both files have),
        ``first``'s metric columns as they are and ``second``'s with ``suffix``; and the
        ``(metric, metric + suffix)`` pairs to pass to :func:`agreement`.

    Raises
    ------
    JudgesError
        No shared key column, duplicate keys, or no metric column in both files.
    """
    on = list(on) if on is not None else [k for k in MERGE_KEYS
                                          if k in first.columns and k in second.columns]
    if not on:
        raise JudgesError(f"The two files share none of {', '.join(MERGE_KEYS)} to match rows.")
    metrics = [m for m in (*C.METRICS, C.SIMILARITY)
               if m in first.columns and m in second.columns]
    if not metrics:
        raise JudgesError("The two files have no score column (ics ... sbas) in common.")
    for name, f in (("first", first), ("second", second)):
        if f.duplicated(on).any():
            raise JudgesError(f"The {name} file has several rows with the same "
                              f"{', '.join(on)}; cannot match rows.")
    keys = [f[on].astype(str) for f in (first, second)]
    right = keys[1].assign(**{f"{m}{suffix}": second[m].to_numpy() for m in metrics})
    merged = pd.concat([keys[0], first.drop(columns=on)], axis=1).merge(right, on=on)
    if C.STAGE in merged.columns:
        merged[C.STAGE] = pd.to_numeric(merged[C.STAGE], errors="coerce")
    return merged, [(m, f"{m}{suffix}") for m in metrics]
