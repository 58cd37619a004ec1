"""Paired comparison of models (or settings) answering the same prompts (``docs/compare.md``).

Every model of a benchmark usually answers the same prompts: the strongest design there
is, because each prompt is its own control. This module pairs the rows of two values of
a factor (``by``, e.g. the model or the input format) on the *prompt unit* and compares
them on the pairs only:

- **Pairing** (:func:`pair_units`): the unit is the design's ``prompt_unit`` when it is
  declared; else an id column of the table that identifies one row per value of ``by``
  (``example_id``, ``prompt_id`` ...); else the design's domain and prompt factors
  without ``by`` (then several rows share a unit and are averaged). Which one was used,
  and why, is in :attr:`Pairing.note`. A unit answered several times by one model is a
  *duplicate*: ``duplicates="mean"`` (default) averages its outcomes, ``"refuse"``
  raises :class:`~analysis.errors.PairingError`. Rows whose unit the other model did
  not answer are *unpaired*: counted per pair (``unpaired_a`` / ``unpaired_b``), never
  silently dropped.
- **Overall** (:func:`compare_overall`), per pair (a, b), difference = b - a:

  - a 0/1 outcome: the four counts of the paired 2x2 table (``only_a`` = a deviates and
    b does not, i.e. "biased under a, not biased under b"; ``only_b`` the reverse),
    McNemar's test (exact binomial on the discordant pairs when they are fewer than
    :data:`EXACT_BELOW`, the chi-square with continuity correction otherwise; both as
    ``statsmodels.stats.contingency_tables.mcnemar``), the difference in deviation
    rate with the Agresti-Min (2005) adjusted Wald interval, and the conditional odds
    ratio ``only_b / only_a`` with its exact (Clopper-Pearson) interval. With a cluster
    (``Design.cluster``: template, ...) the pairs are not independent: the test is
    Durkalski et al.'s (2003) clustered McNemar and the interval cluster-robust (t with
    G - 1 df).
  - a score: the mean paired difference with a t interval, the paired t test and the
    Wilcoxon signed-rank test (as :func:`scipy.stats.ttest_rel` and
    :func:`scipy.stats.wilcoxon`); with a cluster, a cluster-robust t (G - 1 df).
  - several pairs: p-values adjusted together (Holm by default, or Benjamini-Hochberg).
- **Per subgroup** (:func:`compare_subgroups`), for one pair: the paired difference in
  deviation rate (or mean score) and, for a 0/1 outcome, in log disparity
  (``LD_b - LD_a``), each with a percentile bootstrap interval that resamples prompt
  units (both models' answers to a prompt stay together); p-values from the bootstrap
  z = estimate / SE, adjusted across the subgroups by ``subgroup_adjust`` (default
  Benjamini-Hochberg, any method of :mod:`analysis.multiple_testing`). With a cluster, whole
  clusters are resampled and each subgroup on k clusters gets the spread expanded by
  sqrt(k / (k - 1)) with t on k - 1 df (none for k < 2; ``paired_bootstrap``).
  ``verdicts_differ`` flags subgroups whose own LD verdict (adjusted p < alpha, on
  the paired prompts) holds for one model and not the other.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np
import pandas as pd

from analysis.columns import DEVIATION, LEVEL, SUBGROUP, N
from analysis.errors import AnalysisError, PairingError
from analysis.multiple_testing import METHODS, Method, check_method, holm
from analysis.multiple_testing import NAMES as ADJUSTMENT_NAMES

__all__ = [
    "ADJUSTMENTS", "ADJUSTMENT_NAMES", "Adjust", "BOTH", "CI_HIGH", "CI_LOW", "Comparison",
    "DEFAULT_N_BOOT",
    "DIFFERENCE", "DIFFERS", "DUPLICATE_RULES", "Duplicates", "EXACT_BELOW", "LD_A", "LD_B",
    "LD_CI_HIGH", "LD_CI_LOW", "LD_DIFFERENCE", "LD_P_ADJUSTED", "LD_P_VALUE", "MCNEMAR_P",
    "MCNEMAR_STATISTIC", "MCNEMAR_TESTS", "MEAN_A", "MEAN_B", "MODEL_A", "MODEL_B",
    "McNemarTest", "NEITHER", "N_CLUSTERS", "N_PAIRS", "ODDS_RATIO", "ONLY_A", "ONLY_B",
    "OR_CI_HIGH", "OR_CI_LOW", "OR_DF", "OUTCOME_A", "OUTCOME_B", "P_ADJUSTED", "P_VALUE",
    "Pairing",
    "RATE_A", "RATE_B", "SIGNIFICANT_A", "SIGNIFICANT_B", "STATISTIC", "SUBGROUP_ADJUST",
    "TEST", "TEST_NAMES",
    "UNPAIRED_A", "UNPAIRED_B", "VERDICTS_DIFFER", "WILCOXON_P", "WILCOXON_STATISTIC",
    "adjust_p", "agresti_min_interval", "cluster_mean_difference", "cluster_odds_ratio",
    "compare", "compare_overall",
    "compare_pairing", "compare_subgroups", "conditional_odds_ratio", "describe",
    "subgroup_notes",
    "durkalski_test", "holm", "infer_unit", "mcnemar_test", "pair_units", "paired_bootstrap",
]


McNemarTest = Literal["auto", "exact", "chi2"]
MCNEMAR_TESTS: tuple[str, ...] = get_args(McNemarTest)
Adjust = Method  # the multiple-testing kernel's methods (Holm is Compare's default)
ADJUSTMENTS: tuple[str, ...] = ("holm", *(m for m in METHODS if m != "holm"))
#: The default adjustment of the subgroup tables' ``p_adjusted`` and ``ld_p_adjusted``
#: (and of each value's own LD verdict) across the subgroups of a pair: the option
#: ``subgroup_adjust`` (any method of :mod:`analysis.multiple_testing`), apart from
#: ``adjust`` (which adjusts the pairs of the overall table).
SUBGROUP_ADJUST = "bh"
Duplicates = Literal["mean", "refuse"]
DUPLICATE_RULES: tuple[str, ...] = get_args(Duplicates)
#: ``test="auto"``: McNemar's exact binomial test below this many discordant pairs.
EXACT_BELOW = 25
#: The defaults of :func:`compare` (declared with the options: ``analysis/options/compare.py``).
from analysis.options.compare import CompareOptions as _Options  # noqa: E402

_DEFAULT = _Options()
#: Default bootstrap replicates of the per-subgroup intervals.
DEFAULT_N_BOOT: int = _DEFAULT.n_resamples
#: Names of id columns tried as the prompt unit when the design declares none.
_ID_NAME = re.compile(r"(^|[_\-\s])(id|uid|key)$|^id$|^(example|prompt|item|sample|question|"
                      r"doc|instance)(_?(id|index|idx|no|number))?$", re.IGNORECASE)
#: Bootstrap weights are drawn in blocks of this many replicates x elements.
_BLOCK = 4_000_000
#: Up to this many resampled elements, replicate weights are drawn as multinomial counts.
_FEW_ELEMENTS = 64

# --- column names of the outputs ---------------------------------------------------------
MODEL_A, MODEL_B = "model_a", "model_b"
N_PAIRS = "n_pairs"
UNPAIRED_A, UNPAIRED_B = "unpaired_a", "unpaired_b"
BOTH, ONLY_A, ONLY_B, NEITHER = "both_deviate", "only_a", "only_b", "neither_deviates"
RATE_A, RATE_B = "rate_a", "rate_b"
MEAN_A, MEAN_B = "mean_a", "mean_b"
DIFFERENCE = "difference"
CI_LOW, CI_HIGH = "ci_low", "ci_high"
ODDS_RATIO, OR_CI_LOW, OR_CI_HIGH = "odds_ratio", "or_ci_low", "or_ci_high"
#: With a cluster: the Satterthwaite df of the odds ratio's CR2 interval.
OR_DF = "or_df"
TEST, STATISTIC, P_VALUE, P_ADJUSTED = "test", "statistic", "p_value", "p_adjusted"
WILCOXON_STATISTIC, WILCOXON_P = "wilcoxon_statistic", "wilcoxon_p_value"
N_CLUSTERS = "n_clusters"
MCNEMAR_STATISTIC, MCNEMAR_P = "mcnemar_statistic", "mcnemar_p_value"
LD_A, LD_B, LD_DIFFERENCE = "ld_a", "ld_b", "ld_difference"
LD_CI_LOW, LD_CI_HIGH, LD_P_VALUE, LD_P_ADJUSTED = ("ld_ci_low", "ld_ci_high", "ld_p_value",
                                                    "ld_p_adjusted")
DIFFERS, SIGNIFICANT_A, SIGNIFICANT_B, VERDICTS_DIFFER = ("differs", "significant_a",
                                                          "significant_b", "verdicts_differ")
_CLUSTER = "__cluster__"
#: How the readings name the tests of the ``test`` column.
TEST_NAMES = {"mcnemar_exact": "McNemar's exact test", "mcnemar_chi2": "McNemar's chi-square test",
              "durkalski": "Durkalski's clustered McNemar test", "paired_t": "paired t test",
              "cluster_t": "cluster-robust t test"}
#: Columns of :meth:`Pairing.paired`: the two models' outcomes per unit.
OUTCOME_A, OUTCOME_B = "__outcome_a__", "__outcome_b__"


@dataclass
class Pairing:
    """Rows of a results table paired on the prompt unit (:func:`pair_units`).

    Attributes
    ----------
    by
        The compared factor (its values are the "models").
    values
        Its values that have at least one row with an outcome, in the factor's order.
    unit
        The columns whose combinations are the prompt units.
    unit_source
        ``"given"``, ``"design"`` (``Design.prompt_unit``), ``"id column"`` (inferred)
        or ``"factors"`` (the design's domain/prompt factors; several rows per unit).
    note
        One sentence saying what was paired on and why.
    outcome
        ``"binary"`` (0/1 per unit) or ``"score"`` (a numeric score, or a 0/1 outcome
        averaged over duplicates into shares).
    wide
        One row per unit: the unit columns, the prompt-level factors and ``__cluster__``
        (the cluster's code, when clustered).
    outcomes
        The same rows, one float column per value of ``by``: its outcome (the mean over
        duplicates), NaN where that value did not answer the unit.
    counts
        One row per value of ``by``: ``rows`` (with an outcome), ``missing_outcome``
        (rows without one, left out), ``missing_unit`` (rows whose unit columns are
        missing, left out), ``units`` and ``duplicate_units`` (units it
        answered more than once) and ``duplicate_rows`` (the extra rows averaged).
    cluster
        The cluster column (constant within a unit), or None.
    duplicates
        The rule applied to duplicates (``"mean"`` or ``"refuse"``).
    notes
        Further plain-language notes (duplicates averaged, shares analysed as scores,
        rows without a unit, a design cluster set aside).
    factors
        The prompt-level factors kept per unit (columns of :attr:`wide`).
    """

    by: str
    values: list[str]
    unit: list[str]
    unit_source: str
    note: str
    outcome: str
    wide: pd.DataFrame
    outcomes: pd.DataFrame
    counts: pd.DataFrame
    cluster: str | None = None
    duplicates: str = "mean"
    notes: list[str] = field(default_factory=list)
    factors: list[str] = field(default_factory=list)

    @property
    def resampled(self) -> str:
        """What the bootstrap resamples: ``"prompt units"`` or ``"clusters of <col>"``."""
        return f"clusters of {self.cluster}" if self.cluster else "prompt units"

    def pairs(self, reference: str | None = None) -> list[tuple[str, str]]:
        """The compared pairs (a, b): every value against ``reference`` (a = reference),
        or every pair of values in the factor's order."""
        if reference is not None:
            reference = str(reference)
            if reference not in self.values:
                raise PairingError(
                    f"The reference {reference!r} is not among the values of {self.by!r} "
                    f"with an outcome ({', '.join(self.values)}).")
            return [(reference, v) for v in self.values if v != reference]
        return list(itertools.combinations(self.values, 2))

    def paired(self, a: str, b: str) -> pd.DataFrame:
        """The units both ``a`` and ``b`` answered (with an outcome): the rows of
        :attr:`wide` with a's and b's outcomes in ``__outcome_a__`` / ``__outcome_b__``."""
        self._check_value(a)
        self._check_value(b)
        if a == b:
            raise PairingError(f"Compare two different values of {self.by!r}, not {a!r} "
                               "with itself.")
        keep = (self.outcomes[a].notna() & self.outcomes[b].notna()).to_numpy()
        out = self.wide[keep].copy()
        out[OUTCOME_A] = self.outcomes[a].to_numpy()[keep]
        out[OUTCOME_B] = self.outcomes[b].to_numpy()[keep]
        return out

    def unpaired(self, a: str, b: str) -> tuple[int, int]:
        """Units answered by ``a`` only and by ``b`` only."""
        has_a, has_b = self.outcomes[a].notna(), self.outcomes[b].notna()
        return int((has_a & ~has_b).sum()), int((has_b & ~has_a).sum())

    def _check_value(self, value: str) -> None:
        if value not in self.values:
            raise PairingError(f"{value!r} is not among the values of {self.by!r} with an "
                               f"outcome ({', '.join(self.values)}).")


# --- pairing ------------------------------------------------------------------------------
def _id_candidates(results: pd.DataFrame, by: str, skip: set[str]) -> list[str]:
    """Id-like columns (by name) without missing values, nearly unique within each value of
    ``by`` (at least half as many distinct values as rows); those recurring across values
    first, then the most distinct."""
    found = []
    # integer codes (missing values of by: -1, in no group), as groupby(by).nunique() counts
    by_codes = pd.factorize(results[by])[0]
    grouped = by_codes >= 0
    by_codes = by_codes[grouped]
    sizes = np.bincount(by_codes)
    observed = sizes > 0
    for col in results.columns:
        if col in skip or not _ID_NAME.search(str(col)) or results[col].isna().any():
            continue
        codes, uniques = pd.factorize(results[col])
        total = len(uniques)  # no missing value: the number of distinct values
        # distinct values per group: the distinct (group, value) pairs counted per group
        pairs = by_codes.astype(np.int64) * total + codes[grouped]
        if len(sizes) * total <= 1 << 24:  # the pairs seen in a boolean table: no hashing
            seen = np.zeros(len(sizes) * total, dtype=bool)
            seen[pairs] = True
            distinct = np.count_nonzero(seen.reshape(len(sizes), total), axis=1)
        else:
            distinct = np.bincount(pd.unique(pairs) // total, minlength=len(sizes))
        if (distinct[observed] < 0.5 * sizes[observed]).any():
            continue
        # ids recurring across the values of by first (those pair), then the most distinct
        found.append((total == len(results), -total, col))
    return [c for *_, c in sorted(found)]


def infer_unit(results: pd.DataFrame, design, by: str) -> tuple[list[str], str, str]:
    """The prompt unit for pairing the values of ``by``: (columns, source, note).

    ``Design.prompt_unit`` when declared (without ``by``); else an id-like column
    (``example_id``, ``prompt_id`` ...) unique within each value of ``by`` and shared
    across values; else the design's domain and prompt factors without ``by``.
    """
    if design is not None and design.prompt_unit:
        unit = [c for c in design.prompt_unit if c != by]
        if not unit:
            raise PairingError(f"The design's prompt unit is {by!r} itself: name the columns "
                               "that identify a prompt (e.g. an example id).")
        return unit, "design", f"Paired on the design's prompt unit: {', '.join(unit)}."
    factors = set(design.names) if design is not None else set()
    ids = _id_candidates(results, by, factors | {by, DEVIATION})
    if ids:
        return [ids[0]], "id column", (
            f"The design declares no prompt unit: paired on the id column {ids[0]!r} (its "
            f"values recur across the values of {by!r}; declare prompt_unit in the design "
            "to choose another).")
    unit = [c for c in (design.prompt_unit_columns() if design is not None else []) if c != by]
    if not unit:
        raise PairingError(
            f"Nothing identifies a prompt: the design declares no prompt unit, the table has "
            f"no id column and no factor besides {by!r}. Declare prompt_unit in the design "
            "(or pass unit=...).")
    return unit, "factors", (
        f"The design declares no prompt unit and the table has no id column: paired on the "
        f"combinations of {', '.join(unit)} (rows sharing one are averaged).")


def pair_units(
    results: pd.DataFrame,
    design,
    by: str,
    *,
    unit: Sequence[str] | None = None,
    score: str | None = None,
    factors: Sequence[str] = (),
    cluster: str | None = _DEFAULT.cluster,
    duplicates: Duplicates = _DEFAULT.duplicates,
    inferred: tuple[list[str], str, str] | None = None,
) -> Pairing:
    """Pair the rows of each value of ``by`` on the prompt unit.

    Parameters
    ----------
    results
        The results table from :func:`analysis.design.apply_design` (``deviation``
        column for a 0/1 outcome).
    design
        The :class:`~analysis.design.Design` applied (its prompt unit and cluster).
    by
        The compared factor (model, input format, temperature ...).
    unit
        Columns identifying a prompt; default :func:`infer_unit`.
    score
        A numeric column to compare instead of the 0/1 deviation.
    factors
        Prompt-level factors kept per unit for :func:`compare_subgroups` (each must
        take one value per unit).
    cluster
        ``analysis.options.FROM_DESIGN`` (default; ``"design"`` means the same):
        ``Design.cluster``, left aside with a note when it is the
        compared factor, absent or varies within a unit; a column name (then those are
        errors); or None (units independent).
    duplicates
        ``"mean"``: a unit answered several times by one value of ``by`` counts once,
        with the mean of its outcomes; ``"refuse"``: raise :class:`PairingError`.
    inferred
        With ``unit=None``: :func:`infer_unit` ``(results, design, by)`` when it is already
        known (it scans the id-like columns: the app keeps it per table, subset and
        ``by``, so a change of outcome, factors or duplicates does not scan them again).

    Returns
    -------
    Pairing

    Raises
    ------
    PairingError
        ``by`` unknown or with one value, no outcome, a unit column or factor missing, a
        factor or cluster varying within a unit, duplicates with ``"refuse"``, values
        sharing no unit.
    """
    if duplicates not in DUPLICATE_RULES:
        raise PairingError(f"Unknown duplicate rule {duplicates!r}: use "
                           f"{' or '.join(DUPLICATE_RULES)}.")
    if by not in results.columns:
        raise PairingError(f"{by!r} is not a column of the table; compare by one of the "
                           f"design's factors ({', '.join(design.names) if design else ''}).")
    factors = list(factors)
    if by in factors:
        raise PairingError(f"{by!r} is the compared factor; it cannot also form the "
                           "subgroups.")
    missing = [f for f in factors if f not in results.columns]
    if missing:
        raise PairingError(f"Not columns of the table: {', '.join(missing)}.")
    value_col = score if score is not None else DEVIATION
    if value_col not in results.columns:
        raise PairingError("There is no outcome to compare: give the design an outcome (how a "
                           "row counts as a deviation) or name a numeric score column."
                           if score is None else f"{score!r} is not a column of the table.")
    values_all = pd.to_numeric(results[value_col], errors="coerce") if score else \
        results[value_col].astype(float)
    if score is not None and results[score].notna().sum() > values_all.notna().sum():
        raise PairingError(f"The score column {score!r} holds values that are not numbers.")
    if unit is None:
        unit_cols, source, note = inferred or infer_unit(results, design, by)
    else:
        unit_cols = [c for c in unit if c != by]
        source, note = "given", f"Paired on {', '.join(unit_cols)}."
        if not unit_cols:
            raise PairingError(f"The prompt unit cannot be {by!r} itself.")
    if source == "given":  # a missing column, a row id, a unit mixing prompts: each said
        from analysis.prompt_unit import check_prompt_unit

        check_prompt_unit(results, unit_cols, design, by)
    absent = [c for c in unit_cols if c not in results.columns]
    if absent:
        raise PairingError(f"The prompt unit names columns the table lacks: {', '.join(absent)}.")
    from_design = cluster in (_DEFAULT.cluster, "design")
    if from_design:
        cluster = getattr(design, "cluster", None)
    cluster_note = None
    if from_design and cluster is not None and (cluster == by or cluster not in results.columns):
        cluster_note = (f"The design's cluster {cluster!r} "
                        + ("is the compared factor" if cluster == by else "is not in the table")
                        + ": the pairs are treated as independent.")
        cluster = None
    if cluster is not None:
        if cluster == by:
            raise PairingError(f"The cluster {cluster!r} is the compared factor: the pairs "
                               "would never share a cluster. Choose no cluster or another.")
        if cluster not in results.columns:
            raise PairingError(f"The cluster column {cluster!r} is not in the table.")
    by_codes, by_values = _codes(results[by])
    valued = by_codes[by_codes >= 0]
    if not len(valued) or valued.min() == valued.max():  # fewer than two values
        raise PairingError(f"{by!r} has a single value in these rows "
                           f"({', '.join(sorted(set(results[by].astype(str))))}): there is "
                           "nothing to compare. Choose a factor with two or more values.")
    keep = values_all.notna().to_numpy()
    frame = results[list(dict.fromkeys([*unit_cols, *factors, *([cluster] if cluster else [])]))
                    ].reset_index(drop=True)  # no copy to object arrays of the whole table
    no_unit = frame[unit_cols].isna().any(axis=1).to_numpy()  # no prompt to pair on
    keep = keep & ~no_unit
    unit_codes, first_row = _unit_codes(frame, unit_cols)
    n_units = len(first_row)

    def unit_label(u: int) -> str:
        return _unit_label(tuple(str(frame[c].iloc[first_row[u]]) for c in unit_cols)
                           if len(unit_cols) > 1 else str(frame[unit_cols[0]].iloc[first_row[u]]))
    cluster_codes = None
    for col in [*factors, *([cluster] if cluster else [])]:
        codes, _ = _codes(frame[col])
        if col == cluster:
            cluster_codes = codes  # (kept per unit below: one factorize of a text column)
        first = np.full(n_units, -2, dtype=np.int64)
        first[unit_codes[::-1]] = codes[::-1]
        varies = first[unit_codes] != codes
        if varies.any() and col == cluster and from_design:  # the default: said, not refused
            cluster_note = (f"The design's cluster {cluster!r} takes several values within "
                            "one prompt unit (it does not describe the prompt): the pairs are "
                            "treated as independent.")
            cluster = None
            continue
        if varies.any():
            i = int(np.flatnonzero(varies)[0])
            what = "cluster" if col == cluster else "factor"
            raise _with_pairing_unit(
                f"The {what} {col!r} takes several values within one prompt unit "
                f"({', '.join(unit_cols)} = {unit_label(unit_codes[i])}): pairing "
                f"compares the answers to the same prompt, so a {what} must describe the "
                "prompt. Choose prompt-level factors or declare a finer prompt_unit.",
                results, design, by, score)
    # per (unit, value of by): sum and count of the outcome
    n_by = len(by_values)
    cell = unit_codes.astype(np.int64) * n_by + by_codes
    ok = keep & (by_codes >= 0)
    sums = np.bincount(cell[ok], weights=values_all.to_numpy()[ok], minlength=n_units * n_by)
    cnts = np.bincount(cell[ok], minlength=n_units * n_by)
    sums, cnts = sums.reshape(n_units, n_by), cnts.reshape(n_units, n_by)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(cnts > 0, sums / np.maximum(cnts, 1), np.nan)
    missing_rows = np.bincount(by_codes[~keep & ~no_unit & (by_codes >= 0)], minlength=n_by)
    missing_unit = np.bincount(by_codes[no_unit & (by_codes >= 0)], minlength=n_by)
    counts = pd.DataFrame({
        by: by_values,
        "rows": cnts.sum(axis=0),
        "missing_outcome": missing_rows,
        "missing_unit": missing_unit,
        "units": (cnts > 0).sum(axis=0),
        "duplicate_units": (cnts > 1).sum(axis=0),
        "duplicate_rows": np.maximum(cnts - 1, 0).sum(axis=0),
    })
    present = [v for v, r in zip(by_values, counts["rows"], strict=True) if r > 0]
    if len(present) < 2:
        raise PairingError(f"Only {', '.join(present) or 'no value'} of {by!r} has rows with "
                           "an outcome: there is nothing to compare.")
    notes: list[str] = [cluster_note] if cluster_note else []
    if missing_unit.any():
        notes.append(f"{int(missing_unit.sum()):,} rows have no {', '.join(unit_cols)} (no "
                     "prompt to pair them on) and are left out.")
    dup = int(counts["duplicate_units"].sum())
    if dup:
        worst = counts.sort_values("duplicate_units", ascending=False).iloc[0]
        where = np.argwhere(cnts > 1)[0]
        example = (f"e.g. {unit_label(where[0])} answered "
                   f"{int(cnts[where[0], where[1]])} times by {by_values[where[1]]}")
        if duplicates == "refuse":
            raise PairingError(
                f"{dup:,} prompt units are answered more than once by the same value of "
                f"{by!r} ({example}; most under {worst[by]}: {int(worst['duplicate_units']):,})."
                " Declare a finer prompt_unit, or average them (duplicates='mean').")
        notes.append(f"{dup:,} prompt units are answered more than once by one value of "
                     f"{by!r} ({example}): each counts once, with the mean of its outcomes.")
    wide = pd.DataFrame(index=pd.RangeIndex(n_units))
    for col in unit_cols:
        wide[col] = frame[col].iloc[first_row].to_numpy()
    for col in factors:
        src = results[col]
        wide[col] = src.iloc[first_row].to_numpy() if not isinstance(
            src.dtype, pd.CategoricalDtype) else pd.Categorical.from_codes(
            src.cat.codes.to_numpy()[first_row], categories=src.cat.categories,
            ordered=src.cat.ordered)
    if cluster:
        wide[_CLUSTER] = cluster_codes[first_row]
    outcomes = pd.DataFrame({v: means[:, j] for j, v in enumerate(by_values) if v in present})
    outcome = "score" if score is not None else "binary"
    if outcome == "binary":
        observed = means[~np.isnan(means)]
        if ((observed != 0) & (observed != 1)).any():
            outcome = "score"
            notes.append("Averaging duplicates gives shares between 0 and 1: the outcome is "
                         "compared as a score (mean paired difference, paired t and Wilcoxon "
                         "tests) instead of McNemar's test.")
    pairing = Pairing(by=by, values=present, unit=unit_cols, unit_source=source, note=note,
                      outcome=outcome, wide=wide, outcomes=outcomes, counts=counts, cluster=cluster,
                      duplicates=duplicates, notes=notes, factors=factors)
    if not any(len(pairing.paired(*p)) for p in pairing.pairs()):  # stops at the first
        raise _with_pairing_unit(
            f"The values of {by!r} share no prompt: no {', '.join(unit_cols)} is answered by "
            f"two of them ({', '.join(present)}). A paired comparison needs the same prompts "
            "under each value; check the prompt unit.", results, design, by, score)
    return pairing


def _with_pairing_unit(message: str, results: pd.DataFrame, design, by: str,
                       score: str | None) -> PairingError:
    """The error of a failed pairing, with the unit that would pair when there is one
    (:func:`analysis.prompt_unit.pairing_unit`; its ``suggested_unit``)."""
    from analysis.errors import PromptUnitError
    from analysis.prompt_unit import pairing_unit, use_unit_hint

    found = pairing_unit(results, design, by, exclude=[score] if score else ())
    if not found:
        return PairingError(message)
    return PromptUnitError(f"{message} Instead, {use_unit_hint(found)}", suggested_unit=found)


def _unit_codes(frame: pd.DataFrame, unit_cols: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The prompt unit of every row (numbered in order of first appearance, as
    ``pd.factorize`` of the rows' values as text numbers them) and each unit's first row.

    Each column is factorised on its own (categorical codes, Arrow strings or numbers
    directly, never one Python string per row), then the combined code is numbered by
    first appearance (:func:`_first_appearance`: marks instead of a hash table when the
    combined codes are few; issue 44 item 3, the Compare page at 1M rows).
    """
    key = np.zeros(len(frame), dtype=np.int64)
    space = 1  # the combined key lies in [0, space)
    for col in unit_cols:
        s = frame[col]
        if isinstance(s.dtype, pd.CategoricalDtype):
            codes, size = s.cat.codes.to_numpy(dtype=np.int64), len(s.cat.categories)
        elif isinstance(s.dtype, pd.StringDtype) or pd.api.types.is_numeric_dtype(s.dtype):
            codes, uniques = pd.factorize(s)  # the same groups as their text
            size = len(uniques)
        else:  # mixed objects: group by their text, as before
            codes, uniques = pd.factorize(s.astype(str).where(s.notna(), None))
            size = len(uniques)
        if space * (size + 1) >= 2**62:  # renumbered, so the key stays below rows x values
            key, space = _first_appearance(key, space)
        key = key * (size + 1) + (codes.astype(np.int64) + 1)  # missing: 0
        space *= size + 1
    unit_codes, n_units = _first_appearance(key, space)
    first_row = np.full(n_units, -1, dtype=np.int64)
    first_row[unit_codes[::-1]] = np.arange(len(frame))[::-1]
    return unit_codes, first_row


def _first_appearance(key: np.ndarray, space: int) -> tuple[np.ndarray, int]:
    """``pd.factorize(key)``'s codes (the distinct keys numbered in order of first
    appearance) and their number, for keys in ``[0, space)``: by marking each key's first
    row (one O(rows) pass) when ``space`` is at most about twice the rows, else by
    ``pd.factorize``."""
    n = len(key)
    if space > 2 * n + (1 << 16):
        codes, uniques = pd.factorize(key)
        return codes.astype(np.int64), len(uniques)
    first = np.full(space, n, dtype=np.int64)
    first[key[::-1]] = np.arange(n - 1, -1, -1)  # the last write, the first row, stays
    present = np.flatnonzero(first < n)
    rank = np.zeros(space, dtype=np.int64)
    rank[present[np.argsort(first[present])]] = np.arange(len(present))
    return rank[key], len(present)


def _codes(series: pd.Series) -> tuple[np.ndarray, list[str]]:
    if isinstance(series.dtype, pd.CategoricalDtype):
        return (series.cat.codes.to_numpy(dtype=np.int64),
                [str(c) for c in series.cat.categories])
    if isinstance(series.dtype, pd.StringDtype):  # text already: the same codes, sorted
        codes, uniques = pd.factorize(series, sort=True)
        return codes.astype(np.int64), [str(u) for u in uniques]
    codes, uniques = pd.factorize(series.astype(str).where(series.notna(), None), sort=True)
    return codes.astype(np.int64), [str(u) for u in uniques]


def _unit_label(value) -> str:  # noqa: ANN001 - a scalar or a tuple of the unit's values
    return " / ".join(map(str, value)) if isinstance(value, tuple) else str(value)


# --- multiple testing ---------------------------------------------------------------------
def adjust_p(p_values: np.ndarray | Sequence[float], method: Adjust) -> np.ndarray:
    """Adjusted p-values of the pairs (one of :data:`ADJUSTMENTS`;
    :func:`analysis.multiple_testing.adjust_p`)."""
    from analysis.multiple_testing import adjust_p as kernel

    check_method(method, ADJUSTMENTS)
    return kernel(p_values, method)


# --- overall tests ------------------------------------------------------------------------
def mcnemar_test(only_a: int, only_b: int, *, test: McNemarTest = "auto"
                 ) -> tuple[str, float, float]:
    """McNemar's test on the discordant counts: (test name, statistic, p-value).

    ``"exact"``: the binomial test of ``min(only_a, only_b)`` out of ``only_a + only_b``
    at 1/2 (statistic = that minimum); ``"chi2"``: ``(|only_a - only_b| - 1)^2 / (only_a
    + only_b)`` on 1 df; ``"auto"``: exact below :data:`EXACT_BELOW` discordant pairs.
    The same numbers as R's ``mcnemar.test`` (and statsmodels' ``mcnemar(table,
    exact=..., correction=True)`` except for b = c, where the correction is not applied:
    statistic 0, p = 1, as R). No discordant pair: p = 1.
    """
    from scipy import stats

    if test not in MCNEMAR_TESTS:
        raise AnalysisError(f"Unknown test {test!r}: use one of {', '.join(MCNEMAR_TESTS)}.")
    b, c = int(only_a), int(only_b)
    n = b + c
    exact = test == "exact" or (test == "auto" and n < EXACT_BELOW)
    if exact:
        k = min(b, c)
        p = 1.0 if n == 0 else min(1.0, 2 * float(stats.binom.cdf(k, n, 0.5)))
        return "mcnemar_exact", float(k), p
    if n == 0:
        return "mcnemar_chi2", 0.0, 1.0
    # Yates' correction only when the counts differ (R's mcnemar.test): with b = c the
    # statistic is 0 and p = 1 (statsmodels' (|b - c| - 1)^2 / n would give 1 / n)
    stat = (abs(b - c) - 1.0) ** 2 / n if b != c else 0.0
    return "mcnemar_chi2", float(stat), float(stats.chi2.sf(stat, 1))


def durkalski_test(only_a: np.ndarray, only_b: np.ndarray) -> tuple[float, float]:
    """Durkalski et al. (2003) clustered McNemar test from the discordant counts of each
    cluster: ``X^2 = (sum_k (b_k - c_k))^2 / sum_k (b_k - c_k)^2`` on 1 df."""
    from scipy import stats

    d = np.asarray(only_a, float) - np.asarray(only_b, float)
    denom = float((d ** 2).sum())
    if denom == 0:
        return 0.0, 1.0
    stat = float(d.sum() ** 2 / denom)
    return stat, float(stats.chi2.sf(stat, 1))


def agresti_min_interval(n11: int, n10: int, n01: int, n00: int, confidence: float = 0.95
                         ) -> tuple[float, float]:
    """Agresti & Min (2005) interval of the paired difference p_b - p_a: the Wald
    interval after adding 0.5 to each cell of the paired 2x2 table (``n10`` = only a
    deviates, ``n01`` = only b)."""
    from scipy import stats

    b, c = n10 + 0.5, n01 + 0.5
    n = n11 + n10 + n01 + n00 + 2.0
    diff = (c - b) / n
    var = ((b + c) / n - diff ** 2) / n
    z = stats.norm.ppf(0.5 + confidence / 2)
    half = z * math.sqrt(max(var, 0.0))
    return max(-1.0, diff - half), min(1.0, diff + half)


def conditional_odds_ratio(only_a: int, only_b: int, confidence: float = 0.95
                           ) -> tuple[float, float, float]:
    """Conditional (McNemar) odds ratio ``only_b / only_a`` of deviating under b rather
    than a, with the exact interval from the Clopper-Pearson interval of the discordant
    split ``only_b / (only_a + only_b)`` (NaN without discordant pairs)."""
    from scipy import stats

    b, c = int(only_a), int(only_b)
    n = b + c
    if n == 0:
        return math.nan, math.nan, math.nan
    alpha = 1 - confidence
    lo = 0.0 if c == 0 else float(stats.beta.ppf(alpha / 2, c, n - c + 1))
    hi = 1.0 if c == n else float(stats.beta.ppf(1 - alpha / 2, c + 1, n - c))

    def odds(p: float) -> float:
        return math.inf if p >= 1 else p / (1 - p)

    ratio = math.inf if b == 0 else c / b
    return ratio, odds(lo), odds(hi)


def cluster_odds_ratio(only_a: np.ndarray, only_b: np.ndarray, confidence: float = 0.95
                       ) -> tuple[float, float, float, float]:
    """Cluster-robust interval of the conditional odds ratio ``sum only_b / sum only_a``.

    Among the discordant pairs, ``y = [only b deviates]`` has odds ``only_b / only_a``:
    the log odds ratio is the intercept of a logit on the discordant pairs, whose CR2
    standard error and Satterthwaite df (:class:`analysis.clusters.SmallSampleCR2`,
    clusters = the per-cluster discordant counts) give ``exp(log OR +- t_df SE)``.
    Returns (low, high, df, clusters with discordant pairs); NaN without discordant
    pairs on both sides or with fewer than 2 clusters holding them.
    """
    from analysis.clusters import DF_FLOOR, MIN_SUPPORTING_CLUSTERS, SmallSampleCR2, critical_value

    b, c = np.asarray(only_a, float), np.asarray(only_b, float)
    m = b + c
    k = int((m > 0).sum())
    nan = (math.nan, math.nan, math.nan, k)
    if k < MIN_SUPPORTING_CLUSTERS or b.sum() == 0 or c.sum() == 0:
        return nan
    keep = m > 0
    b, c, m = b[keep], c[keep], m[keep]
    p = c.sum() / m.sum()
    w = m * p * (1 - p)
    kernel = SmallSampleCR2((c - p * m)[:, None], np.array([[1 / w.sum()]]), w[:, None, None])
    row = kernel.t_tests(np.array([math.log(p / (1 - p))])).iloc[0]
    if not (row["df"] >= DF_FLOOR) or not row["std_err"] > 0:
        return nan
    half = float(critical_value(confidence, float(row["df"]))) * float(row["std_err"])
    est = float(row["estimate"])
    return math.exp(est - half), math.exp(est + half), float(row["df"]), k


def cluster_mean_difference(d: np.ndarray, clusters: np.ndarray, confidence: float = 0.95,
                            *, with_df: bool = False) -> tuple:
    """Mean of the paired differences ``d`` with a cluster-robust SE and t reference:
    (mean, low, high, p, G).

    The bias-reduced (CR2) SE of the intercept-only regression of ``d`` with its
    Satterthwaite df (:class:`analysis.clusters.SmallSampleCR2`: scores ``sum_g (d - mean)``,
    information ``n_g``); with clusters of equal size this is the CR1 ratio form
    ``G / (G - 1)`` with t on G - 1 df (statsmodels' cluster OLS, ``use_t=True``), with
    unequal ones the df are smaller (issue 38). ``with_df``: the Satterthwaite df is
    appended (mean, low, high, p, G, df); NaN with fewer than 2 clusters.
    """
    from scipy import stats

    from analysis.clusters import SmallSampleCR2

    d = np.asarray(d, float)
    codes, _ = pd.factorize(clusters)
    g = int(codes.max()) + 1 if len(codes) else 0
    mean = float(d.mean())
    if g < 2:
        return (mean, math.nan, math.nan, math.nan, g) + ((math.nan,) if with_df else ())
    resid = np.bincount(codes, weights=d - mean, minlength=g)
    sizes = np.bincount(codes, minlength=g).astype(float)
    kernel = SmallSampleCR2(resid[:, None], np.array([[1 / len(d)]]), sizes[:, None, None])
    se = math.sqrt(max(float(kernel.cov[0, 0]), 0.0))
    df = float(kernel.satterthwaite(np.eye(1))[0])
    extra = (df,) if with_df else ()
    if se == 0 or not np.isfinite(df):
        return (mean, mean, mean, (1.0 if mean == 0 else 0.0), g) + extra
    t = stats.t.ppf(0.5 + confidence / 2, df)
    p = float(2 * stats.t.sf(abs(mean) / se, df))
    return (mean, mean - t * se, mean + t * se, p, g) + extra


def compare_overall(
    pairing: Pairing,
    *,
    reference: str | None = None,
    test: McNemarTest = "auto",
    adjust: Adjust = "holm",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """One row per compared pair (a, b): paired counts, test, difference and interval.

    Parameters
    ----------
    pairing
        From :func:`pair_units`.
    reference
        Compare every value against this one (a = reference); None: every pair.
    test
        McNemar's test for a 0/1 outcome: ``"auto"`` (exact binomial below
        :data:`EXACT_BELOW` discordant pairs, chi-square with continuity correction
        otherwise), ``"exact"`` or ``"chi2"``. Ignored with a cluster (Durkalski's test).
    adjust
        ``"holm"`` (default) or ``"bh"``: the p-values of all pairs adjusted together.
    confidence
        Level of the intervals.

    Returns
    -------
    pandas.DataFrame
        Columns ``model_a``, ``model_b``, ``n_pairs`` (units both answered),
        ``unpaired_a`` / ``unpaired_b`` (units only one answered: left out), then for a
        0/1 outcome ``both_deviate``, ``only_a`` (a deviates, b does not: "biased ->
        not biased" going from a to b), ``only_b`` (the reverse), ``neither_deviates``,
        ``rate_a``, ``rate_b``, ``difference`` (rate_b - rate_a), ``ci_low`` /
        ``ci_high`` (Agresti-Min, or cluster-robust), ``odds_ratio`` (only_b / only_a)
        with ``or_ci_low`` / ``or_ci_high`` (exact; with a cluster the CR2 interval of
        :func:`cluster_odds_ratio`, its df in ``or_df``), ``test`` (``mcnemar_exact``,
        ``mcnemar_chi2`` or ``durkalski``), ``statistic``, ``p_value``, ``p_adjusted``
        (with a cluster also ``mcnemar_statistic`` / ``mcnemar_p_value``: McNemar's test
        as if the pairs were independent, for reference);
        for a score ``mean_a``, ``mean_b``, ``difference`` (mean of b - a), ``ci_low``
        / ``ci_high`` (t, or cluster-robust t), ``test`` (``paired_t`` or
        ``cluster_t``), ``statistic`` (t), ``p_value``, ``wilcoxon_statistic``,
        ``wilcoxon_p_value``, ``p_adjusted`` (of p_value). ``n_clusters`` with a cluster.
    """
    from scipy import stats

    if not 0 < confidence < 1:
        raise AnalysisError(f"The confidence level must be between 0 and 1, got {confidence}.")
    if adjust not in ADJUSTMENTS:
        raise AnalysisError(f"Unknown adjustment {adjust!r}: use {' or '.join(ADJUSTMENTS)}.")
    if test not in MCNEMAR_TESTS:
        raise AnalysisError(f"Unknown test {test!r}: use one of {', '.join(MCNEMAR_TESTS)}.")
    rows = []
    for a, b in pairing.pairs(reference):
        paired = pairing.paired(a, b)
        ua, ub = pairing.unpaired(a, b)
        row: dict = {MODEL_A: a, MODEL_B: b, N_PAIRS: len(paired), UNPAIRED_A: ua,
                     UNPAIRED_B: ub}
        xa, xb = paired[OUTCOME_A].to_numpy(), paired[OUTCOME_B].to_numpy()
        clusters = paired[_CLUSTER].to_numpy() if pairing.cluster else None
        if len(paired) == 0:
            rows.append(row)
            continue
        if pairing.outcome == "binary":
            n11 = int(((xa == 1) & (xb == 1)).sum())
            n10 = int(((xa == 1) & (xb == 0)).sum())
            n01 = int(((xa == 0) & (xb == 1)).sum())
            n00 = len(xa) - n11 - n10 - n01
            row |= {BOTH: n11, ONLY_A: n10, ONLY_B: n01, NEITHER: n00,
                    RATE_A: float(xa.mean()), RATE_B: float(xb.mean()),
                    DIFFERENCE: float(xb.mean() - xa.mean())}
            if clusters is None:
                row[CI_LOW], row[CI_HIGH] = agresti_min_interval(n11, n10, n01, n00,
                                                                 confidence)
                row[TEST], row[STATISTIC], row[P_VALUE] = mcnemar_test(n10, n01, test=test)
            else:
                codes, _ = pd.factorize(clusters)
                ba = np.bincount(codes, weights=(xa == 1) & (xb == 0))
                cb = np.bincount(codes, weights=(xa == 0) & (xb == 1))
                _, lo, hi, _, g = cluster_mean_difference(xb - xa, clusters, confidence)
                row[CI_LOW], row[CI_HIGH] = lo, hi
                row[TEST] = "durkalski"
                row[STATISTIC], row[P_VALUE] = durkalski_test(ba, cb)
                row[N_CLUSTERS] = g
                # McNemar's test as if the pairs were independent, for reference
                _, row[MCNEMAR_STATISTIC], row[MCNEMAR_P] = mcnemar_test(n10, n01, test=test)
            row[ODDS_RATIO], row[OR_CI_LOW], row[OR_CI_HIGH] = conditional_odds_ratio(
                n10, n01, confidence)
            if clusters is not None:  # the exact interval assumes independent pairs
                row[OR_CI_LOW], row[OR_CI_HIGH], row[OR_DF], _ = cluster_odds_ratio(
                    ba, cb, confidence)
        else:
            d = xb - xa
            row |= {MEAN_A: float(xa.mean()), MEAN_B: float(xb.mean()),
                    DIFFERENCE: float(d.mean())}
            if clusters is None:
                if len(d) > 1 and np.ptp(d) > 0:
                    res = stats.ttest_rel(xb, xa)
                    t = stats.t.ppf(0.5 + confidence / 2, len(d) - 1)
                    se = float(d.std(ddof=1) / math.sqrt(len(d)))
                    row |= {CI_LOW: float(d.mean() - t * se), CI_HIGH: float(d.mean() + t * se),
                            TEST: "paired_t", STATISTIC: float(res.statistic),
                            P_VALUE: float(res.pvalue)}
                else:  # every difference equal: no spread to test against
                    row |= {CI_LOW: float(d.mean()), CI_HIGH: float(d.mean()),
                            TEST: "paired_t", STATISTIC: math.nan,
                            P_VALUE: 1.0 if d.mean() == 0 else 0.0}
            else:
                mean, lo, hi, p, g = cluster_mean_difference(d, clusters, confidence)
                row |= {CI_LOW: lo, CI_HIGH: hi, TEST: "cluster_t", STATISTIC: math.nan,
                        P_VALUE: p, N_CLUSTERS: g}
            if (d != 0).any():
                w = stats.wilcoxon(xb, xa)
                row[WILCOXON_STATISTIC], row[WILCOXON_P] = float(w.statistic), float(w.pvalue)
            else:
                row[WILCOXON_STATISTIC], row[WILCOXON_P] = math.nan, 1.0
        rows.append(row)
    out = pd.DataFrame(rows)
    out[P_ADJUSTED] = adjust_p(out[P_VALUE].to_numpy(float), adjust) if P_VALUE in out else np.nan
    return out


# --- per subgroup -------------------------------------------------------------------------
def _subgroup_membership(codes: np.ndarray, factors: Sequence[str], values: Sequence[list[str]],
                         max_level: int) -> tuple[np.ndarray, pd.DataFrame]:
    """Membership (subgroups x cells) of the observed cells (rows of ``codes``, one column
    per factor) and the subgroup table (factor columns, ``level``, ``subgroup``)."""
    masks, rows = [], []
    for k in range(1, max_level + 1):
        for combo in itertools.combinations(range(len(factors)), k):
            sub = codes[:, combo]
            for tup in np.unique(sub, axis=0):
                masks.append((sub == tup).all(axis=1))
                row: dict = {factors[j]: values[j][t] for j, t in zip(combo, tup, strict=True)}
                row[LEVEL] = k
                row[SUBGROUP] = ", ".join(f"{factors[j]} = {values[j][t]}"
                                          for j, t in zip(combo, tup, strict=True))
                rows.append(row)
    table = pd.DataFrame(rows, columns=[*factors, LEVEL, SUBGROUP])
    for j, f in enumerate(factors):
        table[f] = pd.Categorical(table[f], categories=values[j], ordered=True)
    return np.array(masks, dtype=float).reshape(len(rows), len(codes)), table


def paired_bootstrap(
    n_ec: np.ndarray,
    a_ec: np.ndarray,
    b_ec: np.ndarray,
    member: np.ndarray,
    *,
    probabilities: np.ndarray | None = None,
    draws: int | None = None,
    n_resamples: int = DEFAULT_N_BOOT,
    seed: int = 0,
    confidence: float = 0.95,
    log_disparity: bool = True,
    clustered: bool = False,
) -> dict[str, np.ndarray]:
    """Point estimates and bootstrap intervals of per-subgroup paired differences.

    The resampled elements are the rows of ``n_ec`` / ``a_ec`` / ``b_ec`` (elements x
    cells): units, groups of identical units, or clusters. A replicate draws ``draws``
    elements with replacement with ``probabilities`` (default: ``len(n_ec)`` elements,
    equally likely), so a unit's two answers (or a cluster's) always move together.

    Parameters
    ----------
    n_ec, a_ec, b_ec
        Units, and sums of model a's and b's outcomes, per element and cell.
    member
        Subgroups x cells, 1 where the cell belongs to the subgroup.
    probabilities, draws
        The resampling law (see above).
    n_resamples, seed, confidence
        Replicates, seed of the generator, interval level.
    log_disparity
        Also bootstrap LD_b - LD_a (0/1 outcomes only).
    clustered
        The elements are clusters (equally likely, ``draws`` = their number). Then a
        subgroup whose paired prompts lie in k clusters gets the t interval
        ``estimate +- t_{k-1} sqrt(k / (k - 1)) se`` and the p-value of
        ``estimate / (sqrt(k / (k - 1)) se)`` on t(k - 1) (Hesterberg's expansion of the
        bootstrap spread, with the subgroup's own clusters; for LD_b - LD_a, k is the
        smaller of the clusters inside and outside the subgroup); k < 2: no interval, no
        p-value. A percentile interval (even the expanded one) cannot reach beyond the
        range of the k clusters' own values, which for k = 2-3 covers 50-80 %
        (``docs/compare.md``).

    Returns
    -------
    dict
        Arrays over subgroups: ``n``, ``a``, ``b`` (sums), ``difference`` ((b - a) / n)
        with ``se``, ``ci_low``, ``ci_high``, ``p_value`` (bootstrap z; 1 where both the
        difference and its SE are 0); with ``log_disparity`` also ``ld_a``, ``ld_b``,
        ``ld_difference``, ``ld_se``, ``ld_ci_low``, ``ld_ci_high``, ``ld_p_value``;
        with ``clustered`` also ``n_clusters`` and ``ld_n_clusters`` (the k of each).
    """
    from scipy import stats

    from analysis.subgroups import rest_log_disparity

    n_ec, a_ec, b_ec = (np.asarray(x, float) for x in (n_ec, a_ec, b_ec))
    member = np.asarray(member, float)
    e = len(n_ec)
    p = np.full(e, 1.0 / e) if probabilities is None else np.asarray(probabilities, float)
    draws = e if draws is None else int(draws)
    stacked = np.concatenate([n_ec, a_ec, b_ec], axis=1)  # elements x 3 cells
    ncell = n_ec.shape[1]

    def stats_of(sums: np.ndarray) -> dict[str, np.ndarray]:
        # sums: replicates x 3 cells -> per subgroup statistics (replicates x subgroups)
        cn, ca, cb = sums[:, :ncell], sums[:, ncell:2 * ncell], sums[:, 2 * ncell:]
        sn, sa, sb = cn @ member.T, ca @ member.T, cb @ member.T
        with np.errstate(divide="ignore", invalid="ignore"):
            out = {"n": sn, "a": sa, "b": sb, "difference": np.where(sn > 0, (sb - sa) / sn,
                                                                     np.nan)}
        if log_disparity:
            tn, ta, tb = (x.sum(axis=1, keepdims=True) for x in (cn, ca, cb))
            out["ld_a"] = rest_log_disparity(sa, sn, ta, tn)
            out["ld_b"] = rest_log_disparity(sb, sn, tb, tn)
            out["ld_difference"] = out["ld_b"] - out["ld_a"]
        return out

    point = {k: v[0] for k, v in stats_of((p * draws)[None, :] @ stacked).items()}
    rng = np.random.default_rng(seed)
    few = e <= _FEW_ELEMENTS  # multinomial counts directly; else draw indices and count
    block = max(1, _BLOCK // max(e, 1 if few else draws, 1))
    reps: dict[str, list[np.ndarray]] = {"difference": [], "ld_difference": []}
    done = 0
    while done < n_resamples:
        k = min(block, n_resamples - done)
        if few:
            w = rng.multinomial(draws, p, size=k).astype(float)
        else:
            idx = (rng.integers(0, e, size=(k, draws)) if probabilities is None
                   else rng.choice(e, size=(k, draws), p=p))
            idx += np.arange(k)[:, None] * e
            w = np.bincount(idx.ravel(), minlength=k * e).reshape(k, e).astype(float)
        r = stats_of(w @ stacked)
        reps["difference"].append(r["difference"])
        if log_disparity:
            reps["ld_difference"].append(r["ld_difference"])
        done += k
    lo_q, hi_q = (1 - confidence) / 2, (1 + confidence) / 2
    result = dict(point)
    if clustered:
        inside = (n_ec @ member.T > 0).sum(axis=0)
        outside = ((n_ec.sum(axis=1, keepdims=True) - n_ec @ member.T) > 0).sum(axis=0)
        result["n_clusters"] = inside
        result["ld_n_clusters"] = np.minimum(inside, outside)
    for name, prefix in (("difference", ""), ("ld_difference", "ld_")):
        if not reps[name]:
            continue
        r = np.concatenate(reps[name])
        est = point[name]
        with np.errstate(invalid="ignore"), _quiet():
            se = np.nanstd(r, axis=0, ddof=1)
            if not clustered:
                lo, hi = np.nanquantile(r, [lo_q, hi_q], axis=0)
        if clustered:
            lo, hi, pv = _cluster_t(est, se, result[f"{prefix}n_clusters"], confidence)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                pv = 2 * stats.norm.sf(np.abs(est) / se)
            pv = np.where((se == 0) & (est == 0), 1.0, pv)
            pv = np.where((se == 0) & (est != 0), 0.0, pv)
        lo = np.where(np.isnan(est), np.nan, lo)
        hi = np.where(np.isnan(est), np.nan, hi)
        pv = np.where(np.isnan(est), np.nan, pv)
        result[f"{prefix}se"] = se
        result[f"{prefix}ci_low"], result[f"{prefix}ci_high"] = lo, hi
        result[f"{prefix}p_value"] = pv
    return result


def _cluster_t(est: np.ndarray, se: np.ndarray, k: np.ndarray, confidence: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The t interval and p-value of a cluster bootstrap with k clusters per quantity:
    the spread ``se`` expanded by ``sqrt(k / (k - 1))``, t on k - 1 df; NaN for k < 2."""
    from scipy.special import stdtr, stdtrit

    k = np.asarray(k, dtype=float)
    ok = k >= 2
    kk = np.where(ok, k, 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.sqrt(kk / (kk - 1)) * se
        half = stdtrit(kk - 1, 0.5 + confidence / 2) * scale
        pv = 2 * stdtr(kk - 1, -np.abs(est) / scale)
    pv = np.where((scale == 0) & (est == 0), 1.0, pv)
    pv = np.where((scale == 0) & (est != 0), 0.0, pv)
    nan = np.where(ok, 1.0, np.nan)
    return (est - half) * nan, (est + half) * nan, pv * nan


class _quiet:
    """Silence numpy's all-NaN slice warnings (a subgroup missing from every replicate)."""

    def __enter__(self):  # noqa: ANN204
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):  # noqa: ANN002, ANN204
        return self._ctx.__exit__(*exc)


def compare_subgroups(
    pairing: Pairing,
    a: str,
    b: str,
    factors: Sequence[str] | None = None,
    *,
    max_level: int | None = None,
    n_resamples: int = DEFAULT_N_BOOT,
    seed: int = 0,
    confidence: float = 0.95,
    alpha: float = 0.05,
    adjust: Adjust = SUBGROUP_ADJUST,
) -> pd.DataFrame:
    """Per subgroup of the paired prompts: the difference between b and a, with intervals.

    Parameters
    ----------
    pairing
        From :func:`pair_units` with ``factors`` among its prompt-level factors.
    a, b
        The two values of ``pairing.by`` (difference = b - a).
    factors
        The subgroup factors (default: those of the pairing); a level-k subgroup fixes k.
    max_level
        Highest level (default 2, or 1 with one factor).
    n_resamples, seed, confidence
        Bootstrap replicates (resampling prompt units, or clusters with a cluster), seed
        and interval level.
    alpha
        Level of ``differs`` and of each model's own LD verdict.
    adjust
        The multiple-testing method over the subgroups (default Benjamini-Hochberg; any
        of :data:`analysis.multiple_testing.METHODS`) of ``p_adjusted``,
        ``ld_p_adjusted`` and the own LD verdicts.

    Returns
    -------
    pandas.DataFrame
        One row per observed subgroup (by level, factor combination, values): the factor
        columns (NaN where not fixed), ``level``, ``subgroup``, ``n`` (paired prompts),
        ``rate_a`` / ``rate_b`` (or ``mean_a`` / ``mean_b`` for a score),
        ``difference`` (b - a) with ``ci_low`` / ``ci_high`` (percentile bootstrap),
        ``p_value`` (bootstrap z) and ``p_adjusted`` (by ``adjust`` across the
        subgroups), ``differs`` (p_adjusted < alpha); for a 0/1 outcome also ``only_a``
        / ``only_b`` (discordant prompts), ``ld_a`` / ``ld_b`` (each model's log
        disparity of the subgroup against the other paired prompts), ``ld_difference``
        (ld_b - ld_a) with ``ld_ci_low`` / ``ld_ci_high``, ``ld_p_value``,
        ``ld_p_adjusted``, ``significant_a`` / ``significant_b`` (each model's own LD
        verdict: ``adjust``-adjusted p < alpha, Wald or Fisher as
        :mod:`analysis.subgroups`) and ``verdicts_differ`` (significant for one model
        and not the other).
        What was resampled is ``pairing.resampled``; the notes on the intervals are
        :func:`subgroup_notes`.
    """
    from analysis.multiple_testing import adjust_p as kernel
    from analysis.subgroups import disparity_stats

    check_method(adjust)
    factors = list(pairing.factors if factors is None else factors)
    if not factors:
        raise PairingError("Choose at least one prompt-level factor for the subgroups.")
    absent = [f for f in factors if f not in pairing.wide.columns]
    if absent:
        raise PairingError(f"Pair the rows with these factors first (pair_units(..., "
                           f"factors=...)): {', '.join(absent)}.")
    if max_level is None:
        max_level = min(2, len(factors))
    if not 1 <= int(max_level) <= len(factors):
        raise PairingError(f"The highest subgroup level must be between 1 and {len(factors)} "
                           f"(the number of chosen factors), got {max_level!r}.")
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 20:
        raise AnalysisError(f"The bootstrap needs at least 20 replicates, got {n_resamples!r}.")
    paired = pairing.paired(a, b)
    if len(paired) == 0:
        raise PairingError(f"{a!r} and {b!r} share no prompt unit: nothing to compare.")
    coded = [_codes(paired[f]) for f in factors]
    codes = np.column_stack([c for c, _ in coded])
    cells, cell_of = np.unique(codes, axis=0, return_inverse=True)
    cell_of = cell_of.reshape(-1)
    member, table = _subgroup_membership(cells, factors, [v for _, v in coded], int(max_level))
    xa, xb = paired[OUTCOME_A].to_numpy(float), paired[OUTCOME_B].to_numpy(float)
    binary = pairing.outcome == "binary"
    ncell = len(cells)
    if pairing.cluster:  # elements = clusters, drawn with equal probability
        el, _ = pd.factorize(paired[_CLUSTER].to_numpy())
        n_el = int(el.max()) + 1
        probabilities, draws = None, None
    elif binary:  # elements = distinct (cell, a, b) triples, with their multiplicity
        triple = (cell_of * 2 + xa.astype(np.int64)) * 2 + xb.astype(np.int64)
        uniq, el, mult = np.unique(triple, return_inverse=True, return_counts=True)
        el = el.reshape(-1)
        n_el = len(uniq)
        probabilities, draws = mult / mult.sum(), len(paired)
    else:  # elements = units
        el, n_el = np.arange(len(paired)), len(paired)
        probabilities, draws = None, None
    flat = el * ncell + cell_of
    size = n_el * ncell
    if binary and not pairing.cluster:  # one row per distinct triple: its value once
        first = np.zeros(n_el, dtype=np.int64)
        first[el[::-1]] = np.arange(len(el))[::-1]
        n_ec = np.zeros((n_el, ncell))
        n_ec[np.arange(n_el), cell_of[first]] = 1.0
        a_ec = n_ec * xa[first][:, None]
        b_ec = n_ec * xb[first][:, None]
    else:
        n_ec = np.bincount(flat, minlength=size).reshape(n_el, ncell).astype(float)
        a_ec = np.bincount(flat, weights=xa, minlength=size).reshape(n_el, ncell)
        b_ec = np.bincount(flat, weights=xb, minlength=size).reshape(n_el, ncell)
    res = paired_bootstrap(n_ec, a_ec, b_ec, member, probabilities=probabilities,
                           draws=draws, n_resamples=int(n_resamples), seed=seed,
                           confidence=confidence, log_disparity=binary,
                           clustered=bool(pairing.cluster))
    # point estimates from the paired prompts themselves
    n_s = member @ np.bincount(cell_of, minlength=ncell)
    sum_a = member @ np.bincount(cell_of, weights=xa, minlength=ncell)
    sum_b = member @ np.bincount(cell_of, weights=xb, minlength=ncell)
    out = table
    out[N] = n_s.astype(np.int64)
    out[RATE_A if binary else MEAN_A] = sum_a / n_s
    out[RATE_B if binary else MEAN_B] = sum_b / n_s
    if binary:
        out[ONLY_A] = (member @ np.bincount(cell_of, weights=(xa == 1) & (xb == 0),
                                            minlength=ncell)).astype(np.int64)
        out[ONLY_B] = (member @ np.bincount(cell_of, weights=(xa == 0) & (xb == 1),
                                            minlength=ncell)).astype(np.int64)
    out[DIFFERENCE] = (sum_b - sum_a) / n_s
    if pairing.cluster:
        out[N_CLUSTERS] = res["n_clusters"].astype(np.int64)
    out[CI_LOW], out[CI_HIGH] = res["ci_low"], res["ci_high"]
    out[P_VALUE] = res["p_value"]
    out[P_ADJUSTED] = kernel(res["p_value"], adjust)
    out[DIFFERS] = out[P_ADJUSTED] < alpha
    if binary:
        total_n, total_a, total_b = len(xa), int(xa.sum()), int(xb.sum())
        out[LD_A], out[LD_B] = res["ld_a"], res["ld_b"]
        out[LD_DIFFERENCE] = res["ld_difference"]
        out[LD_CI_LOW], out[LD_CI_HIGH] = res["ld_ci_low"], res["ld_ci_high"]
        out[LD_P_VALUE] = res["ld_p_value"]
        out[LD_P_ADJUSTED] = kernel(res["ld_p_value"], adjust)
        for col, sums, total in ((SIGNIFICANT_A, sum_a, total_a), (SIGNIFICANT_B, sum_b,
                                                                    total_b)):
            own = disparity_stats(np.rint(sums), n_s, total_deviations=total,
                                  total_n=total_n, confidence=confidence)
            out[col] = kernel(own["p_value"].to_numpy(), adjust) < alpha
        out[VERDICTS_DIFFER] = out[SIGNIFICANT_A] != out[SIGNIFICANT_B]
    out.insert(0, MODEL_B, b)
    out.insert(0, MODEL_A, a)
    return out


def subgroup_notes(pairing: Pairing, table: pd.DataFrame) -> list[str]:
    """The notes on a :func:`compare_subgroups` table's intervals: with a cluster, how the
    spread is expanded, and the subgroups that lie in one cluster (not estimable)."""
    notes = []
    if pairing.cluster:
        notes.append(f"per subgroup with a cluster: the cluster bootstrap's spread expanded "
                     f"by sqrt(k / (k - 1)) and t on k - 1 df, k = the values of "
                     f"{pairing.cluster} holding the subgroup's paired prompts (n_clusters; "
                     "for the LD difference the fewer of those inside and outside it)")
        lonely = table.loc[table[N_CLUSTERS] < 2, SUBGROUP].tolist()
        if lonely:
            notes.append(f"not estimable: {'; '.join(map(str, lonely[:8]))}"
                         + (f" (and {len(lonely) - 8} more)" if len(lonely) > 8 else "")
                         + f" lie(s) in one value of {pairing.cluster}: no interval or "
                         "p-value (one cluster says nothing about the variation between "
                         "clusters)")
    return notes


# --- everything at once -------------------------------------------------------------------
@dataclass
class Comparison:
    """What :func:`compare` returns: the pairing, the overall table and, per pair, the
    subgroup table (empty dict without factors)."""

    pairing: Pairing
    overall: pd.DataFrame
    subgroups: dict[tuple[str, str], pd.DataFrame]
    notes: list[str]


def compare(
    results: pd.DataFrame,
    design,
    by: str,
    *,
    reference: str | None = None,
    factors: Sequence[str] = (),
    max_level: int | None = None,
    unit: Sequence[str] | None = None,
    score: str | None = None,
    cluster: str | None = _DEFAULT.cluster,
    duplicates: Duplicates = _DEFAULT.duplicates,
    test: McNemarTest = _DEFAULT.test,
    adjust: Adjust = _DEFAULT.adjust,
    n_resamples: int = DEFAULT_N_BOOT,
    seed: int = _DEFAULT.seed,
    confidence: float = _DEFAULT.confidence,
    alpha: float = _DEFAULT.alpha,
    subgroup_adjust: Adjust = _DEFAULT.subgroup_adjust,
) -> Comparison:
    """Pair, compare overall, and per subgroup for every compared pair (see the module
    docstring; the parameters are those of :func:`pair_units`, :func:`compare_overall`
    and :func:`compare_subgroups`; the options are
    :class:`analysis.options.compare.CompareOptions`)."""
    pairing = pair_units(results, design, by, unit=unit, score=score, factors=factors,
                         cluster=cluster, duplicates=duplicates)
    return compare_pairing(pairing, reference=reference, factors=factors,
                           max_level=max_level, test=test, adjust=adjust,
                           n_resamples=n_resamples, seed=seed, confidence=confidence,
                           alpha=alpha, subgroup_adjust=subgroup_adjust)


def compare_pairing(
    pairing: Pairing,
    *,
    reference: str | None = None,
    factors: Sequence[str] = (),
    max_level: int | None = None,
    test: McNemarTest = _DEFAULT.test,
    adjust: Adjust = _DEFAULT.adjust,
    n_resamples: int = DEFAULT_N_BOOT,
    seed: int = _DEFAULT.seed,
    confidence: float = _DEFAULT.confidence,
    alpha: float = _DEFAULT.alpha,
    subgroup_adjust: Adjust = _DEFAULT.subgroup_adjust,
) -> Comparison:
    """:func:`compare` of a :func:`pair_units` pairing (kept apart so that an app can
    keep the pairing, the step that reads the rows, while the other options change);
    ``factors`` must be among the pairing's."""
    overall = compare_overall(pairing, reference=reference, test=test, adjust=adjust,
                              confidence=confidence)
    subs = {}
    if factors:
        for a, b in zip(overall[MODEL_A], overall[MODEL_B], strict=True):
            if len(pairing.paired(a, b)):
                subs[(a, b)] = compare_subgroups(pairing, a, b, factors, max_level=max_level,
                                                 n_resamples=n_resamples, seed=seed,
                                                 confidence=confidence, alpha=alpha,
                                                 adjust=subgroup_adjust)
    notes = describe(pairing, overall, subs, alpha=alpha, adjust=adjust,
                     subgroup_adjust=subgroup_adjust)
    for table in subs.values():
        notes += [n for n in subgroup_notes(pairing, table) if n not in notes]
    return Comparison(pairing, overall, subs, notes)


def describe(pairing: Pairing, overall: pd.DataFrame,
             subgroups: dict[tuple[str, str], pd.DataFrame] | None = None, *,
             alpha: float = 0.05, adjust: str = "",
             subgroup_adjust: str = SUBGROUP_ADJUST) -> list[str]:
    """Plain-language readings: what was paired, unpaired rows, and per pair the
    discordant counts, the test and the subgroups that differ (``adjust``: the method of
    ``overall``'s ``p_adjusted``, as :func:`compare_overall` was given it;
    ``subgroup_adjust``: that of the subgroup tables')."""
    from analysis.multiple_testing import LABELS

    notes = [pairing.note, *pairing.notes]
    by_subgroup = f"{LABELS.get(subgroup_adjust, subgroup_adjust)}-adjusted p < {alpha:g}"
    adjust = ADJUSTMENT_NAMES.get(adjust, "")
    for r in overall.to_dict(orient="records"):
        a, b = r[MODEL_A], r[MODEL_B]
        if r[UNPAIRED_A] or r[UNPAIRED_B]:
            notes.append(f"{a} vs {b}: {r[UNPAIRED_A]:,} prompts answered only under {a} and "
                         f"{r[UNPAIRED_B]:,} only under {b} are left out (no partner).")
        if not r[N_PAIRS]:
            notes.append(f"{a} vs {b}: no shared prompt.")
            continue
        sig = r[P_ADJUSTED] < alpha
        verdict = (f"significant ({adjust} adjusted p = {r[P_ADJUSTED]:.3g})" if sig else
                   f"not significant ({adjust} adjusted p = {r[P_ADJUSTED]:.3g})")
        if pairing.outcome == "binary":
            notes.append(
                f"{a} -> {b}, {r[N_PAIRS]:,} paired prompts: {r[ONLY_A]:,} went from biased "
                f"to not biased and {r[ONLY_B]:,} from not biased to biased; deviation rate "
                f"{r[RATE_A]:.3f} -> {r[RATE_B]:.3f} (difference {r[DIFFERENCE]:+.3f}, "
                f"{_ci(r)}); {TEST_NAMES[r[TEST]]} {verdict}.")
        else:
            notes.append(
                f"{a} -> {b}, {r[N_PAIRS]:,} paired prompts: mean {r[MEAN_A]:.3g} -> "
                f"{r[MEAN_B]:.3g} (difference {r[DIFFERENCE]:+.3g}, {_ci(r)}); "
                f"{TEST_NAMES[r[TEST]]} {verdict}; Wilcoxon p = "
                f"{r[WILCOXON_P]:.3g}.")
    for (a, b), table in (subgroups or {}).items():
        differ = table[table[DIFFERS]]
        if len(differ):
            top = differ.reindex(differ[DIFFERENCE].abs().sort_values(ascending=False).index)
            listed = "; ".join(f"{s} ({d:+.3f} [{lo:+.3f}, {hi:+.3f}])" for s, d, lo, hi in
                               zip(top[SUBGROUP][:5], top[DIFFERENCE][:5], top[CI_LOW][:5],
                                   top[CI_HIGH][:5], strict=True))
            notes.append(f"{a} vs {b}: {len(differ)} of {len(table)} subgroups differ "
                         f"({by_subgroup}): {listed}"
                         + ("; ..." if len(differ) > 5 else "."))
        else:
            notes.append(f"{a} vs {b}: no subgroup differs ({by_subgroup}).")
        if VERDICTS_DIFFER in table and table[VERDICTS_DIFFER].any():
            notes.append(f"{a} vs {b}: the subgroup verdicts (own LD significant) differ in "
                         f"{int(table[VERDICTS_DIFFER].sum())} subgroups.")
    return notes


def _ci(r: dict) -> str:
    lo, hi = r.get(CI_LOW), r.get(CI_HIGH)
    if lo is None or (isinstance(lo, float) and math.isnan(lo)):
        return "no interval"
    return f"CI [{lo:+.3f}, {hi:+.3f}]"
