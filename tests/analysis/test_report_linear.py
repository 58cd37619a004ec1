"""The report's importance section for a continuous outcome (DiscrimEval's logit_yes): the
linear (cluster-robust) or mixed fit of analysis.importance_linear with its figure, titled
as the other sections; the ``report`` command carries the settings (--settings)."""

from __future__ import annotations

import zipfile

import numpy as np
import pandas as pd
import pytest
import yaml

from analysis import report as R
from analysis.cli import main
from analysis.columns import COEF, P_VALUE, STD_ERR, TERM
from analysis.design import apply_design
from analysis.importance_linear import linear_importance
from analysis.report_text import figure_title, table_title


@pytest.fixture(scope="module")
def discrim():
    from analysis.importers import import_results
    from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_discrim_eval_explicit_*")
    imported = import_results("lm-eval", [path])
    return imported.frame, imported.design


def _same(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert got[TERM].tolist() == want[TERM].tolist()
    for column in (COEF, STD_ERR, P_VALUE):
        np.testing.assert_allclose(got[column].to_numpy(float), want[column].to_numpy(float),
                                   rtol=1e-9, atol=1e-12)


def test_default_section_is_the_cluster_robust_linear_fit(discrim):
    frame, design = discrim
    results = apply_design(frame, design)
    sec = R.build_section("importance", results, design, {"factors": ["race", "gender"]})
    assert sec.settings["covariates"] == ["age"] and sec.settings["mixed"] is False
    tables = dict(sec.tables)
    assert "factor_importance" not in tables  # not the logistic fit of logit_yes < 0
    want = linear_importance(frame, design, factors=["race", "gender"])
    assert want.covariance == "cluster" and "age" in want.terms[TERM].tolist()
    _same(tables["factor_importance_linear"], want.terms)
    assert tables["factor_importance_linear_tests"]["factor"].tolist() == \
        want.factor_tests["factor"].tolist()
    assert [name for name, _ in sec.figures] == ["factor_importance_linear"]
    assert any("cluster-robust over the 4 values of decision_question_id" in n
               for n in sec.notes)
    assert table_title("factor_importance_linear")[0].endswith("(continuous outcome)")
    assert figure_title("factor_importance_linear")[1].endswith("0 means no effect.")
    html = R.report_html(R.build_report(results, design, [("importance",
                                                           {"factors": ["race", "gender"]})]))
    assert "Factor importance (continuous outcome)" in html


def test_mixed_settings_and_ignored_logistic_options(discrim):
    frame, design = discrim
    results = apply_design(frame, design)
    settings = {"factors": ["race", "gender"], "mixed": True, "random_slopes": False,
                "standardise": False, "interactions": ["race:gender"],
                "where": {"gender": ["female", "male"]}}
    sec = R.build_section("importance", results, design, settings)
    want = linear_importance(frame, design, factors=["race", "gender"], mixed=True,
                             random_slopes=False, standardise=False,
                             where={"gender": ["female", "male"]})
    _same(dict(sec.tables)["factor_importance_linear"], want.terms)
    assert any("interactions: these apply to the logistic model" in w for w in sec.warnings)
    refused = R.build_section("importance", results, design,
                              {"factors": ["race", "gender"], "mixed": True})
    assert not refused.tables and any("did not converge" in w for w in refused.warnings)


def test_report_command_carries_the_settings(discrim, tmp_path):
    frame, design = discrim
    frame.to_csv(tmp_path / "r.csv", index=False)
    (tmp_path / "d.yaml").write_text(design.to_yaml())
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"importance": {
        "factors": ["race", "gender"], "covariates": [], "mixed": True,
        "random_slopes": False}}))
    code = main(["report", str(tmp_path / "r.csv"), "--design", str(tmp_path / "d.yaml"),
                 "--out", str(tmp_path / "r.html"), "--zip", str(tmp_path / "r.zip"),
                 "--sections", "importance", "--settings", str(tmp_path / "s.yaml")])
    assert code == 0
    with zipfile.ZipFile(tmp_path / "r.zip") as z:
        (name,) = [n for n in z.namelist() if n.endswith("importance_factor_importance_linear"
                                                         ".csv")]
        got = pd.read_csv(z.open(name))
    want = linear_importance(frame, design, factors=["race", "gender"], covariates=[],
                             mixed=True, random_slopes=False)
    assert "age" not in got[TERM].tolist()
    _same(got, want.terms)
