"""How far judges agree with each other, and a judge with itself (``docs/judges.md`` §12).

The inputs are judged files (:mod:`judges.judge`): either one file holding several judges'
columns (``<metric>@<judge name>``, written by ``python -m judges score --judge ... --judge
...``, :mod:`judges.ensemble`), or several judged files of the same rows, one judge each
(their ``<metric>`` columns; the judge's name is read from the ``judge`` column). Repeated
samples of one judge (``--samples K``) are read from ``<metric>_scores`` (a JSON list per
row, e.g. ``"[3, 4, 3]"``), suffixed ``@<judge name>`` in a multi-judge file.

Coefficients, per metric and stage, per metric over all stages, and pooled over every
metric (``metric == "all"``):

- **Krippendorff's alpha** (Krippendorff 2011, "Computing Krippendorff's alpha-reliability"),
  from the coincidence matrix of the *pairable* values: a unit (row) with fewer than two
  values is left out, so missing scores are handled as Krippendorff does.
  ``alpha = 1 - (n - 1) * sum_ck o_ck d_ck / sum_ck n_c n_k d_ck``; ordinal metric by
  default (``d_ck = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2``), interval (``(c - k)^2``) and
  nominal available.
- **ICC** (Shrout & Fleiss 1979) on the rows every rater scored (``n_complete``):
  ICC(1,1) one-way random, ICC(2,1) two-way random, absolute agreement, ICC(3,1) two-way
  mixed, consistency. Across judges all three are reported; across repeated samples of one
  judge the order of the samples means nothing (sample 1 is not a rater), so only ICC(1,1)
  is (ICC(2,1) and ICC(3,1) are NaN there).
- **Intervals**: alpha's is a percentile bootstrap (``n_resamples`` resamples of the rows,
  seeded): the rows are resampled whole, so the values of one row stay together (Hayes &
  Krippendorff 2007 bootstrap alpha's sampling distribution; we resample units rather than
  pairable values). The ICCs' are the classical F intervals (:func:`icc_f_intervals`,
  Shrout & Fleiss 1979, McGraw & Wong 1996 = pingouin's ``CI95``), which keep their
  coverage where the row bootstrap undercovered (95 % against 85-94 % at 44 rows, by
  simulation, ``docs/judges.md`` §12); they need no
  resampling, so they are there with ``n_resamples = 0`` too.

:func:`disagreements` lists the rows where the judges' scores span ``min_range`` (2) or more;
:func:`score_spread` gives the per-row standard deviations behind the page's histogram.
No Streamlit here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from analysis.judge_stats import columns as C
from analysis.judge_stats.agreement import ALL, high, icc_a_interval, low
from analysis.judge_stats.errors import JudgesError
from analysis.judge_stats.names import JUDGE_SEP, judge_names_in
from analysis.judge_stats.samples import parse_scores

__all__ = [
    "ACROSS", "ALPHA_ORDINAL", "ICC1", "ICC2", "ICC3", "JUDGES", "JUDGE_SEP", "Level",
    "N_COMPLETE", "N_PAIRABLE", "N_UNITS", "RANGE", "RATERS", "RELIABILITY_COLUMNS", "ROW",
    "ReliabilityData", "ReliabilityError", "SCORES_SUFFIX", "SD", "SD_SUFFIX", "SOURCE",
    "STATISTICS", "disagreements", "icc", "icc_f_intervals", "judge_name_of", "judge_names_in",
    "krippendorff_alpha", "load_reliability_data", "reliability", "reliability_data",
    "score_spread",
]


Level = Literal["nominal", "ordinal", "interval"]

#: Suffix of the repeated-sample score lists (``ics_scores``) and their SD (``ics_sd``).
SCORES_SUFFIX = C.SCORES_SUFFIX
SD_SUFFIX = C.SD_SUFFIX

# --- output columns --------------------------------------------------------------------
ACROSS = "across"
RATERS = "raters"
N_UNITS = "n_units"
N_PAIRABLE = "n_pairable"
N_COMPLETE = "n_complete"
ALPHA_ORDINAL = "alpha_ordinal"
ICC1, ICC2, ICC3 = "icc1_1", "icc2_1", "icc3_1"
STATISTICS: tuple[str, ...] = (ALPHA_ORDINAL, ICC2, ICC3, ICC1)
RELIABILITY_COLUMNS: tuple[str, ...] = (
    C.METRIC, C.STAGE, ACROSS, RATERS, N_UNITS, N_PAIRABLE, N_COMPLETE,
    *(c for s in STATISTICS for c in (s, low(s), high(s))),
)
#: ``across`` value of the rows comparing judges; samples rows say ``samples: <judge>``.
JUDGES = "judges"
ROW = "row"
RANGE = "range"
SD = "sd"
SOURCE = "source"


class ReliabilityError(JudgesError):
    """Files that cannot be compared (different rows, no judge columns...)."""


# --- Krippendorff's alpha ------------------------------------------------------------------
def _coincidences(values: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """Per-unit coincidence contributions, shape (units, V, V) (zero for unpairable units).

    ``values`` is units x raters with NaN for missing.
    """
    units = values.shape[0]
    v = len(domain)
    counts = np.zeros((units, v))
    finite = np.isfinite(values)
    idx = np.searchsorted(domain, np.where(finite, values, domain[0]))
    for r in range(values.shape[1]):
        np.add.at(counts, (np.arange(units)[finite[:, r]], idx[finite[:, r], r]), 1)
    m = counts.sum(1)
    pairable = m >= 2
    outer = counts[:, :, None] * counts[:, None, :]
    outer[:, np.arange(v), np.arange(v)] -= counts
    with np.errstate(invalid="ignore", divide="ignore"):
        contrib = np.where(pairable[:, None, None], outer / (m - 1)[:, None, None], 0.0)
    return contrib


def _delta(domain: np.ndarray, n_c: np.ndarray, level: Level) -> np.ndarray:
    """Squared difference ``d_ck`` of the metric; ``n_c`` may be a stack (B, V)."""
    if level == "nominal":
        d = 1.0 - np.eye(len(domain))
        return np.broadcast_to(d, (*n_c.shape[:-1], *d.shape))
    if level == "interval":
        d = (domain[:, None] - domain[None, :]) ** 2
        return np.broadcast_to(d, (*n_c.shape[:-1], *d.shape))
    if level == "ordinal":
        cum = np.cumsum(n_c, axis=-1)
        # sum_{g=c..k} n_g = cum[k] - cum[c] + n_c for c <= k; symmetric
        upper = cum[..., None, :] - cum[..., :, None] + n_c[..., :, None]
        order = np.arange(len(domain))
        sym = np.where(order[:, None] <= order[None, :], upper, np.swapaxes(upper, -1, -2))
        return (sym - (n_c[..., :, None] + n_c[..., None, :]) / 2) ** 2
    raise ValueError(f"level must be nominal, ordinal or interval, not {level!r}.")


def _alpha_from(o: np.ndarray, domain: np.ndarray, level: Level) -> np.ndarray:
    """Alpha of coincidence matrices ``o`` (..., V, V)."""
    n_c = o.sum(-1)
    n = n_c.sum(-1)
    d = _delta(domain, n_c, level)
    observed = (o * d).sum((-1, -2))
    expected = (n_c[..., :, None] * n_c[..., None, :] * d).sum((-1, -2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((expected > 0) & (n > 1), 1 - (n - 1) * observed / expected, np.nan)


def krippendorff_alpha(values: Sequence[Sequence[float]] | np.ndarray, *,
                       level: Level = "ordinal") -> float:
    """Krippendorff's alpha of a units x raters table (NaN = missing).

    Only pairable values count (units with at least two values); NaN when fewer than two
    pairable values or no expected disagreement (every value the same).
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 2:
        raise ValueError("values must be a units x raters table.")
    domain = np.unique(x[np.isfinite(x)])
    if len(domain) == 0:
        return math.nan
    o = _coincidences(x, domain).sum(0)
    return float(_alpha_from(o, domain, level))


