"""Loading and validating four-stage files (judges/fourstage.py)."""

from __future__ import annotations

import filecmp

import pandas as pd
import pytest

from judges.errors import FourStageError
from judges.fourstage import load_fourstage, sample_path, stage_counts, validate_fourstage
from tests.judges.helpers import ROOT, make_row


def test_valid_table_keeps_rows_columns_and_extras():
    rows = [make_row(i, s) for i, s in enumerate((1, 2, 3, 4))]
    for r in rows:
        r["temperature_under_test"] = 0.7
    frame = validate_fourstage(pd.DataFrame(rows))
    assert frame["stage"].tolist() == [1, 2, 3, 4]
    assert str(frame["stage"].dtype) == "int64"
    assert frame["temperature_under_test"].tolist() == [0.7] * 4
    assert list(frame.columns)[:5] == ["id", "stage", "sensitive_factor", "scenario", "model"]


def test_stage_given_as_text_or_float_is_accepted():
    rows = [make_row(0, 1), make_row(1, 2)]
    rows[0]["stage"], rows[1]["stage"] = "1", 2.0
    assert validate_fourstage(pd.DataFrame(rows))["stage"].tolist() == [1, 2]


def test_every_problem_is_named_by_row_id_and_column():
    rows = [make_row(0, 1), make_row(1, 2), make_row(2, 3), make_row(3, 4)]
    rows[0]["answer"] = "   "
    rows[1]["story_b"] = None
    rows[2]["stage"] = 7
    rows[3]["model"] = ""
    with pytest.raises(FourStageError) as info:
        validate_fourstage(pd.DataFrame(rows))
    problems = info.value.problems
    assert "row 1 (id q0), stage 1: answer is empty." in problems
    assert "row 2 (id q1), stage 2: story_b is empty." in problems
    assert "row 3 (id q2): stage is 7; it must be 1, 2, 3 or 4." in problems
    assert "row 4 (id q3), stage 4: model is empty." in problems
    assert len(problems) == 4
    assert "4 problems" in str(info.value)


def test_missing_stage_column_names_the_rows_that_need_it():
    frame = pd.DataFrame([make_row(0, 1), make_row(1, 1)]).drop(columns=["expected_output"])
    frame = pd.concat([frame, pd.DataFrame([make_row(2, 4)])], ignore_index=True)
    frame.loc[2, "expected_output"] = "x"
    frame = frame.drop(columns=["expected_output"])
    with pytest.raises(FourStageError) as info:
        validate_fourstage(frame)
    assert info.value.problems == [
        "Missing column 'expected_output', needed by stage 1, 4 rows (3: rows 1, 2, 3)."]


def test_missing_common_columns_and_stage():
    with pytest.raises(FourStageError, match="Missing column.*stage"):
        validate_fourstage(pd.DataFrame({"id": [1], "question": ["q"]}))
    with pytest.raises(FourStageError, match="no rows"):
        validate_fourstage(pd.DataFrame(columns=["id", "stage"]))


def test_stage_2_question_is_optional_and_stage_3_needs_all_four_texts():
    two = make_row(0, 2)
    assert "question" not in two
    three = make_row(1, 3)
    del three["answer_a"]
    with pytest.raises(FourStageError) as info:
        validate_fourstage(pd.DataFrame([two, three]))
    assert info.value.problems == [
        "Missing column 'answer_a', needed by stage 3 rows (1: rows 2)."]


def test_load_from_bytes_and_file_errors(tmp_path):
    frame = pd.DataFrame([make_row(0, 1), make_row(1, 3)])
    data = frame.to_csv(index=False).encode()
    loaded = load_fourstage(data, name="upload.csv")
    assert loaded.shape == (2, frame.shape[1])
    with pytest.raises(FourStageError):
        load_fourstage(b"", name="empty.csv")


def test_bundled_sample_is_valid_and_covers_the_design():
    frame = load_fourstage(sample_path())
    assert len(frame) == 32
    assert sorted(frame["stage"].unique()) == [1, 2, 3, 4]
    assert frame["sensitive_factor"].nunique() == 4
    assert sorted(frame["model"].unique()) == ["model-a", "model-b"]
    assert frame.groupby(["stage", "model"]).size().eq(4).all()
    assert frame["source"].str.contains("illustrative").all()
    counts = stage_counts(frame)
    assert counts["calls"].tolist() == [8, 24, 8, 8]
    # the repository copy and the packaged copy are the same file
    assert filecmp.cmp(sample_path(), ROOT / "sample_data" / "fourstage_illustrative.csv",
                       shallow=False)
