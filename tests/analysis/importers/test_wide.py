"""The wide importer: per-model columns melted into a factor."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.importers import ImportFormatError, import_results


@pytest.fixture
def wide(tmp_path):
    path = tmp_path / "wide.csv"
    pd.DataFrame({"item": ["q1", "q2", "q3"], "gold": ["yes", "no", "yes"],
                  "pred_gpt4": ["yes", "no", "no"], "pred_llama": ["no", None, "yes"]}
                 ).to_csv(path, index=False)
    return path


def test_melts_prediction_columns_into_a_model_factor(wide):
    res = import_results("wide", [wide])
    f = res.frame
    assert f.columns.tolist() == ["item", "gold", "model", "answer"]
    assert f["model"].tolist() == ["gpt4"] * 3 + ["llama"] * 3
    assert f["answer"].fillna("-").tolist() == ["yes", "no", "no", "no", "-", "yes"]
    assert res.counts == {"rows_read": 3, "columns_melted": 2, "rows_out": 6, "empty_values": 1}
    model = res.design.factor("model")
    assert model.kind == "model" and model.values == ("gpt4", "llama")


def test_named_columns_factor_and_value_names(wide, tmp_path):
    res = import_results("wide", [wide], prediction_cols=["pred_llama"], factor="setting",
                         value="reply")
    assert len(res.frame) == 3 and set(res.frame["setting"]) == {"llama"}
    assert "pred_gpt4" in res.frame.columns  # not melted, kept as it is
    second = tmp_path / "wide2.csv"
    pd.read_csv(wide).to_csv(second, index=False)
    both = import_results("wide", [wide, second])
    assert len(both.frame) == 12
    assert both.frame["source_file"].value_counts().to_dict() == {"wide.csv": 6, "wide2.csv": 6}


def test_bad_input(wide, tmp_path):
    with pytest.raises(ImportFormatError, match="prediction column 'pred_x' is missing"):
        import_results("wide", [wide], prediction_cols=["pred_x"])
    plain = tmp_path / "plain.csv"
    plain.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(ImportFormatError, match="plain.csv: no column to melt"):
        import_results("wide", [plain])
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ImportFormatError, match="empty.csv is empty"):
        import_results("wide", [empty])
    with pytest.raises(ImportFormatError, match="has no option 'model'"):
        import_results("wide", [wide], model="x")
