"""The table path of the permutation tests (features with few distinct values).

A shuffle of the group labels is drawn as a groups x values table of counts with the value
counts and the group sizes as fixed margins (``analysis.disparity._ValueTable``). Checked
here: (a) on a tiny example, against the exact permutation distribution enumerated by
brute force (every labelling's statistic from its table equals the row path's; the drawn
tables follow the enumerated distribution; p-values match the exact ones), (b) against
the row path's p-values on a mid-size example within Monte Carlo error, (c) the size of
the test under the null by simulation, (d) which path runs, the observed statistics
identical on both paths, and seeds.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import disparity as dsp
from analysis.columns import COMPARED_WITH, DIFFERENCE, N_PERMUTATIONS, OBSERVED, P_VALUE

#: a tiny example: 11 rows, 5 distinct values, groups of 4, 4 and 3
TINY_X = np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 5, 5], dtype=float)
TINY_SIZES = (4, 4, 3)
TINY_OBSERVED = np.repeat([0, 1, 2], TINY_SIZES)[[0, 4, 1, 5, 2, 8, 6, 3, 9, 7, 10]]


def _tiny_frame() -> pd.DataFrame:
    return pd.DataFrame({"g": np.array(["a", "b", "c"])[TINY_OBSERVED], "f": TINY_X})


def _labellings() -> np.ndarray:
    """Every assignment of the 11 rows to groups of 4, 4 and 3 (11! / (4! 4! 3!) = 11,550),
    each as likely as the others under a uniform shuffle of the labels."""
    rows = range(len(TINY_X))
    out = []
    for a in itertools.combinations(rows, 4):
        left = [r for r in rows if r not in a]
        for b in itertools.combinations(left, 4):
            lab = np.full(len(TINY_X), 2)
            lab[list(a)], lab[list(b)] = 0, 1
            out.append(lab)
    return np.array(out)


def _tiny_stats():
    st = dsp._Stats(TINY_X, 3, (0.25, 0.75))
    st.counts = np.bincount(TINY_OBSERVED, minlength=3).astype(float)
    return st


def _table_of(st, labels_sorted: np.ndarray, d: int) -> np.ndarray:
    values = np.unique(st.xs, return_inverse=True)[1]
    return np.bincount(labels_sorted * d + values, minlength=3 * d).reshape(3, d)


@pytest.fixture(scope="module")
def enumerated():
    """Per labelling: its table (as a tuple) and the sorted labels."""
    st = _tiny_stats()
    labs = _labellings()
    assert len(labs) == math.factorial(11) // (math.factorial(4) ** 2 * math.factorial(3))
    sorted_labels = labs[:, st.order]
    tables = [tuple(_table_of(st, s, 5).ravel()) for s in sorted_labels]
    return st, sorted_labels, tables


def _value_table(st, monkeypatch):
    monkeypatch.setattr(dsp, "TABLE_ROWS_PER_CELL", 0)  # the tiny example takes the table
    table = dsp._ValueTable.of(st, st.sorted_labels(TINY_OBSERVED))
    assert table is not None and table.values.tolist() == [0, 1, 2, 3, 5]
    return table


# --- (a) the exact permutation distribution, by brute force ------------------------------------
@pytest.mark.parametrize("rest", [True, False])
@pytest.mark.parametrize("statistic", dsp.STATISTICS)
def test_every_labelling_gives_the_row_paths_statistic(enumerated, monkeypatch, statistic,
                                                       rest):
    st, sorted_labels, tables = enumerated
    table = _value_table(st, monkeypatch)
    as_tables = np.array(tables).reshape(-1, 3, 5)
    got = table.difference(st, statistic, as_tables, rest=rest)
    for i in range(0, len(sorted_labels), 37):  # a spread of the 11,550 labellings
        own = st.of_groups(statistic, sorted_labels[i].astype(np.int16), rest=rest)
        want = own[0] - own[1] if rest else own - st.overall(statistic)
        np.testing.assert_allclose(got[i], want, rtol=1e-9, atol=1e-12)


def test_drawn_tables_follow_the_enumerated_distribution(enumerated, monkeypatch):
    st, _, tables = enumerated
    table = _value_table(st, monkeypatch)
    exact = pd.Series(tables).value_counts() / len(tables)
    rng = np.random.default_rng(12)
    draws = 60_000
    drawn = table.draw(rng, draws)
    assert (drawn.sum(axis=2) == np.array(TINY_SIZES)).all()  # the margins are fixed
    assert (drawn.sum(axis=1) == table.counts).all()
    seen = pd.Series([tuple(t.ravel()) for t in drawn]).value_counts()
    assert set(seen.index) <= set(exact.index)  # only tables a labelling can give
    expected = exact * draws
    big = expected[expected >= 5].index  # the rarer tables pooled into one cell
    observed = [seen.get(t, 0) for t in big]
    want = list(expected[big])
    if len(big) < len(expected):
        observed.append(draws - sum(observed))
        want.append(draws - sum(want))
    assert len(big) > 100
    assert stats.chisquare(observed, want).pvalue > 1e-3


@pytest.mark.parametrize("statistic", ["mean", "median", "variance", "quantile_range"])
def test_table_p_values_match_the_exact_permutation_p_values(enumerated, monkeypatch,
                                                             statistic):
    st, sorted_labels, tables = enumerated
    table = _value_table(st, monkeypatch)
    t_all = table.difference(st, statistic, np.array(tables).reshape(-1, 3, 5), rest=True)
    t_obs = table.difference(st, statistic, table.observed[None], rest=True)[0]
    exact = (np.abs(t_all) >= np.abs(t_obs) - 1e-12).mean(axis=0)  # P(|T*| >= |T|)
    m = 20_000
    out, path = dsp.permutation_test(_tiny_frame(), "f", "g", statistic=statistic,
                                     n_resamples=m, seed=3, adaptive=False, return_path=True)
    assert path == "table"
    p_hat = out[P_VALUE].to_numpy() * (m + 1) / m - 1 / m  # b / m
    se = np.sqrt(exact * (1 - exact) / m)
    assert np.all(np.abs(p_hat - exact) <= 4.5 * se + 1e-9), (p_hat, exact)


# --- (b) the row path's p-values, within Monte Carlo error ---------------------------------------
def _judge_scores(n: int, shift: float, seed: int) -> pd.DataFrame:
    """Judge-like scores 1..5 in 4 groups; group d's scores lean up by ``shift``."""
    rng = np.random.default_rng(seed)
    g = rng.choice(list("abcd"), n, p=[0.4, 0.3, 0.2, 0.1])
    probs = np.array([0.1, 0.2, 0.4, 0.2, 0.1])
    up = np.array([0.05, 0.15, 0.4, 0.25, 0.15])
    score = np.where(g == "d", rng.choice(5, n, p=(1 - shift) * probs + shift * up),
                     rng.choice(5, n, p=probs)) + 1
    return pd.DataFrame({"g": g, "f": score.astype(float)})


