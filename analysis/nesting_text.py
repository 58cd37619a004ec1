"""Words about nestings (no statistics): the sentence for a row of
:func:`analysis.nesting.find_nestings` and the columns a suggested design's nestings are
looked for in. Front-ends (the ``describe`` command, the report, the pages) import them
from here; :mod:`analysis.nesting` re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from analysis.columns import (
    DEPENDENT,
    DETERMINANT,
    N_DEPENDENT_VALUES,
    N_DETERMINANT_VALUES,
    NESTING_KIND,
)

__all__ = ["describe_nesting", "nesting_columns"]


def nesting_columns(design) -> list[str]:  # noqa: ANN001 - an analysis.design.Design
    """The columns whose nestings a suggested design reports: its factors and its cluster
    (a template fixes the gender of its prompts: worth saying, though it is no factor)."""
    extra = [design.cluster] if design.cluster and design.cluster not in design.names else []
    return [*design.names, *extra]


def describe_nesting(row: pd.Series | Mapping) -> str:
    """A plain-language sentence for one row of :func:`find_nestings`."""
    det, dep, kind = row[DETERMINANT], row[DEPENDENT], row[NESTING_KIND]
    if kind == "constant":
        return (f"{dep} takes a single value in these rows: it cannot explain anything; "
                "leave it out of coverage and regression.")
    if kind == "equivalent":
        return (f"{det} and {dep} are the same grouping under two names "
                f"({row[N_DETERMINANT_VALUES]} values each): use one of them.")
    outside = (" (apart from the rows at a control value such as the reference or a "
               "\"none\"/\"no ...\" value)" if kind == "nested outside reference" else "")
    return (f"{dep} is nested in {det}: each of the {row[N_DETERMINANT_VALUES]} values of {det} "
            f"fixes one of the {row[N_DEPENDENT_VALUES]} values of {dep}{outside}. Coverage over "
            "both counts impossible combinations as empty, and a regression with both is "
            f"collinear: keep {det} or {dep}, not both.")
