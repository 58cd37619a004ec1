"""Widgets of the Compare page: what to compare, the cached comparison, the readings."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis import compare as cmp
from analysis.design import Design
from analysis.options.compare import CompareOptions as Opts
from ui.options import other_options
from ui.widgets import each_note, md

__all__ = [
    "COLUMN_CONFIG", "OUTCOME", "UNIT_KEY", "choices", "column_config",
    "comparison_result", "default_by", "one_model_note", "pair_choice",
    "pair_figures", "pairing_failed", "readings",
]


_NUM = st.column_config.NumberColumn
#: The columns' formats; the adjusted p-values' headers name their method
#: (:func:`column_config`).
COLUMN_CONFIG = {
    cmp.ONLY_A: _NUM("biased -> not (a -> b)", format="%d",
                     help="Prompts where a deviates and b does not"),
    cmp.ONLY_B: _NUM("not -> biased (a -> b)", format="%d",
                     help="Prompts where b deviates and a does not"),
    cmp.RATE_A: _NUM("rate a", format="%.3f"), cmp.RATE_B: _NUM("rate b", format="%.3f"),
    cmp.DIFFERENCE: _NUM("difference (b - a)", format="%+.3f"),
    cmp.CI_LOW: _NUM("CI low", format="%+.3f"), cmp.CI_HIGH: _NUM("CI high", format="%+.3f"),
    cmp.P_VALUE: _NUM("p", format="%.3g"),
    cmp.LD_DIFFERENCE: _NUM("LD difference", format="%+.3f",
                            help="LD under b - LD under a (each against the other paired "
                                 "prompts)"),
    cmp.ODDS_RATIO: _NUM("conditional OR", format="%.3f",
                         help="only_b / only_a: odds of deviating under b rather than a"),
}
OUTCOME = "deviation (0/1, the design's outcome)"


def column_config(settings: dict, *, subgroups: bool = False) -> dict:
    """:data:`COLUMN_CONFIG` with the adjusted p-values headed by their method: the
    overall table's ``p_adjusted`` by the comparison's ``adjust`` (its Result's
    ``settings``: ``p (Holm)`` by default), a subgroup table's ``p_adjusted`` and
    ``ld_p_adjusted`` by its ``subgroup_adjust`` (default Benjamini-Hochberg across the
    subgroups of a pair, whatever ``adjust``)."""
    from analysis.labels import adjusted_method
    from analysis.multiple_testing import NAMES, adjusted_label

    by_subgroup = adjusted_method(settings, "subgroup_adjust", fixed=cmp.SUBGROUP_ADJUST)
    method = by_subgroup if subgroups else adjusted_method(settings, fixed="holm")
    over = "the subgroups of the pair" if subgroups else "every compared pair"
    ld = adjusted_label(by_subgroup)
    return {**COLUMN_CONFIG,
            cmp.P_ADJUSTED: _NUM(adjusted_label(method), format="%.3g",
                                 help=f"{NAMES[method]} over {over}"),
            cmp.LD_P_ADJUSTED: _NUM(f"LD {ld}", format="%.3g",
                                    help=f"{NAMES[by_subgroup]} over the subgroups "
                                         "of the pair")}
#: Session key of the Compare page's prompt unit (a multiselect; empty = inferred).
UNIT_KEY = "compare_unit"


def default_by(design: Design, results: pd.DataFrame) -> str:
    """The model factor, else the prompt factor whose name says format/setting, else the
    first factor with two or more values (:func:`analysis.factor_defaults.compared_factor`)."""
    from analysis.factor_defaults import compared_factor

    return compared_factor(design, results)


def one_model_note(design: Design, results: pd.DataFrame) -> str | None:
    """"One model only" when every model factor of the design (or a column named
    ``model``) holds a single value: Compare pairs two or more models."""
    models = design.of_kind("model") or [c for c in results.columns if str(c).lower() == "model"]
    single = [m for m in models if m in results.columns and results[m].nunique() <= 1]
    if not models or len(single) < len(models):
        return None
    values = ", ".join(f"{m} = {results[m].dropna().iloc[0]}" if results[m].notna().any()
                       else f"{m} (empty)" for m in single)
    return (f"One model only ({values}): Compare pairs the answers of two or more models "
            "(or settings) to the same prompts. Load a table with several models, or "
            "compare the values of another factor below if they answer the same prompts.")


def _default_by(results: pd.DataFrame, design: Design) -> str:
    return default_by(design, results)


def choices(design: Design, results: pd.DataFrame) -> dict:
    """The page's widgets: factor compared, reference, outcome, subgroups and options."""
    note = one_model_note(design, results)
    if note:
        st.info(md(note))
    c1, c2, c3 = st.columns(3)
    from ui.common import per_table
    from ui.table_job import load_job

    early = getattr(load_job(results, design), "units", None)  # keyed by the default, read
    by_default = next(iter(early)) if early else per_table(  # at load; else counts values
        _default_by, results, design, design)  # per factor
    by = c1.selectbox("Compare the values of", design.names, key="compare_by",
                      index=design.names.index(by_default),
                      help="Model, input format, temperature ...: its values must answer "
                           "the same prompts")
    values = [str(v) for v in design.factor(by).values]
    reference = c2.selectbox("Against", [None, *values], key=f"compare_ref_{by}",
                             format_func=lambda v: "every pair" if v is None else f"{v} "
                                                                                 "(reference)")
    numeric = [c for c in results.columns if c not in design.names and c != "deviation"
               and pd.api.types.is_numeric_dtype(results[c])]
    options = ([OUTCOME] if design.outcome is not None else []) + numeric
    outcome = c3.selectbox("Outcome", options, key="compare_outcome",
                           help="The 0/1 deviation (McNemar) or a numeric score (paired t, "
                                "Wilcoxon)")
    from ui.subgroups import factor_choice

    factors = factor_choice(design, "compare_factors", exclude=[by], results=results,
                            label="Where do they differ? Subgroups of these prompt factors")
    unit = st.multiselect(
        "Pair on (the prompt unit)", [c for c in results.columns if c not in (by, "deviation")],
        key=UNIT_KEY, help="The columns that identify a prompt: each value of the compared "
                           "factor must answer each prompt. Empty: the design's prompt unit, "
                           "else an id column, else the prompt factors (the note below the "
                           "verdict says which was used).")
    with st.expander("Options", expanded=False):
        o1, o2, o3, o4 = st.columns(4)
        level = o1.radio("Highest subgroup level", list(range(1, min(3, len(factors)) + 1))
                         or [1], horizontal=True, key="compare_level",
                         index=min(1, max(len(factors) - 1, 0)))
        adjust = o2.radio(Opts.label("adjust"), Opts.choices("adjust"), key="compare_adjust",
                          index=Opts.choices("adjust").index(Opts.default("adjust")),
                          format_func=cmp.ADJUSTMENT_NAMES.get)
        duplicates = o3.radio(Opts.label("duplicates"), Opts.choices("duplicates"),
                              index=Opts.choices("duplicates").index(Opts.default("duplicates")),
                              key="compare_duplicates", help=Opts.help("duplicates"),
                              format_func={"mean": "average", "refuse": "refuse"}.get)
        n_boot = o4.select_slider(Opts.label("n_resamples"), [200, 500, 1000, 2000],
                                  value=Opts.default("n_resamples"), key="compare_n_boot")
        cluster = Opts.default("cluster")  # the design's
        if design.cluster and not st.checkbox(
                f"{Opts.label('cluster')} of {md(design.cluster)}", value=True,
                key="compare_cluster"):
            cluster = None
        more = other_options(Opts, ("adjust", "duplicates", "n_resamples"),
                             key="compare_option")
    return {"by": by, "reference": reference, "factors": factors,
            "level": int(level) if factors else None, "unit": list(unit) or None,
            "score": None if outcome == OUTCOME else outcome, **Opts().settings(), **more,
            "adjust": adjust, "duplicates": duplicates, "n_resamples": int(n_boot),
            "cluster": cluster}


