"""Widgets of the Design page: one factor's settings, the outcome mapping, design upload."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.design import (
    KINDS,
    MAPPINGS,
    Design,
    Factor,
    Outcome,
    check_design,
    factor_values,
    make_factor,
)
from analysis.errors import AnalysisError
from ui.context import guarded_callback
from ui.widgets import md

MAPPING_LABELS = {
    "binary": "0/1 or true/false column (1 = deviation)",
    "values": "some values count as deviation",
    "equals": "deviation where it equals another column",
    "below": "deviation below a threshold",
    "above": "deviation above a threshold",
}


def factor_widgets(frame: pd.DataFrame, column: str, current: Factor | None, key: str
                   ) -> Factor | None:
    """Kind, reference and extra (unseen) values of one factor; None with a message if invalid."""
    try:
        observed = make_factor(frame, column)
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return None
    base = current if current is not None else observed
    extra_default = [v for v in base.values if v not in observed.values]
    c1, c2, c3 = st.columns([1, 2, 2])
    kind = c1.selectbox("Kind", KINDS, index=KINDS.index(base.kind), key=f"{key}_kind")
    values = list(observed.values) + extra_default
    ref_index = values.index(base.reference) if base.reference in values else 0
    reference = c2.selectbox("Reference (control) value", values, index=ref_index,
                             key=f"{key}_ref")
    extra = c3.text_input("Declared but unseen values (comma-separated)",
                          ", ".join(extra_default), key=f"{key}_extra",
                          help="Values the design has but the data lacks: coverage counts "
                               "them as empty cells.")
    unseen = [v.strip() for v in extra.split(",") if v.strip() and v.strip() not in
              observed.values]
    wanted = set(observed.values) | set(unseen)  # the current design's order is the display order
    order = dict.fromkeys([v for v in base.values if v in wanted] + list(observed.values) + unseen)
    try:
        return Factor(column, kind, tuple(order),
                      reference if reference in observed.values or reference in unseen
                      else observed.reference)
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return None


def outcome_widgets(frame: pd.DataFrame, current: Outcome | None, key: str) -> Outcome | None:
    """Outcome column and its mapping to deviation; None when no outcome is chosen."""
    options = ["(no outcome)", *frame.columns]
    default = options.index(current.column) if current and current.column in options else 0
    column = st.selectbox("Outcome column", options, index=default, key=f"{key}_col")
    if column == "(no outcome)":
        return None
    mapping_default = MAPPINGS.index(current.mapping) if current and current.column == column \
        else 0
    mapping = st.radio("How a row counts as a deviation", MAPPINGS, index=mapping_default,
                       format_func=MAPPING_LABELS.get, key=f"{key}_map", horizontal=True)
    try:
        if mapping == "values":
            _, values = factor_values(frame[column])
            chosen = st.multiselect("Values that count as deviation", values[:500],
                                    default=[v for v in (current.values if current else ())
                                             if v in values], key=f"{key}_vals")
            return Outcome(column, "values", values=tuple(chosen)) if chosen else None
        if mapping == "equals":
            others = [c for c in frame.columns if c != column]
            idx = others.index(current.other_column) if current and current.other_column in \
                others else 0
            other = st.selectbox("Compared with column", others, index=idx, key=f"{key}_other")
            return Outcome(column, "equals", other_column=other)
        if mapping in ("below", "above"):
            start = current.threshold if current and current.threshold is not None else 3.0
            threshold = st.number_input("Threshold", value=float(start), key=f"{key}_thr")
            continuous = st.checkbox(
                "Continuous score (Factor importance models the score itself; the threshold "
                "gives the 0/1 deviation of the other analyses)", key=f"{key}_continuous",
                value=bool(current and current.column == column
                           and current.type == "continuous"))
            return Outcome(column, mapping, threshold=threshold,
                           type="continuous" if continuous else "binary")
        return Outcome(column, "binary")
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return None


@guarded_callback
def on_design_upload() -> None:
    """Callback: read an uploaded design file and check it against the active table."""
    upload = st.session_state.get("design_upload")
    if upload is None:
        return
    try:
        design = Design.from_file_bytes(upload.getvalue())
        warnings = check_design(design, st.session_state["results_frame"])
    except AnalysisError as exc:
        st.session_state["design_upload_error"] = f"{upload.name}: {exc}"
        return
    st.session_state.pop("design_upload_error", None)
    st.session_state["design"] = design
    st.session_state["design_upload_warnings"] = warnings
    st.session_state["design_rev"] = st.session_state.get("design_rev", 0) + 1
