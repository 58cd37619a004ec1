"""The row-reading parts of the disparity analysis, kept between calls (issue 37).

:func:`analysis.api.disparity` is the one composition of the analysis. A front-end that
calls it again and again on the same table with a few options changed (the Disparity
page, on every widget change) passes a :class:`DisparityParts` store (``parts=``): each
part that reads the rows is then computed once per the options it depends on and taken
from the store afterwards. So changing the selection standard recounts the selection
rates only, the statistic or alpha nothing that reads the rows but the permutation test,
and a second call that only turns the permutations on (the page shows everything else
first) runs the test alone.

The parts and the options each depends on (besides the rows: table, subset, feature,
groups, baseline, normalisation):

- the grouping (:func:`analysis.disparity.grouping`): nothing else;
- the group summary (:func:`analysis.disparity.group_summary`): ``quantiles``,
  ``conventions``;
- the selection rates (:func:`analysis.disparity.selection_rates`): ``standard``,
  ``quantile``, ``value``, the resolved ``direction``, ``tolerance``, ``comparison``;
- the permutation test (:func:`analysis.disparity.permutation_test`): ``statistic``,
  ``compare``, ``n_resamples``, ``seed``, ``adaptive``; ``quantiles`` only for the
  quantile range, ``alpha`` only when the test stops adaptively;
- the SAGED statistics (:func:`analysis.saged_stats.saged_statistics`): their own
  options.

The numbers are those of :func:`analysis.disparity.disparity_report` on the same rows
(it is ``with_permutation(report_of(summary, selection), permutation_test(...))``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import pandas as pd

from analysis import disparity as dsp
from analysis.saged_stats import saged_statistics

__all__ = ["DisparityParts", "disparity_parts"]

T = TypeVar("T")


class DisparityParts:
    """A bounded, thread-safe store of the parts of :func:`analysis.api.disparity` for
    ONE table and design (a new table needs a new store: the keys do not tell tables
    apart). Keeps the ``max_entries`` most recently used parts of each kind."""

    def __init__(self, max_entries: int = 8) -> None:
        self.max_entries = max_entries
        self._store: OrderedDict[tuple[str, Hashable], Any] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # stable per store: a cache key of the caller's
        return f"<DisparityParts {id(self):#x}>"

    def __len__(self) -> int:
        return len(self._store)

    def items(self) -> list[tuple[tuple[str, Hashable], Any]]:
        """The kept parts, ``((kind, key), part)`` (for :meth:`seed`: a store filled
        elsewhere, e.g. by the app's load-time job in its worker process)."""
        with self._lock:
            return list(self._store.items())

    def seed(self, items: Sequence[tuple[tuple[str, Hashable], Any]]) -> None:
        """Keep the parts ``items`` (of :meth:`items` of a store of the SAME rows and
        design) where this store has none for their key."""
        with self._lock:
            for (kind, key), value in items:
                self._store.setdefault((kind, key), value)

    def get(self, kind: str, key: Hashable, make: Callable[[], T]) -> T:
        """The part ``kind`` for ``key``, made by ``make()`` when not kept."""
        with self._lock:
            if (kind, key) in self._store:
                self._store.move_to_end((kind, key))
                return self._store[kind, key]
        value = make()  # outside the lock: another session's parts meanwhile
        with self._lock:
            self._store[kind, key] = value
            same = [k for k in self._store if k[0] == kind]
            for old in same[:-self.max_entries]:
                del self._store[old]
        return value


def _permutation_key(opts: Any) -> tuple:
    """The options the permutation test depends on."""
    key = (opts.statistic, opts.compare, opts.n_resamples, opts.seed, opts.adaptive,
           opts.adjust)
    return (*key, tuple(opts.quantiles) if opts.statistic == "quantile_range" else None,
            opts.alpha if opts.adaptive else None)


def disparity_parts(rows_of: Callable[[], pd.DataFrame], feature: str, groups: Sequence[str],
                    opts: Any, parts: DisparityParts, rows_key: Hashable
                    ) -> tuple[dsp.DisparityReport, pd.DataFrame, dsp.Grouping]:
    """The report, the SAGED statistics and the grouping of the rows, from ``parts``.

    ``rows_of()`` gives the analysed rows (subset and normalised; called only when a
    part is missing), ``rows_key`` tells them apart (subset and normalisation), ``opts``
    are the :class:`analysis.options.disparity.DisparityOptions` with the polarity
    resolved.

    Returns
    -------
    tuple
        The :class:`analysis.disparity.DisparityReport` (summary, selection, metrics,
        Dixon's Q, permutation table or None), the SAGED statistics per group (columns of
        :func:`analysis.saged_stats.saged_statistics`) and the
        :class:`analysis.disparity.Grouping`.
    """
    rows: list[pd.DataFrame] = []

    def the_rows() -> pd.DataFrame:
        if not rows:
            rows.append(rows_of())
        return rows[0]

    base = (rows_key, feature, tuple(groups), opts.baseline)
    grouped = parts.get("grouping", base, lambda: dsp.grouping(
        the_rows(), feature, list(groups), baseline=opts.baseline))
    summary = parts.get("summary", (base, tuple(opts.quantiles), opts.conventions),
                        lambda: dsp.group_summary(grouped, feature, groups,
                                                  baseline=opts.baseline,
                                                  quantiles=opts.quantiles,
                                                  conventions=opts.conventions))
    direction = dsp.selection_direction(opts.polarity, opts.direction)
    chosen = {"standard": opts.standard, "quantile": opts.quantile, "value": opts.value,
              "direction": direction, "tolerance": opts.tolerance,
              "comparison": opts.comparison}
    selection = parts.get("selection", (base, tuple(sorted(chosen.items()))),
                          lambda: dsp.selection_rates(grouped, feature, groups,
                                                      baseline=opts.baseline, **chosen))
    report = dsp.report_of(summary, selection, feature=feature, by=list(groups),
                           baseline=opts.baseline, statistic=opts.statistic,
                           quantiles=opts.quantiles, polarity=opts.polarity,
                           alpha=opts.alpha, conventions=opts.conventions,
                           n_missing=grouped.n_missing, **chosen)
    perm = None
    if opts.n_resamples:
        perm = parts.get("permutation", (base, _permutation_key(opts)),
                         lambda: dsp.permutation_test(
                             grouped, feature, groups, baseline=opts.baseline,
                             statistic=opts.statistic, compare=opts.compare,
                             n_resamples=opts.n_resamples, seed=opts.seed,
                             quantiles=opts.quantiles, adaptive=opts.adaptive,
                             alpha=opts.alpha, adjust=opts.adjust))
    report = dsp.with_permutation(report, perm, n_resamples=opts.n_resamples,
                                  adaptive=opts.adaptive, compare=opts.compare,
                                  seed=opts.seed)
    saged_options = {**opts.saged_kwargs(), "normalization": "none"}  # rows normalised
    saged = parts.get("saged", (base, tuple(sorted(saged_options.items()))),
                      lambda: saged_statistics(  # the grouping's values unless a baseline
                          the_rows() if opts.baseline else grouped, feature, list(groups),
                                               baseline=opts.baseline, **saged_options))
    return report, saged, grouped
