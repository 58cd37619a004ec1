"""``cells FILE --factors a,b``: the cell table (n and deviations per combination)."""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


SUMMARY = ("cells", "rows and deviations per observed factor combination")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import add_output_options, command_parser

    p = command_parser(sub, SUMMARY, factors=False, outcome=True)
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
