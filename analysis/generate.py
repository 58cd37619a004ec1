"""Prompt generation: templates with named slots, learned from a results table or given.

A *template* is a prompt text with ``{slot}`` fields, one per factor whose value the text
spells (``{stigma}``, ``{prompt style}``); literal braces are written ``{{`` and ``}}``.
A factor value is rarely in the text verbatim (SocialStigmaQA's stigma "Autism Or Autism
Spectrum Disorder" reads "someone with autism"; a prompt style adds a sentence), so the
text of each value, its *span*, is learned from the data (:func:`derive_templates`):

1. **Templates.** Rows of one template are given by a template column, or inferred:
   two prompts belong to one template when their factor values differ in one factor
   only and their texts differ in one stretch only (the common prefix and suffix cover
   at least :data:`SAME_TEMPLATE_SHARE` of the longer text, and nearly as much as the
   row's best match). Candidates are neighbours in the sorted texts (and the sorted
   reversed texts) of the rows that agree on every other factor; templates are the
   connected groups (union-find), separated again where a group holds two texts for one
   combination of values.
2. **Spans.** Within a template, the *siblings* of a factor are the rows that agree on
   every other factor (but those it determines, e.g. a stigma's cluster). Their common
   prefix and suffix (cut back to word boundaries, so "male" / "female" stay whole
   words) frame each sibling's span of the factor; the template text is one reference
   row with each factor's span replaced by its slot; a template whose slots overlap or
   do not rebuild its rows is split by the values of one factor.
3. **Round trip.** Every row is rebuilt from its template and its values' spans and
   compared, character for character, with its prompt (:attr:`Derivation.round_trip`).
   A row alone in its template (no sibling differs from it in one factor: SSQA's base
   prompts) becomes a template without slots and is counted apart: it is rebuilt
   trivially and says nothing about the spans.

:func:`generate_prompts` fills the planned combinations (the plan CSV of ``plan --out``:
factor columns + ``n``, optional ``kind`` and ``template``) with the templates and the
design's values, and :func:`mark_added` joins answered new prompts to the results table
with an ``added`` column. ``docs/generate.md`` has the measured round trips and the loop.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.errors import GenerationError
from analysis.values import format_value

__all__ = ["ADDED", "EDIT_MARK", "GenerationError", "KIND", "MAX_TEMPLATES_BYTES", "PLAN_N",
           "PROMPT", "SAME_TEMPLATE_SHARE", "TEMPLATE", "Derivation", "Generated", "Template",
           "derive_templates", "fill_template", "generate_prompts", "load_templates",
           "mark_added", "template_slots", "templates_from_frame", "variant_skeleton",
           "with_new_values"]

#: Column names of the prompts table (and of the plan CSV's ``n``, ``kind``, ``template``).
PROMPT = "prompt"
TEMPLATE = "template"
KIND = "kind"
PLAN_N = "n"
ADDED = "added"
#: The mark :func:`variant_skeleton` puts before each text the user must write.
EDIT_MARK = "EDIT: "
#: Share of the longer text two prompts of one template share as prefix + suffix.
SAME_TEMPLATE_SHARE = 0.5
_SLOT = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_ROWS_SHOWN = 8


# --- template texts ---------------------------------------------------------------------------
def _parse(text: str, where: str) -> list[tuple[bool, str]]:
    """``[(is_slot, literal text or slot name)]``; raises on a lone brace."""
    out: list[tuple[bool, str]] = []
    pos = 0
    for m in _SLOT.finditer(text):
        if m.start() > pos:
            out.append((False, text[pos:m.start()]))
        token = m.group(0)
        if token in ("{{", "}}"):
            out.append((False, token[0]))
        elif m.group(1) is not None and m.group(1).strip():
            out.append((True, m.group(1).strip()))
        else:
            raise GenerationError(f"{where}: a lone {token!r} at character {m.start() + 1}; "
                                  "write a slot as {factor} and a literal brace as {{ or }}.")
        pos = m.end()
    if pos < len(text):
        out.append((False, text[pos:]))
    return out


def template_slots(text: str, where: str = "template") -> list[str]:
    """The slot names of a template text, in order of first use.

    Raises
    ------
    GenerationError
        A lone ``{`` or ``}`` or an empty slot ``{}``.
    """
    return list(dict.fromkeys(name for is_slot, name in _parse(text, where) if is_slot))


def fill_template(text: str, values: Mapping[str, str], where: str = "template") -> str:
    """The template with each ``{slot}`` replaced by ``values[slot]`` (no format
    mini-language: ``{a.b}`` or ``{0}`` are slot names, never attribute look-ups).

    Raises
    ------
    GenerationError
        A slot without a value (the message names it).
    """
    parts = []
    for is_slot, token in _parse(text, where):
        if is_slot:
            if token not in values:
                raise GenerationError(f"{where}: no text for the slot {{{token}}}.")
            parts.append(values[token])
        else:
            parts.append(token)
    return "".join(parts)


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


@dataclass(frozen=True)
class Template:
    """One template.

    Attributes
    ----------
    id
        The template's id (the template column's value, or ``t1``, ``t2`` ... inferred).
    text
        The text with ``{slot}`` fields.
    slots
        The factors it spells, in text order.
    fixed
        Factor values every prompt of the template has (SSQA: ``biased answer``).
    spans
        ``{factor: {value: text}}`` learned in this template (empty for a given one).
    n_prompts
        Prompts of the results table it was derived from (0: given in a file).
    variant_of
        For a given template: the id of the derived template it varies (plan rows of
        kind ``variant`` with that ``template`` use it).
    """

    id: str
    text: str
    slots: tuple[str, ...]
    fixed: Mapping[str, str] = field(default_factory=dict)
    spans: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    n_prompts: int = 0
    variant_of: str | None = None
    #: The template (column value, or inferred group) it belongs to: its ``id``, or for a
    #: template split by a factor's value (two slots overlapping), ``<group>/<value>``.
    group: str | None = None

    @property
    def group_id(self) -> str:
        """The id plan rows name (``template`` of a variant row)."""
        return self.group or self.id


# --- deriving templates -----------------------------------------------------------------------
def _is_boundary(text: str, i: int) -> bool:
    """A word boundary: not between two word characters."""
    if i <= 0 or i >= len(text):
        return True
    return not (text[i - 1].isalnum() and text[i].isalnum())


def _prefix_len(a: str, b: str) -> int:
    """Length of the common prefix (binary search on slices: C-speed comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _frame(texts: Sequence[str]) -> tuple[int, int]:
    """Common prefix and suffix lengths of ``texts``, not overlapping in any text and
    ending / starting on a word boundary in every text."""
    shortest = min(len(t) for t in texts)
    lo, hi = min(texts), max(texts)  # the common prefix of all is that of these two
    p = _prefix_len(lo, hi)
    while p > 0 and not all(_is_boundary(t, p) for t in texts):
        p -= 1
    rev = [t[::-1] for t in texts]
    s = min(_prefix_len(min(rev), max(rev)), shortest - p)
    while s > 0 and not all(_is_boundary(t, len(t) - s) for t in texts):
        s -= 1
    return p, s


def _determined_by(code_arr: np.ndarray, j: int) -> set[int]:
    """Columns that are a function of column ``j`` (``pachankis_cluster`` of ``stigma``):
    they change with it and are left out of its siblings' key."""
    out = set()
    col = code_arr[:, j].astype(np.int64)
    base = len(np.unique(col))
    for k in range(code_arr.shape[1]):
        pair = col * (int(code_arr[:, k].max(initial=0)) + 1) + code_arr[:, k]
        if k != j and len(np.unique(pair)) == base:
            out.add(k)
    return out


class _Union:
    def __init__(self, n: int) -> None:
        self.parent = np.arange(n)

    def find(self, i: int) -> int:
        root = i
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[i] != root:
            self.parent[i], i = root, self.parent[i]
        return int(root)

    def union(self, i: int, j: int) -> None:
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)


