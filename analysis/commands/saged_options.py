"""SAGED statistics of ``analysis disparity`` (a helper, not a subcommand).

``--normalize`` rescales the feature (and ``--baseline``) before everything else;
``--bins``, ``--precision-tolerance``, ``--percentile`` and ``--mode-bin-width`` set the
statistics of :func:`analysis.saged_stats.saged_statistics`, which
:func:`analysis.api.disparity` adds to the JSON as ``saged_statistics`` (per group) and
``saged_disparity`` (across groups).
``--saged-conventions`` computes the summary and disparity metrics as the SAGED library
does (``analysis.disparity.Conventions``). The options are declared once, in
:class:`analysis.options.disparity.SagedOptions`.
"""

from __future__ import annotations

__all__ = ["normalized"]


def normalized(options, feature: str, results):  # noqa: ANN001
    """``results`` with the feature (and baseline) rescaled as ``--normalize`` asks."""
    from analysis.saged_stats import normalize

    return normalize(results, [feature, options.baseline or ""], options.normalization)