# --- ICC -------------------------------------------------------------------------------------
def _icc_from_sums(w: np.ndarray, x: np.ndarray) -> dict[str, np.ndarray]:
    """ICC(1,1), (2,1), (3,1) of complete n x k tables given as row weights ``w`` (B, n) over
    the rows of ``x`` (a bootstrap resample is a count per row; the sample itself is ones).

    Mean squares of Shrout & Fleiss (1979) from weighted sums: BMS (targets), JMS (judges),
    WMS (within targets), EMS (residual).
    """
    k = x.shape[1]
    n = w.sum(1)
    cols = w @ x                                   # (B, k) column sums
    rows = x.sum(1)
    grand = cols.sum(1) / (n * k)
    ss_total = w @ (x ** 2).sum(1) - n * k * grand ** 2
    ss_rows = (w @ rows ** 2) / k - n * k * grand ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        ss_cols = n * ((cols / n[:, None] - grand[:, None]) ** 2).sum(1)
        bms = ss_rows / (n - 1)
        jms = ss_cols / (k - 1)
        wms = (ss_total - ss_rows) / (n * (k - 1))
        ems = (ss_total - ss_rows - ss_cols) / ((n - 1) * (k - 1))
        d1 = bms + (k - 1) * wms
        d2 = bms + (k - 1) * ems + k * (jms - ems) / n
        d3 = bms + (k - 1) * ems
        ok = n >= 2
        return {ICC1: np.where(ok & (d1 > 0), (bms - wms) / d1, np.nan),
                ICC2: np.where(ok & (d2 > 0), (bms - ems) / d2, np.nan),
                ICC3: np.where(ok & (d3 > 0), (bms - ems) / d3, np.nan)}


