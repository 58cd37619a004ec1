"""The BBQ importer: hand-computed cases, the six real BBQ files, bad input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.importers import ImportFormatError, import_results
from analysis.importers.bbq import bias_scores
from tests.conftest import SAMPLE_DIR, SHARED_DATA, needs_shared

RELIGION_INFO = {"ans0": ["Jewish", "Jewish"], "ans1": ["Can't answer", "unknown"],
                 "ans2": ["Muslim", "Muslim"]}
DRESS_INFO = {"ans0": ["with tattoos", "negDress"], "ans1": ["Unknown", "unknown"],
              "ans2": ["with no tattoos", "negDress"]}


def example(i, polarity, condition, label, x, y, *, info=RELIGION_INFO, groups=("Muslim",)):
    texts = ({"ans0": "The Jewish one", "ans1": "Can't answer", "ans2": "The Muslim one"}
             if info is RELIGION_INFO else
             {"ans0": "The guy with tattoos", "ans1": "Unknown",
              "ans2": "The guy with no tattoos"})
    return {"example_id": i, "question_index": "1", "question_polarity": polarity,
            "context_condition": condition, "category": "Religion", "answer_info": info,
            "additional_metadata": {"subcategory": "None", "stereotyped_groups": list(groups)},
            "context": "c", "question": "q", **texts, "label": label,
            "m_pred_x": x, "m_pred_y": y}


EXAMPLES = [
    example(0, "neg", "ambig", 1, "the muslim one", "Can't answer"),
    example(1, "neg", "disambig", 2, "The Muslim one", "the jewish one"),
    example(2, "nonneg", "ambig", 1, "the jewish one", "purple"),
    example(3, "nonneg", "disambig", 0, "The Jewish one.", "the muslim one"),
    example(4, "neg", "disambig", 0, "the guy with tattoos", "unknown",
            info=DRESS_INFO, groups=("negDress",)),
    example(5, "nonneg", "ambig", 1, "Can't be determined", "the muslim one"),
]


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def small(tmp_path):
    return write_jsonl(tmp_path / "preds_small.jsonl", EXAMPLES)


def test_hand_computed_rows(small):
    res = import_results("bbq", [small])
    f = res.frame.set_index(["example_id", "input_format"])
    assert len(f) == 12 and set(res.frame["model"]) == {"m"}
    expected = {  # (answer_type, correct, biased_answer)
        ("Religion-0", "x"): ("stereotyped", 0, 1), ("Religion-0", "y"): ("unknown", 1, 0),
        ("Religion-1", "x"): ("stereotyped", 1, 1), ("Religion-1", "y"): ("anti-stereotyped", 0, 0),
        ("Religion-2", "x"): ("anti-stereotyped", 0, 1),
        ("Religion-2", "y"): ("unmatched", 0, None),
        ("Religion-3", "x"): ("anti-stereotyped", 1, 1), ("Religion-3", "y"): ("stereotyped", 0, 0),
        ("Religion-4", "x"): ("ambiguous target", 1, None),
        ("Religion-4", "y"): ("unknown", 0, None),
        ("Religion-5", "x"): ("unknown", 1, 0), ("Religion-5", "y"): ("stereotyped", 0, 0),
    }
    for key, (kind, correct, biased) in expected.items():
        row = f.loc[key]
        assert row["answer_type"] == kind, key
        assert row["correct"] == correct, key
        assert (pd.isna(row["biased_answer"]) if biased is None
                else row["biased_answer"] == biased), key
    assert f.loc[("Religion-5", "x"), "match_method"] == "unknown phrase"
    assert f.loc[("Religion-2", "y"), "predicted_option"] == "unmatched"
    assert f.loc[("Religion-4", "x"), "stereotyped_option"] == "ambiguous"
    assert f.loc[("Religion-0", "x"), "stereotyped_option"] == "ans2"
    assert f.loc[("Religion-0", "x"), "unknown_option"] == "ans1"
    assert f.loc[("Religion-0", "x"), "subcategory"] == "none"
    assert res.counts["examples"] == 6 and res.counts["rows_out"] == 12
    assert res.counts["unmatched"] == 1
    assert res.counts["ambiguous_target_examples"] == 1
    assert res.counts["ambiguous_target_rows"] == 2
    assert any("purple" in n for n in res.notes)
    assert res.design.outcome.column == "biased_answer"
    assert res.design.factor("question_polarity").reference == "nonneg"
    assert res.design.factor("context_condition").reference == "disambig"


def test_hand_computed_bias_scores(small):
    scores = import_results("bbq", [small]).extras["bias_scores"]
    s = scores.set_index(["category", "input_format"])
    # x: disambig rows 1 and 3 are both biased -> s_DIS = 1; ambiguous rows 0, 2 biased,
    # 5 unknown (correct) -> s = 1, accuracy 1/3 -> s_AMB = 2/3. Example 4 is left out.
    assert s.loc[("Religion", "x"), "n_dis"] == 2
    assert s.loc[("Religion", "x"), "s_DIS"] == pytest.approx(1.0)
    assert s.loc[("Religion", "x"), "accuracy_amb"] == pytest.approx(1 / 3)
    assert s.loc[("Religion", "x"), "s_AMB"] == pytest.approx(2 / 3)
    # y: disambig rows 1, 3 unbiased -> -1; ambiguous: 0 unknown (correct), 2 unmatched
    # (dropped), 5 stereotyped in a nonneg question -> s = -1, accuracy 1/2 -> -0.5.
    assert s.loc[("Religion", "y"), "s_DIS"] == pytest.approx(-1.0)
    assert s.loc[("Religion", "y"), "n_amb"] == 2
    assert s.loc[("Religion", "y"), "n_non_unknown_amb"] == 1
    assert s.loc[("Religion", "y"), "s_AMB"] == pytest.approx(-0.5)
    assert len(s) == 2  # one category: no "all" rows
    # bias_scores works on an imported table read back from CSV (no model column)
    frame = import_results("bbq", [small]).frame.drop(columns="model")
    again = bias_scores(frame.astype({"biased_answer": "float"}), overall=False)
    assert again["s_AMB"].tolist() == pytest.approx([2 / 3, -0.5])


def test_model_and_prediction_columns(small, tmp_path):
    res = import_results("bbq", [small], model="my-model")
    assert set(res.frame["model"]) == {"my-model"}
    assert set(res.frame["input_format"]) == {"x", "y"}
    records = [{**{k: v for k, v in e.items() if not k.startswith("m_pred")},
                "answer": e["m_pred_x"]} for e in EXAMPLES]
    plain = write_jsonl(tmp_path / "plain.jsonl", records)
    res = import_results("bbq", [plain], prediction_cols=["answer"])
    assert len(res.frame) == 6
    assert set(res.frame["model"]) == {"answer"} and set(res.frame["input_format"]) == {"default"}
    # two files of two models -> a model factor
    other = write_jsonl(tmp_path / "other.jsonl",
                        [{**{k: v for k, v in e.items() if not k.startswith("m_pred")},
                          "n_pred_x": e["m_pred_y"]} for e in EXAMPLES])
    both = import_results("bbq", [small, other], prediction_cols=None)
    assert both.counts["rows_out"] == 12 + 6
    assert both.frame.groupby("model").size().to_dict() == {"m": 12, "n": 6}
    with pytest.raises(ImportFormatError, match="appears twice"):
        import_results("bbq", [small, small])
    assert "model" in both.design.names


@pytest.mark.parametrize(("content", "message"), [
    ("", "preds_bad.jsonl is empty"),
    ("\n\n", "preds_bad.jsonl is empty"),
    ("a,b\n1,2\n", "preds_bad.jsonl, line 1: not JSON"),
    ('{"example_id": 0}\n', "preds_bad.jsonl, line 1: field 'category' is missing"),
])
def test_bad_files(tmp_path, content, message):
    path = tmp_path / "preds_bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ImportFormatError, match=message):
        import_results("bbq", [path])


def test_bad_fields(tmp_path):
    bad_label = write_jsonl(tmp_path / "label.jsonl", [{**EXAMPLES[0], "label": 3}])
    with pytest.raises(ImportFormatError, match=r"label.jsonl, line 1: field 'label' is 3, "
                                                r"outside the options"):
        import_results("bbq", [bad_label])
    with pytest.raises(ImportFormatError, match="prediction column 'gpt_pred_race' is missing"):
        import_results("bbq", [write_jsonl(tmp_path / "p.jsonl", EXAMPLES)],
                       prediction_cols=["gpt_pred_race"])
    no_pred = write_jsonl(tmp_path / "nopred.jsonl",
                          [{k: v for k, v in e.items() if "_pred_" not in k} for e in EXAMPLES])
    with pytest.raises(ImportFormatError, match=r"nopred.jsonl: no prediction column"):
        import_results("bbq", [no_pred])
    later = write_jsonl(tmp_path / "later.jsonl",
                        [EXAMPLES[0], {k: v for k, v in EXAMPLES[1].items() if k != "m_pred_y"}])
    with pytest.raises(ImportFormatError, match=r"later.jsonl, line 2: prediction column "
                                                r"'m_pred_y' is missing"):
        import_results("bbq", [later])
    with pytest.raises(ImportFormatError, match="no such file"):
        import_results("bbq", [tmp_path / "absent.jsonl"])


@pytest.fixture(scope="module")
def six():
    paths = sorted((SHARED_DATA / "bbq").glob("preds_*.jsonl.gz"))  # gzip copies (tests/data)
    formats = ("race", "arc", "qonly")
    return import_results("bbq", paths,
                          prediction_cols=[f"unifiedqa-t5-11b_pred_{f}" for f in formats])


@needs_shared
def test_six_real_files_every_row_accounted_for(six):
    lines = sum(sum(1 for line in gzip.decompress(p.read_bytes()).decode().splitlines()
                    if line.strip())
                for p in (SHARED_DATA / "bbq").glob("preds_*.jsonl.gz"))
    assert lines == 11_956 == six.counts["examples"]
    frame = six.frame
    assert len(frame) == 3 * lines == six.counts["rows_out"]
    assert not frame.duplicated(["example_id", "input_format"]).any()
    methods = {k: v for k, v in six.counts.items() if k.startswith("matched by")}
    assert sum(methods.values()) == len(frame)
    assert six.counts["unmatched"] == 3 == methods["matched by no rule"]
    assert six.counts["ambiguous_target_rows"] == 108
    kinds = frame["answer_type"].value_counts()
    assert kinds.sum() == len(frame)
    assert frame["biased_answer"].isna().sum() == 3 + 108


@needs_shared
def test_six_real_files_scores_equal_the_bundled_sample(six):
    bundled = pd.read_csv(SAMPLE_DIR / "bbq_unifiedqa_bias_scores.csv")
    ours = six.extras["bias_scores"].drop(columns="model")
    assert list(ours.columns) == list(bundled.columns)
    assert ours[["category", "input_format"]].values.tolist() == \
        bundled[["category", "input_format"]].values.tolist()
    for col in bundled.columns[2:]:
        np.testing.assert_allclose(ours[col].to_numpy(float), bundled[col].to_numpy(float),
                                   atol=5e-5, err_msg=col)
    # and the bundled table itself, read back from CSV, gives the same scores
    sample = pd.read_csv(SAMPLE_DIR / "bbq_unifiedqa.csv.gz")
    again = bias_scores(sample).drop(columns="model")
    np.testing.assert_allclose(again["s_AMB"].to_numpy(float), ours["s_AMB"].to_numpy(float))
