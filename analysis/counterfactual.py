"""Counterfactual pairs: the same prompt with one factor swapped (``docs/counterfactual.md``).

The most direct bias question is "the same prompt with one attribute swapped". This
module pairs, within a *swap unit*, the rows of each value of the swapped factor with the
rows of its reference and tests the paired differences, reusing the kernels of the paired
model comparison (:mod:`analysis.compare`):

- **The swap unit** (:func:`swap_unit`): the template column (``template=``, default the
  design's cluster, else a column named ``template``) plus every other factor of the
  design (model, prompt style, ...), except the swapped factor and the factors that are
  functions of it (``stigma -> pachankis_cluster``: a stigma's cluster changes with it).
  Two rows pair when they agree on the unit and differ only in the swapped factor.
- **Control values** (:func:`control_values`): a value of the swapped factor that occurs
  exactly where another unit factor takes one value (SSQA's ``no stigma`` is exactly
  ``prompt_style = base``) cannot be swapped without changing that factor too; it is left
  out with a note (naming it as the reference is an error).
- **Tests** (:func:`counterfactual_pairs`), per value against the reference (b = value,
  a = reference, difference = b - a): :func:`analysis.compare.compare_overall` on the
  pairing: for a 0/1 outcome the paired 2x2 counts, McNemar's test (exact below 25
  discordant pairs), with a cluster (the template) Durkalski's clustered McNemar test and
  the CR2 interval of the difference (its Satterthwaite df in ``df``, ``n_clusters``);
  for a score the paired t (cluster-robust t with a cluster) and Wilcoxon tests. The
  p-values of the values are adjusted together (``adjust``).
- **Missing swaps** (:func:`missing_swaps`): a unit holding the reference but not the
  value (or the reverse) lacks its counterpart: counted (``missing_value``,
  ``missing_reference``) and written as rows of the plan CSV (``kind = swap``, the unit's
  factor values with the swapped value, ``template`` set, ``n`` prompts), which the
  generator (``generate --plan``) turns into prompts.
- **Open-ended answers** (:func:`text_measures`): for a ``text`` column, per pair the
  sentiment difference (VADER compound, :func:`analysis.features.sentiment_vader`;
  tested against 0 like a score), the ROUGE-L F-measure (``rouge_score``) and the
  embedding distance ``1 - cosine`` (the offline MiniLM,
  :class:`analysis.embedding.EmbeddingScorer`), each with its mean and (clustered)
  interval. A distance has no zero null: with two answers per prompt under the reference
  (repeated samples), the *excess* ``d(a1, b) - d(a1, a2)`` is tested against 0;
  otherwise no p-value is given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.columns import DEVIATION
from analysis.constraints import violating_rows
from analysis.errors import CounterfactualError, NoPairsError, did_you_mean
from analysis.options import FROM_DESIGN

__all__ = [
    "CR2_P", "DF", "EXCESS", "FACTOR", "KIND_SWAP", "MEASURES", "MEASURE", "MISSING_REFERENCE",
    "MISSING_VALUE", "REFERENCE", "ROUGE_L", "SENTIMENT_DIFFERENCE", "EMBEDDING_DISTANCE",
    "Counterfactual", "CounterfactualError", "NoPairsError", "VALUE", "control_values",
    "counterfactual_pairs", "dependent_factors", "missing_swaps", "rouge_l", "swap_unit",
    "text_measures",
]

# --- column names of the outputs ------------------------------------------------------------
FACTOR, REFERENCE, VALUE = "factor", "reference", "value"
MISSING_VALUE, MISSING_REFERENCE = "missing_value", "missing_reference"
DF = "df"
#: With a cluster and a 0/1 outcome: the CR2 t test of the mean paired difference on ``df``.
CR2_P = "cr2_p_value"
MEASURE, EXCESS = "measure", "null"
SENTIMENT_DIFFERENCE, ROUGE_L, EMBEDDING_DISTANCE = ("sentiment_difference", "rouge_l",
                                                     "embedding_distance")
#: The paired text measures, in the order they are computed.
MEASURES = (SENTIMENT_DIFFERENCE, ROUGE_L, EMBEDDING_DISTANCE)
#: The ``kind`` of a missing swap in the plan CSV (the shared contract of issue 41).
KIND_SWAP = "swap"
#: The plan CSV's columns beside the factors.
_PLAN_N, _PLAN_KIND, _PLAN_TEMPLATE = "n", "kind", "template"
_TEMPLATE_NAMES = ("template", "template_id", "template_idx")


@dataclass
class Counterfactual:
    """What :func:`counterfactual_pairs` returns.

    Attributes
    ----------
    factor, reference, values
        The swapped factor, its reference and the values compared with it.
    unit
        The swap unit's columns; ``template`` the template column (or None).
    table
        One row per value (see :func:`counterfactual_pairs`).
    missing
        The missing swaps as plan rows (:func:`missing_swaps`).
    text
        The paired text measures (:func:`text_measures`; empty without ``text``).
    pairing
        The :class:`analysis.compare.Pairing` the tests ran on (None with a text column
        and no outcome).
    control
        The control values left out: value -> (factor, value) they coincide with.
    notes
        Plain-language readings.
    cluster
        The cluster used (None: pairs independent).
    """

    factor: str
    reference: str
    values: list[str]
    unit: list[str]
    template: str | None
    table: pd.DataFrame
    missing: pd.DataFrame
    text: pd.DataFrame
    pairing: object
    control: dict[str, tuple[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    cluster: str | None = None


# --- the unit -------------------------------------------------------------------------------
def _check_factor(results: pd.DataFrame, design, swap: str) -> None:
    names = list(design.names) if design is not None else []
    if swap not in names or swap not in results.columns:
        raise CounterfactualError(
            f"{swap!r} is not a factor of the design{did_you_mean(swap, names)}; name the "
            f"factor whose values are swapped (factors: {', '.join(names) or 'none'}).")


def _template_column(results: pd.DataFrame, design, swap: str, template: str | None
                     ) -> str | None:
    if template is not None:
        if template not in results.columns:
            raise CounterfactualError(
                f"The template column {template!r} is not in the table"
                f"{did_you_mean(template, list(map(str, results.columns)))}.")
        if template == swap:
            raise CounterfactualError(
                f"The template column {template!r} is the swapped factor: a swap keeps the "
                "template and changes one factor. Name the template column (template=).")
        return template
    cluster = getattr(design, "cluster", None)
    if cluster and cluster in results.columns and cluster != swap:
        return cluster
    for name in _TEMPLATE_NAMES:
        if name in results.columns and name != swap:
            return name
    return None


def dependent_factors(results: pd.DataFrame, swap: str, candidates: Sequence[str]
                      ) -> list[str]:
    """The ``candidates`` that take one value per value of ``swap`` in ``results`` (a
    function of it: they change when it is swapped, so they cannot be held fixed)."""
    out = []
    for col in candidates:
        if col == swap or col not in results.columns:
            continue
        per = results.groupby(swap, observed=True, dropna=True)[col].nunique(dropna=False)
        if len(per) and int(per.max()) <= 1:
            out.append(col)
    return out


def swap_unit(results: pd.DataFrame, design, swap: str, *, template: str | None = None,
              unit: Sequence[str] | None = None) -> tuple[list[str], str | None, list[str]]:
    """The swap unit: (columns, template column, factors left out as functions of ``swap``).

    Default: the template column (``template``; else the design's cluster; else a column
    named ``template``) and every factor of the design but ``swap`` and those that are
    functions of it (:func:`dependent_factors`). ``unit`` replaces the columns.

    Raises
    ------
    CounterfactualError
        An unknown factor or column, a unit naming the swapped factor.
    """
    _check_factor(results, design, swap)
    tcol = _template_column(results, design, swap, template)
    if unit is not None:
        cols = [str(c) for c in unit]
        if swap in cols:
            raise CounterfactualError(f"The swap unit cannot contain the swapped factor "
                                      f"{swap!r}: its rows differ exactly in it.")
        absent = [c for c in cols if c not in results.columns]
        if absent:
            raise CounterfactualError("The swap unit names columns the table lacks: " + ", ".join(
                f"{c!r}{did_you_mean(c, list(map(str, results.columns)))}" for c in absent) + ".")
        if not cols:
            raise CounterfactualError("Name at least one column for the swap unit.")
        return cols, tcol, []
    others = [f for f in design.names if f != swap and f != tcol]
    dependent = dependent_factors(results, swap, others)
    cols = list(dict.fromkeys([*([tcol] if tcol else []),
                               *[f for f in others if f not in dependent]]))
    if not cols:
        raise CounterfactualError(
            f"Nothing holds the prompt fixed when {swap!r} is swapped: the design has no "
            "other factor and the table no template column. Name one (template=).")
    return cols, tcol, dependent


def control_values(results: pd.DataFrame, swap: str, unit: Sequence[str], *,
                   template: str | None = None) -> dict[str, tuple[str, str]]:
    """Values of ``swap`` whose rows are exactly the rows of one value of a unit column
    other than the template, either named like a control value (none, no ..., base:
    :data:`analysis.values.REFERENCE_PATTERN`; SSQA: ``stigma = no stigma`` exactly where
    ``prompt_style = base``): value -> (column, its value). Such a value cannot be swapped
    with another while the unit is held. (A value that only the template fixes is not a
    control value: its swaps are missing, and can be written.)"""
    from analysis.values import REFERENCE_PATTERN

    out: dict[str, tuple[str, str]] = {}
    s = results[swap].astype(object)
    for col in unit:
        if col == template:
            continue
        pairs = pd.DataFrame({"v": s, "w": results[col].astype(object)}).dropna()
        pairs = pairs.drop_duplicates()
        per_v = pairs.groupby("v")["w"].nunique()
        per_w = pairs.groupby("w")["v"].nunique()
        for v, k in per_v.items():
            if k != 1 or str(v) in out:
                continue
            w = pairs.loc[pairs["v"] == v, "w"].iloc[0]
            looks = any(REFERENCE_PATTERN.search(str(x).strip()) for x in (v, w))
            if per_w[w] == 1 and len(per_v) > 1 and looks:
                out[str(v)] = (str(col), str(w))
    return out


# --- presence and missing swaps ---------------------------------------------------------------
def _presence(rows: pd.DataFrame, swap: str, unit: Sequence[str]) -> pd.DataFrame:
    """One row per unit (indexed by the unit's values), one boolean column per value of
    ``swap``: whether the unit holds a row with it."""
    frame = rows[[*unit, swap]].dropna()
    ucode = frame.groupby(list(unit), observed=True, sort=False).ngroup().to_numpy()
    vcode, values = pd.factorize(frame[swap].astype(str), sort=True)
    n_units = int(ucode.max()) + 1 if len(ucode) else 0
    present = np.zeros((n_units, len(values)), dtype=bool)
    present[ucode, vcode] = True
    first = np.full(n_units, -1, dtype=np.int64)
    first[ucode[::-1]] = np.arange(len(ucode))[::-1]
    keys = frame[list(unit)].iloc[first].astype(object)
    index = pd.MultiIndex.from_frame(keys)
    return pd.DataFrame(present, index=index, columns=[str(v) for v in values])


def missing_swaps(presence: pd.DataFrame, swap: str, reference: str, values: Sequence[str],
                  *, design=None, template: str | None = None,
                  mapping: Mapping[str, Mapping[str, object]] | None = None,
                  drop: Sequence[str] = ()) -> pd.DataFrame:
    """The missing counterparts as plan rows (the plan CSV of issue 41).

    Parameters
    ----------
    presence
        :func:`_presence`'s table (units x values).
    swap, reference, values
        The swapped factor, its reference and the compared values.
    design
        Its factor order (and ``constraints``, when it declares them: rows violating one
        are left out).
    template
        The template column (its value goes to the ``template`` column).
    mapping
        Per dependent factor, its value for each value of ``swap`` (``pachankis_cluster``
        of a stigma).
    drop
        Unit columns not written (the model: a prompt is generated once, every model then
        answers it).

    Returns
    -------
    pandas.DataFrame
        One row per prompt to write: the factor columns (the unit's, ``swap`` with the
        missing value, the dependent factors), ``n`` (prompts, 1), ``kind`` (``swap``) and
        ``template`` (the template column's value; empty without one).
    """
    unit = list(presence.index.names)
    frame = presence.reset_index()
    parts = []
    if reference in presence.columns:
        has_ref = presence[reference].to_numpy()
        for v in values:
            if v == reference or v not in presence.columns:
                continue
            has_v = presence[v].to_numpy()
            for need, where in ((v, has_ref & ~has_v), (reference, has_v & ~has_ref)):
                if where.any():
                    part = frame.loc[where, unit].copy()
                    part[swap] = need
                    parts.append(part)
    keep = [c for c in unit if c not in drop]
    cols = list(dict.fromkeys([*keep, swap, *(mapping or {})]))
    if design is not None:
        order = {n: i for i, n in enumerate(design.names)}
        cols = sorted(dict.fromkeys(cols), key=lambda c: order.get(c, len(order)))
    if not parts:
        return pd.DataFrame(columns=list(dict.fromkeys([*cols, _PLAN_N, _PLAN_KIND,
                                                         _PLAN_TEMPLATE])))
    out = pd.concat(parts, ignore_index=True)
    for dep, values_of in (mapping or {}).items():
        out[dep] = out[swap].map(lambda v, m=values_of: m.get(v))
    out = out[cols].astype(str).drop_duplicates().reset_index(drop=True)
    out = _respect_constraints(out, design)
    out[_PLAN_N] = 1
    out[_PLAN_KIND] = KIND_SWAP
    out[_PLAN_TEMPLATE] = out[template].astype(str) if template and template in out else ""
    return out


def _respect_constraints(plan: pd.DataFrame, design) -> pd.DataFrame:
    """Rows of ``plan`` that break none of the design's ``constraints`` (each cut to the
    plan's columns: :meth:`analysis.constraints.Constraint.restricted`; none declared: all)."""
    keep = np.ones(len(plan), dtype=bool)
    for c in getattr(design, "constraints", None) or ():
        cut = c.restricted(list(plan.columns))
        if cut is not None:
            keep[violating_rows(cut, plan) - 1] = False
    return plan[keep].reset_index(drop=True)


# --- the analysis ----------------------------------------------------------------------------
def counterfactual_pairs(
    results: pd.DataFrame,
    design,
    swap: str,
    *,
    reference: str | None = None,
    values: Sequence[str] | None = None,
    unit: Sequence[str] | None = None,
    template: str | None = None,
    score: str | None = None,
    text: str | None = None,
    measures: Sequence[str] = (SENTIMENT_DIFFERENCE, ROUGE_L),
    model: str | None = None,
    cluster: str | None = FROM_DESIGN,
    duplicates: str = "mean",
    test: str = "auto",
    adjust: str = "holm",
    confidence: float = 0.95,
) -> Counterfactual:
    """Swap ``swap`` within its template: every value against the reference, on pairs.

    Parameters
    ----------
    results
        The results table with the design applied (``deviation`` for a 0/1 outcome).
    design
        The :class:`~analysis.design.Design` (its factors, cluster, reference of ``swap``).
    swap
        The swapped factor.
    reference
        Compare every value with this one (default: the design's reference of ``swap``;
        when that is a control value or pairs with no value, the value with the most
        pairs, with a note).
    values
        The values compared (default every value but the control values).
    unit, template
        The swap unit's columns (default :func:`swap_unit`) and the template column.
    score
        A numeric column compared instead of the 0/1 deviation.
    text
        A column of open-ended answers: also the paired text measures (``measures``).
    measures
        Among :data:`MEASURES`; ``model`` the embedding model (None: bundled MiniLM).
    cluster
        :data:`analysis.options.FROM_DESIGN` (default: the design's cluster, else the
        template column), a column, or None (pairs independent).
    duplicates, test, adjust, confidence
        As :func:`analysis.compare.compare`.

    Returns
    -------
    Counterfactual
        ``table``: one row per value: ``factor``, ``reference``, ``value``, ``n_pairs``,
        ``missing_value`` (units with the reference but not the value),
        ``missing_reference`` (the reverse), then the columns of
        :func:`analysis.compare.compare_overall` (0/1: ``both_deviate``, ``only_a`` =
        deviates under the reference only, ``only_b``, ``neither_deviates``, ``rate_a``,
        ``rate_b``, ``difference``, ``ci_low``, ``ci_high``, ``odds_ratio``, ...; score:
        ``mean_a``, ``mean_b``, ...; ``test``, ``statistic``, ``p_value``,
        ``p_adjusted``; with a cluster ``n_clusters``), ``df`` (the Satterthwaite df
        of the clustered interval; NaN without a cluster) and, with a cluster and a 0/1
        outcome, ``cr2_p_value`` (the CR2 t test of the difference on ``df``: the
        small-sample check of Durkalski's chi-square).

    Raises
    ------
    CounterfactualError
        Unknown factor, one value, a control value or absent value as the reference.
    NoPairsError
        No unit holds two of the values (its ``missing_swaps``: the plan rows).
    """
    from analysis.compare import (
        MODEL_A,
        MODEL_B,
        N_CLUSTERS,
        OUTCOME_A,
        OUTCOME_B,
        UNPAIRED_A,
        UNPAIRED_B,
        cluster_mean_difference,
        compare_overall,
        pair_units,
    )

    unit_cols, tcol, dependent = swap_unit(results, design, swap, template=template, unit=unit)
    notes: list[str] = []
    value_col = score if score is not None else (DEVIATION if text is None or
                                                 DEVIATION in results.columns else None)
    rows = results
    if value_col is not None and value_col in rows.columns:
        rows = rows[pd.to_numeric(rows[value_col], errors="coerce").notna()]
    elif text is not None:
        rows = rows[rows[text].notna()]
    control = control_values(rows, swap, unit_cols, template=tcol)
    present = [str(v) for v in _ordered_values(rows, swap)]
    chosen = present if values is None else [str(v) for v in values]
    unknown = [v for v in chosen if v not in present]
    if unknown:
        raise CounterfactualError(
            f"{', '.join(map(repr, unknown))} {'is' if len(unknown) == 1 else 'are'} not among "
            f"the values of {swap!r} with an outcome ({', '.join(present)}).")
    left_out = {v: control[v] for v in chosen if v in control and values is None
                and v != reference}
    chosen = [v for v in chosen if v not in left_out]
    if reference is not None and str(reference) in control:
        col, w = control[str(reference)]
        raise CounterfactualError(
            f"The reference {reference!r} of {swap!r} occurs exactly where {col} = {w!r} (a "
            f"control value): no prompt can swap it while {col} stays fixed. Choose another "
            f"reference ({', '.join(v for v in present if v not in control)}).")
    if len(chosen) < 2:
        raise CounterfactualError(
            f"{swap!r} has a single value to swap in these rows ({', '.join(chosen) or 'none'}"
            + (f"; left out as control values: {', '.join(left_out)}" if left_out else "")
            + "): a counterfactual pair needs two values. Choose a factor with two or more "
            "values.")
    for v, (col, w) in left_out.items():
        notes.append(f"{swap} = {v!r} occurs exactly where {col} = {w!r} (a control value: "
                     f"its prompts cannot be swapped while {col} stays fixed): left out.")
    rows = rows[rows[swap].astype(str).isin(chosen)]
    presence = _presence(rows, swap, unit_cols)
    both = presence.to_numpy(dtype=np.int64)
    both = both.T @ both  # units holding both values, for every two values
    any_pair = bool(len(presence)) and bool((both - np.diag(np.diag(both))).any())
    ref = _choose_reference(design, swap, reference, chosen, presence, notes)
    mapping = {d: {str(k): v for k, v in rows.groupby(swap, observed=True)[d].first()
                   .astype(str).items()} for d in dependent}
    models = [m for m in getattr(design, "of_kind", lambda *_: [])("model") if m in unit_cols]
    plan = missing_swaps(presence, swap, ref, chosen, design=design, template=tcol,
                         mapping=mapping, drop=models)
    if not any_pair:
        raise NoPairsError(_no_pairs_message(rows, swap, unit_cols, tcol, chosen, len(plan)),
                           plan)
    note = (f"Pairs: the same {' x '.join(unit_cols)} with {swap} swapped"
            + (f" ({', '.join(dependent)} left out of the unit: a function of {swap})"
               if dependent else "") + ".")
    if cluster == FROM_DESIGN:
        cluster = getattr(design, "cluster", None) or tcol
        if cluster is not None and (cluster not in rows.columns or cluster == swap):
            notes.append(f"The design's cluster {cluster!r} "
                         + ("is the swapped factor" if cluster == swap else "is not in the table")
                         + ": the pairs are treated as independent.")
            cluster = None
    if value_col is None:  # open-ended answers only: the pairs, then the text measures
        pairing = None
        overall = _counts_only(presence, ref, [v for v in chosen if v != ref])
    else:
        pairing = pair_units(rows, design, swap, score=score, cluster=cluster,
                             duplicates=duplicates, inferred=(unit_cols, "swap", note))
        overall = compare_overall(pairing, reference=ref, test=test, adjust=adjust,
                                  confidence=confidence)
        cluster = pairing.cluster
    dfs, cr2_p = [], []
    for b in overall[MODEL_B]:
        paired = pairing.paired(ref, b) if pairing is not None and cluster else None
        if paired is None or not len(paired):
            dfs.append(math.nan)
            cr2_p.append(math.nan)
            continue
        d = paired[OUTCOME_B].to_numpy(float) - paired[OUTCOME_A].to_numpy(float)
        got = cluster_mean_difference(d, paired["__cluster__"].to_numpy(), confidence,
                                      with_df=True)
        dfs.append(got[5])
        cr2_p.append(got[3])
    table = overall.rename(columns={MODEL_A: REFERENCE, MODEL_B: VALUE,
                                    UNPAIRED_A: MISSING_VALUE, UNPAIRED_B: MISSING_REFERENCE})
    table.insert(0, FACTOR, swap)
    table[DF] = dfs
    if cluster and pairing is not None and pairing.outcome == "binary":
        table[CR2_P] = cr2_p  # the small-sample t test of the difference, on df
    if cluster and N_CLUSTERS not in table:
        table[N_CLUSTERS] = np.nan
    notes = [note, *notes, *(pairing.notes if pairing is not None else [])]
    if len(plan):
        notes.append(f"{len(plan):,} missing swaps (a unit with the reference but not the "
                     "value, or the reverse) are listed as plan rows (kind = swap) for the "
                     "generator.")
    text_table = pd.DataFrame()
    if text is not None:
        text_table, text_notes = text_measures(
            rows, swap, ref, [v for v in chosen if v != ref], unit_cols, text,
            cluster=cluster, measures=measures, model=model, adjust=adjust,
            confidence=confidence)
        notes += text_notes
    return Counterfactual(swap, ref, [v for v in chosen if v != ref], unit_cols, tcol, table,
                          plan, text_table, pairing, left_out, notes, cluster)


def _counts_only(presence: pd.DataFrame, reference: str, values: Sequence[str]
                 ) -> pd.DataFrame:
    """The pair counts of each value against the reference (no outcome to test), in
    :func:`analysis.compare.compare_overall`'s column names."""
    from analysis.compare import MODEL_A, MODEL_B, N_PAIRS, UNPAIRED_A, UNPAIRED_B

    ref = presence[reference].to_numpy()
    return pd.DataFrame([{MODEL_A: reference, MODEL_B: v,
                          N_PAIRS: int((ref & presence[v]).sum()),
                          UNPAIRED_A: int((ref & ~presence[v]).sum()),
                          UNPAIRED_B: int((presence[v] & ~ref).sum())} for v in values])


def _ordered_values(rows: pd.DataFrame, swap: str) -> list:
    s = rows[swap]
    if isinstance(s.dtype, pd.CategoricalDtype):
        seen = set(s.dropna().astype(str).unique())
        return [c for c in s.cat.categories if str(c) in seen]
    return sorted(s.dropna().astype(str).unique())


def _choose_reference(design, swap: str, reference: str | None, chosen: list[str],
                      presence: pd.DataFrame, notes: list[str]) -> str:
    def pairs_of(v: str) -> int:
        if v not in presence.columns:
            return 0
        others = presence[[w for w in chosen if w != v and w in presence.columns]]
        return int((presence[v] & others.any(axis=1)).sum())

    if reference is not None:
        ref = str(reference)
        if ref not in chosen:
            raise CounterfactualError(f"The reference {ref!r} is not among the compared values "
                                      f"of {swap!r} ({', '.join(chosen)}).")
        return ref
    declared = None
    try:
        declared = design.factor(swap).reference
    except Exception:  # noqa: BLE001 - a design without this factor's reference
        declared = None
    if declared is not None and str(declared) in chosen and (
            pairs_of(str(declared)) or not any(map(pairs_of, chosen))):
        return str(declared)  # (no pair at all: the missing swaps are the declared one's)
    best = max(chosen, key=lambda v: (pairs_of(v), -chosen.index(v)))
    if declared is not None:
        notes.append(f"The design's reference of {swap} ({declared!r}) "
                     + ("is a control value" if str(declared) not in chosen else
                        "shares no unit with another value")
                     + f": every value is compared with {best!r} (the most pairs) instead; "
                     "choose another with reference=.")
    return best


def _no_pairs_message(rows: pd.DataFrame, swap: str, unit: list[str], tcol: str | None,
                      chosen: list[str], n_missing: int) -> str:
    why = ""
    if tcol:
        per = rows.groupby(tcol, observed=True)[swap].nunique()
        if len(per) and int(per.max()) <= 1:
            example = rows.drop_duplicates(tcol).head(3)
            shown = ", ".join(f"{tcol} {t}: {v}" for t, v in zip(example[tcol], example[swap],
                                                                 strict=True))
            why = (f" {swap!r} is fixed by the template: every value of {tcol} has one value "
                   f"of {swap} ({shown} ...), so the data hold no counterfactual pair.")
    return (f"No pair: no {' x '.join(unit)} holds two values of {swap!r} "
            f"({', '.join(chosen)}).{why} The {n_missing:,} missing swaps are the prompts to "
            "generate (CLI: --missing-out FILE writes them as a plan; API: the exception's "
            "missing_swaps).")


# --- open-ended answers ------------------------------------------------------------------------
def rouge_l(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    """ROUGE-L F-measure of ``a[i]`` and ``b[i]`` (``rouge_score``, no stemming; NaN where
    either is missing)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    out = np.full(len(a), np.nan)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if isinstance(x, str) and isinstance(y, str):
            out[i] = scorer.score(x, y)["rougeL"].fmeasure
    return out


def _distance(measure: str, a: Sequence[str], b: Sequence[str], model: str | None
              ) -> np.ndarray:
    if measure == ROUGE_L:
        return 1.0 - rouge_l(a, b)
    from analysis.features import embedding_similarity

    return 1.0 - embedding_similarity(pd.Series(list(a), dtype=object),
                                      pd.Series(list(b), dtype=object), model=model)


def _paired_summary(d: np.ndarray, clusters: np.ndarray | None, confidence: float) -> dict:
    """Mean of ``d`` with its interval and the test of mean 0: t (cluster-robust CR2 t with
    Satterthwaite df with a cluster) and Wilcoxon's signed-rank test."""
    from scipy import stats

    from analysis.compare import cluster_mean_difference

    d = d[~np.isnan(d)] if clusters is None else d
    row: dict = {"n_pairs": len(d), "mean": float(d.mean()) if len(d) else math.nan}
    if len(d) < 2:
        return row
    if clusters is None:
        se = float(d.std(ddof=1) / math.sqrt(len(d)))
        df = len(d) - 1
        t = float(stats.t.ppf(0.5 + confidence / 2, df))
        p = (float(2 * stats.t.sf(abs(row["mean"]) / se, df)) if se > 0
             else (1.0 if row["mean"] == 0 else 0.0))
        row |= {"ci_low": row["mean"] - t * se, "ci_high": row["mean"] + t * se,
                "test": "paired_t", "p_value": p, DF: float(df)}
    else:
        mean, lo, hi, p, g, df = cluster_mean_difference(d, clusters, confidence, with_df=True)
        row |= {"ci_low": lo, "ci_high": hi, "test": "cluster_t", "p_value": p, DF: df,
                "n_clusters": g}
    row["wilcoxon_p_value"] = (float(stats.wilcoxon(d).pvalue) if (d != 0).any() else 1.0)
    return row


def _check_packages(measures: Sequence[str]) -> None:
    """A measure whose package is missing: :class:`analysis.features.FeatureUnavailableError`
    naming what to install (before any work)."""
    import importlib.util

    from analysis.columns import EMBEDDING_SIMILARITY, SENTIMENT_VADER
    from analysis.features import FeatureUnavailableError, missing_packages

    needs = {SENTIMENT_DIFFERENCE: missing_packages(SENTIMENT_VADER),
             EMBEDDING_DISTANCE: missing_packages(EMBEDDING_SIMILARITY),
             ROUGE_L: [] if importlib.util.find_spec("rouge_score") else ["rouge-score"]}
    for m in measures:
        if needs.get(m):
            raise FeatureUnavailableError(f"The text measure {m} needs "
                                          f"{', '.join(needs[m])}: pip install "
                                          f"{' '.join(needs[m])} (or leave {m} out).")


def text_measures(rows: pd.DataFrame, swap: str, reference: str, values: Sequence[str],
                  unit: Sequence[str], text: str, *, cluster: str | None = None,
                  measures: Sequence[str] = (SENTIMENT_DIFFERENCE, ROUGE_L),
                  model: str | None = None, adjust: str = "holm", confidence: float = 0.95
                  ) -> tuple[pd.DataFrame, list[str]]:
    """Paired text measures between the answers of each pair (value vs reference).

    Per unit, the first answer under each value is paired (a second answer under the
    reference, when there is one, gives the null of a distance). ``sentiment_difference``
    = VADER(value) - VADER(reference), tested against 0; ``rouge_l`` = 1 - ROUGE-L F and
    ``embedding_distance`` = 1 - cosine: their mean with its interval; with repeated
    reference answers also the excess over the reference's own distance (row
    ``null = "repeat"``), tested against 0.

    Returns
    -------
    (pandas.DataFrame, list of str)
        One row per value x measure (x null): ``factor``, ``reference``, ``value``,
        ``measure``, ``null`` (``zero`` for the sentiment difference, ``none`` for a
        distance without repeated answers, ``repeat`` for the excess distance),
        ``n_pairs``, ``mean``, ``ci_low``, ``ci_high``, ``test``, ``p_value``, ``df``,
        ``n_clusters`` (with a cluster), ``wilcoxon_p_value``, ``p_adjusted`` (per
        measure across the values); and notes.
    """
    from analysis.multiple_testing import adjust_p

    unknown = [m for m in measures if m not in MEASURES]
    if unknown:
        raise CounterfactualError(f"Unknown text measure {unknown[0]!r}: use "
                                  f"{', '.join(MEASURES)}.")
    if text not in rows.columns:
        raise CounterfactualError(f"The text column {text!r} is not in the table"
                                  f"{did_you_mean(text, list(map(str, rows.columns)))}.")
    _check_packages(measures)
    keys = list(unit)
    base = rows[[*keys, swap, text, *([cluster] if cluster and cluster not in keys else [])]]
    base = base[base[text].notna()].astype({c: object for c in [*keys, swap]})
    base[swap] = base[swap].astype(str)
    base["__k__"] = base.groupby([*keys, swap], sort=False).cumcount()
    ref = base[base[swap] == reference]
    first_ref = ref[ref["__k__"] == 0].drop(columns=[swap, "__k__"])
    second_ref = ref[ref["__k__"] == 1][[*keys, text]].rename(columns={text: "__a2__"})
    notes: list[str] = []
    dup = int((base["__k__"] > 0).sum())
    if dup:
        notes.append(f"Text measures: {dup:,} further answers to a prompt under one value are "
                     "set aside (the first answer is paired; a second one under the reference "
                     "gives the null of the distances).")
    if SENTIMENT_DIFFERENCE in measures:
        from analysis.features import sentiment_vader

        sent = dict(zip(base[text].astype(str), sentiment_vader(base[text].astype(str)),
                        strict=True))
    out = []
    for v in values:
        other = base[(base[swap] == v) & (base["__k__"] == 0)][[*keys, text]]
        pairs = first_ref.merge(other.rename(columns={text: "__b__"}), on=keys, how="inner")
        pairs = pairs.merge(second_ref, on=keys, how="left")
        a, b = pairs[text].astype(str).tolist(), pairs["__b__"].astype(str).tolist()
        clusters = pairs[cluster].to_numpy() if cluster else None
        for m in measures:
            head = {FACTOR: swap, REFERENCE: reference, VALUE: v, MEASURE: m}
            if not len(pairs):
                out.append({**head, EXCESS: "none", "n_pairs": 0})
                continue
            if m == SENTIMENT_DIFFERENCE:
                d = np.array([sent[y] - sent[x] for x, y in zip(a, b, strict=True)])
                out.append({**head, EXCESS: "zero", **_paired_summary(d, clusters, confidence)})
                continue
            dist = _distance(m, a, b, model)
            row = {**head, EXCESS: "none", **_paired_summary(dist, clusters, confidence)}
            for k in ("test", "p_value", "wilcoxon_p_value"):
                row.pop(k, None)  # a distance has no zero null
            out.append(row)
            rep = pairs["__a2__"].notna().to_numpy()
            if rep.sum() >= 2:
                a2 = pairs.loc[rep, "__a2__"].astype(str).tolist()
                a1 = [x for x, r in zip(a, rep, strict=True) if r]
                own = _distance(m, a1, a2, model)
                excess = dist[rep] - own
                out.append({**head, EXCESS: "repeat", **_paired_summary(
                    excess, clusters[rep] if clusters is not None else None, confidence)})
    table = pd.DataFrame(out)
    if "p_value" in table:
        table["p_adjusted"] = np.nan
        for (_m, _n), idx in table.groupby([MEASURE, EXCESS]).groups.items():
            table.loc[idx, "p_adjusted"] = adjust_p(table.loc[idx, "p_value"].to_numpy(float),
                                                    adjust)
    if ROUGE_L in measures or EMBEDDING_DISTANCE in measures:
        notes.append("A distance between two answers is not 0 without an effect (answers "
                     "vary): its mean has an interval but no test, unless a prompt has a "
                     "second answer under the reference (null = repeat: the excess over "
                     "that answer's own distance, tested against 0).")
    return table, notes
