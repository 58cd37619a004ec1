"""The Subgroups page's steps (``pages/subgroups.py`` only arranges them): the controls
above the answer, the options -> one cached call of ``analysis.api.subgroups``, the
sunburst with its top findings, and the table of every subgroup."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import streamlit as st

from analysis.api import Result
from analysis.columns import SUBGROUP
from analysis.design import Design
from analysis.figures.subgroups import sunburst_figure
from analysis.options import FROM_DESIGN
from analysis.options.subgroups import TESTS
from ui.common import analysis_result, cells_for, subset_filter, table_download
from ui.defaults import choose_hint
from ui.findings import colour_choice, top_findings_panel
from ui.judge_noise import COLUMN_CONFIG as NOISE_COLUMNS
from ui.judge_noise import noise_options
from ui.options import other_options
from ui.pooling import POOLED_COLUMNS_CONFIG, colour_title, pooled_toggle, shown
from ui.power import COLUMN_CONFIG as POWER_COLUMNS
from ui.power import power_widgets
from ui.subgroups import (
    COLUMN_CONFIG,
    TEST_LABELS,
    adjusted_column,
    cluster_toggle,
    default_factors,
    factor_choice,
    table_caption,
    value_filter,
)
from ui.uncertainty import bootstrap_options
from ui.widgets import md

__all__ = ["controls", "subgroups_result", "subgroups_table", "sunburst_panel"]


def _opts():  # read from its module at each run (a test may patch the class)
    from analysis.options import subgroups

    return subgroups.SubgroupsOptions


def controls(results: pd.DataFrame, design: Design) -> SimpleNamespace:
    """The subset, factors, level, test and smallest n above the answer (stops the page
    with a hint when no factor is chosen)."""
    Opts = _opts()
    where = subset_filter(design, key="subgroups")
    c0, c1, c2, c3 = st.columns([3, 1, 1, 1])  # compact controls above the answer
    with c0:
        factors = factor_choice(design, "subgroups_factors", results=results, models=True)
    if not factors:
        choose_hint("Choose at least one factor (**Factors** above): each ring of the sunburst "
                    "splits by one.", "subgroups_factors", default_factors(design))
        st.stop()
    levels = list(range(1, min(3, len(factors)) + 1))
    level = c1.radio(Opts.label("level"), levels, index=min(1, len(levels) - 1),
                     horizontal=True, key="subgroups_level",
                     help="1: one factor fixed; 2: every pair of values of two factors; "
                          "3: triples")
    test = c2.selectbox(Opts.label("test"), TESTS, index=TESTS.index(Opts.default("test")),
                        key="subgroups_test", format_func=TEST_LABELS.get,
                        help=Opts.help("test"))
    min_n = c3.number_input(Opts.label("min_n"), min_value=1, value=Opts.default("min_n"),
                            step=5, key="subgroups_min_n")
    return SimpleNamespace(where=where, factors=factors, level=level, test=test,
                           min_n=int(min_n))


def subgroups_result(results: pd.DataFrame, design: Design, c: SimpleNamespace
                     ) -> tuple[SimpleNamespace, st.delta_generator.DeltaGenerator]:
    """The other widgets (cluster, pooling, "Other options", power, bootstrap, judge
    noise) -> the options -> one cached call of ``analysis.api.subgroups``. Returns them
    (``opts``, ``more``, ``power``, ``grey``, ``pooled``, ``result``) and the container of
    the answer, drawn above the options. Raises what the analysis raises."""
    Opts = _opts()
    cluster = cluster_toggle(results, design)
    pooled = pooled_toggle(Opts, "subgroups")
    answer, options = st.container(), st.container()  # the figure first, its options below
    with options, st.expander("Other options", expanded=False):
        more = other_options(Opts, ("level", "test", "min_n", "n_resamples"),
                             key="subgroups_option")
    with options:
        grey, power = power_widgets()
        boot = bootstrap_options(results, design, "subgroups", cluster=cluster)
    noise = noise_options(results, "subgroups", alpha=True)
    out = SimpleNamespace(more=more, power=power, grey=grey, pooled=pooled, noise=noise)
    out.opts = Opts.coerce(
        level=c.level, test=c.test, min_n=c.min_n, **more, **power, pooled=pooled,
        cluster=FROM_DESIGN if cluster and cluster == design.cluster else cluster,
        **({"ci": "bootstrap", "n_resamples": boot["n_resamples"]} if boot else {}),
        **({"judge_noise": noise["replicates"], "noise_mode": noise["mode"],
            "noise_alpha": noise["alpha"]} if noise else {}))
    # with a cluster (not a factor, not pooled) the analysis counts the rows' codes into
    # its per-cluster grid (analysis/subgroup_codes.py): no factors x cluster cell table
    grid = bool(cluster) and cluster not in c.factors and not pooled
    cells = None if grid else cells_for(results, design, list(dict.fromkeys(
        [*c.factors, *([cluster] if cluster else [])])), c.where)
    out.result = analysis_result("subgroups", results, design, out.opts, cells=cells,
                                 factors=c.factors, where=c.where)
    return out, answer


def sunburst_panel(result: Result, c: SimpleNamespace, o: SimpleNamespace
                   ) -> tuple[object, object, object]:
    """The sunburst (colour and sector size widgets) and the top findings beside it;
    returns the figure, its selection event and the finding picked."""
    full, factors, level = result.tables["all"], c.factors, c.level
    left, right = st.columns([3, 2])
    with left:
        r1, r2 = st.columns(2)
        colour = colour_choice(container=r1)
        sizes = r2.radio("Sector size", ["n", "equal"], horizontal=True, key="subgroups_sizes",
                         format_func={"n": "by n", "equal": "equal (every value visible)"}.get)
        fig = sunburst_figure(shown(full, o.pooled), factors, grey_undetectable=o.grey,
                              sizes=sizes, colour=colour,
                              colour_title=colour_title(o.pooled and colour == "ld"))
        clicked = st.plotly_chart(fig, key="subgroups_sunburst_chart", on_select="rerun",
                                  selection_mode="points")
        if len(factors) > level:  # a factor beyond the level has no ring: say so (issue 42)
            st.caption(md(f"The sunburst has {level} ring(s): the subgroups fix at most "
                          f"{level} of the {len(factors)} factors (Level); "
                          f"{', '.join(factors[level:])} has no ring of its own. Choose level "
                          f"{min(3, len(factors))} to see "
                          f"{'it' if len(factors) - level == 1 else 'them'}."))
    with right:
        picked = top_findings_panel(shown(result.table, o.pooled), factors, colour, c.min_n,
                                    adjust=o.opts.adjust)
    return fig, clicked, picked


def subgroups_table(result: Result, factors: list[str], adjust: str
                    ) -> tuple[object, pd.DataFrame]:
    """The table of every subgroup (its caption, a value filter, a download); returns the
    selection event and the rows shown."""
    table = result.table
    table_caption(table, result.tables["all"], adjust)
    rows = value_filter(table, factors, key="subgroups_show")
    event = st.dataframe(rows, hide_index=True, key="subgroups_table", on_select="rerun",
                         height=420, selection_mode="single-row",
                         column_config=COLUMN_CONFIG | POWER_COLUMNS | NOISE_COLUMNS
                         | POOLED_COLUMNS_CONFIG
                         | adjusted_column(adjust, "every subgroup in the table"),
                         column_order=[SUBGROUP, *[c for c in rows.columns if c != SUBGROUP]])
    table_download(rows, "subgroups", key="subgroups_table")
    return event, rows
