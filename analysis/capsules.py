"""The statistics of the "time capsule" study, per demographic (``docs/cohorts.md``).

Completions of role prompts ("The CEO of the company I am interviewing for is ...") are
put into the subcategories of a *demographic* (gender: woman / man / non-binary; race:
White / Asian / Black; ...) or into none of them ("neither", "unclassified"). The study
reports, per prompt and cohort (decade of the fine-tuning books, model ...):

- the **share of every answer** that falls in each subcategory: the answers in no
  subcategory stay in the denominator, so a row of shares may add up to less than 100 %
  (:func:`capsule_distribution`; ``renormalise=True`` gives shares among the
  subcategories instead);
- whether each subcategory's share **differs between cohorts**: a Kruskal-Wallis test
  per subcategory (:func:`kruskal_across_cohorts`) beside the chi-square test of
  homogeneity of the whole distribution (:func:`capsule_tests` labels each with the
  question it answers);
- the **standard deviation of the subcategory frequencies** of each demographic, over
  that demographic's own subcategories only (:func:`capsule_spread`);
- a wide table shaped like the paper's: one row per cohort, one column per (demographic,
  prompt, subcategory), ``*`` on the subcategories whose share differs between cohorts
  (:func:`capsule_table`).

Categories belong to one demographic (``demographics={"gender": ["woman", "man",
"non-binary"], "race": [...]}``); ``demographic_col`` names the column saying which
demographic each row's prompt probes. A subcategory is listed (with 0 %) in every
cohort of its own demographic and never in another's, so gender's spread is taken over
its 3 subcategories, not over 6 with race's at 0 %.

Kruskal-Wallis here: the observations are the answers of one (demographic, prompt)
group, each 1 when it falls in the subcategory and 0 otherwise, grouped by cohort; the
statistic H is tie-corrected (scipy's ``kruskal``, computed from the counts). The paper
says only that shares were compared with Kruskal-Wallis; this per-answer reading is ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from analysis import distribution as dm
from analysis.columns import (
    COUNT,
    DF,
    MAX_PERCENT,
    MIN_PERCENT,
    N_CATEGORIES,
    N_COHORTS,
    NOTE,
    P_ADJUSTED,
    P_VALUE,
    PERCENT,
    SD_PERCENT,
    STATISTIC,
    N,
)
from analysis.errors import AnalysisError
from analysis.values import combine_codes, factor_codes, split_codes

__all__ = [
    "ALL_CATEGORIES", "BH_MARK", "CAPSULE_ADJUST", "CHI_SQUARE", "DEMOGRAPHIC", "KRUSKAL",
    "KRUSKAL_AMONG",
    "N_OTHER", "N_SUBCATEGORIES", "QUESTION", "QUESTIONS", "TEST", "capsule_distribution",
    "capsule_spread", "capsule_table", "capsule_tests", "kruskal_across_cohorts",
    "kruskal_among_subcategories", "kruskal_binary", "parse_demographics",
]


# Output columns of this module (kept here, beside analysis/columns.py's cohort columns).
DEMOGRAPHIC = "demographic"
N_OTHER = "n_other"
TEST = "test"
QUESTION = "question"
ALL_CATEGORIES = "(all)"
KRUSKAL = "Kruskal-Wallis"
KRUSKAL_AMONG = "Kruskal-Wallis among subcategories"
CHI_SQUARE = "chi-square"
N_SUBCATEGORIES = "n_subcategories"
#: The adjusted-significant marker of :func:`capsule_table` (after ``*``, the unadjusted
#: one); the name is older than the ``adjust`` option: it marks any method's.
BH_MARK = "†"
#: The default adjustment behind :data:`BH_MARK` and ``p_adjusted`` (the paper's
#: convention); the ``adjust`` option takes any method of :mod:`analysis.multiple_testing`.
CAPSULE_ADJUST = "bh"
#: What each test answers (the ``question`` column of :func:`capsule_tests`).
QUESTIONS: dict[str, str] = {
    KRUSKAL: "Does this subcategory's share of the answers differ between cohorts?",
    KRUSKAL_AMONG: "Do the subcategories of this prompt get different shares (each "
                   "subcategory's per-cohort percentages are its observations; the "
                   "paper's Table 4 claim)?",
    CHI_SQUARE: "Is the whole distribution of answers over the subcategories (and the "
                "answers in none of them) the same in every cohort?",
}


def parse_demographics(spec: str | Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Demographics and their subcategories, from a mapping or ``"gender=woman,man;race=..."``.

    Raises
    ------
    AnalysisError
        An entry without ``=`` or without subcategories; a subcategory listed under two
        demographics (it must belong to one).
    """
    if isinstance(spec, str):
        parts = [p.strip() for p in spec.split(";") if p.strip()]
        mapping: dict[str, list[str]] = {}
        for part in parts:
            name, sep, cats = part.partition("=")
            if not sep or not name.strip():
                raise AnalysisError(f"Demographic {part!r}: write name=cat1,cat2 (several "
                                    "separated by ';').")
            mapping[name.strip()] = [c.strip() for c in cats.split(",") if c.strip()]
    else:
        mapping = {str(k): [str(c) for c in v] for k, v in spec.items()}
    if not mapping:
        raise AnalysisError("Give at least one demographic with its subcategories.")
    owner: dict[str, str] = {}
    for name, cats in mapping.items():
        if not cats:
            raise AnalysisError(f"Demographic {name!r} has no subcategories.")
        for c in cats:
            if c in owner and owner[c] != name:
                raise AnalysisError(f"Subcategory {c!r} is listed under {owner[c]!r} and "
                                    f"{name!r}; a subcategory belongs to one demographic.")
            owner[c] = name
    return {name: tuple(dict.fromkeys(cats)) for name, cats in mapping.items()}


