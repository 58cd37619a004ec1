"""The "Text features" section (Prepare page): numeric columns from a text column.

Calls :func:`analysis.api.features` on the active table and makes the
result the active table, so the new columns appear on the Disparity and Bias index
pages. Session-state keys: ``features_text``, ``features_names``, ``features_ref_col``,
``features_ref_text``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis import api as bw
from analysis import features as F
from analysis.design import Design
from analysis.errors import AnalysisError
from analysis.options.features import FeaturesOptions as Opts
from ui.common import active_frame, set_data, token_of
from ui.options import other_options
from ui.widgets import md

__all__ = ["text_features_section"]


def _text_columns(frame: pd.DataFrame) -> list[str]:
    return [str(c) for c in frame.columns
            if not pd.api.types.is_numeric_dtype(frame[c])
            and not pd.api.types.is_bool_dtype(frame[c])]


def _label(name: str, available: dict[str, str]) -> str:
    reason = available.get(name, "")
    return f"{name}: {F.DESCRIPTIONS[name]}" + (f" (unavailable: {reason})" if reason else "")


def text_features_section() -> None:
    """An expander: text column, features (unavailable ones marked), reference, button."""
    frame = active_frame()
    with st.expander("Text features: sentiment, polarity, subjectivity, similarity"):
        if frame is None:
            st.info("Load a table with a text column first.")
            return
        texts = _text_columns(frame)
        if not texts:
            st.info("The active table has no text column.")
            return
        table = bw.available_features()
        missing = {r.feature: r.reason for r in table.itertuples() if not r.available}
        st.caption("Computed offline from the packages' own lexicons and the bundled "
                   "MiniLM model; each feature becomes a numeric column of the active table "
                   "(for the Disparity and Bias index pages).")
        longest = max(range(len(texts)), key=lambda i: frame[texts[i]].dropna().astype(str)
                      .str.len().mean() if frame[texts[i]].notna().any() else 0)
        text = st.selectbox("Text column", texts, index=longest, key="features_text",
                            help="Default: the column with the longest texts.")
        # the page starts from the lexicon features (the CLI's default adds subjectivity)
        names = st.multiselect(Opts.label("features"), list(F.FEATURES),
                               default=[f for f in F.LEXICON_FEATURES if f not in missing],
                               format_func=lambda n: _label(n, missing), key="features_names")
        ref_col = ref_text = None
        if F.EMBEDDING_SIMILARITY in names:
            choice = st.selectbox("Compare each text with (embedding similarity)",
                                  ["(a fixed text)", *[c for c in texts if c != text]],
                                  key="features_ref_col")
            if choice == "(a fixed text)":
                ref_text = st.text_input("Reference text", key="features_ref_text") or None
            else:
                ref_col = choice
        # the embedding model is not offered: a visitor's path or name would be loaded on a
        # shared server (the bundled model only; the CLI and the API take --model)
        more = other_options(Opts, ("features", "skip_unavailable", "model"),
                             key="features_option")
        if st.button("Add the feature columns", key="features_add", disabled=not names):
            try:
                result = bw.features(frame, text_column=text, reference_column=ref_col,
                                     reference_text=ref_text, features=tuple(names),
                                     skip_unavailable=True,  # marked above
                                     **more)
            except AnalysisError as exc:
                st.error(md(str(exc)))
                return
            from ui.pending_design import suggested_design

            out, report = result.tables["data"], result.table

            token = token_of(out)  # a suggestion off this thread (ui/inference_pool.py)
            design: Design = st.session_state.get("design") or suggested_design(out, token)
            name = st.session_state.get("results_name", "table")
            set_data(out, f"{name} (+ text features)", token, design)
            st.session_state["features_report"] = report
        if "features_report" in st.session_state:
            st.dataframe(st.session_state["features_report"], hide_index=True, width="stretch")
