"""Cached steps, widgets and tabs of the Coverage page: every number is
``analysis.api.coverage``'s (one cached call of the page's options, its cells and model
cells cached apart, the count unit read off the visitor's thread)."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from analysis import api as bw
from analysis.api import Result
from analysis.columns import (
    COVERAGE_PERCENTAGE,
    GINI_INDEX,
    GINI_INDEX_OBSERVED,
    N_CELLS,
    N_EMPTY_CELLS,
)
from analysis.coverage import PROMPTS, RESPONSES, CountedCells, CountUnit
from analysis.coverage_text import page_count, percent_text
from analysis.design import Design
from analysis.factor_defaults import grid_factors
from analysis.options.coverage import CoverageOptions as Opts
from ui.defaults import page_defaults
from ui.table_job import EARLY_COUNT_ROWS, fine_cells, item_known, load_job  # noqa: F401
from ui.table_job import NO_STRUCTURE as _NO_STRUCTURE
from ui.table_job import count_unit_job as _count_unit_job
from ui.widgets import md

__all__ = [
    "COLUMN_CONFIG", "EMPTY_DOWNLOAD_MAX", "EMPTY_PAGE_SIZE", "HEATMAP_MAX_CELLS", "MAX_PAGE",
    "THINNEST", "count_choice", "counted_for", "coverage_cells_for", "coverage_result",
    "empty_page", "fine_cells", "load_job", "grid_choice", "pair_choice", "show_metrics",
    "show_reading",
    "start_count_unit", "EARLY_COUNT_ROWS",
]


#: Empty combinations shown per page, and how many the CSV download holds at most.
EMPTY_PAGE_SIZE = 100
EMPTY_DOWNLOAD_MAX = 100_000
THINNEST = 100
#: A number input holds at most 2^53 - 1 (JavaScript's safe integers).
MAX_PAGE = 2**53 - 1
#: Larger factor pairs are not drawn (the browser would choke on the heatmap).
HEATMAP_MAX_CELLS = 250_000

COLUMN_CONFIG = {
    COVERAGE_PERCENTAGE: st.column_config.NumberColumn("coverage", format="percent",
                                                       help="non-empty cells / cells"),
    GINI_INDEX: st.column_config.NumberColumn("Gini", format="%.4f",
                                              help="over all cells, zeros included"),
    GINI_INDEX_OBSERVED: st.column_config.NumberColumn("Gini (non-empty)", format="%.4f"),
}


@st.cache_resource(max_entries=16, show_spinner="Counting prompts...")
def _coverage_cells(token: str, design_json: str, factors: tuple[str, ...], where_key: str,
                    unit: str, counted_key: str, _results: pd.DataFrame, _design: Design,
                    _where: dict, _counted: CountUnit) -> CountedCells:
    return bw.coverage_cells(_results, _design, factors=list(factors), count=unit,
                             where=_where or None, counted=_counted, applied=True)


def coverage_cells_for(results: pd.DataFrame, design: Design, factors: list[str], where: dict,
                       unit: str) -> CountedCells:
    """Cached :func:`analysis.api.coverage_cells` (distinct prompts or responses) of
    what :func:`counted_for` says a cell counts, with that unit."""
    where = {k: list(v) for k, v in (where or {}).items() if v}
    counted = counted_for(results, design, notice=False)  # (count_choice shows the box)
    source = fine_cells(results, design, [*factors, *counted.columns], where)
    return _coverage_cells(st.session_state["results_token"], design.to_json(), tuple(factors),
                           repr(sorted(where.items())), unit, repr(counted.columns),
                           results if source is None else source, design, where, counted)




#: Session state: when the page first asked for each count-unit job (by its key).
_ASKED = "_coverage_job_asked"


def counted_for(results: pd.DataFrame, design: Design, *, notice: bool = True) -> CountUnit:
    """What a coverage cell counts (:func:`analysis.api.count_unit`). When that needs
    the table's structure (the design carries no inferred item id), the structure is
    read in the background worker like an upload's (issue 43: never on the visitor's
    thread); until it is there the design's prompt unit is counted and the page says so
    (with ``notice``: the page asks twice per run and says it once; each refresh of the
    waiting box is a script run), then reruns."""
    job = _count_unit_job(results, design)
    if job is None or item_known(results, design):  # (a large table's job: its cells)
        return bw.count_unit(results, design, applied=True)
    from ui.pending_design import job_notice, wait_seconds

    # the page asks twice per run (the count choice, the cells): it waits at most
    # wait_seconds() after it first asked for the job in all, not that long at every
    # call (a job the Data page submitted earlier still gets the page's wait)
    asked = st.session_state.setdefault(_ASKED, {})
    job.wait(wait_seconds() - (time.monotonic() - asked.setdefault(job.token, time.monotonic())))
    result = job.result if job.done else None
    value = getattr(result.value, "unit", None) if result is not None else None
    if isinstance(value, CountUnit):
        return value
    if notice and job.done:  # stopped or refused: the prompt unit, and why
        st.caption(md(f"No item id could be read ({result.error if result else 'no result'}"
                      "): cells count the design's prompt unit."))
    elif notice:
        job_notice(job)
    return bw.count_unit(results, design, structure=_NO_STRUCTURE, applied=True)


def start_count_unit() -> None:
    """:func:`ui.table_job.start_count_unit` of the active table and design, small tables
    too (the Data page calls it once the table is shown; every page's ``ensure_data``
    calls it for a large table)."""
    from ui.common import applied_results
    from ui.table_job import start_count_unit as start

    start(applied_results, small=True)


def count_choice(design: Design, results: pd.DataFrame | None = None) -> str:
    """What a cell counts: distinct items or prompts (the methods' definition, the item id
    when the table's structure has one) or responses. ``results``: the page's table (the
    design applied): the count-unit job it may submit is the one every page reads (the
    Disparity and Cohorts pages' openers come from it), so never the unapplied table."""
    if results is not None:
        counted = counted_for(results, design)
        what = (f"distinct items ({md(counted.columns[0])}, the item id)"
                if counted.noun == "items" else
                f"distinct prompts (a prompt = one combination of "
                f"{md(', '.join(counted.columns))})")
    else:
        what = ("distinct prompts (a prompt = one combination of "
                f"{md(', '.join(design.prompt_unit_columns()))})")
    # radio labels render Markdown: the column names from the data are escaped
    labels = {PROMPTS: what, RESPONSES: "responses (rows)"}
    return st.radio(Opts.label("count"), Opts.choices("count"), format_func=labels.get,
                    index=Opts.choices("count").index(Opts.default("count")), horizontal=True,
                    key="coverage_count",
                    help="The coverage method counts prompts: a prompt answered by several "
                         "models or seeds counts once. Responses count every row.")


def coverage_result(results: pd.DataFrame, design: Design, factors: list[str], where: dict,
                    options: Opts, *, cells: pd.DataFrame, pair: tuple[str, str] | None,
                    models: bool = True) -> Result:
    """The page's one call: :func:`analysis.api.coverage` of the options (``limit`` at
    least :data:`EMPTY_DOWNLOAD_MAX`: the empty cells' download; the page shows the
    first ``limit`` thinnest), the heatmap's ``pair`` (None: none drawn), the cached
    coverage ``cells`` and, with ``models``, the cached cells of the grid and the model
    factors (:func:`ui.common.cells_for`), cached per options and inputs."""
    from ui.common import analysis_result, cells_for

    where = {k: list(v) for k, v in (where or {}).items() if v}
    extra = [m for m in design.of_kind("model") if m not in factors and m in results]
    grid = list(dict.fromkeys(factors + extra))  # (cells_for sums the job's cells)
    model_cells = (cells_for(results, design, grid, where, with_outcome=False)
                   if models and (extra or set(factors) & set(design.of_kind("model")))
                   and set(factors) - set(design.of_kind("model")) else None)
    opts = options.replace(limit=max(options.limit, EMPTY_DOWNLOAD_MAX))
    return analysis_result("coverage", results, design, opts, cells=cells,
                           factors=list(factors), where=where or None,
                           pair=() if pair is None else tuple(pair),
                           model_cells=model_cells)


def show_metrics(result: Result) -> None:
    """Headline metrics: coverage, Gini index, combinations, empty combinations."""
    joint = result.table.iloc[0]
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Coverage", f"{percent_text(joint[COVERAGE_PERCENTAGE])} %",
              help="Share of combinations with at least one row (ideal 100 %).")
    c2.metric("Gini index", f"{joint[GINI_INDEX]:.3f}",
              help="0: every combination equally represented; near 1: a few hold everything.")
    c3.metric("Combinations", f"{int(joint[N_CELLS]):,}")
    c4.metric("Empty combinations", f"{int(joint[N_EMPTY_CELLS]):,}")


def show_reading(result: Result) -> None:
    """The plain-language reading and the nesting warnings (below the figure)."""
    st.markdown("\n".join(f"- {md(line)}" for line in result.notes))
    for message in result.meta["nesting_reading"]:
        st.warning(md(message))


def grid_choice(design: Design, key: str = "coverage_factors") -> list[str]:
    """The factors spanning the grid (default: the useful domain and prompt factors)."""
    label = "Factors spanning the grid"
    hint = ("Default: domain and prompt factors. Add model factors to see whether every model "
            "answered every prompt.")
    if key in st.session_state:
        kept = [f for f in st.session_state[key] if f in design.names]
        if kept != list(st.session_state[key]):  # the design changed since the last visit
            st.session_state[key] = kept
        return st.multiselect(label, design.names, key=key, help=hint)
    useful = page_defaults(design, None, ("domain", "prompt"))  # no constant, text or id
    start = [f for f in grid_factors(design) if f in useful] or grid_factors(design)
    return st.multiselect(label, design.names, default=start, key=key, help=hint)


def pair_choice(design: Design, factors: list[str]) -> tuple[str, str]:
    """Two different factors for the heatmap (rows, columns); the default pair is not nested."""
    from ui.defaults import unnested_defaults

    start = unnested_defaults(design, factors, 2)
    start = start if len(start) == 2 else factors[:2]
    c1, c2 = st.columns(2)
    row = c1.selectbox("Rows", factors, index=factors.index(start[0]), key="coverage_row")
    others = [f for f in factors if f != row]
    col = c2.selectbox("Columns", others,
                       index=others.index(start[1]) if start[1] in others else 0,
                       key="coverage_col")
    return row, col


def empty_page(result: Result, design: Design) -> pd.DataFrame:
    """A page of empty combinations chosen with a number input."""
    pages = page_count(int(result.table.iloc[0][N_EMPTY_CELLS]), EMPTY_PAGE_SIZE)
    shown = f"{pages:,}" if pages <= MAX_PAGE else f"{pages:,}; the first {MAX_PAGE:,} reachable"
    page = st.number_input(f"Page (of {shown}, {EMPTY_PAGE_SIZE} per page)", min_value=1,
                           max_value=min(pages, MAX_PAGE), value=1, step=1,
                           key="coverage_empty_page")
    return bw.coverage_empty_page(result, design, page=page, page_size=EMPTY_PAGE_SIZE)
