"""Cached steps and widgets of the Coverage page (no statistics: calls analysis.coverage)."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace

import pandas as pd
import streamlit as st

from analysis import coverage as cov
from analysis.columns import (
    COVERAGE_PERCENTAGE,
    GINI_INDEX,
    GINI_INDEX_OBSERVED,
    N_CELLS,
    N_EMPTY_CELLS,
)
from analysis.design import Design
from analysis.nesting import describe_nesting
from analysis.options.coverage import CoverageOptions as Opts
from ui.defaults import page_defaults
from ui.widgets import md

__all__ = [
    "COLUMN_CONFIG", "EMPTY_DOWNLOAD_MAX", "EMPTY_PAGE_SIZE", "HEATMAP_MAX_CELLS", "MAX_PAGE",
    "THINNEST", "count_choice", "counted_for", "coverage_cells_for", "empty_page", "grid_choice",
    "models_overview", "overview", "pair_choice", "show_metrics", "show_reading",
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
                    _where: dict, _counted: cov.CountUnit) -> pd.DataFrame:
    return cov.coverage_cells(_results, _design, list(factors), unit=unit,
                              where=_where or None, counted=_counted)


def coverage_cells_for(results: pd.DataFrame, design: Design, factors: list[str], where: dict,
                       unit: str) -> pd.DataFrame:
    """Cached :func:`analysis.coverage.coverage_cells` (distinct prompts or responses) of
    what :func:`counted_for` says a cell counts."""
    where = {k: list(v) for k, v in (where or {}).items() if v}
    counted = counted_for(results, design)
    return _coverage_cells(st.session_state["results_token"], design.to_json(), tuple(factors),
                           repr(sorted(where.items())), unit, repr(counted.columns), results,
                           design, where, counted)


#: A structure that knows no item id: the design's prompt unit is counted meanwhile.
_NO_STRUCTURE = SimpleNamespace(item_id=None, columns=())


def counted_for(results: pd.DataFrame, design: Design) -> cov.CountUnit:
    """What a coverage cell counts (:func:`analysis.coverage.count_unit`). When that needs
    the table's structure (the design carries no inferred item id), the structure is
    read in the background worker like an upload's (issue 43: never on the visitor's
    thread); until it is there the design's prompt unit is counted and the page says so,
    then reruns."""
    item = (design.inferred or {}).get("item_id")
    if item is not None and item in results.columns:
        return cov.count_unit(results, design)
    from ui import inference_pool
    from ui.pending_design import job_notice, wait_seconds

    design_json = design.to_json()
    key = f"{st.session_state.get('results_token', '')}|coverage|{design_json}"
    job = inference_pool.submit(key, results,
                                work=partial(inference_pool.design_work,
                                             function=cov.count_unit,
                                             design_json=design_json))
    job.wait(wait_seconds())
    result = job.result if job.done else None
    if result is not None and isinstance(result.value, cov.CountUnit):
        return result.value
    if job.done:  # stopped or refused: the prompt unit, and why
        st.caption(md(f"No item id could be read ({result.error if result else 'no result'}"
                      "): cells count the design's prompt unit."))
    else:
        job_notice(job)
    return cov.count_unit(results, design, structure=_NO_STRUCTURE)


def count_choice(design: Design) -> str:
    """What a cell counts: distinct items or prompts (the methods' definition, the item id
    when the table's structure has one) or responses."""
    results = st.session_state.get("results_frame")
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
    labels = {cov.PROMPTS: what, cov.RESPONSES: "responses (rows)"}
    return st.radio(Opts.label("count"), Opts.choices("count"), format_func=labels.get,
                    index=Opts.choices("count").index(Opts.default("count")), horizontal=True,
                    key="coverage_count",
                    help="The coverage method counts prompts: a prompt answered by several "
                         "models or seeds counts once. Responses count every row.")


@st.cache_resource(max_entries=16, show_spinner="Measuring coverage...")
def _overview(token: str, design_json: str, factors: tuple[str, ...], where_key: str,
              _cells: pd.DataFrame, _design: Design, _where: dict, unit: str = cov.PROMPTS,
              limit: int = THINNEST, _results: pd.DataFrame | None = None) -> dict:
    from analysis import api as bw

    # the empty cells for the download, the thinnest: their first `limit`
    result = bw.coverage(_results if _results is not None else _cells, _design,
                         factors=list(factors), where={k: v for k, v in _where.items() if v},
                         cells=_cells, applied=True,
                         count=unit, limit=max(limit, EMPTY_DOWNLOAD_MAX))
    nestings = result.tables["nestings"].to_dict(orient="records")
    return {"summary": result.table, "marginals": result.tables["marginals"],
            "reading": list(result.notes),
            "nestings": [describe_nesting(r) for r in nestings],
            "empty": result.tables["empty_cells"],
            "thinnest": result.tables["thinnest_cells"].head(limit)}


def overview(cells: pd.DataFrame, design: Design, factors: list[str], where: dict,
             unit: str = cov.PROMPTS, *, limit: int = THINNEST,
             results: pd.DataFrame | None = None) -> dict:
    """Summary, marginals, reading, nestings, first empty and the ``limit`` thinnest cells:
    :func:`analysis.api.coverage` of the cached ``cells`` (``results``: the rows they
    count, for the reading's row count), cached."""
    return _overview(st.session_state["results_token"], design.to_json(), tuple(factors),
                     repr(sorted(where.items())), cells, design, where, unit, limit, results)


@st.cache_resource(max_entries=16, show_spinner="Checking the models...")
def _models(token: str, design_json: str, key: tuple, where_key: str, _cells: pd.DataFrame,
            _design: Design, _where: dict) -> tuple[pd.DataFrame, list[str]]:
    models, prompts = key
    table = cov.model_coverage(_cells, _design, model_factors=list(models),
                               prompt_factors=list(prompts), where=_where)
    return table, cov.describe_model_coverage(table, list(models))


def models_overview(cells: pd.DataFrame, design: Design, models: list[str], prompts: list[str],
                    where: dict) -> tuple[pd.DataFrame, list[str]]:
    """Model coverage table and its reading (cached); ``cells`` span prompts + models."""
    return _models(st.session_state["results_token"], design.to_json(),
                   (tuple(models), tuple(prompts)), repr(sorted(where.items())), cells,
                   design, where)


def show_metrics(info: dict) -> None:
    """Headline metrics: coverage, Gini index, combinations, empty combinations."""
    joint = info["summary"].iloc[0]
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Coverage", f"{cov.percent_text(joint[COVERAGE_PERCENTAGE])} %",
              help="Share of combinations with at least one row (ideal 100 %).")
    c2.metric("Gini index", f"{joint[GINI_INDEX]:.3f}",
              help="0: every combination equally represented; near 1: a few hold everything.")
    c3.metric("Combinations", f"{int(joint[N_CELLS]):,}")
    c4.metric("Empty combinations", f"{int(joint[N_EMPTY_CELLS]):,}")


def show_reading(info: dict) -> None:
    """The plain-language reading and the nesting warnings (below the figure)."""
    st.markdown("\n".join(f"- {md(line)}" for line in info["reading"]))
    for message in info["nestings"]:
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
    start = [f for f in cov.default_factors(design) if f in useful] or cov.default_factors(
        design)
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


def empty_page(cells: pd.DataFrame, design: Design, factors: list[str], where: dict,
               info: dict) -> pd.DataFrame:
    """A page of empty combinations chosen with a number input."""
    pages = cov.page_count(int(info["summary"].iloc[0][N_EMPTY_CELLS]), EMPTY_PAGE_SIZE)
    shown = f"{pages:,}" if pages <= MAX_PAGE else f"{pages:,}; the first {MAX_PAGE:,} reachable"
    page = st.number_input(f"Page (of {shown}, {EMPTY_PAGE_SIZE} per page)", min_value=1,
                           max_value=min(pages, MAX_PAGE), value=1, step=1,
                           key="coverage_empty_page")
    return cov.empty_cells_page(cells, design, page=page, page_size=EMPTY_PAGE_SIZE,
                                first=info["empty"], factors=factors, where=where)
