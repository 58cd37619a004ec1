"""SAGED statistics of ``analysis disparity`` (a helper, not a subcommand).

``--normalize`` rescales the feature (and ``--baseline``) before everything else;
``--bins``, ``--precision-tolerance``, ``--percentile`` and ``--mode-bin-width`` set the
statistics of :func:`analysis.saged_stats.saged_statistics`, added to the JSON as
``saged_statistics`` (per group) and ``saged_disparity`` (across groups).
``--saged-conventions`` computes the summary and disparity metrics as the SAGED library
does (``analysis.disparity.Conventions``). The options are declared once, in
:class:`analysis.options.disparity.SagedOptions`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["normalized", "saged_payload"]


def normalized(options, feature: str, results):  # noqa: ANN001
    """``results`` with the feature (and baseline) rescaled as ``--normalize`` asks."""
    from analysis.saged_stats import normalize

    return normalize(results, [feature, options.baseline or ""], options.normalization)


def saged_payload(options, feature: str, results, by: list[str]) -> dict[str, Any]:  # noqa: ANN001
    """``saged_statistics`` and ``saged_disparity`` for the JSON (already normalised)."""
    from analysis.saged_stats import saged_disparity, saged_statistics

    table = saged_statistics(results, feature, by, baseline=options.baseline,
                             **{**options.saged_kwargs(), "normalization": "none"})
    return {"saged_statistics": table,
            "saged_disparity": saged_disparity(table, alpha=options.alpha,
                                               conventions=options.conventions),
            "normalization": options.normalization}
