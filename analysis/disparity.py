"""Disparity of a numeric feature across groups: the SAGED diagnosis (``methods.md`` s. 5).

A numeric feature per response (a sentiment or toxicity score supplied in the file, a
judge score, an embedding similarity) is compared across the groups formed by one or
more factors:

1. **Baseline calibration** (optional): ``feature - baseline`` per row, where the
   baseline column holds the same feature measured on a baseline text (removes the bias
   of the scoring tool and of the context).
2. **Summary statistic per group**: mean, median, variance, standard deviation,
   skewness, kurtosis or a quantile range (:func:`group_summary`).
3. **Selection rate per group**: the share of the group's values above (or below, or
   within a tolerance of) a standard computed over all rows, the impact ratio
   ``SR_g / max SR`` and the four-fifths verdict (:func:`selection_rates`).
4. **Disparity across the group statistics**: min/max ratio, range, standard deviation,
   max Z-score and Dixon's Q test for one outlying group (:func:`disparity_metrics`,
   :func:`dixon_q_test`).
5. **Permutation tests**: a p-value for each group's statistic against the rest of the
   rows (or against all rows) by shuffling group labels (:func:`permutation_test`).

Conventions (see ``docs/disparity.md``): rows whose feature (or baseline) is missing are
left out; variance and standard deviation use ``ddof=1``; skewness and kurtosis are the
bias-adjusted sample coefficients G1 and G2 (excess kurtosis), as
``scipy.stats.skew(..., bias=False)`` / ``scipy.stats.kurtosis(..., bias=False)`` and
pandas; quantiles interpolate linearly (numpy's default). Across-group standard
deviation and Z-scores use ``ddof=1``, so the max Z-score of k groups can never exceed
``(k - 1) / sqrt(k)`` (Shiffler 1988).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

from analysis.columns import (
    COMPARED_WITH,
    DIFFERENCE,
    GROUP,
    IMPACT_RATIO,
    KURTOSIS,
    MEAN,
    MEDIAN,
    METRIC,
    N_PERMUTATIONS,
    N_SELECTED,
    NOTE,
    OBSERVED,
    P_ADJUSTED,
    P_VALUE,
    PASSES_FOUR_FIFTHS,
    QUANTILE_RANGE,
    QUANTITY,
    SELECTION_RATE,
    SELECTION_RULE,
    SKEWNESS,
    STANDARD,
    STD,
    STOPPED_EARLY,
    VALUE,
    VARIANCE,
    N,
)
from analysis.design import Design
from analysis.dixon import DIXON_EXACT
from analysis.errors import AnalysisError
from analysis.factor_defaults import (  # noqa: F401 - their home since the split
    default_group,
    feature_polarity,
    is_id_like,
    numeric_columns,
)
from analysis.values import combine_codes, factor_codes, small_integers, split_codes

__all__ = [
    "ALTERNATIVES", "Alternative", "COMPARES", "COMPARISONS", "CONVENTIONS", "Compare",
    "Comparison", "Conventions", "DEFAULT_PERMUTATIONS", "DIRECTIONS", "DIXON_ALPHAS",
    "DIXON_CRITICAL", "DIXON_RANGES", "DIXON_SOURCE", "DIXON_VARIANTS", "Direction",
    "DisparityReport", "DixonResult", "DixonVariant", "FOUR_FIFTHS", "GROUP_SEPARATOR",
    "Grouping", "grouping",
    "PERMUTATION_BATCH", "PERMUTATION_PATH", "Polarity", "STANDARDS", "STATISTICS",
    "STOP_CONFIDENCE", "Standard", "Statistic", "TABLE_CELLS", "TABLE_ROWS_PER_CELL",
    "default_direction", "default_group", "disparity_metrics", "disparity_report",
    "report_of", "resolve_polarity", "selection_direction",
    "dixon_critical", "dixon_q_test", "dixon_variant", "feature_polarity", "feature_values",
    "group_summary", "grouped_values", "is_id_like", "numeric_columns", "permutation_test",
    "selection_rates", "standard_value", "with_permutation",
]


Statistic = Literal["mean", "median", "variance", "std", "skewness", "kurtosis",
                    "quantile_range"]
STATISTICS: tuple[str, ...] = get_args(Statistic)
Standard = Literal["mean", "median", "quantile", "value"]
#: ``workbench``: unbiased variance/SD (ddof 1), bias-adjusted skewness/kurtosis, max |z|
#: with the ddof-1 SD, min/max ratio only for positive values. ``saged``: the SAGED
#: library's numbers (ddof 0 variance/SD, scipy's default skew/kurtosis, the signed maximum
#: of ``scipy.stats.zscore`` (ddof 0), min/max whenever max != 0).
Conventions = Literal["workbench", "saged"]
CONVENTIONS: tuple[str, ...] = get_args(Conventions)
STANDARDS: tuple[str, ...] = get_args(Standard)
Direction = Literal["above", "below", "within"]
DIRECTIONS: tuple[str, ...] = get_args(Direction)
Comparison = Literal["inclusive", "strict"]
COMPARISONS: tuple[str, ...] = get_args(Comparison)
Polarity = Literal["harmful", "favourable"]
Compare = Literal["rest", "overall"]
COMPARES: tuple[str, ...] = get_args(Compare)
Alternative = Literal["two-sided", "greater", "less"]
ALTERNATIVES: tuple[str, ...] = get_args(Alternative)
DixonVariant = Literal["r10", "r11", "r21", "r22"]
DIXON_VARIANTS: tuple[str, ...] = get_args(DixonVariant)

#: The four-fifths rule: an impact ratio below this fails.
FOUR_FIFTHS = 0.8
from analysis.options.disparity import DisparityOptions as _Options  # noqa: E402

#: The defaults of :func:`permutation_test` and :func:`disparity_report` (one declaration:
#: ``analysis/options/disparity.py``).
_DEFAULT = _Options()
DEFAULT_PERMUTATIONS: int = _DEFAULT.n_resamples
#: Adaptive permutations: the stopping rule is checked every this many shuffles ...
PERMUTATION_BATCH = 100
#: ... and a group stops once the Clopper-Pearson interval of its p-value at this level
#: lies entirely above or below alpha.
STOP_CONFIDENCE = 0.999
#: The table path of :func:`permutation_test`: a feature with D distinct values over k
#: groups is shuffled as a k x D table of counts when ``D * k <= TABLE_CELLS`` and
#: ``D * k * TABLE_ROWS_PER_CELL <= rows`` (few values: BBQ's 0/1 answers, judge scores
#: 1-5, small counts); otherwise the rows are shuffled (a continuous score).
TABLE_CELLS = 4096
TABLE_ROWS_PER_CELL = 32
#: Former ``attrs`` key of :func:`permutation_test`'s path (``"table"`` or ``"rows"``),
#: now returned by ``permutation_test(..., return_path=True)``; kept for old imports.
PERMUTATION_PATH = "permutation_path"
#: Significance levels of the Dixon critical-value tables (two-tailed).
DIXON_ALPHAS: tuple[float, ...] = (0.10, 0.05, 0.01)
#: Which ratio Dixon recommends for which sample size (inclusive ranges).
DIXON_RANGES: dict[str, tuple[int, int]] = {"r10": (3, 7), "r11": (8, 10), "r21": (11, 13),
                                            "r22": (14, 25)}
GROUP_SEPARATOR = " / "

# Two-tailed critical values of Dixon's ratios for normal samples, at alpha = 0.10, 0.05,
# 0.01 (confidence 90 / 95 / 99 %): reject the suspect value when its ratio exceeds the
# value. Every ratio for every n from its minimum (r10 3, r11 4, r21 5, r22 6) to 25,
# computed exactly by numerical integration of the ratio's null distribution
# (analysis/dixon.py; checked against the dixonstat package and by simulation; the
# comparison with the published tables is in docs/disparity.md).
DIXON_CRITICAL: dict[str, dict[int, tuple[float, float, float]]] = DIXON_EXACT
DIXON_SOURCE = {v: "exact (numerical integration, analysis/dixon.py)" for v in DIXON_EXACT}


# --- the feature -------------------------------------------------------------------------
def _numeric(results: pd.DataFrame, column: str, what: str) -> np.ndarray:
    if column not in results.columns:
        raise AnalysisError(f"There is no {what} column {column!r} in the results table.")
    s = results[column]
    if pd.api.types.is_bool_dtype(s):
        return s.astype(float).to_numpy()
    numbers = pd.to_numeric(s, errors="coerce")
    bad = numbers.isna() & s.notna()
    if bad.any():
        examples = ", ".join(repr(str(v)) for v in pd.unique(s[bad])[:5])
        raise AnalysisError(f"The {what} column {column!r} must hold numbers, but "
                            f"{int(bad.sum()):,} rows do not ({examples}).")
    x = numbers.to_numpy(dtype=float)
    inf = np.isinf(x)
    if inf.any():
        rows = ", ".join(str(i) for i in np.flatnonzero(inf)[:5])
        raise AnalysisError(f"The {what} column {column!r} holds infinite values (rows {rows}"
                            f"{' ...' if inf.sum() > 5 else ''}).")
    return x


def feature_values(results: pd.DataFrame, feature: str, *, baseline: str | None = None
                   ) -> np.ndarray:
    """The feature of every row, calibrated by the baseline when one is given.

    ``calibrated = feature(response) - feature(baseline text)`` row by row
    (``methods.md`` s. 5); NaN where either is missing.

    Raises
    ------
    AnalysisError
        A column that does not exist or holds something other than numbers.
    """
    x = _numeric(results, feature, "feature")
    if baseline is not None:
        if baseline == feature:
            raise AnalysisError("The baseline column must differ from the feature column.")
        x = x - _numeric(results, baseline, "baseline")
    return x


@dataclass(frozen=True)
class _Groups:
    """Rows with a known feature value, coded by group."""

    x: np.ndarray            # feature values of the kept rows
    codes: np.ndarray        # group index of each kept row, 0..k-1
    table: pd.DataFrame      # one row per observed group: by columns, group label, n
    n_missing: int           # rows left out because the feature was missing
    _kept: dict = field(default_factory=dict, repr=False, compare=False)  # by_group's

    @property
    def k(self) -> int:
        return len(self.table)

    def by_group(self) -> list[np.ndarray]:
        """Each group's values in row order (one stable sort of the codes, kept)."""
        if "by_group" not in self._kept:
            codes = self.codes.astype(np.int16) if self.k < 2 ** 15 else self.codes
            ends = np.cumsum(np.bincount(self.codes, minlength=self.k))[:-1]
            values = self.x[np.argsort(codes, kind="stable")]
            values.flags.writeable = False  # shared by every caller
            self._kept["by_group"] = np.split(values, ends)
        return self._kept["by_group"]

    @property
    def labels(self) -> list[str]:
        return self.table[GROUP].tolist()


