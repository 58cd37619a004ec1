"""Judge noise carried into the subgroup and factor-importance conclusions (issue 14, item 5).

A judge's 1-5 score is a noisy measurement. A judged file scored with ``--samples K``
keeps the K scores of every (row, metric); its results table
(:func:`judges.to_results.to_results`) carries them in ``score_samples`` (a JSON list
such as ``"[3, 4, 3]"``, or a list), with ``score`` the mean of the samples and
``deviation = score < threshold``. This module draws R seeded replicates of the judged
outcome, reruns the analysis on each with the *same settings* and reports, per subgroup
(or per regression term), how often its conclusion survives:

- ``noise_same_sign``: share of replicates where LD (the coefficient) has the original
  sign;
- ``noise_significant``: share where it is significant at ``alpha`` (subgroups: the
  Benjamini-Hochberg adjusted p-value of the replicate's own family; importance: the
  p-value the fit labels with, adjusted unless ``adjust="none"``);
- ``noise_survives``: share where both hold.

A replicate where the quantity is undefined (LD undefined, a refused fit, a term
without a coefficient) counts as not surviving: the denominator is always R.

Replicate scores, per scored row (``mode``):

- ``"mean"`` (default): the row's K samples resampled with replacement and averaged: the
  noise of the score actually used (a bootstrap of the mean of K calls);
- ``"single"``: one of the K samples drawn at random: what a one-call judge would have
  said. Draw rule (fixed, so a seed reproduces a table): ``U = rng.random((R, N))`` and
  sample ``floor(U[r, i] * K_i)`` of row i (samples in the order listed);
- ``"confusion"``: a score drawn from ``P(human = h | judge = j)``, the judge-vs-human
  confusion matrix of the row's metric estimated on the rows that carry a human label
  (``human_<metric>`` or ``<metric>_human``), given the judge's score j (``score``,
  rounded half up). This asks "would the conclusion hold had a human scored it?", so it
  moves the conclusion by the judge's systematic error as well as by its noise.

The replicate deviation is ``score < threshold`` (the ``threshold`` column, or a number).
Rows without samples (or, in confusion mode, whose metric or judge score has no labelled
rows) keep their original outcome; rows without an outcome stay out, so every replicate
has the same rows and cells and only the deviations change.

The statistics are :func:`analysis.subgroups.subgroups` (counts through
:func:`~analysis.subgroups.subgroup_counts`, tests through
:func:`~analysis.subgroups.disparity_stats` and
:func:`~analysis.subgroups.benjamini_hochberg`) and
:func:`analysis.importance.factor_importance` on replicate cell tables (the exact
cell-table fit path), so nothing is reimplemented. Method and limits:
``docs/judge_noise.md``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal, get_args

import numpy as np
import pandas as pd

from analysis.columns import (
    COEF,
    DEVIATION,
    DEVIATIONS,
    DUPLICATE_OF,
    LOG_DISPARITY,
    NOISE_SAME_SIGN,
    NOISE_SIGNIFICANT,
    NOISE_SURVIVES,
    P_ADJUSTED,
    P_VALUE,
    SUBGROUP,
    TERM,
    N,
)
from analysis.errors import AnalysisError
from analysis.values import factor_codes

__all__ = [
    "DEFAULT_REPLICATES", "HUMAN_PATTERNS", "JudgeNoiseError", "METRIC", "MODE_LABELS",
    "NOISE_COLUMNS", "NOISE_MODES", "NoiseMode", "ROBUST_SHARE", "SAME_SIGN", "SCORE",
    "SCORE_SAMPLES", "SIGNIFICANT", "SURVIVES", "THRESHOLD", "available_modes", "conditional",
    "confusion_tables", "has_score_samples", "human_columns",
    "importance_noise", "noise_arguments", "parse_samples", "replicate_deviations",
    "subgroup_noise",
    "survival_counts", "survival_sentence", "threshold_of",
]


NoiseMode = Literal["mean", "single", "confusion"]
NOISE_MODES: tuple[str, ...] = get_args(NoiseMode)
#: What each mode does, in words (the app's radio labels).
MODE_LABELS = {"mean": "mean of K resampled samples (the score used)",
               "single": "one sample (a one-call judge)",
               "confusion": "a human-like score from the judge-human confusion matrix"}
#: Columns of the results table read here.
SCORE_SAMPLES = "score_samples"
SCORE = "score"
THRESHOLD = "threshold"
METRIC = "metric"
#: How human label columns are named (as ``analysis.judge_stats.agreement.HUMAN_PATTERNS``).
HUMAN_PATTERNS: tuple[str, ...] = ("human_{}", "{}_human")
#: Columns added to the subgroup / term table.
SAME_SIGN, SIGNIFICANT, SURVIVES = NOISE_SAME_SIGN, NOISE_SIGNIFICANT, NOISE_SURVIVES
NOISE_COLUMNS: tuple[str, ...] = (SAME_SIGN, SIGNIFICANT, SURVIVES)
DEFAULT_REPLICATES = 200
#: A conclusion counts as robust when it survives in at least this share of replicates.
ROBUST_SHARE = 0.95
#: Elements (replicates x rows x samples) drawn per block, to bound the memory.
_BLOCK = 4_000_000


class JudgeNoiseError(AnalysisError):
    """The table cannot be resampled as asked (no score samples, no human labels, an
    outcome that is not ``score < threshold``, bad options)."""


# --- reading the samples --------------------------------------------------------------------------
def _one(value: object, row: int) -> list[float]:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise JudgeNoiseError(f"score_samples of row {row + 1} is not a JSON list: "
                                  f"{text[:60]!r}.") from None
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        value = [value]
    try:
        out = [float(v) for v in value if v is not None]  # type: ignore[union-attr]
    except (TypeError, ValueError):
        raise JudgeNoiseError(f"score_samples of row {row + 1} holds something that is not "
                              f"a number: {str(value)[:60]!r}.") from None
    return [v for v in out if math.isfinite(v)]


def parse_samples(values: Sequence | pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The score samples of every row as a padded array.

    Parameters
    ----------
    values
        One entry per row: a JSON list string (``"[3, 4, 3]"``), a list or array, a
        single number, or empty / None / NaN for a row without samples.

    Returns
    -------
    (samples, counts)
        ``samples`` of shape (rows, K_max), NaN-padded, in the order listed; ``counts``
        the number of finite samples per row (0 for none).

    Raises
    ------
    JudgeNoiseError
        An entry that is not a list of numbers.
    """
    lists = [_one(v, i) for i, v in enumerate(list(values))]
    counts = np.array([len(x) for x in lists], dtype=np.int64)
    width = max(int(counts.max()) if len(counts) else 0, 1)
    samples = np.full((len(lists), width), np.nan)
    for i, x in enumerate(lists):
        samples[i, :len(x)] = x
    return samples, counts


