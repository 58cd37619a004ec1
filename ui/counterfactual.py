"""Widgets of the Counterfactual page (``pages/counterfactual.py``): what is swapped, the
options, and the views of :func:`analysis.api.counterfactual`'s Result."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from analysis.design import Design
from analysis.options import FROM_DESIGN
from analysis.options import counterfactual as counterfactual_options
from analysis.options.counterfactual import TEXT_MEASURES
from ui.generate import generate_section
from ui.options import other_options
from ui.widgets import each_note, md, show_table, table_download

__all__ = ["KEY", "choices", "generate_missing", "missing_swaps_view", "options", "show_result"]

#: Prefix of the page's widget keys.
KEY = "counterfactual"
_DESIGNS = "(the design's)"
_DEVIATION = "(the 0/1 deviation)"
_NONE = "(none)"


def choices(design: Design, results: pd.DataFrame) -> dict[str, Any]:
    """The swapped factor, its reference, the compared outcome (the deviation or a numeric
    score) and an optional text column of answers: the analysis's inputs."""
    order = [*design.of_kind("domain"), *[f for f in design.names
                                          if f not in design.of_kind("domain")]]
    c1, c2 = st.columns(2)
    swap = c1.selectbox("Swap this factor", order, key=f"{KEY}_swap",
                        help="Pairs: the same template and other factors, this factor swapped")
    values = [str(v) for v in design.factor(swap).values]
    reference = c2.selectbox("Against", [_DESIGNS, *values], key=f"{KEY}_reference_{swap}",
                             help="Every value is compared with this one (default: the "
                                  "design's reference; a control value is left out)")
    factors = set(design.names)
    numeric = [c for c in results.columns if c not in factors and c != "deviation"
               and pd.api.types.is_numeric_dtype(results[c])]
    texts = [c for c in results.columns if c not in factors
             and (pd.api.types.is_object_dtype(results[c])
                  or pd.api.types.is_string_dtype(results[c]))]
    c1, c2 = st.columns(2)
    outcome = c1.selectbox("Compare", ([_DEVIATION] if design.outcome is not None else [])
                           + numeric, key=f"{KEY}_score")
    text = c2.selectbox("Open-ended answers (text measures)", [_NONE, *texts],
                        key=f"{KEY}_text",
                        help="Paired sentiment difference, ROUGE-L and embedding distance "
                             "between the two answers of a pair")
    return {"swap": swap, "reference": None if reference == _DESIGNS else reference,
            "score": None if outcome in (_DEVIATION, None) else outcome,
            "text": None if text == _NONE else text}


def options(design: Design):  # noqa: ANN201 - a CounterfactualOptions
    """The options (the cluster and the text measures laid out here, the others by
    :func:`ui.options.other_options`). The class is read from its module at each run (an
    option declared there appears at once)."""
    Opts = counterfactual_options.CounterfactualOptions  # noqa: N806 - the class
    with st.expander("Other options", expanded=False):
        clustered = st.checkbox(
            "Pairs of one template are correlated (clustered tests)", value=True,
            key=f"{KEY}_clustered",
            help="Durkalski's clustered McNemar and CR2 intervals with Satterthwaite df "
                 "(the design's cluster, else the template column)")
        measures = st.multiselect(Opts.label("measures"), list(TEXT_MEASURES),
                                  default=list(Opts.default("measures")),
                                  key=f"{KEY}_measures", help=Opts.help("measures"))
        more = other_options(Opts, ("measures",), key="counterfactual_option")
    return Opts.coerce({**more, "measures": tuple(measures),
                        "cluster": FROM_DESIGN if clustered else None})


def missing_swaps_view(plan: pd.DataFrame, *, note: str) -> None:
    """The missing swaps as plan rows, with their download (``generate --plan``)."""
    if not len(plan):
        return
    st.subheader(f"Missing swaps ({len(plan):,} prompts)")
    st.caption(md(note))
    st.dataframe(plan.head(1000), hide_index=True, key=f"{KEY}_missing_table")
    table_download(plan, "counterfactual_missing_swaps", key=f"{KEY}_missing")


def generate_missing(results: pd.DataFrame, design: Design, plan: pd.DataFrame | None
                     ) -> None:
    """The missing swaps generated like a Planner plan (``ui.generate``): the prompts go to
    the Answers page, and their answers join the results (``docs/counterfactual.md``)."""
    if plan is None or not len(plan):
        return
    generate_section(results, design, plan, title="Generate the missing swaps")


def show_result(result) -> None:  # noqa: ANN001 - an analysis.api.Result
    """The readings, the per-value table, the text measures and the missing swaps."""
    each_note(result.notes)
    st.subheader("Each value against the reference, on pairs")
    show_table(result.table, "counterfactual_pairs", key=f"{KEY}_pairs", table_key=f"{KEY}_table")
    text = result.tables.get("text")
    if text is not None and len(text):
        st.subheader("Paired text measures")
        show_table(text, "counterfactual_text", key=f"{KEY}_text_download",
                   table_key=f"{KEY}_text_table")
    missing_swaps_view(result.tables["missing_swaps"],
                       note="A prompt with the reference but not the value (or the reverse): "
                            "these rows are a plan (kind = swap) for the generator.")
