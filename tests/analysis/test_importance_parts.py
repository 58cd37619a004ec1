"""Factor importance with an :class:`analysis.importance_parts.ImportanceParts` store
(repeated calls on one table, the Factor importance page): every call with the store
gives, bit for bit, the call without it; the store's parts are found again for the same
table object, factors, cluster option and subset (and the robust covariance for the same
fit), and not for another table object, a changed table, other factors, cluster, subset
or design values; it stays within its bounds."""

from __future__ import annotations

import threading
import weakref

import numpy as np
import pandas as pd
import pytest

from analysis import api
from analysis.cells import cell_table
from analysis.design import Design, Factor
from analysis.importance import ImportanceRefusal, factor_importance
from analysis.importance_parts import ImportanceParts, nbytes, same_bits, table_signature
from tests.analysis.test_importance_codes import _table as _codes_table


def _table(rows: int = 4000, templates: int = 25, seed: int = 1):
    """Rows of 3 factors and a template effect (the design's cluster, text)."""
    return _codes_table(rows, templates, seed)


def _identical(a, b) -> None:
    """Two fits print the same: tables equal value for value (the same bits of every
    float column), notes, counts and summary equal."""
    for x, y in ((a.terms, b.terms), (a.factor_tests, b.factor_tests)):
        assert list(x.columns) == list(y.columns)
        assert x.equals(y)
        for c in x.select_dtypes("number").columns:
            assert same_bits(x[c].to_numpy(dtype=float), y[c].to_numpy(dtype=float)), c
    assert a.notes == b.notes
    assert repr(a.summary()) == repr(b.summary())
    assert a.log_likelihood == b.log_likelihood and a.n_cells == b.n_cells


#: One option changed at a time, as on the page (each call after the first of a kind
#: finds the cells; those after a call with the same model also the robust covariance).
CHANGES = [
    {}, {"alpha": 0.01}, {"adjust": "holm"}, {"confidence": 0.9},
    {"references": {"model": "model2"}}, {"references": {"style": "style1"}}, {},
    {"interactions": ["model:gender"]}, {"small_sample": "cr1"}, {"small_sample": "none"},
    {"likelihood_ratio": False}, {"cluster": None}, {"cluster": None, "alpha": 0.2},
    {"where": {"model": ["model0", "model1"]}}, {"exclude": {"style": ["style3"]}},
    {"factors": ["model", "style"]}, {"alpha": 0.01}, {"gee": True},
    {"gee": True, "alpha": 0.1}, {"interactions": ["model:style"], "alpha": 0.2},
]


def test_every_call_with_the_store_is_the_call_without_it():
    data, design = _table()
    parts = ImportanceParts()
    for change in CHANGES:
        _identical(factor_importance(data, design, parts=parts, **change),
                   factor_importance(data, design, **change))
    # the cells of the default model were found again (reruns with another alpha,
    # adjustment, confidence, references, interactions, small-sample method) ...
    assert parts.hits["cells"] >= 11
    # ... and its robust covariance for the calls whose fit is the same (not GEE's)
    assert parts.hits["robust"] >= 4
    assert parts.bytes <= parts.max_bytes


def test_the_robust_covariance_is_found_only_for_the_same_fit():
    data, design = _table()
    parts = ImportanceParts()
    factor_importance(data, design, parts=parts)
    factor_importance(data, design, parts=parts, alpha=0.01, adjust="by", confidence=0.8)
    assert (parts.hits.get("robust", 0), parts.misses["robust"]) == (1, 1)
    factor_importance(data, design, parts=parts, references={"gender": "gender1"})
    assert parts.misses["robust"] == 2  # another reference: another fit, recomputed
    factor_importance(data, design, parts=parts, small_sample="cr1")
    assert parts.misses["robust"] == 3  # another method
    assert parts.hits["cells"] == 3 and parts.misses["cells"] == 1


def test_a_cell_table_and_separation_fixes_with_the_store():
    data, design = _table(seed=3)
    data = data.copy()
    data.loc[data["style"] == "style3", "deviation"] = 0.0  # separation
    data.loc[data.index[:40], "deviation"] = np.nan  # missing outcomes are left out
    cells = cell_table(data, ["model", "style", "gender", "template"])
    parts = ImportanceParts()
    for table in (data, cells):
        for change in ({"on_separation": "drop"}, {"on_separation": "merge"},
                       {"on_separation": "merge", "alpha": 0.1}, {"on_separation": "drop"}):
            _identical(factor_importance(table, design, parts=parts, **change),
                       factor_importance(table, design, **change))
        with pytest.raises(ImportanceRefusal) as with_parts:
            factor_importance(table, design, parts=parts)
        with pytest.raises(ImportanceRefusal) as without:
            factor_importance(table, design)
        assert with_parts.value.explanation == without.value.explanation
    assert parts.hits["cells"] >= 8


def test_api_importance_with_the_store_and_the_page_inputs():
    data, design = _table()
    cells = cell_table(data, ["model", "style", "gender", "template"])
    parts = ImportanceParts()
    for refs in (None, {"model": "model1"}, None):
        for table, kw in ((data, {}), (data, {"cells": cells})):
            a = api.importance(table, design, applied=True, parts=parts, references=refs, **kw)
            b = api.importance(table, design, applied=True, references=refs, **kw)
            _identical(a.raw, b.raw)
            assert a.table.equals(b.table) and a.tables["lr_tests"].equals(b.tables["lr_tests"])
            assert a.notes == b.notes and repr(a.settings) == repr(b.settings)
    assert parts.hits["cells"] == 4 and parts.misses["cells"] == 2