def capsule_distribution(results: pd.DataFrame, category: str, cohort: str, *,
                         demographics: str | Mapping[str, Sequence[str]],
                         demographic_col: str | None = None, by: str | Sequence[str] = (),
                         renormalise: bool = False) -> pd.DataFrame:
    """Share of the answers in each subcategory, per demographic, ``by`` group and cohort.

    Parameters
    ----------
    results
        One row per answer: the category column (missing = not classified, left out),
        the cohort, the ``by`` factors and, with several demographics, ``demographic_col``.
    demographics
        Subcategories of each demographic (:func:`parse_demographics`).
    demographic_col
        Which demographic each row's prompt probes (values: the demographics' names).
        Needed when there is more than one demographic; without it, every row counts for
        the single demographic.
    by
        Prompts / roles: one distribution per (demographic, group).
    renormalise
        ``False`` (default): ``n`` = the answers with a known category, whatever it is,
        so answers in no subcategory ("neither") keep their place and the shares may add
        up to less than 100. ``True``: ``n`` = the answers in the demographic's
        subcategories (shares among them).

    Returns
    -------
    pandas.DataFrame
        One row per (demographic, ``by`` group, cohort, subcategory of that demographic),
        zeros included. Columns: ``demographic``, the ``by`` factors, the cohort, the
        category column, ``count``, ``n``, ``percent`` (100 x count / n) and ``n_other``
        (answers of the group and cohort counted in ``n`` but in none of the
        subcategories; 0 with ``renormalise``).

    Raises
    ------
    AnalysisError
        Missing columns; several demographics without ``demographic_col``; a demographic
        with no row.
    """
    demo = parse_demographics(demographics)
    by = [by] if isinstance(by, str) else list(by)
    needed = [category, cohort, *by, *([demographic_col] if demographic_col else [])]
    missing = [c for c in needed if c not in results.columns]
    if missing:
        raise AnalysisError(f"Not columns of the table: {', '.join(missing)}.")
    if demographic_col is None and len(demo) > 1:
        raise AnalysisError(f"{len(demo)} demographics ({', '.join(demo)}) share the column "
                            f"{category!r}: name the column that says which demographic each "
                            "row's prompt probes (demographic_col, --demographic-col).")
    keys = [*by, cohort]
    # integer codes of the whole columns (a value's label does not depend on the rows it is
    # read in), never a filtered copy of the table or one Python string per row
    coded = [factor_codes(results[k]) for k in keys]
    sizes = [max(len(values), 1) for _, values in coded]
    key = combine_codes([codes for codes, _ in coded], sizes, n=len(results))
    cat_codes, cat_values = factor_codes(results[category])
    known = results[category].notna().to_numpy()
    parts = []
    for name, cats in demo.items():
        rows = known if demographic_col is None else known & _text_is(
            results[demographic_col], name)
        if not rows.any():
            raise AnalysisError(f"No classified row for demographic {name!r}"
                                + (f" in {demographic_col!r}." if demographic_col else "."))
        # each row's subcategory: its position in cats, -1 for an answer in none of them
        position = np.array([cats.index(v) if v in cats else -1 for v in cat_values],
                            dtype=np.int64)[cat_codes]
        if renormalise:
            rows = rows & (position >= 0)
        groups, inverse = np.unique(key[rows], return_inverse=True)
        inverse = inverse.reshape(-1)
        inside = position[rows] >= 0
        k = len(cats)
        counts = np.bincount(inverse[inside] * k + position[rows][inside],
                             minlength=len(groups) * k)
        totals = np.bincount(inverse, minlength=len(groups))
        long = pd.DataFrame({
            c: np.asarray(values, dtype=object)[np.repeat(d, k)]
            for c, d, (_, values) in zip(keys, split_codes(groups, sizes), coded, strict=True)})
        long[N] = np.repeat(totals, k)
        long[category] = np.tile(np.asarray(list(cats), dtype=object), len(groups))
        long[COUNT] = counts
        long[DEMOGRAPHIC] = name
        parts.append(long)
    out = pd.concat(parts, ignore_index=True)
    all_cats = [c for cats in demo.values() for c in cats]
    out[category] = pd.Categorical(out[category], categories=all_cats, ordered=True)
    for k in keys:
        present = set(out[k])
        out[k] = pd.Categorical(out[k], categories=[v for v in _order(results[k])
                                                    if v in present], ordered=True)
    out[DEMOGRAPHIC] = pd.Categorical(out[DEMOGRAPHIC], categories=list(demo), ordered=True)
    out[COUNT] = out[COUNT].astype(np.int64)
    out[N] = out[N].astype(np.int64)
    out[PERCENT] = 100.0 * out[COUNT] / out[N]
    shown = out.groupby([DEMOGRAPHIC, *by, cohort], observed=True)[COUNT].transform("sum")
    out[N_OTHER] = (out[N] - shown).astype(np.int64)
    out = out.sort_values([DEMOGRAPHIC, *by, cohort, category], kind="stable")
    return out[[DEMOGRAPHIC, *by, cohort, category, COUNT, N, PERCENT, N_OTHER]].reset_index(
        drop=True)


