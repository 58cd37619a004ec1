"""The flat API's plan and power (analysis.api) against analysis.planning and the CLI,
their options (strings, bad names) and the one default of the power analysis."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pandas as pd
import pytest

from analysis import api as bw
from analysis.cells import cell_table
from analysis.cli import main
from analysis.design import Design
from analysis.errors import AnalysisError
from analysis.io import load_results
from analysis.options import OptionError
from analysis.options.planning import PowerOptions
from analysis.planning import plan_additions, sample_size

ROOT = Path(__file__).resolve().parents[2]
SSQA = ROOT / "sample_data" / "ssqa_simulated.csv.gz"
SSQA_DESIGN = ROOT / "sample_data" / "ssqa_simulated.design.yaml"


def test_power_is_sample_size_and_the_cli(capsys):
    got = bw.power(rate="0.3", ld=0.4, share=0.1, power="0.9")
    assert got.table.iloc[0].to_dict() == pytest.approx(
        sample_size(rate=0.3, ld=0.4, share=0.1, power=0.9))
    assert main(["power", "--rate", "0.3", "--ld", "0.4", "--share", "0.1", "--power", "0.9",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == pytest.approx(got.raw)
    assert got.table.iloc[0]["achieved_power"] >= 0.9 and got.settings["alpha"] == 0.05


def test_power_defaults_and_bad_input():
    params = inspect.signature(sample_size).parameters
    assert params["alpha"].default == PowerOptions.default("alpha") == 0.05
    assert params["power"].default == PowerOptions.default("power") == 0.8
    with pytest.raises(OptionError, match="has no option 'level'.*alpha, power"):
        bw.power(rate=0.3, ld=0.4, share=0.1, level=0.9)
    with pytest.raises(AnalysisError, match="rate must be a number, not 'high'"):
        bw.power(rate="high", ld=0.4, share=0.1)
    with pytest.raises(AnalysisError, match="power must lie strictly between 0 and 1"):
        bw.power(rate=0.3, ld=0.4, share=0.1, power=1.5)


def test_plan_is_plan_additions():
    factors = ["stigma", "gender", "prompt_style"]
    got = bw.plan(str(SSQA), str(SSQA_DESIGN), budget="300", factors=",".join(factors))
    design = Design.load(SSQA_DESIGN).subset(factors)
    from analysis.design import apply_design

    rows = apply_design(load_results(SSQA), Design.load(SSQA_DESIGN))
    want = plan_additions(cell_table(rows, factors, with_outcome=False), design,
                          factors=factors, budget=300)
    pd.testing.assert_frame_equal(got.table, want.add)
    assert got.table["n"].sum() == 300 and got.notes == want.notes
    summary = got.tables["summary"].set_index("when")
    assert summary.loc["after", "n_rows"] - summary.loc["before", "n_rows"] == 300
    assert summary.loc["after", "gini_index"] < summary.loc["before", "gini_index"]


def test_plan_of_a_new_benchmark_and_bad_input():
    new = bw.plan(None, str(SSQA_DESIGN), budget=40, factors=["gender", "prompt_style"])
    assert new.table["n"].sum() == 40 and new.tables["summary"].iloc[0]["n_rows"] == 0
    with pytest.raises(AnalysisError, match="budget="):
        bw.plan(None, str(SSQA_DESIGN))
    with pytest.raises(OptionError, match="budget: .*'many'"):
        bw.plan(None, str(SSQA_DESIGN), budget="many")
