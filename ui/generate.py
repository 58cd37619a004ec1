"""The loop in the app: the Planner's "Generate prompts" section, and on the Answers page
the answers of the generated prompts joined to the results with the same design
(``docs/generate.md``; the numbers come from :func:`analysis.api.generate_prompts` and
:func:`analysis.api.extend_results`).

Session-state keys: ``generate_prompts`` (the generated prompts table, offered on the
Answers page), ``generate_report`` (round trip and notes), ``generate_error``,
``generate_variants`` (``(YAML text, n)``: the template variants to complete when the
plan's variant rows need texts no learned template has; ``generate --variants-out``),
``generate_extended`` (coverage before / after of the last join).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis import api as bw
from analysis.design import Design
from analysis.errors import AnalysisError
from ui.active import set_data, token_of
from ui.common import page_link, table_download
from ui.widgets import each_note, md

__all__ = ["MAX_PAGE_PROMPTS", "OFFER", "generate_section", "import_answers"]

#: The Answers page's name for the generated prompts in its source choice.
OFFER = "Generated prompts (Planner)"
_ANSWERS_PAGE = "pages/judges_tools.py"
#: Distinct prompts the page learns templates from (a shared server; the CLI has no cap).
MAX_PAGE_PROMPTS = 100_000


def _text_columns(frame: pd.DataFrame, design: Design) -> list[str]:
    names = set(design.names)
    return [str(c) for c in frame.columns if c not in names and
            (pd.api.types.is_string_dtype(frame[c]) or frame[c].dtype == object)]


def generate_section(results: pd.DataFrame, design: Design, plan: pd.DataFrame, *,
                     title: str = "Generate prompts") -> None:
    """Prompts for ``plan`` from the templates learned from ``results`` (applied design)
    and / or an uploaded templates file; the table goes to the Answers page. Also the
    Counterfactual page's "Generate the missing swaps" (its plan of kind ``swap``)."""
    st.subheader(title)
    st.caption("Templates with a slot per factor are learned from the prompt texts (the "
               "text of each value found by comparing prompts that differ in it alone), "
               "or given in a file with {factor} slots; the planned combinations are "
               "filled with them. Then answer them on the Answers page.")
    texts = _text_columns(results, design)
    c1, c2 = st.columns(2)
    options = ["(none: use a templates file)", *texts]
    prompt = c1.selectbox("Prompt text column", options,
                          index=options.index("prompt") if "prompt" in texts else 0,
                          key="generate_prompt_col")
    upload = c2.file_uploader("Templates with {factor} slots (CSV or YAML; optional)",
                              type=["csv", "yaml", "yml"], key="generate_templates")
    repeats = st.checkbox("Allow repeats of prompts already asked", key="generate_repeats",
                          help="A combination whose templates give too few new texts "
                               "otherwise stops the generation.")
    if st.button("Generate prompts", key="generate_run", type="primary",
                 disabled=prompt == options[0] and upload is None):
        _generate(results, design, plan, None if prompt == options[0] else prompt,
                  upload, repeats)
    if "generate_error" in st.session_state:
        st.error(md(st.session_state["generate_error"]))
    _variants_download()
    prompts = st.session_state.get("generate_prompts")
    if prompts is None:
        return
    report = st.session_state.get("generate_report", {})
    trip = report.get("round_trip") or {}
    if trip:
        st.metric("Round trip", f"{100 * trip['share']:.2f} %",
                  help="Prompts of the table rebuilt exactly from their template with slots")
        st.caption(f"{trip['n_regenerated_with_slots']:,} of {trip['n_prompts']:,} prompts "
                   "rebuilt exactly from their template and their values' texts.")
    each_note(report.get("notes", ()))
    st.dataframe(prompts.head(500), hide_index=True, key="generate_table")
    table_download(prompts, "prompts", key="generate_csv")
    page_link(_ANSWERS_PAGE, label=f"Answer the {len(prompts):,} prompts with the model "
                                      "under test (Answers page)")