def _infer_groups(texts: np.ndarray, codes: pd.DataFrame, window: int = 4) -> np.ndarray:
    """Template group of each row (the smallest row number of its group).

    Each row is joined to its best matches: among its ``window`` neighbours in the sorted
    texts and the sorted reversed texts of the rows agreeing on every other factor, the
    rows with another value of the factor sharing the longest prefix + suffix, up to a
    slack of max(8, 5 % of its length) characters (a sibling in its own template shares
    all the template's fixed text; a row of a similar template also differs elsewhere),
    if that covers :data:`SAME_TEMPLATE_SHARE` of the longer text. Two rows with the same
    text and different values are one template that does not spell the factor. A group
    with two texts for one combination of values is joined again without the links of
    one factor (the fewest first), when that ends every such clash.
    """
    names = list(codes.columns)
    code_arr = codes.to_numpy()
    rev = [t[::-1] for t in texts]
    memo: dict[tuple[int, int], int] = {}
    edges: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for j in range(len(names)):
        nested = _determined_by(code_arr, j)
        others = [k for k in range(len(names)) if k != j and k not in nested]
        buckets: dict[tuple, list[int]] = defaultdict(list)
        for i in range(len(texts)):
            buckets[tuple(code_arr[i, others])].append(i)
        for rows in buckets.values():
            if len(rows) < 2:
                continue
            near: dict[int, set[int]] = defaultdict(set)
            for order in (sorted(rows, key=lambda r: texts[r]),
                          sorted(rows, key=lambda r: rev[r])):
                for pos, i in enumerate(order):
                    near[i].update(order[max(0, pos - window):pos + window + 1])
            for i, cands in near.items():
                scored = []
                for c in sorted(cands):
                    if code_arr[c, j] == code_arr[i, j]:
                        continue
                    if texts[c] == texts[i]:  # one template that does not spell f
                        scored.append((len(texts[i]), c))  # the best match there is
                        continue
                    key = (min(i, c), max(i, c))
                    if key not in memo:
                        p = _prefix_len(texts[i], texts[c])
                        memo[key] = p + min(_prefix_len(rev[i], rev[c]),
                                            min(len(texts[i]), len(texts[c])) - p)
                    scored.append((memo[key], c))
                if not scored:
                    continue
                best = max(score for score, _ in scored)
                floor = max(best - max(8, 0.05 * len(texts[i])), 0)
                for score, c in scored:
                    if score >= floor and score >= SAME_TEMPLATE_SHARE * max(
                            len(texts[i]), len(texts[c])):
                        edges[j].append((i, c))
    groups = _components(len(texts), [e for j in edges for e in edges[j]])
    # A group holding one combination of values with two texts joins two templates
    # (similar scenarios linked through a factor each template fixes, e.g. gender):
    # join its rows again without one factor's links, the one leaving no such clash.
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        if not _clashes(rows, code_arr, texts):
            continue
        for j in sorted(edges, key=lambda j: len(edges[j])):
            inside = set(rows.tolist())
            links = [e for k in edges if k != j for e in edges[k] if e[0] in inside]
            sub = _components(len(texts), links)[rows]
            if not any(_clashes(rows[sub == h], code_arr, texts) for h in np.unique(sub)):
                groups[rows] = sub
                break
    return groups


def _components(n: int, links: Sequence[tuple[int, int]]) -> np.ndarray:
    """Connected component (smallest row number) of each of ``n`` rows."""
    union = _Union(n)
    for i, c in links:
        union.union(i, c)
    return np.array([union.find(i) for i in range(n)])


def _clashes(rows: np.ndarray, code_arr: np.ndarray, texts: np.ndarray) -> bool:
    """Two rows with the same values and different texts."""
    seen: dict[tuple, str] = {}
    for r in rows:
        key = tuple(code_arr[r])
        if seen.setdefault(key, texts[r]) != texts[r]:
            return True
    return False


