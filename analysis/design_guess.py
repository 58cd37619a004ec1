"""Suggesting a design: column roles, factor kinds and the outcome, read from a table.

Every suggestion is a starting point the analyst confirms on the Design page (or in a
design file); nothing here checks a design against a table (:mod:`analysis.design_check`).
Import these names from :mod:`analysis.design`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from analysis.design_model import Design, Factor, Outcome
from analysis.errors import DesignError, did_you_mean
from analysis.values import (
    MAX_FACTOR_VALUES,
    MODEL_WORDS,
    PROMPT_WORDS,
    REPLICATE_WORDS,
    SUGGEST_MAX_VALUES,
    FactorKind,
    check_frame,
    default_reference,
    factor_values,
    format_value,
    guess_kind,
    order_values,
    outcome_meaning,
    too_many_values,
)

__all__ = ["NO_OUTCOME", "SUGGEST_MAX_VALUES", "describe_columns", "design_from_structure",
           "guess_kind", "make_factor", "outcome_meaning", "suggest_design", "suggest_outcome",
           "suggest_role", "suggestion_notes"]


def _is_binary_number(series: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(series):
        return True
    if not pd.api.types.is_numeric_dtype(series):
        return False
    values = series.dropna()  # an empty column (all missing) is no outcome
    return len(values) > 0 and set(pd.unique(values)) <= {0, 1}


def describe_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per column with what an analyst needs to pick factors and the outcome.

    Returns
    -------
    pandas.DataFrame
        Columns ``column``, ``dtype``, ``n_unique``, ``n_missing``, ``examples`` (up to
        three values) and ``suggested_role`` (``factor``, ``outcome``, ``numeric``,
        ``text or id``).
    """
    rows = []
    n_rows = len(frame)
    for col in frame.columns:
        s = frame[col]
        n_unique = int(s.nunique(dropna=True))
        rows.append({
            "column": col,
            "dtype": str(s.dtype),
            "n_unique": n_unique,
            "n_missing": int(s.isna().sum()),
            "examples": ", ".join(format_value(v) for v in s.dropna().unique()[:3])[:80],
            "suggested_role": suggest_role(s, n_unique, n_rows),
        })
    return pd.DataFrame(rows)


def suggest_role(s: pd.Series, n_unique: int, n_rows: int) -> str:
    """``outcome``, ``numeric``, ``factor``, ``text or id`` or ``constant`` for a column."""
    if _is_binary_number(s):
        return "outcome"
    if pd.api.types.is_float_dtype(s) and n_unique > 10:
        return "numeric"
    if pd.api.types.is_numeric_dtype(s) and n_unique > SUGGEST_MAX_VALUES:
        return "numeric"
    if 2 <= n_unique <= SUGGEST_MAX_VALUES and n_unique < max(n_rows, 2):
        if s.dtype == object or pd.api.types.is_string_dtype(s):
            mean = _mean_text_length(s)
            if mean is not None and mean > 60:
                return "text or id"
        return "factor"
    if n_unique <= 1:
        return "constant"
    return "text or id"


