"""The ``compare`` section of the report (:mod:`analysis.report`): a paired comparison
(:mod:`analysis.compare`) of the values of one factor on the same prompts."""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["MAX_FIGURE_PAIRS", "MAX_TRIED", "build", "default_settings"]


#: Per-subgroup figures drawn for at most this many pairs (the tables hold every pair).
MAX_FIGURE_PAIRS = 3
#: Factors tried as the default compared factor.
MAX_TRIED = 4


def default_settings(results: pd.DataFrame, design) -> dict[str, Any]:  # noqa: ANN001
    """The settings the Compare page starts from: ``by`` = the first factor (model
    factors first, then prompt, then domain factors; at most :data:`MAX_TRIED` tried)
    whose values pair on the prompt unit, a declared unit or an id column before the
    combinations of other factors (None when none pairs: the section is then
    skipped unless the settings name one), every pair, no subgroups (overall only: no
    bootstrap)."""
    from analysis.errors import SectionSkipped
    from analysis.factor_defaults import paired_factor
    from analysis.options.compare import CompareOptions

    if design.outcome is None:  # a score column is the page's choice: settings name it
        raise SectionSkipped("the design has no outcome (how a row counts as a deviation).")
    chosen = paired_factor(results, design, tried=MAX_TRIED)
    return {"by": chosen, "reference": None, "factors": [], "level": None,
            "unit": None, "score": None, **CompareOptions().settings(), "where": {}}


def build(sec, results: pd.DataFrame, design, s: dict) -> None:  # noqa: ANN001
    """Fill ``sec`` (an :class:`analysis.report.Section`): notes (what was paired, the
    discordant counts and tests, the subgroups that differ), warnings (unpaired rows,
    duplicates), the overall and subgroup tables, a dumbbell chart per pair (up to
    :data:`MAX_FIGURE_PAIRS`) and the LD-difference sunburst of the first pair."""
    from analysis import api as bw
    from analysis.compare import UNPAIRED_A, UNPAIRED_B
    from analysis.errors import PairingError, SectionSkipped
    from analysis.figures.compare import difference_sunburst, dumbbell_figure
    from analysis.options.compare import CompareOptions

    where = {k: [str(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
             for k, v in (s.get("where") or {}).items() if v}
    factors = list(s.get("factors") or [])
    if not s.get("by"):
        raise SectionSkipped("no factor's values answer the same prompts (tried: model, then "
                             "prompt, then domain factors); choose the factor and the prompt "
                             "unit on the Compare page.")
    options = CompareOptions.from_settings(s)
    try:
        result = bw.compare(results, design, by=s["by"], reference=s.get("reference"),
                            subgroups=factors, level=s.get("level"), unit=s.get("unit"),
                            score=s.get("score"), options=options, where=where, applied=True)
    except PairingError as exc:
        raise SectionSkipped(str(exc)) from None
    c = result.raw
    sec.notes += [n for n in c.notes if "are left out (no partner)" not in n]
    sec.warnings += [n for n in c.notes if "are left out (no partner)" in n]
    unpaired = int(c.overall[UNPAIRED_A].sum() + c.overall[UNPAIRED_B].sum())
    if unpaired:
        sec.warnings.append(f"{unpaired:,} prompt units without a partner in total (over "
                            "the compared pairs) take no part in the comparison.")
    sec.tables.append(("compare_overall", c.overall))
    sec.adjustments["compare_overall"] = options.adjust
    if c.subgroups:
        sec.tables.append(("compare_subgroups", result.tables["subgroups"]))
        sec.adjustments["compare_subgroups"] = options.subgroup_adjust  # per pair
    for i, ((a, b), table) in enumerate(c.subgroups.items()):
        if i < MAX_FIGURE_PAIRS:
            sec.figures.append((f"compare_{a}_{b}", dumbbell_figure(table)))
    if c.subgroups and c.pairing.outcome == "binary":
        (a, b), table = next(iter(c.subgroups.items()))
        sec.figures.append((f"compare_{a}_{b}_sunburst", difference_sunburst(table, factors)))