@st.cache_resource(max_entries=8, show_spinner="Pairing the prompts...")
def _pairing(token: str, design_json: str, pairing_key: str, where: str,
             _results: pd.DataFrame, _design: Design, _settings: dict, _where: dict
             ) -> cmp.Pairing:
    from analysis import api as bw
    from ui.common import per_table
    from ui.table_job import load_job

    s = _settings
    early = getattr(load_job(_results, _design), "units", None) or {}  # read at load
    inferred = None if s["unit"] is not None else early[s["by"]] \
        if not _where and s["by"] in early else per_table(
            _inferred_unit, _results, _design, _design, _where, s["by"])  # scans the id columns
    return bw.compare_pairing(_results, _design, by=s["by"], unit=s["unit"], score=s["score"],
                              subgroups=s["factors"], options=Opts.from_settings(s),
                              where=_where, applied=True, inferred=inferred).raw


def _inferred_unit(results: pd.DataFrame, design: Design, where: dict, by: str
                   ) -> tuple[list[str], str, str]:
    from analysis import api as bw

    return bw.prompt_unit(results, design, by=by, where=where, applied=True).raw


@st.cache_resource(max_entries=8, show_spinner="Comparing and bootstrapping...")
def _cached(token: str, design_json: str, settings: str, where: str, _pairing: cmp.Pairing,
            _settings: dict, _results: pd.DataFrame, _design: Design, _where: dict
            ):
    from analysis import api as bw

    s = _settings
    return bw.compare(_results, _design, by=s["by"], reference=s["reference"],
                      subgroups=s["factors"], level=s["level"], unit=s["unit"],
                      score=s["score"], options=Opts.from_settings(s), where=_where,
                      applied=True, pairing=_pairing)