def test_another_table_object_or_a_changed_table_is_not_found():
    data, design = _table()
    parts = ImportanceParts()
    first = factor_importance(data, design, parts=parts)
    copy = data.copy()  # the same values, another object: its own parts
    _identical(factor_importance(copy, design, parts=parts), first)
    assert parts.misses["cells"] == 2
    # another table of the same shape and columns: never the first table's numbers
    other, _ = _table(seed=9)
    fit = factor_importance(other, design, parts=parts)
    _identical(fit, factor_importance(other, design))
    assert not fit.terms["coef"].equals(first.terms["coef"])
    assert parts.misses["cells"] == 3
    # a column added, or a column's dtype changed, in place: recomputed
    copy["extra"] = 1
    factor_importance(copy, design, parts=parts)
    assert parts.misses["cells"] == 4
    copy["template"] = copy["template"].astype("category")
    _identical(factor_importance(copy, design, parts=parts), factor_importance(copy, design))
    assert parts.misses["cells"] == 5


def test_other_factors_cluster_subset_or_design_values_are_not_found():
    data, design = _table()
    parts = ImportanceParts()
    factor_importance(data, design, parts=parts)
    changes = [{"factors": ["model", "gender"]}, {"cluster": None}, {"cluster": "style",
                                                                     "factors": ["model"]},
               {"where": {"style": ["style0", "style2"]}}, {"exclude": {"model": ["model2"]}}]
    for i, change in enumerate(changes, start=2):
        _identical(factor_importance(data, design, parts=parts, **change),
                   factor_importance(data, design, **change))
        assert parts.misses["cells"] == i, change
    # a design that declares another value order for a factor: other codes
    renamed = Design(tuple(Factor(f.name, f.kind, tuple(reversed(f.values)), f.reference)
                           for f in design.factors), design.outcome, cluster="template")
    _identical(factor_importance(data, renamed, parts=parts),
               factor_importance(data, renamed))
    assert parts.misses["cells"] == len(changes) + 2


def test_a_part_of_a_freed_owner_is_never_found_by_the_object_at_its_address():
    class Owner:
        pass

    parts = ImportanceParts()
    a, b = Owner(), Owner()
    assert parts.get("k", a, 1, lambda: "a's") == "a's"
    ((slot, (_, value, size)),) = parts._store.items()
    parts._store[slot] = (weakref.ref(b), value, size)  # as if a had died and b ...
    assert parts.get("k", a, 1, lambda: "new") == "new"  # ... took its address
    assert parts.get("k", a, 1, lambda: "again") == "new"
    c = Owner()
    parts.get("k", c, 1, lambda: "c's")
    del c  # a dead owner's parts leave the store at the next store
    parts.get("k", a, 2, lambda: "a's 2")
    assert all(ref() is not None for ref, _, _ in parts._store.values())


def test_the_store_is_bounded_and_its_parts_read_only():
    class Owner:
        pass

    owner = Owner()
    parts = ImportanceParts(max_entries=2, max_bytes=10_000)
    for i in range(3):
        parts.get("k", owner, i, lambda: np.zeros(100))
    assert len(parts) == 2  # per kind
    assert parts.get("k", owner, 0, lambda: "recomputed") == "recomputed"
    big = parts.get("k", owner, "big", lambda: np.zeros(2_000))  # 16 kB: not kept
    assert big.flags.writeable and parts.misses["k"] == 5
    parts.get("k", owner, "big", lambda: np.zeros(2_000))
    assert parts.misses["k"] == 6
    parts = ImportanceParts(max_entries=10, max_bytes=2_000)
    for i in range(4):  # 800 bytes each: the oldest leave
        parts.get(f"kind{i}", owner, 0, lambda: np.zeros(100))
    assert len(parts) == 2 and parts.bytes == 1600
    kept = parts.get("kind3", owner, 0, lambda: None)
    with pytest.raises(ValueError):
        kept[0] = 1.0
    data, design = _table(1000, 10)
    store = ImportanceParts()
    factor_importance(data, design, parts=store)
    cells = next(v for (kind, _, _), (_, v, _) in store._store.items() if kind == "cells")[0]
    assert not cells.n.flags.writeable and not cells.k.flags.writeable
    assert nbytes(cells) > 0


def test_sessions_calling_at_once_get_the_same_numbers():
    data, design = _table()
    parts = ImportanceParts()
    expected = {a: factor_importance(data, design, alpha=a) for a in (0.05, 0.01)}
    out: list = []

    def call(alpha: float) -> None:
        out.append((alpha, factor_importance(data, design, alpha=alpha, parts=parts)))

    threads = [threading.Thread(target=call, args=(a,)) for a in (0.05, 0.01) * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 6
    for alpha, fit in out:
        _identical(fit, expected[alpha])


def test_table_signature_and_same_bits():
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    assert table_signature(frame, ["a"]) == table_signature(frame.copy(), ["a"])
    assert table_signature(frame, ["a"]) != table_signature(frame.assign(a=[1.0, 2.0]), ["a"])
    assert same_bits(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    assert not same_bits(np.array([0.0]), np.array([-0.0]))
    assert not same_bits(np.array([1.0]), np.array([1.0, 1.0]))
    assert not same_bits(np.array([1.0]), np.array([1], dtype=np.int64))


def test_a_scalar_subset_value_and_repeated_column_names_with_the_store():
    data, design = _table(1500, 12)
    parts = ImportanceParts()
    for where in ({"model": "model1"}, {"model": ("model0", "model2")}, {"model": "model1"}):
        kw = {"where": where, "factors": ["style", "gender"]}
        _identical(factor_importance(data, design, parts=parts, **kw),
                   factor_importance(data, design, **kw))
    assert parts.hits["cells"] == 1
    twice = pd.concat([data, data[["gender"]]], axis=1)  # a repeated column name
    assert table_signature(twice, ["gender", "model"])[2][1] == str(data["model"].dtype)
