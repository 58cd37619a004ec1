"""The adjustment of the native scores' paired deltas on the Compare page
(``bw.native_deltas(adjust=)``, ``--native-adjust``): its widget, the table's header
naming the method from the Result's settings, and the deltas' "Copy as CLI / Python"
(``native-scores --by``, :func:`analysis.reproduce.api_view`)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from analysis import reproduce as rp
from analysis.design import Design
from analysis.multiple_testing import NAMES, adjusted_label
from analysis.options.native import ADJUSTMENTS, DELTA_ADJUST, NativeDeltasOptions

__all__ = ["ADJUSTMENTS", "delta_adjust", "deltas_columns", "deltas_view", "native_copy"]


def delta_adjust() -> str:
    """The method of the deltas' ``p_adjusted`` (key ``compare_native_adjust``)."""
    return st.selectbox(NativeDeltasOptions.label("adjust"), ADJUSTMENTS,
                        key="compare_native_adjust",
                        format_func=lambda m: f"{m} ({NAMES[m]})",
                        help="The p-values of a pair's deltas are adjusted together "
                             f"(default {NAMES[DELTA_ADJUST]}, family-wise).")


def deltas_columns(settings: dict[str, Any]) -> dict[str, Any]:
    """``p_adjusted`` headed by its method (``settings["adjust"]`` of the Result)."""
    method = str(settings.get("adjust") or DELTA_ADJUST)
    return {"p_adjusted": st.column_config.NumberColumn(
        adjusted_label(method), format="%.3g", help=f"{NAMES[method]} over a pair's deltas")}


def native_copy(design: Design, view: rp.View, where: dict | None, head: str) -> None:
    """"Copy as CLI / Copy as Python" of ``view`` (each text after the comment ``head``;
    drawn in the caller's expander: expanders do not nest)."""
    from ui.reproduce import sources

    file, design_path, _ = sources(design)
    st.caption("Copy as CLI / Copy as Python (the design saved as `design.yaml` unless it "
               "is a sample's):")
    st.code(head + rp.cli_command(view.command, file, design_path, view.options, where=where),
            language="bash")
    st.code(head + rp.api_snippet(view.function, file, design_path, view.call, where=where),
            language="python")


def deltas_view(settings: dict[str, Any]) -> rp.View:
    """The :class:`analysis.reproduce.View` of the deltas of ``settings`` (a Result's):
    ``native-scores --by`` with ``by``, ``reference`` and the options that differ from the
    defaults (the cluster left to its default: the page resamples the default one, which
    ``settings`` names resolved)."""
    opts = NativeDeltasOptions.from_settings(settings, skip=("cluster",))
    return rp.api_view(opts, function="native_deltas", by=settings.get("by"),
                       reference=settings.get("reference"))