def _mean_squares(x: np.ndarray) -> tuple[float, float, float, float]:
    """BMS (targets), WMS (within targets), JMS (judges), EMS (residual) of a complete
    n x k table (Shrout & Fleiss 1979, Table 1)."""
    n, k = x.shape
    grand = x.mean()
    ss_total = float(((x - grand) ** 2).sum())
    ss_rows = float(k * ((x.mean(1) - grand) ** 2).sum())
    ss_cols = float(n * ((x.mean(0) - grand) ** 2).sum())
    return (ss_rows / (n - 1), (ss_total - ss_rows) / (n * (k - 1)), ss_cols / (k - 1),
            (ss_total - ss_rows - ss_cols) / ((n - 1) * (k - 1)))


def icc_f_intervals(values: Sequence[Sequence[float]] | np.ndarray, *,
                    confidence: float = 0.95) -> dict[str, tuple[float, float]]:
    """Classical F intervals of ICC(1,1), ICC(2,1) and ICC(3,1) (Shrout & Fleiss 1979;
    McGraw & Wong 1996, Table 7) of an n targets x k raters table; rows with a missing
    value are left out (listwise, as for :func:`icc`).

    ICC(1,1): ``F = BMS/WMS`` on (n-1, n(k-1)) df; ICC(3,1): ``F = BMS/EMS`` on
    (n-1, (n-1)(k-1)); ICC(2,1): Satterthwaite's approximate df ``v`` for the denominator.
    These are the ``CI95`` of pingouin's ``intraclass_corr`` (ICC(1,1), ICC(A,1), ICC(C,1))
    and the bounds of R psych's ``ICC`` (tested). Exact for ICC(1,1) and ICC(3,1) under the
    normal ANOVA model, approximate for ICC(2,1); see ``docs/judges.md`` §12 for their
    coverage by simulation against the row bootstrap's.

    Returns
    -------
    dict
        ``icc1_1``, ``icc2_1``, ``icc3_1`` -> ``(low, high)`` (NaN with fewer than 2
        complete rows or 2 raters, or a degenerate table: every score equal).
    """
    from scipy.stats import f as f_dist

    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x).all(1)] if x.ndim == 2 else np.empty((0, 0))
    nan = (math.nan, math.nan)
    out = {ICC1: nan, ICC2: nan, ICC3: nan}
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        return out
    n, k = x.shape
    bms, wms, jms, ems = _mean_squares(x)
    q = 1 - (1 - confidence) / 2

    def interval(ratio: float, df_error: int) -> tuple[float, float]:
        lo = ratio / f_dist.ppf(q, n - 1, df_error)
        hi = ratio * f_dist.ppf(q, df_error, n - 1)
        return (lo - 1) / (lo + k - 1), (hi - 1) / (hi + k - 1)

    with np.errstate(invalid="ignore", divide="ignore"):
        if wms > 0:
            out[ICC1] = interval(bms / wms, n * (k - 1))
        if ems > 0:
            out[ICC3] = interval(bms / ems, (n - 1) * (k - 1))
        out[ICC2] = icc_a_interval(n, k, bms, jms, ems, confidence)
    return {key: (float(lo), float(hi)) for key, (lo, hi) in out.items()}


