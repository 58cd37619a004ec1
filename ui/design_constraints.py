"""Design page: the design's constraints, and those the table suggests, for confirmation.

Session-state keys: ``<key>_keep`` / ``<key>_accept`` (checkboxes).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.constraints import propose_constraints
from analysis.design import Design
from ui.widgets import md

__all__ = ["constraints_section"]


def constraints_section(frame: pd.DataFrame, design: Design, *, key: str) -> Design:
    """Show the declared constraints (keep them or not) or the proposed ones (accept them
    into the design); the design with the choice made (``docs/planning.md``)."""
    st.subheader("Constraints")
    if design.constraints is not None:
        for c in design.constraints:
            st.markdown(f"- {md(c.describe())}")
        if not design.constraints:
            st.caption("The design declares that no combination is impossible.")
        keep = st.checkbox("Keep the declared constraints", value=True, key=f"{key}_keep")
        return design if keep else design.with_constraints(None)
    names = [f for f in design.names if f in frame.columns]
    proposed = propose_constraints(frame, names) if len(names) > 1 else ()
    if not proposed:
        st.caption("No constraint proposed: no control value (none, no ..., base) occurs "
                   "only with control values of another factor.")
        return design
    st.caption("Proposed from the table's control values: combinations that cannot exist "
               "(never planned). Every other empty combination is a design gap the "
               "Planner may fill.")
    for c in proposed:
        st.markdown(f"- **{md(c.describe())}**: {md(c.reason)}")
    accept = st.checkbox("Accept the proposed constraints into the design", value=False,
                         key=f"{key}_accept")
    return design.with_constraints(proposed) if accept else design
