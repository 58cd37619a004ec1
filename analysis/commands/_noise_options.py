"""The judge-noise refusal and the ``judge_noise`` section of the JSON of subgroups and
importance (not a subcommand; the options themselves are
:class:`analysis.options.common.NoiseOptions`, the numbers :func:`analysis.api.subgroups`'
and :func:`analysis.api.importance`'s). See ``docs/judge_noise.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analysis.table_meta import TableMeta

__all__ = ["needs_rows", "noise_rows_payload"]


def needs_rows(results, meta: TableMeta | None = None) -> None:  # noqa: ANN001 - a DataFrame
    """Refuse ``--judge-noise`` on an engine's cell table (``meta.engine``, the
    :class:`~analysis.table_meta.TableMeta` of the load): it redraws every row's score."""
    from analysis.judge_noise import JudgeNoiseError

    if meta is not None and meta.engine:
        raise JudgeNoiseError("--judge-noise redraws the judge's score of every row, so it "
                              "needs the rows: add --engine pandas.")


def noise_rows_payload(table, meta: Any, label: str, estimate: str,  # noqa: ANN001
                       q_column: str) -> dict:
    """The ``judge_noise`` section of the JSON from an :class:`analysis.api.Result`'s
    table and ``meta`` (its ``judge_noise`` settings and ``judge_noise_summary``): per row
    the label, the original estimate and q, and the replicates' shares."""
    from analysis.columns import NOISE_SAME_SIGN, NOISE_SIGNIFICANT, NOISE_SURVIVES

    shares = {"same_sign": NOISE_SAME_SIGN, "significant": NOISE_SIGNIFICANT,
              "survives": NOISE_SURVIVES}
    rows = [{label: r[label], estimate: r[estimate], q_column: r[q_column],
             **{k: r[c] for k, c in shares.items()}}
            for r in table[[label, estimate, q_column, *shares.values()]].to_dict(
                orient="records")]
    return {"settings": dict(meta["judge_noise"]), "summary": meta["judge_noise_summary"],
            "rows": rows}