def icc(values: Sequence[Sequence[float]] | np.ndarray) -> dict[str, float]:
    """ICC(1,1), ICC(2,1) and ICC(3,1) (Shrout & Fleiss 1979) of an n targets x k raters
    table; rows with a missing value are left out (NaN when fewer than 2 rows remain).

    Returns
    -------
    dict
        ``icc1_1`` (one-way random), ``icc2_1`` (two-way random, absolute agreement),
        ``icc3_1`` (two-way mixed, consistency), ``n_complete``.
    """
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x).all(1)]
    if x.shape[1] < 2:
        return {ICC1: math.nan, ICC2: math.nan, ICC3: math.nan, N_COMPLETE: len(x)}
    out = _icc_from_sums(np.ones((1, len(x))), x)
    return {**{k: float(v[0]) for k, v in out.items()}, N_COMPLETE: len(x)}


# --- data: judges' scores aligned by row ----------------------------------------------------
@dataclass
class ReliabilityData:
    """Several judges' scores of the same rows.

    Attributes
    ----------
    rows
        ``id`` and ``stage`` of each row (input order), plus ``row`` = 1-based row number.
    judges
        Judge names, in column order.
    scores
        metric -> rows x judges array (float, NaN where unscored or not applicable).
    samples
        (metric, judge) -> rows x K array of repeated-sample scores (NaN padded).
    sds
        (metric, judge) -> per-row SD of the repeated samples (``<metric>_sd``).
    """

    rows: pd.DataFrame
    judges: list[str]
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    samples: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    sds: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)


def judge_name_of(frame: pd.DataFrame, fallback: str) -> str:
    """A single-judge file's judge (``provider:model`` from its ``judge`` column), else
    ``fallback``."""
    if C.JUDGE in frame.columns:
        values = [str(v).split(" [", 1)[0] for v in frame[C.JUDGE].dropna() if str(v)]
        if values and len(set(values)) == 1:
            return values[0]
    return fallback


def _samples_array(column: pd.Series) -> np.ndarray:
    lists = [parse_scores(v) or [] for v in column.tolist()]
    k = max((len(x) for x in lists), default=0)
    out = np.full((len(lists), k), np.nan)
    for i, x in enumerate(lists):
        out[i, :len(x)] = x
    return out


def _numeric(frame: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float)


def _judge_columns(frame: pd.DataFrame, name: str, suffix: str) -> dict[str, np.ndarray]:
    """Scores, samples and SDs of one judge (``suffix`` is ``""`` or ``@name``)."""
    out: dict[str, np.ndarray] = {}
    for m in C.METRICS:
        if f"{m}{suffix}" in frame.columns:
            out[m] = _numeric(frame, f"{m}{suffix}")
        if f"{m}{SCORES_SUFFIX}{suffix}" in frame.columns:
            out[f"{m}{SCORES_SUFFIX}"] = _samples_array(frame[f"{m}{SCORES_SUFFIX}{suffix}"])
        if f"{m}{SD_SUFFIX}{suffix}" in frame.columns:
            out[f"{m}{SD_SUFFIX}"] = _numeric(frame, f"{m}{SD_SUFFIX}{suffix}")
    return out