def _keys(design: Design, settings: dict, where: dict) -> tuple[dict, str, str, str, str]:
    """The subset without empty filters, and the cache keys: table, design, settings,
    subset."""
    where = {k: list(v) for k, v in (where or {}).items() if v}
    return (where, st.session_state["results_token"], design.to_json(),
            repr(sorted(settings.items(), key=str)), repr(sorted(where.items())))


def comparison_result(results: pd.DataFrame, design: Design, settings: dict, where: dict):
    """:func:`analysis.api.compare` of the active table (its Result, ``raw`` the
    :class:`~analysis.compare.Comparison`), cached per settings; the pairing (the step
    that reads the rows, :func:`analysis.api.compare_pairing`) is cached per what it
    depends on, so the level, adjustment, reference or bootstrap options do not pair
    again."""
    where, token, design_json, settings_key, where_key = _keys(design, settings, where)
    pair_settings = {k: settings.get(k) for k in ("by", "unit", "score", "factors", "cluster",
                                                   "duplicates")}
    pairing = _pairing(token, design_json, repr(sorted(pair_settings.items(), key=str)),
                       where_key, results, design, settings, where)
    return _cached(token, design_json, settings_key, where_key, pairing, settings, results,
                   design, where)


@st.cache_resource(max_entries=16, show_spinner=False)
def _figures(token: str, design_json: str, settings: str, where: str, pair: tuple[str, str],
             _table: pd.DataFrame, _factors: list[str]) -> tuple:
    from analysis.figures.compare import difference_sunburst, dumbbell_figure

    sun = (difference_sunburst(_table, _factors) if cmp.LD_DIFFERENCE in _table else None)
    return dumbbell_figure(_table), sun


def pair_figures(c: cmp.Comparison, pair: tuple[str, str], design: Design, settings: dict,
                 where: dict) -> tuple:
    """The dumbbell chart and, for a 0/1 outcome, the sunburst of ``pair`` in
    the comparison ``c`` (:func:`comparison_result`, same arguments), cached alike: a rerun that
    changes nothing they show does not build them again. Raises AnalysisError."""
    _, token, design_json, settings_key, where_key = _keys(design, settings, where)
    return _figures(token, design_json, settings_key, where_key, tuple(pair),
                    c.subgroups[pair], list(settings["factors"]))


def readings(c: cmp.Comparison) -> None:
    """The answer first: one line per pair, then what was paired and what was left out."""
    notes = c.notes
    for note in notes:
        if "->" in note and "paired prompts" in note:
            st.markdown(f"- {md(note)}")
    for note in notes:
        if "subgroups differ" in note or "no subgroup differs" in note:
            st.markdown(f"- {md(note)}")
    st.caption(md(c.pairing.note))
    each_note([*c.pairing.notes, *(n for n in notes if "left out (no partner)" in n)], st.warning)


def pair_choice(c: cmp.Comparison) -> tuple[str, str] | None:
    """The pair whose subgroups are drawn."""
    pairs = list(c.subgroups)
    if not pairs:
        return None
    return st.selectbox("Pair", pairs, key="compare_pair",
                        format_func=lambda p: f"{p[0]} -> {p[1]}")


def _use_unit(unit: list[str]) -> None:
    st.session_state[UNIT_KEY] = list(unit)


def pairing_failed(exc: Exception) -> None:
    """A failed comparison's message and, when a unit would pair
    (:class:`analysis.errors.PromptUnitError` ``suggested_unit``), a button that pairs on
    it."""
    from analysis.prompt_unit import unit_text

    st.error(md(str(exc)))
    unit = getattr(exc, "suggested_unit", None)
    if unit:
        st.button(f"Pair on {unit_text(unit)}", key="compare_use_unit", type="primary",
                  on_click=_use_unit, args=(list(unit),))
