"""What the Disparity page opens on, computed by the app's load-time job (issue 44 item 3).

The load-time job (:func:`ui.inference_pool.count_unit_cells`, submitted for a table of
``ui.table_job.EARLY_COUNT_ROWS`` rows or more) holds the applied table in its worker
process anyway; :func:`disparity_openers` computes there what the Disparity page's first
render reads from the rows: the numeric columns (``analysis.factor_defaults.
numeric_columns``, the page's feature choices, shared with the Bias index page) and the
parts of :func:`analysis.api.disparity` (:class:`analysis.disparity_parts.DisparityParts`:
grouping, group summary, selection rates, permutation test, SAGED statistics) for the
first numeric column, the default grouping and the options' defaults.

The page seeds its parts store with them (:func:`ui.disparity.disparity_result`) and
:func:`ui.common.per_table` its cache of the numeric columns; the numbers are therefore
those of the same functions on the same rows: every part is kept under the options it
depends on, so a page whose options differ from the defaults finds no part for them and
computes its own (``tests/app/test_disparity_job.py`` checks the Result is the rows').
Nothing here is used when the page's table differs from the job's in the dtype of the
feature or a grouping factor (the worker's text columns are categoricals of their
dictionary, ``ui.inference_pool._Packed.frame``)."""

from __future__ import annotations

import contextlib
from typing import Any

import pandas as pd

__all__ = ["NUMERIC_KEY", "box_key", "disparity_openers", "numeric_key", "seed_parts"]

#: :func:`ui.common.per_table`'s name of the numeric-column scan.
NUMERIC_KEY = "analysis.factor_defaults.numeric_columns"


def numeric_key(design: Any) -> str:
    """:func:`ui.common.per_table`'s ``arguments`` of ``numeric_columns(results, design)``
    (the pages' call ``per_table(numeric_columns, results, design, design)``)."""
    return repr(((design,), []))


def disparity_openers(frame: pd.DataFrame, design: Any) -> dict | None:
    """The Disparity page's opening computations on the applied ``frame`` (in the worker).

    Returns
    -------
    dict or None
        ``per_table`` (``{(name, arguments): value}`` of the ``ui.common.per_table``
        steps the pages open on: the numeric columns, the Cohorts page's candidate
        categorical outcomes and the first one's values), ``results`` (``{(name,
        options, inputs): Result}`` of ``ui.common.analysis_result``: the Cohorts page's
        first Result), ``box`` (``{(box key, label): figure}``: the page's box plot of
        the default call, :func:`analysis.figures.disparity.grouping_box_figure`),
        ``feature``, ``by``,
        ``dtypes`` (``{column: dtype}`` of the feature and the grouping factors) and
        ``parts`` (``DisparityParts.items()`` of the default call); None when the table
        has no numeric column or the default call is refused.
    """
    from analysis import api
    from analysis.disparity_parts import DisparityParts
    from analysis.errors import AnalysisError
    from analysis.factor_defaults import (
        default_group,
        numeric_columns,
        unnested_factors,
        useful_factors,
    )
    from analysis.figures.disparity import grouping_box_figure

    numeric = numeric_columns(frame, design)
    out: dict = {"per_table": _per_table_openers(frame, design, numeric)}
    out["results"] = _cohorts_opener(frame, design, out["per_table"])
    if not numeric:
        return out
    kinds = ("domain", "prompt", "model")  # as ui.defaults.page_defaults(design, 1)
    by = unnested_factors(frame, design, useful_factors(frame, design, kinds), 1) \
        or default_group(design)
    if not by:
        return out
    parts = DisparityParts()
    with contextlib.suppress(AnalysisError):  # (a refused call: the page says why)
        result = api.disparity(frame, design, feature=numeric[0], by=by, applied=True,
                               parts=parts)
        out["box"] = {(box_key(result.settings), numeric[0]): grouping_box_figure(
            result.meta["grouping"], feature=numeric[0])}
    out |= {"feature": numeric[0], "by": list(by), "parts": parts.items(),
            "dtypes": {c: frame[c].dtype for c in [numeric[0], *by]}}
    return out


def _per_table_openers(frame: pd.DataFrame, design: Any, numeric: list[str]) -> dict:
    """``{(name, arguments): value}`` of the ``ui.common.per_table`` steps the Disparity,
    Bias index and Cohorts pages open on (their names and arguments as ``per_table``
    keys them): the numeric columns, the Cohorts page's candidate categorical outcomes
    (``ui.cohorts.category_columns``) and the first one's values (``ui.cohorts._observed``),
    computed as those functions do (not imported: ``ui.cohorts`` imports ``ui.common``)."""
    from analysis.cohort_inputs import category_candidates
    from analysis.columns import DEVIATION
    from analysis.design import factor_values
    from analysis.distribution import MAX_CATEGORIES

    out = {(NUMERIC_KEY, numeric_key(design)): numeric}
    candidates = category_candidates(frame, design.names, design.prompt_unit_columns(),
                                     exclude=(DEVIATION,), max_categories=MAX_CATEGORIES)
    out[("ui.cohorts.category_columns", repr(((design,), [])))] = candidates
    if candidates:
        out[("ui.cohorts._observed", repr(((candidates[0],), [])))] = factor_values(
            frame[candidates[0]].dropna())[1]
    return out


def _cohorts_opener(frame: pd.DataFrame, design: Any, per_table: dict) -> dict:
    """``{(name, options, inputs): Result}`` (``ui.common.analysis_result``'s key) of the
    Cohorts page's first call of :func:`analysis.api.cohorts`: the first candidate outcome,
    the default cohort factor, the first other domain factor, every category, the
    options' defaults, no subset (as ``ui.cohorts.cohort_options`` opens)."""
    from analysis import api
    from analysis.errors import AnalysisError
    from analysis.factor_defaults import default_cohort
    from analysis.options.cohorts import CohortsOptions

    candidates = per_table[("ui.cohorts.category_columns", repr(((design,), [])))]
    if not candidates:
        return {}
    category = candidates[0]
    factors = [f for f in design.names if f != category]
    if not factors:
        return {}
    cohort = factors[default_cohort(design, category)]
    domain = [f for f in design.of_kind("domain") if f not in (category, cohort)]
    inputs = {"category": category, "cohort": cohort, "by": domain[:1],
              "categories": per_table[("ui.cohorts._observed", repr(((category,), [])))],
              "where": {}}
    options = CohortsOptions()
    try:
        result = api.cohorts(frame, design, options=options, applied=True, **inputs)
    except AnalysisError:  # the page says why
        return {}
    return {("cohorts", repr(options), repr(sorted(inputs.items()))): result}


def box_key(settings: dict) -> str:
    """The Disparity page's cache key of its box figure (``ui.disparity.box_of``): what the
    grouping's rows depend on, from a Result's settings."""
    return repr((settings["feature"], settings["by"], settings["baseline"],
                 settings["normalization"], sorted(settings["where"].items())))


def seed_parts(openers: dict | None, results: pd.DataFrame) -> list:
    """The job's parts (:func:`disparity_openers`) when they are of ``results``' columns
    as the page has them (the same dtypes), else none."""
    if not openers or not openers.get("parts"):
        return []
    dtypes = openers["dtypes"]
    if any(c not in results.columns or results[c].dtype != d for c, d in dtypes.items()):
        return []
    return openers["parts"]
