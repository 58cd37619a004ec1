"""What the Disparity page opens on, computed by the app's load-time job (issue 44 item 3).

The load-time job (:func:`ui.inference_pool.count_unit_cells`, submitted for a table of
``ui.table_job.EARLY_COUNT_ROWS`` rows or more) holds the applied table in its worker
process anyway; :func:`disparity_openers` computes there what the Disparity page's first
render reads from the rows: the numeric columns (``analysis.factor_defaults.
numeric_columns``, the page's feature choices, shared with the Bias index page) and the
parts of :func:`analysis.api.disparity` (:class:`analysis.disparity_parts.DisparityParts`:
grouping, group summary, selection rates, permutation test, SAGED statistics) for the
first numeric column, the default grouping and the options' defaults; and the Cohorts
page's candidate outcomes, the first one's categories and its first Result. The steps, their
cache keys and the opening choices are the pages' own (:mod:`ui.opening`, no Streamlit), so
a change to the pages' code is the job's too (``tests/app/test_disparity_job.py`` checks
that the pages' first renders find every step the job computed under their keys).

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

__all__ = ["box_key", "disparity_openers", "seed_parts"]


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
    from analysis.factor_defaults import numeric_columns
    from analysis.figures.disparity import grouping_box_figure
    from ui.opening import disparity_by, start_factors, step_key

    numeric = numeric_columns(frame, design)
    out: dict = {"per_table": {step_key(numeric_columns, design): numeric}}
    out["results"] = _cohorts_opener(frame, design, out["per_table"])
    if not numeric:
        return out
    by = disparity_by(design, lambda d, k: start_factors(frame, d, k))  # the page's defaults
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


def _cohorts_opener(frame: pd.DataFrame, design: Any, per_table: dict) -> dict:
    """``{(name, options, inputs): Result}`` (``ui.common.analysis_result``'s key) of the
    Cohorts page's first call of :func:`analysis.api.cohorts`, the page's own steps and
    defaults (:mod:`ui.opening`): the first candidate outcome, the default cohort factor,
    the first other domain factor, every category, the options' defaults, no subset (as
    ``ui.cohorts.cohort_options`` opens); the candidates and the categories go into
    ``per_table`` under the page's keys."""
    from analysis import api
    from analysis.errors import AnalysisError
    from analysis.options.cohorts import CohortsOptions
    from ui import opening as op

    candidates = per_table[op.step_key(op.category_columns, design)] = op.category_columns(
        frame, design)
    if not candidates:
        return {}
    category = candidates[0]
    observed = per_table[op.step_key(op.observed_categories, category)] = \
        op.observed_categories(frame, category)
    factors, first = op.cohort_factors(design, category)
    if not factors:
        return {}
    cohort = factors[first]
    inputs = {"category": category, "cohort": cohort,
              "by": op.cohort_within(design, category, cohort), "categories": observed,
              "where": {}}
    options = CohortsOptions()
    try:
        result = api.cohorts(frame, design, options=options, applied=True, **inputs)
    except AnalysisError:  # the page says why
        return {}
    return {op.result_key("cohorts", options, inputs): result}


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
