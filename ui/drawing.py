"""Drawing-only options of a figure as an ``st.fragment`` (issue 32 item 3).

A figure's own options (scale, a threshold of what is shown, the intercept) change how
the figure is drawn, not what is computed: in a fragment, a click on one reruns the
fragment only, not the page above it (applying the design, cell tables, the fit). At the
end of such a fragment-only rerun the settings are kept as a full run keeps them
(``app.py``: ``page_state.remember``, ``session.save``). See docs/performance.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pandas as pd
import streamlit as st

from analysis.options.importance import ImportanceOptions as Opts

__all__ = ["drawing_fragment", "importance_figure_panel"]


def _fragment_rerun() -> bool:
    """Whether this run is a fragment's own rerun (not a full run of the page)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return bool(ctx is not None and getattr(ctx, "fragment_ids_this_run", None))


def drawing_fragment(fn: Callable[..., None]) -> Callable[..., None]:
    """``st.fragment(fn)`` that keeps the page's settings after a fragment-only rerun."""

    @st.fragment
    @functools.wraps(fn)
    def run(*args: object, **kwargs: object) -> None:
        fn(*args, **kwargs)
        if _fragment_rerun():  # app.py's closing steps do not run for a fragment
            from ui import page_state, session

            page_state.remember()
            session.save()

    return run


@drawing_fragment
def importance_figure_panel(fit: object, options: dict, where: dict, covariates: list,
                            standardise: bool) -> None:
    """Factor importance: scale, p filter and intercept, the coefficient figure, its
    downloads and "Add to report" (a change of the three redraws the figure only)."""
    from analysis.columns import P_ADJUSTED, P_VALUE
    from analysis.figures.importance import importance_figure
    from analysis.importance import P_STEPS
    from ui.common import figure_downloads
    from ui.report import add_to_report_button
    from ui.widgets import each_note

    c1, c2, c3 = st.columns([2, 2, 1])  # compact controls, then the answer: the coefficients
    scale = c1.radio(Opts.label("scale"), Opts.choices("scale"), horizontal=True,
                     index=Opts.choices("scale").index(Opts.default("scale")),
                     key="importance_scale",
                     format_func={"odds_ratio": "odds ratio (log axis)",
                                  "coef": "coefficient (log-odds)"}.get)
    max_p = c2.select_slider("Show terms with p <=", P_STEPS, value=1.0,
                             key="importance_max_p")
    intercept = c3.checkbox("Intercept", key="importance_intercept")
    p_column = P_ADJUSTED if options["adjust"] == "bh" else P_VALUE
    terms: pd.DataFrame = fit.terms
    fig = importance_figure(terms, scale=scale, max_p=max_p, p_column=p_column,
                            include_intercept=intercept,
                            references=getattr(fit, "references", None))
    st.plotly_chart(fig, key="importance_chart")
    each_note(fit.notes, st.warning)
    figure_downloads(fig, "factor_importance", key="importance_figure")
    add_to_report_button("importance", {**options, "where": where, "scale": scale,
                                        "max_p": max_p, "covariates": covariates,
                                        "standardise": standardise},
                         noise_prefix="importance")