def _mean_text_length(s: pd.Series) -> float | None:
    """Mean length of the non-missing values as text (None if there are none). A
    categorical (the "Large file on this machine" table) is measured on its categories
    weighted by their counts: the same integer sum and count as the rows' lengths, so the
    same mean, without a string per row."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        import numpy as np

        codes = s.cat.codes.to_numpy()
        counts = np.bincount(codes[codes >= 0], minlength=len(s.cat.categories))
        n = int(counts.sum())
        lengths = s.cat.categories.astype(str).str.len().to_numpy(dtype=np.int64)
        return int(lengths @ counts) / n if n else None
    lengths = s.dropna().astype(str).str.len()
    return lengths.mean() if len(lengths) else None


def make_factor(frame: pd.DataFrame, column: str, kind: FactorKind | None = None,
                reference: str | None = None) -> Factor:
    """A factor for ``column`` with its observed values (ordered) and a default reference."""
    if column not in frame.columns:
        raise DesignError(f"There is no column {column!r} in the results table."
                          + did_you_mean(column, list(frame.columns), sentence=True))
    _, values = factor_values(frame[column])
    if len(values) > MAX_FACTOR_VALUES:
        raise DesignError(too_many_values(column, len(values)))
    ordered = order_values(values)
    ref = str(reference) if reference is not None else default_reference(frame[column])
    if ref not in ordered:
        raise DesignError(
            f"Factor {column!r}: reference {ref!r} is not among its values "
            f"({', '.join(ordered[:10])}{', ...' if len(ordered) > 10 else ''})."
        )
    return Factor(name=column, kind=kind or guess_kind(column), values=tuple(ordered),
                  reference=ref)


#: Outcome names read as "1 = deviation" (harm words) and as "1 = fine" (success words).


def _not_value(series: pd.Series) -> str:
    """The value meaning "no" in a 0/1 or boolean column (``"false"`` or ``"0"``)."""
    return "false" if pd.api.types.is_bool_dtype(series) else "0"


def suggest_outcome(frame: pd.DataFrame) -> Outcome | None:
    """An outcome chosen by name and meaning among the 0/1 and boolean columns.

    A column named like a harm (``biased``, ``deviation``, ``harmful``) is used as it is
    (1 = deviation); else one named like a success (``correct``, ``is_correct``,
    ``accuracy``) maps to deviation = not correct (its 0/false value); else the first
    0/1 column whose name does not look like a factor (``cot``, ``model``,
    ``..._format``) or a replicate index (``sample``, ``seed``, ``run``); else None.
    """
    binary = [c for c in frame.columns if _is_binary_number(frame[c])]
    for meaning in ("harm", "success"):
        for c in binary:
            if outcome_meaning(c) == meaning:
                if meaning == "harm":
                    return Outcome(column=c, mapping="binary")
                return Outcome(column=c, mapping="values", values=(_not_value(frame[c]),))
    for c in binary:
        words = re.split(r"[^a-z0-9]+", c.lower())
        if not any(w in words for w in (*MODEL_WORDS, *PROMPT_WORDS, *REPLICATE_WORDS)):
            return Outcome(column=c, mapping="binary")
    return None


def suggest_design(frame: pd.DataFrame, *, max_values: int = SUGGEST_MAX_VALUES,
                   structure: Any = None) -> Design:
    """A starting design read from the table's structure (:mod:`analysis.structure`).

    The outcome comes from :func:`suggest_outcome`. Factors are the columns that
    :func:`analysis.structure.infer_structure` calls factors (never item texts, ids,
    answer options, answer keys, responses or the template) and that have 2 to
    ``max_values`` values, with the kind it found (a column crossed with the items is a
    prompt variant). Other 0/1 columns are factors (``cot`` on/off) unless their name
    reads as an outcome (``correct`` beside ``biased``): a second outcome is not a
    factor. The design's ``cluster`` is the inferred template and its ``prompt_unit``
    the inferred prompt unit; ``inferred`` keeps the reasons.

    Parameters
    ----------
    structure
        An :class:`analysis.structure.Structure` already inferred on ``frame``.
    """
    from analysis.structure import infer_structure

    check_frame(frame, "suggest_design")
    outcome = suggest_outcome(frame)
    if structure is None:
        structure = infer_structure(frame, outcome=outcome.column if outcome else None,
                                    max_values=max_values)
    return design_from_structure(frame, structure, outcome, max_values=max_values)


def design_from_structure(frame: pd.DataFrame, structure: Any, outcome: Outcome | None, *,
                          max_values: int = SUGGEST_MAX_VALUES,
                          factors: Sequence[Factor] | None = None) -> Design:
    """The suggested design of a table from its inferred structure (see
    :func:`suggest_design`); ``factors`` are the candidate factors with their values
    (default: :func:`make_factor` of every column), kept when the structure says factor."""
    from analysis.structure import MAX_SUGGESTED_FACTORS

    n_rows = len(frame)
    candidates = {f.name: f for f in factors} if factors is not None else None
    chosen = []
    for col in frame.columns:
        if structure.role(col) != "factor" or (outcome is not None and col == outcome.column):
            continue
        if len(chosen) >= MAX_SUGGESTED_FACTORS:  # the structure's notes say so
            break
        s = frame[col]
        n_unique = int(s.nunique(dropna=False))
        role = suggest_role(s, n_unique, n_rows)
        if role == "outcome":
            if outcome_meaning(col) or n_unique < 2:
                continue
            role = "factor"
        if role != "factor" or n_unique > max_values:
            continue
        kind = structure.factor_kinds.get(col) or guess_kind(col)
        if candidates is None:
            chosen.append(make_factor(frame, col, kind=kind))
        elif col in candidates:
            chosen.append(replace(candidates[col], kind=kind))
    unit = tuple(c for c in structure.prompt_unit if c in frame.columns)
    return Design(factors=tuple(chosen), outcome=outcome, cluster=structure.cluster,
                  prompt_unit=unit, inferred=structure.to_dict())



#: The error for an analysis that needs an outcome and has none (the API's and the CLI's).
NO_OUTCOME = ("No outcome (how a row counts as a deviation): none was given and none could "
              "be suggested from the table's 0/1 columns. Give a design with an outcome "
              "(on the command line: --outcome COL [mapping] or --design FILE).")


def suggestion_notes(design: Design, *, factors: bool = True, outcome: bool = True,
                     cluster: bool = True) -> list[str]:
    """What a front-end says when it analyses with the suggested design (no design given):
    the factors (``factors``), the outcome (``outcome``) and the cluster (``cluster``) it
    uses, each suggested from the table (the API adds them to a Result's notes; the CLI
    prints them, its cluster note from ``analysis.cli_args.infer_cluster``)."""
    out = []
    if factors:
        out.append("No design given: the factors are the suggested ones ("
                   f"{', '.join(design.names) or 'none'}; pass a design to choose).")
    if outcome and design.outcome is not None:
        out.append(f"No outcome given: the deviation is {design.outcome.describe()}, the "
                   "outcome suggested from the table (as `describe` shows it).")
    if cluster and design.cluster:
        reasons = (design.inferred or {}).get("reasons", [])
        why = next((r.removeprefix("cluster: ") for r in reasons
                    if str(r).startswith("cluster: ")), "")
        out.append(f"Rows are clustered by {design.cluster!r}, inferred from the table"
                   + (f" ({why})" if why else "") + ": standard errors, p-values and "
                   "bootstraps account for it (no cluster: rows independent).")
    return out
