"""Applying a design: factor columns -> ordered categoricals, the outcome -> ``deviation``.

Import :func:`apply_design` from :mod:`analysis.design`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.columns import DEVIATION
from analysis.design_check import design_problems
from analysis.design_model import Design
from analysis.errors import DesignMismatchError

__all__ = ["apply_design"]


def apply_design(frame: pd.DataFrame, design: Design) -> pd.DataFrame:
    """The results table in analysis form.

    Checks the design (:func:`check_design`), then returns a copy of ``frame`` whose
    factor columns are ordered categoricals over the declared values and, when the
    design has an outcome, with a float column ``deviation`` (1.0 / 0.0 / NaN where the
    outcome is missing). A column ``deviation`` the file had (when the outcome is
    another column) is kept as ``deviation_original``; applying the design to a table
    that already has ``deviation_original`` replaces ``deviation``, so applying twice
    gives the table of one application. Every other column is kept as it was.

    Raises
    ------
    DesignMismatchError
        Listing every mismatch between the design and the table.
    """
    memo: dict = {}
    problems = design_problems(design, frame, _memo=memo)
    errors = [p.message for p in problems if p.severity == "error"]
    if errors:
        raise DesignMismatchError(errors)
    out = frame.copy(deep=False)  # copy-on-write: the columns replaced below are new
    for f in design.factors:
        codes, labels, counts = memo[f.name]
        position = {v: i for i, v in enumerate(f.values)}
        # labels no row has may be undeclared (a categorical's unused categories): -1
        remap = np.array([position[v] if c else -1 for v, c in zip(labels, counts,
                                                                    strict=True)],
                         dtype=np.int8 if len(f.values) < 127 else np.int64)
        out[f.name] = pd.Categorical.from_codes(remap[codes], categories=list(f.values),
                                                ordered=True, validate=False)
    if design.outcome is not None:
        original = f"{DEVIATION}_original"
        if DEVIATION in frame.columns and original not in frame.columns and not (
                design.outcome.column == DEVIATION and design.outcome.mapping == "binary"):
            out = out.rename(columns={DEVIATION: original})
        # an applied table (``deviation_original`` already there) keeps it: applying
        # again replaces ``deviation`` instead of repeating ``deviation_original``
        out[DEVIATION] = memo[DEVIATION]
    return out

