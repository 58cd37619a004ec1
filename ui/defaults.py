"""Default factor choices that never open a page on a nested pair (cached per design)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from analysis.design import Design
from analysis.nesting import unnested_choice


@st.cache_resource(max_entries=32, show_spinner=False)
def _choice(token: str, design_json: str, candidates: tuple[str, ...], k: int,
            _frame: pd.DataFrame, _design: Design) -> list[str]:
    refs = {f: _design.factor(f).reference for f in candidates}
    return unnested_choice(_frame, candidates, k, references=refs)


def unnested_defaults(design: Design, candidates: Sequence[str], k: int) -> list[str]:
    """Up to ``k`` candidates, in order, with no nested pair among them (on the active data).

    Without loaded data, the first ``k`` candidates.
    """
    frame = st.session_state.get("results_frame")
    candidates = [c for c in dict.fromkeys(candidates) if frame is not None and c in frame]
    if frame is None or not candidates:
        return list(candidates)[:k]
    return list(_choice(st.session_state.get("results_token", ""), design.to_json(),
                        tuple(candidates), k, frame, design))
