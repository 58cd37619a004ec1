"""Words a view puts beside the numbers: labels, captions and predicates that compute no
statistic (issue 37: a page or ui helper imports these, never a statistics module).

- :func:`category_label`: a category as a reader can tell it apart;
- :func:`subset_caption`: the active subset in words;
- :func:`is_continuous`: whether the design's outcome is a score (the linear model's);
- :func:`subgroup_where`, :func:`describe_finding`: a subgroup's factor values and its
  line among the top findings;
- :func:`adjusted_method`: the multiple-testing method behind a Result's ``p_adjusted``,
  read from its settings (the column headers follow it:
  :func:`analysis.multiple_testing.adjusted_label`).

The statistics modules that held them re-export them
(``analysis.distribution.category_label``, ``analysis.importance.subset_caption``,
``analysis.importance_linear.is_continuous``, ``analysis.findings.subgroup_where`` /
``describe_finding``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from analysis.design_outcome import is_continuous  # re-exported: the design's predicate

__all__ = ["adjusted_method", "category_label", "describe_finding", "is_continuous",
           "subgroup_where", "subset_caption"]


def category_label(value: str) -> str:
    """A category as a reader can tell it apart: quoted (``""``, ``" A"``) when it is empty
    or has leading / trailing spaces, else unchanged."""
    value = str(value)
    return f'"{value}"' if value == "" or value != value.strip() else value


def subset_caption(where: Mapping[str, Sequence[str]]) -> str:
    """The active subset (``{factor: [values]}``) in words."""
    if not where:
        return "Subset: all rows."
    return "Subset: " + "; ".join(f"{f} in {{{', '.join(v)}}}" for f, v in where.items()) + "."


def adjusted_method(settings: Mapping[str, Any], key: str = "adjust", *,
                    fixed: str = "bh") -> str:
    """The method of the ``p_adjusted`` column a Result's ``settings`` describe: the
    setting ``key`` when it names an adjustment (``bh``, ``by``, ``holm``,
    ``bonferroni``), else ``fixed``, the statistic's own (importance's ``adjust="none"``
    only labels the terms by the unadjusted p; its ``p_adjusted`` stays
    Benjamini-Hochberg)."""
    from analysis.multiple_testing import METHODS

    value = settings.get(key)
    return value if value in METHODS else fixed


def subgroup_where(row: Mapping, factors: Sequence[str]) -> dict[str, list[str]]:
    """The factor values a subgroup fixes (``{factor: [value]}``), from a table row."""
    import pandas as pd

    out = {}
    for f in factors:
        value = row.get(f)
        if value is not None and not (isinstance(value, float) and value != value) \
                and not pd.isna(value):
            out[f] = [str(value)]
    return out


def describe_finding(row: Mapping) -> str:
    """One line: ``subgroup: rate 0.537 (n 5,520), LD 0.164, adjusted p 6.5e-5``."""
    from analysis.columns import DEVIATION_RATE, LEVEL, LOG_DISPARITY, P_ADJUSTED, SUBGROUP, N
    from analysis.formatting import format_p

    return (f"{row[SUBGROUP]}: rate {float(row[DEVIATION_RATE]):.3f} (n {int(row[N]):,}), "
            f"LD {float(row[LOG_DISPARITY]):.3f}, adjusted p "
            f"{format_p(float(row[P_ADJUSTED]))}, level {int(row[LEVEL])}")
