"""Judge-noise widgets of the Subgroups and Factor importance pages (``analysis/judge_noise.py``).

Shown only when the active results table can be resampled: it has ``score_samples`` (a
judged file sent to the analyses after ``--samples K``) or human label columns. The
replicates are cached (keyed by the data, the design, the analysis settings and the noise
settings), so other widgets never recompute them.

Session-state keys: ``<prefix>_noise``, ``<prefix>_noise_r``, ``<prefix>_noise_mode``
(prefix ``subgroups`` or ``importance``) and ``subgroups_noise_alpha`` (importance uses
the fit's significance level).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis import api
from analysis.design import Design
from analysis.errors import AnalysisError
from analysis.judge_noise import (
    MODE_LABELS,
    SAME_SIGN,
    SIGNIFICANT,
    SURVIVES,
)
from analysis.options import options_for
from ui.importance import importance_result
from ui.widgets import md

__all__ = [
    "COLUMN_CONFIG", "REPLICATES", "noise_options", "page_noise_settings",
    "with_term_noise",
]


_NUM = st.column_config.NumberColumn
COLUMN_CONFIG = {
    SAME_SIGN: _NUM("noise: same sign", format="%.2f",
                    help="Share of judge-noise replicates with the original sign"),
    SIGNIFICANT: _NUM("noise: significant", format="%.2f",
                      help="Share of replicates where it is significant (same test, same "
                           "adjustment, same alpha)"),
    SURVIVES: _NUM("noise: survives", format="%.2f",
                   help="Share of replicates with the original sign and significant"),
}
REPLICATES = [50, 100, 200, 500, 1000]


def noise_options(results: pd.DataFrame, prefix: str, *, alpha: bool = False) -> dict | None:
    """The judge-noise expander (checkbox, replicates, mode, and with ``alpha`` the level
    of the adjusted p-value); None when off or when the table has neither score samples
    nor human labels."""
    modes = api.judge_noise_modes(results)
    if not modes:
        return None
    opts = options_for(prefix)
    with st.expander("Judge noise: do the conclusions survive re-judging?", expanded=False):
        st.caption("Redraws the judge's scores (from its K samples per row, or from the "
                   "judge-human confusion matrix), reruns this analysis with the same "
                   "settings on every replicate and counts how often each conclusion keeps "
                   "its sign and significance. Seeded (seed 0).")
        on = st.checkbox("Compute judge-noise survival", key=f"{prefix}_noise")
        c1, c2, c3 = st.columns([2, 3, 2]) if alpha else (*st.columns(2), None)
        c1.select_slider(opts.label("judge_noise"), REPLICATES, value=200,
                         key=f"{prefix}_noise_r", help=opts.help("judge_noise"))
        c2.radio("Redraw each score as", modes, format_func=MODE_LABELS.get,
                 index=modes.index(opts.default("noise_mode"))
                 if opts.default("noise_mode") in modes else 0, key=f"{prefix}_noise_mode")
        if c3 is not None:
            c3.select_slider("Significant: adjusted p <", [0.001, 0.01, 0.05, 0.1],
                             value=opts.default("noise_alpha"), key=f"{prefix}_noise_alpha",
                             help=opts.help("noise_alpha"))
    return page_noise_settings(prefix) if on else None


def page_noise_settings(prefix: str, results: pd.DataFrame | None = None) -> dict | None:
    """The judge-noise settings of a page's expander as its widgets stand (what
    :func:`noise_options` returns), without drawing them; None when off, never drawn, or
    (given ``results``) the table has no score samples nor human labels."""
    ss = st.session_state
    if not ss.get(f"{prefix}_noise"):
        return None
    if results is not None and not api.judge_noise_modes(results):
        return None
    opts = options_for(prefix)
    out = {"replicates": int(ss.get(f"{prefix}_noise_r", 200)),
           "mode": ss.get(f"{prefix}_noise_mode") or opts.default("noise_mode"),
           "seed": opts.default("seed")}
    if "noise_alpha" in opts.specs():
        out["alpha"] = float(ss.get(f"{prefix}_noise_alpha", opts.default("noise_alpha")))
    return out


def with_term_noise(fit, results: pd.DataFrame, design: Design, where: dict,
                    options: dict) -> pd.DataFrame:
    """The terms table of ``fit`` with the survival columns when asked for."""
    settings = noise_options(results, "importance")
    if settings is None:
        return fit.terms
    try:
        result = importance_result(results, design, where, options, [], noise=settings)
    except AnalysisError as exc:
        st.error(md(str(exc)))
        return fit.terms
    st.info(result.meta["judge_noise_summary"])
    return result.table

