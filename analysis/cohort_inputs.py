"""What the cohorts analysis reads before it counts (issue 42): the default categorical
outcome and the refusals among the answers (``docs/cohorts.md``).

**The default category.** A categorical outcome says what each *response* was, so it
varies between the rows of one prompt (models, formats, samples answer the same prompt
differently); a column that is the same on every row of a prompt (the prompt's text, its
question, the template) describes what was *asked*. Candidates are the columns with 2 to
``MAX_CATEGORIES`` values that are not floats; those fixed by the design's prompt unit
come last, then factors, then the rest ranked by their name (``*_type``, ``*class*``,
``*answer*``, ``response``) and by their number of categories.

**Refusals** are answers that are neither (a model that declines to answer is not
"not biased"): the values of the category column, or of a response column of the table,
that read as a refusal (``REFUSED``, ``refusal``, ``declined``, ``no answer``,
``abstained``, ``I cannot answer``...: :data:`REFUSAL`). By default (``refusals="count"``)
they are counted where the table puts them: as a category of their own when they are
values of the category (so they are in ``n`` and the other shares are of all answers),
else under whichever category their rows have (a 0/1 ``biased`` column of a refused
answer says 0); a note says how many there are and how they were counted.
``refusals="leave_out"`` removes their rows before anything is counted (n, shares, test).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["REFUSAL", "REFUSAL_MODES", "Refusals", "apply_refusals", "category_candidates",
           "find_refusals", "is_refusal", "kept_categories"]

#: A value that reads as a refusal to answer (whole value, case and punctuation ignored).
REFUSAL = re.compile(
    r"^\W*(refused|refusal|refuses|refuse|declined|declines|abstained|abstain|abstention|"
    r"no answer|no response|not answered|unanswered|"
    r"i (?:cannot|can't|can not|won't|will not) (?:answer|help|comply|respond)\b.*|"
    r"i'm sorry,? (?:but )?i (?:cannot|can't)\b.*)\W*$", re.IGNORECASE)
#: ``count`` (where the table puts them, with a note) or ``leave_out`` (rows removed).
REFUSAL_MODES = ("count", "leave_out")
_CATEGORY_WORDS = ("type", "class", "categ", "label", "portray", "answer", "group",
                   "response")
_RESPONSE_WORDS = ("response", "answer", "completion", "output", "reply", "prediction",
                   "generation")
_PREFIX = 4096  # rows looked at first: more values than allowed rules a column out
_FLOAT_KINDS = "f"


def is_refusal(value: object) -> bool:
    """Whether ``value`` reads as a refusal (:data:`REFUSAL`)."""
    return isinstance(value, str) and len(value) < 200 and bool(REFUSAL.match(value))


def category_candidates(table: pd.DataFrame, factors: list[str] | tuple[str, ...] = (),
                        unit: list[str] | tuple[str, ...] = (), *,
                        exclude: tuple[str, ...] = (), max_categories: int = 50) -> list[str]:
    """The columns that can be a categorical outcome, the default first (module docstring).

    ``factors`` are the design's factors (ranked after the other columns), ``unit`` the
    prompt-unit columns (a column with one value per prompt is ranked last; empty: no
    such test), ``exclude`` columns never offered (the 0/1 deviation).
    """
    counts: dict[str, int] = {}
    coded: dict[str, tuple[np.ndarray, int]] = {}  # factors' codes (issue 44)
    for c in table.columns:
        s = table[c]
        if c in exclude or s.dtype.kind in _FLOAT_KINDS:
            continue
        if len(s) > _PREFIX and s.iloc[:_PREFIX].nunique(dropna=True) > max_categories:
            continue
        if isinstance(s.dtype, pd.CategoricalDtype):
            coded[c] = _codes(s)  # its codes: no hashing
            k = coded[c][1]
        else:
            k = int(s.nunique(dropna=True))
        if 2 <= k <= max_categories:
            counts[str(c)] = k
    unit_cols = [u for u in unit if u in table.columns]
    fixed = _fixed_by(table, [c for c in counts if c not in unit_cols and c not in factors],
                      unit_cols, coded)

    def rank(c: str) -> tuple:
        tokens = re.split(r"[^a-z0-9]+", c.lower())
        words = [i for i, w in enumerate(_CATEGORY_WORDS)
                 if any(t.startswith(w) for t in tokens)]
        return (c in fixed or c in unit_cols, c in factors,
                min(words, default=len(_CATEGORY_WORDS)), -counts[c])

    return sorted(counts, key=rank)


def _codes(s: pd.Series) -> tuple[np.ndarray, int]:
    """An integer code per row (missing: -1; equal values, equal codes) and the number of
    distinct values present (``nunique(dropna=True)``), hashing the column once: a
    categorical's codes, an Arrow column's dictionary encoding, else ``pd.factorize``."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        seen = np.bincount(codes[codes >= 0], minlength=len(s.cat.categories))
        return codes, int(np.count_nonzero(seen))
    if hasattr(s.array, "__arrow_array__"):  # Arrow strings (pandas 3's str)
        import pyarrow as pa

        encoded = pa.chunked_array(s.array.__arrow_array__()).combine_chunks() \
            .dictionary_encode()
        codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        return codes, len(encoded.dictionary)
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    return codes, len(uniques)