def _text_is(s: pd.Series, name: str) -> np.ndarray:
    """``s.astype(str) == name`` (missing: False), the text made once per distinct value."""
    codes, _ = pd.factorize(s, use_na_sentinel=False)
    first = np.zeros(codes.max() + 1 if len(codes) else 0, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes))[::-1]  # each value's first row
    same = (s.iloc[first].astype(str) == name).to_numpy(dtype=bool, na_value=False)
    return same[codes]


def _order(s: pd.Series) -> list[str]:
    """A factor's values in its order (declared order for categoricals)."""
    return factor_codes(s)[1]


def capsule_spread(dist: pd.DataFrame, category: str, cohort: str, *,
                   by: str | Sequence[str] = (), ddof: int = 1) -> pd.DataFrame:
    """Standard deviation of the subcategory percentages within each demographic.

    Per (demographic, ``by`` group, cohort) over that demographic's own subcategories
    (0 % included), and per (demographic, ``by`` group) pooled over all cohorts
    (``cohort == "all"``: the SD of every subcategory percentage of every cohort, our
    reading of the study's "standard deviation of subcategory frequencies for each
    demographic across all decades").

    Returns
    -------
    pandas.DataFrame
        ``demographic``, the ``by`` factors, the cohort (a cohort's name or ``all``),
        ``n_categories``, ``sd_percent``, ``min_percent``, ``max_percent``.
    """
    by = [by] if isinstance(by, str) else list(by)
    agg = {N_CATEGORIES: (PERCENT, "count"), SD_PERCENT: (PERCENT, lambda s: s.std(ddof=ddof)),
           MIN_PERCENT: (PERCENT, "min"), MAX_PERCENT: (PERCENT, "max")}
    per = dist.groupby([DEMOGRAPHIC, *by, cohort], observed=True, sort=True).agg(**agg)
    per = per.reset_index()
    per[cohort] = per[cohort].astype(str)
    pooled = dist.groupby([DEMOGRAPHIC, *by], observed=True, sort=True).agg(**agg)
    pooled = pooled.reset_index().assign(**{cohort: "all"})
    out = pd.concat([per, pooled[per.columns]], ignore_index=True)
    out[N_CATEGORIES] = out[N_CATEGORIES].astype(np.int64)
    return out.sort_values([DEMOGRAPHIC, *by], kind="stable").reset_index(drop=True)


