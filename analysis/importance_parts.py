"""The row-reading parts of factor importance, kept between calls on the same table.

:func:`analysis.importance.factor_importance` (and :func:`analysis.api.importance`) is
called again and again on the same table by a front-end whose visitor changes one
option at a time (the Factor importance page: a reference value, alpha, the adjustment).
With the design's cluster, most of a warm call at 1M rows went into parts that do not
depend on those options (measured, ``benchmarks/bench_clustered_importance.py
--warm``): the cluster's codes (a ``factorize`` of the text column), the factor codes and
the (cell, cluster) pairs (:func:`analysis.importance_codes.combo_pairs`), and, when
only alpha / adjust / confidence change, the cluster-robust covariance (the per-cluster
sums, the CR2 kernel, the Satterthwaite df and the HTZ tests). A caller passes an
:class:`ImportanceParts` store (``parts=``) and those parts are computed once:

- ``"cells"``: the model's cells and the cluster used (with its notes), per table
  object, factors (and their declared values), cluster option, subset, exclusions;
- ``"robust"``: the cluster-robust covariance and what stands behind each coefficient
  (:class:`analysis.importance._Robust`, ``_Support``), per cells object (from the store),
  small-sample method and model: it is taken from the store only when the design matrix,
  the fitted linear predictor and the model-based covariance of the new call are, bit
  for bit, those it was computed from (a reference change refits and recomputes it).

Every number is the same with or without a store: the kept parts are the very objects a
call without the store computes, from the same inputs (tests/analysis/test_importance_parts.py).

Safety: a kept part is tied to the table OBJECT it was read from (a weak reference, so a
new table, even one at the address of a freed one, never finds another's parts) and to
its shape, columns and the dtypes of the columns read; tables must not be modified in
place while a store is in use (the app's tables are cached and read-only). The store is
bounded (``max_entries`` per kind and ``max_bytes`` of arrays in all) and thread-safe
(sessions of one server share it). docs/importance.md, "Repeated calls".
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd

__all__ = ["ImportanceParts", "freeze", "nbytes", "same_bits", "table_signature"]

T = TypeVar("T")


def same_bits(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Whether two arrays hold the same bits (shape, dtype and every byte: NaN equals
    NaN, 0.0 differs from -0.0)."""
    if a is None or b is None:
        return a is b
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.ascontiguousarray(a).view(np.uint8).tobytes()
                == np.ascontiguousarray(b).view(np.uint8).tobytes()) if a.size else True


def _arrays(value: Any, seen: set[int], depth: int = 0):
    """The NumPy arrays held by ``value`` (dataclasses, objects' attributes, dicts, lists
    and tuples followed a few levels deep), each once."""
    if id(value) in seen or depth > 4 or value is None or isinstance(
            value, str | bytes | int | float | bool | pd.DataFrame | pd.Series):
        return
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        yield value
        return
    if isinstance(value, dict):
        items: Sequence = list(value.values())
    elif isinstance(value, list | tuple):
        items = value
    elif dataclasses.is_dataclass(value):
        items = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif hasattr(value, "__dict__"):
        items = list(vars(value).values())
    else:
        return
    for item in items:
        yield from _arrays(item, seen, depth + 1)


def nbytes(value: Any) -> int:
    """The bytes of the NumPy arrays held by ``value`` (:func:`_arrays`): what a kept
    part costs (views counted at their own size)."""
    return sum(a.nbytes for a in _arrays(value, set()))


def freeze(value: Any) -> None:
    """Make the arrays held by ``value`` read-only: a kept part is shared by later calls,
    so a write into it would raise instead of changing their numbers."""
    for a in _arrays(value, set()):
        a.flags.writeable = False


class ImportanceParts:
    """A bounded, thread-safe store of the parts of factor importance that read the rows
    (module docstring), for the tables it is given: each kept part is tied to its table
    object (weakly referenced), so one store may serve several tables, and a table
    garbage-collected or replaced never finds another's parts.

    Parameters
    ----------
    max_entries
        Parts kept per kind (the most recently used).
    max_bytes
        Arrays kept in all (the least recently used parts leave first; a part larger
        than this is not kept).
    """

    def __init__(self, max_entries: int = 4, max_bytes: int = 256 << 20) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._store: OrderedDict[tuple[str, int, Hashable], tuple[Any, Any, int]] = \
            OrderedDict()
        self._lock = threading.Lock()
        #: Calls that found their part (``hits``) or computed it (``misses``), per kind.
        self.hits: dict[str, int] = {}
        self.misses: dict[str, int] = {}

    def __repr__(self) -> str:  # stable per store: a cache key of the caller's
        return f"<ImportanceParts {id(self):#x}>"

    def __len__(self) -> int:
        with self._lock:
            return len(self._store)

    @property
    def bytes(self) -> int:
        """The arrays kept, in bytes."""
        with self._lock:
            return sum(size for _, _, size in self._store.values())

    def clear(self) -> None:
        """Forget every part."""
        with self._lock:
            self._store.clear()

    def get(self, kind: str, owner: object, key: Hashable, make: Callable[[], T], *,
            check: Callable[[T], bool] | None = None) -> T:
        """The part ``kind`` of ``owner`` (a table, or a kept part it was made from) for
        ``key``, made by ``make()`` when not kept (or when ``check(part)`` is false: then
        the new part replaces it). Exceptions of ``make`` are not kept."""
        slot = (kind, id(owner), key)
        with self._lock:
            entry = self._store.get(slot)
            if entry is not None and entry[0]() is not owner:  # a freed owner's address
                del self._store[slot]
                entry = None
            if entry is not None and (check is None or check(entry[1])):
                self._store.move_to_end(slot)
                self.hits[kind] = self.hits.get(kind, 0) + 1
                return entry[1]
            self.misses[kind] = self.misses.get(kind, 0) + 1
        value = make()  # outside the lock: other sessions' parts meanwhile
        size = nbytes(value)
        if size > self.max_bytes:
            return value
        try:
            ref = weakref.ref(owner)
        except TypeError:  # an owner without weak references: not kept
            return value
        freeze(value)
        with self._lock:
            self._store[slot] = (ref, value, size)
            self._store.move_to_end(slot)
            self._trim(kind)
        return value

    def _trim(self, kind: str) -> None:
        for slot in [s for s, (ref, _, _) in self._store.items() if ref() is None]:
            del self._store[slot]
        same = [s for s in self._store if s[0] == kind]
        for slot in same[:-self.max_entries] if self.max_entries > 0 else same:
            del self._store[slot]
        total = sum(size for _, _, size in self._store.values())
        while total > self.max_bytes and self._store:
            _, (_, _, size) = self._store.popitem(last=False)
            total -= size


def table_signature(data: pd.DataFrame, columns: Sequence[str]) -> tuple:
    """What a kept part checks of its table besides its identity: the shape, the columns
    and the dtypes of ``columns`` (those the part read)."""
    dtypes = data.dtypes
    return (data.shape, tuple(map(str, data.columns)),
            tuple(str(dtypes[c]) for c in dict.fromkeys(columns) if c in data.columns))