def _fixed_by(table: pd.DataFrame, columns: list[str], unit: list[str],
              coded: dict[str, tuple[np.ndarray, int]] | None = None) -> set[str]:
    """The ``columns`` that take one value on all the rows of each prompt (``unit``);
    ``coded``: columns' :func:`_codes` already computed."""
    if not unit or not columns:
        return set()
    from analysis.values import combine_codes

    coded = coded if coded is not None else {}
    unit_codes = [coded[u][0] if u in coded else _codes(table[u])[0] for u in unit]
    key = combine_codes([c.astype(np.int64) + 1 for c in unit_codes],  # missing: a value
                        [int(c.max(initial=-1)) + 2 for c in unit_codes])
    if key.dtype == object or int(key.max(initial=0)) > 4 * len(key) + 1024:
        groups = pd.factorize(key)[0]
    else:  # dense keys: a count per possible prompt and a lookup, no sort
        seen = np.bincount(key) > 0
        groups = (np.cumsum(seen) - 1)[key]
    if groups.max(initial=-1) + 1 == len(table):  # every row its own prompt: tells nothing
        return set()
    first_row = np.full(int(groups.max(initial=-1)) + 1, len(table))
    np.minimum.at(first_row, groups, np.arange(len(table)))  # each prompt's first row

    def fixed(values: np.ndarray, rows: np.ndarray) -> bool:  # every row its first value
        return bool((values == values[first_row[rows]]).all())

    head = groups[:_PREFIX]  # a prompt's first row comes before its others: in the prefix
    return {c for c in columns
            if fixed(_codes(table[c].iloc[:_PREFIX])[0], head)
            and fixed(coded[c][0] if c in coded else _codes(table[c])[0], groups)}


@dataclass(frozen=True)
class Refusals:
    """The refusals of a table: the ``column`` they were found in, its refusal ``values``,
    the rows (``mask``), and whether that column is the category itself."""

    column: str | None
    values: tuple[str, ...]
    mask: pd.Series
    in_category: bool

    @property
    def n(self) -> int:
        """Rows that are refusals."""
        return int(self.mask.sum())


def find_refusals(table: pd.DataFrame, category: str) -> Refusals:
    """The refusals among ``table``'s answers: in ``category`` itself, else in the first
    response column (named as what a model said: ``response``, ``answer``, ``output``...)
    that has any."""
    named = [c for c in table.columns if c != category
             and not pd.api.types.is_numeric_dtype(table[c])
             and any(w in re.split(r"[^a-z0-9]+", str(c).lower()) for w in _RESPONSE_WORDS)]
    for column in [category, *named]:
        if column not in table.columns:
            continue
        # the distinct values (a missing one is no refusal): no copy of the column first
        values = [v for v in pd.unique(table[column]) if is_refusal(v)]
        if values:
            return Refusals(str(column), tuple(map(str, values)),
                            table[column].isin(values), column == category)
    return Refusals(None, (), pd.Series(False, index=table.index), False)


def apply_refusals(table: pd.DataFrame, category: str, mode: str = "count"
                   ) -> tuple[pd.DataFrame, str | None]:
    """``table`` with its refusals counted (``count``) or left out (``leave_out``), and the
    note that says how (None: no refusal).

    Raises
    ------
    OptionError
        ``mode`` is not one of :data:`REFUSAL_MODES`.
    """
    from analysis.options import OptionError

    if mode not in REFUSAL_MODES:
        raise OptionError(f"refusals={mode!r}: use one of {', '.join(REFUSAL_MODES)}.")
    found = find_refusals(table, category)
    if not found.n:
        return table, None
    what = (f"{found.n:,} of {len(table):,} answers are refusals "
            f"({', '.join(map(repr, found.values))} in {found.column})")
    if mode == "leave_out":
        return table[~found.mask], (f"{what}: left out (refusals=leave_out), so n and every "
                                    "share count the other answers only.")
    if found.in_category:
        how = ("counted as a category of their own: they are in n, so the other shares are "
               "of all answers")
    else:
        counted = table.loc[found.mask, category].value_counts(dropna=False)
        how = ("counted under the category their rows have ("
               + ", ".join(f"{category} = {k}: {v:,}" for k, v in counted.items())
               + "), although a refusal is neither")
    return table, f"{what}: {how}. Leave them out with refusals=leave_out."


def kept_categories(categories: list | None, mode: str = "count") -> list | None:
    """The chosen ``categories`` without the refusals when they are left out (a category
    list chosen before, e.g. every observed value, may name them)."""
    if categories is None or mode != "leave_out":
        return categories
    return [c for c in categories if not is_refusal(c)]
