"""The judge-noise arguments and the ``judge_noise`` section of the JSON of subgroups and
importance (not a subcommand; the options themselves are
:class:`analysis.options.common.NoiseOptions`). See ``analysis/judge_noise.py`` and
``docs/judge_noise.md``."""

from __future__ import annotations

from typing import Any

__all__ = ["noise_rows_payload", "noise_settings"]


def noise_settings(options: Any, design, results) -> dict:  # noqa: ANN001
    """Keyword arguments of ``analysis.judge_noise`` from the options (an options object
    with ``judge_noise``, ``noise_mode``, ``seed`` and, for subgroups, ``noise_alpha``)."""
    from analysis.judge_noise import JudgeNoiseError, noise_arguments

    if results.attrs.get("engine"):
        raise JudgeNoiseError("--judge-noise redraws the judge's score of every row, so it "
                              "needs the rows: add --engine pandas.")

    return noise_arguments(options, design)


def noise_rows_payload(table, meta, label: str, estimate: str,  # noqa: ANN001
                       q_column: str) -> dict:
    """The ``judge_noise`` section of the JSON from an :class:`analysis.api.Result`'s
    table and ``meta`` (its ``judge_noise`` settings and ``judge_noise_summary``)."""
    from analysis.judge_noise import noise_rows

    return {"settings": dict(meta["judge_noise"]), "summary": meta["judge_noise_summary"],
            "rows": noise_rows(table, label, estimate, q_column)}
