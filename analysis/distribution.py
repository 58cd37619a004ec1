"""A categorical outcome across cohorts: the "time capsule" analysis (``methods.md`` s. 7).

Each response is classified into one category of a categorical outcome (which group a
completion portrays: woman / man / non-binary / unclassified; which answer a QA model
chose: stereotyped group / non-stereotyped group / unknown). This module tabulates the
categories per cohort (decade of training data, model, fine-tuned vs pre-trained,
prompt format), optionally within roles or prompts (``by``), measures how unevenly the
categories are represented (standard deviation of their percentages) and tests whether
the distribution is the same in every cohort (chi-square test of homogeneity).

Decisions (``docs/cohorts.md``): percentages are 0-100 of the rows of a cohort (within
a ``by`` group) whose category is known; rows with a missing category are left out;
a category with no row in a ``by`` group is absent from that group: left out of its
spread and of its test alike (a category seen in the group but not in one cohort counts as
0 % there, in both); standard deviations use ``ddof=1`` by default, like the rest of the
app; the chi-square test has no
continuity correction, and when expected counts are small (Cochran's rule: any expected
count below 1, or more than 20 % below 5) ``method="auto"`` switches to a Monte Carlo
p-value with the margins fixed (``scipy.stats.chi2_contingency`` with a
``MonteCarloMethod``; tables drawn by ``scipy.stats.random_table``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np
import pandas as pd

from analysis.columns import (
    COUNT,
    CRAMERS_V,
    DF,
    MAX_PERCENT,
    METHOD,
    MIN_EXPECTED_COUNT,
    MIN_PERCENT,
    N_CATEGORIES,
    N_COHORTS,
    N_RESAMPLES,
    NOTE,
    P_VALUE,
    PERCENT,
    SD_PERCENT,
    SHARE_EXPECTED_BELOW_5,
    STATISTIC,
    N,
)
from analysis.errors import AnalysisError
from analysis.labels import category_label  # re-exported: a label, not a statistic
from analysis.values import combine_codes, factor_codes, split_codes

__all__ = [
    "DEFAULT_RESAMPLES", "MAX_CATEGORIES", "SPREADS", "SpreadOver", "TEST_METHODS",
    "TestMethod", "category_distribution", "category_label", "frequency_spread",
    "homogeneity_test", "percentage_table", "wide_column_names",
]


TestMethod = Literal["auto", "chi2", "monte_carlo"]
TEST_METHODS: tuple[str, ...] = get_args(TestMethod)
SpreadOver = Literal["categories", "cohorts"]
SPREADS: tuple[str, ...] = get_args(SpreadOver)
#: A category column with more distinct values than this is refused (free text).
MAX_CATEGORIES = 50
#: Monte Carlo tables of :func:`homogeneity_test` (declared with the options:
#: ``analysis/options/cohorts.py``).
from analysis.options.cohorts import CohortsOptions as _Options  # noqa: E402

_DEFAULT = _Options()
DEFAULT_RESAMPLES: int = _DEFAULT.n_resamples


def _check(results: pd.DataFrame, category: str, cohort: str, by: Sequence[str]) -> list[str]:
    by = [by] if isinstance(by, str) else list(by)
    cols = [category, cohort, *by]
    missing = [c for c in cols if c not in results.columns]
    if missing:
        raise AnalysisError(f"Not columns of the table: {', '.join(missing)}.")
    if len(set(cols)) < len(cols):
        raise AnalysisError("The category column, the cohort factor and the grouping factors "
                            "must all differ.")
    from analysis.names import check_no_clash

    check_no_clash(cols, "column", reserved=(COUNT, N, PERCENT, N_CATEGORIES, N_COHORTS,
                                             SD_PERCENT, MIN_PERCENT, MAX_PERCENT, NOTE))
    return by


def category_distribution(
    results: pd.DataFrame,
    category: str,
    cohort: str,
    *,
    by: str | Sequence[str] = (),
    categories: Sequence[str] | None = None,
    renormalise: bool = False,
) -> pd.DataFrame:
    """Counts and percentages of each category per cohort (within each ``by`` group).

    Parameters
    ----------
    results
        The results table.
    category
        The categorical outcome column (at most 50 distinct values; missing values are
        left out).
    cohort
        The cohort factor (its value order is kept, so ordered cohorts such as decades
        plot in order).
    by
        Optional factors forming roles / prompts / demographics: one distribution per
        observed combination.
    categories
        Keep only these categories, in this order (default: every observed category, in
        the column's value order).
    renormalise
        ``False`` (default, the time-capsule study's shares): ``n`` counts every row of
        the cohort whose category is known, so the categories left out ("neither",
        "unclassified") still count and the kept percentages may add up to less than
        100. ``True``: ``n`` counts only the rows of the kept categories, so their
        percentages add up to 100 (shares among the kept ones).

    Returns
    -------
    pandas.DataFrame
        One row per (``by`` group, cohort, category), every category listed for every
        observed (group, cohort) even with count 0. Columns: one per ``by`` factor, the
        cohort, the category column, ``count``, ``n`` (rows of the cohort in the group
        with a known category; with ``renormalise``, with a kept category) and
        ``percent`` (100 x count / n). A (group, cohort) whose rows all fall in left-out
        categories is listed with counts 0.
    """
    by = _check(results, category, cohort, by)
    cat_codes, cat_values = factor_codes(results[category])
    known = ~results[category].isna().to_numpy()
    if categories is not None:
        categories = [str(c) for c in categories]
        unknown = [c for c in categories if c not in cat_values]
        if unknown:
            raise AnalysisError(f"Categories not found in {category!r}: {', '.join(unknown)} "
                                f"(values: {', '.join(cat_values[:12])}).")
        if not categories:
            raise AnalysisError("Keep at least one category.")
    else:
        observed = set(np.unique(cat_codes[known]))
        categories = [v for i, v in enumerate(cat_values) if i in observed]
    if len(categories) > MAX_CATEGORIES:
        raise AnalysisError(f"Column {category!r} has {len(categories)} categories: that looks "
                            f"like free text, not a categorical outcome (at most "
                            f"{MAX_CATEGORIES}).")
    keep_code = np.full(len(cat_values), -1, dtype=np.int64)
    for j, c in enumerate(categories):
        keep_code[cat_values.index(c)] = j
    every = bool(known.all())  # no missing category: no mask to apply (issue 44)
    cat_new = keep_code[cat_codes] if every else np.where(known, keep_code[cat_codes], -1)
    rows = cat_new >= 0
    if not rows.any():
        raise AnalysisError(f"No row has one of the chosen categories of {category!r}.")
    group_cols = [*by, cohort]
    parts = [factor_codes(results[c]) for c in group_cols]
    sizes = [max(len(v), 1) for _, v in parts]
    key = combine_codes([codes for codes, _ in parts], sizes, n=len(results))
    k = len(categories)
    base = rows if renormalise else known  # the rows the denominator n counts
    if every and (not renormalise or bool(rows.all())):  # every row counts: no copies
        key_base, cat_base = key, cat_new
    else:
        key_base, cat_base = key[base], cat_new[base]
    kept = cat_base >= 0
    if not bool(kept.all()):
        key_kept, cat_kept = key_base[kept], cat_base[kept]
    else:
        key_kept, cat_kept = key_base, cat_base
    space = math.prod(sizes)
    if key.dtype != object and space <= max(len(key), 1 << 16):
        # few possible groups: count per possible key, keep those that occur (the same
        # sorted keys and counts as np.unique, without sorting the rows)
        per_key = np.bincount(key_kept * k + cat_kept,
                              minlength=space * k).reshape(space, k)
        all_totals = np.bincount(key_base, minlength=space)
        uniq = np.flatnonzero(all_totals)
        counts, totals = per_key[uniq], all_totals[uniq]
    else:
        uniq, inverse = np.unique(key_base, return_inverse=True)
        inverse = inverse.reshape(-1)
        counts = np.bincount(inverse[kept] * k + cat_kept,
                             minlength=len(uniq) * k).reshape(len(uniq), k)
        totals = np.bincount(inverse, minlength=len(uniq))
    decoded = split_codes(uniq, sizes)
    out = pd.DataFrame({
        c: pd.Categorical.from_codes(np.repeat(d, k), categories=v, ordered=True)
        for c, d, (_, v) in zip(group_cols, decoded, parts, strict=True)})
    out[category] = pd.Categorical(np.tile(categories, len(uniq)), categories=categories,
                                   ordered=True)
    out[COUNT] = counts.reshape(-1).astype(np.int64)
    out[N] = np.repeat(totals, k).astype(np.int64)
    out[PERCENT] = 100.0 * out[COUNT] / out[N]
    return out


def wide_column_names(categories: Sequence[str], category: str, index: Sequence[str]
                      ) -> dict[str, str]:
    """The column of each category in :func:`percentage_table`: ``{category value: name}``.

    The plain category value when every value is safe as a column name. When one is not
    (it equals a column of the table: a ``by`` factor, the cohort or ``n``; it is empty;
    it has leading or trailing spaces, so it would read like another), *every* category
    column is named ``<category column>=<value>`` (``answer=model``, ``answer=""``,
    ``answer=" A"``, see :func:`category_label`), so one table never mixes the two styles.
    Values that differ only by case stay distinct columns (``A`` and ``a``). A name still
    taken after that gets ``_`` appended.
    """
    values = [str(c) for c in categories]
    taken = {str(c) for c in index} | {N}
    unsafe = any(v in taken or category_label(v) != v for v in values)
    names: dict[str, str] = {}
    for v in values:
        name = f"{category}={category_label(v)}" if unsafe else v
        while name in taken:
            name += "_"
        taken.add(name)
        names[v] = name
    return names


def percentage_table(dist: pd.DataFrame, category: str, cohort: str, *,
                     by: str | Sequence[str] = ()) -> pd.DataFrame:
    """The distribution as a wide table: one row per (``by`` group, cohort), one column per
    category holding its percentage, plus ``n``.

    Returns
    -------
    pandas.DataFrame
        Columns: the ``by`` factors, the cohort, one column per category (named by
        :func:`wide_column_names`: the category itself, or ``<category>=<value>`` for every
        category when one value would clash with another column, is empty or has
        surrounding spaces) and ``n``.
    """
    by = [by] if isinstance(by, str) else list(by)
    index = [*by, cohort]
    wide = dist.pivot_table(index=index, columns=category, values=PERCENT, observed=True,
                            sort=True)
    names = wide_column_names([str(c) for c in wide.columns], category, index)
    wide.columns = [names[str(c)] for c in wide.columns]
    n = dist.groupby(index, observed=True, sort=True)[N].first()
    wide[N] = n
    return wide.reset_index()


def _present(dist: pd.DataFrame, category: str, by: Sequence[str]) -> np.ndarray:
    """Rows of ``dist`` whose category has at least one row in its ``by`` group: the one
    rule for absent categories, shared by :func:`frequency_spread` and
    :func:`homogeneity_test`."""
    keys = [*by, category]
    total = dist.groupby(keys, observed=True, sort=False)[COUNT].transform("sum")
    return total.to_numpy() > 0


def _absent_note(dist: pd.DataFrame, category: str, by: Sequence[str]) -> pd.DataFrame:
    """Per ``by`` group, the categories left out because they have no row in it."""
    gone = dist[~_present(dist, category, by)]
    if not by:
        return pd.DataFrame({NOTE: [_note(sorted({str(c) for c in gone[category]}))]})
    names: dict[tuple, set[str]] = {}
    for key, c in zip(gone[list(by)].itertuples(index=False, name=None),
                      gone[category].astype(str), strict=True):
        names.setdefault(key, set()).add(c)
    out = pd.DataFrame(list(names), columns=list(by))
    for b in by:
        out[b] = out[b].astype(dist[b].dtype)
    out[NOTE] = pd.Series([_note(sorted(v)) for v in names.values()], dtype=object)
    return out


def _note(names: list[str]) -> str:
    return f"no row in this group, left out: {', '.join(names)}" if names else ""


def frequency_spread(dist: pd.DataFrame, category: str, cohort: str, *,
                     by: str | Sequence[str] = (), over: SpreadOver = "categories",
                     ddof: int = 1) -> pd.DataFrame:
    """Standard deviation of the category percentages (``methods.md`` s. 7).

    Parameters
    ----------
    dist
        Output of :func:`category_distribution` with the same ``category``, ``cohort``
        and ``by``.
    over
        ``"categories"``: per (``by`` group, cohort), the spread of the percentages of the
        categories: 0 when every category is equally frequent, large when one dominates
        (the "standard deviation of subcategory frequencies" of the time-capsule study).
        ``"cohorts"``: per (``by`` group, category), the spread of its percentage across
        cohorts: how much the cohorts disagree about that category.
    ddof
        Delta degrees of freedom of the standard deviation (default 1, the sample SD).

    Categories with no row in a ``by`` group are left out of that group's spread, as
    they are of its chi-square test (a category seen in the group but not in one of its
    cohorts counts as 0 % in that cohort).

    Returns
    -------
    pandas.DataFrame
        ``over="categories"``: the ``by`` factors, the cohort, ``n_categories``,
        ``sd_percent``, ``min_percent``, ``max_percent`` and ``note`` (the categories
        left out). ``over="cohorts"``: the ``by`` factors, the category, ``n_cohorts``,
        ``sd_percent``, ``min_percent``, ``max_percent``.
    """
    by = [by] if isinstance(by, str) else list(by)
    if over not in SPREADS:
        raise AnalysisError(f"Unknown spread {over!r}: use one of {', '.join(SPREADS)}.")
    keys = [*by, cohort] if over == "categories" else [*by, category]
    count_col = N_CATEGORIES if over == "categories" else N_COHORTS
    g = dist[_present(dist, category, by)].groupby(keys, observed=True, sort=True)[PERCENT]
    out = g.agg(**{count_col: "count", SD_PERCENT: lambda s: s.std(ddof=ddof),
                   MIN_PERCENT: "min", MAX_PERCENT: "max"}).reset_index()
    out[count_col] = out[count_col].astype(np.int64)
    if over == "categories":
        notes = _absent_note(dist, category, by)
        out = (out.merge(notes, on=by, how="left") if by else out.assign(
            **{NOTE: notes[NOTE].iloc[0]}))
        out[NOTE] = out[NOTE].astype(object).where(out[NOTE].notna(), "")
    return out


def _with_other(table: pd.DataFrame, sub: pd.DataFrame, cohort: str) -> np.ndarray:
    """The cohort x category counts plus, when the shares keep left-out categories (``n``
    larger than the kept counts), one more column with those rows ("other"), so the test
    compares the distributions the percentages show."""
    cohorts = sub.groupby(cohort, observed=True, sort=True)
    other = (cohorts[N].first() - cohorts[COUNT].sum()).reindex(table.index).fillna(0)
    counts = table.to_numpy(dtype=np.int64)
    if (other > 0).any():
        counts = np.column_stack([counts, other.to_numpy(dtype=np.int64)])
    return counts


def _cramers_v(chi2: float, n: int, shape: tuple[int, int]) -> float:
    m = min(shape) - 1
    return float(np.sqrt(chi2 / (n * m))) if m > 0 and n > 0 else float("nan")


def homogeneity_test(
    dist: pd.DataFrame,
    category: str,
    cohort: str,
    *,
    by: str | Sequence[str] = (),
    method: TestMethod = _DEFAULT.method,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = _DEFAULT.seed,
) -> pd.DataFrame:
    """Chi-square test that every cohort has the same category distribution.

    For each ``by`` group, the cohort x category table of counts (cohorts and categories
    with no row in the group left out) is tested with Pearson's chi-square, no
    continuity correction (``scipy.stats.chi2_contingency(..., correction=False)``).
    When the shares keep rows of left-out categories (``renormalise=False`` with chosen
    categories) those rows form one more column, "other". The question it answers: is the
    whole distribution of categories the same in every cohort? (For one category at a
    time, as in the time-capsule study, see :func:`analysis.capsules.kruskal_across_cohorts`.)

    Parameters
    ----------
    dist
        Output of :func:`category_distribution`.
    method
        ``"chi2"``: the asymptotic chi-square p-value (with a note when expected counts
        are small). ``"monte_carlo"``: the p-value of the same statistic over
        ``n_resamples`` tables with the observed margins, ``(b + 1) / (m + 1)``.
        ``"auto"``: chi-square unless Cochran's rule fails (an expected count below 1,
        or more than 20 % of them below 5), then Monte Carlo.
    seed
        Seed of the Monte Carlo draws.

    Returns
    -------
    pandas.DataFrame
        One row per ``by`` group (one row when ``by`` is empty): the ``by`` factors,
        ``n``, ``n_cohorts``, ``n_categories``, ``statistic`` (chi-square), ``df``,
        ``p_value``, ``method`` ("chi-square" or "Monte Carlo"), ``n_resamples`` (0 for
        chi-square), ``min_expected``, ``share_expected_below_5``, ``cramers_v`` and
        ``note``. A group with fewer than two cohorts or categories has no test (NaN and
        a note).
    """
    from scipy import stats  # lazy: keeps the CLI's start fast

    by = [by] if isinstance(by, str) else list(by)
    if method not in TEST_METHODS:
        raise AnalysisError(f"Unknown method {method!r}: use one of {', '.join(TEST_METHODS)}.")
    if method != "chi2" and int(n_resamples) < 1:
        raise AnalysisError("The Monte Carlo test needs at least one resample.")
    groups = dist.groupby(by, observed=True, sort=True) if by else [((), dist)]
    rows = []
    for key, sub in groups:
        key = key if isinstance(key, tuple) else (key,)
        sub = sub[_present(sub, category, [])]  # the rule of frequency_spread
        table = sub.pivot_table(index=cohort, columns=category, values=COUNT, aggfunc="sum",
                                observed=True, fill_value=0)
        table = _with_other(table, sub, cohort)
        table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
        row = dict(zip(by, key, strict=True))
        n = int(table.sum())
        row.update({N: n, N_COHORTS: table.shape[0], N_CATEGORIES: table.shape[1]})
        if min(table.shape) < 2:
            row.update({STATISTIC: np.nan, DF: np.nan, P_VALUE: np.nan, METHOD: "none",
                        N_RESAMPLES: 0, MIN_EXPECTED_COUNT: np.nan,
                        SHARE_EXPECTED_BELOW_5: np.nan, CRAMERS_V: np.nan,
                        NOTE: "needs at least two cohorts and two categories with rows"})
            rows.append(row)
            continue
        res = stats.chi2_contingency(table, correction=False)
        expected = res.expected_freq
        below5 = float(np.mean(expected < 5))
        small = bool(expected.min() < 1 or below5 > 0.2)
        use_mc = method == "monte_carlo" or (method == "auto" and small)
        note = ""
        p = float(res.pvalue)
        if use_mc:
            mc = stats.chi2_contingency(table, correction=False, method=stats.MonteCarloMethod(
                n_resamples=int(n_resamples), rng=np.random.default_rng(seed)))
            p = float(mc.pvalue)
            if small:
                note = ("small expected counts (Cochran's rule fails): Monte Carlo p-value "
                        "with fixed margins")
        elif small:
            note = ("small expected counts (Cochran's rule fails): the chi-square p-value is "
                    "unreliable; use the Monte Carlo method")
        row.update({STATISTIC: float(res.statistic), DF: int(res.dof), P_VALUE: p,
                    METHOD: "Monte Carlo" if use_mc else "chi-square",
                    N_RESAMPLES: int(n_resamples) if use_mc else 0,
                    MIN_EXPECTED_COUNT: float(expected.min()), SHARE_EXPECTED_BELOW_5: below5,
                    CRAMERS_V: _cramers_v(float(res.statistic), n, table.shape), NOTE: note})
        rows.append(row)
    return pd.DataFrame(rows)
