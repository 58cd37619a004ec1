"""Issue 42's smaller items on the API and the CLI: "did you mean" for a misspelt column
or argument, and the CLI's help naming the command that was typed."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

import analysis.api as bw
from analysis.cli import main
from analysis.errors import AnalysisError

FRAME = pd.DataFrame({"model": ["a", "b"] * 20, "race": ["x", "y", "y", "x"] * 10,
                      "biased": [0, 1, 1, 0, 1] * 8})


def test_the_option_error_for_reference_names_the_argument_references():
    with pytest.raises(AnalysisError, match=r"has no option 'reference'.*\(did you mean the "
                                            r"argument 'references'\?\)"):
        bw.importance(FRAME, factors=["model", "race"], reference={"race": "x"})


@pytest.mark.parametrize("argv, said", [
    (["--factors", "model,racee", "--outcome", "biased"],
     "There is no column 'racee' in the results table. Did you mean 'race'?"),
    (["--factors", "model,race", "--outcome", "biasd"],
     "Outcome column 'biasd' is not in the table. Did you mean 'biased'?"),
])
def test_a_misspelt_column_gets_a_did_you_mean(tmp_path, capsys, argv, said):
    path = tmp_path / "r.csv"
    FRAME.to_csv(path, index=False)
    assert main(["subgroups", str(path), *argv]) == 2
    assert said in capsys.readouterr().err


def test_the_help_names_the_command_typed(tmp_path):
    script = tmp_path / "bias-workbench"
    script.write_text("import sys\nfrom analysis.cli import run\nsys.exit(run())\n")
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith("usage: bias-workbench [-h] SUBCOMMAND")
    out = subprocess.run([sys.executable, "-m", "analysis", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith("usage: python -m analysis [-h] SUBCOMMAND")


def test_the_report_data_summary_counts_the_users_columns_only():
    from analysis.design import apply_design, suggest_design
    from analysis.report import data_summary

    design = suggest_design(FRAME)
    results = apply_design(FRAME, design)
    assert "deviation" in results.columns and results.shape[1] == FRAME.shape[1] + 1
    summary = data_summary(results, design)
    assert summary["columns"] == 3 and summary["rows"] == 40
    assert summary["deviations"] == int(FRAME["biased"].sum())


def test_disparitys_default_feature_is_not_the_0_1_outcome():
    from analysis.design import apply_design, suggest_design
    from analysis.factor_defaults import numeric_columns

    frame = FRAME.assign(sample=[0, 1] * 20, score=[0.1 * (i % 7) for i in range(40)],
                         item_id=range(40))
    design = suggest_design(frame[["model", "race", "biased"]])
    order = numeric_columns(apply_design(frame, design), design)
    assert order[0] == "score" and order.index("biased") > order.index("sample")
    assert order[-1] == "item_id"
    only = numeric_columns(apply_design(FRAME.assign(sample=[0, 1] * 20), design), design)
    assert only == ["sample", "biased"]
