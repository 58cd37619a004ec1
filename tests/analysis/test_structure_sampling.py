"""analysis.structure above MAX_EXACT_ROWS: inferred on whole sampled items (#24), so a
column crossed with the items, the template and the value aliases are recovered exactly
as on the whole table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import analysis.structure as structure
from analysis.structure import FACTOR, ITEM_ID, OUTCOME, TEMPLATE, infer_structure

STIGMAS = ["no stigma", "autism", "blindness", "obesity"]
STYLES = ["base", "original", "positive"]


def _benchmark(n_items: int, n_templates: int = 40, seed: int = 0) -> pd.DataFrame:
    """A benchmark built from codes (fast at millions of rows): ``n_items`` items, each in
    one of ``n_templates`` templates (the template fixes ``category``), with a stigma and
    a prompt style fixed by the item (``style = base`` exactly when ``stigma = no
    stigma``), asked with and without ``cot`` to three models (6 rows per item)."""
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(n_items), 6)
    template = item % n_templates
    stigma = np.where(item % 10 == 0, 0, 1 + (item // 10) % 3)
    style = np.where(stigma == 0, 0, 1 + item % 2)

    def cat(codes: np.ndarray, labels: list[str]) -> pd.Categorical:
        return pd.Categorical.from_codes(codes, categories=labels)

    return pd.DataFrame({
        "item": item,
        "template": cat(template, [f"T{t}" for t in range(n_templates)]),
        "category": cat(template % 4, ["age", "race", "gender", "religion"]),
        "stigma": cat(stigma, STIGMAS),
        "style": cat(style, STYLES),
        "cot": cat(np.tile([0, 0, 0, 1, 1, 1], n_items), ["no", "yes"]),
        "model": cat(np.tile([0, 1, 2], 2 * n_items), ["m1", "m2", "m3"]),
        "biased": (rng.random(6 * n_items) < 0.3).astype(np.int8),
    })


def _check_recovered(s, n_rows: int, n_items: int) -> None:
    roles = {c.column: c.role for c in s.columns}
    assert roles == {"item": ITEM_ID, "template": TEMPLATE, "category": FACTOR,
                     "stigma": FACTOR, "style": FACTOR, "cot": FACTOR, "model": FACTOR,
                     "biased": OUTCOME}
    assert s.item_id == "item" and s.cluster == "template"
    assert s.prompt_unit == ("item", "cot")
    assert s.factor_kinds["model"] == "model" and s.factor_kinds["cot"] == "prompt"
    reasons = dict(zip(s.table["column"], s.table["reason"], strict=False))
    # whole items: every sampled item shows both cot values and the three models
    assert reasons["cot"] == "crossed with `item` (100% of items show all 2 values) -> a " \
                             "prompt factor"
    assert reasons["model"].startswith("crossed with `item` (100% of items")
    assert "each fixes `category`" in reasons["template"]
    aliases = {a.describe().split(" (")[0] for a in s.aliases}
    assert "style = base occurs only with stigma = no stigma" in aliases
    assert "stigma = no stigma occurs only with style = base" in aliases
    assert s.n_rows == n_rows and s.n_prompts == 2 * n_items


def test_above_max_exact_rows_whole_items_are_sampled():
    n_items = 350_000  # 2,100,000 rows > MAX_EXACT_ROWS
    frame = _benchmark(n_items)
    assert len(frame) > structure.MAX_EXACT_ROWS
    s = infer_structure(frame)
    _check_recovered(s, len(frame), n_items)
    note = s.notes[0]
    assert note.startswith("Inferred on all ") and "of the 350,000 items (`item`)" in note
    sampled = int(note.split("Inferred on all ")[1].split(" rows")[0].replace(",", ""))
    assert structure.MAX_EXACT_ROWS - 6 < sampled <= structure.MAX_EXACT_ROWS
    assert sampled % 6 == 0  # whole items of 6 rows


def test_sampling_is_the_same_inference_as_on_the_whole_table(monkeypatch):
    """With the threshold lowered, the sampled inference equals the exact one (roles,
    unit, cluster, aliases), and is seeded (the same twice)."""
    frame = _benchmark(20_000)
    exact = infer_structure(frame)
    _check_recovered(exact, len(frame), 20_000)
    monkeypatch.setattr(structure, "MAX_EXACT_ROWS", 30_000)
    sampled = infer_structure(frame)
    _check_recovered(sampled, len(frame), 20_000)
    assert "of the 20,000 items (`item`)" in sampled.notes[0]
    assert [(c.column, c.role) for c in sampled.columns] == \
        [(c.column, c.role) for c in exact.columns]
    assert infer_structure(frame) == sampled


def test_without_an_item_id_a_row_sample_still_finds_the_template(monkeypatch):
    """No item id: rows are sampled (drawing 4 of 8 whole templates would leave templates
    and categories one-to-one, and the template would no longer be seen as one)."""
    frame = _benchmark(4_000, n_templates=8).drop(columns="item")
    exact = infer_structure(frame)
    assert exact.item_id is None and exact.cluster == "template"
    monkeypatch.setattr(structure, "MAX_EXACT_ROWS", 12_000)
    s = infer_structure(frame)
    assert s.item_id is None and s.cluster == "template"
    assert s.notes[0].startswith("Inferred on a random sample of 12,000 of the 24,000 rows "
                                 "(no item id")
    assert [(c.column, c.role) for c in s.columns] == [(c.column, c.role) for c in exact.columns]


def test_without_item_or_template_a_row_sample_says_so(monkeypatch):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.choice(["x", "y"], 5_000), "b": rng.choice(["u", "v"], 5_000),
                          "biased": rng.integers(0, 2, 5_000)})
    monkeypatch.setattr(structure, "MAX_EXACT_ROWS", 2_000)
    s = infer_structure(frame)
    assert s.notes[0].startswith("Inferred on a random sample of 2,000 of the 5,000 rows")
    assert s.n_rows == 5_000 and s.factors == ["a", "b"]


@pytest.mark.parametrize("dense", [True, False])
def test_pair_tests_agree_with_pandas(dense, monkeypatch):
    """The scatter, dense-table and sorted pair tests against pandas' groupby nunique."""
    if not dense:
        monkeypatch.setattr(structure, "DENSE_CELLS", 0)
    frame = _benchmark(1_000)
    cols = {c: structure._column(c, frame[c]) for c in frame.columns}
    rel = structure._Relations(cols, list(cols))
    for a in cols:
        for b in cols:
            expected = frame.groupby(frame[a], observed=True)[b].nunique(dropna=False)
            assert rel.fixes(a, b) == bool((expected <= 1).all()), (a, b)
            counts = rel.nunique(a, b)
            assert sorted(counts) == sorted(expected.to_numpy()), (a, b)
            share = float((expected == frame[b].nunique()).mean())
            assert rel.crossed_share(a, b) == pytest.approx(share)
            bound = rel.crossed_share(a, b, at_least=0.9)
            assert bound >= share and (bound < 0.9) == (share < 0.9)