@pytest.mark.parametrize("statistic,compare", [("mean", "rest"), ("variance", "rest"),
                                               ("median", "overall"), ("skewness", "rest")])
def test_table_and_row_paths_agree_within_monte_carlo_error(monkeypatch, statistic, compare):
    frame = _judge_scores(3_000, 0.5, 1)
    m = 3_000
    table, by_table = dsp.permutation_test(frame, "f", "g", statistic=statistic,
                                           compare=compare, n_resamples=m, seed=5,
                                           adaptive=False, return_path=True)
    monkeypatch.setattr(dsp, "TABLE_CELLS", 0)
    rows, by_rows = dsp.permutation_test(frame, "f", "g", statistic=statistic, compare=compare,
                                         n_resamples=m, seed=5, adaptive=False,
                                         return_path=True)
    assert (by_table, by_rows) == ("table", "rows")
    p, q = table[P_VALUE].to_numpy(), rows[P_VALUE].to_numpy()
    se = np.sqrt(np.maximum(p * (1 - p), 1 / m) * 2 / m)  # two independent estimates
    assert np.all(np.abs(p - q) <= 4.5 * se), (p, q)
    assert not np.array_equal(p, q) or statistic == "median"  # another stream


# --- (c) size under the null --------------------------------------------------------------------
def test_size_under_the_null_by_simulation():
    """500 null data sets (the same score distribution in every group): the first
    group's p <= 0.05 at most 5 % of the time (exact test), and not far below."""
    rng = np.random.default_rng(2024)
    rejections = 0
    for i in range(500):
        frame = pd.DataFrame({"g": rng.choice(list("abc"), 600),
                              "f": rng.choice(5, 600, p=[0.1, 0.2, 0.4, 0.2, 0.1]) + 1.0})
        out, path = dsp.permutation_test(frame, "f", "g", n_resamples=99, seed=i,
                                         adaptive=False, return_path=True)
        assert path == "table"
        rejections += out[P_VALUE].iloc[0] <= 0.05
    rate = rejections / 500
    assert 0.025 <= rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 500), rate


# --- (d) the path, the observed numbers, seeds ---------------------------------------------------
def test_which_path_runs():
    few = _judge_scores(600, 0.0, 2)  # 5 values x 4 groups x 32 = 640 > 600 rows: rows
    assert dsp.permutation_test(few, "f", "g", n_resamples=9, return_path=True)[1] == "rows"
    more = _judge_scores(640, 0.0, 2)
    assert dsp.permutation_test(more, "f", "g", n_resamples=9, return_path=True)[1] == "table"
    continuous = more.assign(f=np.random.default_rng(0).normal(size=len(more)))
    assert dsp.permutation_test(continuous, "f", "g", n_resamples=9,
                                return_path=True)[1] == "rows"


