"""'Copy as CLI / Python' on the Factor importance page for a continuous outcome: the copied
command and script, run in-process on the files they name, give the page's coefficients,
standard errors and p-values (linear fit with covariates, the mixed fit, no covariates)."""

from __future__ import annotations

import io
import json
import shlex
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest

from analysis.cli import main
from analysis.columns import COEF, P_VALUE, STD_ERR, TERM
from analysis.reproduce import importance_linear_view
from tests.app.apptools import page_test


@pytest.fixture(scope="module")
def discrim():
    from analysis.importers import import_results
    from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_discrim_eval_explicit_*")
    imported = import_results("lm-eval", [path])
    return imported.frame, imported.design


def _page(discrim, tmp_path, monkeypatch, **state):
    """Run the page with these widget values; save the table and the design where the
    copied command expects them (results.csv, design.yaml) and work from there."""
    frame, design = discrim
    frame.to_csv(tmp_path / "results.csv", index=False)
    (tmp_path / "design.yaml").write_text(design.to_yaml())
    monkeypatch.chdir(tmp_path)
    at = page_test("importance.py", frame=frame, design=design, name="results.csv")
    at.session_state["importance_factors"] = ["race", "gender"]
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.exception]
    (cli,) = [c.value for c in at.code if c.language == "bash"]
    (code,) = [c.value for c in at.code if c.language == "python"]
    return at, cli, code


def _run_cli(cli: str) -> pd.DataFrame:
    argv = shlex.split(cli)
    assert argv[:3] == ["python", "-m", "analysis"]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv[3:]) == 0
    return pd.DataFrame(json.loads(out.getvalue())["terms"])


def _run_script(code: str) -> pd.DataFrame:
    namespace: dict = {}
    with redirect_stdout(io.StringIO()):
        exec(compile(code, "<copied>", "exec"), namespace)  # noqa: S102 - the page's own script
    if "result" in namespace:  # bw.importance (the logistic fit, composed in analysis.api)
        return namespace["result"].table
    return namespace["fit"].terms


def _same(page: pd.DataFrame, other: pd.DataFrame) -> None:
    assert other[TERM].tolist() == page[TERM].tolist()
    for column in (COEF, STD_ERR, P_VALUE):
        np.testing.assert_allclose(other[column].to_numpy(float), page[column].to_numpy(float),
                                   rtol=1e-9, atol=1e-12)


def test_linear_fit_with_the_design_covariate_and_cluster(discrim, tmp_path, monkeypatch):
    at, cli, code = _page(discrim, tmp_path, monkeypatch)
    # the design's cluster (decision_question_id), alpha 0.05 and no adjustment are the
    # command's defaults: not repeated
    assert cli == ("python -m analysis importance results.csv --design design.yaml "
                   "--factors race,gender --reference race=white "
                   "--reference gender=male --outcome-type continuous --covariate age --json")
    page = at.dataframe[0].value
    assert "age" in page[TERM].tolist() and page[STD_ERR].notna().all()
    _same(page, _run_cli(cli))
    _same(page, _run_script(code))


def test_mixed_intercept_raw_covariate_and_subset(discrim, tmp_path, monkeypatch):
    at, cli, code = _page(discrim, tmp_path, monkeypatch, importance_mixed=True,
                          importance_random="intercept", importance_standardise=False,
                          importance_where_gender=["female", "male"],
                          importance_ref_race="black")
    for flag in ("--mixed", "--random-effects intercept", "--raw-covariates",
                 "--reference race=black"):
        assert flag in cli
    page = at.dataframe[0].value
    _same(page, _run_cli(cli))
    _same(page, _run_script(code))
    unstandardised = page.set_index(TERM).loc["age", COEF]
    _, standard, _ = _page(discrim, tmp_path, monkeypatch, importance_mixed=True,
                           importance_random="intercept", importance_ref_race="black")
    assert _run_cli(standard).set_index(TERM).loc["age", COEF] == pytest.approx(
        unstandardised * discrim[0]["age"].std(), rel=1e-6)  # per sd = per year x sd


def test_no_covariate_and_no_cluster_are_said(discrim, tmp_path, monkeypatch):
    at, cli, code = _page(discrim, tmp_path, monkeypatch, importance_covariates=[],
                          importance_cluster=None)
    assert "--no-covariates" in cli and "--no-cluster" in cli and "--covariate" not in cli
    page = at.dataframe[0].value
    assert "age" not in page[TERM].tolist()
    _same(page, _run_cli(cli))
    _same(page, _run_script(code))


def test_view_leaves_out_flags_that_change_nothing():
    options = {"factors": ["a"], "references": {"a": "x"}, "alpha": 0.05, "adjust": "none",
               "cluster": None}
    view = importance_linear_view(options, {"covariates": [], "standardise": False,
                                            "mixed": False, "random_slopes": False,
                                            "accept_unconverged": True})
    flags = [name for name, value in view.options if value not in (None, False, [], "")]
    assert flags == ["factors", "reference", "outcome-type", "adjust"]


def test_logistic_fit_with_a_covariate_on_the_page(discrim, tmp_path, monkeypatch):
    """A 0/1 outcome (DiscrimEval's logit_yes < 0 declared binary) with age as covariate:
    the page shows logistic_with_covariates; the copied command and script and the report
    section stored by "Add to report" give its numbers."""
    from dataclasses import replace

    from analysis.design import apply_design
    from analysis.importance_linear import logistic_with_covariates
    from analysis.report import build_section

    frame, design = discrim
    binary = design.with_outcome(replace(design.outcome, type="binary"))
    at, cli, code = _page((frame, binary), tmp_path, monkeypatch,
                          importance_covariates=["age"], importance_standardise=False)
    assert "--covariate age --raw-covariates" in cli and "--outcome-type" not in cli
    page = at.dataframe[0].value
    want = logistic_with_covariates(apply_design(frame, binary), binary, covariates=["age"],
                                    standardise=False, factors=["race", "gender"])
    _same(page, want.terms)
    assert page[TERM].iloc[-1] == "age" and want.covariance != "naive"
    _same(page, _run_cli(cli))
    _same(page, _run_script(code))
    at.button(key="report_add_importance").click().run()
    settings = at.session_state["report_sections"][0]["settings"]
    assert settings["covariates"] == ["age"] and settings["standardise"] is False
    sec = build_section("importance", apply_design(frame, binary), binary, settings)
    _same(page, dict(sec.tables)["factor_importance"])
    at.session_state["importance_covariates"] = []
    at.run()
    assert "age" not in at.dataframe[0].value[TERM].tolist()  # back to factor_importance


def test_covariates_with_interactions_are_refused_with_a_message(discrim, tmp_path,
                                                                 monkeypatch):
    from dataclasses import replace

    from analysis.design import apply_design
    from analysis.errors import AnalysisError
    from analysis.report import build_section

    frame, design = discrim
    binary = design.with_outcome(replace(design.outcome, type="binary"))
    frame.to_csv(tmp_path / "results.csv", index=False)
    at = page_test("importance.py", frame=frame, design=binary, name="results.csv")
    at.session_state["importance_factors"] = ["race", "gender"]
    at.session_state["importance_covariates"] = ["age"]
    at.session_state["importance_interactions"] = ["race:gender"]
    at.run()
    assert not at.exception
    assert "do not combine with interactions" in at.error[0].value and not at.dataframe
    with pytest.raises(AnalysisError, match="covariates in the logistic model"):
        build_section("importance", apply_design(frame, binary), binary,
                      {"factors": ["race", "gender"], "covariates": ["age"],
                       "interactions": ["race:gender"]})
