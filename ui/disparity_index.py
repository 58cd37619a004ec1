"""Widgets and the computation of the Bias index page (no statistics: one cached call of
:func:`analysis.api.bias_index`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.design import Design
from analysis.index import Dimension
from analysis.options.index import DIMENSION_SCORES
from analysis.options.index import IndexOptions as Opts
from ui.defaults import page_defaults
from ui.options import other_options
from ui.widgets import md

__all__ = ["DRAWN", "INTERVALS", "index_dimensions", "index_options", "index_result",
           "likeliest_dimensions"]


#: The options of ``IndexOptions`` the page lays out (scores and weights per dimension,
#: the penalty as a kind and a value, the replicates in the bootstrap's expander).
DRAWN = ("scores", "weights", "model", "printed_equation", "normalize_weights", "penalty",
         "penalty_gini", "sentiment", "sentiment_by", "sentiment_score", "sentiment_scale",
         "n_resamples")
#: Options of the bootstrap intervals, not of ``bias_index``.
INTERVALS = ("confidence", "seed")


def index_dimensions(design: Design, model: str | None) -> list[str]:
    """Two useful domain factors (no nested pair), else two useful factors of any kind."""
    exclude = [model] if model else []
    return (page_defaults(design, 2, ("domain",), exclude=exclude)
            or page_defaults(design, 2, exclude=exclude))


def likeliest_dimensions(design: Design) -> list[str]:
    """What "Use ..." proposes when no dimension is chosen: the defaults without a model
    split, else the first factor of the design."""
    model = st.session_state.get("index_model")
    model = None if model in (None, "(all rows)") else model
    return index_dimensions(design, model) or [f for f in design.names if f != model][:1]


def index_options(design: Design, numeric: list[str]) -> dict | None:
    """The Bias index page's widgets; returns the keyword options of ``bias_index`` and,
    under ``intervals``, the bootstrap's ``confidence`` and ``seed`` (the page pops them).
    Options of :class:`~analysis.options.index.IndexOptions` the page does not lay out
    (:data:`DRAWN`) get widgets from their declaration (``index_option_<name>``)."""
    models = design.of_kind("model")
    c1, c2 = st.columns([1, 2])
    model = c1.selectbox(Opts.label("model"), ["(all rows)"] + design.names,
                         index=1 + design.names.index(models[0]) if models else 0,
                         key="index_model")
    model = None if model == "(all rows)" else model
    choices = [f for f in design.names if f != model]
    factors = c2.multiselect("Bias dimensions (sensitive factors)", choices,
                             default=index_dimensions(design, model),
                             key="index_dimensions")
    if not factors:
        return None
    with st.expander("Scores, weights, diversity penalty and sentiment", expanded=False):
        # folded: the index and its figure come first (the defaults are the paper's)
        dims = []
        for f in factors:
            c1, c2 = st.columns([2, 1])
            score = c1.selectbox(f"Score of {md(f)}", DIMENSION_SCORES, key=f"index_score_{f}")
            weight = c2.number_input(f"Weight of {md(f)}", 0.0, value=1.0, step=0.5,
                                     key=f"index_weight_{f}")
            dims.append(Dimension(f, score, weight))
        c1, c2, c3 = st.columns(3)
        normalize = c1.checkbox(Opts.label("normalize_weights"),
                                Opts.default("normalize_weights"), key="index_normalize")
        printed = c1.checkbox(Opts.label("printed_equation"), Opts.default("printed_equation"),
                              key="index_printed_equation",
                              help="The LLMBI paper prints sum w_i B_i; its code divides by n. "
                                   "Weights are then used as given (docs/bias_index.md).")
        kind = c2.radio("Diversity penalty P(D)", ["constant", "coverage_gini"],
                        key="index_penalty_kind", horizontal=True)
        value = c3.number_input("Penalty (constant, or scale of the Gini)",
                                value=Opts.default("penalty"), step=0.1,
                                key="index_penalty_value")
        c1, c2, c3 = st.columns(3)
        sentiment = c1.selectbox("Sentiment column (S)", ["(none)"] + numeric,
                                 key="index_sentiment")
        s_by = c2.selectbox("Sentiment compared across", factors, key="index_sentiment_by")
        s_score = c3.selectbox(Opts.label("sentiment_score"), Opts.choices("sentiment_score"),
                               index=Opts.choices("sentiment_score").index(
                                   Opts.default("sentiment_score")),
                               key="index_sentiment_score")
        scale = st.number_input(Opts.label("sentiment_scale"),
                                value=Opts.default("sentiment_scale"), step=0.1,
                                key="index_lambda")
        more = other_options(Opts, DRAWN, key="index_option")
        kw = Opts.coerce(more).index_kwargs(factors)  # as bias_index takes them (lists)
    return {"dimensions": dims, "model": model, "normalize_weights": normalize,
            **({"printed_equation": True} if printed else {}),
            "penalty_kind": kind, "penalty_value": value,
            "sentiment": None if sentiment == "(none)" else sentiment, "sentiment_by": s_by,
            "sentiment_score": s_score, "sentiment_scale": scale,
            **{k: kw.get(k, v) for k, v in more.items() if k not in INTERVALS},
            "intervals": {k: v for k, v in more.items() if k in INTERVALS}}


def index_result(results: pd.DataFrame, design: Design, where: dict, options: dict, *,
                 boot: dict | None = None, intervals: dict | None = None) -> object:
    """The page's one call: :func:`analysis.api.bias_index` of its arguments (the options
    and dimensions :func:`analysis.reproduce.index_options` reads from them, as "Copy as
    CLI / Python" writes them), cached (:func:`ui.common.analysis_result`); ``boot``: the
    bootstrap's settings when on."""
    from analysis.reproduce import index_options as options_of
    from ui.common import analysis_result, cells_for

    opts, factors = options_of(options, boot=boot, design_cluster=design.cluster,
                               intervals=intervals)
    cells = None
    if options.get("sentiment") is None and options.get("penalty_kind") == "constant":
        # the dimension scores from the cached cell table (summed from the load-time
        # job's cells at 1M rows), not from the rows: the same counts
        model = [options["model"]] if options.get("model") else []
        columns = [*model, *(d.factor for d in options["dimensions"]), *(where or {})]
        if set(columns) <= set(design.names):
            cells = cells_for(results, design, list(dict.fromkeys(columns)), where)
    return analysis_result("bias_index", results, design, opts, factors=factors,
                           where=where, cells=cells)