def kruskal_binary(ones: Sequence[int], sizes: Sequence[int]) -> tuple[float, int]:
    """Tie-corrected Kruskal-Wallis H of 0/1 observations given per group as counts.

    ``ones[i]`` of the ``sizes[i]`` observations of group i are 1. Returns ``(H, df)``;
    H is NaN when every observation is equal (scipy raises there) or a group is empty.
    """
    m, n = np.asarray(ones, dtype=float), np.asarray(sizes, dtype=float)
    total, ones_total = n.sum(), m.sum()
    k = len(n)
    if k < 2 or np.any(n <= 0) or ones_total in (0, total):
        return float("nan"), k - 1
    zeros_total = total - ones_total
    rank0, rank1 = (zeros_total + 1) / 2, zeros_total + (ones_total + 1) / 2
    r = (n - m) * rank0 + m * rank1
    h = 12 / (total * (total + 1)) * float((r ** 2 / n).sum()) - 3 * (total + 1)
    ties = 1 - (zeros_total ** 3 - zeros_total + ones_total ** 3 - ones_total) / (
        total ** 3 - total)
    return h / ties, k - 1


def kruskal_across_cohorts(dist: pd.DataFrame, category: str, cohort: str, *,
                           by: str | Sequence[str] = ()) -> pd.DataFrame:
    """Kruskal-Wallis test per subcategory: does its share differ between cohorts?

    Parameters
    ----------
    dist
        Output of :func:`capsule_distribution` (the denominators ``n`` decide which
        answers are observations: with the default, the answers in no subcategory too).

    Returns
    -------
    pandas.DataFrame
        One row per (demographic, ``by`` group, subcategory): ``demographic``, the ``by``
        factors, the category, ``n`` (answers), ``count`` (in the subcategory),
        ``n_cohorts``, ``statistic`` (H, tie-corrected), ``df``, ``p_value`` (chi-square
        with df = cohorts - 1) and ``note`` (why there is no test).
    """
    from scipy import stats

    by = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, sub in dist.groupby([DEMOGRAPHIC, *by, category], observed=True, sort=True):
        sub = sub[sub[N] > 0]
        h, df = kruskal_binary(sub[COUNT].to_numpy(), sub[N].to_numpy())
        note = ""
        if len(sub) < 2:
            note = "needs at least two cohorts"
        elif not np.isfinite(h):
            note = "every answer is alike (the share is 0 % or 100 % in every cohort)"
        rows.append({**dict(zip([DEMOGRAPHIC, *by, category], key, strict=True)),
                     N: int(sub[N].sum()), COUNT: int(sub[COUNT].sum()), N_COHORTS: len(sub),
                     STATISTIC: h, DF: df, P_VALUE: float(stats.chi2.sf(h, df))
                     if np.isfinite(h) else float("nan"), NOTE: note})
    return pd.DataFrame(rows)


