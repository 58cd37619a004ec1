"""``cells FILE --factors a,b``: the cell table (n and deviations per combination)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


#: ``python -m analysis --help``'s line for this command: (name, one-line help),
#: read from this file's text at start-up (analysis/commands/__init__.py).
SUMMARY = ("cells", "rows and deviations per observed factor combination")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_factor_options, add_input, add_outcome_options, add_output_options

    p = sub.add_parser("cells", help="rows and deviations per observed factor combination")
    add_input(p)
    add_factor_options(p, required=False)
    add_outcome_options(p)
    add_output_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from analysis import api as bw
    from analysis.cli import emit, load_with_design
    from analysis.columns import DEVIATION_RATE, DEVIATIONS, N

    results, design = load_with_design(args, need_outcome=False)
    cells = bw.cells(results, design).table
    if DEVIATIONS in cells:
        cells[DEVIATION_RATE] = cells[DEVIATIONS] / cells[N]
    emit(args, cells, cells)