@dataclass(frozen=True)
class Grouping:
    """The rows of a table grouped for one feature (:func:`grouping`): pass it instead of
    the table to :func:`group_summary`, :func:`selection_rates`, :func:`permutation_test`
    and :func:`grouped_values` with the same feature, groups and baseline, and they skip
    reading the rows' columns again (an app computing all four pays for it once)."""

    feature: str
    by: tuple[str, ...]
    baseline: str | None
    groups: _Groups

    @property
    def n_missing(self) -> int:
        """Rows left out because the feature (or the baseline) is missing."""
        return self.groups.n_missing

    def values_by_group(self) -> list[np.ndarray]:
        """The feature as analysed of each group's rows, in row order, the groups in the
        order of :func:`group_summary`'s rows (read-only arrays: computed once, by one
        stable sort of the group codes, and kept for the next caller)."""
        return self.groups.by_group()


def grouping(results: pd.DataFrame, feature: str, by: str | Sequence[str], *,
             baseline: str | None = None) -> Grouping:
    """The rows with a feature value, coded by group, for reuse (:class:`Grouping`).

    Raises
    ------
    AnalysisError
        As :func:`group_summary` (missing columns, a non-numeric feature, no groups).
    """
    by = [by] if isinstance(by, str) else list(by)
    return Grouping(feature, tuple(by), baseline, _groups(results, feature, by, baseline))


def _groups(results: pd.DataFrame | Grouping, feature: str, by: Sequence[str],
            baseline: str | None) -> _Groups:
    by = [by] if isinstance(by, str) else list(by)
    if isinstance(results, Grouping):
        if (results.feature, list(results.by), results.baseline) != (feature, by, baseline):
            raise AnalysisError(
                f"This grouping is of {results.feature!r} by {', '.join(results.by)}"
                f"{f' - {results.baseline!r}' if results.baseline else ''}, not of "
                f"{feature!r} by {', '.join(by)}{f' - {baseline!r}' if baseline else ''}.")
        return results.groups
    if not by:
        raise AnalysisError("Choose at least one factor to group by.")
    missing = [b for b in by if b not in results.columns]
    if missing:
        raise AnalysisError(f"Not columns of the table: {', '.join(missing)}.")
    if len(set(by)) < len(by):
        raise AnalysisError("A grouping factor is listed twice.")
    if feature in by or (baseline is not None and baseline in by):
        raise AnalysisError("The feature (or baseline) column cannot also group the rows.")
    x = feature_values(results, feature, baseline=baseline)
    keep = ~np.isnan(x)
    if not keep.any():
        raise AnalysisError(f"The feature {feature!r} is missing in every row"
                            f"{' (after subtracting the baseline)' if baseline else ''}.")
    all_codes, all_values = zip(*(factor_codes(results[b]) for b in by), strict=True)
    sizes = [max(len(v), 1) for v in all_values]
    key = combine_codes(all_codes, sizes, n=len(results))
    uniq, inverse = _unique_keys(key[keep], math.prod(sizes))
    parts = split_codes(uniq, sizes)
    table = pd.DataFrame({b: pd.Categorical.from_codes(c, categories=v, ordered=True)
                          for b, c, v in zip(by, parts, all_values, strict=True)})
    table[GROUP] = [GROUP_SEPARATOR.join(str(v[c]) for v, c in zip(all_values, row,
                                                                     strict=True))
                    for row in zip(*parts, strict=True)]
    codes = inverse.reshape(-1).astype(np.int64)
    table[N] = np.bincount(codes, minlength=len(uniq)).astype(np.int64)
    return _Groups(x=x[keep], codes=codes, table=table, n_missing=int((~keep).sum()))


