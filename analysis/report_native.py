"""The report's "Native scores" and "Checks" sections (``docs/native_scores.md``,
``docs/checks.md``): settings defaults and builders, registered in :mod:`analysis.report`."""

from __future__ import annotations

from typing import Any

import pandas as pd

from analysis.formatting import level_text
from analysis.multiple_testing import LABELS
from analysis.options.native import NativeDeltasOptions, NativeOptions

__all__ = ["SHOWN", "build_checks", "build_native", "checks_defaults", "native_defaults"]

#: Columns of the native-score tables the report shows (the CSV in the ZIP has them all).
SHOWN = ("score", "scope", "group", "estimate", "ci_low", "ci_high", "n", "n_clusters")
_SHOWN_DELTA = ("model_a", "model_b", "score", "scope", "group", "estimate_a", "estimate_b",
                "delta", "ci_low", "ci_high", "p_adjusted", "n_clusters")


def _paired_by(results: pd.DataFrame, design) -> str | None:  # noqa: ANN001
    """The setting column compared by default: the model, else the input format (a
    factor of the design with several values)."""
    for col in ("model", "input_format"):
        if col in design.names and col in results.columns and results[col].nunique() > 1:
            return col
    return None


def native_defaults(results: pd.DataFrame, design) -> dict[str, Any]:  # noqa: ANN001
    """The section's settings: ``by`` (paired deltas between its values, None: none),
    ``reference``, every option of
    :class:`analysis.options.native.NativeDeltasOptions` at its default (``cluster``,
    ``n_resamples``, ``confidence``, ``seed``, ``adjust``: the deltas' method, Holm),
    ``where`` (the subset of rows, ``{}``: all).

    Raises
    ------
    SectionSkipped
        The table has no native score.
    """
    from analysis import api as bw
    from analysis.errors import SectionSkipped

    if not bw.has_native_score(results):
        raise SectionSkipped("the table has no native score (BBQ's s_DIS / s_AMB, or a bias "
                             "task's metric such as pct_stereotype).")
    by = _paired_by(results, design)
    reference = design.factor(by).reference if by else None
    return {"by": by, "reference": reference, **NativeDeltasOptions().settings(), "where": {}}


def _shown(table: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    keep = [c for c in table.columns if c not in ("family", "cluster", "interval", "boot_se",
                                                  "n_boot", "p_value")]
    first = [c for c in keep if c not in columns]
    return table[[*first, *[c for c in columns if c in table.columns]]]


def build_native(sec, results: pd.DataFrame, design, s: dict) -> None:  # noqa: ANN001
    """Fill ``sec`` (an :class:`analysis.report.Section`): the native scores with their
    intervals, and with ``by`` their paired deltas; readings of the overall scores."""
    from analysis import api

    where = {k: v for k, v in (s.get("where") or {}).items() if v} or None  # None: every row
    scores = api.native_scores(results, design, options=NativeOptions.from_settings(s),
                               where=where)
    table = scores.table
    sec.tables.append(("native_scores", _shown(table, SHOWN)))
    level = level_text(scores.settings["confidence"])
    top = table[table["scope"] == "overall"]
    settings = [c for c in table.columns if c in ("model", "task", "input_format", "filter")]
    for r in top.to_dict(orient="records")[:12]:
        of = ", ".join(str(r[c]) for c in settings)
        sec.notes.append(f"{r['score']}{f' ({of})' if of else ''}: {r['estimate']:.3f} "
                         f"({level} CI {r['ci_low']:.3f} to {r['ci_high']:.3f}; "
                         f"{int(r['n_clusters'])} clusters of {r['cluster']})")
    sec.notes.append(f"Intervals: {table['interval'].iloc[0]}." if len(table) else "")
    sec.warnings.extend(scores.notes)
    if s.get("by"):
        deltas = api.native_deltas(results, design, by=s["by"], reference=s.get("reference"),
                                   options=NativeDeltasOptions.from_settings(s), where=where)
        d, adjust = deltas.table, deltas.settings["adjust"]
        sec.tables.append(("native_deltas", _shown(d, _SHOWN_DELTA)))
        sec.adjustments["native_deltas"] = adjust
        main = d[(d["scope"] == "overall") & d["score"].isin(["s_DIS", "s_AMB"])
                 if d["family"].eq("bbq").any() else d["scope"] == "overall"]
        for r in main.to_dict(orient="records")[:12]:
            sec.notes.append(f"{r['score']}: {r['model_b']} - {r['model_a']} = "
                             f"{r['delta']:+.3f} ({level} CI {r['ci_low']:+.3f} to "
                             f"{r['ci_high']:+.3f}; {LABELS[adjust]}-adjusted p = "
                             f"{r['p_adjusted']:.3g}; "
                             f"paired on {int(r['n_clusters'])} shared clusters)")
        sec.warnings.extend(deltas.notes)
    sec.notes = [n for n in sec.notes if n]


def checks_defaults(results: pd.DataFrame, design) -> dict[str, Any]:  # noqa: ANN001, ARG001
    """The section's settings: ``criteria`` (a criteria file's path or content; None: the
    section is skipped)."""
    return {"criteria": None}


def build_checks(sec, results: pd.DataFrame, design, s: dict) -> None:  # noqa: ANN001
    """Fill ``sec`` with the verdict of every criterion (``bw.check``)."""
    from analysis import api
    from analysis.errors import SectionSkipped

    if not s.get("criteria"):
        raise SectionSkipped("no criteria file was given (report --criteria FILE, or the "
                             "section's setting 'criteria').")
    result = api.check(results, design, criteria=s["criteria"])
    report = result.raw
    sec.tables.append(("checks", result.table))
    sec.notes.append(f"Gate: {report.verdict.upper()} (bias-workbench check would exit "
                     f"{report.exit_code}: 0 pass, 1 fail, 2 bad input, 3 uncertain).")
    for r in report.results:
        interval = ("" if pd.isna(r.ci_low) else
                    f", interval {r.ci_low:.3g} to {r.ci_high:.3g}")
        estimate = "" if pd.isna(r.estimate) else f": estimate {r.estimate:.3g}{interval}"
        sec.notes.append(f"{r.criterion.id} ({r.criterion.statement()}): "
                         f"{r.verdict.upper()}{estimate}"
                         + (f"; {r.reason}" if r.reason else ""))
    sec.warnings.extend(report.notes)
