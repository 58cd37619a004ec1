"""Issue 37: the same behaviour in the API and the CLI without a design (the suggested
design, outcome and cluster, each with a note) and the same error for the same bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis import api as bw
from analysis.cli import main
from analysis.errors import AnalysisError
from analysis.io import load_results

SAMPLE = "sample_data/ssqa_simulated.csv.gz"


def _cli(capsys, *argv) -> tuple[int, dict | None, str]:
    code = main([*map(str, argv)])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 and "--json" in argv else None), out.err


def test_without_a_design_the_cli_uses_the_suggested_outcome_like_the_api(capsys):
    """`describe` names the suggested outcome; the CLI refused ("needs an outcome") what
    the API accepted. Both now analyse it, say so, and give the same numbers."""
    frame = load_results(SAMPLE)
    api = bw.subgroups(frame, factors=["model", "cot"], cluster=None)
    assert any("the outcome suggested from the table" in n for n in api.notes)
    code, out, err = _cli(capsys, "subgroups", SAMPLE, "--factors", "model,cot",
                          "--no-cluster", "--json")
    assert code == 0, err
    assert "the deviation is deviation = 1, the outcome suggested from the table" in err
    cli = pd.DataFrame(out["subgroups"])
    np.testing.assert_allclose(cli["log_disparity"], api.table["log_disparity"], rtol=1e-12)
    np.testing.assert_allclose(cli["p_adjusted"], api.table["p_adjusted"], rtol=1e-12)


def test_without_a_design_both_cluster_by_the_inferred_template(capsys):
    frame = load_results(SAMPLE)
    api = bw.subgroups(frame, factors=["model", "cot"])
    assert api.settings["cluster"] == "template"
    assert any("clustered by 'template', inferred from the table" in n for n in api.notes)
    code, out, err = _cli(capsys, "subgroups", SAMPLE, "--factors", "model,cot", "--json")
    assert code == 0, err
    assert out["settings"]["cluster"] == "template" and "clustered by 'template'" in err
    cli = pd.DataFrame(out["subgroups"])
    np.testing.assert_allclose(cli["p_value"], api.table["p_value"], rtol=1e-12)
    np.testing.assert_allclose(cli["ci_low"], api.table["ci_low"], rtol=1e-12)


def test_no_factors_and_no_design_the_suggested_factors(capsys):
    frame = load_results(SAMPLE)
    api = bw.coverage(frame)
    code, out, err = _cli(capsys, "coverage", SAMPLE, "--json")
    assert code == 0, err
    assert "the factors are the suggested ones (cot, stigma" in err
    assert any("the factors are the suggested ones (cot, stigma" in n for n in api.notes)


@pytest.mark.parametrize("cluster", ["nope", "template "])
def test_one_error_for_a_cluster_the_table_lacks(capsys, cluster):
    """The API said "The cluster column ... is not in the table: name another", the CLI
    "Cluster column ... is not in the table (columns: ...)": one resolution, one message."""
    frame = load_results(SAMPLE)
    with pytest.raises(AnalysisError) as caught:
        bw.subgroups(frame, "sample_data/ssqa_simulated.design.yaml",
                     factors=["model", "cot"], cluster=cluster)
    code, _, err = _cli(capsys, "subgroups", SAMPLE, "--design",
                        "sample_data/ssqa_simulated.design.yaml", "--factors", "model,cot",
                        "--cluster", cluster)
    assert code == 2
    assert err.strip() == f"error: {caught.value}"
    assert f"Cluster column {cluster!r} is not in the table (columns: " in str(caught.value)


def test_one_error_without_any_outcome(capsys, tmp_path):
    frame = pd.DataFrame({"model": ["a", "b"] * 20, "score": np.linspace(0.1, 0.9, 40)})
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(AnalysisError) as caught:
        bw.subgroups(frame, factors=["model"])
    code, _, err = _cli(capsys, "subgroups", path, "--factors", "model")
    assert code == 2 and err.strip() == f"error: {caught.value}"
    assert "none could be suggested from the table" in str(caught.value)
