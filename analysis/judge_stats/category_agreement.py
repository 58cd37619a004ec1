"""Agreement of a categoriser's labels with human labels (``docs/judges_at_scale.md``).

:func:`judges.categorise.categorise_frame` puts each completion into one of a list of
categories (``woman``, ``man``, ``non-binary``, ``unclassified`` ...). Before its labels
feed a category distribution they should be checked against labels given by people on a
sample. This module compares the two columns as *categories*, not as scores:

- **Cohen's kappa** (unweighted): ``(p_o - p_e) / (1 - p_e)``, ``p_o`` the share of rows
  on which both agree, ``p_e`` the agreement expected from the two margins; interval by
  seeded bootstrap of the rows, or the large-sample standard error of Fleiss, Cohen &
  Everitt (1969) with agreement weights 1 on the diagonal (``ci="analytic"``);
- the **confusion matrix**: rows the human label, columns the categoriser's label;
- per category, **precision** (of the rows the categoriser put in the category, the share
  the humans put there too), **recall** (of the rows the humans put in the category, the
  share the categoriser found) and F1, with the human and categoriser counts.

Labels are matched to the categories ignoring case and the difference between spaces,
``-`` and ``_`` (as the categoriser compares its replies). A label that is not one of
the categories is an error naming the labels and the categories (a typo, another
spelling, a category the list lacks), unless ``unknown="drop"``: those rows are then
left out and counted in ``n_unknown``. Rows without a label on either side (e.g. the
categoriser's unscored rows) are left out and counted in ``n_missing``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from analysis.judge_stats.agreement import (
    ALL,
    CI_METHOD,
    EXACT,
    HUMAN_PATTERNS,
    CIMethod,
    high,
    kappa_se,
    low,
)
from analysis.judge_stats.errors import JudgesError
from analysis.values import is_blank

__all__ = [
    "AGREED", "CATEGORY", "CATEGORY_AGREEMENT_COLUMNS", "CategoryAgreement", "F1",
    "HUMAN_COLUMN", "KAPPA", "LABEL_COLUMN", "N", "N_HUMAN", "N_LABELLED", "N_MISSING",
    "N_UNKNOWN", "PRECISION", "RECALL", "UnknownPolicy", "category_agreement", "cohen_kappa",
    "cohen_kappa_se", "normalise_name",
]


UnknownPolicy = Literal["error", "drop"]

# --- output columns ----------------------------------------------------------------------
CATEGORY = "category"
LABEL_COLUMN = "label_column"
HUMAN_COLUMN = "human_column"
N = "n"
N_MISSING = "n_missing"
N_UNKNOWN = "n_unknown"
KAPPA = "kappa"
N_HUMAN = "n_human"
N_LABELLED = "n_labelled"
AGREED = "agreed"
PRECISION = "precision"
RECALL = "recall"
F1 = "f1"
#: Columns of :attr:`CategoryAgreement.table`.
CATEGORY_AGREEMENT_COLUMNS: tuple[str, ...] = (
    CATEGORY, LABEL_COLUMN, HUMAN_COLUMN, N, N_MISSING, N_UNKNOWN, KAPPA, low(KAPPA),
    high(KAPPA), EXACT, N_HUMAN, N_LABELLED, AGREED, PRECISION, RECALL, F1, CI_METHOD)


_SEPARATORS = re.compile(r"[\s\-_]+")


def normalise_name(text: str) -> str:
    """How category names are compared: case-folded, runs of spaces/``-``/``_`` as one space."""
    return _SEPARATORS.sub(" ", str(text).casefold()).strip()


@dataclass(frozen=True)
class CategoryAgreement:
    """The result of :func:`category_agreement`.

    Attributes
    ----------
    table
        Columns :data:`CATEGORY_AGREEMENT_COLUMNS`: first a row ``category == "all"``
        with ``n``, ``n_missing``, ``n_unknown``, ``kappa`` (Cohen's, unweighted) with
        ``kappa_low``/``kappa_high`` and ``exact_agreement``; then one row per category
        with ``n_human`` (rows the humans put there), ``n_labelled`` (rows the
        categoriser put there), ``agreed`` (both), ``precision`` = agreed / n_labelled,
        ``recall`` = agreed / n_human and ``f1`` (NaN when a denominator is 0).
    confusion
        Counts: index the human label, columns the categoriser's label, both in the order
        of the categories.
    """

    table: pd.DataFrame
    confusion: pd.DataFrame


def cohen_kappa(table: np.ndarray) -> float:
    """Unweighted Cohen's kappa of a square confusion matrix (NaN if undefined)."""
    table = np.asarray(table, dtype=float)
    n = table.sum()
    if n == 0:
        return math.nan
    po = np.trace(table) / n
    pe = float((table.sum(1) * table.sum(0)).sum()) / n ** 2
    return math.nan if pe >= 1 else float((po - pe) / (1 - pe))


def cohen_kappa_se(table: np.ndarray) -> float:
    """Large-sample standard error of unweighted kappa (Fleiss, Cohen & Everitt 1969)."""
    table = np.asarray(table, dtype=float)
    n = table.sum()
    kappa = cohen_kappa(table)
    if n == 0 or not np.isfinite(kappa):
        return math.nan
    p = table / n
    return kappa_se(p, np.eye(len(table)), kappa, float((p.sum(1) * p.sum(0)).sum()), n)


def _human_column(frame: pd.DataFrame, label_col: str) -> str:
    for pattern in HUMAN_PATTERNS:
        if pattern.format(label_col) in frame.columns:
            return pattern.format(label_col)
    raise JudgesError(f"No human label column for {label_col!r}: name it "
                      f"human_{label_col} or {label_col}_human, or say which column to use.")


def _describe(counts: dict[str, int]) -> str:
    return ", ".join(f"{name!r} ({n} row{'s' if n != 1 else ''})"
                     for name, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def category_agreement(frame: pd.DataFrame, label_col: str = "category",
                       human_col: str | None = None, *,
                       categories: Sequence[str] | None = None,
                       unknown: UnknownPolicy = "error", ci: CIMethod = "bootstrap",
                       n_resamples: int = 1000, confidence: float = 0.95,
                       seed: int | None = 0) -> CategoryAgreement:
    """Compare a categoriser's labels with human labels, as categories.

    Parameters
    ----------
    frame
        A table with both label columns (e.g. ``categorise`` output with a
        ``human_category`` column added by annotators).
    label_col, human_col
        The categoriser's column and the humans' (default ``human_<label_col>`` or
        ``<label_col>_human``).
    categories
        The allowed categories, in order (the list given to ``categorise``). ``None``:
        the categoriser's labels, in order of first appearance; then a human label
        outside them is unknown.
    unknown
        ``"error"`` (default): a label that is not a category raises; ``"drop"``: such
        rows are left out and counted in ``n_unknown``.
    ci, n_resamples, confidence, seed
        Interval of kappa (module docstring); the bootstrap is seeded.

    Returns
    -------
    CategoryAgreement
        ``table`` (columns :data:`CATEGORY_AGREEMENT_COLUMNS`) and ``confusion``.

    Raises
    ------
    JudgesError
        A column is missing; no human column found; fewer than two categories; labels
        that do not match the categories (with ``unknown="error"``, or when no row is
        left to compare).
    """
    if not 0 < confidence < 1:
        raise JudgesError(f"confidence must be between 0 and 1, got {confidence}.")
    if ci not in ("bootstrap", "analytic", "none"):
        raise JudgesError(f"ci must be 'bootstrap', 'analytic' or 'none', not {ci!r}.")
    if unknown not in ("error", "drop"):
        raise JudgesError(f"unknown must be 'error' or 'drop', not {unknown!r}.")
    human_col = human_col or _human_column(frame, label_col)
    missing = [c for c in (label_col, human_col) if c not in frame.columns]
    if missing:
        raise JudgesError(f"Column(s) {', '.join(missing)} not in the file; columns: "
                          f"{', '.join(map(str, frame.columns))}.")
    judge = frame[label_col].tolist()
    human = frame[human_col].tolist()
    given = categories is not None
    if categories is None:
        categories = list(dict.fromkeys(str(v).strip() for v in judge if not is_blank(v)))
    names = [str(c).strip() for c in categories]
    lookup = {normalise_name(c): i for i, c in enumerate(names)}
    if len(lookup) < 2:
        source = "the list given" if given else f"the labels in {label_col!r}"
        raise JudgesError(f"Agreement needs at least two categories; {source} has "
                          f"{', '.join(names) or 'none'}. Give the category list.")
    codes_j, codes_h, n_missing = [], [], 0
    unknown_j: dict[str, int] = {}
    unknown_h: dict[str, int] = {}
    for a, b in zip(judge, human, strict=True):
        if is_blank(a) or is_blank(b):
            n_missing += 1
            continue
        ia, ib = lookup.get(normalise_name(str(a))), lookup.get(normalise_name(str(b)))
        if ia is None:
            unknown_j[str(a)] = unknown_j.get(str(a), 0) + 1
        if ib is None:
            unknown_h[str(b)] = unknown_h.get(str(b), 0) + 1
        if ia is not None and ib is not None:
            codes_j.append(ia)
            codes_h.append(ib)
    n_unknown = sum(unknown_j.values()) + sum(unknown_h.values())
    n = len(codes_j)
    if (unknown_j or unknown_h) and (unknown == "error" or n == 0):
        parts = []
        if unknown_h:
            parts.append(f"human labels in {human_col!r} that are not categories: "
                         f"{_describe(unknown_h)}")
        if unknown_j:
            parts.append(f"labels in {label_col!r} that are not categories: "
                         f"{_describe(unknown_j)}")
        raise JudgesError(
            f"The labels do not match the categories {', '.join(names)} (compared "
            f"ignoring case, spaces, - and _): {'; '.join(parts)}. Correct the labels, give "
            "the full category list" + (", or leave such rows out (unknown='drop', "
                                        "--drop-unknown)." if n else "."))
    if n == 0:
        raise JudgesError(f"No row has both a {label_col!r} and a {human_col!r} label "
                          f"({n_missing} row(s) miss one).")
    k = len(names)
    cj, ch = np.asarray(codes_j), np.asarray(codes_h)
    confusion = np.bincount(ch * k + cj, minlength=k * k).reshape(k, k)
    kappa = cohen_kappa(confusion)
    lo = hi = math.nan
    if ci == "analytic":
        se = cohen_kappa_se(confusion)
        if np.isfinite(se) and np.isfinite(kappa):
            z = float(stats.norm.ppf(0.5 + confidence / 2))
            lo, hi = max(-1.0, kappa - z * se), min(1.0, kappa + z * se)
    elif ci == "bootstrap" and np.isfinite(kappa):
        idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
        codes = (ch[idx] * k + cj[idx]) + np.arange(n_resamples)[:, None] * k * k
        tables = np.bincount(codes.ravel(), minlength=n_resamples * k * k).reshape(
            n_resamples, k, k)
        po = np.trace(tables, axis1=1, axis2=2) / n
        pe = (tables.sum(2) * tables.sum(1)).sum(1) / n ** 2
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = np.where(pe < 1, (po - pe) / (1 - pe), np.nan)
        draws = draws[np.isfinite(draws)]
        if len(draws) >= 0.5 * n_resamples:
            tail = (1 - confidence) / 2
            lo, hi = (float(v) for v in np.quantile(draws, [tail, 1 - tail]))
    rows = [{CATEGORY: ALL, LABEL_COLUMN: label_col, HUMAN_COLUMN: human_col, N: n,
             N_MISSING: n_missing, N_UNKNOWN: n_unknown, KAPPA: kappa, low(KAPPA): lo,
             high(KAPPA): hi, EXACT: float(np.trace(confusion)) / n, CI_METHOD: ci}]
    for i, name in enumerate(names):
        n_h, n_l, agreed = int(confusion[i].sum()), int(confusion[:, i].sum()), int(
            confusion[i, i])
        precision = agreed / n_l if n_l else math.nan
        recall = agreed / n_h if n_h else math.nan
        f1 = (2 * precision * recall / (precision + recall)
              if n_l and n_h and precision + recall > 0 else (0.0 if n_l and n_h else math.nan))
        rows.append({CATEGORY: name, LABEL_COLUMN: label_col, HUMAN_COLUMN: human_col,
                     N_HUMAN: n_h, N_LABELLED: n_l, AGREED: agreed, PRECISION: precision,
                     RECALL: recall, F1: f1, CI_METHOD: ci})
    table = pd.DataFrame(rows, columns=list(CATEGORY_AGREEMENT_COLUMNS))
    for col in (N, N_MISSING, N_UNKNOWN, N_HUMAN, N_LABELLED, AGREED):
        table[col] = table[col].astype("Int64")
    matrix = pd.DataFrame(confusion, index=pd.Index(names, name=f"{human_col} (human)"),
                          columns=pd.Index(names, name=f"{label_col} (categoriser)"))
    return CategoryAgreement(table=table, confusion=matrix)
