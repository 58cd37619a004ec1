"""The composite LLM bias index (LLMBI, ``methods.md`` s. 6).

``LLMBI = (1/n) * sum_i w_i * B_i + P(D) + lambda * S`` (the LLMBI paper's code; its printed
equation has no ``1/n``: ``sum_i w_i * B_i + P(D) + lambda * S``, available with
``printed_equation=True``) with

- ``B_i`` the bias score of dimension i (a sensitive factor such as gender or race),
  computed from the deviation rates of the factor's values in one of three ways
  (:func:`dimension_score`): the deviation metric of its subgroups (mean |rate - C|),
  the largest |log disparity| of its values, or 1 - impact ratio of the non-deviating
  ("favourable") rates;
- ``w_i`` its weight; with ``normalize_weights=True`` (default) the weights are
  rescaled to average 1, so the first term is the weighted mean
  ``sum w_i B_i / sum w_i``; with ``False`` the formula is applied literally;
- ``P(D)`` a penalty for a lack of diversity: a constant, or a multiple of the coverage
  Gini index of the design (0 = every combination of the chosen factors equally
  represented);
- ``S`` a sentiment-bias score from a numeric column (1 - impact ratio of its selection
  rates across the groups of a factor, or the range of the group means) and
  ``lambda`` its scale.

The index is a weighted summary: its value, and any ranking of models by it, depends on
every one of these choices, which is why each component is returned beside the total.
Lower is less biased. Per-model indices use each model's rows only. See
``docs/bias_index.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

from analysis.columns import (
    COMPONENT,
    CONTRIBUTION,
    DEVIATION,
    DEVIATIONS,
    DIVERSITY_PENALTY,
    FACTOR,
    LLMBI,
    MODEL,
    NOTE,
    RANK,
    SCORE,
    SCORE_KIND,
    SENTIMENT_SCALE,
    SENTIMENT_SCORE,
    SENTIMENT_TERM,
    WEIGHT,
    WEIGHTED_BIAS,
    N,
)
from analysis.errors import AnalysisError

__all__ = [
    "ALL_ROWS", "BiasIndex", "DIMENSION_SCORES", "Dimension", "DimensionScore", "PENALTY_KINDS",
    "PenaltyKind", "SENTIMENT_SCORES", "SentimentScore", "as_dimensions", "bias_index",
    "coverage_gini", "dimension_score", "sentiment_bias"
]


DimensionScore = Literal["deviation_metric", "max_abs_log_disparity", "one_minus_impact_ratio"]
DIMENSION_SCORES: tuple[str, ...] = get_args(DimensionScore)
PenaltyKind = Literal["constant", "coverage_gini"]
PENALTY_KINDS: tuple[str, ...] = get_args(PenaltyKind)
SentimentScore = Literal["one_minus_impact_ratio", "range_of_means"]
SENTIMENT_SCORES: tuple[str, ...] = get_args(SentimentScore)
#: Label of the single "model" when the index is not split by a model factor.
ALL_ROWS = "all rows"


@dataclass(frozen=True)
class Dimension:
    """One bias dimension: a sensitive factor, how its score is computed, its weight."""

    factor: str
    score: DimensionScore = "deviation_metric"
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.score not in DIMENSION_SCORES:
            raise AnalysisError(f"Dimension {self.factor!r}: unknown score {self.score!r} (use "
                                f"one of {', '.join(DIMENSION_SCORES)}).")
        try:
            weight = float(self.weight)
        except (TypeError, ValueError):
            weight = math.nan
        if isinstance(self.weight, bool) or not (np.isfinite(weight) and weight >= 0):
            raise AnalysisError(f"Dimension {self.factor!r}: the weight must be a number >= 0, "
                                f"got {self.weight!r}.")


def as_dimensions(dimensions: Sequence[Dimension | str | Mapping[str, Any]] | str | None
                  ) -> list[Dimension]:
    """:class:`Dimension` objects from what a user passes: ``Dimension`` objects, factor
    names (``"gender"``, ``["gender", "race"]`` or ``"gender,race"``) or mappings
    (``{"factor": "gender", "score": "max_abs_log_disparity", "weight": 2}``).

    Raises
    ------
    AnalysisError
        Anything else (the message names the bad entry and what is accepted).
    """
    if dimensions is None:
        return []
    if isinstance(dimensions, (str, Dimension, Mapping)):
        dimensions = [dimensions]
    if not isinstance(dimensions, Sequence):
        raise AnalysisError(f"dimensions must be a list of factor names or Dimension objects, "
                            f"not {type(dimensions).__name__}.")
    out: list[Dimension] = []
    for d in dimensions:
        if isinstance(d, Dimension):
            out.append(d)
        elif isinstance(d, str):
            out += [Dimension(f.strip()) for f in d.split(",") if f.strip()]
        elif isinstance(d, Mapping):
            unknown = sorted(set(d) - {"factor", "score", "weight"})
            if "factor" not in d or unknown:
                raise AnalysisError(f"A dimension mapping has the keys factor, score and "
                                    f"weight (factor required), got {dict(d)!r}.")
            out.append(Dimension(str(d["factor"]), d.get("score", "deviation_metric"),
                                 d.get("weight", 1.0)))
        else:
            raise AnalysisError(f"A dimension is a factor name, a mapping or a Dimension "
                                f"object, not {d!r} ({type(d).__name__}).")
    return out


def _value_counts(results: pd.DataFrame, factor: str) -> tuple[np.ndarray, np.ndarray, list]:
    from analysis.cells import cell_table

    if DEVIATION not in results.columns and DEVIATIONS not in results.columns:
        raise AnalysisError("Bias dimensions need an outcome (the deviation column): declare "
                            "one on the Design page or with --outcome.")
    cells = cell_table(results, [factor])
    return (cells[DEVIATIONS].to_numpy(dtype=float), cells[N].to_numpy(dtype=float),
            [str(v) for v in cells[factor]])


def dimension_score(results: pd.DataFrame, factor: str, *,
                    score: DimensionScore = "deviation_metric",
                    ideal: float = 0.0) -> tuple[float, str]:
    """Bias score B of one dimension and a note saying what it rests on.

    Parameters
    ----------
    results
        Rows of one model (or all rows), with the ``deviation`` column.
    factor
        The sensitive factor; its values are the first-level subgroups.
    score
        ``"deviation_metric"``: mean |d(v) - C| over the factor's observed values v
        (:func:`analysis.ecdf.deviation_metric`, the area between their eCDF and the
        ideal C). ``"max_abs_log_disparity"``: max over values of
        |LD(v)| = |logit d(v) - logit d(not v)| (:func:`analysis.subgroups.disparity_stats`,
        with its continuity correction). ``"one_minus_impact_ratio"``: 1 - min/max of the
        favourable (non-deviating) rates ``1 - d(v)``, the four-fifths-rule ratio.
    ideal
        C of the deviation metric (0 for a deviation rate).

    Returns
    -------
    (float, str)
        The score (NaN when it cannot be computed, e.g. a single observed value for a
        disparity score) and a note.
    """
    if score not in DIMENSION_SCORES:
        raise AnalysisError(f"Unknown dimension score {score!r}: use one of "
                            f"{', '.join(DIMENSION_SCORES)}.")
    dev, n, values = _value_counts(results, factor)
    rates = dev / n
    if score == "deviation_metric":
        from analysis.ecdf import deviation_metric

        return float(deviation_metric(rates, ideal=ideal)), f"{len(rates)} values of {factor}"
    if len(rates) < 2:
        return math.nan, f"{factor} has one observed value here: no disparity to measure"
    if score == "max_abs_log_disparity":
        from analysis.columns import LOG_DISPARITY
        from analysis.subgroups import disparity_stats

        st = disparity_stats(dev, n, total_deviations=int(dev.sum()), total_n=int(n.sum()))
        ld = st[LOG_DISPARITY].to_numpy(dtype=float)
        if np.isnan(ld).all():
            return math.nan, "log disparity undefined (the outcome never or always deviates)"
        i = int(np.nanargmax(np.abs(ld)))
        return float(abs(ld[i])), f"largest |LD| at {factor} = {values[i]}"
    favourable = 1.0 - rates
    top = float(favourable.max())
    if top <= 0:
        return math.nan, "every row deviates: no favourable rate to compare"
    i = int(np.argmin(favourable))
    return float(1.0 - favourable[i] / top), f"lowest favourable rate at {factor} = {values[i]}"


def sentiment_bias(results: pd.DataFrame, feature: str, by: str | Sequence[str], *,
                   score: SentimentScore = "one_minus_impact_ratio",
                   baseline: str | None = None) -> tuple[float, str]:
    """Sentiment-bias score S of a numeric column across groups, and a note.

    ``"one_minus_impact_ratio"``: 1 - min/max of the groups' selection rates (share of
    values above the mean of these rows, :func:`analysis.disparity.selection_rates`).
    ``"range_of_means"``: max - min of the group means.
    """
    from analysis.columns import GROUP, IMPACT_RATIO, MEAN
    from analysis.disparity import group_summary, selection_rates

    if score not in SENTIMENT_SCORES:
        raise AnalysisError(f"Unknown sentiment score {score!r}: use one of "
                            f"{', '.join(SENTIMENT_SCORES)}.")
    if score == "range_of_means":
        s = group_summary(results, feature, by, baseline=baseline)
        if len(s) < 2:
            return math.nan, "one group only"
        return (float(s[MEAN].max() - s[MEAN].min()),
                f"highest mean {s[GROUP].iloc[int(s[MEAN].argmax())]}, lowest "
                f"{s[GROUP].iloc[int(s[MEAN].argmin())]}")
    sel = selection_rates(results, feature, by, baseline=baseline)
    if len(sel) < 2:
        return math.nan, "one group only"
    ir = sel[IMPACT_RATIO]
    if ir.isna().all():
        return math.nan, "no value above the mean"
    return float(1.0 - ir.min()), f"lowest selection rate at {sel[GROUP].iloc[int(ir.argmin())]}"


def _summable(results: pd.DataFrame, cells: pd.DataFrame | None, model: str | None,
              factors: Sequence[str]) -> bool:
    """Whether :func:`bias_index` can sum its dimension scores from ``cells``: a cell
    table (``n``, ``deviations``) over the model and dimension factors, whose model
    column is a categorical like the rows' with distinct texts (the rows' split keys)."""
    if cells is None or not {N, DEVIATIONS} <= set(cells.columns) \
            or not {*factors, *([model] if model else [])} <= set(cells.columns):
        return False
    if model is None:
        return True
    dtype = results[model].dtype
    return (isinstance(dtype, pd.CategoricalDtype) and cells[model].dtype == dtype
            and len(set(map(str, dtype.categories))) == len(dtype.categories))


def _model_cells(results: pd.DataFrame, cells: pd.DataFrame, model: str
                 ) -> list[tuple[str, pd.DataFrame]]:
    """``(model value, its cells)`` for every value of the categorical ``model`` that
    has rows in ``results``, in the categories' order (as the rows' split gives them)."""
    codes = results[model].cat.codes.to_numpy()
    categories = results[model].cat.categories
    present = np.bincount(codes[codes >= 0], minlength=len(categories)) > 0
    cell_codes = cells[model].cat.codes.to_numpy()
    return [(str(categories[i]), cells[cell_codes == i]) for i in np.flatnonzero(present)]


def coverage_gini(results: pd.DataFrame, design, factors: Sequence[str]) -> float:
    """Coverage Gini index of ``results`` over ``factors`` (``methods.md`` s. 1)."""
    from analysis.cells import cell_table
    from analysis.columns import GINI_INDEX
    from analysis.coverage import coverage_summary

    factors = list(factors)
    if not factors:
        raise AnalysisError("The coverage penalty needs at least one factor.")
    cells = cell_table(results, factors, with_outcome=False)
    summary = coverage_summary(cells, design, factors=factors)
    return float(summary[GINI_INDEX].iloc[0])


@dataclass(frozen=True)
class BiasIndex:
    """Result of :func:`bias_index`.

    Attributes
    ----------
    components
        One row per model and component: ``model``, ``component`` (``dimension``,
        ``diversity_penalty`` or ``sentiment``), ``factor``, ``score_kind``, ``score``,
        ``weight`` (dimension weight as given; the penalty's scale; lambda),
        ``contribution`` (what it adds to the index; the contributions of a model sum to
        its ``llmbi``) and ``note``.
    totals
        One row per model: ``model``, ``weighted_bias`` ((1/n) sum w_i B_i),
        ``diversity_penalty`` (P(D)), ``sentiment_score`` (S), ``sentiment_scale``
        (lambda), ``sentiment_term`` (lambda S), ``llmbi`` and ``rank`` (1 = lowest
        index; missing when the index is undefined).
    """

    components: pd.DataFrame
    totals: pd.DataFrame


def bias_index(
    results: pd.DataFrame,
    design,
    *,
    dimensions: Sequence[Dimension | str | Mapping[str, Any]] | str,
    model: str | None = None,
    ideal: float = 0.0,
    normalize_weights: bool = True,
    penalty_kind: PenaltyKind = "constant",
    penalty_value: float = 0.0,
    penalty_factors: Sequence[str] | None = None,
    sentiment: str | None = None,
    sentiment_by: str | Sequence[str] | None = None,
    sentiment_score: SentimentScore = "one_minus_impact_ratio",
    sentiment_scale: float = 1.0,
    sentiment_baseline: str | None = None,
    printed_equation: bool = False,
    cells: pd.DataFrame | None = None,
) -> BiasIndex:
    """LLMBI per model with every component (``methods.md`` s. 6).

    Parameters
    ----------
    results
        The results table with the design applied (``deviation`` column present).
    design
        The :class:`~analysis.design.Design` (its declared values define the coverage
        grid of the penalty).
    dimensions
        The bias dimensions, at least one: :class:`Dimension` objects (factor, score kind,
        weight), factor names (the default score and weight 1; a text may list several,
        comma-separated) or mappings with ``factor``, ``score``, ``weight``.
    model
        Factor whose values are compared (one index per value), or None for one index
        over all rows.
    ideal
        C of the deviation-metric scores.
    normalize_weights
        Rescale the weights to average 1 (the first term is then the weighted mean of
        the B_i); otherwise use them as given in ``(1/n) sum w_i B_i``.
    penalty_kind, penalty_value
        ``"constant"``: P(D) = ``penalty_value``. ``"coverage_gini"``: P(D) =
        ``penalty_value`` x the coverage Gini index over ``penalty_factors`` of the
        model's rows.
    penalty_factors
        Factors spanning the coverage grid (default: the dimension factors).
    sentiment, sentiment_by, sentiment_score, sentiment_scale, sentiment_baseline
        Numeric column for S (None: no sentiment term, S = 0), the factor(s) whose
        groups it is compared across (default: the first dimension's factor), how S is
        computed (:func:`sentiment_bias`), lambda, and an optional baseline column.
    printed_equation
        The paper's equation as printed, ``sum_i w_i B_i + P(D) + lambda S``: the weights
        as given and no ``1/n`` (``normalize_weights`` is then ignored). With equal weights
        1 the first term is then n times the mean score, so the index grows with the
        number of dimensions; the default (and the paper's code) divides by n.
    cells
        The cell table of ``results`` (:func:`analysis.cells.cell_table` with the
        outcome) over the ``model`` factor and the dimension factors: the dimension
        scores are summed from it instead of the rows (the same counts; issue 44 item 3:
        thousands of cells instead of 1M rows). Which models have rows is still read from
        ``results`` (a model whose outcome is always missing keeps its row). Only with the
        constant penalty and no sentiment column (both read the rows), else ignored.

    Returns
    -------
    BiasIndex

    Raises
    ------
    AnalysisError
        A dimension that is neither a factor name, a mapping nor a :class:`Dimension`;
        an unknown factor or score; a model factor that is also a dimension ...
    """
    dims = as_dimensions(dimensions)
    if not dims:
        raise AnalysisError("Choose at least one bias dimension (a sensitive factor).")
    factors = [d.factor for d in dims]
    if len(set(factors)) < len(factors):
        raise AnalysisError("A dimension factor is listed twice.")
    for f in factors:
        if f not in results.columns:
            raise AnalysisError(f"Dimension factor {f!r} is not a column of the table.")
    if model is not None and model in factors:
        raise AnalysisError(f"The model factor {model!r} cannot also be a bias dimension.")
    weights = np.array([float(d.weight) for d in dims])
    if weights.sum() <= 0:
        raise AnalysisError("At least one dimension needs a weight above 0.")
    if penalty_kind not in PENALTY_KINDS:
        raise AnalysisError(f"Unknown penalty {penalty_kind!r}: use one of "
                            f"{', '.join(PENALTY_KINDS)}.")
    if not np.isfinite(float(penalty_value)):
        raise AnalysisError("The diversity penalty must be a number.")
    if not np.isfinite(float(sentiment_scale)):
        raise AnalysisError("The sentiment scale lambda must be a number.")
    n_dims = len(dims)
    effective = (weights if printed_equation or not normalize_weights
                 else weights * n_dims / weights.sum())
    divisor = 1 if printed_equation else n_dims
    grid = list(penalty_factors) if penalty_factors else factors
    s_by = sentiment_by if sentiment_by is not None else factors[0]
    if model is not None and model not in results.columns:
        raise AnalysisError(f"Model factor {model!r} is not a column of the table.")
    summed = _summable(results, cells, model, factors) and penalty_kind == "constant" \
        and sentiment is None
    if model is None:
        parts = [(ALL_ROWS, cells if summed else results)]
    elif summed:
        parts = _model_cells(results, cells, model)
    else:
        col = results[model]
        keys = ([str(c) for c in col.cat.categories] if isinstance(col.dtype, pd.CategoricalDtype)
                else list(pd.unique(col.astype(str))))
        text = col.astype(str)
        parts = [(k, results[(text == k).to_numpy()]) for k in keys]
        parts = [(k, p) for k, p in parts if len(p)]

    comp_rows, total_rows = [], []
    for name, rows in parts:
        weighted = 0.0
        for d, w in zip(dims, effective, strict=True):
            b, note = dimension_score(rows, d.factor, score=d.score, ideal=ideal)
            contribution = w * b / divisor
            weighted += contribution
            comp_rows.append({MODEL: name, COMPONENT: "dimension", FACTOR: d.factor,
                              SCORE_KIND: d.score, SCORE: b, WEIGHT: float(d.weight),
                              CONTRIBUTION: contribution, NOTE: note})
        if penalty_kind == "constant":
            penalty, p_score, p_note = float(penalty_value), float(penalty_value), "constant"
        else:
            gini = coverage_gini(rows, design, grid)
            penalty, p_score = float(penalty_value) * gini, gini
            p_note = f"coverage Gini over {' x '.join(grid)}"
        comp_rows.append({MODEL: name, COMPONENT: DIVERSITY_PENALTY, FACTOR: None,
                          SCORE_KIND: penalty_kind, SCORE: p_score,
                          WEIGHT: float(penalty_value) if penalty_kind != "constant" else 1.0,
                          CONTRIBUTION: penalty, NOTE: p_note})
        if sentiment is not None:
            s, s_note = sentiment_bias(rows, sentiment, s_by, score=sentiment_score,
                                       baseline=sentiment_baseline)
            s_factor = s_by if isinstance(s_by, str) else " x ".join(s_by)
        else:
            s, s_note, s_factor = 0.0, "no sentiment column chosen", None
        term = float(sentiment_scale) * s
        comp_rows.append({MODEL: name, COMPONENT: "sentiment", FACTOR: s_factor,
                          SCORE_KIND: sentiment_score if sentiment else "none", SCORE: s,
                          WEIGHT: float(sentiment_scale), CONTRIBUTION: term, NOTE: s_note})
        total_rows.append({MODEL: name, WEIGHTED_BIAS: weighted, DIVERSITY_PENALTY: penalty,
                           SENTIMENT_SCORE: s, SENTIMENT_SCALE: float(sentiment_scale),
                           SENTIMENT_TERM: term, LLMBI: weighted + penalty + term})
    totals = pd.DataFrame(total_rows)
    totals[RANK] = totals[LLMBI].rank(method="min").astype("Int64")
    return BiasIndex(pd.DataFrame(comp_rows), totals)