def has_score_samples(results: pd.DataFrame) -> bool:
    """True when ``results`` has a ``score_samples`` column with at least one sample."""
    if SCORE_SAMPLES not in results.columns:
        return False
    col = results[SCORE_SAMPLES]
    return bool(col.map(lambda v: v is not None and not (isinstance(v, float) and math.isnan(v))
                        and str(v).strip() not in ("", "[]")).any())


def human_columns(results: pd.DataFrame) -> dict[str, str]:
    """``{metric: human label column}`` for the metrics of ``results`` that have one."""
    if METRIC not in results.columns:
        return {}
    out = {}
    for metric in pd.unique(results[METRIC].astype(str)):
        for pattern in HUMAN_PATTERNS:
            if pattern.format(metric) in results.columns:
                out[metric] = pattern.format(metric)
                break
    return out


def available_modes(results: pd.DataFrame) -> list[str]:
    """The modes ``results`` supports: mean and single with samples, confusion with
    labelled rows."""
    modes = ["mean", "single"] if has_score_samples(results) else []
    try:
        if confusion_tables(results):
            modes.append("confusion")
    except JudgeNoiseError:
        pass
    return modes


def _round_half_up(x: np.ndarray) -> np.ndarray:
    return np.floor(np.asarray(x, dtype=float) + 0.5)


