"""The ``counterfactual`` section of the report (:mod:`analysis.report`): one factor
swapped within its template (:func:`analysis.api.counterfactual`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["build", "default_settings"]


def default_settings(results: pd.DataFrame, design) -> dict[str, Any]:  # noqa: ANN001
    """The section's settings: no swapped factor (the Counterfactual page chooses one; a
    full report skips the section until its settings name one), the design's reference,
    every value, the default unit, and every option's default."""
    from analysis.options.counterfactual import CounterfactualOptions

    return {"swap": None, "reference": None, "values": None, "unit": None, "template": None,
            "score": None, "text": None, **CounterfactualOptions().settings(), "where": {}}


def build(sec, results: pd.DataFrame, design, s: dict) -> None:  # noqa: ANN001
    """Fill ``sec`` (an :class:`analysis.report.Section`): the notes, the per-value pairs
    table (its p-values adjusted as the settings say), the text measures and the missing
    swaps; a swap without pairs is skipped with its message (the missing swaps named)."""
    from analysis import api as bw
    from analysis.errors import PairingError, SectionSkipped
    from analysis.options.counterfactual import CounterfactualOptions

    if not s.get("swap"):
        raise SectionSkipped("no swapped factor chosen: choose one on the Counterfactual "
                             "page and add it to the report.")
    where = {k: [str(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
             for k, v in (s.get("where") or {}).items() if v}
    opts = CounterfactualOptions.from_settings(s)
    try:
        r = bw.counterfactual(results, design, swap=s["swap"], reference=s.get("reference"),
                              values=s.get("values"), unit=s.get("unit"),
                              template=s.get("template"), score=s.get("score"),
                              text=s.get("text"), options=opts, where=where or None,
                              applied=True)
    except PairingError as exc:
        raise SectionSkipped(str(exc)) from None
    sec.notes += list(r.notes)
    sec.tables.append(("counterfactual_pairs", r.table))
    sec.adjustments["counterfactual_pairs"] = opts.adjust
    if "text" in r.tables and len(r.tables["text"]):
        sec.tables.append(("counterfactual_text", r.tables["text"]))
        sec.adjustments["counterfactual_text"] = opts.adjust
    missing = r.tables["missing_swaps"]
    if len(missing):
        sec.warnings.append(f"{len(missing):,} swaps are missing (a prompt with the reference "
                            "but not the value, or the reverse): the table "
                            "counterfactual_missing_swaps lists them as plan rows.")
        sec.tables.append(("counterfactual_missing_swaps", missing))