def _unique_keys(key: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)``; without a sort when the keys are dense
    (fewer possible keys than 4 per row: a count per key and a lookup)."""
    if key.dtype == object or n_keys > 4 * len(key) + 1024:
        return np.unique(key, return_inverse=True)
    seen = np.bincount(key, minlength=n_keys) > 0
    uniq = np.flatnonzero(seen)
    lookup = np.cumsum(seen) - 1
    return uniq.astype(key.dtype), lookup[key]


def grouped_values(results: pd.DataFrame | Grouping, feature: str, by: str | Sequence[str], *,
                   baseline: str | None = None) -> pd.DataFrame:
    """The (calibrated) feature of every row with a value, and its group label.

    Returns
    -------
    pandas.DataFrame
        Columns ``group`` (ordered categorical, groups in value order) and ``value``;
        what box plots of the feature per group need.
    """
    g = _groups(results, feature, by, baseline)
    labels = g.labels
    return pd.DataFrame({GROUP: pd.Categorical.from_codes(g.codes, categories=labels,
                                                          ordered=True), VALUE: g.x})


# --- group statistics, vectorised over groups --------------------------------------------
class _Stats:
    """Group statistics from power sums and one sort, so permutations cost O(rows).

    Moments use sums of powers of ``x - mean(x)`` per group (``np.bincount``); quantiles
    use the values sorted once: shuffling labels over the sorted values keeps every
    group's values sorted, so a stable sort of the labels delivers each group's sorted
    values as one slice, and the complement's order statistics are found by a binary
    search on the group's positions.
    """

    def __init__(self, x: np.ndarray, k: int, quantiles: tuple[float, float]):
        self.k = k
        self.n_total = len(x)
        self.centre = float(np.mean(x))
        small = small_integers(x)
        self.order = np.argsort(x if small is None else small, kind="stable")
        self.xs = x[self.order]
        self.d = self.xs - self.centre
        self._powers: dict[int, np.ndarray] = {}
        self._totals: dict[int, float] = {}
        self.quantiles = quantiles
        #: the last labels :meth:`quantile_stats` sorted and their order (kept by identity)
        self._ordered: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
        self.label_dtype = np.int16 if k < 2 ** 15 else np.int64
        #: group sizes when every labelling is a shuffle of one (a permutation test): the
        #: sizes do not change, so they are not counted again per shuffle
        self.counts: np.ndarray | None = None

    def power(self, p: int) -> np.ndarray:
        """``d ** (p + 1)`` (d = x - mean, sorted), computed when a moment first needs it
        (``d ** 3`` and ``d ** 4`` cost ~70 ms each at 1M rows)."""
        if p not in self._powers:
            self._powers[p] = self.d if p == 0 else self.d ** (p + 1)
        return self._powers[p]

    def total(self, p: int) -> float:
        """The sum of :meth:`power` ``p`` over all rows."""
        if p not in self._totals:
            self._totals[p] = float(self.power(p).sum())
        return self._totals[p]

    def sorted_labels(self, codes: np.ndarray) -> np.ndarray:
        return codes[self.order].astype(self.label_dtype)

    # moments ---------------------------------------------------------------------------
    def _sums(self, labels: np.ndarray, power: int) -> tuple[np.ndarray, list[np.ndarray]]:
        n = self.counts if self.counts is not None else \
            np.bincount(labels, minlength=self.k).astype(float)
        sums = [np.bincount(labels, weights=self.power(p), minlength=self.k)
                for p in range(power)]
        return n, sums

    def _from_sums(self, statistic: str, n: np.ndarray, s: list[np.ndarray]) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            mu = s[0] / n
            if statistic == MEAN:
                return mu + self.centre
            var = (s[1] - s[0] * mu) / (n - 1)
            var = np.where(n > 1, np.maximum(var, 0.0), np.nan)
            if statistic == VARIANCE:
                return var
            if statistic == STD:
                return np.sqrt(var)
            m2 = np.maximum(s[1] / n - mu ** 2, 0.0)
            # m2 = E(d^2) - mu^2 loses the digits of E(d^2): below 1e-10 of it, m2 is noise
            flat = m2 <= 1e-10 * (s[1] / n)
            m3 = s[2] / n - 3 * mu * s[1] / n + 2 * mu ** 3
            if statistic == SKEWNESS:
                g1 = m3 / m2 ** 1.5
                out = g1 * np.sqrt(n * (n - 1)) / (n - 2)
                return np.where((n > 2) & ~flat, out, np.nan)
            m4 = s[3] / n - 4 * mu * s[2] / n + 6 * mu ** 2 * s[1] / n - 3 * mu ** 4
            g2 = m4 / m2 ** 2 - 3
            out = ((n + 1) * g2 + 6) * (n - 1) / ((n - 2) * (n - 3))
            return np.where((n > 3) & ~flat, out, np.nan)

    _POWER = {MEAN: 1, VARIANCE: 2, STD: 2, SKEWNESS: 3, KURTOSIS: 4}

    def moment(self, statistic: str, labels: np.ndarray, *, rest: bool = False):
        """The statistic of every group; with ``rest=True`` a pair (groups, complements)."""
        n, s = self._sums(labels, self._POWER[statistic])
        own = self._from_sums(statistic, n, s)
        if not rest:
            return own
        n_rest = self.n_total - n
        s_rest = [self.total(p) - s[p] for p in range(len(s))]
        return own, self._from_sums(statistic, n_rest, s_rest)

    def overall_moment(self, statistic: str) -> float:
        n = np.array([float(self.n_total)])
        s = [np.array([self.total(p)]) for p in range(self._POWER[statistic])]
        return float(self._from_sums(statistic, n, s)[0])

    # quantiles -------------------------------------------------------------------------
    @staticmethod
    def _interpolate(values_at, size: np.ndarray, q: float) -> np.ndarray:
        h = (size - 1) * q
        lo = np.floor(h).astype(np.int64)
        hi = np.minimum(lo + 1, size - 1)
        a, b = values_at(lo), values_at(hi)
        return a + (h - lo) * (b - a)

    def quantile_stats(self, statistic: str, labels: np.ndarray, *, rest: bool = False):
        """Median or quantile range of every group (a pair with complements if ``rest``)."""
        qs = (0.5,) if statistic == MEDIAN else self.quantiles
        if self._ordered[0] is not labels:  # the median and the range: one sort of labels
            self._ordered = (labels, np.argsort(labels, kind="stable"))
        idx = self._ordered[1]
        counts = np.bincount(labels, minlength=self.k)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        own = np.full((len(qs), self.k), np.nan)
        other = np.full((len(qs), self.k), np.nan)
        for g in range(self.k):
            ng = int(counts[g])
            pos = idx[starts[g]: starts[g] + ng]  # positions in sorted order, ascending
            if ng:
                for j, q in enumerate(qs):
                    own[j, g] = self._interpolate(lambda r, p=pos: self.xs[p[r]],
                                                  np.array(ng), q)
            nr = self.n_total - ng
            if rest and nr:
                adjusted = pos - np.arange(ng)  # rest values before each group value

                def rest_at(r, adj=adjusted):
                    r = np.asarray(r)
                    return self.xs[r + np.searchsorted(adj, r, side="right")]

                for j, q in enumerate(qs):
                    other[j, g] = self._interpolate(rest_at, np.array(nr), q)

        def pick(a: np.ndarray) -> np.ndarray:
            return a[0] if statistic == MEDIAN else a[1] - a[0]

        return (pick(own), pick(other)) if rest else pick(own)

    def overall_quantile(self, statistic: str) -> float:
        if statistic == MEDIAN:
            return float(np.quantile(self.xs, 0.5))
        lo, hi = self.quantiles
        return float(np.quantile(self.xs, hi) - np.quantile(self.xs, lo))

    # dispatch ----------------------------------------------------------------------------
    def of_groups(self, statistic: str, labels: np.ndarray, *, rest: bool = False):
        """Group statistics; with ``rest=True`` a pair (groups, complements)."""
        if statistic in (MEDIAN, QUANTILE_RANGE):
            return self.quantile_stats(statistic, labels, rest=rest)
        return self.moment(statistic, labels, rest=rest)

    def overall(self, statistic: str) -> float:
        if statistic in (MEDIAN, QUANTILE_RANGE):
            return self.overall_quantile(statistic)
        return self.overall_moment(statistic)


@dataclass(frozen=True)
class _ValueTable:
    """A feature with few distinct values as a groups x values table of counts.

    Every statistic of the permutation test depends on a group's values only through how
    many of its rows hold each value, so for the test a uniform shuffle of the group
    labels *is* a random k x D table with the value counts and the group sizes as fixed
    margins: group 0 gets n_0 of the n rows at random (its value counts are a multivariate
    hypergeometric draw), group 1 gets n_1 of the rows left, ..., the last group the rest.
    Each multivariate hypergeometric draw is a chain of hypergeometric draws, value by
    value (numpy's ``"marginals"`` method), vectorised over a batch of shuffles: a shuffle
    costs O(k D) instead of O(rows). Moments come from the table (power sums of the
    distinct values times their counts), order statistics from cumulative counts with
    the interpolation of :meth:`_Stats._interpolate` (numpy's default, ``"linear"``).
    """

    values: np.ndarray    # the D distinct values, ascending
    counts: np.ndarray    # rows holding each value, (D,)
    sizes: np.ndarray     # rows of each group, (k,)
    observed: np.ndarray  # the observed table, (k, D)

    @classmethod
    def of(cls, st: _Stats, labels: np.ndarray) -> _ValueTable | None:
        """The table of ``st``'s sorted values and their group ``labels`` (sorted as the
        values), or None when the feature takes the row path (:data:`TABLE_CELLS`)."""
        n = st.n_total
        new = np.flatnonzero(st.xs[1:] != st.xs[:-1]) + 1  # where a new value starts
        d = len(new) + 1
        if d * st.k > TABLE_CELLS or d * st.k * TABLE_ROWS_PER_CELL > n or n >= 10 ** 9:
            return None  # (numpy's hypergeometric takes populations below 10^9)
        starts = np.concatenate([[0], new])
        value_index = np.repeat(np.arange(d), np.diff(np.append(starts, n)))
        observed = np.bincount(labels.astype(np.int64) * d + value_index,
                               minlength=st.k * d).reshape(st.k, d)
        return cls(st.xs[starts], observed.sum(axis=0), observed.sum(axis=1), observed)

    def draw(self, rng: np.random.Generator, b: int) -> np.ndarray:
        """``b`` tables of a uniform shuffle of the labels: ``(b, k, D)`` counts."""
        k, d = len(self.sizes), len(self.values)
        remaining = np.tile(self.counts, (b, 1))
        out = np.empty((b, k, d), dtype=np.int64)
        for g in range(k - 1):
            need = np.full(b, self.sizes[g], dtype=np.int64)
            pool = remaining.sum(axis=1)
            for v in range(d - 1):
                pool = pool - remaining[:, v]  # rows left with a value above v
                out[:, g, v] = rng.hypergeometric(remaining[:, v], pool, need)
                need = need - out[:, g, v]
            out[:, g, d - 1] = need
            remaining -= out[:, g]
        out[:, k - 1] = remaining
        return out

    def _quantile(self, tables: np.ndarray, size: np.ndarray, q: float) -> np.ndarray:
        cum = np.cumsum(tables, axis=-1)

        def value_at(r: np.ndarray) -> np.ndarray:  # the value of rank r (0-based)
            return self.values[(cum <= r[..., None]).sum(axis=-1)]

        return _Stats._interpolate(value_at, size, q)

    def own_and_other(self, st: _Stats, statistic: str, tables: np.ndarray, *, rest: bool
                      ) -> tuple[np.ndarray, np.ndarray]:
        """``(s(g), s(rest of g))`` (or ``s(all rows)``) per table and group: ``(b, k)``."""
        n = self.sizes
        if statistic in (MEDIAN, QUANTILE_RANGE):
            qs = (0.5,) if statistic == MEDIAN else st.quantiles
            own_q = [self._quantile(tables, n, q) for q in qs]
            own = own_q[0] if statistic == MEDIAN else own_q[1] - own_q[0]
            if rest:
                rest_q = [self._quantile(self.counts - tables, st.n_total - n, q) for q in qs]
                return own, rest_q[0] if statistic == MEDIAN else rest_q[1] - rest_q[0]
        else:
            w = self.values - st.centre
            powers = np.stack([w ** (p + 1) for p in range(_Stats._POWER[statistic])], axis=1)
            sums = tables.astype(float) @ powers  # (b, k, powers)
            s = [sums[..., p] for p in range(powers.shape[1])]
            own = st._from_sums(statistic, n.astype(float), s)
            if rest:
                totals = self.counts.astype(float) @ powers
                return own, st._from_sums(statistic, (st.n_total - n).astype(float),
                                          [totals[p] - s[p] for p in range(len(s))])
        return own, np.full(own.shape, st.overall(statistic))

    def difference(self, st: _Stats, statistic: str, tables: np.ndarray, *, rest: bool
                   ) -> np.ndarray:
        """``T = s(g) - s(rest or all)`` per table and group: ``(b, k)``."""
        own, other = self.own_and_other(st, statistic, tables, rest=rest)
        return own - other

    def shuffles(self, st: _Stats, statistic: str, *, rest: bool) -> _Shuffles:
        """``(rng, b) -> T*`` of ``b`` shuffles drawn as tables."""
        return lambda rng, b: self.difference(st, statistic, self.draw(rng, b), rest=rest)


def _check_quantiles(quantiles: tuple[float, float]) -> tuple[float, float]:
    lo, hi = (float(q) for q in quantiles)
    if not 0 <= lo < hi <= 1:
        raise AnalysisError(f"The quantile range needs 0 <= lower < upper <= 1, got "
                            f"({lo:g}, {hi:g}).")
    return lo, hi


def _check_statistic(statistic: str) -> None:
    if statistic not in STATISTICS:
        raise AnalysisError(f"Unknown statistic {statistic!r}: use one of "
                            f"{', '.join(STATISTICS)}.")


def group_summary(
    results: pd.DataFrame | Grouping,
    feature: str,
    by: str | Sequence[str],
    *,
    baseline: str | None = None,
    quantiles: tuple[float, float] = (0.25, 0.75),
    conventions: Conventions = "workbench",
) -> pd.DataFrame:
    """Every summary statistic of the feature per group (``methods.md`` s. 5).

    Parameters
    ----------
    results
        The results table (factor columns and the numeric feature column), or its
        :func:`grouping` for the same feature, groups and baseline.
    feature
        Numeric column; rows where it is missing are left out.
    by
        One or more factors; a group is an observed combination of their values.
    baseline
        Optional column of the same feature measured on a baseline text: the analysis
        then uses ``feature - baseline`` per row.
    quantiles
        Lower and upper quantile of ``quantile_range`` (default the interquartile range).
    conventions
        ``"workbench"`` (the definitions below) or ``"saged"``: variance and std with
        ddof 0 (``np.var``, ``np.std``), skewness and kurtosis as scipy's defaults
        (``bias=True``; kurtosis still excess), as the SAGED library computes them.

    Returns
    -------
    pandas.DataFrame
        One row per observed group, in the factors' value order: one column per factor,
        ``group`` (label, values joined by " / "), ``n`` (rows with a feature value),
        ``mean``, ``median``, ``variance`` and ``std`` (ddof=1; NaN when n = 1),
        ``skewness`` (G1, NaN when n < 3), ``kurtosis`` (excess G2, NaN when n < 4) and
        ``quantile_range`` (upper minus lower quantile, linear interpolation).
    """
    quantiles = _check_quantiles(quantiles)
    g = _groups(results, feature, by, baseline)
    st = _Stats(g.x, g.k, quantiles)
    labels = st.sorted_labels(g.codes)
    out = g.table.copy()
    _check_conventions(conventions)
    exact = _exact_moments(g.x, g.codes, g.k, saged=conventions == "saged")
    for name in STATISTICS:
        out[name] = exact[name] if name in exact else st.of_groups(name, labels)
    return out


def _check_conventions(conventions: str) -> None:
    if conventions not in CONVENTIONS:
        raise AnalysisError(f"Unknown conventions {conventions!r}: use one of "
                            f"{', '.join(CONVENTIONS)}.")


def _exact_moments(x: np.ndarray, codes: np.ndarray, k: int, *, saged: bool = False
                   ) -> dict[str, np.ndarray]:
    """Moment statistics per group in two passes (powers of x - the group's own mean),
    accurate even when groups sit far apart relative to their spread; ``saged``: the
    biased (population) versions, as numpy's and scipy's defaults."""
    n = np.bincount(codes, minlength=k).astype(float)
    mean = np.bincount(codes, weights=x, minlength=k) / n
    m2, m3, m4 = (np.bincount(codes, weights=dp, minlength=k) / n
                  for dp in _centred_powers(x, codes, mean))
    flat = m2 <= 1e-20 * (mean ** 2 + m2)  # a constant group, up to rounding
    with np.errstate(divide="ignore", invalid="ignore"):
        var = np.where(n > 1, m2 * n / (n - 1), np.nan)
        g1 = m3 / m2 ** 1.5 * np.sqrt(n * (n - 1)) / (n - 2)
        g2 = ((n + 1) * (m4 / m2 ** 2 - 3) + 6) * (n - 1) / ((n - 2) * (n - 3))
        if saged:
            return {MEAN: mean, VARIANCE: m2, STD: np.sqrt(m2),
                    SKEWNESS: np.where(~flat, m3 / m2 ** 1.5, np.nan),
                    KURTOSIS: np.where(~flat, m4 / m2 ** 2 - 3, np.nan)}
    return {MEAN: mean, VARIANCE: var, STD: np.sqrt(var),
            SKEWNESS: np.where((n > 2) & ~flat, g1, np.nan),
            KURTOSIS: np.where((n > 3) & ~flat, g2, np.nan)}


def _centred_powers(x: np.ndarray, codes: np.ndarray, mean: np.ndarray
                    ) -> Iterator[np.ndarray]:
    """``d ** 2``, ``d ** 3``, ``d ** 4`` per row, ``d = x - mean[codes]``. For small
    integers (:func:`analysis.values.small_integers`) each power is computed once per
    (group, value) pair and gathered: the same numbers (the same subtraction and ``pow`` of the same
    doubles) without ``pow`` per row (~70 ms per million rows for a cube)."""
    small = small_integers(x)
    width = 0 if small is None else int(small.max()) + 1
    if small is None or len(mean) * width > max(len(x) // 4, 1):
        d = x - mean[codes]
        yield from (d ** p for p in (2, 3, 4))
        return
    lo = float(x.min())
    pair = codes * width + small
    d = (lo + np.arange(width, dtype=float))[None, :] - mean[:, None]  # (k, values)
    for p in (2, 3, 4):
        yield (d ** p).ravel()[pair]


# --- selection rates and the impact ratio ------------------------------------------------
def standard_value(x: np.ndarray, *, standard: Standard = "mean", quantile: float = 0.5,
                   value: float | None = None) -> float:
    """The standard a value is compared with: mean, median or a quantile of ``x``, or a
    fixed ``value``."""
    if standard not in STANDARDS:
        raise AnalysisError(f"Unknown standard {standard!r}: use one of {', '.join(STANDARDS)}.")
    if standard == "value":
        if value is None or not np.isfinite(float(value)):
            raise AnalysisError("The standard 'value' needs a number to compare with.")
        return float(value)
    if standard == "mean":
        return float(np.mean(x))
    if standard == "median":
        return float(np.median(x))
    if not 0 <= float(quantile) <= 1:
        raise AnalysisError(f"The quantile must be between 0 and 1, got {quantile}.")
    return float(np.quantile(x, float(quantile)))


def _selected(x: np.ndarray, std: float, direction: str, tolerance: float | None,
              comparison: str = "inclusive") -> tuple[np.ndarray, str]:
    """The selected rows and the rule in words (e.g. ``"x >= standard"``)."""
    if direction not in DIRECTIONS:
        raise AnalysisError(f"Unknown direction {direction!r}: use one of "
                            f"{', '.join(DIRECTIONS)}.")
    if comparison not in COMPARISONS:
        raise AnalysisError(f"Unknown comparison {comparison!r}: use one of "
                            f"{', '.join(COMPARISONS)}.")
    strict = comparison == "strict"
    if direction == "above":
        return (x > std, "x > standard") if strict else (x >= std, "x >= standard")
    if direction == "below":
        return (x < std, "x < standard") if strict else (x <= std, "x <= standard")
    if tolerance is None or not float(tolerance) >= 0:
        raise AnalysisError("Selection 'within' needs a tolerance >= 0 around the standard.")
    return np.abs(x - std) <= float(tolerance), f"|x - standard| <= {float(tolerance):g}"


def selection_rates(
    results: pd.DataFrame | Grouping,
    feature: str,
    by: str | Sequence[str],
    *,
    baseline: str | None = None,
    standard: Standard = "mean",
    quantile: float = 0.5,
    value: float | None = None,
    direction: Direction = "above",
    tolerance: float | None = None,
    comparison: Comparison = "inclusive",
) -> pd.DataFrame:
    """Selection rate per group, impact ratio and the four-fifths verdict.

    A row is *selected* when its (calibrated) feature is at or above the standard
    (``direction="above"``: ``x >= standard``, SAGED's default), at or below it
    (``"below"``: ``x <= standard``), or within ``tolerance`` of it (``"within"``:
    ``|x - standard| <= tolerance``). ``comparison="strict"`` makes above and below
    strict (``x > standard``, ``x < standard``). The standard is computed over all
    analysed rows: their mean (default), median or ``quantile``, or a fixed ``value``.
    ``SR_g`` = selected rows of g / rows of g. The four-fifths rule reads SR as a rate of
    favourable outcomes: select in the favourable direction (``"below"`` for a harmful
    feature such as toxicity or a deviation; see :func:`default_direction`).

    Returns
    -------
    pandas.DataFrame
        One row per observed group: one column per factor, ``group``, ``n``,
        ``n_selected``, ``selection_rate``, ``standard`` (the same in every row),
        ``selection_rule`` (e.g. ``"x >= standard"``), ``impact_ratio``
        (``SR_g / max_h SR_h``; NaN when no group has a selected row) and
        ``passes_four_fifths`` (impact ratio >= 0.8). The overall impact ratio of
        ``methods.md`` s. 5 is the smallest ``impact_ratio``:
        ``min_g SR_g / max_g SR_g``.
    """
    g = _groups(results, feature, by, baseline)
    std = standard_value(g.x, standard=standard, quantile=quantile, value=value)
    chosen, rule = _selected(g.x, std, direction, tolerance, comparison)
    out = g.table.copy()
    out[N_SELECTED] = np.bincount(g.codes, weights=chosen, minlength=g.k).astype(np.int64)
    out[SELECTION_RATE] = out[N_SELECTED] / out[N]
    out[STANDARD] = std
    out[SELECTION_RULE] = rule
    top = float(out[SELECTION_RATE].max())
    out[IMPACT_RATIO] = out[SELECTION_RATE] / top if top > 0 else np.nan
    out[PASSES_FOUR_FIFTHS] = out[IMPACT_RATIO] >= FOUR_FIFTHS
    return out


# --- Dixon's Q ------------------------------------------------------------------------------
def dixon_variant(n: int) -> DixonVariant | None:
    """The ratio Dixon recommends for ``n`` values (r10 3-7, r11 8-10, r21 11-13, r22 14-25),
    or None outside 3..25."""
    for variant, (lo, hi) in DIXON_RANGES.items():
        if lo <= n <= hi:
            return variant  # type: ignore[return-value]
    return None


def dixon_critical(n: int, alpha: float = 0.05, variant: DixonVariant | None = None
                   ) -> float | None:
    """Two-tailed critical value of a Dixon ratio, or None where the table has no entry.

    ``alpha`` is one of 0.10, 0.05, 0.01. ``variant`` defaults to :func:`dixon_variant`.
    Tabulated (exact, :mod:`analysis.dixon`): every ratio from its smallest n (r10 3, r11
    4, r21 5, r22 6) to 25.
    """
    alpha = _dixon_alpha(alpha)
    variant = variant or dixon_variant(n)
    if variant is None:
        return None
    if variant not in DIXON_VARIANTS:
        raise AnalysisError(f"Unknown Dixon ratio {variant!r}: use one of "
                            f"{', '.join(DIXON_VARIANTS)}.")
    row = DIXON_CRITICAL[variant].get(int(n))
    return None if row is None else row[DIXON_ALPHAS.index(alpha)]


def _dixon_alpha(alpha: float) -> float:
    for a in DIXON_ALPHAS:
        if math.isclose(float(alpha), a):
            return a
    raise AnalysisError(f"Dixon's Q test has critical values for alpha "
                        f"{', '.join(f'{a:g}' for a in DIXON_ALPHAS)} only, got {alpha:g}.")


def _dixon_ratios(xs: np.ndarray, variant: str) -> tuple[float, float, float, float]:
    """Low-end and high-end ratio of sorted ``xs`` with their gaps and denominators."""
    n = len(xs)
    lo_gap_i, lo_den_i = {"r10": (1, n - 1), "r11": (1, n - 2), "r21": (2, n - 2),
                          "r22": (2, n - 3)}[variant]
    lo_gap = xs[lo_gap_i] - xs[0]
    lo_den = xs[lo_den_i] - xs[0]
    hi_gap = xs[-1] - xs[n - 1 - lo_gap_i]
    hi_den = xs[-1] - xs[n - 1 - lo_den_i]
    return lo_gap, lo_den, hi_gap, hi_den


@dataclass(frozen=True)
class DixonResult:
    """Outcome of :func:`dixon_q_test`.

    Attributes
    ----------
    n
        Number of values.
    variant
        Ratio used (r10, r11, r21, r22) or None when n is outside 3..25.
    statistic
        The larger of the low-end and high-end ratio (NaN when undefined).
    suspect, suspect_value, suspect_end
        Label (or position), value and end ("low"/"high") of the suspected outlier.
    alpha, critical
        Significance level and two-tailed critical value (None outside the table).
    significant
        ``statistic > critical``; None when there is no critical value.
    source
        Where the critical value comes from.
    note
        A sentence for the analyst.
    """

    n: int
    variant: str | None
    statistic: float
    suspect: str | None
    suspect_value: float
    suspect_end: str | None
    alpha: float
    critical: float | None
    significant: bool | None
    source: str
    note: str

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (for JSON)."""
        return dict(self.__dict__)


def dixon_q_test(values: Sequence[float] | np.ndarray | pd.Series, *, alpha: float = 0.05,
                 variant: DixonVariant | None = None,
                 labels: Sequence[str] | None = None) -> DixonResult:
    """Dixon's Q test for one outlying value among ``values`` (two-sided).

    With the values sorted, ``x(1) <= ... <= x(n)``, the low-end ratios are
    ``r10 = (x(2) - x(1)) / (x(n) - x(1))``, ``r11 = (x(2) - x(1)) / (x(n-1) - x(1))``,
    ``r21 = (x(3) - x(1)) / (x(n-1) - x(1))``, ``r22 = (x(3) - x(1)) / (x(n-2) - x(1))``
    and the high-end ones mirror them. The statistic is the larger of the two ends; the
    value at that end is the suspect. By default the ratio follows Dixon's
    recommendation for n (r10 for 3-7, r11 8-10, r21 11-13, r22 14-25); the sub-range
    ratios skip a possible second outlier at the other end (r11, r21, r22) or next to the
    suspect (r21, r22). ``methods.md`` s. 5; critical values and their sources in
    ``docs/disparity.md``.

    Parameters
    ----------
    values
        The values (e.g. one summary statistic per group); a Series' index gives labels.
    alpha
        0.10, 0.05 or 0.01 (two-tailed).
    variant
        Force a ratio; it must be tabulated for n.
    labels
        Names of the values (default: the Series index, else positions).

    Returns
    -------
    DixonResult
        With ``critical = None`` and a note when n is outside the tables (fewer than 3
        or more than 25 values) or the ratio is undefined (all values equal).
    """
    alpha = _dixon_alpha(alpha)
    x, labels = _values_and_labels(values, labels, what="Dixon's Q test: as")
    if np.isnan(x).any():
        raise AnalysisError("Dixon's Q test got a missing value; leave it out first.")
    n = len(x)
    if variant is not None and variant not in DIXON_VARIANTS:
        raise AnalysisError(f"Unknown Dixon ratio {variant!r}: use one of "
                            f"{', '.join(DIXON_VARIANTS)}.")
    chosen = variant or dixon_variant(n)
    why = _dixon_not_applicable(n, chosen)
    if why:
        return DixonResult(n, chosen, math.nan, None, math.nan, None, alpha, None, None, "",
                           f"Dixon's Q test not applicable: {why}.")
    order = np.argsort(x, kind="stable")
    xs = x[order]
    lo_gap, lo_den, hi_gap, hi_den = _dixon_ratios(xs, chosen)
    if lo_den == 0 and hi_den == 0:
        return DixonResult(n, chosen, math.nan, None, math.nan, None, alpha, None, None, "",
                           "Dixon's Q test undefined: the values are (nearly all) equal.")
    lo = lo_gap / lo_den if lo_den > 0 else 0.0
    hi = hi_gap / hi_den if hi_den > 0 else 0.0
    end = "high" if hi > lo else "low"
    pos = int(order[-1] if end == "high" else order[0])
    q = float(max(lo, hi))
    critical = dixon_critical(n, alpha, chosen)
    if critical is None:
        return DixonResult(n, chosen, q, labels[pos], float(x[pos]), end, alpha, None, None,
                           "", f"{chosen} has no tabulated critical value for n = {n}.")
    significant = bool(q > critical)
    verdict = ("an outlier" if significant else "not an outlier")
    note = (f"Q ({chosen}) = {q:.3f} vs critical {critical:.3f} (n = {n}, alpha = "
            f"{alpha:g}, two-tailed): {labels[pos]} is {verdict}.")
    return DixonResult(n, chosen, q, labels[pos], float(x[pos]), end, alpha, critical,
                       significant, DIXON_SOURCE[chosen], note)


def _dixon_not_applicable(n: int, chosen: str | None) -> str:
    """Why Dixon's ratio ``chosen`` cannot be read for ``n`` values ("" when it can)."""
    minimum = {"r10": 3, "r11": 4, "r21": 5, "r22": 6}
    if chosen is not None and n >= minimum[chosen]:
        return ""
    return ("fewer than 3 values" if n < 3 else
            f"{n} values: the tables stop at 25 (Dixon's ratios are meant for small "
            "samples; use the max Z-score)" if n > 25 else f"too few values for {chosen}")


# --- disparity across groups -----------------------------------------------------------------
def disparity_metrics(statistics: pd.Series | Sequence[float], *,
                      labels: Sequence[str] | None = None, alpha: float = 0.05,
                      quantity: str = "statistic",
                      conventions: Conventions = "workbench") -> pd.DataFrame:
    """Disparity of one value per group (``methods.md`` s. 5).

    Parameters
    ----------
    statistics
        One value per group (a Series indexed by group label, or values plus ``labels``).
        Missing values are left out (and named in the notes).
    alpha
        Significance level of Dixon's Q test (0.10, 0.05, 0.01).
    quantity
        What the values are (e.g. ``"mean"`` or ``"selection_rate"``), copied to the
        output so several tables can be stacked.
    conventions
        ``"saged"``: ``max_z`` is the largest *signed* z-score of ``scipy.stats.zscore``
        (ddof 0; at most sqrt(k - 1)) and ``min_max_ratio`` is min / max whenever max != 0,
        as the SAGED library's ``statistics_disparity``; ``std`` stays ddof 1 (pandas'
        ``std``, as SAGED's). Dixon's Q is ours in both (SAGED's own r10 ratio is always 0).

    Returns
    -------
    pandas.DataFrame
        One row per metric, in this order: ``min``, ``max`` (with the group),
        ``min_max_ratio`` (min / max; NaN unless every value is > 0), ``range``
        (max - min), ``mean`` and ``std`` (ddof=1) of the values, ``max_z`` (largest
        ``|s_g - mean| / std``, with its group; at most ``(k - 1) / sqrt(k)``), and
        ``dixon_q`` (the Q statistic, the suspect group, and the verdict in the note).
        Columns: ``quantity``, ``metric``, ``value``, ``group``, ``note``.
    """
    values, labels = _values_and_labels(statistics, labels)
    known = ~np.isnan(values)
    dropped = [lab for lab, k in zip(labels, known, strict=True) if not k]
    v = values[known]
    lab = [lab for lab, k in zip(labels, known, strict=True) if k]
    _check_conventions(conventions)
    saged = conventions == "saged"
    if len(v) == 0:
        return pd.DataFrame([_metric(quantity, m, math.nan, note="no group has a value")
                             for m in ("min", "max", "min_max_ratio", "range", "mean", "std",
                                       "max_z", "dixon_q")])
    dq = dixon_q_test(v, alpha=alpha, labels=lab)
    rows = [*(_metric(quantity, *r) for r in _extremes(v, lab, saged)),
            *(_metric(quantity, *r) for r in _spread(v, lab, saged)),
            _metric(quantity, "dixon_q", dq.statistic, dq.suspect, dq.note)]
    if dropped:
        rows[0][NOTE] = f"left out (no value): {', '.join(dropped)}"
    return pd.DataFrame(rows)


def _values_and_labels(statistics: pd.Series | Sequence[float] | np.ndarray,
                       labels: Sequence[str] | None, *, what: str = "As"
                       ) -> tuple[np.ndarray, list[str]]:
    """The values as floats and a label per value (the Series index, else 0, 1, ...);
    ``what`` starts the message when the counts differ."""
    if isinstance(statistics, pd.Series):
        labels = [str(i) for i in statistics.index] if labels is None else list(labels)
        values = statistics.to_numpy(dtype=float)
    else:
        values = np.asarray(statistics, dtype=float)
        labels = [str(i) for i in range(len(values))] if labels is None else list(labels)
    if len(labels) != len(values):
        raise AnalysisError(f"{what} many labels as values are needed.")
    return values, labels


def _metric(quantity: str, metric: str, value: float, group: str | None = None,
            note: str = "") -> dict[str, Any]:
    """One row of :func:`disparity_metrics`."""
    return {QUANTITY: quantity, METRIC: metric, VALUE: float(value), GROUP: group, NOTE: note}


_Row = tuple[str, float, str | None, str]


def _extremes(v: np.ndarray, lab: list[str], saged: bool) -> list[_Row]:
    """``min``, ``max`` (with their groups), ``min_max_ratio`` and ``range``."""
    i_min, i_max = int(np.argmin(v)), int(np.argmax(v))
    if (v > 0).all() or (saged and v[i_max] != 0):
        ratio = (v[i_min] / v[i_max], "" if (v > 0).all()
                 else "SAGED's min / max with values <= 0")
    else:
        ratio = (math.nan, "defined only when every value is positive (here some are <= 0); "
                           "read the range instead")
    return [("min", v[i_min], lab[i_min], ""), ("max", v[i_max], lab[i_max], ""),
            ("min_max_ratio", ratio[0], None, ratio[1]), ("range", v[i_max] - v[i_min], None, "")]


def _spread(v: np.ndarray, lab: list[str], saged: bool) -> list[_Row]:
    """``mean``, ``std`` (ddof 1) and ``max_z`` (ours, or SAGED's signed ddof-0 z)."""
    k = len(v)
    sd = float(np.std(v, ddof=1)) if k > 1 else math.nan
    rows: list[_Row] = [("mean", float(np.mean(v)), None, ""),
                        ("std", sd, None, "" if k > 1 else "needs two groups")]
    if saged and k > 1 and float(np.std(v)) > 0:
        z = (v - v.mean()) / float(np.std(v))
        iz = int(np.argmax(z))
        rows.append(("max_z", z[iz], lab[iz], f"SAGED: largest signed z, ddof 0; at most "
                                              f"sqrt(k-1) = {math.sqrt(k - 1):.3f} for k = {k}"))
    elif k > 1 and sd > 0 and not saged:
        z = np.abs(v - v.mean()) / sd
        iz = int(np.argmax(z))
        rows.append(("max_z", z[iz], lab[iz], f"at most (k-1)/sqrt(k) = "
                                              f"{(k - 1) / math.sqrt(k):.3f} for k = {k} groups"))
    else:
        rows.append(("max_z", math.nan, None, "needs two groups with different values"))
    return rows


# --- permutation tests ---------------------------------------------------------------------
def permutation_test(
    results: pd.DataFrame | Grouping,
    feature: str,
    by: str | Sequence[str],
    *,
    baseline: str | None = None,
    statistic: Statistic = "mean",
    compare: Compare = "rest",
    alternative: Alternative = "two-sided",
    n_resamples: int = DEFAULT_PERMUTATIONS,
    seed: int | None = _DEFAULT.seed,
    quantiles: tuple[float, float] = _DEFAULT.quantiles,
    adaptive: bool = _DEFAULT.adaptive,
    alpha: float = _DEFAULT.alpha,
    adjust: str = _DEFAULT.adjust,
    return_path: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, str]:
    """Permutation p-value of each group's statistic (``methods.md`` s. 5).

    The test statistic of group g is ``T_g = s(g) - s(rest)`` (``compare="rest"``: the
    rows outside g) or ``s(g) - s(all rows)`` (``compare="overall"``). Under the null
    hypothesis that group labels are exchangeable, the labels are shuffled over the rows
    ``n_resamples`` times (``rng.permutation`` of the group codes of the rows with a
    value, in row order; one shuffle serves every group) and
    ``p = (b + 1) / (m + 1)``, b the number of shuffles with ``|T*| >= |T|``
    (``"greater"``: ``T* >= T``; ``"less"``: ``T* <= T``), m the shuffles used. The +1
    counts the observed labelling, so p is never 0 and the test is exact at level alpha.

    How the shuffles are drawn (``return_path=True`` returns which, ``"table"`` or
    ``"rows"``, second): a feature
    with few distinct values (D values over k groups, ``D * k <= TABLE_CELLS`` and
    ``D * k * TABLE_ROWS_PER_CELL <= rows``: 0/1 answers, judge scores, small counts)
    takes the **table path**. Every statistic here depends on a group's values only
    through how many of its rows hold each value, so a uniform shuffle of the labels is,
    for the test, a random k x D table of counts with the value counts and the group sizes
    as margins; it is drawn group by group as multivariate hypergeometric draws (a chain
    of ``rng.hypergeometric``), O(k D) per shuffle instead of O(rows). The statistics of a
    table are those of any labelling that gives it (moments from power sums of the
    values times their counts, quantiles from cumulative counts, the same interpolation),
    so T* has exactly the permutation distribution of the row path: the test is the same
    test, its p-values another Monte Carlo draw of it (another random stream; the same seed
    still gives the same p-values). Otherwise (a continuous feature) the **row path**
    shuffles the group codes of the rows. The observed statistics come from the rows on
    both paths.

    With ``adaptive=True`` (the default, as in :func:`disparity_report`; False: exactly
    ``n_resamples`` shuffles per group), ``n_resamples`` is a maximum: every
    :data:`PERMUTATION_BATCH` shuffles (from m = 99 on), a group whose Clopper-Pearson
    interval (level :data:`STOP_CONFIDENCE`) for its p-value, from b exceedances in m
    shuffles, lies entirely above or entirely below ``alpha`` stops (its p uses its own
    m); the others go on. A clearly significant or clearly null group thus needs
    199 or 99 shuffles instead of 999, and only groups near alpha use them all. The
    shuffles are the same as without stopping (same seed, same sequence), so a group's
    p-value is the fixed-m p-value at its stopping point.

    Parameters
    ----------
    statistic
        One of :data:`STATISTICS` (see :func:`group_summary` for definitions).
    seed
        Seed of the ``numpy.random.Generator``: the same seed gives the same p-values.
    adaptive, alpha
        Sequential stopping (above) and the level it decides against (the unadjusted p).
    adjust
        The multiple-testing adjustment of ``p_adjusted`` over the groups (a method of
        :mod:`analysis.multiple_testing`; default ``"bh"``, Benjamini-Hochberg).

    Returns
    -------
    pandas.DataFrame
        One row per observed group: one column per factor, ``group``, ``n``,
        ``observed`` (s(g)), ``compared_with`` (s(rest) or s(all)), ``difference`` (T),
        ``p_value``, ``p_adjusted`` (by ``adjust`` over the groups),
        ``n_permutations`` (shuffles used for this group) and ``stopped_early``. Groups
        whose statistic is undefined (e.g. variance of one row) get NaN.
    """
    from analysis.multiple_testing import check_method

    check_method(adjust)
    m = _check_permutation_options(statistic, compare, alternative, n_resamples,
                                   adaptive, alpha)
    quantiles = _check_quantiles(quantiles)
    g = _groups(results, feature, by, baseline)
    if g.k < 2:
        raise AnalysisError("A permutation test needs at least two groups with values.")
    st = _Stats(g.x, g.k, quantiles)
    st.counts = np.bincount(g.codes, minlength=g.k).astype(float)
    own_and_other = _own_and_other(st, statistic, g.k, rest=compare == "rest")
    labels = st.sorted_labels(g.codes)
    observed, other = own_and_other(labels)
    t_obs = observed - other
    table = _ValueTable.of(st, labels)
    if table is not None:  # few values: draw the groups x values table (the same
        # permutation distribution); T* is compared with T of the observed table, computed
        # the same way (ties stay ties), defined exactly where the rows' T is
        t_ref = table.difference(st, statistic, table.observed[None], rest=compare == "rest")[0]
        if np.array_equal(np.isnan(t_ref), np.isnan(t_obs)):
            shuffles = table.shuffles(st, statistic, rest=compare == "rest")
        else:
            table = None
    if table is None:  # many distinct values: shuffle the rows
        shuffles = _row_shuffles(g.codes, st, own_and_other)
        t_ref = t_obs
    exceed, used = _shuffle_counts(shuffles, t_ref, m, alternative, seed,
                                   alpha if adaptive else None)
    used = np.where(np.isnan(t_obs), m, used)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = (exceed + 1) / (used + 1)
    p = np.where(np.isnan(t_obs), np.nan, p)
    from analysis.multiple_testing import adjust_p

    out = g.table.copy()
    out[OBSERVED] = observed
    out[COMPARED_WITH] = other
    out[DIFFERENCE] = t_obs
    out[P_VALUE] = p
    out[P_ADJUSTED] = adjust_p(p, adjust)  # over the groups; default Benjamini-Hochberg
    out[N_PERMUTATIONS] = used
    out[STOPPED_EARLY] = used < m
    path = "rows" if table is None else "table"
    return (out, path) if return_path else out


def _check_permutation_options(statistic: str, compare: str, alternative: str,
                               n_permutations: int, adaptive: bool, alpha: float) -> int:
    """Refuse an unknown statistic, comparison or alternative; return the shuffle count."""
    _check_statistic(statistic)
    if compare not in COMPARES:
        raise AnalysisError(f"Unknown comparison {compare!r}: use one of {', '.join(COMPARES)}.")
    if alternative not in ALTERNATIVES:
        raise AnalysisError(f"Unknown alternative {alternative!r}: use one of "
                            f"{', '.join(ALTERNATIVES)}.")
    if int(n_permutations) < 1:
        raise AnalysisError("At least one permutation is needed.")
    if adaptive and not 0 < float(alpha) < 1:
        raise AnalysisError(f"alpha must be between 0 and 1, got {alpha}.")
    return int(n_permutations)


def _own_and_other(st: _Stats, statistic: str, k: int, *, rest: bool
                   ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """``labels -> (s(g), s(rest of g))`` per group, or ``(s(g), s(all rows))``."""
    def own_and_other(lab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if rest:
            return st.of_groups(statistic, lab, rest=True)
        return st.of_groups(statistic, lab), np.full(k, st.overall(statistic))

    return own_and_other


def _as_extreme(t: np.ndarray, t_obs: np.ndarray, alternative: str) -> np.ndarray:
    """Whether each shuffled ``t`` is at least as extreme as the observed one (ties in
    float arithmetic, within 1e-12 relative, count as ties)."""
    tol = 1e-12 * np.maximum(1.0, np.abs(t_obs))
    with np.errstate(invalid="ignore"):
        if alternative == "two-sided":
            return np.abs(t) >= np.abs(t_obs) - tol
        if alternative == "greater":
            return t >= t_obs - tol
        return t <= t_obs + tol


#: ``T*`` of ``b`` shuffles drawn from ``rng``, one row per shuffle: ``(b, k)``
_Shuffles = Callable[[np.random.Generator, int], np.ndarray]


def _row_shuffles(codes: np.ndarray, st: _Stats,
                  own_and_other: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
                  ) -> _Shuffles:
    """The row path: each shuffle is ``rng.permutation`` of the rows' group codes."""
    def draw(rng: np.random.Generator, b: int) -> np.ndarray:
        out = np.empty((b, st.k))
        for i in range(b):
            own, oth = own_and_other(st.sorted_labels(rng.permutation(codes)))
            out[i] = own - oth
        return out

    return draw


def _shuffle_counts(shuffles: _Shuffles, t_obs: np.ndarray, m: int, alternative: str,
                    seed: int | None, stop_alpha: float | None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Exceedances and shuffles used per group over ``m`` shuffles; with ``stop_alpha``,
    a group stops once its p-value is decided against it (checked at m = 99, 199, ...:
    the shuffles come in batches that end there, so the draws up to a check point do not
    depend on ``m``)."""
    rng = np.random.default_rng(seed)
    exceed = np.zeros(len(t_obs), dtype=np.int64)
    used = np.zeros(len(t_obs), dtype=np.int64)
    live = ~np.isnan(t_obs)
    done = 0
    while done < m and live.any():
        b = min(PERMUTATION_BATCH - (done + 1) % PERMUTATION_BATCH, m - done)
        extreme = _as_extreme(shuffles(rng, b), t_obs, alternative)
        exceed += extreme.sum(axis=0) * live
        used += b * live
        done += b
        if stop_alpha is not None and (done + 1) % PERMUTATION_BATCH == 0:
            live &= ~_decided(exceed, used, float(stop_alpha))
    return exceed, used


def _decided(exceed: np.ndarray, used: np.ndarray, alpha: float) -> np.ndarray:
    """Whether the Clopper-Pearson interval of each p (b of m) excludes ``alpha``."""
    from scipy import stats

    a = (1 - STOP_CONFIDENCE) / 2
    b, m = exceed.astype(float), used.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(b > 0, stats.beta.ppf(a, b, m - b + 1), 0.0)
        upper = np.where(b < m, stats.beta.ppf(1 - a, b + 1, m - b), 1.0)
    return (m > 0) & ((upper < alpha) | (lower > alpha))


# --- everything at once ----------------------------------------------------------------------
@dataclass(frozen=True)
class DisparityReport:
    """Everything the Disparity page and ``python -m analysis disparity`` show.

    Attributes
    ----------
    summary
        :func:`group_summary`.
    selection
        :func:`selection_rates`.
    metrics
        :func:`disparity_metrics` of the chosen statistic and of the selection rates,
        stacked (column ``quantity`` says which).
    dixon
        Dixon's Q test of the chosen statistic across groups.
    permutation
        :func:`permutation_test` of the chosen statistic (None when not asked for).
    settings
        The options used (feature, baseline, by, statistic, standard ...).
    """

    summary: pd.DataFrame
    selection: pd.DataFrame
    metrics: pd.DataFrame
    dixon: DixonResult
    permutation: pd.DataFrame | None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def impact_ratio(self) -> float:
        """``min_g SR_g / max_g SR_g`` (NaN when no row is selected)."""
        return float(self.selection[IMPACT_RATIO].min())

    @property
    def passes_four_fifths(self) -> bool | None:
        """Whether the impact ratio is at least 0.8 (None when undefined)."""
        ir = self.impact_ratio
        return None if math.isnan(ir) else bool(ir >= FOUR_FIFTHS)


def disparity_report(
    results: pd.DataFrame,
    feature: str,
    by: str | Sequence[str],
    *,
    baseline: str | None = _DEFAULT.baseline,
    statistic: Statistic = _DEFAULT.statistic,
    quantiles: tuple[float, float] = _DEFAULT.quantiles,
    standard: Standard = _DEFAULT.standard,
    quantile: float = _DEFAULT.quantile,
    value: float | None = _DEFAULT.value,
    direction: Direction | None = _DEFAULT.direction,
    tolerance: float | None = _DEFAULT.tolerance,
    comparison: Comparison = _DEFAULT.comparison,
    polarity: Polarity | None = None,
    alpha: float = _DEFAULT.alpha,
    n_resamples: int = DEFAULT_PERMUTATIONS,
    adaptive: bool = _DEFAULT.adaptive,
    compare: Compare = _DEFAULT.compare,
    seed: int | None = _DEFAULT.seed,
    conventions: Conventions = _DEFAULT.conventions,
    adjust: str = _DEFAULT.adjust,
) -> DisparityReport:
    """Summary, selection rates, disparity metrics, Dixon's Q and permutation tests.

    ``polarity`` says whether higher values of the feature are ``"harmful"`` (toxicity,
    a deviation) or ``"favourable"`` (sentiment, accuracy); ``None`` when unknown. The
    selection direction defaults to the favourable side (:func:`default_direction`),
    so the four-fifths verdict reads a rate of favourable outcomes. Permutations are
    adaptive by default (``n_resamples`` is then a maximum; see
    :func:`permutation_test`). ``n_resamples=0`` skips the permutation tests. The
    options are :class:`analysis.options.disparity.DisparityOptions` (``polarity`` None:
    unknown; the options' ``"design"`` is resolved by :func:`resolve_polarity`).
    ``conventions="saged"`` gives the summary and the disparity metrics as the SAGED
    library computes them (:func:`group_summary`, :func:`disparity_metrics`); the
    permutation tests keep the workbench definitions. See the functions this combines
    for every option.
    """
    _check_statistic(statistic)
    by = [by] if isinstance(by, str) else list(by)
    _check_quantiles(quantiles)  # before the rows are read, as group_summary checks them
    grouped = grouping(results, feature, by, baseline=baseline)  # read once, for both
    summary = group_summary(grouped, feature, by, baseline=baseline, quantiles=quantiles,
                            conventions=conventions)
    _check_two_groups(summary)
    direction = selection_direction(polarity, direction)
    selection = selection_rates(grouped, feature, by, baseline=baseline, standard=standard,
                                quantile=quantile, value=value, direction=direction,
                                tolerance=tolerance, comparison=comparison)
    report = report_of(summary, selection, feature=feature, by=by, baseline=baseline,
                       statistic=statistic, quantiles=quantiles, standard=standard,
                       quantile=quantile, value=value, direction=direction,
                       tolerance=tolerance, comparison=comparison, polarity=polarity,
                       alpha=alpha, conventions=conventions,
                       n_missing=grouped.n_missing)
    perm = None
    if n_resamples:
        perm = permutation_test(results, feature, by, baseline=baseline, statistic=statistic,
                                compare=compare, n_resamples=n_resamples, seed=seed,
                                quantiles=quantiles, adaptive=adaptive, alpha=alpha,
                                adjust=adjust)
    return with_permutation(report, perm, n_resamples=n_resamples, adaptive=adaptive,
                            compare=compare, seed=seed)


def _check_two_groups(summary: pd.DataFrame) -> None:
    if len(summary) < 2:
        raise AnalysisError(f"Only one group ({summary[GROUP].iloc[0]}) has values: choose "
                            "factors with at least two observed values.")


def selection_direction(polarity: Polarity | None, direction: Direction | None) -> Direction:
    """The selection direction :func:`disparity_report` uses: ``direction``, else the
    favourable side of ``polarity`` (:func:`default_direction`); refuses an unknown
    polarity."""
    if polarity is not None and polarity not in ("harmful", "favourable"):
        raise AnalysisError(f"Unknown polarity {polarity!r}: use harmful or favourable.")
    return direction or default_direction(polarity)


def report_of(summary: pd.DataFrame, selection: pd.DataFrame, *, feature: str,
              by: str | Sequence[str], baseline: str | None, statistic: Statistic,
              quantiles: tuple[float, float], standard: Standard, quantile: float,
              value: float | None, direction: Direction, tolerance: float | None,
              comparison: Comparison, polarity: Polarity | None, alpha: float,
              conventions: Conventions, n_missing: int = 0) -> DisparityReport:
    """The report without permutation tests, from its two row-reading parts.

    ``summary`` is :func:`group_summary` (feature, by, baseline, quantiles, conventions)
    and ``selection`` :func:`selection_rates` (the same rows, feature, by and baseline;
    ``direction`` as :func:`selection_direction` resolves it); the rest (disparity
    metrics and Dixon's Q of ``statistic`` across the groups, the settings) reads only
    these tables, so an app that caches the two parts apart pays for the rows only when
    their own options change. :func:`disparity_report` is
    ``with_permutation(report_of(...), permutation_test(...))``. ``n_missing``: the rows
    left out for a missing feature value (the :class:`Grouping`'s), for the settings.
    """
    _check_statistic(statistic)
    _check_two_groups(summary)
    by = [by] if isinstance(by, str) else list(by)
    stats_series = pd.Series(summary[statistic].to_numpy(), index=summary[GROUP])
    sr_series = pd.Series(selection[SELECTION_RATE].to_numpy(), index=selection[GROUP])
    metrics = pd.concat([
        disparity_metrics(stats_series, alpha=alpha, quantity=statistic,
                          conventions=conventions),
        disparity_metrics(sr_series, alpha=alpha, quantity=SELECTION_RATE,
                          conventions=conventions),
    ], ignore_index=True)
    dixon = dixon_q_test(stats_series.dropna(), alpha=alpha)
    settings = {"feature": feature, "baseline": baseline, "by": by, "statistic": statistic,
                "quantiles": list(quantiles), "standard": standard, "quantile": quantile,
                "value": value, "direction": direction, "tolerance": tolerance,
                "comparison": comparison, "selection_rule": selection[SELECTION_RULE].iloc[0],
                "polarity": polarity, "alpha": alpha,
                # JSON keys as before the options were written once
                "n_permutations": 0, "adaptive": False,
                "n_permutations_used": 0, "compare": "rest",
                "random_state": None, "conventions": conventions,
                "n_rows": int(summary[N].sum()),
                "n_missing": int(n_missing)}
    return DisparityReport(summary, selection, metrics, dixon, None, settings)


def with_permutation(report: DisparityReport, permutation: pd.DataFrame | None, *,
                     n_resamples: int, adaptive: bool, compare: Compare,
                     seed: int | None) -> DisparityReport:
    """``report`` with the :func:`permutation_test` table ``permutation`` (None: off)
    and the settings of the test (``n_permutations``, ``adaptive``,
    ``n_permutations_used``, ``compare``, ``random_state``).

    :func:`disparity_report` ends with it; an app that keeps the permutation test apart
    (it depends on fewer options than the rest and costs the most) asks for the report
    with ``n_resamples=0`` and adds the test run with the same options.
    """
    settings = {**report.settings, "n_permutations": int(n_resamples),
                "adaptive": bool(adaptive),
                "n_permutations_used": (int(permutation[N_PERMUTATIONS].max())
                                        if permutation is not None else 0),
                "compare": compare, "random_state": seed}
    return replace(report, permutation=permutation, settings=settings)


# --- choices and words for the app ---------------------------------------------------------
def default_direction(polarity: Polarity | None) -> Direction:
    """The favourable selection side: ``"below"`` for a harmful feature, else ``"above"``
    (SAGED's default, which reads higher values as favourable)."""
    return "below" if polarity == "harmful" else "above"


def resolve_polarity(options: _Options, design: Design | None, feature: str) -> _Options:
    """``options`` with ``polarity`` :data:`~analysis.options.disparity.POLARITY_FROM_DESIGN`
    replaced by the polarity the design declares for ``feature`` (None: unknown)."""
    from analysis.options.disparity import POLARITY_FROM_DESIGN

    if options.polarity != POLARITY_FROM_DESIGN:
        return options
    return options.replace(polarity=feature_polarity(design, feature))