def reliability_data(frames: Sequence[pd.DataFrame],
                     names: Sequence[str] | None = None) -> ReliabilityData:
    """Align judged files of the same rows (or read one multi-judge file).

    Parameters
    ----------
    frames
        One file with ``<metric>@<judge>`` columns, or several judged files (one judge
        each, or several each) of the same rows in the same order.
    names
        A fallback name per file (its file name), used when its ``judge`` column does not
        name one judge.

    Raises
    ------
    ReliabilityError
        Files of different lengths, rows whose ``id`` or ``stage`` differ, no score
        column, duplicate judge names.
    """
    if not frames:
        raise ReliabilityError("No judged file given.")
    names = list(names) if names is not None else [f"file {i + 1}" for i in range(len(frames))]
    first = frames[0]
    for col in (C.ID, C.STAGE):
        if col not in first.columns:
            raise ReliabilityError(f"{names[0]}: no {col!r} column; is it a judged four-stage "
                                   "file?")
    for other, label in zip(frames[1:], names[1:], strict=True):
        if len(other) != len(first):
            raise ReliabilityError(f"{label} has {len(other):,} rows and {names[0]} "
                                   f"{len(first):,}: the files must judge the same rows in the "
                                   "same order.")
        for col in (C.ID, C.STAGE):
            if col not in other.columns:
                raise ReliabilityError(f"{label}: no {col!r} column.")
            a = first[col].astype(str).str.strip().to_numpy()
            b = other[col].astype(str).str.strip().to_numpy()
            bad = np.flatnonzero(a != b)
            if len(bad):
                i = int(bad[0])
                raise ReliabilityError(
                    f"{label} and {names[0]} differ in {col!r} at {len(bad):,} row(s), first "
                    f"at row {i + 1} ({a[i]!r} vs {b[i]!r}): the files must judge the same "
                    "rows in the same order.")
    judges: list[str] = []
    per_judge: list[dict[str, np.ndarray]] = []
    for frame, label in zip(frames, names, strict=True):
        inner = judge_names_in(frame)
        found = ([(n, f"{JUDGE_SEP}{n}") for n in inner] if inner
                 else [(judge_name_of(frame, label), "")])
        for name, suffix in found:
            cols = _judge_columns(frame, name, suffix)
            if not any(m in cols for m in C.METRICS):
                raise ReliabilityError(f"{label}: no score column ({', '.join(C.METRICS)}).")
            if name in judges:
                name = _unique(name, judges)
            judges.append(name)
            per_judge.append(cols)
    rows = pd.DataFrame({ROW: np.arange(1, len(first) + 1),
                         C.ID: first[C.ID].astype(str).to_numpy(),
                         C.STAGE: pd.to_numeric(first[C.STAGE], errors="coerce").to_numpy()})
    data = ReliabilityData(rows, judges)
    n = len(first)
    for m in C.METRICS:
        if any(m in cols for cols in per_judge):
            data.scores[m] = np.column_stack([cols.get(m, np.full(n, np.nan))
                                              for cols in per_judge])
        for name, cols in zip(judges, per_judge, strict=True):
            if f"{m}{SCORES_SUFFIX}" in cols and cols[f"{m}{SCORES_SUFFIX}"].shape[1]:
                data.samples[(m, name)] = cols[f"{m}{SCORES_SUFFIX}"]
            if f"{m}{SD_SUFFIX}" in cols:
                data.sds[(m, name)] = cols[f"{m}{SD_SUFFIX}"]
    return data


def _unique(name: str, taken: Sequence[str]) -> str:
    i = 2
    while f"{name}#{i}" in taken:
        i += 1
    return f"{name}#{i}"


def load_reliability_data(paths: Sequence[str | Path], *,
                          encoding: str = "utf-8") -> ReliabilityData:
    """:func:`reliability_data` of judged files on disk (CSV, TSV, Parquet, JSON Lines);
    ``encoding`` is that of text files without a byte-order mark (a mark wins)."""
    from analysis.errors import LoadError
    from analysis.io import load_results

    frames = []
    for path in paths:
        try:
            frames.append(load_results(path, encoding=encoding))
        except LoadError as exc:
            raise ReliabilityError(str(exc)) from None
    return reliability_data(frames, [Path(p).name for p in paths])


# --- the table ----------------------------------------------------------------------------------
def _groups(data: ReliabilityData) -> list[tuple[str, str, np.ndarray]]:
    """(metric, stage, rows mask): each stage present, and all of them when several."""
    stages = data.rows[C.STAGE].to_numpy()
    out = []
    for m in data.scores:
        applies = [s for s, ms in C.STAGE_METRICS.items() if m in ms]
        present = [s for s in applies if (stages == s).any()]
        for s in present:
            out.append((m, str(s), stages == s))
        if len(present) > 1:
            out.append((m, ALL, np.isin(stages, present)))
    return out


#: Bootstrap resamples drawn at once (bounds the memory of the weight matrix).
_BOOT_BLOCK = 200