@pytest.mark.parametrize("compare", dsp.COMPARES)
@pytest.mark.parametrize("statistic", dsp.STATISTICS)
def test_observed_statistics_are_the_row_paths(monkeypatch, statistic, compare):
    frame = _judge_scores(2_000, 0.5, 3)
    table = dsp.permutation_test(frame, "f", "g", statistic=statistic, compare=compare,
                                 n_resamples=19)
    monkeypatch.setattr(dsp, "TABLE_CELLS", 0)
    rows = dsp.permutation_test(frame, "f", "g", statistic=statistic, compare=compare,
                                n_resamples=19)
    for column in (OBSERVED, COMPARED_WITH, DIFFERENCE):
        np.testing.assert_array_equal(table[column], rows[column])


def test_seeds_reproduce_and_stopping_keeps_the_fixed_m_p_values():
    frame = _judge_scores(4_000, 0.05, 4)
    a = dsp.permutation_test(frame, "f", "g", n_resamples=199, seed=42, adaptive=False)
    b = dsp.permutation_test(frame, "f", "g", n_resamples=199, seed=42, adaptive=False)
    c = dsp.permutation_test(frame, "f", "g", n_resamples=199, seed=43, adaptive=False)
    assert dsp.permutation_test(frame, "f", "g", n_resamples=199, seed=42, adaptive=False,
                                return_path=True)[1] == "table"
    pd.testing.assert_frame_equal(a, b)
    assert not np.array_equal(a[P_VALUE], c[P_VALUE])
    adaptive = dsp.permutation_test(frame, "f", "g", n_resamples=999, seed=42)
    for m in (99, 199):  # a group that stopped at m reports the fixed-m p-value
        fixed = dsp.permutation_test(frame, "f", "g", n_resamples=m, seed=42, adaptive=False)
        at_m = (adaptive[N_PERMUTATIONS] == m).to_numpy()
        np.testing.assert_array_equal(adaptive[P_VALUE][at_m], fixed[P_VALUE][at_m])
    assert (adaptive[N_PERMUTATIONS] < 999).any()


# --- (e) the shortcuts for small integers give the very same numbers ---------------------------
def test_unique_keys_without_a_sort_equal_numpys():
    rng = np.random.default_rng(6)
    for n_keys in (7, 5_000, 10**9):  # dense, dense, sparse (numpy's sort)
        key = rng.integers(0, n_keys, 3_000)
        got, want = dsp._unique_keys(key, n_keys), np.unique(key, return_inverse=True)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_small_integers_only_for_integer_values():
    assert dsp.small_integers(np.array([3.0, -2.0, 7.0])).tolist() == [5, 0, 9]
    for x in ([0.5, 1.5], [0.0, 1e5], [0.0, 0.1], [np.inf, 1.0], []):
        assert dsp.small_integers(np.array(x)) is None
    x = np.random.default_rng(1).integers(-4, 5, 10_000).astype(float)
    x[::7] = -0.0 * x[::7]  # signed zeros tie with zeros, as in a sort of the floats
    np.testing.assert_array_equal(np.argsort(dsp.small_integers(x), kind="stable"),
                                  np.argsort(x, kind="stable"))


@pytest.mark.parametrize("feature", ["score", "negative", "halves", "answer"])
def test_shortcuts_change_no_number(monkeypatch, feature):
    rng = np.random.default_rng(8)
    n = 6_000
    frame = pd.DataFrame({
        "g": rng.choice(list("abcde"), n), "h": rng.choice(["x", "y"], n),
        "score": rng.integers(1, 6, n).astype(float),
        "negative": rng.integers(-300, 300, n).astype(float),
        "halves": rng.integers(0, 4, n) + 0.5,
        "answer": np.where(rng.random(n) < 0.1, np.nan, rng.integers(0, 2, n))})

    def everything():
        out = [dsp.group_summary(frame, feature, ["g", "h"], conventions=c)
               for c in dsp.CONVENTIONS]
        out += [dsp.selection_rates(frame, feature, "g", standard="median")]
        out += [dsp.permutation_test(frame, feature, ["g", "h"], statistic=s, n_resamples=9)
                for s in dsp.STATISTICS]
        return out

    fast = everything()
    monkeypatch.setattr(dsp, "small_integers", lambda x: None)
    monkeypatch.setattr(dsp, "_unique_keys", lambda key, n: np.unique(key,
                                                                      return_inverse=True))
    for a, b in zip(fast, everything(), strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_average_ranks_of_the_saged_correlation_are_scipys():
    """Spearman's average ranks (the SAGED section of the page), by counting for small
    integers and by one sort otherwise: scipy's ``rankdata`` exactly."""
    from analysis import saged_stats

    rng = np.random.default_rng(10)
    for x in (rng.integers(0, 2, 5_000), rng.integers(-7, 8, 3_000), rng.normal(size=2_000),
              np.round(rng.normal(size=2_000), 1), np.array([0.0, -0.0, 2.0, 0.0])):
        x = x.astype(float)
        np.testing.assert_array_equal(saged_stats._ranks(x), stats.rankdata(x))