@dataclass(frozen=True)
class Derivation:
    """Templates learned from a results table (:func:`derive_templates`).

    Attributes
    ----------
    templates
        Every template, derived ones first.
    rows
        One row per prompt of the input: ``row`` (its position), ``template`` (id),
        ``regenerated`` (template + values give the prompt exactly), ``with_slots``
        (its template has at least one slot).
    spans
        ``{factor: {value: text}}``: each value's most frequent span over the templates
        (used where a template has not seen the value).
    factors
        The factors considered (every slot is one of them).
    notes
        What the reader needs (factors not in the text, rows alone in their template).
    """

    templates: tuple[Template, ...]
    rows: pd.DataFrame
    spans: Mapping[str, Mapping[str, str]]
    factors: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def round_trip(self) -> dict[str, Any]:
        """``{"n_prompts", "n_regenerated", "n_with_slots", "n_regenerated_with_slots",
        "share"}``: ``share`` is the prompts rebuilt exactly by a template with slots, over
        all prompts (rows alone in their template count as not shown)."""
        r = self.rows
        n = len(r)
        both = int((r["regenerated"] & r["with_slots"]).sum())
        return {"n_prompts": n, "n_regenerated": int(r["regenerated"].sum()),
                "n_with_slots": int(r["with_slots"].sum()), "n_regenerated_with_slots": both,
                "share": both / n if n else float("nan")}

    def template(self, template_id: str) -> Template:
        """The template with this id (``GenerationError`` naming the known ones)."""
        for t in self.templates:
            if t.id == template_id:
                return t
        known = ", ".join(t.id for t in self.templates[:_ROWS_SHOWN])
        raise GenerationError(f"No template {template_id!r} (templates: {known}"
                              f"{' ...' if len(self.templates) > _ROWS_SHOWN else ''}).")

    def table(self) -> pd.DataFrame:
        """One row per template: ``template``, ``text``, ``slots`` (comma-separated),
        ``n_prompts``, ``n_regenerated``, and a column per fixed factor."""
        counts = self.rows.groupby(TEMPLATE)["regenerated"].sum()
        return pd.DataFrame([{TEMPLATE: t.id, "text": t.text, "slots": ", ".join(t.slots),
                              "n_prompts": t.n_prompts,
                              "n_regenerated": int(counts.get(t.id, 0)), **t.fixed}
                             for t in self.templates])


def _rows_text(rows: Sequence[int], limit: int = _ROWS_SHOWN) -> str:
    shown = ", ".join(str(r + 1) for r in rows[:limit])
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


