"""The time capsules' multiple-testing option on the Cohorts page (``adjust`` of
:class:`analysis.options.cohorts.CohortsOptions`): its widget, the tests table's header
naming the method, and the section's "Copy as CLI / Python" (``cohorts --demographics``
with the capsules' options)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from analysis import reproduce as rp
from analysis.design import Design
from analysis.multiple_testing import NAMES, adjusted_label
from analysis.options.cohorts import CohortsOptions as Opts
from ui.widgets import md

__all__ = ["capsule_adjust", "capsule_copy", "tests_columns"]


def capsule_adjust(where: Any = st) -> str:
    """The method of the capsules' ``p_adjusted`` (key ``cohorts_capsule_adjust``)."""
    choices = Opts.choices("adjust")
    return where.selectbox(md(Opts.label("adjust")), choices,
                           index=choices.index(Opts.default("adjust")),
                           key="cohorts_capsule_adjust", help=Opts.help("adjust"),
                           format_func=lambda m: f"{m} ({NAMES[m]})")


def tests_columns(settings: dict[str, Any]) -> dict[str, Any]:
    """The tests table's ``p_adjusted`` headed by its method (the Result's ``settings``)."""
    method = str(settings.get("adjust") or Opts.default("adjust"))
    return {"p_adjusted": st.column_config.NumberColumn(
        adjusted_label(method), format="%.3g", help=f"{NAMES[method]} over the rows of the "
        "same test")}


def capsule_copy(design: Design, opts: dict[str, Any], where: dict, **capsules: Any) -> None:
    """The command and script of the capsules shown (``capsules``: ``demographics``,
    ``demographic_col``, ``capsule_star``, ``adjust``)."""
    from ui.reproduce import reproduce

    options = {k: v for k, v in capsules.items() if k in Opts.specs()}
    inputs = {k: v for k, v in capsules.items() if k not in options}
    reproduce(rp.cohorts_view({**opts, **options}, **inputs), design, where,
              "cohorts_capsule_repro")
