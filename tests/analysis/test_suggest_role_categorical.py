"""``suggest_role`` on a categorical column (the "Large file on this machine" table) reads
its categories weighted by their counts instead of a string per row: the same mean text
length and hence the same role as the rows' own strings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.design_guess import _mean_text_length, describe_columns, suggest_role


def _rows_mean(values: list) -> float | None:
    """The previous computation, on the rows."""
    lengths = pd.Series(values, dtype=object).dropna().astype(str).str.len()
    return lengths.mean() if len(lengths) else None


CASES = {
    "short labels with missing": ["m1", "m2", None, "m10", "m1"] * 40,
    "exactly 60 on average": ["x" * 50, "y" * 70] * 30,  # mean 60: not above
    "just above 60": ["x" * 50, "y" * 71] * 30,
    "long answers": [f"{'a long free-text answer ' * 3}{i % 7}" for i in range(300)],
    "unicode": ["é" * 61, "日本" * 40, None] * 20,
    "all missing": [None] * 50,
}


@pytest.mark.parametrize("name", list(CASES))
def test_same_mean_and_role_as_the_rows(name: str) -> None:
    values = CASES[name]
    cat = pd.Series(pd.Categorical(values))
    expected = _rows_mean(values)
    got = _mean_text_length(cat)
    assert (got is None) == (expected is None)
    if expected is not None:
        assert got == expected  # the same integer sum over the same count: bit-identical
    n_unique = int(cat.nunique())
    for other in (pd.Series(values, dtype=object), pd.Series(values, dtype="str")):
        assert suggest_role(cat, n_unique, len(cat)) == suggest_role(other, n_unique,
                                                                     len(cat))


def test_unused_categories_do_not_count() -> None:
    cat = pd.Series(pd.Categorical(["ab", "cd", "ab"], categories=["ab", "cd", "z" * 500]))
    assert _mean_text_length(cat) == 2.0
    assert suggest_role(cat, 2, 3) == "factor"


def test_the_threshold_is_reached_by_the_counts() -> None:
    # one long category, rare: the mean over rows stays short
    values = ["z" * 200] + ["ab"] * 99
    cat = pd.Series(pd.Categorical(values))
    assert _mean_text_length(cat) == pytest.approx((200 + 2 * 99) / 100)
    assert suggest_role(cat, 2, 100) == "factor"
    assert suggest_role(pd.Series(pd.Categorical(["z" * 200] * 99 + ["ab"])), 2, 100) \
        == "text or id"


def test_describe_columns_is_the_same_for_a_compact_table() -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({
        "model": rng.choice(["m1", "m2", "m3"], 2000),
        "answer": rng.choice([f"{'free text ' * 8}{i}" for i in range(40)], 2000),
        "biased": rng.integers(0, 2, 2000),
    })
    compact = frame.assign(model=frame["model"].astype("category"),
                           answer=frame["answer"].astype("category"))
    left = describe_columns(frame)[["column", "n_unique", "n_missing", "suggested_role"]]
    right = describe_columns(compact)[["column", "n_unique", "n_missing", "suggested_role"]]
    pd.testing.assert_frame_equal(left, right)
    assert right.set_index("column").loc["answer", "suggested_role"] == "text or id"