def confusion_tables(results: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Judge-vs-human confusion counts per metric, from the rows with both scores.

    Both scores are rounded half up (averaged human labels such as 3.67 become 4, as in
    :mod:`analysis.judge_stats.agreement`).

    Returns
    -------
    dict
        ``{metric: DataFrame}``: index = judge score, columns = human score, values =
        number of labelled rows. Metrics without a labelled row are left out.
    """
    out = {}
    if SCORE not in results.columns:
        return out
    for metric, column in human_columns(results).items():
        rows = results[results[METRIC].astype(str) == metric]
        judge = _round_half_up(pd.to_numeric(rows[SCORE], errors="coerce"))
        human = _round_half_up(pd.to_numeric(rows[column], errors="coerce"))
        ok = np.isfinite(judge) & np.isfinite(human)
        if ok.any():
            table = pd.crosstab(pd.Series(judge[ok], name="judge"),
                                pd.Series(human[ok], name="human"))
            out[metric] = table
    return out


def conditional(confusion: pd.DataFrame) -> pd.DataFrame:
    """``P(human = column | judge = index)``: each row of a confusion table divided by
    its total (rows without labelled cases dropped)."""
    totals = confusion.sum(axis=1)
    kept = confusion[totals > 0]
    return kept.div(kept.sum(axis=1), axis=0)


def _draw_into(out: np.ndarray, u: np.ndarray, judge: np.ndarray, probs: pd.DataFrame,
               rows: np.ndarray) -> None:
    """Fill the columns ``rows`` (mask) of ``out`` with human scores drawn by inverting the
    cumulative ``P(human | judge)`` at the uniforms ``u``."""
    labels = np.asarray(probs.columns, dtype=float)
    for value, row in probs.iterrows():
        sel = np.flatnonzero(rows & (judge == float(value)))
        if len(sel):
            cum = np.cumsum(row.to_numpy(dtype=float))
            cum[-1] = 1.0
            out[:, sel] = labels[np.searchsorted(cum, u[:, sel], side="right")]


# --- replicate outcomes ---------------------------------------------------------------------------
class _Rows:
    """The rows of a results table prepared for resampling (outcome known)."""

    def __init__(self, results: pd.DataFrame, mode: str, threshold: str | float,
                 confusion: Mapping[str, pd.DataFrame] | None):
        if mode not in NOISE_MODES:
            raise JudgeNoiseError(f"Unknown judge-noise mode {mode!r}: use one of "
                                  f"{', '.join(NOISE_MODES)}.")
        if DEVIATION not in results.columns:
            raise JudgeNoiseError("Judge noise needs the results table with its outcome "
                                  "(a 'deviation' column: apply the design first).")
        known = results[DEVIATION].notna().to_numpy()
        self.frame = results[known]
        self.mode = mode
        self.deviation = self.frame[DEVIATION].to_numpy(dtype=float)
        n = len(self.frame)
        if isinstance(threshold, str):
            if threshold not in results.columns:
                raise JudgeNoiseError(f"Judge noise needs the score threshold: the table has "
                                      f"no {threshold!r} column (the results table of "
                                      "`judges ... --to-results` has one).")
            self.threshold = pd.to_numeric(self.frame[threshold], errors="coerce"
                                           ).to_numpy(dtype=float)
        else:
            self.threshold = np.full(n, float(threshold))
        score = (pd.to_numeric(self.frame[SCORE], errors="coerce").to_numpy(dtype=float)
                 if SCORE in self.frame.columns else np.full(n, np.nan))
        self.score = score
        if mode == "confusion":
            tables = dict(confusion) if confusion is not None else confusion_tables(results)
            if not tables:
                raise JudgeNoiseError(
                    "Confusion mode needs human labels: columns human_<metric> or "
                    "<metric>_human (e.g. human_ics) with scores on rows the judge scored.")
            self.tables = tables
            metric = (self.frame[METRIC].astype(str).to_numpy() if METRIC in self.frame.columns
                      else np.full(n, ""))
            self.metric = metric
            self.active = np.zeros(n, dtype=bool)
            for m, table in tables.items():
                probs = conditional(table)
                self.active |= (metric == m) & np.isin(_round_half_up(score),
                                                       probs.index.to_numpy(dtype=float))
            self.samples, self.counts = np.full((n, 1), np.nan), np.zeros(n, np.int64)
        else:
            if SCORE_SAMPLES not in results.columns:
                raise JudgeNoiseError(
                    "Judge noise needs the judge's score samples: the table has no "
                    "'score_samples' column. Judge with `python -m judges score ... "
                    "--samples K` and write the results table with --to-results.")
            self.samples, self.counts = parse_samples(self.frame[SCORE_SAMPLES])
            self.active = (self.counts > 0) & np.isfinite(self.threshold)
            if not self.active.any():
                raise JudgeNoiseError("No row with an outcome has score samples "
                                      "('score_samples' is empty on every such row).")
        self._check_outcome()

    def _check_outcome(self) -> None:
        """The replicates recompute ``score < threshold``: it must be the outcome used."""
        check = np.isfinite(self.score) & np.isfinite(self.threshold)
        expected = (self.score[check] < self.threshold[check]).astype(float)
        bad = np.flatnonzero(expected != self.deviation[check])
        if len(bad):
            i = np.flatnonzero(check)[bad[0]]
            raise JudgeNoiseError(
                f"The outcome of this table is not score < threshold on {len(bad):,} rows "
                f"(e.g. score {self.score[i]:g}, threshold {self.threshold[i]:g}, deviation "
                f"{self.deviation[i]:g}): judge noise redraws the judge's scores, so the "
                "outcome must be the results table's deviation (or score below a number).")

    def summary(self) -> dict:
        out = {"n_rows": int(len(self.frame)), "n_rows_resampled": int(self.active.sum()),
               "n_rows_fixed": int((~self.active).sum())}
        if self.mode != "confusion":
            k = self.counts[self.active]
            out.update({"samples_min": int(k.min()), "samples_max": int(k.max())})
        else:
            out["confusion"] = {m: {"n_labelled": int(t.to_numpy().sum()),
                                    "judge_scores": [float(v) for v in t.index],
                                    "human_scores": [float(v) for v in t.columns],
                                    "counts": t.to_numpy().astype(int).tolist()}
                                for m, t in self.tables.items()}
        return out

    def blocks(self, n_resamples: int, seed: int) -> Iterator[tuple[int, np.ndarray]]:
        """``(first replicate, deviations)`` blocks: a boolean array (block, active rows),
        the replicate outcomes of the rows in ``self.active`` (table order)."""
        rng = np.random.default_rng(seed)
        idx = np.flatnonzero(self.active)
        width = self.samples.shape[1] if self.mode == "mean" else 1
        size = max(1, _BLOCK // max(len(idx) * width, 1))
        for start in range(0, n_resamples, size):
            c = min(size, n_resamples - start)
            yield start, self._scores(rng, idx, c) < self.threshold[idx]

    def _scores(self, rng: np.random.Generator, idx: np.ndarray, c: int) -> np.ndarray:
        if self.mode == "confusion":
            out = np.empty((c, len(idx)))
            u = rng.random((c, len(idx)))
            judge, metric = _round_half_up(self.score[idx]), self.metric[idx]
            for m, table in self.tables.items():
                _draw_into(out, u, judge, conditional(table), metric == m)
            return out
        k = self.counts[idx]
        samples = self.samples[idx]
        width = samples.shape[1]
        base = np.arange(len(idx)) * width  # position of each row's first sample
        if self.mode == "single":
            pick = (rng.random((c, len(idx))) * k).astype(np.int64)  # floor(U * K)
            return samples.ravel()[pick + base]
        pick = (rng.random((c, len(idx), width)) * k[None, :, None]).astype(np.int64)
        drawn = samples.ravel()[pick + base[None, :, None]]
        if not (k == width).all():  # rows with fewer samples: only their first K draws
            drawn = np.where(np.arange(width)[None, None, :] < k[None, :, None], drawn, 0.0)
        return drawn.sum(axis=2) / k[None, :]


def replicate_deviations(results: pd.DataFrame, *, n_resamples: int = DEFAULT_REPLICATES,
                         mode: NoiseMode = "mean", seed: int = 0,
                         threshold: str | float = THRESHOLD,
                         confusion: Mapping[str, pd.DataFrame] | None = None) -> np.ndarray:
    """The replicate outcomes of the rows with an outcome, as one array.

    Returns
    -------
    numpy.ndarray
        Shape (n_resamples, rows with a known ``deviation``, in table order), 0.0 / 1.0.
        Use for inspection and small tables; the analyses aggregate block by block.
    """
    _check_n_resamples(n_resamples)
    rows = _Rows(results, mode, threshold, confusion)
    out = np.tile(rows.deviation, (n_resamples, 1))
    for start, dev in rows.blocks(n_resamples, seed):
        out[start:start + len(dev), rows.active] = dev
    return out


def _check_n_resamples(n_resamples: int) -> None:
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 1:
        raise JudgeNoiseError(f"The number of judge-noise replicates must be a positive "
                              f"whole number, got {n_resamples!r}.")


def _row_cells(frame: pd.DataFrame, keys: Sequence[str], n_cells: np.ndarray) -> np.ndarray:
    """Cell position of every row, in the order of :func:`analysis.cells.cell_table`
    (sorted by the keys' codes)."""
    codes = [factor_codes(frame[f])[0] for f in keys]
    _, inverse = np.unique(np.column_stack(codes), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not np.array_equal(np.bincount(inverse, minlength=len(n_cells)), n_cells):
        raise AnalysisError("Internal error: rows and cells disagree.")  # pragma: no cover
    return inverse


def _cell_replicates(rows: _Rows, keys: Sequence[str], n_resamples: int, seed: int
                     ) -> tuple[pd.DataFrame, np.ndarray]:
    """The cell table over ``keys`` and the replicate deviations per cell (R x cells)."""
    from analysis.cells import cell_table

    cells = cell_table(rows.frame, list(keys))
    inverse = _row_cells(rows.frame, keys, cells[N].to_numpy())
    fixed = ~rows.active  # their deviations are the same in every replicate
    base = np.rint(np.bincount(inverse[fixed], weights=rows.deviation[fixed],
                               minlength=len(cells))).astype(np.int64)
    order = np.argsort(inverse[rows.active], kind="stable")
    present, starts = np.unique(inverse[rows.active][order], return_index=True)
    k = np.tile(base, (n_resamples, 1))
    for start, dev in rows.blocks(n_resamples, seed):
        k[start:start + len(dev), present] += np.add.reduceat(dev[:, order], starts, axis=1,
                                                              dtype=np.int64)
    return cells, k


def _shares(same: np.ndarray, significant: np.ndarray) -> dict[str, np.ndarray]:
    return {SAME_SIGN: same.mean(axis=0), SIGNIFICANT: significant.mean(axis=0),
            SURVIVES: (same & significant).mean(axis=0)}


# --- subgroups ------------------------------------------------------------------------------------
def subgroup_noise(results: pd.DataFrame, factors: Sequence[str], *, max_level: int | None = None,
                   test: str = "auto", confidence: float = 0.95, min_n: int | None = None,
                   min_expected: float | None = None, alpha: float = 0.05,
                   n_resamples: int = DEFAULT_REPLICATES, mode: NoiseMode = "mean",
                   seed: int = 0, threshold: str | float = THRESHOLD,
                   confusion: Mapping[str, pd.DataFrame] | None = None,
                   table: pd.DataFrame | None = None, adjust: str = "bh",
                   return_info: bool = False) -> pd.DataFrame | tuple[pd.DataFrame, dict]:
    """How often each subgroup's LD sign and significance survive judge noise.

    Parameters
    ----------
    results
        The results table (design applied, already subset) with ``deviation``,
        ``score``, ``threshold`` and ``score_samples`` (or human label columns for
        ``mode="confusion"``).
    factors, max_level, test, confidence, min_n, min_expected
        As :func:`analysis.subgroups.subgroups`; every replicate uses the same.
    alpha
        Significance level for the adjusted p-value.
    adjust
        Its adjustment over the distinct subgroups of each replicate (as
        :func:`analysis.subgroups.subgroups`; default Benjamini-Hochberg).
    n_resamples, mode, seed, threshold, confusion
        See the module docstring; ``confusion`` defaults to :func:`confusion_tables`
        of ``results``.
    table
        A table of distinct subgroups to extend (e.g. with power or bootstrap columns),
        matched on ``subgroup``; default :func:`analysis.subgroups.distinct_subgroups`
        of the original analysis.

    Returns
    -------
    pandas.DataFrame
        ``table`` plus ``noise_same_sign``, ``noise_significant`` and
        ``noise_survives`` (shares of the replicates; NaN where the original LD is
        undefined). With ``return_info`` the pair ``(table, info)``: ``info`` the
        settings, row counts, ``n_significant`` and ``n_robust`` (the JSON's
        ``judge_noise.settings``; :func:`survival_sentence` reads it).
    """
    from analysis.multiple_testing import adjust_p
    from analysis.subgroups import (
        MIN_EXPECTED,
        MIN_N,
        disparity_stats,
        distinct_subgroups,
        subgroup_counts,
        subgroups,
    )

    _check_n_resamples(n_resamples)
    if not 0 < alpha < 1:
        raise JudgeNoiseError(f"alpha must lie strictly between 0 and 1, got {alpha}.")
    factors = list(factors)
    min_n = MIN_N if min_n is None else min_n
    min_expected = MIN_EXPECTED if min_expected is None else min_expected
    rows = _Rows(results, mode, threshold, confusion)
    cells, k = _cell_replicates(rows, factors, n_resamples, seed)
    stats_options = {"test": test, "confidence": confidence, "min_n": min_n,
                     "min_expected": min_expected}
    full = subgroups(cells, factors, max_level=max_level, adjust=adjust, **stats_options)
    level = int(full["level"].max())
    distinct = full[DUPLICATE_OF].isna().to_numpy()
    n = full[N].to_numpy()
    total_n = int(cells[N].sum())
    ld0 = full[LOG_DISPARITY].to_numpy(dtype=float)
    # Replicates with the same cell counts give the same table: each distinct one is
    # analysed once, and those with the same total deviations in one disparity_stats call.
    uniq, inverse = np.unique(k, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    _, extra = subgroup_counts(cells, factors, levels=range(1, level + 1), extra=list(uniq),
                               return_extra=True)
    rep_k = np.vstack(extra)[:, distinct]
    ld = np.empty(rep_k.shape)
    q = np.empty(rep_k.shape)
    totals = uniq.sum(axis=1)
    for total in np.unique(totals):
        idx = np.flatnonzero(totals == total)
        st = disparity_stats(rep_k[idx].ravel(), np.tile(n[distinct], len(idx)),
                             total_deviations=int(total), total_n=total_n, **stats_options)
        ld[idx] = st[LOG_DISPARITY].to_numpy(dtype=float).reshape(len(idx), -1)
        p = st[P_VALUE].to_numpy(dtype=float).reshape(len(idx), -1)
        q[idx] = np.vstack([adjust_p(row, adjust) for row in p])
    with np.errstate(invalid="ignore"):
        same = (np.isfinite(ld) & (np.sign(ld) == np.sign(ld0[distinct])))[inverse]
        significant = (q < alpha)[inverse]
    shares = _shares(same, significant)
    base = distinct_subgroups(full)
    undefined = ~np.isfinite(ld0[distinct])
    for col, values in shares.items():
        base[col] = np.where(undefined, np.nan, values)
    if table is None:
        out = base
    else:
        by_label = base.set_index(SUBGROUP)
        out = table.copy()
        for col in NOISE_COLUMNS:
            out[col] = out[SUBGROUP].map(by_label[col]).to_numpy(dtype=float)
    info = {
        "replicates": int(n_resamples), "mode": mode, "seed": int(seed), "alpha": alpha,
        **({"adjust": adjust} if adjust != "bh" else {}),
        "threshold": threshold, "robust_share": ROBUST_SHARE, **rows.summary(),
        **survival_counts(out, alpha=alpha, q_column=P_ADJUSTED),
    }
    return (out, info) if return_info else out


# --- factor importance ----------------------------------------------------------------------------
def importance_noise(results: pd.DataFrame, design, *, n_resamples: int = DEFAULT_REPLICATES,
                     mode: NoiseMode = "mean", seed: int = 0, threshold: str | float = THRESHOLD,
                     confusion: Mapping[str, pd.DataFrame] | None = None,
                     fit=None, return_info: bool = False,
                     **options) -> pd.DataFrame | tuple[pd.DataFrame, dict]:
    """How often each regression term's sign and significance survive judge noise.

    Parameters
    ----------
    results
        The results table (design applied) with ``deviation``, ``score``, ``threshold``
        and ``score_samples`` (or human labels for ``mode="confusion"``).
    design
        The design of :func:`analysis.importance.factor_importance`.
    n_resamples, mode, seed, threshold, confusion
        See the module docstring.
    fit
        The original :class:`~analysis.importance.ImportanceResult` (default: fitted
        here with ``options``).
    **options
        Keyword arguments of :func:`~analysis.importance.factor_importance` (factors,
        references, where, exclude, interactions, on_separation, alpha, adjust,
        confidence, cluster, gee, min_rows_per_parameter); every replicate is fitted on
        its cell table with the same ones (without the likelihood-ratio tests).

    Returns
    -------
    pandas.DataFrame
        The original ``terms`` plus ``noise_same_sign``, ``noise_significant`` and
        ``noise_survives`` (significance: the p-value the labels use, adjusted when
        ``adjust="none"``, below ``alpha``). A refused replicate fit counts as not
        surviving. With ``return_info`` the pair ``(terms, info)``: ``info`` the
        settings, row counts, ``n_significant``, ``n_robust`` and ``n_refused``.
    """
    from analysis.cells import filter_rows
    from analysis.importance import INTERCEPT, factor_importance

    _check_n_resamples(n_resamples)
    options = dict(options)
    options.pop("likelihood_ratio", None)
    if fit is None:
        fit = factor_importance(results, design, likelihood_ratio=False, **options)
    cluster = fit.cluster  # as resolved by the fit (a declared cluster may be unusable)
    options["cluster"] = cluster
    where = {k: v for k, v in dict(options.get("where") or {}).items()
             if v is not None and (isinstance(v, str) or len(v))}
    options["where"] = where or None
    exclude = dict(options.get("exclude") or {})
    keys = list(dict.fromkeys([*fit.factors, *where, *exclude, *([cluster] if cluster else [])]))
    rows = _Rows(filter_rows(results, where or None), mode, threshold, confusion)
    cells, k = _cell_replicates(rows, keys, n_resamples, seed)
    p_column = P_VALUE if fit.adjust == "none" else P_ADJUSTED
    terms = fit.terms[TERM].tolist()
    coef0 = fit.terms[COEF].to_numpy(dtype=float)
    uniq, inverse = np.unique(k, axis=0, return_inverse=True)  # identical replicates: one fit
    inverse = inverse.reshape(-1)
    same_u = np.zeros((len(uniq), len(terms)), dtype=bool)
    significant_u = np.zeros_like(same_u)
    refused_u = np.zeros(len(uniq), dtype=bool)
    for r, counts in enumerate(uniq):
        try:
            rep = factor_importance(cells.assign(**{DEVIATIONS: counts}), design,
                                    likelihood_ratio=False, **options)
        except AnalysisError:
            refused_u[r] = True
            continue
        t = rep.terms.set_index(TERM).reindex(terms)
        coef = t[COEF].to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            same_u[r] = np.isfinite(coef) & (np.sign(coef) == np.sign(coef0))
            significant_u[r] = t[p_column].to_numpy(dtype=float) < fit.alpha
    same, significant = same_u[inverse], significant_u[inverse]
    refused = int(refused_u[inverse].sum())
    out = fit.terms.copy()
    for col, values in _shares(same, significant).items():
        out[col] = values
    info = {
        "replicates": int(n_resamples), "mode": mode, "seed": int(seed), "alpha": fit.alpha,
        "adjust": fit.adjust, "threshold": threshold, "robust_share": ROBUST_SHARE,
        "n_refused": refused, **rows.summary(),
        **survival_counts(out[out[TERM] != INTERCEPT], alpha=fit.alpha, q_column=p_column),
    }
    return (out, info) if return_info else out


# --- summaries ------------------------------------------------------------------------------------
def survival_counts(table: pd.DataFrame, *, alpha: float, q_column: str = P_ADJUSTED,
                    share: float = ROBUST_SHARE) -> dict[str, int]:
    """Originally significant rows and how many of them survive in >= ``share`` of the
    replicates.

    Returns
    -------
    dict
        ``n_significant`` (``q_column`` < ``alpha`` in the original analysis) and
        ``n_robust`` (of those, ``noise_survives`` >= ``share``).
    """
    sig = table[q_column].to_numpy(dtype=float) < alpha
    robust = sig & (table[SURVIVES].to_numpy(dtype=float) >= share - 1e-12)
    return {"n_significant": int(sig.sum()), "n_robust": int(robust.sum())}


def survival_sentence(info: Mapping, *, what: str = "subgroups") -> str:
    """``"12 of 14 significant subgroups keep their sign and significance in >= 95 % of
    200 replicates (mean of K resampled samples)."`` from the ``info`` of
    :func:`subgroup_noise` / :func:`importance_noise` (``return_info=True``)."""
    n_sig, n_rob = info.get("n_significant", 0), info.get("n_robust", 0)
    share = f"{100 * info.get('robust_share', ROBUST_SHARE):g} %"
    reps = f"{info.get('replicates', 0):,} replicates"
    mode = MODE_LABELS.get(info.get("mode", ""), "")
    if not n_sig:
        return (f"No {what} are significant in the original analysis; the columns show how "
                f"often each would become so in {reps} ({mode}).")
    text = (f"{n_rob} of {n_sig} significant {what} keep their sign and significance in "
            f">= {share} of {reps} ({mode}).")
    if info.get("n_refused"):
        text += f" {info['n_refused']} replicate fits were refused (counted as not surviving)."
    return text


def threshold_of(design) -> str | float:
    """The threshold the replicate outcomes use: the design's number when its outcome is
    ``score`` below a threshold, else the ``threshold`` column."""
    outcome = getattr(design, "outcome", None)
    if outcome is not None and outcome.column == SCORE and outcome.mapping == "below":
        return float(outcome.threshold)
    return THRESHOLD


def noise_arguments(options, design) -> dict:  # noqa: ANN001 - NoiseOptions, a Design
    """The keyword arguments of :func:`subgroup_noise` / :func:`importance_noise` from an
    analysis's options (:class:`analysis.options.common.NoiseOptions`: ``judge_noise``,
    ``noise_mode``, ``seed`` and, for subgroups, ``noise_alpha``) and its design's
    threshold (:func:`threshold_of`): the one place the options become arguments (the
    API and the CLI)."""
    out = {"n_resamples": options.judge_noise, "mode": options.noise_mode,
           "seed": getattr(options, "seed", 0), "threshold": threshold_of(design)}
    if "noise_alpha" in options.specs():
        out["alpha"] = options.noise_alpha
    return out