def _generate(results: pd.DataFrame, design: Design, plan: pd.DataFrame,
              prompt: str | None, upload, repeats: bool) -> None:  # noqa: ANN001 - an upload
    st.session_state.pop("generate_error", None)
    st.session_state.pop("generate_variants", None)
    if prompt and results[prompt].nunique() > MAX_PAGE_PROMPTS:
        st.session_state["generate_error"] = (
            f"{results[prompt].nunique():,} distinct prompts: the page learns templates from "
            f"at most {MAX_PAGE_PROMPTS:,}; use `python -m analysis generate` (docs/generate.md).")
        st.session_state.pop("generate_prompts", None)
        return
    templates = None if upload is None else (upload.getvalue(), upload.name)
    try:
        result = bw.generate_prompts(results if prompt else None, design, plan=plan,
                                     templates=templates, prompt=prompt or "prompt",
                                     allow_repeats=repeats, applied=True)
    except AnalysisError as exc:
        st.session_state["generate_error"] = str(exc)
        st.session_state.pop("generate_prompts", None)
        if prompt:
            _variants_to_complete(results, design, plan, prompt)
        return
    st.session_state["generate_prompts"] = result.table
    st.session_state["generate_report"] = {"round_trip": result.meta["round_trip"],
                                           "notes": list(result.notes)}
    st.session_state["generate_design"] = design


def _variants_to_complete(results: pd.DataFrame, design: Design, plan: pd.DataFrame,
                          prompt: str) -> None:
    """After a failed generation: the plan's variants that no learned template can write
    (the template fixes the factor the variant changes), as a templates file to complete."""
    kinds = plan["kind"] if "kind" in plan.columns else pd.Series(dtype=object)
    if not kinds.isin(["variant", "swap"]).any():
        return
    try:
        result = bw.generate_prompts(results, design, plan=plan, prompt=prompt,
                                     applied=True, variants_only=True)
    except AnalysisError:  # the generation's own message is already shown
        return
    if result.meta["n_variants"]:
        st.session_state["generate_variants"] = (result.meta["variants_yaml"],
                                                 result.meta["n_variants"])


def _variants_download() -> None:
    if "generate_variants" not in st.session_state:
        return
    text, n = st.session_state["generate_variants"]
    st.info(f"{n:,} template variant(s) of the plan need a text that no prompt of the table "
            "has (their template fixes the factor the variant changes). Download the file, "
            "write each text (keep the {slots}, remove 'EDIT: '), upload it above as the "
            "templates file and generate again.")
    st.download_button("Variants to complete (YAML)", text.encode("utf-8"),
                       file_name="variants_to_complete.yaml", mime="application/x-yaml",
                       key="generate_variants_yaml", on_click="ignore", icon="⬇️")


def import_answers(answered: pd.DataFrame | None) -> None:
    """On the Answers page: join the answers of the generated prompts to the active
    results (the same design), with ``added``, and show coverage before / after."""
    design = st.session_state.get("generate_design")
    results = st.session_state.get("results_frame")
    if answered is None or design is None or results is None \
            or "plan_row" not in answered.columns:
        return
    st.subheader("Add to the results")
    name = st.session_state.get("results_name", "results")
    st.caption(f"The answered prompts join **{md(name)}** with the same design, marked in an "
               "`added` column; every page then analyses the combined table.")
    if st.button("Add the answers to the results", key="generate_extend", type="primary"):
        try:
            result = bw.extend_results(results, answered, design)
        except AnalysisError as exc:
            st.error(md(str(exc)))
            return
        combined = result.raw  # its design may gain values (the model under test's name)
        set_data(combined, f"{name} + {len(answered):,} added", token_of(combined),
                 result.meta["design"])
        for note in result.notes[1:]:
            if note.startswith("The design's"):
                st.session_state.setdefault("generate_extend_notes", []).append(note)
        st.session_state["generate_extended"] = result.table
        st.session_state.pop("generate_prompts", None)  # answered: not offered again
    extended = st.session_state.get("generate_extended")
    each_note(st.session_state.get("generate_extend_notes", []))
    if extended is not None:
        shown = extended.assign(coverage_percentage=(100 * extended["coverage_percentage"])
                                .round(2))
        st.dataframe(shown, hide_index=True, key="generate_before_after")
        page_link("pages/coverage.py", label="Coverage of the combined table")
