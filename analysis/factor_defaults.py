"""Which factors a page or report section starts with: the one place defaults are chosen.

A page opened on a constant factor (BBQ's ``category`` in a one-category file), on a text
column declared as a factor or on an id shows an error or nothing. :func:`useful_factors`
keeps the design's factors worth starting with; :func:`default_factors` picks up to ``k``
of them with no nested pair (:func:`analysis.nesting.unnested_choice`). The app's pages
(``ui/defaults.py``) and the report's default settings (``analysis/report.py``) both call
these, so a page and the report section built from its defaults agree. When the design
declares roles (``analysis/structure.py``), this is where they are to be read.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.design import Design
from analysis.nesting import unnested_choice

__all__ = ["ID_SHARE", "KIND_ORDER", "MAX_LEVELS", "default_factors", "useful_factors"]


#: The kinds of factor, in the order defaults prefer them.
KIND_ORDER: tuple[str, ...] = ("domain", "prompt", "model")
#: A factor with more observed values than this reads as text, not a factor to start with
#: (SocialStigmaQA's 93 stigmas are a factor; free-text answers have thousands of values).
MAX_LEVELS = 200
#: A factor whose values are distinct in more than this share of the rows is an id.
ID_SHARE = 0.5


def useful_factors(results: pd.DataFrame, design: Design,
                   kinds: Sequence[str] = KIND_ORDER, *,
                   exclude: Sequence[str] = ()) -> list[str]:
    """The design's factors of ``kinds`` (in that order) worth opening a page on.

    Kept: a column of ``results`` with 2 to :data:`MAX_LEVELS` observed values that is
    not id-like (distinct in more than :data:`ID_SHARE` of at least 20 rows).
    """
    out = []
    for name in [f for kind in kinds for f in design.of_kind(kind)]:
        if name in exclude or name not in results.columns:
            continue
        k = int(results[name].nunique(dropna=True))
        if k < 2 or k > MAX_LEVELS or (len(results) >= 20 and k > ID_SHARE * len(results)):
            continue
        out.append(name)
    return out


def default_factors(results: pd.DataFrame, design: Design, k: int,
                    kinds: Sequence[str] = KIND_ORDER, *,
                    exclude: Sequence[str] = ()) -> list[str]:
    """Up to ``k`` of :func:`useful_factors`, in order, no two of them nested."""
    order = useful_factors(results, design, kinds, exclude=exclude)
    return unnested_choice(results, order, k,
                           references={f: design.factor(f).reference for f in order})