def _stat_row(x: np.ndarray, *, judges_like: bool, n_resamples: int, confidence: float,
              rng: np.random.Generator) -> dict[str, float]:
    """Statistics of a units x raters table (units with no value at all dropped).

    The bootstrap resamples these rows with replacement: a resample is a count per row,
    so alpha's coincidence matrix and the ICC's sums are weighted sums over the rows.
    """
    x = x[np.isfinite(x).any(1)]
    finite = np.isfinite(x)
    pairable = finite.sum(1) >= 2
    row: dict[str, float] = {RATERS: x.shape[1], N_UNITS: int(pairable.sum()),
                             N_PAIRABLE: int(finite[pairable].sum())}
    for s in STATISTICS:
        row[s] = row[low(s)] = row[high(s)] = math.nan
    complete = finite.all(1) if x.shape[1] >= 2 else np.zeros(len(x), dtype=bool)
    row[N_COMPLETE] = int(complete.sum())
    if not pairable.any():
        return row
    domain = np.unique(x[finite])
    contrib = _coincidences(x, domain).reshape(len(x), -1)
    iccs = (ICC1, ICC2, ICC3) if judges_like else (ICC1,)
    xc = x[complete]

    def stats(w: np.ndarray) -> dict[str, np.ndarray]:
        o = (w @ contrib).reshape(len(w), len(domain), len(domain))
        out = {ALPHA_ORDINAL: _alpha_from(o, domain, "ordinal")}
        if len(xc) >= 2 and len(w) == 1:  # the ICCs' intervals are F intervals
            values = _icc_from_sums(w[:, complete], xc)
            out.update({s: values[s] for s in iccs})
        return out

    for name, value in stats(np.ones((1, len(x)))).items():
        row[name] = float(value[0])
    for name, (lo, hi) in icc_f_intervals(xc, confidence=confidence).items():
        if name in iccs and np.isfinite(row[name]):
            row[low(name)], row[high(name)] = lo, hi
    if n_resamples <= 0:
        return row
    draws: dict[str, list[np.ndarray]] = {}
    units = len(x)
    for start in range(0, n_resamples, _BOOT_BLOCK):
        b = min(_BOOT_BLOCK, n_resamples - start)
        idx = rng.integers(0, units, size=(b, units)) + np.arange(b)[:, None] * units
        w = np.bincount(idx.ravel(), minlength=b * units).reshape(b, units).astype(float)
        for name, values in stats(w).items():
            draws.setdefault(name, []).append(values)
    tail = (1 - confidence) / 2
    for name, parts in draws.items():
        values = np.concatenate(parts)
        values = values[np.isfinite(values)]
        if np.isfinite(row[name]) and len(values) >= 0.5 * n_resamples:
            row[low(name)], row[high(name)] = (float(v) for v in
                                               np.quantile(values, [tail, 1 - tail]))
    return row


def reliability(data: ReliabilityData, *, n_resamples: int = 1000, seed: int | None = 0,
                confidence: float = 0.95) -> pd.DataFrame:
    """Alpha and ICC across judges and across each judge's repeated samples.

    Parameters
    ----------
    data
        :func:`reliability_data`.
    n_resamples
        Bootstrap resamples of the rows for alpha's interval (0: none; the ICCs' F
        intervals are always given).
    seed
        Seeds the bootstrap; each table row draws from its own generator (spawned from the
        seed), so the table is reproducible.
    confidence
        Level of the intervals (alpha's percentile bootstrap, the ICCs' F intervals).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`RELIABILITY_COLUMNS`: ``metric`` (or ``all``: every metric pooled),
        ``stage`` (``"1"``..``"4"`` or ``all``), ``across`` (``judges``, or
        ``samples: <judge>``), ``raters`` (judges, or the most samples of a row),
        ``n_units`` (rows with at least two values: the pairable units), ``n_pairable``
        (values in them), ``n_complete`` (rows every rater scored: the ICC's rows),
        ``alpha_ordinal``, ``icc2_1`` (two-way random, absolute agreement), ``icc3_1``
        (two-way mixed, consistency), ``icc1_1`` (one-way random), each with ``_low`` /
        ``_high``. Across samples only ICC(1,1) is defined (see the module docstring).

    Raises
    ------
    ReliabilityError
        Fewer than two judges and no repeated samples: nothing to compare.
    """
    if not 0 < confidence < 1:
        raise ReliabilityError(f"confidence must be between 0 and 1, got {confidence}.")
    if n_resamples < 0:
        raise ReliabilityError(f"n_resamples must be 0 or more, got {n_resamples}.")
    if len(data.judges) < 2 and not data.samples:
        raise ReliabilityError(
            "Only one judge and no repeated samples: nothing to compare. Give a file scored "
            "by several judges (--judge ... --judge ...), several judged files of the same "
            "rows, or a file scored with --samples K.")
    tables: list[tuple[str, str, str, np.ndarray, bool]] = []
    pooled: dict[str, list[np.ndarray]] = {}
    for m, stage, mask in _groups(data):
        if len(data.judges) >= 2:
            tables.append((m, stage, JUDGES, data.scores[m][mask], True))
            if stage != ALL:
                pooled.setdefault(JUDGES, []).append(data.scores[m][mask])
        for (sm, judge), values in data.samples.items():
            if sm == m:
                across = f"samples: {judge}"
                tables.append((m, stage, across, values[mask], False))
                if stage != ALL:
                    pooled.setdefault(across, []).append(values[mask])
    if len(data.scores) > 1:
        for across, parts in pooled.items():
            width = max(p.shape[1] for p in parts)
            stack = np.vstack([np.pad(p, ((0, 0), (0, width - p.shape[1])),
                                      constant_values=np.nan) for p in parts])
            tables.append((ALL, ALL, across, stack, across == JUDGES))
    seeds = np.random.SeedSequence(seed).spawn(max(len(tables), 1))
    rows = []
    for (m, stage, across, x, judges_like), s in zip(tables, seeds, strict=False):
        stats = _stat_row(x, judges_like=judges_like, n_resamples=n_resamples,
                          confidence=confidence, rng=np.random.default_rng(s))
        rows.append({C.METRIC: m, C.STAGE: stage, ACROSS: across, **stats})
    table = pd.DataFrame(rows, columns=list(RELIABILITY_COLUMNS))
    return table.astype({RATERS: "int64", N_UNITS: "int64", N_PAIRABLE: "int64",
                         N_COMPLETE: "int64"})


