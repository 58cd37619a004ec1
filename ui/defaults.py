"""Default factor choices that never open a page on a nested pair (cached per table and
design: :func:`ui.common.per_table`)."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from analysis.design import Design
from analysis.factor_defaults import default_factors, unnested_factors, useful_factors
from ui.common import per_table

__all__ = ["choose_hint", "page_defaults", "unnested_defaults"]


def unnested_defaults(design: Design, candidates: Sequence[str], k: int) -> list[str]:
    """Up to ``k`` candidates, in order, with no nested pair among them (on the active data).

    Without loaded data, the first ``k`` candidates.
    """
    frame = st.session_state.get("results_frame")
    candidates = [c for c in dict.fromkeys(candidates) if frame is not None and c in frame]
    if frame is None or not candidates:
        return list(candidates)[:k]
    return list(per_table(unnested_factors, frame, design, design, tuple(candidates), k))


def page_defaults(design: Design, k: int | None = None,
                  kinds: Sequence[str] = ("domain", "prompt", "model"), *,
                  exclude: Sequence[str] = ()) -> list[str]:
    """The factors a page starts with on the active table (:mod:`analysis.factor_defaults`):
    no constant, text-like, id or nested-duplicate factor; up to ``k`` with no nested pair,
    or every useful one when ``k`` is None. Without data: the design's factors of
    ``kinds`` in that order."""
    frame = st.session_state.get("results_frame")
    if frame is None:
        names = [f for kind in kinds for f in design.of_kind(kind) if f not in exclude]
        return names if k is None else names[:k]
    if k is None:
        return list(per_table(useful_factors, frame, design, design, tuple(kinds),
                              exclude=tuple(exclude)))
    return list(per_table(default_factors, frame, design, design, k, tuple(kinds),
                          exclude=tuple(exclude)))


def choose_hint(message: str, key: str, values: list[str]) -> None:
    """A one-line "choose X" with the likeliest choice one click away: a button that sets
    the multiselect ``key`` to ``values`` (none when there is nothing to propose)."""
    from ui.widgets import md

    st.info(message)
    if values:
        def use() -> None:
            st.session_state[key] = list(values)

        st.button(md(f"Use {', '.join(values)}"), key=f"{key}_use", on_click=use,
                  type="primary")
