"""Bootstrap widgets of the eCDF and Bias index pages (``analysis.bootstrap``).

Session-state keys: ``<prefix>_boot``, ``<prefix>_boot_cluster``, ``<prefix>_boot_n``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from analysis.columns import BOOT_CI_HIGH, BOOT_CI_LOW, BOOT_SE, ESTIMATE
from analysis.design import Design
from analysis.options import OptionError, options_for
from analysis.options.common import BootstrapOptions
from ui.widgets import each_note, md, show_table

__all__ = [
    "ASK", "bootstrap_options", "cluster_widget", "interval_columns",
    "page_ci_settings", "show_intervals",
]


_NUM = st.column_config.NumberColumn


def interval_columns(confidence: float) -> dict:
    """The bootstrap table's column formats, the interval's headers naming its level
    (``confidence`` 0.9: "90 % low", the 5th percentile)."""
    from analysis.formatting import interval_header

    tail = 100 * (1 - confidence) / 2
    level = {"confidence": confidence}
    return {
        ESTIMATE: _NUM("estimate", format="%.4f"),
        BOOT_SE: _NUM("bootstrap SE", format="%.4f"),
        BOOT_CI_LOW: _NUM(interval_header(level, "low", ""), format="%.4f",
                          help=f"{tail:g}th percentile of the replicates"),
        BOOT_CI_HIGH: _NUM(interval_header(level, "high", ""), format="%.4f",
                           help=f"{100 - tail:g}th percentile"),
    }


#: ``cluster=`` default of :func:`bootstrap_options`: ask with a selectbox.
ASK = "<ask>"


def bootstrap_options(results: pd.DataFrame, design: Design, prefix: str, *,
                      cluster: str | None = ASK, seed: int | None = None) -> dict | None:
    """A checkbox, the cluster (default: the design's) and the replicates (default: the
    ``n_resamples`` option of the analysis ``prefix``); None when off, else the
    ``analysis.bootstrap`` arguments ``cluster``, ``n_resamples``, ``seed``.

    ``cluster``: the page's cluster when it has chosen one already (the Subgroups page's
    toggle; the bootstrap then resamples it and says so), else a selectbox asks.
    ``seed``: the page's (its "Other options"); None: the options' default."""
    opts = options_for(prefix)
    with st.expander("Uncertainty: bootstrap intervals", expanded=False):
        on = st.checkbox(opts.label("ci"), key=f"{prefix}_boot")
        choices = [None, *[c for c in results.columns if c != "deviation"]]
        c1, c2 = st.columns(2)
        if cluster != ASK:
            c1.caption(md(f"Resamples whole clusters of {cluster}" if cluster
                          else "Resamples rows (independent)"))
        else:
            cluster = c1.selectbox(BootstrapOptions.label("cluster"), choices,
                                   key=f"{prefix}_boot_cluster",
                                   index=choices.index(design.cluster)
                                   if design.cluster in choices else 0,
                                   format_func=lambda c: c or "rows (independent)",
                                   help="Rows sharing a template or prompt are not "
                                        "independent")
        n = c2.select_slider(opts.label("n_resamples"), [100, 200, 500, 1000, 2000],
                             value=opts.default("n_resamples"), key=f"{prefix}_boot_n")
    seed = opts.default("seed") if seed is None else int(seed)
    return {"cluster": cluster, "n_resamples": int(n), "seed": seed} \
        if on else None


def show_intervals(table: pd.DataFrame, name: str, key: str, *,
                   confidence: float = 0.95, notes: Sequence[str] = ()) -> None:
    """The bootstrap table with its download and its ``notes`` (e.g. few clusters:
    ``Result.meta["bootstrap"]["notes"]``); the headers name the interval's level
    ``confidence`` (``Result.meta["bootstrap"]["confidence"]``)."""
    each_note(notes, st.warning)
    show_table(table, name, key=key, column_config=interval_columns(float(confidence)))


def cluster_widget(frame: pd.DataFrame, current: str | None, key: str) -> str | None:
    """The design's cluster column (rows sharing a value are correlated), or None."""
    choices = [None, *frame.columns]
    return st.selectbox("Cluster (optional)", choices,
                        index=choices.index(current) if current in choices else 0, key=key,
                        format_func=lambda c: c or "(none: rows independent)",
                        help="Template, prompt id or seed: rows sharing it are not "
                             "independent. Importance then reports cluster-robust errors "
                             "and bootstraps resample whole clusters.")


def page_ci_settings(prefix: str) -> dict:
    """The interval settings of a report section from the page's bootstrap widgets
    (:func:`bootstrap_options` with ``prefix``), read from session state when "Add to
    report" is pressed: ``ci`` (``bootstrap`` when the checkbox is on, else ``none``),
    ``cluster`` and ``n_resamples`` as chosen, ``seed`` and ``confidence`` as the page's
    "Other options" (``<prefix>_option_<name>``, :func:`ui.options.other_options`) give them,
    else the options' defaults (what the pages compute with). Widgets the page has not drawn
    yet are left to the defaults."""
    ss = st.session_state
    opts = options_for(prefix)
    out: dict = {"ci": "bootstrap" if ss.get(f"{prefix}_boot") else "none"}
    for name in ("seed", "confidence"):
        try:
            out[name] = getattr(opts.coerce({name: ss.get(f"{prefix}_option_{name}",
                                                          opts.default(name))}), name)
        except OptionError:  # refused: the page said so and computes with the default
            out[name] = opts.default(name)
    if f"{prefix}_boot_cluster" in ss:
        out["cluster"] = ss[f"{prefix}_boot_cluster"]
    if f"{prefix}_boot_n" in ss:
        out["n_resamples"] = int(ss[f"{prefix}_boot_n"])
    return out
