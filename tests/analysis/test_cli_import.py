"""``python -m analysis import`` and ``prepare``: outputs, the two-command flow, exit 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.cli import main
from analysis.design import Design
from tests.analysis.cli_helpers import run_json
from tests.analysis.importers.test_bbq import EXAMPLES, write_jsonl


@pytest.fixture
def bbq_file(tmp_path):
    return write_jsonl(tmp_path / "preds_small.jsonl", EXAMPLES)


def test_import_writes_table_design_scores_then_analyse(bbq_file, tmp_path, capsys):
    out, design, scores = tmp_path / "t.parquet", tmp_path / "d.yaml", tmp_path / "s.csv"
    payload = run_json(capsys, "import", "bbq", bbq_file, "--out", out, "--design-out", design,
                       "--scores-out", scores, "--model", "tiny")
    assert payload["counts"]["rows_out"] == 12 and payload["counts"]["unmatched"] == 1
    table = pd.read_parquet(out)
    assert len(table) == 12 and set(table["model"]) == {"tiny"}
    s = pd.read_csv(scores).set_index(["category", "input_format"])
    assert s.loc[("Religion", "x"), "s_AMB"] == pytest.approx(2 / 3)
    assert Design.load(design).outcome.column == "biased_answer"
    # second command: any analysis on the imported table with its design
    sub = run_json(capsys, "subgroups", out, "--design", design, "--factors",
                   "question_polarity", "--level", "1")
    rows = {r["question_polarity"]: r for r in sub["subgroups"]}
    # nonneg rows with a biased_answer: 2:x(1), 3:x(1), 3:y(0), 5:x(0), 5:y(0) -> n 5, k 2;
    # neg: 0:x(1), 0:y(0), 1:x(1), 1:y(0) -> n 4, k 2 (unmatched and ambiguous rows drop out)
    assert (rows["nonneg"]["n"], rows["nonneg"]["deviations"]) == (5, 2)
    assert (rows["neg"]["n"], rows["neg"]["deviations"]) == (4, 2)


def test_import_json_design_and_wide(tmp_path, capsys):
    wide = tmp_path / "w.csv"
    pd.DataFrame({"q": [1, 2], "pred_a": [1, 0], "pred_b": [0, 0]}).to_csv(wide, index=False)
    payload = run_json(capsys, "import", "wide", wide, "--out", tmp_path / "o.csv",
                       "--design-out", tmp_path / "d.json")
    assert payload["counts"]["rows_out"] == 4
    design = json.loads((tmp_path / "d.json").read_text())
    assert {"name": "model", "kind": "model", "reference": "a", "values": ["a", "b"]} in \
        design["factors"]


def _fails(capsys, *argv) -> str:
    assert main([str(a) for a in argv]) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(("content", "fragments"), [
    ("", ["bad.jsonl is empty"]),
    ("q,answer\n1,yes\n", ["bad.jsonl, line 1", "not JSON"]),
    (json.dumps({**EXAMPLES[0], "label": 5}) + "\n", ["bad.jsonl, line 1", "'label'",
                                                      "outside the options"]),
    (json.dumps({k: v for k, v in EXAMPLES[0].items() if k != "answer_info"}) + "\n",
     ["bad.jsonl, line 1", "'answer_info'"]),
])
def test_import_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, content, fragments):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content, encoding="utf-8")
    err = _fails(capsys, "import", "bbq", bad, "--out", tmp_path / "o.csv")
    assert err.startswith("error: ")
    for fragment in fragments:
        assert fragment in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_missing_prediction_column_and_scores_for_wide(bbq_file, tmp_path, capsys):
    err = _fails(capsys, "import", "bbq", bbq_file, "--out", tmp_path / "o.csv",
                 "--prediction-col", "gpt_pred_race")
    assert "preds_small.jsonl, line 1: prediction column 'gpt_pred_race' is missing" in err
    wide = tmp_path / "w.csv"
    pd.DataFrame({"pred_a": [1], "pred_b": [0]}).to_csv(wide, index=False)
    err = _fails(capsys, "import", "wide", wide, "--out", tmp_path / "o.csv",
                 "--design-out", tmp_path / "d.yaml", "--scores-out", tmp_path / "s.csv")
    assert "have no native score" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preds_small.jsonl", "w.csv"]


def test_prepare_command(tmp_path, capsys):
    raw = tmp_path / "raw.csv"
    pd.DataFrame({"gold": ["Paris", "Rome"], "pred_a": ["paris", "Milan"],
                  "pred_b": ["The Paris", "rome."]}).to_csv(raw, index=False)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("- step: melt\n  columns: [pred_a, pred_b]\n  strip: pred_\n"
                      "- step: match\n  text: answer\n  other: gold\n", encoding="utf-8")
    out = tmp_path / "prepared.csv"
    payload = run_json(capsys, "prepare", raw, "--recipe", recipe, "--out", out)
    assert payload["rows"] == 4 and [s["rows_changed"] for s in payload["steps"]] == [4, 4]
    table = pd.read_csv(out)
    assert table["correct"].tolist() == [1, 0, 1, 1]
    assert table["model"].tolist() == ["a", "a", "b", "b"]


def test_prepare_bad_label_exits_2(tmp_path, capsys):
    raw = tmp_path / "raw.csv"
    pd.DataFrame({"a0": ["x"], "a1": ["y"], "label": [4], "pred": ["x"]}).to_csv(raw,
                                                                                 index=False)
    recipe = tmp_path / "r.yaml"
    recipe.write_text("recipe:\n- step: match\n  text: pred\n  options: [a0, a1]\n"
                      "  label: label\n", encoding="utf-8")
    err = _fails(capsys, "prepare", raw, "--recipe", recipe, "--out", tmp_path / "o.csv")
    assert "label column 'label' has 1 rows outside the options (4)" in err
    assert not (tmp_path / "o.csv").exists()
    err = _fails(capsys, "prepare", raw, "--recipe", tmp_path / "none.yaml", "--out",
                 tmp_path / "o.csv")
    assert "none.yaml: no such recipe file" in err
