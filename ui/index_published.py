"""The variant choice and the "LLMBI as published" section of the Bias index page.

Calls :func:`analysis.api.index_published`; session-state keys
``index_variant``, ``index_pub_polarity``, ``index_pub_by``, ``index_pub_dimension``,
``index_pub_penalty``, ``index_pub_lambda``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from analysis.columns import POLARITY_TEXTBLOB, SENTIMENT_VADER
from analysis.design import Design
from analysis.errors import AnalysisError
from analysis.index_published import COMPOSITE, PUBLISHED
from analysis.options.index_published import IndexPublishedOptions as Opts
from ui.common import table_download
from ui.widgets import md, show_table

__all__ = ["BOTH", "PUBLISHED", "VARIANTS", "published_section", "variant_choice"]


BOTH = "both, side by side"
VARIANTS = (COMPOSITE, PUBLISHED, BOTH)


def variant_choice() -> str:
    """Which LLMBI the page shows; the caption says what each one is."""
    variant = st.radio("Variant", VARIANTS, horizontal=True, key="index_variant")
    st.caption({
        COMPOSITE: "Shown: this app's composite index (deviation-rate scores per dimension, "
                   "a between-group sentiment disparity).",
        PUBLISHED: "Shown: LLMBI as its paper computes it: 0.2 + 2.5 x |polarity| per "
                   "response (TextBlob polarity in the paper), averaged per group.",
        BOTH: "Shown: both variants; they answer different questions and are not "
              "comparable number for number.",
    }[variant])
    return variant


def _polarity_columns(results: pd.DataFrame) -> list[str]:
    out = []
    for c in results.columns:
        if pd.api.types.is_numeric_dtype(results[c]) and not pd.api.types.is_bool_dtype(
                results[c]):
            v = results[c].to_numpy(dtype=float)
            inside = np.isfinite(v).any() and np.nanmin(v) >= -1 and np.nanmax(v) <= 1
            if inside and c != "deviation":
                out.append(str(c))
    first = [c for c in (POLARITY_TEXTBLOB, SENTIMENT_VADER) if c in out]
    return first + [c for c in out if c not in first]


def published_section(results: pd.DataFrame, design: Design) -> None:
    """Options, the per-group index and the per-response download."""
    st.subheader("LLMBI as published")
    columns = _polarity_columns(results)
    if not columns:
        st.info("No polarity column in [-1, 1]: add one with *Text features* on the Prepare "
                "page (TextBlob polarity is the paper's lexicon).")
        return
    c1, c2, c3 = st.columns(3)
    polarity = c1.selectbox("Polarity column", columns, key="index_pub_polarity")
    models = design.of_kind("model")
    by = c2.multiselect("One index per", design.names, default=models[:1], key="index_pub_by")
    dim = c3.selectbox("Bias dimension column", ["(one dimension, as the paper's code)"]
                       + design.of_kind("domain"), key="index_pub_dimension")
    c1, c2 = st.columns(2)
    penalty = c1.number_input(Opts.label("diversity_penalty"),
                              value=Opts.default("diversity_penalty"), step=0.1,
                              key="index_pub_penalty", help=Opts.help("diversity_penalty"))
    scale = c2.number_input(Opts.label("scale"), value=Opts.default("scale"), step=0.1,
                            key="index_pub_lambda", help=Opts.help("scale"))
    try:
        from analysis import api as bw

        index = bw.index_published(results, polarity=polarity, by=by,
                                   dimension=None if dim.startswith("(") else dim,
                                   diversity_penalty=penalty, scale=scale).raw
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return
    st.caption(f"Polarity: {md(index.lexicon)}. Per response: weight x |p| + P(D) + lambda x |p|; "
               "per group: (1/n) sum w_i B_i + P(D) + lambda S with B_i and S mean |p|.")
    show_table(index.totals, "llmbi_published", key="index_pub_totals")
    table_download(index.responses, "llmbi_published_responses", key="index_pub_responses")
