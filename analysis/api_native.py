"""The API of the benchmarks' own scores, their paired deltas and the gate
(``bw.native_scores``, ``bw.native_deltas``, ``bw.check``; registered in
:mod:`analysis.api`). Same shape as every API function: ``(data, design=None, *, where=None,
**options) -> Result``; the statistics are :mod:`analysis.native_scores` and
:mod:`analysis.gate`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analysis.api import Result, Where, _as_list, _subset, prepare_inputs
from analysis.options import FROM_DESIGN

__all__ = ["check", "native_deltas", "native_scores"]


def native_scores(data: Any, design: Any = None, *, where: Where | None = None,
                  cluster: str | None = FROM_DESIGN, n_resamples: int = 1000,
                  confidence: float = 0.95, seed: int = 0,
                  breakdowns: str | Sequence[str] | None = None) -> Result:
    """The benchmark's own scores (BBQ's s_DIS / s_AMB, CrowS-Pairs' pct_stereotype ...)
    with cluster-bootstrap intervals (``docs/native_scores.md``).

    Returns
    -------
    Result
        ``table``: :func:`analysis.native_scores.native_scores`' table: the setting
        columns (``model``, ``task``, ``input_format``, ``filter``, those present),
        ``family``, ``score``, ``scope``, ``group``, ``estimate``, ``boot_se``,
        ``ci_low``, ``ci_high``, ``n``, ``n_clusters``, ``n_boot``, ``cluster``,
        ``interval``.
    """
    from analysis.native_scores import native_scores as compute

    table, the_design, subset = prepare_inputs(data, design, where=where, need_outcome=False)
    split = _as_list(breakdowns, "breakdowns") if breakdowns is not None else None
    out = compute(_subset(table, subset), the_design, cluster=cluster,
                  n_resamples=n_resamples, confidence=confidence, seed=seed, breakdowns=split)
    return Result(out.table, out.notes, {**out.settings, "where": subset}, {}, out)


def native_deltas(data: Any, design: Any = None, *, by: str, reference: str | None = None,
                  unit: str | Sequence[str] | None = None, where: Where | None = None,
                  cluster: str | None = FROM_DESIGN, n_resamples: int = 1000,
                  confidence: float = 0.95, seed: int = 0,
                  breakdowns: str | Sequence[str] | None = None) -> Result:
    """Paired differences of the native scores between the values of ``by`` (models,
    input formats) on the same items, with paired cluster-bootstrap intervals and tests.

    Returns
    -------
    Result
        ``table``: :func:`analysis.native_scores.native_deltas`' table: the setting
        columns besides ``by``, ``model_a``, ``model_b``, ``family``, ``score``,
        ``scope``, ``group``, ``estimate_a``, ``estimate_b``, ``delta`` (b - a),
        ``boot_se``, ``ci_low``, ``ci_high``, ``p_value``, ``p_adjusted``, ``n``,
        ``n_clusters``, ``n_boot``, ``cluster``, ``interval``.
    """
    from analysis.native_scores import native_deltas as compute

    table, the_design, subset = prepare_inputs(data, design, where=where)
    split = _as_list(breakdowns, "breakdowns") if breakdowns is not None else None
    out = compute(_subset(table, subset), the_design, by=by, reference=reference,
                  unit=_as_list(unit, "unit"), cluster=cluster, n_resamples=n_resamples,
                  confidence=confidence, seed=seed, breakdowns=split)
    return Result(out.table, out.notes, {**out.settings, "where": subset}, {}, out)


def check(data: Any, design: Any = None, *, criteria: Any,
          baseline: Any = None, where: Mapping[str, Any] | None = None) -> Result:
    """Evaluate a criteria file (``docs/checks.md``) on the results (and a baseline run).

    Returns
    -------
    Result
        ``table``: one row per criterion: ``id``, ``statement``, ``verdict`` (``pass``,
        ``fail``, ``uncertain``, ``not evaluated``), ``estimate``, ``ci_low``,
        ``ci_high``, ``threshold``, ``test``, ``p_value``, ``rows``, ``optional``,
        ``reason``. ``raw``: the :class:`analysis.gate.CheckReport` (its ``exit_code``,
        Markdown, JUnit XML and JSON).
    """
    from analysis.gate import run_checks

    report = run_checks(data, design, criteria, baseline=baseline, where=where)
    return Result(report.table(), tuple(report.notes), {"criteria": report.source}, {},
                  report)
