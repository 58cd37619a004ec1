"""Widgets of the Design page: one factor's settings, the outcome mapping, design upload."""

from __future__ import annotations

import functools

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
from ui.common import per_table
from ui.context import guarded_callback
from ui.widgets import each_note, md

__all__ = [
    "MAPPING_LABELS", "STRUCTURE_ACTIONS", "STRUCTURE_COLUMN", "factor_widgets",
    "on_design_upload", "outcome_widgets", "prompt_unit_editor", "structure_section",
]


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


# --- the inferred structure, with one-click overrides ----------------------------------------


STRUCTURE_ACTIONS = {
    "factor": "Make it a factor",
    "drop": "Not a factor",
    "cluster": "Use it as the cluster",
    "no_cluster": "No cluster (independent rows)",
}


def structure_section(frame: pd.DataFrame, design: Design, key: str) -> None:
    """The inferred roles with their reasons (a table: data is never rendered as
    Markdown), and buttons that override one inference in the active design."""
    from ui.pending_design import job_notice, structure_job

    job = structure_job(st.session_state.get("results_token", ""), frame)  # off this thread
    if not job.done:
        job_notice(job)
        return
    if job.result is None or job.result.structure is None:
        st.warning(md(f"The structure could not be read from the table: "
                      f"{job.result.error if job.result else 'no result'}. Declare the "
                      "factors, the cluster and the prompt unit on the Design page."))
        return
    structure = job.result.structure
    st.caption("Read from the table alone (docs/structure.md): what each column is, what "
               "a prompt is and which rows belong together. Override any of it below.")
    st.dataframe(structure.table, width="stretch", hide_index=True, height=240)
    each_note(structure.notes, st.info)
    st.caption(md(f"Active design: cluster {design.cluster or 'none (independent rows)'}; "
                  f"a prompt is one combination of {', '.join(design.prompt_unit_columns())}."))
    prompt_unit_editor(frame, design, structure, key)
    c1, c2 = st.columns([2, 5])
    c1.selectbox("Column", list(frame.columns), key=STRUCTURE_COLUMN)
    # a wrapping row of buttons as wide as their labels: in four fixed columns the labels
    # were cut ("Use it as the cl...", issue 42)
    row = c2.container(horizontal=True, wrap=True, key=f"{key}_actions")
    for action, label in STRUCTURE_ACTIONS.items():
        row.button(label, key=f"{key}_{action}", width="content",
                   on_click=guarded_callback(functools.partial(_override, action)))


#: Session key of the column the structure overrides act on.
STRUCTURE_COLUMN = "design_structure_column"


def _override(action: str) -> None:
    """Apply one override to the active design and redraw the Design page."""
    from dataclasses import replace

    frame = st.session_state["results_frame"]
    column = st.session_state.get(STRUCTURE_COLUMN)
    design = st.session_state.get("design") or Design()
    try:
        if action == "factor" and column not in design.names:
            design = replace(design, factors=(*design.factors, make_factor(frame, column)))
        elif action == "drop":
            design = replace(design, factors=tuple(f for f in design.factors
                                                   if f.name != column))
        elif action == "cluster":
            design = design.with_cluster(column)
        elif action == "no_cluster":
            design = design.with_cluster(None)
    except AnalysisError as exc:
        st.session_state["design_upload_error"] = f"{column}: {exc}"
        return
    st.session_state.pop("design_upload_error", None)
    st.session_state["design"] = design
    st.session_state["design_rev"] = st.session_state.get("design_rev", 0) + 1


def _unit_summary(frame: pd.DataFrame, unit: tuple[str, ...],
                  design: Design):  # noqa: ANN202 - a UnitSummary or the PromptUnitError
    from analysis.errors import PromptUnitError
    from analysis.prompt_unit import check_prompt_unit

    try:
        return check_prompt_unit(frame, unit, design)
    except PromptUnitError as exc:
        return exc


def prompt_unit_editor(frame: pd.DataFrame, design: Design, structure, key: str) -> None:
    """The prompt unit, editable (several columns): what the inference says and why, the
    number of prompts the chosen columns give, and a button that makes it the design's
    (refused with its message when the columns cannot be a prompt unit)."""
    from analysis.errors import PromptUnitError

    inferred = [c for c in structure.prompt_unit if c in frame.columns]
    current = [c for c in design.prompt_unit if c in frame.columns]
    st.markdown("**Prompt unit** (what every model or setting answers)")
    chosen = st.multiselect(
        "A prompt is one combination of", list(frame.columns),
        default=current or inferred or [c for c in design.prompt_unit_columns()
                                        if c in frame.columns],
        key=f"{key}_unit", help="Pairing (Compare) and the prompt counts use it. Empty: "
                                "the domain and prompt factors of the design.")
    declared = ", ".join(design.prompt_unit) or "not declared (the domain and prompt factors)"
    st.caption(md(f"Inferred from the table: {', '.join(inferred) or 'each row'}: "
                  f"{structure.prompt_unit_reason or 'no reason given'}. In the design: "
                  f"{declared}."))
    summary = per_table(_unit_summary, frame, design, tuple(chosen), design) if chosen else None
    if isinstance(summary, PromptUnitError):
        st.error(md(str(summary)))
    elif summary is not None:
        st.caption(md(f"{', '.join(chosen)}: {summary.describe()}."))
    if tuple(chosen) != tuple(design.prompt_unit):
        st.button("Use this prompt unit", key=f"{key}_use_unit",
                  disabled=isinstance(summary, PromptUnitError),
                  on_click=guarded_callback(functools.partial(_use_unit, tuple(chosen))))


def _use_unit(unit: tuple[str, ...]) -> None:
    design = st.session_state.get("design") or Design()
    st.session_state["design"] = design.with_prompt_unit(unit)
    st.session_state["design_rev"] = st.session_state.get("design_rev", 0) + 1
