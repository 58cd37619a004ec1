"""Subcommands of ``python -m analysis``; each module has ``register(subparsers)`` and
its ``SUMMARY = (command name, one-line help)``: ``--help``'s line for the command (and
its parser's ``help``), read from the file's text at start-up, so it stays a literal
tuple of strings. An analysis's ``run`` parses the arguments into its options, calls its
:mod:`analysis.api` function (the analysis's one composition) and prints the Result."""

import re
from pathlib import Path

__all__ = ["MODULES", "SUMMARIES"]

_HERE = Path(__file__).resolve().parent
#: The order ``--help`` lists the commands in; a command module not named here (one with
#: ``def register(``) is listed after these, alphabetically.
_ORDER = [
    "importer",
    "prepare",
    "describe",
    "cells",
    "coverage",
    "subgroups",
    "ecdf",
    "importance",
    "features",
    "disparity",
    "cohorts",
    "compare",
    "counterfactual",
    "native",
    "check",
    "index",
    "power",
    "plan",
    "generate",
    "extend",
    "variance",
    "index_published",
    "report",
    "serve",
]
_SUMMARY = re.compile(r"^SUMMARY = \((.*?)\)$", re.M | re.S)


def _summary(text: str) -> tuple[str, str] | None:
    """A module's ``SUMMARY`` read from its source text (its string pieces joined): the
    start-up reads it without importing the module or parsing its syntax tree."""
    found = _SUMMARY.search(text)
    if found is None:
        return None
    name, *help_parts = re.findall(r'"([^"]*)"', found.group(1))
    return name, "".join(help_parts)


def _summaries() -> dict[str, tuple[str, str]]:
    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted(_HERE.glob("[!_]*.py"))}
    modules = [m for m in _ORDER if m in texts] + sorted(
        m for m, text in texts.items() if m not in _ORDER and "\ndef register(" in text)
    return {m: s for m in modules if (s := _summary(texts[m])) is not None}


#: Module -> (command name, one-line help) for ``python -m analysis --help``, from each
#: module's ``SUMMARY``: the top-level help and the choice of a command are made from
#: this table, so that only the chosen command's module (and what it imports) is loaded
#: (docs/performance.md). tests/analysis/test_cli_imports.py checks it against each
#: ``register`` and against the command modules on disk.
SUMMARIES: dict[str, tuple[str, str]] = _summaries()

#: Modules in ``analysis/commands/``, in the order ``--help`` lists them.
MODULES: list[str] = list(SUMMARIES)