def kruskal_among_subcategories(dist: pd.DataFrame, category: str, cohort: str, *,
                                by: str | Sequence[str] = ()) -> pd.DataFrame:
    """Kruskal-Wallis test per prompt: do its subcategories get different shares?

    The observations of a subcategory are its percentages in the cohorts (one per cohort,
    as printed in the study's tables); the groups are the subcategories of one
    (demographic, ``by`` group). This is the reading under which the time-capsule paper's
    Table 4 note ("all subcategories show response distributions that are statistically
    significantly different from others in the same prompt (Kruskal-Wallis)") holds: on
    Table 4's percentages p < 0.003 for all four prompts (``docs/cohorts.md``).
    ``scipy.stats.kruskal`` (tie-corrected).

    Returns
    -------
    pandas.DataFrame
        One row per (demographic, ``by`` group): ``demographic``, the ``by`` factors,
        ``n`` (answers), ``n_subcategories``, ``n_cohorts``, ``statistic`` (H), ``df``, ``p_value``,
        ``note`` (why there is no test).
    """
    from scipy import stats

    by = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, sub in dist.groupby([DEMOGRAPHIC, *by], observed=True, sort=True):
        sub = sub[sub[N] > 0]
        samples = [g[PERCENT].to_numpy(dtype=float)
                   for _, g in sub.groupby(category, observed=True, sort=True)]
        samples = [x for x in samples if len(x)]
        h = p = float("nan")
        note = ""
        if len(samples) < 2:
            note = "needs at least two subcategories"
        elif len(np.unique(np.concatenate(samples))) < 2:
            note = "every percentage is the same"
        else:
            h, p = (float(v) for v in stats.kruskal(*samples))
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip([DEMOGRAPHIC, *by], key, strict=True)),
                     N: int(sub.drop_duplicates(cohort)[N].sum()),
                     N_SUBCATEGORIES: len(samples),
                     N_COHORTS: int(sub[cohort].nunique()) if len(sub) else 0,
                     STATISTIC: h, DF: len(samples) - 1, P_VALUE: p, NOTE: note})
    return pd.DataFrame(rows)


def capsule_tests(dist: pd.DataFrame, category: str, cohort: str, *,
                  by: str | Sequence[str] = (), method: dm.TestMethod = "auto",
                  seed: int | None = 0, adjust: str = CAPSULE_ADJUST) -> pd.DataFrame:
    """Kruskal-Wallis per subcategory across cohorts, Kruskal-Wallis among the
    subcategories of each prompt, and the chi-square test per group, side by side.

    Returns
    -------
    pandas.DataFrame
        ``test`` (``Kruskal-Wallis`` / ``Kruskal-Wallis among subcategories`` /
        ``chi-square``), ``question`` (what it answers, :data:`QUESTIONS`),
        ``demographic``, the ``by`` factors, the category (``(all)`` for the rows about a
        whole prompt), ``n``, ``count`` (answers in the subcategory; empty otherwise),
        ``statistic``, ``df``, ``p_value``, ``p_adjusted`` (by ``adjust``, default
        Benjamini-Hochberg, over the rows of the same test), ``note`` (for chi-square:
        the method, or why Monte Carlo was used).
    """
    from analysis.multiple_testing import adjust_p, check_method

    check_method(adjust)
    by = [by] if isinstance(by, str) else list(by)
    kw = kruskal_across_cohorts(dist, category, cohort, by=by).assign(
        **{TEST: KRUSKAL, QUESTION: QUESTIONS[KRUSKAL]})
    chi = dm.homogeneity_test(dist, category, cohort, by=[DEMOGRAPHIC, *by], method=method,
                              seed=seed)
    chi = chi.assign(**{TEST: CHI_SQUARE, QUESTION: QUESTIONS[CHI_SQUARE],
                        category: ALL_CATEGORIES})
    chi[NOTE] = chi[NOTE].where(chi[NOTE] != "", chi["method"])
    chi[COUNT] = np.nan
    among = kruskal_among_subcategories(dist, category, cohort, by=by).assign(
        **{TEST: KRUSKAL_AMONG, QUESTION: QUESTIONS[KRUSKAL_AMONG], category: ALL_CATEGORIES,
           COUNT: np.nan})
    columns = [TEST, QUESTION, DEMOGRAPHIC, *by, category, N, COUNT, STATISTIC, DF, P_VALUE,
               P_ADJUSTED, NOTE]
    parts = []
    for frame in (kw, among, chi):
        if not len(frame):
            continue
        frame = frame.copy()
        frame[P_ADJUSTED] = adjust_p(frame[P_VALUE].to_numpy(dtype=float), adjust)
        for c in (DEMOGRAPHIC, *by, category):
            frame[c] = frame[c].astype(str)
        parts.append(frame[columns])
    return pd.concat(parts, ignore_index=True)