def disagreements(data: ReliabilityData, *, min_range: float = 2) -> pd.DataFrame:
    """The (row, metric) judgments where the judges' scores span ``min_range`` or more.

    Returns
    -------
    pandas.DataFrame
        Columns ``row`` (1-based row number), ``id``, ``stage``, ``metric``, ``range``
        (max - min over the judges that scored) and one column per judge (its score, NaN
        where it gave none); widest disagreements first, then by row. Empty (same columns)
        with fewer than two judges.
    """
    columns = [ROW, C.ID, C.STAGE, C.METRIC, RANGE, *data.judges]
    parts = []
    for m, x in data.scores.items():
        if x.shape[1] < 2:
            continue
        finite = np.isfinite(x)
        enough = finite.sum(1) >= 2
        with np.errstate(invalid="ignore"):
            spread = np.where(enough, np.nanmax(np.where(finite, x, -np.inf), 1)
                              - np.nanmin(np.where(finite, x, np.inf), 1), np.nan)
        hit = np.flatnonzero(enough & (spread >= min_range - 1e-9))
        if not len(hit):
            continue
        part = data.rows.iloc[hit][[ROW, C.ID, C.STAGE]].reset_index(drop=True)
        part[C.METRIC] = m
        part[RANGE] = spread[hit]
        for j, name in enumerate(data.judges):
            part[name] = x[hit, j]
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=columns)
    out = pd.concat(parts, ignore_index=True)
    order = {m: i for i, m in enumerate(C.METRICS)}
    out["_m"] = out[C.METRIC].map(order)
    out = out.sort_values([RANGE, ROW, "_m"], ascending=[False, True, True], kind="stable")
    return out.drop(columns="_m").reset_index(drop=True)[columns]


def score_spread(data: ReliabilityData) -> pd.DataFrame:
    """Per-row standard deviation of the scores (the page's histogram).

    From the ``<metric>_sd`` columns where the file has them (spread of one judge's
    repeated samples, ``source = "samples: <judge>"``), else the sample SD (ddof 1) across
    the judges that scored the row (``source = "judges"``; rows with fewer than two scores
    are left out).

    Returns
    -------
    pandas.DataFrame
        Columns ``row``, ``id``, ``stage``, ``metric``, ``sd``, ``source``.
    """
    parts = []
    if data.sds:
        for (m, judge), sd in data.sds.items():
            keep = np.isfinite(sd)
            part = data.rows[keep][[ROW, C.ID, C.STAGE]].reset_index(drop=True)
            parts.append(part.assign(**{C.METRIC: m, SD: sd[keep], SOURCE: f"samples: {judge}"}))
    elif len(data.judges) >= 2:
        for m, x in data.scores.items():
            keep = np.isfinite(x).sum(1) >= 2
            sd = np.nanstd(x[keep], axis=1, ddof=1) if keep.any() else np.array([])
            part = data.rows[keep][[ROW, C.ID, C.STAGE]].reset_index(drop=True)
            parts.append(part.assign(**{C.METRIC: m, SD: sd, SOURCE: JUDGES}))
    if not parts:
        return pd.DataFrame(columns=[ROW, C.ID, C.STAGE, C.METRIC, SD, SOURCE])
    return pd.concat(parts, ignore_index=True)