def _values(frame: pd.DataFrame, factors: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame({f: frame[f].map(format_value).astype(str) for f in factors},
                        index=frame.index)


def derive_templates(frame: pd.DataFrame, factors: Sequence[str], *, prompt: str = PROMPT,
                     template: str | None = None,
                     slots: Sequence[str] | None = None) -> Derivation:
    """Templates with slots learned from the prompts and factor values of ``frame``.

    Parameters
    ----------
    frame
        The results table (one prompt per row; repeated prompts, e.g. several models,
        are fine).
    factors
        The factors the text may spell (the design's domain and prompt factors).
    prompt
        The prompt text column.
    template
        A column naming each row's template; None infers the templates.
    slots
        The factors that must be slots (each must be found in the text); None: every
        factor of ``factors`` whose value the text spells.

    Returns
    -------
    Derivation
        The templates, the per-row round trip and each value's span.

    Raises
    ------
    GenerationError
        A missing column; empty prompts (the rows named); a factor of ``slots`` whose
        value is not in the text of rows that differ only in it (the rows named).
    """
    factors = [str(f) for f in factors]
    missing = [c for c in [prompt, *factors, *([template] if template else [])]
               if c not in frame.columns]
    if missing:
        raise GenerationError(f"Not columns of the table: {', '.join(missing)} (columns: "
                              f"{', '.join(map(str, frame.columns[:12]))}).")
    unknown = [s for s in slots or () if s not in factors]
    if unknown:
        raise GenerationError(f"Slots must be factors: {', '.join(unknown)} is not one of "
                              f"{', '.join(factors)}.")
    frame = frame.reset_index(drop=True)
    texts_s = frame[prompt]
    empty = np.flatnonzero(texts_s.isna().to_numpy() | (texts_s.astype(str).str.strip() == ""))
    if len(empty):
        raise GenerationError(f"{len(empty)} rows have no prompt text (rows "
                              f"{_rows_text(list(empty))}, counting the first data row as 1).")
    # one row per distinct (prompt, factor values): several models' answers collapse
    values = _values(frame, factors)
    keyed = values.assign(**{"\0prompt": texts_s.astype(str)})
    if template:
        keyed["\0template"] = frame[template].map(format_value).astype(str)
    first = ~keyed.duplicated()
    uniq = keyed[first].reset_index()  # column "index": the first input row
    texts = uniq["\0prompt"].to_numpy(dtype=object)
    codes = pd.DataFrame({f: pd.factorize(uniq[f])[0] for f in factors})
    if template:
        group_key = uniq["\0template"].to_numpy(dtype=object)
    else:
        group_key = _infer_groups(texts, codes)
    result = _align(uniq, texts, codes, factors, group_key, named=template is not None,
                    required=list(slots or ()))
    templates, per_row, spans, notes = result
    # back to every input row
    inverse = keyed.merge(uniq.reset_index(names="\0u").drop(columns="index"),
                          how="left", on=list(keyed.columns))["\0u"].to_numpy()
    rows = per_row.iloc[inverse].reset_index(drop=True)
    rows.insert(0, "row", np.arange(len(frame)))
    return Derivation(tuple(templates), rows, spans, tuple(factors), tuple(notes))


class _Aligner:
    """Templates of grouped rows: spans, slots, split on overlapping slots, round trip."""

    def __init__(self, uniq: pd.DataFrame, texts: np.ndarray, codes: pd.DataFrame,
                 factors: list[str]) -> None:
        self.texts = texts
        self.factors = factors
        self.code_arr = codes[factors].to_numpy()
        self.val_arr = uniq[factors].to_numpy(dtype=object)
        self.col = {f: j for j, f in enumerate(factors)}
        n = len(texts)
        self.template_of = np.empty(n, dtype=object)
        self.regenerated = np.zeros(n, bool)
        self.with_slots = np.zeros(n, bool)
        self.templates: list[Template] = []
        self.votes: dict[str, Counter] = defaultdict(Counter)
        self.silent: dict[str, set[int]] = defaultdict(set)
        self.spelled: set[str] = set()

    def _siblings(self, rows: list[int], f: str):
        """Positions and spans of ``f`` in its sibling sets among ``rows``."""
        j = self.col[f]
        nested = _determined_by(self.code_arr[rows], j)
        others = [self.col[o] for o in self.factors if o != f and self.col[o] not in nested]
        sets: dict[tuple, list[int]] = defaultdict(list)
        for r in rows:
            sets[tuple(self.code_arr[r, others])].append(r)
        pos: dict[int, tuple[int, int]] = {}
        found: dict[str, Counter] = defaultdict(Counter)
        for members in sets.values():
            if len({self.val_arr[r, j] for r in members}) < 2:
                continue
            by_text: dict[str, set] = defaultdict(set)
            for r in members:
                by_text[self.texts[r]].add(self.val_arr[r, j])
            if any(len(v) > 1 for v in by_text.values()):
                self.silent[f].update(r for r in members if len(by_text[self.texts[r]]) > 1)
                continue
            p, s = _frame([self.texts[r] for r in members])
            for r in members:
                end = len(self.texts[r]) - s
                pos[r] = (p, end)
                found[self.val_arr[r, j]][self.texts[r][p:end]] += 1
        return pos, found

    def group(self, rows: list[int], tid: str, group: str, fixed: dict[str, str]) -> None:
        """Align one template's rows (split by a factor when two slots overlap)."""
        texts, val_arr, col = self.texts, self.val_arr, self.col
        given_fixed = fixed
        varying = [f for f in self.factors
                   if f not in fixed and len(set(self.code_arr[rows, col[f]])) > 1]
        fixed = {**fixed, **{f: str(val_arr[rows[0], col[f]]) for f in self.factors
                             if f not in varying and f not in fixed}}
        positions, spans = {}, {}
        for f in varying:
            pos, found = self._siblings(rows, f)
            if pos:
                positions[f], spans[f] = pos, found
        best = max(rows, key=lambda r: (sum(r in positions[f] for f in positions), -r))
        chosen = sorted((positions[f][best], f) for f in positions if best in positions[f])
        overlap = any(f2 != f and (a < b2 and a2 < b or a == a2 == b == b2)
                      for (a, b), f in chosen for (a2, b2), f2 in chosen)
        parts, cursor, ref = [], 0, texts[best]
        for (a, b), f in chosen:
            parts += [_escape(ref[cursor:a]), "{" + f + "}"]
            cursor = b
        parts.append(_escape(ref[cursor:]))
        text = "".join(parts)
        slot_names = tuple(f for _, f in chosen)
        span_map = {f: {v: c.most_common(1)[0][0] for v, c in spans[f].items()}
                    for f in slot_names}
        rebuilt: dict[int, bool] = {}
        for r in rows:
            try:
                vals = {f: span_map[f][val_arr[r, col[f]]] for f in slot_names}
            except KeyError:  # a value without a span here (a row alone): not rebuilt
                continue
            same = all(str(val_arr[r, col[f]]) == v for f, v in fixed.items())
            rebuilt[r] = same and not overlap and fill_template(text, vals, tid) == texts[r]
        if len(positions) >= 2 and not all(rebuilt.values()):
            # two slots overlap, or the slots do not rebuild every row (a factor's text
            # moves with another's value, e.g. a style sentence before or after the
            # stigma's): one template per value of the factor with fewer values
            split = min(positions, key=lambda x: (len(spans[x]), x))
            for v in sorted(spans[split]):
                sub = [r for r in rows if val_arr[r, col[split]] == v]
                self.group(sub, f"{tid}/{v}", group, {**fixed, split: v})
            rest = [r for r in rows if val_arr[r, col[split]] not in spans[split]]
            if rest:
                self.group(rest, f"{tid}/rest", group, {})
            return
        alone = [r for r in rows if r not in rebuilt]
        if slot_names and alone and len(alone) < len(rows):
            # rows with a value that has no span here (SSQA's base prompt in its
            # template: no stigma sentence, no gender) differ from the others in several
            # factors at once: a template of their own, so that the slots' template fixes
            # what its rows share (gender) instead of passing it through
            self.group([r for r in rows if r in rebuilt], tid, group, given_fixed)
            self.group(alone, f"{tid}/rest", group, {})
            return
        for f in slot_names:
            self.spelled.add(f)
            for v, c in spans[f].items():
                self.votes[f].update({(v, k): m for k, m in c.items()})
        self.templates.append(Template(tid, text, slot_names, fixed, span_map,
                                       n_prompts=len(rows), group=group))
        for r in rows:
            self.template_of[r] = tid
            self.with_slots[r] = bool(slot_names)
            self.regenerated[r] = rebuilt.get(r, False)


def _align(uniq: pd.DataFrame, texts: np.ndarray, codes: pd.DataFrame, factors: list[str],
           group_key: np.ndarray, *, named: bool, required: list[str]):
    """Templates, per-row round trip, global spans and notes for the grouped rows."""
    al = _Aligner(uniq, texts, codes, factors)
    groups: dict[Any, list[int]] = defaultdict(list)
    for i, g in enumerate(group_key):
        groups[g].append(i)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
    for k, (g, rows) in enumerate(ordered, start=1):
        tid = str(g) if named else f"t{k}"
        al.group(rows, tid, tid, {})

    def input_rows(rows: set[int]) -> list[int]:
        return sorted(int(uniq["index"].iloc[r]) for r in rows)

    for f in required:
        if f in al.silent:
            raise GenerationError(
                f"The slot of {f!r} cannot be found: rows {_rows_text(input_rows(al.silent[f]))}"
                f" (counting the first data row as 1) have the same prompt text although "
                f"their {f} differs, so its value does not appear in their text.")
        if f not in al.spelled:
            raise GenerationError(f"The slot of {f!r} cannot be found: no two prompts that "
                                  f"differ only in {f} differ in their text.")
    notes = []
    for f in factors:
        if f in al.silent and f not in al.spelled:
            notes.append(f"{f} is not spelled in the prompt text (prompts differing only in "
                         f"it are the same): it is no slot, its values pass through.")
        elif f in al.silent:
            notes.append(f"{f}: rows {_rows_text(input_rows(al.silent[f]))} have the same "
                         f"text although their {f} differs (not counted as its spans).")
    split = sorted({t.group for t in al.templates
                    if t.id not in (t.group, f"{t.group}/rest")})
    if split:
        notes.append(f"{len(split)} templates spell two factors in overlapping text: one "
                     f"template per value of one of them ({', '.join(split[:_ROWS_SHOWN])}"
                     f"{' ...' if len(split) > _ROWS_SHOWN else ''}).")
    alone = [t for t in al.templates if not t.slots]
    if alone:
        notes.append(f"{sum(t.n_prompts for t in alone):,} prompts ({len(alone)} templates) "
                     "have no sibling differing in one factor only: templates without slots, "
                     "rebuilt trivially and not counted in the round trip.")
    spans: dict[str, dict[str, str]] = {f: {} for f in al.votes}
    for f, c in al.votes.items():
        for (v, k), _m in sorted(c.items(), key=lambda x: -x[1]):
            spans[f].setdefault(v, k)
    per_row = pd.DataFrame({TEMPLATE: al.template_of, "regenerated": al.regenerated,
                            "with_slots": al.with_slots})
    return al.templates, per_row, spans, notes


# --- given templates --------------------------------------------------------------------------
def _scalar(value: Any) -> bool:
    """A single value (not a list or mapping: a YAML alias tree could be huge as text)."""
    return value is None or isinstance(value, (str, int, float, bool, np.generic))


def templates_from_frame(table: pd.DataFrame, factors: Sequence[str], *,
                         where: str = "templates") -> tuple[list[Template], dict]:
    """Templates from a table with ``template`` (id) and ``text`` columns, optional
    ``variant_of`` and a column per fixed factor value.

    Raises
    ------
    GenerationError
        No ``text`` column, an empty text, a repeated id, or a slot that is not a factor
        (the message names the template, the slot and the factors).
    """
    if "text" not in table.columns:
        raise GenerationError(f"{where}: needs a 'text' column (the template text with "
                              "{factor} slots) and optionally 'template' (its id).")
    known = [str(f) for f in factors]
    out: list[Template] = []
    seen: set[str] = set()
    for k, row in enumerate(table.to_dict(orient="records"), start=1):
        bad = [str(c) for c, v in row.items() if not _scalar(v) and c != "text"]
        if bad:
            raise GenerationError(f"{where}, template {k}: {', '.join(bad[:_ROWS_SHOWN])} "
                                  "must be single values, not lists or mappings.")
        text = row.get("text")
        tid = str(row.get(TEMPLATE) if row.get(TEMPLATE) not in (None, "") and
                  not pd.isna(row.get(TEMPLATE)) else f"given{k}")
        here = f"{where}, template {tid!r}"
        if not _scalar(text):
            raise GenerationError(f"{here}: the text must be one string.")
        if text is None or (not isinstance(text, str) and pd.isna(text)) \
                or not str(text).strip():
            raise GenerationError(f"{here}: the text is empty.")
        if str(text).startswith(EDIT_MARK):
            raise GenerationError(f"{here}: the text still starts with {EDIT_MARK!r} (a "
                                  "variant written by --variants-out): write its text.")

        if tid in seen:
            raise GenerationError(f"{where}: the template id {tid!r} is used twice.")
        seen.add(tid)
        slots = template_slots(str(text), here)
        bad = [s for s in slots if s not in known]
        if bad:
            from difflib import get_close_matches

            hints = [f"{{{s}}} (did you mean {{{m[0]}}}?)" if (m := get_close_matches(
                s, known, n=1)) else f"{{{s}}}" for s in bad]
            raise GenerationError(f"{here}: unknown slot {', '.join(hints)}; a slot names a "
                                  f"factor of the design: {', '.join(known)}.")
        fixed = {f: format_value(row[f]) for f in known
                 if f in row and f not in slots and not pd.isna(row[f]) and str(row[f]) != ""}
        variant = row.get("variant_of")
        out.append(Template(tid, str(text), tuple(slots), fixed,
                            variant_of=None if variant is None or pd.isna(variant)
                            or str(variant) == "" else format_value(variant)))
    return out, {}


#: Largest templates file read (a templates file is small; a visitor's upload is hostile).
MAX_TEMPLATES_BYTES = 2_000_000


def load_templates(source: str | Path | bytes, factors: Sequence[str], *,
                   name: str | None = None
                   ) -> tuple[list[Template], dict[str, dict[str, str]]]:
    """Templates from a CSV (see :func:`templates_from_frame`) or a YAML file.

    The YAML file: ``templates:`` a list of ``{id, text, variant_of?, <factor>: value}``,
    and optionally ``values:`` ``{factor: {value: text}}`` (a value's span; default: the
    learned span, else the value itself). ``source``: a path, or the file's bytes with
    its ``name`` (an upload).

    Returns
    -------
    tuple
        The templates and the given spans.

    Raises
    ------
    GenerationError
        An unreadable or too large file, or one of :func:`templates_from_frame`'s
        problems.
    """
    import yaml

    from analysis.io import load_results, read_input_bytes

    if isinstance(source, bytes):
        data, where = source, name or "templates"
    else:
        data, _ = read_input_bytes(source)
        where = Path(source).name
    if len(data) > MAX_TEMPLATES_BYTES:
        raise GenerationError(f"{where}: a templates file is at most "
                              f"{MAX_TEMPLATES_BYTES:,} bytes.")
    if where.lower().endswith((".yaml", ".yml")):
        try:
            doc = yaml.safe_load(data.decode("utf-8-sig"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise GenerationError(f"{where}: not valid YAML ({exc}).") from None
        if not isinstance(doc, Mapping) or not isinstance(doc.get("templates"), list):
            raise GenerationError(f"{where}: needs 'templates:', a list of {{id, text}}.")
        rows = []
        for item in doc["templates"]:
            if not isinstance(item, Mapping):
                raise GenerationError(f"{where}: each template is a mapping with id and text.")
            item = dict(item)
            item[TEMPLATE] = item.pop("id", item.get(TEMPLATE))
            rows.append(item)
        templates, _ = templates_from_frame(pd.DataFrame(rows), factors, where=where)
        given = doc.get("values") or {}
        if not isinstance(given, Mapping) or not all(isinstance(v, Mapping)
                                                    for v in given.values()):
            raise GenerationError(f"{where}: 'values' maps a factor to {{value: text}}.")
        bad = [str(f) for f in given if str(f) not in factors]
        if bad:
            raise GenerationError(f"{where}: 'values' names unknown factors: "
                                  f"{', '.join(bad)}.")
        if not all(_scalar(v) and _scalar(t) for m in given.values() for v, t in m.items()):
            raise GenerationError(f"{where}: each value's text under 'values' is one string.")
        spans = {str(f): {format_value(v): str(t) for v, t in m.items()}
                 for f, m in given.items()}
        return templates, spans
    table = load_results(data, name=where)
    return templates_from_frame(table, factors, where=where)


# --- filling the plan -------------------------------------------------------------------------
@dataclass(frozen=True)
class Generated:
    """The prompts generated for a plan (:func:`generate_prompts`).

    Attributes
    ----------
    prompts
        One row per new prompt: a column per factor, ``template`` (the template id plan
        rows name), ``template_text`` (the id of the text used: ``<template>/<value>``
        for a template split by a factor's value), ``prompt``, ``kind`` (of the plan
        row), ``plan_row`` (its 1-based row in the plan), ``copy`` (1, or 2, 3 ... when
        the row asks for more prompts than templates fit it) and ``new_text`` (False:
        the text is already a prompt of the results table).
    notes
        What the reader needs.
    """

    prompts: pd.DataFrame
    notes: tuple[str, ...] = ()


def _read_plan(plan: pd.DataFrame, factors: Sequence[str]) -> pd.DataFrame:
    if PLAN_N not in plan.columns:
        raise GenerationError("The plan needs an 'n' column (prompts to add per "
                              "combination), as `plan --out` writes it.")
    planned = [c for c in plan.columns if c in factors]
    if not planned:
        raise GenerationError(f"The plan names none of the design's factors (its columns: "
                              f"{', '.join(map(str, plan.columns))}; factors: "
                              f"{', '.join(factors)}).")
    n = pd.to_numeric(plan[PLAN_N], errors="coerce")
    bad = np.flatnonzero(~(n.notna() & (n >= 0) & (n == n.round())).to_numpy())
    if len(bad):
        raise GenerationError(f"The plan's n must be a whole number >= 0: rows "
                              f"{_rows_text(list(bad))}.")
    out = pd.DataFrame({c: plan[c].map(format_value).astype(str) for c in planned})
    out[PLAN_N] = n.astype(int).to_numpy()
    kind = plan[KIND] if KIND in plan.columns else pd.Series("fill", index=plan.index)
    out[KIND] = kind.fillna("fill").astype(str).replace("", "fill").to_numpy()
    tpl = plan[TEMPLATE] if TEMPLATE in plan.columns else pd.Series(None, index=plan.index)
    # an object column: with pandas' string inference a None among strings becomes NaN
    # (a plan mixing fill rows, no template, and variant rows read "template nan")
    out[TEMPLATE] = pd.Series([None if pd.isna(v) or str(v) == "" else format_value(v)
                               for v in tpl], index=out.index, dtype=object)
    return out.reset_index(drop=True)


def generate_prompts(plan: pd.DataFrame, *, factors: Sequence[str],
                     derivation: Derivation | None = None,
                     templates: Sequence[Template] = (),
                     spans: Mapping[str, Mapping[str, str]] | None = None,
                     values: Mapping[str, Sequence[str]] | None = None,
                     existing: pd.DataFrame | None = None,
                     allow_repeats: bool = False,
                     max_prompts: int = 200_000) -> Generated:
    """Prompts for every planned combination, from given and derived templates.

    For a plan row, the candidate templates are those whose fixed values agree with the
    row (a row of kind ``variant`` / ``swap`` with a ``template``: a given template with
    ``variant_of`` or the id of that template, else the derived template of that id, whose
    fixed values may then differ only in its slots); the row's ``n`` prompts take them in
    turn, templates whose text for the row is new first. A slot's text is the template's
    own span of the value (a given template with ``variant_of``: the spans of the
    template it varies), else a given span (``spans``), else the value's most frequent
    span over the derived templates, else (a given template only) the value itself: a
    value no prompt spells has no text in a learned template and is refused. Factors the
    plan does not name come from the template's fixed values, or from a factor they are
    a function of in ``existing``, else stay empty.

    Parameters
    ----------
    plan
        Factor columns + ``n``, optional ``kind`` and ``template``.
    factors
        The design's factors (the prompts table gets a column for each).
    derivation, templates, spans
        Derived templates, given templates (tried first) and given spans.
    values
        The design's values per factor: a plan value outside them is refused.
    existing
        The results table (its prompt column ``prompt``): marks texts already asked,
        fills unplanned factors.
    allow_repeats
        A row asking for more prompts than its templates give new texts (texts not in
        ``existing``) repeats texts; otherwise (default) it is refused.
    max_prompts
        Refuse a plan asking for more prompts.

    Raises
    ------
    GenerationError
        Rows no template can fill, rows needing repeats (without ``allow_repeats``), a
        value outside the design, a plan over the limit;
        every problem is collected first: nothing is generated half-way.
    """
    factors = [str(f) for f in factors]
    rows = _read_plan(plan, factors)
    total = int(rows[PLAN_N].sum())
    if total > max_prompts:
        raise GenerationError(f"The plan asks for {total:,} prompts; at most "
                              f"{max_prompts:,} are generated at once.")
    given = list(templates)
    derived = list(derivation.templates) if derivation else []
    if not given and not derived:
        raise GenerationError("No templates: give a results table with prompts to derive "
                              "them from, or a templates file (--templates).")
    learned = dict(derivation.spans) if derivation else {}
    spans = {f: dict(m) for f, m in (spans or {}).items()}
    problems: list[str] = []
    if values:
        for f in rows.columns:
            if f in values:
                bad = sorted(set(rows[f]) - {str(v) for v in values[f]})
                if bad:
                    problems.append(f"the plan's {f} has values outside the design: "
                                    f"{', '.join(bad[:_ROWS_SHOWN])}")
    asked = set(existing[PROMPT].astype(str)) if existing is not None and \
        PROMPT in existing.columns else set()
    planned = [f for f in rows.columns if f in factors]
    lookups = _functional_lookups(existing, factors, planned)
    out: list[dict] = []
    unfillable: list[int] = []
    unspelled: Counter = Counter()
    short: list[tuple[int, int, int, int]] = []
    unspanned: set[tuple[str, str]] = set()
    for k, row in enumerate(rows.to_dict(orient="records")):
        if row[PLAN_N] == 0:
            continue
        cands = _candidates(row, planned, given, derived)
        if not cands:
            unfillable.append(k)
            continue
        texts = []
        for t in cands:
            own = [t.spans, *(d.spans for d in derived if t.variant_of is not None
                              and d.group_id == t.variant_of)]
            filled = {f: _span(own, t.n_prompts == 0, f, row[f], spans, learned)
                      for f in t.slots}
            lacking = [f for f, v in filled.items() if v is None]
            if lacking:
                unspanned.update((f, row[f]) for f in lacking)
                continue
            texts.append((t, fill_template(t.text, filled, f"template {t.id}")))
        if not texts:
            continue
        texts.sort(key=lambda x: x[1] in asked)  # stable: new texts first
        new = sum(text not in asked for _, text in texts)
        if new < row[PLAN_N] and not allow_repeats:
            short.append((k, row[PLAN_N], new, len(texts)))
            continue
        for j in range(row[PLAN_N]):
            t, text = texts[j % len(texts)]
            rec = {f: row.get(f) for f in factors}
            for f in factors:
                if rec[f] is None:
                    rec[f] = t.fixed.get(f) or _look_up(lookups, f, row)
            for f in planned:
                if f not in t.slots and f not in t.fixed:
                    unspelled[f] += 1
            # a variant / swap is a version of the template it varies (the pairs of a
            # swap share it); template_text names the text used
            tid = row[TEMPLATE] if row[KIND] in ("variant", "swap") and row[TEMPLATE] \
                is not None else t.group_id
            out.append({**rec, TEMPLATE: tid, "template_text": t.id, PROMPT: text,
                        KIND: row[KIND], "plan_row": k + 1, "copy": j // len(texts) + 1,
                        "new_text": text not in asked})
    if unfillable:
        first = rows.iloc[unfillable[0]]
        desc = ", ".join(f"{f} = {first[f]}" for f in planned)
        target = first[TEMPLATE]
        named = [t for t in [*given, *derived] if target in (t.id, t.group_id)]
        if target and not named:
            why = f"there is no template {target!r}"
        elif target:
            slotted = [t for t in named if t.slots] or named  # not its base prompt's
            clash = sorted({f"{f} = {v}" for t in slotted for f, v in t.fixed.items()
                            if f in planned and v != first[f]})
            why = (f"template {target} fixes {', '.join(clash)} and does not spell it as a "
                   "slot")
        else:
            why = "every template fixes another value of a factor it does not spell"
        problems.append(
            f"no template fits plan rows {_rows_text(unfillable)} (counting the first data "
            f"row as 1), e.g. {desc}{f' (template {target})' if target else ''}: {why}; give "
            "a template for it in --templates (a row with these values, and variant_of for "
            "a variant)")
    if unspanned:
        shown = ", ".join(f"{f} = {v}" for f, v in sorted(unspanned)[:_ROWS_SHOWN])
        problems.append(
            f"no prompt spells {shown}{' ...' if len(unspanned) > _ROWS_SHOWN else ''}, so "
            "the learned templates have no text for it: give its text under 'values:' in "
            "a templates YAML file (--templates), or a template for it")
    if short:
        k, n, new, m = short[0]
        problems.append(
            f"plan rows {_rows_text([x[0] for x in short])} ask for more prompts than the "
            f"templates give new texts (row {k + 1}: n = {n}, {new} new of {m} fitting "
            "templates; the others are prompts the results table already has): give "
            "templates (--templates), or allow repeats (--allow-repeats, allow_repeats=True) "
            "to ask the same prompts again")
    if problems:
        raise GenerationError("Nothing generated: " + "; ".join(problems) + ".")
    table = pd.DataFrame(out, columns=[*factors, TEMPLATE, "template_text", PROMPT, KIND,
                                       "plan_row", "copy", "new_text"])
    notes = [f"{len(table):,} prompts for {int((rows[PLAN_N] > 0).sum()):,} planned "
             f"combinations from {table[TEMPLATE].nunique():,} templates."]
    repeated = int((~table["new_text"]).sum()) if len(table) else 0
    if repeated:
        notes.append(f"{repeated:,} generated prompts repeat a text already asked (allowed "
                     "repeats: no other template fits their combination); at temperature 0 "
                     "their answers are repeats, not new evidence.")
    for f, m in unspelled.items():
        notes.append(f"{f} is not spelled by the templates of {m:,} generated prompts: its "
                     "planned value is a column of the table, not part of their text.")
    return Generated(table, tuple(notes))


def variant_skeleton(plan: pd.DataFrame, derivation: Derivation,
                     factors: Sequence[str]) -> tuple[str, int]:
    """A templates YAML file to complete: one entry per template variant the plan asks
    for that no learned template can write (the template fixes a factor the variant
    changes, SSQA's ``biased answer``), with the varied template's text to edit.

    Returns
    -------
    tuple
        The YAML text (``templates:`` entries with ``id``, ``variant_of``, the changed
        values and ``text``) and the number of entries.
    """
    import yaml

    rows = _read_plan(plan, [str(f) for f in factors])
    planned = [f for f in rows.columns if f in factors]
    entries: dict[tuple, dict] = {}
    for row in rows.to_dict(orient="records"):
        target = row[TEMPLATE]
        if target is None or row[KIND] not in ("variant", "swap") or not row[PLAN_N]:
            continue
        # the template of the group closest to the row (a template split by a factor's
        # value: the part with the row's value, whose text the variant rewrites)
        best = None
        for t in derivation.templates:
            if t.group_id != target:
                continue
            changed = {f: row[f] for f in planned if f in t.fixed and t.fixed[f] != row[f]}
            if best is None or len(changed) < len(best[1]):
                best = (t, changed)
        if best is None or not best[1]:
            continue
        t, changed = best
        # what the varied text keeps fixed (SSQA's gender; a split's own value): the
        # completed text then fits only the rows it is written for
        kept = {f: t.fixed[f] for f in planned if f in t.fixed and f not in changed}
        key = (t.id, tuple(sorted(changed.items())))
        entries.setdefault(key, {
            "id": f"{t.id}-" + "-".join(f"{v}" for v in changed.values()),
            "variant_of": target, **kept, **changed,
            "text": f"{EDIT_MARK}{t.text}"})
    body = yaml.safe_dump({"templates": list(entries.values())}, sort_keys=False,
                          allow_unicode=True, width=1000)
    head = ("# Template variants the plan asks for: write each text for its values (keep the\n"
            "# {slots}; remove 'EDIT: '), then pass this file as --templates.\n")
    return head + body, len(entries)


def _span(own: Sequence[Mapping], is_given: bool, f: str, value: str, given: Mapping,
          learned: Mapping) -> str | None:
    """The slot text of ``value``: the template's own (for a given variant, then the
    spans of the template it varies), given, learned; a given template then takes the
    value itself, a learned one has none (None)."""
    for source in (*own, given, learned):
        if f in source and value in source[f]:
            return source[f][value]
    return value if is_given else None


def _candidates(row: Mapping, planned: list[str], given: list[Template],
                derived: list[Template]) -> list[Template]:
    def fits(t: Template) -> bool:
        return all(row[f] == v for f, v in t.fixed.items() if f in planned)

    target = row[TEMPLATE]
    if target is not None and row[KIND] in ("variant", "swap"):
        mine = [t for t in given if (t.variant_of == target or t.id == target) and fits(t)]
        return mine or [t for t in derived if t.group_id == target and fits(t)]
    if target is not None:
        return [t for t in [*given, *derived] if target in (t.id, t.group_id) and fits(t)]
    return [t for t in [*given, *derived] if fits(t) and (
        t.slots or all(f in t.fixed for f in planned))]


def _functional_lookups(existing: pd.DataFrame | None, factors: list[str],
                        planned: list[str]) -> dict[str, tuple[str, dict]]:
    """For each unplanned factor, a planned factor it is a function of in ``existing``."""
    out: dict[str, tuple[str, dict]] = {}
    if existing is None or not len(existing):
        return out
    for u in factors:
        if u in planned or u not in existing.columns:
            continue
        for p in planned:
            if p not in existing.columns:
                continue
            pairs = pd.DataFrame({"p": existing[p].map(format_value),
                                  "u": existing[u].map(format_value)}).drop_duplicates()
            if not pairs["p"].duplicated().any():
                out[u] = (p, dict(zip(pairs["p"], pairs["u"], strict=True)))
                break
    return out


def _look_up(lookups: Mapping, f: str, row: Mapping) -> str | None:
    if f not in lookups:
        return None
    p, mapping = lookups[f]
    return mapping.get(row[p])


# --- the loop: answered prompts back into the results table ----------------------------------
def mark_added(results: pd.DataFrame, answered: pd.DataFrame, *,
               factors: Sequence[str], needed: Sequence[str] = ()) -> pd.DataFrame:
    """The results table with the answered new prompts appended and an ``added`` column
    (False for the existing rows, True for the new ones).

    ``needed``: columns the analyses need (the outcome's); the answered table must have
    every factor and these. Columns only one of the two tables has are empty in the other.

    Raises
    ------
    GenerationError
        The answered table lacks a factor or a needed column (named), or has no rows.
    """
    missing = [c for c in [*factors, *needed] if c not in answered.columns]
    if missing:
        raise GenerationError(f"The answered prompts lack columns of the design: "
                              f"{', '.join(missing)} (generate writes every factor; the "
                              "answer column comes from `python -m judges answer`).")
    if not len(answered):
        raise GenerationError("The answered prompts table has no rows.")
    old = results.copy() if ADDED in results.columns else results.assign(**{ADDED: False})
    new = answered.assign(**{ADDED: True})
    return pd.concat([old, new], ignore_index=True, sort=False)


def with_new_values(design, answered: pd.DataFrame):  # noqa: ANN001, ANN201 - a Design
    """The design with each factor's values extended by those only ``answered`` has (the
    model under test's name, a new stigma of a given template), and ``{factor: [new
    values]}``."""
    from dataclasses import replace

    factors, grown = [], {}
    for f in design.factors:
        seen = dict.fromkeys(answered[f.name].map(format_value)) if f.name in \
            answered.columns else {}
        new = [v for v in seen if v not in f.values]
        if new:
            grown[f.name] = new
            f = replace(f, values=(*f.values, *new))
        factors.append(f)
    return (replace(design, factors=tuple(factors)) if grown else design), grown
