"""BBQ's bias scores: a hand case and the published-style table of the bundled sample."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.bbq_scores import bias_scores, is_bbq
from analysis.columns import S_AMB, S_DIS
from analysis.errors import AnalysisError
from tests.app.apptools import ROOT


def test_hand_case():
    # disambiguated: 3 named answers, 2 biased -> s_DIS = 2 * 2/3 - 1 = 1/3
    # ambiguous: 4 rows, 1 correct (unknown); 3 named, 3 biased -> s = 1, s_AMB = 0.75 * 1
    rows = pd.DataFrame({
        "context_condition": ["disambig"] * 4 + ["ambig"] * 4,
        "answer_type": ["stereotyped group", "non-stereotyped group", "stereotyped group",
                        "unknown", "stereotyped group", "stereotyped group",
                        "stereotyped group", "unknown"],
        "biased_answer": [1, 1, 0, 0, 1, 1, 1, 0],
        "correct": [1, 1, 0, 0, 0, 0, 0, 1]})
    out = bias_scores(rows).iloc[0]
    assert out[S_DIS] == pytest.approx(1 / 3)
    assert out[S_AMB] == pytest.approx(0.75)
    assert out["accuracy_amb"] == pytest.approx(0.25) and out["n_non_unknown_dis"] == 3
    assert is_bbq(rows) and not is_bbq(rows.drop(columns="correct"))
    with pytest.raises(AnalysisError, match="need the columns"):
        bias_scores(rows, by=["nope"])


def test_bundled_sample_matches_the_sanity_table():
    """REAL data: the scores of sample_data/README.md (and bbq_unifiedqa_bias_scores.csv)."""
    frame = pd.read_csv(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz")
    ours = bias_scores(frame, by=["category", "input_format"]).set_index(
        ["category", "input_format"])
    ref = pd.read_csv(ROOT / "sample_data" / "bbq_unifiedqa_bias_scores.csv")
    ref = ref[ref["category"] != "all 6"].set_index(["category", "input_format"])
    assert len(ours) == len(ref) == 18
    for key, row in ref.iterrows():
        assert ours.loc[key, S_DIS] == pytest.approx(row[S_DIS], abs=5e-5)
        assert ours.loc[key, S_AMB] == pytest.approx(row[S_AMB], abs=5e-5)
        assert ours.loc[key, "n_non_unknown_amb"] == row["n_non_unknown_amb"]
    assert ours.loc[("Age", "race"), S_AMB] == pytest.approx(0.2978, abs=5e-5)  # README
    overall = bias_scores(frame[frame["input_format"] == "qonly"]).iloc[0]
    assert overall[S_DIS] == pytest.approx(0.611, abs=5e-4)  # "all 6", qonly


@pytest.mark.parametrize("by", [(), ("category",), ("category", "input_format"),
                                ("input_format", "question_polarity", "subcategory")])
def test_counted_scores_are_pandas_groupby_scores(by, monkeypatch):
    """The scores from integer counts of the groups' codes (issue 44 item 3: the
    Subgroups page's BBQ scores at 1M rows) equal those of pandas' groupby sums and
    means, value for value, on the bundled sample raw and with its design applied, and
    on a table with missing ``correct``, a fractional ``biased_answer`` (pandas' path)
    and a missing group value (pandas' path)."""
    import numpy as np

    import analysis.bbq_scores as bbq
    from analysis.design import Design, apply_design

    frame = pd.read_csv(ROOT / "sample_data" / "bbq_unifiedqa.csv.gz")
    design = Design.load(ROOT / "sample_data" / "bbq_unifiedqa.design.yaml")
    odd = frame.copy()
    odd.loc[::7, "correct"] = np.nan
    fractional = odd.copy()
    fractional.loc[::11, "biased_answer"] = 0.5
    gap = odd.copy()
    gap.loc[::13, "category"] = None
    tables = [frame, apply_design(frame, design), odd, fractional, gap]
    fast = [bias_scores(t, by=list(by)) for t in tables]
    assert bbq._counted(pd.DataFrame({"cond": pd.Categorical(["a"]), "named": [True],
                                      "biased_named": [0.5], "correct": [1.0]}),
                        ["cond"]) is None
    monkeypatch.setattr(bbq, "_counted", lambda data, keys: None)
    for t, ours in zip(tables, fast, strict=True):
        pd.testing.assert_frame_equal(ours, bias_scores(t, by=list(by)), check_exact=True)


def test_as_text_drops_unused_categories_as_pandas_does():
    """``as_text`` (unused categories dropped by a count of the codes, not a sort of every
    row's code) is ``astype("category")`` with text categories in text order, through
    pandas' ``remove_unused_categories``: same values, categories, order and index."""
    import numpy as np

    from analysis.bbq_scores import as_text

    rng = np.random.default_rng(2)
    values = rng.choice(["b", "a", "c", None], 5_000).tolist()
    columns = [pd.Series(values, dtype="str", index=np.arange(5_000) + 3, name="x"),
               pd.Series(pd.Categorical(values, categories=["c", "z", "b", "a"],
                                        ordered=True), name="y"),
               pd.Series(rng.integers(0, 3, 5_000)).astype("category")
               .cat.add_categories([7])]
    for column in columns:
        cats = column if isinstance(column.dtype, pd.CategoricalDtype) \
            else column.astype("category")
        names = [str(c) for c in cats.cat.categories]
        want = (cats.cat.rename_categories(names).cat.reorder_categories(sorted(names))
                .cat.remove_unused_categories())
        pd.testing.assert_series_equal(as_text(column), want)