def capsule_table(dist: pd.DataFrame, category: str, cohort: str, *,
                  by: str | Sequence[str] = (), tests: pd.DataFrame | None = None,
                  alpha: float = 0.05, star: str = "across_cohorts",
                  adjust: str = CAPSULE_ADJUST) -> pd.DataFrame:
    """The shares as the study prints them: one row per cohort, one column per
    (demographic, ``by`` group, subcategory), percentages.

    With ``tests`` (:func:`kruskal_across_cohorts` or :func:`capsule_tests`), a
    subcategory is marked ``*`` when its test's p-value is below ``alpha`` and ``*†``
    when its adjusted p-value (``p_adjusted``, over the table's tests of that kind; a
    table without it: adjusted here by ``adjust``, default Benjamini-Hochberg) is too.
    ``star="across_cohorts"`` (default): the subcategory's share differs between cohorts
    (Kruskal-Wallis per subcategory); ``"among_subcategories"``: every subcategory of a
    prompt whose subcategories differ (the paper's Table 4 note,
    :func:`kruskal_among_subcategories`; needs :func:`capsule_tests`).

    Returns
    -------
    pandas.DataFrame
        Index: the cohorts in order; columns: a MultiIndex ``demographic``, the ``by``
        factors, the category.
    """
    from analysis.multiple_testing import adjust_p

    by = [by] if isinstance(by, str) else list(by)
    if star not in ("across_cohorts", "among_subcategories"):
        raise AnalysisError(f"star is across_cohorts or among_subcategories, not {star!r}.")
    marks: dict[tuple, str] = {}
    if tests is not None:
        wanted = KRUSKAL if star == "across_cohorts" else KRUSKAL_AMONG
        if TEST in tests.columns:
            kw = tests[tests[TEST] == wanted]
        elif star == "across_cohorts":
            kw = tests
        else:
            raise AnalysisError("star='among_subcategories' needs capsule_tests(...).")
        adjusted = (kw[P_ADJUSTED].to_numpy(dtype=float) if P_ADJUSTED in kw.columns
                    else adjust_p(kw[P_VALUE].to_numpy(dtype=float), adjust))
        for (_, row), p_adj in zip(kw.iterrows(), adjusted, strict=True):
            if row[P_VALUE] < alpha:
                key = tuple(str(row[c]) for c in (DEMOGRAPHIC, *by))
                key += (str(row[category]),) if star == "across_cohorts" else ()
                marks[key] = "*" + (BH_MARK if p_adj < alpha else "")
    labels = dist[category].astype(str)
    keys = [tuple(str(v) for v in t) for t in dist[[DEMOGRAPHIC, *by]].itertuples(
        index=False, name=None)]
    shown = [c + marks.get((*k, c) if star == "across_cohorts" else k, "")
             for k, c in zip(keys, labels, strict=True)]
    frame = dist.assign(_label=shown)
    frame["_order"] = np.arange(len(frame))
    order = frame.drop_duplicates([DEMOGRAPHIC, *by, "_label"]).sort_values("_order")
    wide = frame.pivot_table(index=cohort, columns=[DEMOGRAPHIC, *by, "_label"],
                             values=PERCENT, observed=True, sort=False)
    columns = [tuple(r) for r in order[[DEMOGRAPHIC, *by, "_label"]].itertuples(
        index=False, name=None)]
    wide = wide.reindex(columns=pd.MultiIndex.from_tuples(
        columns, names=[DEMOGRAPHIC, *by, category]))
    return wide.reindex(sorted(wide.index, key=list(dist[cohort].cat.categories).index)
                        if isinstance(dist[cohort].dtype, pd.CategoricalDtype) else wide.index)
