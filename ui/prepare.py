"""Helpers of the Prepare page: the base table, the step builder, applying the recipe.

Session-state keys of this page: ``prepare_base`` (the table steps apply to: the one
loaded on the Data page), ``prepare_base_token``, ``prepare_base_name``,
``prepare_steps`` (list of :class:`analysis.prepare.Step`), ``prepare_output_token``
(the token of the prepared table once it is in use, so the page knows it is its own).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from analysis.design import Design, check_design
from analysis.errors import AnalysisError
from analysis.prepare import STEP_KINDS, Step, apply_recipe
from ui.common import active_frame, set_data, token_of

__all__ = [
    "HELP", "add_step", "base_table", "prepare_rebuild", "step_form", "steps", "use_prepared",
]


HELP = {
    "melt": "several columns (one per model or setting) -> one factor column + one value column",
    "match": "an outcome: does an answer text name the labelled option (or equal a column)? "
             "Texts are normalised (case, punctuation, spaces, a leading article).",
    "recode": "rename or merge values of a column",
    "threshold": "a numeric score -> 0/1",
    "filter": "keep (or drop) rows with the given values",
}


def base_table() -> tuple[pd.DataFrame | None, str]:
    """The table the steps apply to; a newly loaded table resets the steps. A design
    suggested in the background (a prepared table's: :func:`use_prepared`) is adopted
    here as on every other page (``ui.common.ensure_data``)."""
    from ui.pending_design import adopt_finished

    adopt_finished()
    frame = active_frame()
    if frame is None:
        return None, ""
    token = st.session_state.get("results_token")
    if token not in (st.session_state.get("prepare_base_token"),
                     st.session_state.get("prepare_output_token")):
        st.session_state["prepare_base"] = frame
        st.session_state["prepare_base_token"] = token
        st.session_state["prepare_base_name"] = st.session_state.get("results_name", "")
        # how the user rebuilds the raw table: an import's command, else its file
        st.session_state["prepare_base_rebuild"] = st.session_state.get("results_rebuild")
        st.session_state["prepare_steps"] = []
    return st.session_state["prepare_base"], st.session_state["prepare_base_name"]


def steps() -> list[Step]:
    """The steps added so far."""
    return st.session_state.setdefault("prepare_steps", [])


def step_form(table: pd.DataFrame) -> dict[str, Any] | None:
    """Widgets for one new step (on the current prepared table); its parameters or None."""
    kind = st.selectbox("Step", list(STEP_KINDS), key="prepare_kind",
                        format_func=lambda k: f"{k}: {HELP[k]}")
    cols = [str(c) for c in table.columns]
    if kind == "melt":
        c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
        return {"columns": c1.multiselect("Columns to melt", cols, key="prepare_melt_cols"),
                "factor": c2.text_input("Factor name", "model", key="prepare_melt_factor"),
                "value": c3.text_input("Value name", "answer", key="prepare_melt_value"),
                "strip": c4.text_input("Strip prefix", key="prepare_melt_strip") or None}
    if kind == "match":
        c1, c2 = st.columns(2)
        text = c1.selectbox("Answer text column", cols, key="prepare_match_text")
        how = c2.radio("Compare with", ["the option a label names", "another column"],
                       key="prepare_match_how", horizontal=True)
        c3, c4, c5 = st.columns([2, 1, 1])
        params: dict[str, Any] = {"text": text}
        if how == "another column":
            params["other"] = c3.selectbox("Column", cols, key="prepare_match_other")
        else:
            params["options"] = c3.multiselect("Option text columns", cols,
                                               key="prepare_match_options")
            params["label"] = c4.selectbox("Label column", cols, key="prepare_match_label",
                                           help="names the right option: its column name, "
                                                "position 0, 1, ... or letter A, B, ...")
        params["output"] = c5.text_input("Output column", "correct", key="prepare_match_out")
        return params
    if kind == "recode":
        c1, c2, c3 = st.columns([1, 2, 1])
        column = c1.selectbox("Column", cols, key="prepare_recode_col")
        pairs = c2.text_area("old = new, one per line", key="prepare_recode_map")
        mapping = dict(tuple(s.strip() for s in line.split("=", 1))
                       for line in pairs.splitlines() if "=" in line)
        return {"column": column, "mapping": mapping,
                "output": c3.text_input("Output column (empty: same)",
                                        key="prepare_recode_out") or None}
    if kind == "threshold":
        c1, c2, c3, c4 = st.columns(4)
        return {"column": c1.selectbox("Score column", cols, key="prepare_thr_col"),
                "threshold": c2.number_input("Threshold", value=0.5, key="prepare_thr_t"),
                "direction": c3.radio("1 where the score is", ["above", "below"],
                                      key="prepare_thr_dir", horizontal=True),
                "output": c4.text_input("Output column", key="prepare_thr_out") or None}
    c1, c2, c3 = st.columns([1, 2, 1])
    column = c1.selectbox("Column", cols, key="prepare_filter_col")
    values = sorted(table[column].astype(str).unique().tolist())[:500] if column else []
    return {"column": column,
            "values": c2.multiselect("Values", values, key="prepare_filter_values"),
            "exclude": c3.checkbox("Drop these instead", key="prepare_filter_exclude") or None}


def add_step(base: pd.DataFrame, kind: str, params: dict[str, Any]) -> str | None:
    """Append a step if it is valid and applies; an error message otherwise."""
    try:
        step = Step.make(kind, **params)
        apply_recipe(base, [*steps(), step])
    except AnalysisError as exc:
        return str(exc)
    steps().append(step)
    return None


def use_prepared(table: pd.DataFrame, name: str) -> None:
    """Make the prepared table active; the design keeps fitting factors and gets the recipe."""
    design: Design | None = st.session_state.get("design")
    try:
        if design is None:
            raise AnalysisError("no design yet")
        check_design(design, table)
    except AnalysisError:  # the suggestion off this thread (ui/inference_pool.py)
        from ui.pending_design import suggested_design

        design = suggested_design(table, token_of(table))
    token = token_of(table)
    set_data(table, f"{name} (prepared)", token, design.with_recipe(steps()))
    st.session_state["results_prepare"] = prepare_rebuild()
    st.session_state["prepare_output_token"] = token
    st.session_state["design_rev"] = st.session_state.get("design_rev", 0) + 1


def prepare_rebuild() -> str:
    """The commands that rebuild the prepared table as ``results.parquet``: the raw table's
    import (then written as ``raw.parquet``) if it was imported, and ``prepare FILE --recipe
    recipe.yaml`` (Copy as CLI offers the recipe's download)."""
    from analysis.reproduce import prepare_command
    from ui.reproduce import file_of

    imported = st.session_state.get("prepare_base_rebuild")
    if imported:
        return (imported.replace("--out results.parquet", "--out raw.parquet") + "\n"
                + prepare_command("raw.parquet"))
    return prepare_command(file_of(st.session_state.get("prepare_base_name", "")))
