"""The ``bootstrap`` section of the JSON of subgroups, ecdf and index (not a subcommand;
the options themselves are :class:`analysis.options.common.BootstrapOptions`)."""

from __future__ import annotations

from typing import Any

__all__ = ["bootstrap_json"]


def bootstrap_json(options: Any, cluster: str | None) -> dict[str, Any]:
    """``{"cluster", "n_boot", "seed"}``: the JSON's bootstrap settings (their keys as
    they always were; the Python argument is ``n_resamples``)."""
    return {"cluster": cluster, "n_boot": options.n_resamples, "seed": options.seed}
