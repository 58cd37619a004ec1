"""The structure of a benchmark table, inferred from the table alone.

A bias benchmark is built from templates: each *item* (one question) fills a template
with attribute values, carries its own texts and answer options, and is asked in a few
variants (with and without chain-of-thought, several input formats) to one or more
models. :func:`infer_structure` reads that build from the table's structure, not from
cardinality alone, and says why for every column (``docs/structure.md``):

- **item id**: a column whose values each fix the item-level columns (template,
  attributes, texts) while no rich column is crossed with it (``row_in_ssqa``,
  ``example_id``, ``doc_id``); a second column with the same grouping is an id too;
- **item text**: long or sentence-like text, a column fixed by the item that takes
  many values across items (one per few items), a numbered family of 2 to
  :data:`MAX_OPTIONS` text columns sharing values, mostly not numbers (answer options
  ``ans0``, ``ans1``, ``ans2``);
- **answer key**: positions into the answer options (``label`` in 0..2 beside ``ans0``
  .. ``ans2``), or a gold field named so (``gold``, ``target``, ``label``);
- **response**: varies between the rows of one item without being crossed with it
  (``prediction``, ``answer``): what a model said, not how it was asked;
- **template** (the cluster): a column that groups several items and fixes other
  columns (``template_id`` fixes ``category`` and ``subcategory``);
- **numeric score**, **outcome candidate** (0/1 columns, the declared outcome),
  **constant**, and **factor** for the rest (with its kind; a column crossed with the
  items is a ``prompt`` variant, or a ``model`` factor when named so).

The **prompt unit** is the item id plus the non-model columns crossed with it (a prompt
is a distinct ``row_in_ssqa`` x ``cot``); without an id, each distinct row over the
item-level columns is one prompt (model factors replicate rows). The **cluster** is the
template column when there is one. **Value-level aliases** (``prompt_style = base``
occurs only with ``stigma = no stigma``) are what the planner uses to leave out
combinations that the benchmark's build rules out.

Speed: every test works on the integer codes of the columns (pandas ``factorize``),
one scatter per pair of columns tested; tables above :data:`MAX_EXACT_ROWS` rows are
inferred on every row of a seeded random sample of whole items (the structure says so).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from analysis.clusters import cluster_note  # noqa: F401  (re-exported: one judge, clusters.py)
from analysis.errors import AnalysisError
from analysis.limits import check_columns
from analysis.values import (
    REPLICATE_WORDS,
    check_frame,
    factor_values,
    guess_kind,
    outcome_meaning,
)

__all__ = [
    "ANSWER_KEY", "Alias", "CONSTANT", "CROSSED_SHARE", "ColumnRole", "Exclusions", "FACTOR",
    "ITEM_ID", "ITEM_TEXT", "MAX_ALIAS_FACTORS", "MAX_CANDIDATES", "MAX_EXACT_CELLS",
    "MAX_EXACT_ROWS", "MAX_OPTIONS", "MAX_PAIR_CHECKS", "MAX_SUGGESTED_FACTORS", "MIN_ALIAS_ROWS",
    "MIN_ID_VALUES", "OUTCOME", "REPLICATE", "RESPONSE", "ROLES", "ROW_ID", "SCORE", "Structure",
    "TEMPLATE", "TEXT_CHARS", "TEXT_WORDS", "TIME_BUDGET", "cluster_note", "excluded_cells",
    "infer_prompt_unit", "infer_structure", "inferred_cluster", "value_aliases"
]


FACTOR = "factor"
ITEM_ID = "item id"
ROW_ID = "row id"
TEMPLATE = "template"
ITEM_TEXT = "item text"
ANSWER_KEY = "answer key"
RESPONSE = "response"
SCORE = "numeric score"
OUTCOME = "outcome candidate"
CONSTANT = "constant"
REPLICATE = "replicate index"
ROLES: tuple[str, ...] = (FACTOR, ITEM_ID, ROW_ID, TEMPLATE, ITEM_TEXT, ANSWER_KEY, RESPONSE,
                          SCORE, OUTCOME, CONSTANT, REPLICATE)

#: Tables with more rows are inferred on a seeded random sample of this many rows.
MAX_EXACT_ROWS = 2_000_000
#: Tables with more cells (rows x columns) are inferred on a sample of whole items too
#: (at most this many cells' worth of rows, and never fewer than 10,000 rows).
MAX_EXACT_CELLS = 40_000_000
#: Most pair tests (does one column fix / cross another) one inference makes; past it,
#: or past :data:`TIME_BUDGET` seconds, it returns what it found and says so in its notes.
MAX_PAIR_CHECKS = 20_000
TIME_BUDGET = 10.0
#: Most candidate item ids and templates tested against the other columns (the most
#: likely first): each costs one pair test per column, so the work stays linear.
MAX_CANDIDATES = 12
#: Value-level aliases are looked for among at most this many factors (all ordered pairs).
MAX_ALIAS_FACTORS = 40
#: Most factors a suggested design takes (in table order): a table with more candidate
#: columns is not a designed benchmark read right, and every analysis of factor pairs
#: (nestings, aliases, interactions) grows with their square. The notes name the rest.
MAX_SUGGESTED_FACTORS = 40
#: An item id has at least this many values (fewer: a factor or a template).
MIN_ID_VALUES = 10
#: A column is crossed with another when this share of the other's groups show all its values.
CROSSED_SHARE = 0.9
#: A numbered family of answer-option columns has at most this many members.
MAX_OPTIONS = 10
#: A value-level alias needs at least this many rows behind it.
MIN_ALIAS_ROWS = 5
#: Text whose values average more words than this (or more characters than
#: :data:`TEXT_CHARS`) is item text, never a factor.
TEXT_WORDS = 5
TEXT_CHARS = 60

_TEMPLATE_WORDS = ("template", "scenario", "pattern", "frame", "skeleton", "source")
_GOLD_NAMES = {"label", "gold", "gold_index", "answer_idx", "answer_index", "target",
               "correct_option", "answer_key", "gold_label"}
_RESPONSE_WORDS = ("prediction", "predicted", "response", "completion", "output",
                   "generation", "answer", "reply")
#: A column named so (one of its words) with whole-number values numbers repeated
#: answers to one prompt (``sample``, ``seed``, ``epoch``), unless it also names an id,
#: a size or a key (``sample_id`` is Inspect's item id, ``sample_size`` a count).
_REPLICATE_WORDS = REPLICATE_WORDS
_NOT_REPLICATE_WORDS = ("id", "uuid", "key", "name", "size", "count", "n", "num", "weight",
                        "text", "type")
#: Most outcome columns a response is tested against (each costs a pair test per column).
_MAX_OUTCOMES_TESTED = 3
_FAMILY = re.compile(r"^(.*?)[_.\- ]?(\d{1,2}|[a-eA-E])$")


@dataclass(frozen=True)
class ColumnRole:
    """What one column is, and why (``reason`` is one line)."""

    column: str
    role: str
    n_values: int
    reason: str
    #: The factor kind (``domain`` / ``prompt`` / ``model``) when ``role`` is ``factor``.
    kind: str | None = None


@dataclass(frozen=True)
class Alias:
    """``column = value`` occurs only with ``other = other_value`` (``n_rows`` rows)."""

    column: str
    value: str
    other: str
    other_value: str
    n_rows: int

    def describe(self) -> str:
        """``"prompt_style = base occurs only with stigma = no stigma (74 rows)"``."""
        return (f"{self.column} = {self.value} occurs only with {self.other} = "
                f"{self.other_value} ({self.n_rows:,} rows)")


@dataclass(frozen=True)
class Structure:
    """What :func:`infer_structure` found (see the module docstring).

    Attributes
    ----------
    columns
        One :class:`ColumnRole` per column, in table order.
    item_id
        The item id column, or None.
    prompt_unit
        Columns whose distinct combinations are the prompts.
    cluster
        The template column (rows of one template are not independent), or None.
    aliases
        Value-level aliases between the factors.
    notes
        What was assumed where nothing could be inferred, and sampling.
    """

    columns: tuple[ColumnRole, ...]
    item_id: str | None = None
    prompt_unit: tuple[str, ...] = ()
    prompt_unit_reason: str = ""
    cluster: str | None = None
    cluster_reason: str = ""
    aliases: tuple[Alias, ...] = ()
    notes: tuple[str, ...] = ()
    n_rows: int = 0
    n_prompts: int = 0
    factor_kinds: Mapping[str, str] = field(default_factory=dict, compare=False)
    #: Pair tests made (each: one column against another), and whether the inference
    #: stopped at :data:`MAX_PAIR_CHECKS` or its time budget (the notes say what was left).
    n_pair_checks: int = field(default=0, compare=False)
    budget_exhausted: bool = field(default=False, compare=False)

    def role(self, column: str) -> str | None:
        """The role of ``column`` (None when it is not a column of the table)."""
        return next((c.role for c in self.columns if c.column == column), None)

    def of_role(self, *roles: str) -> list[str]:
        """Columns with one of ``roles``, in table order."""
        return [c.column for c in self.columns if c.role in roles]

    @property
    def factors(self) -> list[str]:
        """The suggested factor columns."""
        return self.of_role(FACTOR)

    @property
    def table(self) -> pd.DataFrame:
        """One row per column: ``column``, ``role``, ``kind``, ``n_values``, ``reason``;
        then one row each for the prompt unit and the cluster (``column`` names them)."""
        rows = [{"column": c.column, "role": c.role, "kind": c.kind or "",
                 "n_values": c.n_values, "reason": c.reason} for c in self.columns]
        rows.append({"column": ", ".join(self.prompt_unit) or "(each row)",
                     "role": "prompt unit", "kind": "", "n_values": self.n_prompts,
                     "reason": self.prompt_unit_reason})
        rows.append({"column": self.cluster or "(none)", "role": "cluster", "kind": "",
                     "n_values": next((c.n_values for c in self.columns
                                       if c.column == self.cluster), 0),
                     "reason": self.cluster_reason})
        return pd.DataFrame(rows, columns=["column", "role", "kind", "n_values", "reason"])

    def reasons(self) -> list[str]:
        """Every inference as one line (``describe`` prints these; the design file keeps
        them)."""
        return [f"{c.column}: {c.reason}" for c in self.columns] + [
            f"prompt unit: {self.prompt_unit_reason}", f"cluster: {self.cluster_reason}",
            *(f"alias: {a.describe()}" for a in self.aliases), *self.notes]

    def to_dict(self) -> dict[str, Any]:
        """The ``structure:`` block of a design file: roles, unit, cluster, reasons."""
        out = {"roles": {c.column: c.role for c in self.columns},
               "item_id": self.item_id, "prompt_unit": list(self.prompt_unit),
               "cluster": self.cluster, "reasons": self.reasons()}
        if self.notes:
            out["notes"] = list(self.notes)
        return out


# --- column statistics --------------------------------------------------------------------
@dataclass
class _Col:
    name: str
    codes: np.ndarray
    n: int
    kind: str  # "bool", "int", "float", "text"
    binary: bool
    mean_words: float = 0.0
    mean_chars: float = 0.0
    uniques: Any = None


def _column(name: str, s: pd.Series) -> _Col:
    codes, uniques = pd.factorize(s, use_na_sentinel=False)
    present = uniques[~np.asarray(pd.isna(uniques), dtype=bool)]  # the distinct values
    if pd.api.types.is_bool_dtype(s):
        kind = "bool"
    elif pd.api.types.is_numeric_dtype(s):
        values = np.asarray(present, dtype=float)
        kind = "int" if bool(np.all(np.isfinite(values) & (values == np.round(values)))) \
            else "float"
    else:
        kind = "text"
    binary = kind == "bool" or (kind == "int" and len(present) > 0
                                and set(np.asarray(present, dtype=float)) <= {0.0, 1.0})
    col = _Col(name, np.asarray(codes, dtype=np.int32 if len(uniques) < 2 ** 31
                                else np.int64), len(uniques), kind, binary, uniques=uniques)
    if kind == "text" and len(present):
        head = [str(v) for v in present[:2000].tolist()]  # not the rows' values
        col.mean_chars = sum(map(len, head)) / len(head)
        col.mean_words = sum(len(v.split()) for v in head) / len(head)
    return col


#: Pair tests whose table of (key, other) value pairs has at most this many cells mark
#: the pairs seen in a boolean table (one scatter); larger ones sort the pair codes.
DENSE_CELLS = 1 << 24
#: Rows a pair test reads first: a dependency already broken there is decided.
_PREFIX_ROWS = 1 << 16


class _Budget:
    """Pair tests counted against :data:`MAX_PAIR_CHECKS` and a time budget."""

    def __init__(self, max_pairs: int, seconds: float,
                 progress: Callable[[int], None] | None = None) -> None:
        self.max_pairs, self.seconds = max_pairs, seconds
        self.start = time.monotonic()
        self.used = 0
        self.stopped = ""
        self.progress = progress

    def spend(self, n: int = 1) -> None:
        self.used += n
        if self.progress is not None:
            self.progress(self.used)
        if not self.stopped and self.used > self.max_pairs:
            self.stopped = f"its limit of {self.max_pairs:,} pair tests"

    @property
    def ok(self) -> bool:
        """Whether more tests may be made (checks the clock)."""
        if not self.stopped and time.monotonic() - self.start > self.seconds:
            self.stopped = f"its time budget of {self.seconds:g} s"
        return not self.stopped


class _Relations:
    """Which value pairs of two columns occur, on their integer codes (0..n-1), cached
    per pair: ``fixes`` (each value of ``a`` goes with one value of ``b``: every row's
    ``b`` equals that of the first row of its ``a``, one gather, no sort), ``nunique``
    (distinct ``b`` per ``a`` value) and ``crossed_share`` (share of ``a``'s values that
    show every value of ``b``)."""

    def __init__(self, cols: Mapping[str, _Col], names: Iterable[str],
                 budget: _Budget | None = None) -> None:
        self.budget = budget or _Budget(MAX_PAIR_CHECKS, TIME_BUDGET)
        self.codes = {n: cols[n].codes for n in names}
        self.sizes = {n: cols[n].n for n in self.codes}
        self._fixes: dict[tuple[str, str], bool] = {}
        self._counts: dict[tuple[str, str], np.ndarray] = {}
        self._group_rows: dict[str, np.ndarray] = {}
        self._first: dict[str, np.ndarray] = {}

    def __contains__(self, name: object) -> bool:
        return name in self.codes

    def fixes(self, a: str, b: str) -> bool:
        if (a, b) not in self._fixes:
            self.budget.spend()
            ca, cb = self.codes[a], self.codes[b]
            if (a, b) in self._counts:
                fixed = bool((self.nunique(a, b) <= 1).all())
            else:  # every row has the b of the first row of its a (a gather, no sort)
                first = self.first_rows(a)
                head = slice(0, _PREFIX_ROWS)  # a broken dependency is usually seen early
                fixed = bool(np.array_equal(cb[first[head]], cb[head])) and (
                    len(ca) <= _PREFIX_ROWS or bool(np.array_equal(cb[first], cb)))
            self._fixes[(a, b)] = fixed
        return self._fixes[(a, b)]

    def first_rows(self, a: str) -> np.ndarray:
        """For every row, the first row with the same value of ``a``."""
        if a not in self._first:
            ca = self.codes[a]
            first = np.empty(self.sizes[a], dtype=np.intp)
            first[ca[::-1]] = np.arange(len(ca) - 1, -1, -1, dtype=np.intp)
            self._first[a] = first[ca]
        return self._first[a]

    def nunique(self, a: str, b: str) -> np.ndarray:
        """Distinct values of ``b`` within each value of ``a`` (every value of ``a``
        occurs: the codes are the table's)."""
        if (a, b) not in self._counts:
            self.budget.spend()
            ca, cb = self.codes[a], self.codes[b]
            na, nb = self.sizes[a], self.sizes[b]
            pairs = ca.astype(np.int64) * nb + cb
            if na * nb <= DENSE_CELLS:
                seen = np.zeros(na * nb, dtype=bool)
                seen[pairs] = True
                counts = np.count_nonzero(seen.reshape(na, nb), axis=1)
            else:  # a sort and a neighbour comparison
                pairs.sort()
                first = np.concatenate(([True], pairs[1:] != pairs[:-1]))
                counts = np.bincount(pairs[first] // nb, minlength=na)
            self._counts[(a, b)] = counts
        return self._counts[(a, b)]

    def crossed_share(self, a: str, b: str, *, at_least: float | None = None) -> float:
        """Share of ``a``'s values showing every value of ``b``. With ``at_least``, a
        share known from the group sizes to be below it is returned as that bound (a
        value of ``a`` with fewer rows than ``b`` has values cannot show them all)."""
        nb = self.sizes[b]
        if at_least is not None:
            if a not in self._group_rows:
                self._group_rows[a] = np.bincount(self.codes[a], minlength=self.sizes[a])
            bound = float((self._group_rows[a] >= nb).mean())
            if bound < at_least:
                return bound
        return float((self.nunique(a, b) == nb).mean())


def _words_of(name: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]


def _fmt(columns: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(f"`{c}`" for c in list(columns)[:limit])
    return shown + (f" and {len(columns) - limit} more" if len(columns) > limit else "")


def _option_families(cols: Mapping[str, _Col]) -> dict[str, list[str]]:
    """Numbered families of text columns sharing values: ``ans0``, ``ans1``, ``ans2``."""
    stems: dict[str, list[str]] = {}
    for name, c in cols.items():
        m = _FAMILY.match(name)
        if m and c.kind == "text" and c.n > 1:
            stems.setdefault(m.group(1), []).append(name)
    out = {}
    for stem, members in stems.items():
        if not 2 <= len(members) <= MAX_OPTIONS:
            continue
        values = [set(map(str, pd.Series(cols[m].uniques).dropna())) for m in members]
        pool = set().union(*values)
        if sum(_is_number(v) for v in pool) > len(pool) / 2:  # numbered factors f0, f1, ...
            continue
        if any(values[i] & values[j] for i in range(len(values))
               for j in range(i + 1, len(values))):
            out[stem] = members
    return out


def _aliased(codes: np.ndarray, outcome: _Col) -> bool:
    """Whether ``codes`` determine ``outcome`` on its known rows with 2+ values of each."""
    missing = np.asarray(pd.isna(outcome.uniques), dtype=bool)
    a, b = codes, outcome.codes
    if missing.any():
        known = ~missing[outcome.codes]
        a, b = codes[known], outcome.codes[known]
    if not len(b):
        return False
    na, nb = int(a.max()) + 1, int(b.max()) + 1
    if na * nb <= DENSE_CELLS:  # the pairs seen in a boolean table (one scatter, no sort)
        seen = np.zeros(na * nb, dtype=bool)
        seen[a.astype(np.int64) * nb + b] = True
        seen = seen.reshape(na, nb)
        if np.count_nonzero(seen.any(axis=0)) < 2:
            return False
        per_value = np.count_nonzero(seen, axis=1)
        values = int(np.count_nonzero(per_value))
        return values >= 2 and bool((per_value <= 1).all())
    if len(np.unique(b)) < 2:
        return False
    pairs = np.unique(a.astype(np.int64) * nb + b)
    values = len(np.unique(pairs // nb))
    return values >= 2 and values == len(pairs)


def _is_replicate(name: str, c: _Col) -> bool:
    """Whether ``name`` reads as a replicate index (:data:`_REPLICATE_WORDS`) with 2 or
    more whole-number values (``0``, ``1``, or text such as ``seed_3``)."""
    words = _words_of(name)
    if not any(w in _REPLICATE_WORDS for w in words) or any(w in _NOT_REPLICATE_WORDS
                                                            for w in words):
        return False
    if c.n < 2 or c.kind == "float":
        return False
    if c.kind in ("int", "bool"):
        return True
    values = [str(v) for v in pd.Series(c.uniques).dropna().iloc[:200]]
    return all(re.fullmatch(r"[A-Za-z_\-]{0,12}\d+", v.strip()) for v in values)


def _response_named(name: str) -> bool:
    """Whether a column is named as what a model said (``response``, ``answer``,
    ``prediction``, ``raw_output`` ...), not as a gold answer, the item's biased answer
    (SSQA's ``biased_answer``) or an answer's kind."""
    words = _words_of(name)
    if any(w in ("gold", "correct", "expected", "target", "reference", "key", "label",
                 "type", "option", "options", "idx", "index", "biased", "stereotyped",
                 "stereotypical", "unknown", "anti", "counter") for w in words):
        return False
    return any(w in _RESPONSE_WORDS for w in words)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_key_into(c: _Col, options: Sequence[str]) -> bool:
    """Whether the values point at the answer options: their positions (0..k-1, 1..k,
    letters) or their column names (``ans0``), with at most one other value
    (``unmatched``, ``ambiguous``)."""
    k = len(options)
    if not k or c.n > k + 2:
        return False
    present = {str(v).strip() for v in pd.Series(c.uniques).dropna()}
    present = {v[:-2] if v.endswith(".0") else v for v in present}
    names = {o.split(".")[-1] for o in options}
    for allowed in ({str(i) for i in range(k + 1)}, names,
                    {chr(ord("A") + i) for i in range(k)} | {chr(ord("a") + i) for i in range(k)}):
        if len(present & allowed) >= 2 and len(present - allowed) <= 1:
            return True
    return False


# --- the inference --------------------------------------------------------------------------
def infer_structure(
    table: pd.DataFrame,
    *,
    factors: Sequence[str] | None = None,
    outcome: str | Sequence[str] | None = None,
    model_columns: Sequence[str] = (),
    max_values: int = 100,
    time_budget: float | None = None,
    max_pair_checks: int | None = None,
    progress: Callable[[int], None] | None = None,
    name: str | None = None,
) -> Structure:
    """Classify every column of ``table`` and infer the prompt unit and the cluster.

    Parameters
    ----------
    table
        The results table (one row per response).
    factors
        Columns the analyst declared as factors: they stay factors (their reason says
        so) and are used for the aliases.
    outcome
        The outcome column(s): classified as outcome candidates.
    model_columns
        Columns known to describe the model and its settings (an importer knows them):
        model factors, never part of the prompt unit.
    max_values
        Most values a suggested factor may have.
    time_budget, max_pair_checks
        Seconds and pair tests (one column against another) after which the inference
        returns what it found, with a note saying what was not examined (default
        :data:`TIME_BUDGET`, :data:`MAX_PAIR_CHECKS`); ``budget_exhausted`` says so.
    progress
        Called with the number of pair tests made so far after each test (the app's
        background inference shows it: ``ui/inference_pool.py``).
    name
        The table's name in a refusal (``TableMeta.source_name``; default "The table").

    Returns
    -------
    Structure
        Roles with one-line reasons, ``item_id``, ``prompt_unit``, ``cluster``,
        ``aliases``, ``notes``; ``.table`` has the columns ``column``, ``role``,
        ``kind``, ``n_values``, ``reason``.

    Raises
    ------
    AnalysisError
        ``table`` is not a DataFrame with rows and columns.
    LimitError
        ``table`` has more columns than ``BIAS_WORKBENCH_MAX_COLUMNS`` allows (checked
        before anything is read from them).
    """
    check_frame(table, "infer_structure")
    check_columns(table.shape[1], name or "The table")
    budget = _Budget(MAX_PAIR_CHECKS if max_pair_checks is None else max_pair_checks,
                     TIME_BUDGET if time_budget is None else time_budget, progress)
    options = {"declared": [f for f in (factors or ()) if f in table.columns],
               "outcomes": [outcome] if isinstance(outcome, str) else list(outcome or ()),
               "models": set(model_columns), "max_values": max_values, "budget": budget}
    cols = {str(c): _column(str(c), table[c]) for c in table.columns}
    max_rows = min(MAX_EXACT_ROWS, max(MAX_EXACT_CELLS // max(len(cols), 1), 10_000))
    if len(table) > max_rows:
        return _on_sample(cols, len(table), options, max_rows=max_rows)
    return _infer(cols, **options)


def _infer(cols: Mapping[str, _Col], *, declared: Sequence[str], outcomes: Sequence[str],
           models: set[str], max_values: int, budget: _Budget | None = None) -> Structure:
    """:func:`infer_structure` on the columns' codes (every row of ``cols``)."""
    budget = budget or _Budget(MAX_PAIR_CHECKS, TIME_BUDGET)
    notes: list[str] = []
    n_rows = len(next(iter(cols.values())).codes)
    n_total = n_rows
    role: dict[str, tuple[str, str]] = {}
    kinds: dict[str, str] = {}

    def setrole(name: str, r: str, reason: str) -> None:
        role[name] = (r, reason)

    # 1. what the values alone say
    for name, c in cols.items():
        if name in declared:
            continue
        if name in outcomes:
            setrole(name, OUTCOME, "declared outcome")
        elif c.n <= 1:
            setrole(name, CONSTANT, "a single value: it cannot explain anything")
        elif c.kind == "float" and c.n > 10:
            setrole(name, SCORE, f"{c.n:,} numeric values (not whole numbers) -> a score")
        elif c.kind == "text" and (c.mean_chars > TEXT_CHARS or c.mean_words > TEXT_WORDS):
            setrole(name, ITEM_TEXT, f"text of {c.mean_words:.0f} words on average -> item "
                                     "text, never a factor")
    families = _option_families({k: v for k, v in cols.items() if k not in declared})
    options: list[str] = []
    for members in families.values():
        options = members if len(members) > len(options) else options
        for m in members:
            setrole(m, ITEM_TEXT, f"one of the numbered columns {_fmt(members)} sharing values "
                                  "-> answer options, not a factor")
    for name, c in cols.items():
        if name in role or name in declared:
            continue
        if c.binary and name not in models and outcome_meaning(name) is not None:
            setrole(name, OUTCOME, f"0/1 values named as an outcome ({outcome_meaning(name)})"
                                   " -> an outcome candidate")
        elif not c.binary and _is_key_into(c, options):
            setrole(name, ANSWER_KEY, f"values point at the answer options {_fmt(options)} "
                                      "-> an answer key, not a factor")
        elif name.lower().split(".")[-1] in _GOLD_NAMES:
            setrole(name, ANSWER_KEY, "named as the gold answer -> an answer key, not a factor")
        elif name not in models and _is_replicate(name, c):
            setrole(name, REPLICATE, f"{c.n} whole-number values, named as a replicate index "
                                     "-> numbers repeated answers to one prompt, not a factor")
    replicates = [n for n in cols if role.get(n, ("",))[0] == REPLICATE]
    outcome_cols = [n for n in cols if role.get(n, ("",))[0] == OUTCOME and cols[n].n > 1]
    outcome_cols = sorted(outcome_cols, key=lambda n: n not in outcomes)[:_MAX_OUTCOMES_TESTED]

    # 2. the item id: fixes the item-level columns, no rich column crossed with it
    keys = [n for n in cols if n not in role or role[n][0] in (ITEM_TEXT, ANSWER_KEY)]
    keys = [n for n in keys if cols[n].n > 1]
    # every test below depends only on which value pairs occur, so it runs on the codes
    # of all rows (deduplicating first costs more than it saves on real tables)
    rel = _Relations(cols, keys + outcome_cols, budget)
    # rows repeat a prompt (models, replicates): a column with a value per row names rows
    replicated = bool(replicates) or any(
        cols[n].n > 1 and (n in models or guess_kind(n) == "model") for n in keys)
    item_id, id_reason, equivalents = _find_id(keys, cols, rel, role, models, n_rows,
                                               replicated=replicated)

    def aliased_outcome(n: str) -> str | None:
        """The outcome ``n`` is aliased with: on the rows where the outcome is known, ``n``
        takes 2 or more values, each with a single outcome value, and they differ (a
        task or a setting of rows without that outcome is no alias)."""
        for o in outcome_cols:
            if o == n or not budget.ok:
                continue
            budget.spend()
            if _aliased(cols[n].codes, cols[o]):
                return o
        return None
    within: list[str] = []
    if item_id is not None:
        setrole(item_id, ITEM_ID, id_reason)
        for e in equivalents:
            if role.get(e, ("",))[0] != ITEM_TEXT:  # a question text stays text
                setrole(e, ITEM_ID, f"the same grouping as `{item_id}` -> an item id too")
        unique_rows = [n for n in keys if cols[n].n == n_rows and n not in role]
        for n in unique_rows:
            setrole(n, ROW_ID, "one value per row: identifies responses, not items")
        for n in keys:
            if not budget.ok:
                break
            if n in role and role[n][0] not in (ITEM_TEXT, ANSWER_KEY):
                continue
            if rel.fixes(item_id, n):
                continue
            share = rel.crossed_share(item_id, n)
            said = None if n in role or cols[n].binary else aliased_outcome(n)
            if n in role:  # text or key varying within an item: what the model said
                setrole(n, RESPONSE, f"varies between the rows of one `{item_id}` -> a "
                                     "response, not an item field")
            elif said is not None:
                setrole(n, RESPONSE, f"varies between the rows of one `{item_id}` and each "
                                     f"value goes with one value of the outcome `{said}` "
                                     "(aliased with it) -> a response, never a factor")
            elif not cols[n].binary and _response_named(n):
                setrole(n, RESPONSE, f"varies between the rows of one `{item_id}`, named as "
                                     "a model's response -> a response, never a factor")
            elif cols[n].binary and share < CROSSED_SHARE:
                setrole(n, OUTCOME, f"0/1 values varying between the rows of one "
                                    f"`{item_id}` -> an outcome candidate")
            elif share >= CROSSED_SHARE and cols[n].n <= max_values:
                within.append(n)
                kind = "model" if n in models or guess_kind(n) == "model" else "prompt"
                kinds[n] = kind
                setrole(n, FACTOR, f"crossed with `{item_id}` ({share:.0%} of items show "
                                   f"all {cols[n].n} values) -> a {kind} factor")
            else:
                setrole(n, RESPONSE, f"varies between the rows of one `{item_id}` without "
                                     f"being crossed with it ({share:.0%} of items show all "
                                     "values) -> a response")
    n_items = int(cols[item_id].n) if item_id else n_rows
    # 4. the template: groups several items and fixes other item-level columns
    cluster, cluster_reason = _find_template(keys, cols, rel, role, n_items, n_rows,
                                             item_id)
    if cluster is not None:
        setrole(cluster, TEMPLATE, cluster_reason)
    elif item_id is not None and n_rows >= 2 * n_items:
        cluster = item_id
        why = (f"{_fmt(replicates)} replicate{'s' if len(replicates) == 1 else ''} them"
               if replicates else "models or variants repeat each item")
        cluster_reason = (f"no template: the {n_items:,} items of `{item_id}` have "
                          f"~{n_rows / n_items:,.1f} rows each ({why}), and the rows of one "
                          "item are not independent -> cluster")
    if replicates:
        where = (f"the cluster `{cluster}` holds the rows of each prompt" if cluster else
                 "no column names the item, so nothing clusters them: name the prompt id "
                 "as the cluster (Design page or --cluster)")
        notes.append(f"{_fmt(replicates)} number{'s' if len(replicates) == 1 else ''} repeated "
                     f"answers to the same prompt (replicates): not a factor and not part of "
                     f"the prompt unit; {where}. Declare it as a model factor to compare "
                     "replicates.")
    # 3. item-level columns: many values across items -> item text
    for n in keys:
        if n in role:
            continue
        c = cols[n]
        if c.n == n_rows and n_rows >= MIN_ID_VALUES:
            setrole(n, ROW_ID, "a different value on every row -> identifies rows, not a "
                               "factor")
        elif c.n > max_values:
            setrole(n, ITEM_TEXT, f"{c.n:,} values (more than {max_values} for a factor)"
                                  + (f", fixed by `{item_id}`" if item_id else "")
                                  + " -> item text or an id, not a factor")
        elif item_id and n_items >= 20 and c.n >= n_items / 2:
            setrole(n, ITEM_TEXT, f"{c.n:,} values over {n_items:,} items, fixed by "
                                  f"`{item_id}` -> item text, not a factor")
    # 5. the rest are factors
    for name, c in cols.items():
        if name in declared:
            role[name] = (FACTOR, "declared factor")
        elif name not in role:
            said = (aliased_outcome(name) if item_id is None and name in rel and
                    c.kind == "text" and c.mean_words >= 2 else None)
            if name in models and c.n == 1:
                role[name] = (FACTOR, "model column")
            elif (item_id is None and name not in models and not c.binary
                  and _response_named(name)):  # with an id: what varies within items
                role[name] = (RESPONSE, "named as a model's response -> a response, never a "
                                        "factor")
            elif said is not None:
                role[name] = (RESPONSE, f"sentences, each going with one value of the outcome "
                                        f"`{said}` (aliased with it) -> a response, never a "
                                        "factor")
            else:
                role[name] = (FACTOR, f"{c.n} values" + (
                    f", fixed by `{item_id}`" if item_id and name in rel and budget.ok
                    and rel.fixes(item_id, name) else ""))
        if role[name][0] == FACTOR and name not in kinds:
            kinds[name] = "model" if name in models else guess_kind(name)
    # 6. prompt unit
    if item_id is not None:
        unit = [item_id] + [n for n in within if kinds.get(n) != "model"]
        why = (f"`{item_id}` identifies the item" + (
            f"; {_fmt(unit[1:])} {'varies' if len(unit) == 2 else 'vary'} within it"
            if len(unit) > 1 else ""))
    else:
        unit = [n for n in cols if role[n][0] in (FACTOR, TEMPLATE, ITEM_TEXT, ANSWER_KEY)
                and kinds.get(n) != "model" and cols[n].n > 1]
        why = "no item id: a prompt is a distinct combination of the item-level columns"
        if not unit:
            notes.append("No column describes the prompts: each row is counted as one "
                         "prompt.")
    n_prompts = _n_distinct([cols[n] for n in unit], n_rows)
    models_in = [n for n in cols if kinds.get(n) == "model" and role[n][0] == FACTOR
                 and cols[n].n > 1]
    why += f" -> {n_prompts:,} prompts in {n_rows:,} rows"
    if n_prompts == n_rows:
        why += " (each row is one prompt)"
    elif models_in or replicates:
        what = models_in + replicates
        why += f" ({_fmt(what)} replicate{'s' if len(what) == 1 else ''} rows)"
    if cluster is None:
        cluster_reason = ("no column groups several items and fixes other columns: rows "
                          "are treated as independent")
    columns = tuple(ColumnRole(n, role[n][0], cols[n].n, role[n][1],
                               kinds.get(n) if role[n][0] == FACTOR else None) for n in cols)
    many = [c.column for c in columns if c.role == FACTOR and c.column not in declared
            and 1 < c.n_values <= max_values]
    if len(many) > MAX_SUGGESTED_FACTORS:
        notes.append(f"{len(many):,} columns could be factors: the suggested design takes the "
                     f"first {MAX_SUGGESTED_FACTORS} ({many[0]} ... "
                     f"{many[MAX_SUGGESTED_FACTORS - 1]}) and leaves out "
                     f"{len(many) - MAX_SUGGESTED_FACTORS:,} more; choose the factors on the "
                     "Design page or with --factors.")
    factor_names = _alias_candidates(cols, [c.column for c in columns if c.role == FACTOR
                                            and 1 < c.n_values <= max_values], declared,
                                     n_rows, notes)
    aliases = _aliases({n: _labelled(cols[n]) for n in factor_names}, None,
                       MIN_ALIAS_ROWS, budget=budget) if factor_names and budget.ok else ()
    if len(cols) == 1 or all(c.role in (ROW_ID, ITEM_TEXT, CONSTANT, SCORE) for c in columns):
        notes.append("No structure could be inferred (no factor, id or template): each row "
                     "is taken as one independent prompt.")
    if budget.stopped:
        notes.insert(0, f"The structure inference stopped at {budget.stopped} "
                        f"({budget.used:,} pair tests over {len(cols):,} columns) and returns "
                        "what it had found: columns not yet examined are taken as factors "
                        "(or what their values alone say) and aliases may be missing. "
                        "Declare the factors, cluster and prompt unit (a design file or the "
                        "Design page) to rely on them.")
    return Structure(columns=columns, item_id=item_id, prompt_unit=tuple(unit),
                     prompt_unit_reason=why, cluster=cluster, cluster_reason=cluster_reason,
                     aliases=tuple(aliases), notes=tuple(notes), n_rows=n_total,
                     n_prompts=n_prompts if n_total == n_rows else round(
                         n_prompts * n_total / n_rows),
                     factor_kinds=dict(kinds), n_pair_checks=budget.used,
                     budget_exhausted=bool(budget.stopped))


def _alias_candidates(cols: Mapping[str, _Col], factors: list[str], declared: Sequence[str],
                      n_rows: int, notes: list[str]) -> list[str]:
    """The factors whose value aliases are looked for: an alias needs a value with at
    least :data:`MIN_ALIAS_ROWS` rows, so factors without one are pruned; then at most
    :data:`MAX_ALIAS_FACTORS` (declared ones first), with a note when some are left out."""
    if n_rows < 2 * MIN_ALIAS_ROWS:  # a value with MIN_ALIAS_ROWS rows and another value
        return []
    live = [n for n in factors if int(np.bincount(cols[n].codes).max()) >= MIN_ALIAS_ROWS
            and cols[n].n < n_rows]
    live = [n for n in live if n in declared] + [n for n in live if n not in declared]
    if len(live) > MAX_ALIAS_FACTORS:
        notes.append(f"Value aliases were looked for among {MAX_ALIAS_FACTORS} of the "
                     f"{len(live):,} factors ({_fmt(live[:MAX_ALIAS_FACTORS])}): every "
                     "ordered pair of factors is one test.")
        live = live[:MAX_ALIAS_FACTORS]
    return [n for n in factors if n in live]


def _on_sample(cols: Mapping[str, _Col], n_total: int, options: Mapping[str, Any], *,
               max_rows: int | None = None) -> Structure:
    """:func:`infer_structure` of a table above :data:`MAX_EXACT_ROWS` rows, on every row
    of a seeded random sample of whole items (``cols``: every row's codes).

    A first pass on a row sample of a quarter of that size finds the item id; then items
    are drawn in a random order until their rows fill :data:`MAX_EXACT_ROWS`, and the
    structure is inferred on all their rows: a column crossed with the items, a nesting
    or an alias is then judged on complete items, exactly as on the whole table
    restricted to them. Without an item id, a row sample (nothing is crossed with an item
    then; whole templates are not drawn: with few templates, a sample of them could no
    longer show a template fixing another column). Only the codes are sampled, never the
    table's rows (taking 2,000,000 rows of long texts costs more than the inference).
    """
    max_rows = MAX_EXACT_ROWS if max_rows is None else max_rows
    rng = np.random.default_rng(0)
    probe = np.sort(rng.choice(n_total, max(max_rows // 4, 1), replace=False))
    first = _infer({n: _rows_of(c, probe) for n, c in cols.items()}, **options)
    if first.item_id is None:
        keep = np.sort(rng.choice(n_total, max_rows, replace=False))
        note = (f"Inferred on a random sample of {max_rows:,} of the {n_total:,} rows "
                "(no item id to sample whole items by: a dependency seen in the sample may "
                "fail in a few other rows).")
    else:
        item = cols[first.item_id]
        order = rng.permutation(item.n)
        filled = np.cumsum(np.bincount(item.codes, minlength=item.n)[order])
        chosen = np.zeros(item.n, dtype=bool)
        chosen[order[:max(int(np.searchsorted(filled, max_rows, side="right")), 1)]] = True
        keep = np.flatnonzero(chosen[item.codes])
        note = (f"Inferred on all {len(keep):,} rows of a random sample of "
                f"{int(chosen.sum()):,} of the {item.n:,} items (`{first.item_id}`) of the "
                f"{n_total:,} rows: dependencies are judged on whole items, but one seen "
                "in the sample may fail in items outside it.")
    found = _infer({n: _rows_of(c, keep) for n, c in cols.items()}, **options)
    return replace(found, notes=(note, *found.notes), n_rows=n_total,
                   n_prompts=round(found.n_prompts * n_total / len(keep)))


def _rows_of(col: _Col, rows: np.ndarray) -> _Col:
    """``col`` restricted to ``rows``: codes renumbered over the values present (in the
    order of the column's values), the text statistics of the whole column kept."""
    codes = col.codes[rows]
    present = np.zeros(col.n, dtype=bool)
    present[codes] = True
    if present.all():
        return replace(col, codes=codes)
    renumber = np.cumsum(present, dtype=np.int64) - 1
    return replace(col, codes=renumber[codes].astype(col.codes.dtype),
                   n=int(present.sum()), uniques=col.uniques[present])


def _labelled(col: _Col) -> tuple[np.ndarray, list[str]]:
    """A column's codes with the labels :func:`analysis.design.factor_values` gives its
    values (read from the distinct values only; values that read alike are merged)."""
    from analysis.values import factor_values

    remap, labels = factor_values(pd.Series(col.uniques, dtype=object))
    remap = remap.to_numpy(dtype=np.int64)
    if np.array_equal(remap, np.arange(len(remap))):
        return col.codes, labels
    return remap[col.codes], labels


def _n_distinct(columns: list[_Col], n_rows: int) -> int:
    """Distinct combinations of ``columns`` among the rows (all rows without columns)."""
    if not columns:
        return n_rows
    sizes = [max(c.n, 1) for c in columns]
    cells = math.prod(sizes)
    if cells >= 2 ** 62:
        return int(len(pd.DataFrame({i: c.codes for i, c in enumerate(columns)})
                       .drop_duplicates()))
    key = np.ravel_multi_index([c.codes for c in columns], sizes)
    if cells <= DENSE_CELLS:
        seen = np.zeros(cells, dtype=bool)
        seen[key] = True
        return int(np.count_nonzero(seen))
    key.sort()
    return int(np.count_nonzero(key[1:] != key[:-1])) + 1 if len(key) else 0


def _find_id(keys: list[str], cols: Mapping[str, _Col], rel: _Relations,
             role: Mapping[str, tuple[str, str]], models: set[str], n_rows: int, *,
             replicated: bool = False) -> tuple[str | None, str, list[str]]:
    """The item id among ``keys`` (see the module docstring), its reason, its equivalents.

    Candidates are tried from the most likely (not one value per row, no role yet, most
    values: a prompt text that fixes the item's columns comes before a row id); the first
    that qualifies is the id (one grouping pass per candidate tried). When models or
    replicates repeat the rows, a column with a value per row is never the item id.
    """
    order = sorted(
        (n for n in keys if cols[n].n >= MIN_ID_VALUES and n not in models
         and cols[n].kind != "float" and not cols[n].binary
         and role.get(n, ("",))[0] != ANSWER_KEY
         and not (replicated and cols[n].n == n_rows)),
        key=lambda n: (cols[n].n == n_rows, n in role, -cols[n].n))[:MAX_CANDIDATES]
    found = None
    for n in order:
        c = cols[n]
        fixed, crossed = [], False
        for k in keys:
            if not rel.budget.ok:
                return None, "", []
            if k == n:
                continue
            if rel.fixes(n, k):
                fixed.append(k)
            elif MIN_ID_VALUES <= cols[k].n < c.n and rel.crossed_share(
                    n, k, at_least=CROSSED_SHARE) >= CROSSED_SHARE:
                crossed = True
                break
        if not crossed and fixed:
            found = (n, fixed)
            break
    if found is None:
        return None, "", []
    n, fixed = found
    equivalents = [k for k in fixed if cols[k].n == cols[n].n and rel.fixes(k, n)]
    shown = [k for k in fixed if k not in equivalents]
    rows_each = n_rows / cols[n].n
    reason = (f"{cols[n].n:,} values, ~{rows_each:,.1f} rows each, each fixes "
              f"{_fmt(shown) if shown else 'every other item column'} -> item id")
    return n, reason, equivalents


def _find_template(keys: list[str], cols: Mapping[str, _Col], rel: _Relations,
                   role: Mapping[str, tuple[str, str]], n_items: int, n_rows: int,
                   item_id: str | None) -> tuple[str | None, str]:
    """The template (cluster): groups >= 2 items per value and fixes other item columns.

    A column named as a template or whose values are codes qualifies by fixing another
    item-level column; any column, whatever its values look like (words included),
    qualifies by fixing an item text (each template has its own question or scenario
    text: a nested attribute such as a stigma fixes no text). At most
    :data:`MAX_CANDIDATES` candidates are tested (named first, then coded, then the one
    with most values), one pair test per other column each.
    """
    plain = [k for k in keys if k not in role]
    texts = [k for k in keys if role.get(k, ("",))[0] == ITEM_TEXT
             and "answer options" not in role[k][1]]
    ranked = []
    for n in plain:
        c = cols[n]
        if c.n < 3 or n_items / c.n < 2 or c.binary:
            continue
        named = any(w in n.lower() for w in _TEMPLATE_WORDS)
        coded = all(any(ch.isdigit() for ch in str(v)) for v in pd.Series(c.uniques).dropna())
        if named or coded or texts:
            ranked.append(((named, coded, c.n), n))
    candidates = []
    for (named, coded, _), n in sorted(ranked, reverse=True)[:MAX_CANDIDATES]:
        if not rel.budget.ok:
            break
        c = cols[n]
        fixed = [k for k in plain if k != n and cols[k].n < c.n and rel.fixes(n, k)] \
            if named or coded else []
        fixed_texts = [k for k in texts if 1 < cols[k].n <= c.n and rel.fixes(n, k)]
        if fixed or fixed_texts:  # a grouping of words fixing only another factor (a
            candidates.append(((named, bool(fixed_texts), coded, c.n), n, fixed, fixed_texts))
        # stigma -> its cluster, subcategory -> category) is a nested factor, not a template
    if not candidates:
        return None, ""
    (named, _, coded, _), n, fixed, fixed_texts = max(candidates)
    why = "named as a template" if named else "its values are codes" if coded and fixed \
        else f"each value has its own {_fmt(fixed_texts)} text"
    items = f"~{n_items / cols[n].n:,.0f} items" if item_id else f"~{n_rows / cols[n].n:,.0f}"
    rows = f"{items}, ~{n_rows / cols[n].n:,.0f} rows each" if item_id else f"{items} rows each"
    return n, (f"{cols[n].n:,} values, {rows}, each fixes {_fmt(fixed + fixed_texts)} "
               f"({why}) -> cluster")


# --- value-level aliasing -------------------------------------------------------------------
def value_aliases(table: pd.DataFrame, factors: Sequence[str], *,
                  counts: Sequence[int] | np.ndarray | None = None,
                  min_rows: int = MIN_ALIAS_ROWS) -> list[Alias]:
    """Values of one factor that occur with a single value of another.

    ``a = v`` is aliased with ``b = w`` when every row with ``a = v`` has ``b = w``, ``b``
    takes other values elsewhere, at least ``min_rows`` rows have ``a = v``, and ``a`` as a
    whole does not fix ``b`` (a nesting, reported by :mod:`analysis.nesting`). SSQA's
    ``prompt_style = base`` occurs only with ``stigma = no stigma`` and
    ``gender = no gender``, and those values only with ``base``.

    Parameters
    ----------
    table
        Rows, or a cell table with ``counts`` (rows per cell).
    factors
        Factor columns to examine.
    counts
        Rows behind each row of ``table`` (default 1 each).

    Returns
    -------
    list of Alias
    """
    missing = [f for f in factors if f not in table.columns]
    if missing:
        raise AnalysisError(f"Not columns of the table: {', '.join(missing)}.")
    coded = {}
    for f in factors:
        c, values = factor_values(table[f])
        coded[f] = (c.to_numpy(dtype=np.int64), values)
    return _aliases(coded, counts, min_rows)


def _aliases(coded: Mapping[str, tuple[np.ndarray, list[str]]],
             counts: Sequence[int] | np.ndarray | None, min_rows: int, *,
             budget: _Budget | None = None) -> list[Alias]:
    """:func:`value_aliases` on the factors' codes and values (rows first summed into
    the distinct combinations: one sort, then every pair on the few cells)."""
    factors = list(coded)
    sizes = [max(len(v), 1) for _, v in coded.values()]
    n = len(next(iter(coded.values()))[0]) if coded else 0
    if n and math.prod(sizes) < 2 ** 62:
        key = np.ravel_multi_index([c for c, _ in coded.values()], sizes)
        rows = None if counts is None else np.asarray(counts, dtype=np.int64)
        if math.prod(sizes) <= DENSE_CELLS:  # a count per cell
            weights = np.bincount(key, weights=rows, minlength=int(np.prod(sizes)))
            cells = np.flatnonzero(weights)
            weights = weights[cells].astype(np.int64)
        else:
            cells, inverse = np.unique(key, return_inverse=True)
            weights = np.bincount(inverse.ravel(), weights=rows,
                                  minlength=len(cells)).astype(np.int64)
        combos = np.unravel_index(cells, sizes)
        coded = {f: (combos[i].astype(np.int64), coded[f][1]) for i, f in enumerate(factors)}
    else:
        weights = np.ones(n, dtype=np.int64) if counts is None else \
            np.asarray(counts, dtype=np.int64)
    out = []
    for a in factors:
        ca, va = coded[a]
        if budget is not None:
            budget.spend(len(factors) - 1)
            if not budget.ok:
                break
        for b in factors:
            if a == b:
                continue
            cb, vb = coded[b]
            joint = np.bincount(ca * len(vb) + cb, weights=weights,
                                minlength=len(va) * len(vb)).reshape(len(va), len(vb))
            present = joint > 0
            if present.any(axis=0).sum() < 2:
                continue
            partners = present.sum(axis=1)
            seen = partners > 0
            if (partners[seen] == 1).all():  # a fixes b: a nesting, not a value alias
                continue
            for i in np.flatnonzero(partners == 1):
                rows = int(joint[i].sum())
                if rows >= min_rows:
                    j = int(np.flatnonzero(present[i])[0])
                    out.append(Alias(a, va[i], b, vb[j], rows))
    return out


# --- combinations the structure rules out (the planner) -------------------------------------
@dataclass(frozen=True)
class Exclusions:
    """Grid combinations the observed structure rules out (:func:`excluded_cells`)."""

    mask: np.ndarray
    #: One line per rule with the number of combinations it (first) excluded.
    reasons: tuple[str, ...]

    @property
    def n_excluded(self) -> int:
        """Combinations ruled out."""
        return int(self.mask.sum())


def excluded_cells(observed: pd.DataFrame, factors: Sequence[str],
                   values: Sequence[Sequence[str]], *, counts: Iterable[int] | None = None,
                   references: Mapping[str, str] | None = None,
                   aliasing: bool = True) -> Exclusions:
    """Which combinations of the grid ``values`` (C order) the observed rows rule out.

    Two rules, both read from ``observed`` (rows or observed cells):

    - **nesting**: when one factor fixes another (also outside its control values:
      :func:`analysis.nesting.find_nestings`), a combination pairing a seen value of the
      fixing factor with a value it was never seen with is impossible;
    - **aliasing**: ``a = v`` occurring only with ``b = w`` (:func:`value_aliases`)
      rules out ``a = v`` with any other value of ``b``.

    Declared values never seen are not constrained by a nesting (nothing is known about
    them). Observed combinations are never excluded.
    """
    from analysis.nesting import find_nestings

    sizes = [len(v) for v in values]
    n_cells = int(np.prod(sizes)) if sizes else 0
    mask = np.zeros(n_cells, dtype=bool)
    if len(factors) < 2 or not len(observed):
        return Exclusions(mask, ())
    weights = None if counts is None else np.asarray(list(counts), dtype=np.int64)
    grid = np.unravel_index(np.arange(n_cells), sizes)
    # the rules are read on every observed row, also those outside the grid (a --where
    # that drops SSQA's base prompts must not make "no gender" look possible elsewhere)
    codes, to_grid = {}, {}
    for f, vals in zip(factors, values, strict=True):
        c, labels = factor_values(observed[f])
        codes[f] = c.to_numpy(dtype=np.int64)
        where = {lab: i for i, lab in enumerate(labels)}
        to_grid[f] = np.array([where.get(v, -1) for v in vals], dtype=np.int64)  # grid -> label
    index = {f: i for i, f in enumerate(factors)}
    reasons = []

    def apply(bad_pairs: np.ndarray, a: str, b: str, text: str) -> None:
        bad = bad_pairs[grid[index[a]], grid[index[b]]] & ~mask
        if bad.any():
            mask[bad] = True
            reasons.append(f"{int(bad.sum()):,} by {text}")

    nest = find_nestings(observed, list(factors), references=references)
    for r in nest.to_dict(orient="records"):
        if not isinstance(r["determinant"], str):  # a constant (None, or NaN from pandas)
            continue
        pairs = [(r["determinant"], r["dependent"])]
        if r["kind"] == "equivalent":
            pairs.append((r["dependent"], r["determinant"]))
        for a, b in pairs:
            seen = np.zeros((int(codes[a].max()) + 1, int(codes[b].max()) + 1), dtype=bool)
            seen[codes[a], codes[b]] = True
            ia, jb = to_grid[a][:, None], to_grid[b][None, :]
            bad = (ia >= 0) & ((jb < 0) | ~seen[np.maximum(ia, 0), np.maximum(jb, 0)])
            what = "is fixed by" if r["kind"] != "nested outside reference" else \
                "is fixed (outside its control values) by"
            apply(bad, a, b, f"nesting: {b} {what} {a}")
    for al in value_aliases(observed, list(factors), counts=weights) if aliasing else ():
        a, b = al.column, al.other
        va, vb = values[index[a]], values[index[b]]
        if al.value not in va:
            continue
        bad = np.zeros((len(va), len(vb)), dtype=bool)
        bad[va.index(al.value), :] = True
        if al.other_value in vb:
            bad[va.index(al.value), vb.index(al.other_value)] = False
        apply(bad, a, b, f"aliasing: {al.describe()}")
    inside = np.ones(len(observed), dtype=bool)
    positions = []
    for f in factors:
        back = np.full(int(codes[f].max()) + 1, -1, dtype=np.int64)
        ok = to_grid[f] >= 0
        back[to_grid[f][ok]] = np.flatnonzero(ok)
        pos = back[codes[f]]
        inside &= pos >= 0
        positions.append(pos)
    if inside.any():  # observed combinations are never excluded
        mask[np.ravel_multi_index(tuple(p[inside] for p in positions), sizes)] = False
    return Exclusions(mask, tuple(reasons))


def infer_prompt_unit(table: pd.DataFrame, factors: Sequence[str]) -> tuple[list[str], str]:
    """The prompt unit of ``table`` with ``factors`` declared, and its one-line reason
    (what ``coverage`` counts without a design file)."""
    structure = infer_structure(table, factors=factors)
    return [c for c in structure.prompt_unit if c in table.columns], \
        structure.prompt_unit_reason


def inferred_cluster(table: pd.DataFrame, *, outcome: str | None = None
                     ) -> tuple[str | None, str]:
    """The cluster of ``table`` as the suggested design has it (:func:`suggest_design
    <analysis.design.suggest_design>`: the Data page without a design file) and its
    one-line reason; the CLI uses it when no design file is given."""
    from analysis.values import SUGGEST_MAX_VALUES

    structure = infer_structure(table, outcome=outcome, max_values=SUGGEST_MAX_VALUES)
    return structure.cluster, structure.cluster_reason
