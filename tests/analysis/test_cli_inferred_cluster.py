"""The CLI without a design file infers the cluster as the Data page's suggested design
does (issue 24): importance and subgroups on the bundled samples run with ``--factors``
only are cluster-robust over the inferred template, say so, and ``--no-cluster`` gives
the independent-rows numbers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from analysis.cells import cell_table
from analysis.cli import main
from analysis.design import Outcome, apply_design, suggest_design
from analysis.io import load_results
from analysis.subgroups import subgroups
from tests.analysis.cli_helpers import run_json
from tests.app.apptools import ROOT

SSQA = ROOT / "sample_data" / "ssqa_simulated.csv.gz"
BBQ = ROOT / "sample_data" / "bbq_unifiedqa.csv.gz"
F = "model,cot,prompt_style,gender"
REFS = ("--reference", "prompt_style=original", "--reference", "gender=male")


def run(capsys, *argv) -> tuple[dict, str]:
    """The JSON payload and the stderr of ``python -m analysis <argv> --json``."""
    assert main([*map(str, argv), "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def _glm(capsys, *extra: str):
    """The CLI's importance terms on the SSQA sample without a design, and statsmodels'
    row-level binomial GLM on the same design matrix (read from the terms)."""
    out, err = run(capsys, "importance", SSQA, "--outcome", "deviation", "--factors", F,
                   "--exclude", "prompt_style=base", "--no-lr", *REFS, *extra)
    rows = pd.read_csv(SSQA)
    rows = rows[rows["prompt_style"] != "base"]
    X = pd.DataFrame({"const": 1.0}, index=rows.index)
    for t in out["terms"][1:]:
        X[t["term"]] = (rows[t["factor"]].astype(str) == t["value"]).astype(float)
    model = sm.GLM(rows["deviation"].astype(float), X, family=sm.families.Binomial())
    return out, err, model, rows


def test_importance_without_design_is_cluster_robust_over_the_inferred_template(capsys):
    out, err, model, rows = _glm(capsys, "--small-sample", "none")
    s = out["settings"]
    assert s["cluster"] == "template" and s["n_clusters"] == 37
    assert s["cluster_inferred"] == "template"
    assert s["cluster_reason"].startswith("37 values") and "-> cluster" in s["cluster_reason"]
    assert "rows are clustered by 'template', inferred from the table" in err
    assert "--no-cluster" in err
    # the standard errors are statsmodels' cluster-robust ones over `template` (CR1, normal)
    ref = model.fit(cov_type="cluster", cov_kwds={"groups": rows["template"].to_numpy()})
    np.testing.assert_allclose([t["std_err"] for t in out["terms"]], ref.bse, rtol=1e-6)
    np.testing.assert_allclose([t["z"] for t in out["terms"]], ref.tvalues, rtol=1e-6)
    # the default (CR2, Satterthwaite df) is the same as naming the cluster
    default = run_json(capsys, "importance", SSQA, "--outcome", "deviation", "--factors", F,
                       "--exclude", "prompt_style=base", "--no-lr", *REFS)
    named = run_json(capsys, "importance", SSQA, "--outcome", "deviation", "--factors", F,
                     "--exclude", "prompt_style=base", "--no-lr", *REFS, "--cluster",
                     "template")
    assert default["terms"] == named["terms"]
    assert named["settings"]["cluster_inferred"] is None  # named, not inferred
    # issue 38: Satterthwaite df per coefficient (was one G - 1 = 36 for all)
    assert default["settings"]["reference_df"] is None
    assert default["settings"]["df_method"] == "satterthwaite"
    assert all(2 <= t["n_clusters"] <= 37 and 1 < t["df"] < 40 for t in default["terms"])


def test_no_cluster_gives_the_independent_rows_numbers(capsys):
    out, err, model, _ = _glm(capsys, "--no-cluster")
    assert out["settings"]["cluster"] is None and out["settings"]["cluster_inferred"] is None
    assert "clustered by" not in err
    naive = model.fit()
    np.testing.assert_allclose([t["std_err"] for t in out["terms"]], naive.bse, rtol=1e-6)
    np.testing.assert_allclose([t["z"] for t in out["terms"]], naive.tvalues, rtol=1e-6)


def test_subgroups_without_design_match_the_page_with_the_suggested_design(capsys):
    """The Subgroups page on the BBQ sample without a design file uses the suggested
    design's cluster (toggle on): the CLI's numbers are the same."""
    args = ["subgroups", BBQ, "--outcome", "biased_answer", "--factors",
            "category,context_condition", "--level", "1"]
    out = run_json(capsys, *args)
    assert out["settings"]["cluster"] == "template_id"
    assert out["settings"]["cluster_inferred"] == "template_id"
    assert out["settings"]["n_clusters"] == 150
    frame = load_results(BBQ)
    suggested = suggest_design(frame)
    assert suggested.cluster == "template_id"
    design = suggested.subset(["category", "context_condition"]).with_outcome(
        Outcome("biased_answer", "binary"))
    cells = cell_table(apply_design(frame, design),
                       ["category", "context_condition", "template_id"])
    page = subgroups(cells, ["category", "context_condition"], max_level=1,
                     cluster=suggested.cluster)
    cli = pd.DataFrame(out["subgroups"])
    assert len(cli) == len(page) == 8
    for column in ("n", "log_disparity", "ci_low", "ci_high", "p_value", "design_effect"):
        np.testing.assert_allclose(cli[column], page[column].to_numpy(), rtol=1e-9)
    # independent rows only with --no-cluster: narrower intervals for the template-level
    # category (design effects 2.6-8.6 on this sample)
    plain = pd.DataFrame(run_json(capsys, *args, "--no-cluster")["subgroups"])
    width = (cli["ci_high"] - cli["ci_low"]).to_numpy()
    assert (width > (plain["ci_high"] - plain["ci_low"]).to_numpy()).all()


def test_an_inferred_cluster_that_is_a_factor_is_not_used(capsys):
    out, err = run(capsys, "subgroups", SSQA, "--outcome", "deviation", "--factors",
                   "template,cot", "--level", "1")
    assert out["settings"]["cluster"] is None and out["settings"]["cluster_inferred"] is None
    assert "makes 'template' the cluster" in err and "is a factor of this analysis" in err


def test_a_table_without_template_infers_nothing(tmp_path, capsys):
    rows = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["u"] * 50 + ["v"] * 50,
                         "biased": [0, 1, 1, 0] * 25})
    path = tmp_path / "plain.csv"
    rows.to_csv(path, index=False)
    out, err = run(capsys, "subgroups", path, "--outcome", "biased", "--factors", "a,b",
                   "--level", "1")
    assert out["settings"]["cluster"] is None and out["settings"]["cluster_inferred"] is None
    assert "clustered" not in err


def test_bootstrap_of_ecdf_resamples_the_inferred_cluster(capsys):
    out = run_json(capsys, "ecdf", SSQA, "--outcome", "deviation", "--by", "model",
                   "--factors", "cot,gender", "--ci", "bootstrap", "--n-boot", "20")
    assert out["bootstrap"]["settings"]["cluster"] == "template"
    assert out["bootstrap"]["cluster_inferred"] == "template"
    plain, err = run(capsys, "ecdf", SSQA, "--outcome", "deviation", "--by", "model",
                     "--factors", "cot,gender")
    assert "bootstrap" not in plain
    assert "clustered" not in err  # no bootstrap: nothing to cluster


@pytest.mark.parametrize("path", [BBQ, SSQA, ROOT / "tests" / "data" / "ssqa"
                                  / "ssqa_factor_table.csv.gz"])
def test_cli_and_suggested_design_agree_on_the_cluster(path):
    from analysis.structure import inferred_cluster

    frame = load_results(path)
    design = suggest_design(frame)
    column, reason = inferred_cluster(frame, outcome=design.outcome.column
                                      if design.outcome else None)
    assert column == design.cluster and column in ("template_id", "template")
    assert f"cluster: {reason}" in design.inferred["reasons"]


def test_the_subgroups_page_without_a_design_agrees_with_the_cli(capsys):
    """The Subgroups page on the BBQ sample uploaded without its design (the Data page's
    suggested design) shows the CLI's cluster-robust numbers for the same factors."""
    from tests.app.apptools import page_test

    frame = load_results(BBQ)
    suggested = suggest_design(frame)  # what the Data page sets on an upload (ui/data.py)
    assert suggested.outcome.column == "biased_answer"
    at = page_test("subgroups.py", frame=frame, design=suggested,
                   name="bbq_unifiedqa.csv.gz").run()
    assert not at.exception and not at.error
    at.multiselect(key="subgroups_factors").set_value(["category", "context_condition"]).run()
    assert not at.exception and not at.error
    assert at.toggle(key="subgroups_clustered").value is True
    page = at.dataframe[0].value
    assert set(page["test"].dropna()) == {"cluster t"}
    out = run_json(capsys, "subgroups", BBQ, "--outcome", "biased_answer", "--factors",
                   "category,context_condition")
    cli = pd.DataFrame(out["subgroups"])
    assert out["settings"]["cluster_inferred"] == "template_id"
    assert len(cli) == len(page)
    np.testing.assert_allclose(np.sort(cli["p_value"]), np.sort(page["p_value"]), rtol=1e-9)
    np.testing.assert_allclose(np.sort(cli["ci_low"]), np.sort(page["ci_low"]), rtol=1e-9)
