"""Issue 37, item 3 on the pages: the new ``adjust`` options where the pages show adjusted
p-values. Compare's subgroup tables (``compare_option_subgroup_adjust``) and native-score
deltas (``compare_native_adjust``), the Cohorts page's time capsules
(``cohorts_capsule_adjust``) and the Subgroups page's group means (its ``adjust``): a
non-default method gives the API's numbers (= ``multipletests``), the header names the
method, and the copied command and script carry it
(tests/analysis/test_adjust_options.py runs the API, CLI and report side)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis import api as bw
from tests.analysis.test_adjust_options import CAPSULES, multipletests_of
from tests.app.apptools import page_test, sample_with_design


def _headers(frame) -> dict[str, str]:
    """Column -> header of a page's ``st.dataframe`` (its column config)."""
    return {k: v.get("label") for k, v in json.loads(frame.proto.columns or "{}").items()}


def _with(at, column: str):
    return [d for d in at.dataframe if column in d.value.columns]


@pytest.fixture(scope="module")
def bbq():
    return sample_with_design("bbq_unifiedqa.csv.gz")


def test_compare_subgroup_tables_follow_subgroup_adjust(bbq):
    frame, design = bbq
    at = page_test("compare.py", frame=frame, design=design, name="bbq_unifiedqa.csv.gz").run()
    assert not at.exception and not at.error
    (default,) = _with(at, "subgroup")
    assert _headers(default)["p_adjusted"] == "p (BH)"
    raw = default.value["p_value"].to_numpy(float)
    at.selectbox(key="compare_option_subgroup_adjust").set_value("holm").run()
    assert not at.exception and not at.error
    (table,) = _with(at, "subgroup")
    heads = _headers(table)
    assert heads["p_adjusted"] == "p (Holm)"
    if "ld_p_adjusted" in heads:
        assert heads["ld_p_adjusted"] == "LD p (Holm)"
    shown = table.value
    np.testing.assert_array_equal(shown["p_value"].to_numpy(float), raw)
    np.testing.assert_allclose(shown["p_adjusted"], multipletests_of(shown["p_value"], "holm"),
                               rtol=1e-12, equal_nan=True)
    assert any("p (Holm): Holm across the subgroups" in c.value for c in at.caption)
    (cli,) = [c.value for c in at.code if c.language == "bash"
              and c.value.startswith("python -m analysis compare")]
    assert "--subgroup-adjust holm" in cli
    (code,) = [c.value for c in at.code if c.language == "python"
               and c.value.startswith("from analysis import")]
    assert "subgroup_adjust='holm'" in code


def test_native_deltas_follow_their_adjustment(bbq):
    frame, design = bbq
    at = page_test("compare.py", frame=frame, design=design, name="bbq_unifiedqa.csv.gz").run()
    at.selectbox(key="compare_native_adjust").set_value("bonferroni")
    at.button(key="compare_native_run").click().run()
    assert not at.exception and not at.error
    (table,) = _with(at, "estimate_a")
    assert _headers(table)["p_adjusted"] == "p (Bonferroni)"
    by = at.selectbox(key="compare_by").value
    api = bw.native_deltas(frame, design, by=by, adjust="bonferroni").table
    keys = ["model_a", "model_b", "score", "scope", "group"]
    both = table.value.merge(api, on=keys, suffixes=("", "_api"))
    assert len(both) == len(table.value) > 0
    np.testing.assert_allclose(both["p_adjusted"], both["p_adjusted_api"], rtol=1e-12,
                               equal_nan=True)
    copied = [c.value for c in at.code if c.value.startswith("# the native scores'")]
    assert len(copied) == 2 and "--native-adjust bonferroni" in copied[0]
    assert "adjust='bonferroni'" in copied[1] and "bw.native_deltas(" in copied[1]


def test_time_capsules_follow_their_adjustment():
    from analysis.design import Design, make_factor
    from tests.analysis.test_capsules import sample

    frame = sample()
    design = Design(tuple(make_factor(frame, f) for f in ("decade", "prompt")))
    at = page_test("cohorts.py", frame=frame, design=design, name="capsules").run()
    at.selectbox(key="cohorts_category").set_value("label").run()
    at.selectbox(key="cohorts_cohort").set_value("decade").run()
    at.multiselect(key="cohorts_by").set_value(["prompt"]).run()
    at.text_input(key="cohorts_demographics").set_value(CAPSULES["demographics"])
    at.selectbox(key="cohorts_demographic_col").set_value("demographic")
    at.selectbox(key="cohorts_capsule_adjust").set_value("hommel").run()
    assert not at.exception and not at.error
    (tests,) = _with(at, "question")
    assert _headers(tests)["p_adjusted"] == "p (Hommel)"
    api = bw.time_capsules(frame, adjust="hommel", **CAPSULES).tables["tests"]
    np.testing.assert_allclose(tests.value["p_adjusted"], api["p_adjusted"], rtol=1e-12)
    (cli,) = [c.value for c in at.code if c.language == "bash" and "--demographics" in c.value]
    assert "--adjust hommel" in cli and "--demographic-col demographic" in cli
    (code,) = [c.value for c in at.code if c.language == "python" and "demographics=" in c.value]
    assert "adjust='hommel'" in code


def test_group_means_follow_the_subgroups_adjustment():
    from analysis.continuous import group_means
    from analysis.importers import import_results
    from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

    (path,) = (LM_EVAL_BIAS_FIXTURE / "dummy-bias").glob("samples_discrim_eval_explicit_*")
    imported = import_results("lm-eval", [path])
    at = page_test("subgroups.py", frame=imported.frame, design=imported.design).run()
    (default,) = _with(at, "difference")
    assert _headers(default)["p_adjusted"] == "p (BH)"
    at.selectbox(key="subgroups_option_adjust").set_value("bonferroni").run()
    assert not at.exception
    (table,) = _with(at, "difference")
    assert _headers(table)["p_adjusted"] == "p (Bonferroni)"
    want = group_means(imported.frame, imported.design, cluster="decision_question_id",
                       adjust="bonferroni")
    np.testing.assert_allclose(pd.to_numeric(table.value["p_adjusted"]).to_numpy(float),
                               want["p_adjusted"].to_numpy(float), rtol=1e-12, equal_nan=True)
    assert want["p_adjusted"].notna().any()
