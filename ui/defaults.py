"""Default factor choices that never open a page on a nested pair (cached per table and
design: :func:`ui.common.per_table`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from analysis.design import Design
from analysis.factor_defaults import unnested_factors
from ui.common import per_table
from ui.opening import KINDS, start_factors

__all__ = ["choose_hint", "page_defaults", "unnested_defaults"]


def _coded(frame: pd.DataFrame, factors: Sequence[str], *, counts: bool = False
           ) -> pd.DataFrame:
    """For the nesting tests of ``factors`` (:func:`analysis.nesting.find_nestings`):
    the session's design applied to ``frame`` when it is cached and names them as they
    are in ``frame``, else ``frame``. Its factor columns are categoricals whose codes
    group the rows as the table's values do and whose categories are those values as
    text, so the nestings (which depend on the value pairs that occur and the values'
    text) are the same, read from integer codes instead of hashing 1M texts per factor
    (0.4-0.9 s at 1M rows; issue 44 item 3). With ``counts`` (for the factors' numbers
    of values, ``nunique``, which leaves a missing value out where the applied table
    counts it as the value "(missing)"), only when every factor is a text or
    categorical column without a missing value (its values are then its categories).
    Without ``counts``, when every factor has a declared reference: the cell table the
    load-time job read (:func:`ui.table_job.fine_cells`, every observed combination of the
    design's factors), once it has finished: the nestings depend only on which value pairs
    occur and on the values' text (not on a most frequent value: the references are
    given), so they are the same, read from thousands of cells instead of 1M rows."""
    from analysis.errors import AnalysisError
    from analysis.names import clash_free
    from ui.common import applied_results

    design = st.session_state.get("design")
    if design is None or frame is not st.session_state.get("results_frame") \
            or clash_free(frame.iloc[:0], design)[2] or not set(factors) <= set(design.names):
        return frame
    if counts and not all((isinstance(frame[f].dtype, (pd.StringDtype, pd.CategoricalDtype))
                           and not frame[f].hasnans) for f in factors):
        return frame
    try:
        applied = applied_results(design)
    except AnalysisError:
        return frame
    if len(applied) != len(frame):
        return frame
    if not counts and all(design.factor(f).reference is not None for f in factors):
        from ui.table_job import fine_cells  # the load-time job's cells: the same value pairs

        cells = fine_cells(applied, design, list(factors), {})
        if cells is not None:  # (the references given: no value is counted over the rows)
            return cells
    return applied


def _unnested(frame: pd.DataFrame, design: Design, candidates: tuple[str, ...], k: int
              ) -> list[str]:
    return unnested_factors(_coded(frame, candidates), design, candidates, k)


def _start_with(frame: pd.DataFrame, design: Design, k: int | None, kinds: tuple[str, ...],
                exclude: tuple[str, ...]) -> list[str]:
    return start_factors(frame, design, k, kinds, exclude, coded=_coded)  # as default_factors


def unnested_defaults(design: Design, candidates: Sequence[str], k: int) -> list[str]:
    """Up to ``k`` candidates, in order, with no nested pair among them (on the active data).

    Without loaded data, the first ``k`` candidates.
    """
    frame = st.session_state.get("results_frame")
    candidates = [c for c in dict.fromkeys(candidates) if frame is not None and c in frame]
    if frame is None or not candidates:
        return list(candidates)[:k]
    return list(per_table(_unnested, frame, design, design, tuple(candidates), k))


def page_defaults(design: Design, k: int | None = None,
                  kinds: Sequence[str] = KINDS, *,
                  exclude: Sequence[str] = ()) -> list[str]:
    """The factors a page starts with on the active table (:mod:`analysis.factor_defaults`):
    no constant, text-like, id or nested-duplicate factor; up to ``k`` with no nested pair,
    or every useful one when ``k`` is None. Without data: the design's factors of
    ``kinds`` in that order."""
    frame = st.session_state.get("results_frame")
    if frame is None:
        names = [f for kind in kinds for f in design.of_kind(kind) if f not in exclude]
        return names if k is None else names[:k]
    return list(per_table(_start_with, frame, design, design, k, tuple(kinds),
                          tuple(exclude)))


def choose_hint(message: str, key: str, values: list[str]) -> None:
    """A one-line "choose X" with the likeliest choice one click away: a button that sets
    the multiselect ``key`` to ``values`` (none when there is nothing to propose)."""
    from ui.widgets import md

    st.info(message)
    if values:
        def use() -> None:
            st.session_state[key] = list(values)

        st.button(md(f"Use {', '.join(values)}"), key=f"{key}_use", on_click=use,
                  type="primary")
