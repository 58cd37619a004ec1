"""Which factors a page or report section starts with: the one place defaults are chosen.

A page opened on a constant factor (BBQ's ``category`` in a one-category file), on a text
column declared as a factor or on an id shows an error or nothing. :func:`useful_factors`
keeps the design's factors worth starting with; :func:`default_factors` picks up to ``k``
of them with no nested pair (:func:`analysis.nesting.unnested_choice`). The app's pages
(``ui/defaults.py``) and the report's default settings (``analysis/report.py``) both call
these, so a page and the report section built from its defaults agree. The same holds for
the numeric feature and grouping of the Disparity and Bias index pages
(:func:`numeric_columns`, :func:`default_group`). When the design
declares roles (``analysis/structure.py``), this is where they are to be read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.columns import DEVIATION
from analysis.design import Design
from analysis.nesting import find_nestings, unnested_choice
from analysis.values import n_distinct

__all__ = [
    "ID_SHARE", "KIND_ORDER", "MAX_LEVELS", "coverage_factors", "default_factors",
    "default_group", "feature_polarity", "grid_factors", "importance_factors", "is_id_like",
    "numeric_columns", "paired_factor", "suggest_factors", "unnested_factors", "useful_factors",
    "compared_factor", "default_cohort",
]


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
        k = n_distinct(results[name])
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


# --- the numeric feature and grouping the Disparity / Bias index pages start with -----
#: Name parts that make a column read as an identifier.
_ID_WORDS = ("id", "idx", "uuid", "guid")


def is_id_like(series: pd.Series, name: str | None = None) -> bool:
    """Whether a column looks like an identifier rather than a measurement.

    True when its name has an id part (``id``, ``example_id``, ``exampleId``, ``uuid``,
    ``idx``; split at ``_``, ``-``, space and camel case) or starts with ``row``
    (``row_in_ssqa``), or when it holds integers named ``..._index`` (``question_index``)
    or integers whose distinct values are nearly all different (at least 95 %
    of at least 20 non-missing rows) or form a run of consecutive integers covering at
    least half the rows. Such columns are never offered as a default feature.
    """
    name = str(series.name if name is None else name)
    parts = [p.casefold() for p in re.split(r"[_\-\s]+|(?<=[a-z])(?=[A-Z])", name) if p]
    if parts and (any(p in _ID_WORDS for p in parts) or parts[0] == "row"):
        return True
    s = series.dropna()
    if len(s) == 0 or pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
        return False
    x = s.to_numpy(dtype=float)
    if not np.all(np.isfinite(x)) or not np.all(x == np.round(x)):
        return False
    if parts and parts[-1] in ("index", "number"):
        return True
    if len(x) < 20:
        return False
    distinct = np.sort(pd.unique(x))  # np.unique's answer, hashing before sorting
    if len(distinct) >= 0.95 * len(x):
        return True
    consecutive = len(distinct) == distinct[-1] - distinct[0] + 1
    return bool(consecutive and len(distinct) >= max(20, 0.5 * len(x)))


def numeric_columns(results: pd.DataFrame, design: Design) -> list[str]:
    """Numeric columns that are not factors (nor the derived deviation): floats first,
    two-valued columns after the others of their type, constant columns after those, the
    design's outcome column after those (issue 42: Disparity opened on the 0/1 outcome),
    id-like columns (:func:`is_id_like`) last, so the first is a sensible default."""
    skip = set(design.names) | {DEVIATION}
    outcome = design.outcome.column if design.outcome is not None else None
    cols = [c for c in results.columns if c not in skip
            and (pd.api.types.is_numeric_dtype(results[c]) or pd.api.types.is_bool_dtype(
                results[c]))]
    def key(c: str) -> tuple:
        k = results[c].nunique()
        return (is_id_like(results[c], c), c == outcome, k <= 1,
                not pd.api.types.is_float_dtype(results[c]), k <= 2)

    return sorted(cols, key=key)


def default_group(design: Design, exclude: Sequence[str] = ()) -> list[str]:
    """The first domain factor (else the first factor) as a starting grouping."""
    order = design.of_kind("domain") + design.of_kind("prompt") + design.of_kind("model")
    return [f for f in order if f not in exclude][:1]


def coverage_factors(design: Design) -> list[str]:
    """The factors coverage uses unless told otherwise: domain and prompt factors
    (also ``analysis.coverage.default_factors``).

    Falls back to every factor when the design has neither kind.
    """
    return design.of_kind("domain", "prompt") or design.names


def unnested_factors(frame: pd.DataFrame, design: Design, candidates: Sequence[str],
                     k: int) -> list[str]:
    """Up to ``k`` of ``candidates``, in order, no two nested in each other, with the
    design's reference values (:func:`analysis.nesting.unnested_choice`; the app's
    ``ui.defaults.unnested_defaults``)."""
    refs = {f: design.factor(f).reference for f in candidates}
    return unnested_choice(frame, candidates, k, references=refs)


def suggest_factors(data: pd.DataFrame, design: Design, *, max_factors: int = 6) -> list[str]:
    """A starting set of factors with no nested pair among them (for the app's default).

    Factors are taken coarsest first (fewest observed values); a factor is skipped when
    it has one value or is nested with (determines, is determined by, or is equivalent
    to) one already taken, per :func:`analysis.nesting.find_nestings`. At most
    ``max_factors`` are returned, in design order. Aliasing that is not a nesting (such
    as SSQA's base prompts) is left to :func:`factor_importance` to explain.
    """
    names = [f for f in design.names if f in data.columns]
    if not names:
        return []
    nest = find_nestings(data, names, references={f: design.factor(f).reference
                                                   for f in names})
    constant = set(nest.loc[nest["kind"] == "constant", "dependent"])
    linked = {frozenset((r["determinant"], r["dependent"]))
              for r in nest.to_dict(orient="records") if r["determinant"] is not None}
    sizes = {f: n_distinct(data[f]) for f in names}
    chosen: list[str] = []
    for f in sorted(names, key=lambda f: (sizes[f], names.index(f))):
        if f in constant or any(frozenset((f, g)) in linked for g in chosen):
            continue
        chosen.append(f)
        if len(chosen) == max_factors:
            break
    return [f for f in names if f in chosen]


#: The same default under the name the CLI and report use.
grid_factors = coverage_factors


def paired_factor(results: pd.DataFrame, design: Design, *, tried: int = 4) -> str | None:
    """The factor Compare starts from: the first (model factors first, then prompt, then
    domain factors; at most ``tried`` tried) whose values pair on the prompt unit
    (:func:`analysis.compare.pair_units`), a declared unit or an id column before the
    combinations of the other factors; None when none pairs."""
    from analysis.compare import pair_units
    from analysis.errors import PairingError

    order = design.of_kind("model") + design.of_kind("prompt") + design.of_kind("domain")
    candidates = [f for f in order if f in results.columns and n_distinct(results[f]) > 1]
    paired_on: dict[str, str] = {}
    for by in candidates[:tried]:
        try:
            paired_on[by] = pair_units(results, design, by).unit_source
        except PairingError:
            continue
    real = [f for f, source in paired_on.items() if source != "factors"]
    return (real or list(paired_on) or [None])[0]


def importance_factors(results: pd.DataFrame, design: Design) -> list[str]:
    """The factors Factor importance starts from
    (:func:`analysis.importance.suggest_factors` on the cells of every factor)."""
    from analysis.cells import cell_table

    return suggest_factors(cell_table(results, design.names), design)


def feature_polarity(design: Design | None, column: str) -> str | None:
    """Whether higher values of ``column`` are harmful or favourable, per the design.

    The design's explicit ``polarity`` entry wins; the derived ``deviation`` column is
    harmful by definition; the outcome column follows its mapping (``binary`` and
    ``above``: higher deviates, harmful; ``below``: favourable; ``values``: harmful when
    the deviating values are 1/true, favourable when they are 0/false). Otherwise None.
    A reading of the design, not a statistic (the Disparity page's polarity widget,
    :func:`analysis.disparity.resolve_polarity`).
    """
    if design is None:
        return None
    explicit = design.polarity_of(column)
    if explicit is not None:
        return explicit
    if column == DEVIATION:
        return "harmful"
    o = design.outcome
    if o is None or o.column != column:
        return None
    if o.mapping in ("binary", "above"):
        return "harmful"
    if o.mapping == "below":
        return "favourable"
    if o.mapping == "values":
        vals = {v.strip().casefold() for v in o.values}
        if vals and vals <= {"1", "1.0", "true", "yes"}:
            return "harmful"
        if vals and vals <= {"0", "0.0", "false", "no"}:
            return "favourable"
    return None


def compared_factor(design: Design, results: pd.DataFrame) -> str:
    """The factor the Compare page opens on: the model factor, else the prompt factor
    whose name says format/setting, else the first factor with two or more values."""
    order = design.of_kind("model") + design.of_kind("prompt") + design.names
    several = [f for f in order if n_distinct(results[f]) > 1] or design.names
    named = [f for f in several if any(w in f.lower() for w in (
        "model", "format", "setting", "temperature", "checkpoint", "version"))]
    return (design.of_kind("model") and several[0]) or (named or several)[0]


_COHORT_WORDS = ("model", "decade", "cohort", "era", "format", "checkpoint", "version")


def default_cohort(design: Design, exclude: str) -> int:
    """Index (in the design's factors without ``exclude``) of a cohort-like factor."""
    names = [f for f in design.names if f != exclude]
    for i, f in enumerate(names):
        if any(w in f.lower() for w in _COHORT_WORDS):
            return i
    models = [f for f in design.of_kind("model") if f != exclude]
    return names.index(models[0]) if models else 0
