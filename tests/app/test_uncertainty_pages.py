"""Bootstrap intervals on the eCDF and Bias index pages equal the API's."""

from __future__ import annotations

import numpy as np

from analysis.bootstrap import bootstrap_ecdf
from analysis.columns import BOOT_CI_HIGH, BOOT_CI_LOW
from analysis.design import apply_design
from tests.app.apptools import page_test, sample_with_design


def test_ecdf_page_bootstrap_table():
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("ecdf.py", frame=frame, design=design).run()
    factors = at.multiselect(key="ecdf_factors").value
    by = at.selectbox(key="ecdf_by").value
    at.checkbox(key="ecdf_boot").check()
    at.selectbox(key="ecdf_boot_cluster").select("template")
    at.select_slider(key="ecdf_boot_n").set_value(200).run()
    assert not at.exception and not at.error
    expected = bootstrap_ecdf(apply_design(frame, design), factors, by=by, cluster="template",
                              n_resamples=200, seed=0)
    shown = next(d.value for d in at.dataframe if BOOT_CI_LOW in d.value.columns)
    np.testing.assert_allclose(shown[BOOT_CI_LOW], expected[BOOT_CI_LOW], atol=1e-12)


def test_bias_index_page_bootstrap_table():
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("bias_index.py", frame=frame, design=design).run()
    assert not at.exception
    at.checkbox(key="index_boot").check()
    at.select_slider(key="index_boot_n").set_value(100).run()
    assert not at.exception and not at.error
    shown = next(d.value for d in at.dataframe if BOOT_CI_HIGH in d.value.columns)
    assert (shown[BOOT_CI_LOW] <= shown[BOOT_CI_HIGH]).all() and len(shown) >= 4
    totals = at.dataframe[0].value.set_index("model")["llmbi"]
    llmbi = shown[shown["quantity"] == "llmbi"].set_index("model")["estimate"]
    np.testing.assert_allclose(llmbi[totals.index], totals, atol=1e-12)


def test_design_page_keeps_and_sets_the_cluster():
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("design.py", frame=frame, design=design.with_cluster("template")).run()
    assert not at.exception
    (box,) = [s for s in at.selectbox if s.label == "Cluster (optional)"]
    assert box.value == "template"
    assert at.session_state["design"].cluster == "template"
    box.select_index(0).run()
    assert at.session_state["design"].cluster is None


def test_subgroups_page_cluster_bootstrap_intervals():
    from analysis.bootstrap import bootstrap_log_disparity

    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("subgroups.py", frame=frame, design=design).run()
    factors = at.multiselect(key="subgroups_factors").value
    level = at.radio(key="subgroups_level").value
    at.checkbox(key="subgroups_boot").check()  # resamples the page's cluster (template)
    at.select_slider(key="subgroups_boot_n").set_value(200).run()
    assert not at.exception and not at.error
    expected = bootstrap_log_disparity(apply_design(frame, design), factors, max_level=level,
                                       cluster="template", n_resamples=200)
    from analysis.subgroups import distinct_subgroups

    expected = distinct_subgroups(expected)  # the page lists identical subgroups once
    shown = at.dataframe[0].value
    np.testing.assert_allclose(shown[BOOT_CI_LOW], expected[BOOT_CI_LOW], atol=1e-12)


def _interval_headers(at) -> tuple[str, str, str]:
    import json

    d = next(d for d in at.dataframe if BOOT_CI_LOW in d.value.columns)
    columns = json.loads(d.proto.columns)
    return (columns[BOOT_CI_LOW]["label"], columns[BOOT_CI_HIGH]["label"],
            columns[BOOT_CI_LOW]["help"])


def test_interval_headers_name_the_level():
    """Issue 37: the eCDF and Bias index interval tables were headed "95 % low / high"
    whatever the level; the headers name the level the intervals were computed at."""
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    at = page_test("ecdf.py", frame=frame, design=design).run()
    at.number_input(key="ecdf_option_confidence").set_value(0.8)
    at.checkbox(key="ecdf_boot").check()
    at.select_slider(key="ecdf_boot_n").set_value(100).run()
    assert not at.exception and not at.error
    assert _interval_headers(at) == ("80 % low", "80 % high",
                                     "10th percentile of the replicates")
    at = page_test("bias_index.py", frame=frame, design=design).run()
    at.number_input(key="index_option_confidence").set_value(0.9)
    at.checkbox(key="index_boot").check()
    at.select_slider(key="index_boot_n").set_value(100).run()
    assert not at.exception and not at.error
    assert _interval_headers(at) == ("90 % low", "90 % high",
                                     "5th percentile of the replicates")
    shown = next(d.value for d in at.dataframe if BOOT_CI_HIGH in d.value.columns)
    default = page_test("bias_index.py", frame=frame, design=design).run()
    default.checkbox(key="index_boot").check()
    default.select_slider(key="index_boot_n").set_value(100).run()
    wide = next(d.value for d in default.dataframe if BOOT_CI_HIGH in d.value.columns)
    assert ((shown[BOOT_CI_HIGH] - shown[BOOT_CI_LOW]).sum()
            < (wide[BOOT_CI_HIGH] - wide[BOOT_CI_LOW]).sum())
    assert _interval_headers(default)[0] == "95 % low"
