"""pandas: the reference engine (the whole table in memory).

It is what the workbench always did: :func:`analysis.io.load_results`, then
:func:`analysis.design.apply_design`, then :func:`analysis.cells.cell_table`. The other
engines are tested against it. A glob or folder is read file by file and concatenated
(the benchmarks' "pandas path"); the files must have the same columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from analysis.columns import DEVIATION
from analysis.design import Design, Outcome, apply_design, make_factor
from analysis.errors import LoadError

__all__ = ["design_for", "read_rows", "rows_with_design"]


def read_rows(source: object, *, name: str | None = None, sep: str | None = None,
              encoding: str = "utf-8") -> pd.DataFrame:
    """Every row of ``source`` (a DataFrame, bytes, a file, a path, a glob or a folder)."""
    from analysis.engines.duckdb_engine import expand
    from analysis.io import load_results

    if isinstance(source, (str, Path)):
        files = expand(source)
        if len(files) > 1:
            frames = [load_results(f, sep=sep, encoding=encoding) for f in files]
            first = list(frames[0].columns)
            for f, frame in zip(files[1:], frames[1:], strict=True):
                if sorted(frame.columns) != sorted(first):
                    raise LoadError(f"{source}: the files have different columns: "
                                    f"{Path(f).name} differs from {Path(files[0]).name}.")
            return pd.concat([fr[first] for fr in frames], ignore_index=True)
        return load_results(files[0], name=name, sep=sep, encoding=encoding)
    return load_results(source, name=name, sep=sep, encoding=encoding)


def rows_with_design(source: object, design: Design | None, factors: Sequence[str], *,
                     name: str | None = None, sep: str | None = None, encoding: str = "utf-8"
                     ) -> tuple[pd.DataFrame, Design]:
    """The rows with the design applied (completed for ``factors`` it does not declare)."""
    frame = read_rows(source, name=name, sep=sep, encoding=encoding)
    full = design_for(frame, design, factors)
    return apply_design(frame, full), full


def design_for(frame: pd.DataFrame, design: Design | None, factors: Sequence[str]) -> Design:
    """``design`` completed with :func:`analysis.design.make_factor` for ``factors`` it lacks
    (the pandas twin of the aggregate-based completion)."""
    known = design.names if design is not None else []
    extra = tuple(make_factor(frame, f) for f in factors if f not in known)
    if design is None:
        outcome = Outcome(DEVIATION, "binary") if DEVIATION in frame.columns else None
        return Design(factors=extra, outcome=outcome)
    return Design(factors=design.factors + extra, outcome=design.outcome, name=design.name)
