"""Bootstrap confidence intervals for the summaries (``docs/uncertainty.md``).

Every count-based summary (subgroup log disparity, deviation metric per model, their
difference between two models, the KS statistic) is a function of the cell table, so
a bootstrap replicate is a replicate cell table:

- **rows independent** (no cluster): resampling the N rows with replacement gives cell
  counts ``(k_c, n_c - k_c)`` that are multinomial(N, observed shares) over the 2C
  (cell, outcome) categories; drawn directly, without touching the rows.
- **clustered rows** (a cluster column such as the template): the G clusters are
  resampled with replacement (Davison & Hinkley 1997, s. 3.8; Cameron, Gelbach & Miller
  2008); cluster g drawn w_g times contributes w_g times its counts to every cell, so
  a replicate is ``W U`` with ``W`` the (replicates x G) draw counts and ``U`` the
  (G x cells) counts. Rows sharing a cluster stay together, and so do a template's
  answers from different models (the difference between models is paired).

Intervals are percentiles of the replicates at ``(1 -+ confidence) / 2``; ``boot_se``
is their standard deviation. Everything is seeded (``seed``), so the same call gives
the same interval. The bias index (which also uses the coverage grid and an optional
numeric sentiment column) is bootstrapped on resampled rows (or clusters of rows),
its design-fixed diversity penalty held at its value (not resampled).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from analysis.cells import cell_table
from analysis.columns import (
    BOOT_CI_HIGH,
    BOOT_CI_LOW,
    BOOT_SE,
    DEVIATION,
    DEVIATIONS,
    ESTIMATE,
    GROUP_A,
    GROUP_B,
    MODEL,
    N_BOOT,
    P_VALUE,
    QUANTITY,
    N,
)
from analysis.design import factor_values
from analysis.errors import AnalysisError
from analysis.subgroups import rest_log_disparity

__all__ = [
    "BOOT_CI_HIGH", "BOOT_CI_LOW", "DEFAULT_N_BOOT", "BootstrapInfo", "INTERVAL_COLUMNS",
    "SHIFTED_SHARE",
    "bootstrap_ecdf", "bootstrap_index", "bootstrap_log_disparity", "check_bootstrap_options",
    "expanded_tail", "replicate_cells",
]


#: Default number of bootstrap replicates.
DEFAULT_N_BOOT = 1000
INTERVAL_COLUMNS = [ESTIMATE, BOOT_SE, BOOT_CI_LOW, BOOT_CI_HIGH, N_BOOT]


@dataclass(frozen=True)
class BootstrapInfo:
    """How a bootstrap table was computed (``return_info=True`` of the functions here):
    the cluster resampled (None: rows), the replicates, the seed, the level, the interval
    (``percentile`` or ``expanded percentile``; "" for the index's) and notes to show
    beside the table (few clusters, a p-value that disagrees, ...)."""

    cluster: str | None
    n_boot: int
    seed: int
    confidence: float
    interval: str = "percentile"
    notes: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict:
        """The settings as the JSON and ``Result.meta["bootstrap"]`` give them (``notes``
        a list; no ``interval`` key for the index's, as before)."""
        out = asdict(self)
        out["notes"] = list(self.notes)
        if not self.interval:
            del out["interval"]
        return out


def check_bootstrap_options(n_resamples: int, confidence: float) -> None:
    """Refuse fewer than 20 replicates or a confidence level outside (0, 1)."""
    if isinstance(n_resamples, bool) or int(n_resamples) != n_resamples or n_resamples < 20:
        raise AnalysisError(f"The bootstrap needs at least 20 replicates, got {n_resamples!r}.")
    if not 0 < confidence < 1:
        raise AnalysisError(f"The confidence level must be between 0 and 1, got {confidence}.")


_CLUSTER = "__cluster__"
#: Clusters x cells up to which the count matrix is dense.
_DENSE_MAX = 5_000_000


def _key(cells: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """One int64 per cell from the categorical codes of ``keys`` (mixed radix)."""
    key = np.zeros(len(cells), dtype=np.int64)
    for f in keys:
        key = key * max(len(cells[f].cat.categories), 1) + cells[f].cat.codes.to_numpy()
    return key


def _cluster_codes(results: pd.DataFrame, cluster: str) -> tuple[np.ndarray, int]:
    if cluster not in results.columns:
        raise AnalysisError(f"Cluster column {cluster!r} is not in the table.")
    codes, values = factor_values(results[cluster])
    if len(values) < 2:
        raise AnalysisError(f"The cluster column {cluster!r} has one value: a cluster "
                            "bootstrap needs at least two clusters.")
    return codes.to_numpy(dtype=np.int64), len(values)


def replicate_cells(results: pd.DataFrame, keys: Sequence[str], *, cluster: str | None = None,
                    n_resamples: int = DEFAULT_N_BOOT, seed: int = 0
                    ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The cell table over ``keys`` and ``n_resamples`` bootstrap replicates of its counts.

    Returns
    -------
    (cells, n, k)
        ``cells`` from :func:`analysis.cells.cell_table` (observed cells of ``keys``),
        ``n`` and ``k`` arrays of shape (n_resamples, cells): rows and deviations per cell in
        each replicate (a cell may be empty in a replicate).
    """
    rng = np.random.default_rng(seed)
    keys = list(keys)
    cells = cell_table(results, keys)
    n_obs = cells[N].to_numpy(dtype=np.int64)
    k_obs = cells[DEVIATIONS].to_numpy(dtype=np.int64)
    if cluster is None:
        total = int(n_obs.sum())
        p = np.concatenate([k_obs, n_obs - k_obs]) / total
        draws = rng.multinomial(total, p, size=n_resamples)
        k = draws[:, : len(n_obs)]
        return cells, k + draws[:, len(n_obs):], k
    if cluster in keys:
        raise AnalysisError(f"The cluster column {cluster!r} is also one of the factors.")
    fine = cell_table(results.assign(**{_CLUSTER: _cluster_codes(results, cluster)[0]}),
                      [*keys, _CLUSTER])
    cell_key, fine_key = _key(cells, keys), _key(fine, keys)
    order = np.argsort(cell_key)
    position = order[np.searchsorted(cell_key, fine_key, sorter=order)]
    g_values, g_index = np.unique(fine[_CLUSTER].cat.codes.to_numpy(), return_inverse=True)
    g = len(g_values)
    weights = rng.multinomial(g, np.full(g, 1 / g), size=n_resamples).astype(float)
    counts = []
    for column in (N, DEVIATIONS):
        values = fine[column].to_numpy(float)
        if g * len(cells) <= _DENSE_MAX:
            u = np.zeros((g, len(cells)))
            np.add.at(u, (g_index, position), values)
            counts.append(weights @ u)
        else:
            from scipy import sparse

            u = sparse.csr_matrix((values, (g_index, position)), shape=(g, len(cells)))
            counts.append(np.asarray((u.T @ weights.T).T))
    n, k = counts
    return cells, np.rint(n).astype(np.int64), np.rint(k).astype(np.int64)


def _membership(cells: pd.DataFrame, groups: pd.DataFrame, columns: Sequence[str]
                ) -> np.ndarray:
    """(cells x groups) 0/1 matrix: cell c belongs to group s when it has every value the
    group fixes (NaN in ``groups`` = not fixed)."""
    m = np.ones((len(cells), len(groups)), dtype=bool)
    for f in columns:
        cell_v = cells[f].astype(str).to_numpy()
        fixed = groups[f].notna().to_numpy()
        group_v = groups[f].astype(str).to_numpy()
        m &= ~fixed[None, :] | (cell_v[:, None] == group_v[None, :])
    return m.astype(float)


def expanded_tail(confidence: float, n_units: int, n_strata: int = 1) -> float:
    """Lower tail probability of the *expanded* percentile interval (Hesterberg 2015,
    "What teachers should know about the bootstrap", s. 3.3): the percentiles at
    ``Phi(-sqrt(n / (n - H)) * t_{n-H, 1 - alpha/2})`` instead of ``alpha / 2``, which
    undoes the bootstrap's variance shrinkage by (n - H) / n and uses t tails; with n the
    number of resampled units (clusters) and H the strata they were resampled within (1:
    resampled together, Hesterberg's ``n - 1``; with H strata of equal size each keeps
    ``(n_h - 1) / n_h`` of its variance, the design's ``n - H`` degrees of freedom).
    Equals ``alpha / 2`` as n grows."""
    from scipy.special import ndtr, stdtrit

    alpha = 1 - confidence
    n_strata = max(int(n_strata), 1)
    if n_units - n_strata < 1:
        return alpha / 2
    df = n_units - n_strata
    return float(ndtr(-np.sqrt(n_units / df) * stdtrit(df, 1 - alpha / 2)))


def _interval(estimate: np.ndarray, reps: np.ndarray, confidence: float,
              tail: float | None = None) -> dict:
    """Percentile interval per column of ``reps`` (replicates x quantities), at
    ``tail`` and ``1 - tail`` (default ``(1 - confidence) / 2``)."""
    tail = (1 - confidence) / 2 if tail is None else tail
    valid = np.isfinite(reps)
    # A quantity undefined in every replicate (a constant outcome: no log disparity) gets
    # NaN and n_resamples 0; numpy's "All-NaN slice" and "Degrees of freedom <= 0" warnings
    # would reach the user as raw tracebacks-like lines (issue 26).
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reps = np.where(valid, reps, np.nan)
        low = np.nanquantile(reps, tail, axis=0) if reps.size else np.array([])
        high = np.nanquantile(reps, 1 - tail, axis=0) if reps.size else np.array([])
        se = np.nanstd(reps, axis=0, ddof=1)
    return {ESTIMATE: estimate, BOOT_SE: se, BOOT_CI_LOW: low, BOOT_CI_HIGH: high,
            N_BOOT: valid.sum(axis=0)}


# --- subgroups ------------------------------------------------------------------------------------
def bootstrap_log_disparity(results: pd.DataFrame, factors: Sequence[str], *,
                            max_level: int | None = None, cluster: str | None = None,
                            n_resamples: int = DEFAULT_N_BOOT, confidence: float = 0.95,
                            seed: int = 0, table: pd.DataFrame | None = None,
                            return_info: bool = False
                            ) -> pd.DataFrame | tuple[pd.DataFrame, BootstrapInfo]:
    """Bootstrap (cluster bootstrap with ``cluster``) percentile CIs of subgroup LD.

    Parameters
    ----------
    results
        The results table with the design applied (a ``deviation`` column; and the
        cluster column).
    factors, max_level
        As :func:`analysis.subgroups.subgroups`.
    cluster
        Column whose values are resampled as units (None: rows).
    table
        The subgroup table to extend (default: :func:`analysis.subgroups.subgroups` of
        the cell table over ``factors``); rows are matched by their factor values.
    return_info
        Also return the :class:`BootstrapInfo` (its notes: few clusters, subgroups whose
        p-value and interval disagree).

    Returns
    -------
    pandas.DataFrame
        ``table`` with ``boot_ci_low`` and ``boot_ci_high`` (percentile interval of LD
        over the replicates where it is defined) and ``boot_se``; with ``return_info``
        the pair ``(table, BootstrapInfo)``.
    """
    from analysis.subgroups import subgroups

    check_bootstrap_options(n_resamples, confidence)
    factors = list(factors)
    cells, n, k = replicate_cells(results, factors, cluster=cluster, n_resamples=n_resamples,
                                  seed=seed)
    if table is None:
        table = subgroups(cells, factors, max_level=max_level)
    member = _membership(cells, table, factors)
    ld = rest_log_disparity(k @ member, n @ member, k.sum(axis=1, keepdims=True).astype(float),
                        n.sum(axis=1, keepdims=True).astype(float))
    est = rest_log_disparity(cells[DEVIATIONS].to_numpy(float) @ member,
                         cells[N].to_numpy(float) @ member,
                         np.array(float(cells[DEVIATIONS].sum())),
                         np.array(float(cells[N].sum())))
    notes: list[str] = []
    tail = None
    if cluster is not None:
        from analysis.clusters import FEW_CLUSTERS

        g = int(results[cluster].nunique())
        tail = expanded_tail(confidence, g)
        if g < FEW_CLUSTERS:
            notes.append(f"few clusters: the cluster bootstrap resamples only {g} values of "
                         f"{cluster} (fewer than {FEW_CLUSTERS}); plain percentile intervals "
                         "then cover less than their level, so the bootstrap interval is the "
                         f"expanded percentile interval (percentiles {tail:.4f} and "
                         f"{1 - tail:.4f}, Hesterberg 2015)")
    iv = _interval(est, ld, confidence, tail)
    out = table.copy()
    out[BOOT_SE] = iv[BOOT_SE]
    out[BOOT_CI_LOW] = iv[BOOT_CI_LOW]
    out[BOOT_CI_HIGH] = iv[BOOT_CI_HIGH]
    if P_VALUE in out.columns:  # the p-value printed beside the bootstrap interval
        level = 1 - confidence
        excludes = (out[BOOT_CI_LOW] > 0) | (out[BOOT_CI_HIGH] < 0)
        disagree = int(((out[P_VALUE] < level) != excludes)[out[P_VALUE].notna()].sum())
        if disagree:
            notes.append(f"{disagree} subgroup(s): the p-value and the bootstrap interval "
                         f"disagree at the {level:g} level (one rejects LD = 0, the other "
                         "not); they are different approximations, read such a subgroup as "
                         "borderline")
    info = BootstrapInfo(cluster, n_resamples, seed, confidence,
                         "expanded percentile" if tail is not None else "percentile",
                         tuple(notes))
    return (out, info) if return_info else out


# --- eCDF summaries -------------------------------------------------------------------------------
def _rates(cells: pd.DataFrame, factors: list[str], by: str, level: int | None
           ) -> tuple[pd.DataFrame, np.ndarray]:
    from analysis.ecdf import subgroup_rates

    rates = subgroup_rates(cells, factors, by=by, level=level)
    return rates, _membership(cells, rates, [by, *factors])


def bootstrap_ecdf(results: pd.DataFrame, factors: Sequence[str], *, by: str,
                   level: int | None = None, ideal: float = 0.0, cluster: str | None = None,
                   n_resamples: int = DEFAULT_N_BOOT, confidence: float = 0.95, seed: int = 0,
                   return_info: bool = False
                   ) -> pd.DataFrame | tuple[pd.DataFrame, BootstrapInfo]:
    """Bootstrap CIs of the eCDF summaries (``analysis.ecdf``); with ``return_info`` the
    pair ``(table, BootstrapInfo)`` (its notes: few clusters).

    Returns
    -------
    pandas.DataFrame
        One row per quantity: ``quantity`` (``deviation_metric`` per curve;
        ``difference`` = DM(group_a) - DM(group_b) and ``ks_statistic`` per pair of
        curves), ``group_a``, ``group_b`` (None for a single curve), ``estimate`` (the
        statistic on the data), ``boot_se``, ``boot_ci_low``, ``boot_ci_high`` and
        ``n_boot`` (replicates used). A subgroup empty in a replicate is left out of
        that replicate's curve.
    """
    check_bootstrap_options(n_resamples, confidence)
    factors = [f for f in factors if f != by]
    cells, n, k = replicate_cells(results, [by, *factors], cluster=cluster, n_resamples=n_resamples,
                                  seed=seed)
    rates, member = _rates(cells, factors, by, level)
    curve = rates[by].astype(str).to_numpy()
    col = rates[by]
    order = ([str(v) for v in col.cat.categories] if isinstance(col.dtype, pd.CategoricalDtype)
             else sorted(set(curve)))
    order = [v for v in order if (curve == v).any()]
    with np.errstate(invalid="ignore", divide="ignore"):
        rep_rates = (k @ member) / (n @ member)  # (B, subgroups); NaN where empty
    obs_rates = rates[DEVIATIONS].to_numpy(float) / rates[N].to_numpy(float)
    rows, est, reps = [], [], []
    dm_obs, dm_rep = {}, {}
    for v in order:
        sel = curve == v
        dm_obs[v] = float(np.mean(np.abs(obs_rates[sel] - ideal)))
        dm_rep[v] = np.nanmean(np.abs(rep_rates[:, sel] - ideal), axis=1)
        rows.append(("deviation_metric", v, None))
        est.append(dm_obs[v])
        reps.append(dm_rep[v])
    for a, b in itertools.combinations(order, 2):
        rows.append(("difference", a, b))
        est.append(dm_obs[a] - dm_obs[b])
        reps.append(dm_rep[a] - dm_rep[b])
        rows.append(("ks_statistic", a, b))
        sa, sb = curve == a, curve == b
        est.append(_ks(obs_rates[sa][None, :], obs_rates[sb][None, :])[0])
        reps.append(_ks(rep_rates[:, sa], rep_rates[:, sb]))
    iv = _interval(np.array(est), np.column_stack(reps), confidence)
    out = pd.DataFrame({QUANTITY: [r[0] for r in rows], GROUP_A: [r[1] for r in rows],
                        GROUP_B: [r[2] for r in rows], **iv})
    info = BootstrapInfo(cluster, n_resamples, seed, confidence,
                         notes=tuple(_few_clusters(results, cluster)))
    return (out, info) if return_info else out


def _few_clusters(results: pd.DataFrame, cluster: str | None) -> list[str]:
    """The few-clusters note of a plain percentile cluster bootstrap (G < 30)."""
    from analysis.clusters import FEW_CLUSTERS

    if cluster is None:
        return []
    g = int(results[cluster].nunique())
    if g >= FEW_CLUSTERS:
        return []
    return [f"few clusters: the cluster bootstrap resamples only {g} values of {cluster} "
            f"(fewer than {FEW_CLUSTERS}); percentile intervals then cover less than their "
            "level (about 92 % for a 95 % interval with 16 clusters): read them as too narrow"]


def _ks(xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
    """Two-sample KS statistic per row of (replicates x values) arrays (NaN ignored)."""
    if np.isfinite(xa).all() and np.isfinite(xb).all() and \
            xa.shape[0] * (xa.shape[1] + xb.shape[1]) * max(xa.shape[1], xb.shape[1]) < 2e7:
        grid = np.concatenate([xa, xb], axis=1)[:, :, None]
        fa = (xa[:, None, :] <= grid).mean(axis=2)
        fb = (xb[:, None, :] <= grid).mean(axis=2)
        return np.abs(fa - fb).max(axis=1)
    out = np.empty(len(xa))
    for i, (a, b) in enumerate(zip(xa, xb, strict=True)):
        a, b = np.sort(a[np.isfinite(a)]), np.sort(b[np.isfinite(b)])
        if not len(a) or not len(b):
            out[i] = np.nan
            continue
        grid = np.concatenate([a, b])
        fa = np.searchsorted(a, grid, side="right") / len(a)
        fb = np.searchsorted(b, grid, side="right") / len(b)
        out[i] = np.max(np.abs(fa - fb))
    return out


# --- bias index ---------------------------------------------------------------------------------
def _row_replicates(results: pd.DataFrame, cluster: str | None, n_resamples: int, seed: int
                    ) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if cluster is None:
        return [rng.integers(0, len(results), len(results)) for _ in range(n_resamples)]
    codes, g = _cluster_codes(results, cluster)
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(g + 1))
    members = [order[starts[i]:starts[i + 1]] for i in range(g)]
    return [np.concatenate([members[j] for j in rng.integers(0, g, g)]) for _ in range(n_resamples)]


def _replicates(results: pd.DataFrame, statistic: Callable[[pd.DataFrame], pd.Series],
                index: pd.Index, cluster: str | None, n_resamples: int, seed: int
                ) -> tuple[pd.Series, np.ndarray]:
    """The statistic of the rows (reindexed to ``index``) and of ``n_resamples`` resamples."""
    estimate = statistic(results).reindex(index)
    reps = np.full((n_resamples, len(index)), np.nan)
    for i, idx in enumerate(_row_replicates(results, cluster, n_resamples, seed)):
        try:
            reps[i] = statistic(results.iloc[idx]).reindex(index).to_numpy(float)
        except AnalysisError:
            continue
    return estimate, reps


#: Share of the replicates above the estimate beyond which an interval is flagged as shifted.
SHIFTED_SHARE = 0.75


def bootstrap_index(results: pd.DataFrame, design, *, cluster: str | None = None,
                    n_resamples: int = 200, confidence: float = 0.95, seed: int = 0,
                    return_info: bool = False, **options
                    ) -> pd.DataFrame | tuple[pd.DataFrame, BootstrapInfo]:
    """Bootstrap CIs of the bias index and of each of its components, per model (with
    ``return_info`` the pair ``(table, BootstrapInfo)``; its notes are in ``note``).

    ``options`` are those of :func:`analysis.index.bias_index`. The diversity penalty
    describes the design (which prompts were asked, or a constant), not a sample, so it is
    **not** resampled: it is reported as fixed (``boot_se`` 0, the interval the estimate
    itself) and every replicate's ``llmbi`` adds the penalty of the full rows. A maximum
    (``max_abs_log_disparity``, and an index built on it) is biased upwards in resamples,
    so its percentile interval lies mostly above the estimate: the ``note`` says so and
    gives the share of replicates above the estimate (any quantity with more than
    :data:`SHIFTED_SHARE` above gets the same warning).

    Returns
    -------
    pandas.DataFrame
        One row per model and quantity: ``model``, ``quantity`` (``llmbi``,
        ``weighted_bias``, ``diversity_penalty``, ``sentiment_term``, and
        ``score[FACTOR]`` per dimension), ``estimate``, ``boot_se``, ``boot_ci_low``,
        ``boot_ci_high``, ``n_boot``, ``note`` (empty, or: design-fixed, or the upward
        shift of a maximum's interval).
    """
    from analysis.columns import (
        COMPONENT,
        DIVERSITY_PENALTY,
        FACTOR,
        LLMBI,
        NOTE,
        SCORE,
        SENTIMENT_TERM,
        WEIGHTED_BIAS,
    )
    from analysis.index import as_dimensions, bias_index

    check_bootstrap_options(n_resamples, confidence)
    if "dimensions" in options:  # as a user passes them (the CLI: mappings)
        options = {**options, "dimensions": as_dimensions(options["dimensions"])}
    full = bias_index(results, design, **options).totals
    fixed = {str(m): float(v) for m, v in zip(full[MODEL], full[DIVERSITY_PENALTY],
                                               strict=True)}
    free = {**options, "penalty_kind": "constant", "penalty_value": 0.0}

    def statistic(rows: pd.DataFrame) -> pd.Series:
        idx = bias_index(rows, design, **free)
        out = {}
        for r in idx.totals.to_dict(orient="records"):
            name = str(r[MODEL])
            for q in (LLMBI, WEIGHTED_BIAS, DIVERSITY_PENALTY, SENTIMENT_TERM):
                out[(name, q)] = r[q]
            out[(name, LLMBI)] = r[LLMBI] + fixed.get(name, np.nan)
            out[(name, DIVERSITY_PENALTY)] = fixed.get(name, np.nan)
        for r in idx.components[idx.components[COMPONENT] == "dimension"].to_dict(
                orient="records"):
            out[(str(r[MODEL]), f"score[{r[FACTOR]}]")] = r[SCORE]
        return pd.Series(out, dtype=float)

    needed = {DEVIATION, *(d.factor for d in options.get("dimensions", ())),
              *(options.get("penalty_factors") or ()), options.get("model"),
              options.get("sentiment"), options.get("sentiment_baseline"), cluster}
    s_by = options.get("sentiment_by")
    needed |= {s_by} if isinstance(s_by, str) else set(s_by or ())
    slim = results[[c for c in results.columns if c in needed]]
    keys = statistic(slim).index
    estimate, reps = _replicates(slim, statistic, keys, cluster, n_resamples, seed)
    table = pd.DataFrame(_interval(estimate.to_numpy(float), reps, confidence), index=keys)
    maxima = {f"score[{d.factor}]" for d in options.get("dimensions", ())
              if d.score == "max_abs_log_disparity"}
    with np.errstate(invalid="ignore"):
        above = (reps > estimate.to_numpy(float) + 1e-12).sum(0) / np.maximum(
            np.isfinite(reps).sum(0), 1)
    notes = []
    for (_, quantity), share in zip(keys, above, strict=True):
        if quantity == DIVERSITY_PENALTY:
            notes.append("design-fixed (which prompts were asked): not resampled")
            continue
        is_max = quantity in maxima or (maxima and quantity in (LLMBI, WEIGHTED_BIAS))
        if is_max or share > SHIFTED_SHARE:
            notes.append(f"{share:.0%} of the replicates lie above the estimate: "
                         + ("a maximum is biased upwards in resamples, so "
                            if is_max else "")
                         + "the percentile interval is shifted up; read it as a spread, "
                           "not as a confidence interval")
        else:
            notes.append("")
    fix = table.index.get_level_values(1) == DIVERSITY_PENALTY
    table.loc[fix, BOOT_SE] = 0.0
    table.loc[fix, BOOT_CI_LOW] = table.loc[fix, BOOT_CI_HIGH] = table.loc[fix, ESTIMATE]
    table[NOTE] = notes
    table.index = table.index.set_names([MODEL, QUANTITY])
    out = table.reset_index()
    info = BootstrapInfo(cluster, n_resamples, seed, confidence, interval="")
    return (out, info) if return_info else out
