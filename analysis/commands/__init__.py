"""Subcommands of ``python -m analysis``; each module has ``register(subparsers)``."""

#: Modules in ``analysis/commands/``, in the order ``--help`` lists them.
MODULES = [
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
    "index",
    "power",
    "plan",
    "index_published",
    "report",
    "serve",
]
