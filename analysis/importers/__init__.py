"""Importers: raw benchmark files and evaluation-harness logs -> a results table + design.

Every importer is a module in this package exposing one function::

    def read(paths: Sequence[PathLike], **options) -> ImportResult

``paths`` are files (or, where the source writes folders, folders); ``options`` are the
importer's own keyword arguments (documented in its module and in ``docs/import_<source>.md``).
An importer never guesses: anything it cannot map (an unmatched prediction, a sample
without a score) is counted in ``ImportResult.counts`` and explained in ``notes``.
Bad input raises :class:`ImportFormatError` naming the file and the field.

Use :func:`import_results` to reach an importer by its source name (the CLI's
``python -m analysis import SOURCE PATH...`` and the Data page do).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from analysis.design import Design
from analysis.errors import LoadError

__all__ = [
    "ImportFormatError", "ImportResult", "PathArg", "SOURCES", "import_results",
    "load_importer",
]


#: source name -> module (relative to this package) implementing ``read``.
SOURCES: dict[str, str] = {
    "bbq": "bbq",
    "lm-eval": "lm_eval",
    "inspect": "inspect_logs",
    "wide": "wide",
}

PathArg = str | PathLike[str] | Path


class ImportFormatError(LoadError):
    """A file given to an importer is not in that importer's format (names file and field)."""


@dataclass(frozen=True)
class ImportResult:
    """What an importer returns.

    Attributes
    ----------
    frame : pandas.DataFrame
        The results table: one row per response, factor columns, outcome columns.
    design : Design
        A suggested design (factors with kinds and references, the outcome).
    source : str
        The importer's source name (``"bbq"``, ``"lm-eval"``, ...).
    counts : dict
        Row accounting, e.g. ``{"rows_read": ..., "rows_out": ..., "unmatched": ...}``.
        Every input row is accounted for.
    notes : list of str
        Human-readable notes (what was melted, what could not be matched and why).
    extras : dict of str -> DataFrame
        Further tables the source defines (e.g. BBQ's bias scores), keyed by name.
    parts : dict of str -> ImportResult
        An import of several task families (lm-eval's BBQ, CrowS-Pairs, ...; a task of
        no known family is a family of its own): each family's own import, with its own
        outcome and design (``task_family=`` imports one directly); empty otherwise.
    """

    frame: pd.DataFrame
    design: Design
    source: str
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    extras: dict[str, pd.DataFrame] = field(default_factory=dict)
    parts: dict[str, ImportResult] = field(default_factory=dict)


def import_results(source: str, paths: Sequence[PathArg], **options: Any) -> ImportResult:
    """Run the importer named ``source`` on ``paths``.

    Raises
    ------
    ImportFormatError
        Unknown source, no paths, or a file the importer cannot read.
    """
    if source not in SOURCES:
        raise ImportFormatError(
            f"Unknown import source {source!r}; choose one of: {', '.join(SOURCES)}."
        )
    if not paths:
        raise ImportFormatError(f"The {source} importer needs at least one file.")
    module = load_importer(source)
    accepted = inspect.signature(module.read).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in accepted.values()):
        for name in options:
            if name not in accepted:
                known = [p for p in accepted if p != "paths"]
                raise ImportFormatError(
                    f"The {source} importer has no option {name!r} "
                    f"(its options: {', '.join(known) or 'none'}).")
    return module.read(list(paths), **options)


def load_importer(source: str) -> ModuleType:
    """The module implementing ``source``.

    Raises
    ------
    ImportFormatError
        Unknown source, or its module or an optional dependency it needs is not
        installed (the message names the package and the extra that installs it).
    """
    if source not in SOURCES:
        raise ImportFormatError(
            f"Unknown import source {source!r}; choose one of: {', '.join(SOURCES)}."
        )
    name = f"analysis.importers.{SOURCES[source]}"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name == name:
            raise ImportFormatError(f"The {source} importer is not available in this "
                                    "installation.") from None
        raise ImportFormatError(
            f"The {source} importer needs the package {exc.name!r}, which is not installed "
            f"(pip install -e \".[harnesses]\" installs lm-eval and inspect-ai).") from None
