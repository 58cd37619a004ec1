"""Bootstrap intervals in the report (issue 13 item 2): the report's numbers are
analysis.bootstrap's with the same seed, the settings are stated, the CLI flags work and
bad values are typed errors / exit 2 (docs/report.md, docs/uncertainty.md)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from analysis import report as R
from analysis.bootstrap import bootstrap_ecdf, bootstrap_index, bootstrap_log_disparity
from analysis.cli import main
from analysis.columns import BOOT_CI_HIGH, BOOT_CI_LOW, BOOT_SE, ESTIMATE, QUANTITY
from analysis.design import Design, apply_design
from analysis.index import Dimension
from analysis.io import load_results

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"
DATA, DESIGN = SAMPLE / "ssqa_simulated.csv.gz", SAMPLE / "ssqa_simulated.design.yaml"
FACTORS = ["pachankis_cluster", "gender"]


@pytest.fixture(scope="module")
def ssqa():
    design = Design.load(DESIGN)
    return apply_design(load_results(DATA), design), design


def _table(sec, name) -> pd.DataFrame:
    return dict(sec.tables)[name]


def test_ecdf_intervals_equal_the_bootstrap_module(ssqa):
    results, design = ssqa
    settings = {"factors": FACTORS, "ci": "bootstrap", "cluster": "template",
                "n_resamples": 60, "seed": 11, "confidence": 0.9, "where": {"cot": ["no"]}}
    sec = R.build_section("ecdf", results, design, settings)
    got = _table(sec, "ecdf_bootstrap")
    rows = results[results["cot"] == "no"]
    want = bootstrap_ecdf(rows, FACTORS, by="model", level=2, ideal=0.0, cluster="template",
                          n_resamples=60, seed=11, confidence=0.9)
    pd.testing.assert_frame_equal(got, want)
    # deviation metric per model, the difference and the KS statistic: 2 + 1 + 1 rows
    assert list(got[QUANTITY]) == ["deviation_metric", "deviation_metric", "difference",
                                   "ks_statistic"]
    assert (got[BOOT_CI_LOW] < got[BOOT_CI_HIGH]).all()
    # the settings used are stated in the readings and kept in the section's settings
    assert sec.notes[0].startswith("Bootstrap percentile intervals at 90 %: 60 replicates "
                                   "resampling whole clusters of template, seed 11.")
    dm = got.iloc[0]
    assert (f"Deviation metric of sim-model-A: {dm[ESTIMATE]:.4f} (90 % CI "
            f"{dm[BOOT_CI_LOW]:.4f} to {dm[BOOT_CI_HIGH]:.4f}).") in sec.notes
    assert {k: sec.settings[k] for k in R.CI_KEYS} == {
        "ci": "bootstrap", "cluster": "template", "n_resamples": 60, "seed": 11,
        "confidence": 0.9}
    html_text = R.report_html(R.Report("x", design, R.data_summary(results, design), [sec],
                                       "v", "now"))
    assert "<h3>Bootstrap intervals of the eCDF metrics</h3>" in html_text
    assert f"<td>{dm[BOOT_CI_HIGH]:.3f}</td>" in html_text  # rounded as on the page
    assert "<li>n resamples: 60</li>" in html_text  # the settings that differ from the defaults
    # settings saved when the replicates were called n_boot still load, under the one name
    legacy = R.build_section("ecdf", results, design,
                             {**{k: v for k, v in settings.items() if k != "n_resamples"},
                              "n_boot": 60})
    assert legacy.settings == sec.settings
    pd.testing.assert_frame_equal(_table(legacy, "ecdf_bootstrap"), got)


def test_same_seed_same_interval_other_seed_other_interval(ssqa):
    results, design = ssqa
    base = {"factors": FACTORS, "ci": "bootstrap", "n_resamples": 40}
    a = _table(R.build_section("ecdf", results, design, {**base, "seed": 1}), "ecdf_bootstrap")
    b = _table(R.build_section("ecdf", results, design, {**base, "seed": 1}), "ecdf_bootstrap")
    c = _table(R.build_section("ecdf", results, design, {**base, "seed": 2}), "ecdf_bootstrap")
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a[BOOT_SE], c[BOOT_SE])
    assert np.allclose(a[ESTIMATE], c[ESTIMATE])  # the estimates do not depend on the seed


def test_off_by_default_adds_nothing(ssqa):
    results, design = ssqa
    sec = R.build_section("ecdf", results, design, {"factors": FACTORS})
    assert "ecdf_bootstrap" not in dict(sec.tables) and sec.settings["ci"] == "none"
    sub = R.build_section("subgroups", results, design, {"factors": ["gender"], "level": 1})
    assert BOOT_CI_LOW not in _table(sub, "subgroups").columns


def test_subgroup_cluster_bootstrap_ld_equals_the_module(ssqa):
    results, design = ssqa
    sec = R.build_section("subgroups", results, design, {
        "factors": ["gender"], "level": 1, "ci": "bootstrap", "cluster": "template",
        "n_resamples": 80, "seed": 5})
    got = _table(sec, "subgroups").set_index("subgroup")
    from analysis.cells import cell_table
    from analysis.subgroups import subgroups

    # the section's CIs and p-values are cluster-robust over the same cluster
    robust = subgroups(cell_table(results, ["gender", "template"]), ["gender"], max_level=1,
                       cluster="template")
    want = bootstrap_log_disparity(results, ["gender"], max_level=1, cluster="template",
                                   n_resamples=80, seed=5, table=robust).set_index("subgroup")
    assert len(got) == 4  # female, gender neutral, male, no gender
    for col in (BOOT_SE, BOOT_CI_LOW, BOOT_CI_HIGH, "log_disparity", "ci_low", "ci_high"):
        pd.testing.assert_series_equal(got[col], want.loc[got.index, col])
    assert any("whole clusters of template" in n for n in sec.notes)
    assert any("CIs and p-values: cluster-robust over 37 values of template" in n
               for n in sec.notes)


def test_index_intervals_equal_the_module(ssqa):
    results, design = ssqa
    dims = [{"factor": "gender", "score": "deviation_metric", "weight": 1.0}]
    sec = R.build_section("index", results, design, {
        "dimensions": dims, "sentiment_by": "gender", "ci": "bootstrap", "n_resamples": 20,
        "seed": 3, "cluster": "template"})
    got = _table(sec, "bias_index_bootstrap")
    opts = {k: v for k, v in sec.settings.items() if k not in (*R.CI_KEYS, "where")}
    opts["dimensions"] = [Dimension(**d) for d in dims]
    want = bootstrap_index(results, design, cluster="template", n_resamples=20, seed=3, **opts)
    pd.testing.assert_frame_equal(got, want)
    assert set(got[QUANTITY]) == {"llmbi", "weighted_bias", "diversity_penalty",
                                  "sentiment_term", "score[gender]"}


def test_importance_states_its_cluster_robust_settings(ssqa):
    from analysis.cells import cell_table
    from analysis.importance import factor_importance

    results, design = ssqa
    sec = R.build_section("importance", results, design,
                          {"factors": ["model", "gender"], "cluster": "template"})
    terms = _table(sec, "factor_importance").set_index("term")
    fit = factor_importance(cell_table(results, ["model", "gender", "template"]), design,
                            factors=["model", "gender"], cluster="template")
    want = fit.terms.set_index("term")
    assert terms["std_err"].to_numpy() == pytest.approx(want["std_err"].to_numpy())
    assert terms["design_effect"].notna().all()
    assert any("Standard errors: cluster-robust over 37 values of template" in n
               for n in sec.notes)


@pytest.mark.parametrize("bad, message", [
    # the options' own messages (Options.coerce), as the API gives them
    ({"ci": "maybe"}, "ci must be one of 'none', 'bootstrap', not 'maybe'."),
    ({"ci": "bootstrap", "n_resamples": 5}, "n_resamples: must be at least 20, not 5"),
    ({"ci": "bootstrap", "n_resamples": 50.5},
     "n_resamples: expected a whole number, not 50.5"),
    ({"ci": "none", "n_resamples": 5}, "n_resamples: must be at least 20, not 5"),
    ({"ci": "bootstrap", "seed": -1}, "seed: must be at least 0, not -1"),
    ({"ci": "bootstrap", "confidence": 1.5}, "confidence: must be less than 1, not 1.5"),
    ({"ci": "bootstrap", "cluster": "nope"}, "Cluster column 'nope' is not in the table"),
])
def test_bad_interval_settings_are_typed_errors(ssqa, bad, message):
    from analysis import api as bw

    results, design = ssqa
    bad_value = not message.startswith("Cluster")
    wrapped = f"bad settings ({message}" if bad_value else message
    with pytest.raises(R.AnalysisError) as report:
        R.build_section("ecdf", results, design, {"factors": FACTORS, **bad})
    assert str(report.value).startswith(f"Report section 'ecdf': {wrapped}")
    # one message per bad input: the API's is the same
    with pytest.raises(R.AnalysisError) as api:
        bw.ecdf(results, design, by="model", factors=FACTORS, applied=True, **bad)
    assert str(api.value).startswith(message)


def _zip_table(path: Path, suffix: str) -> pd.DataFrame:
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith(suffix))
        return pd.read_csv(io.BytesIO(zf.read(name)))


def test_cli_ci_bootstrap(ssqa, tmp_path, capsys):
    results, design = ssqa
    settings = tmp_path / "s.yaml"
    settings.write_text(yaml.safe_dump({"ecdf": {"factors": FACTORS},
                                        "subgroups": {"factors": ["gender"], "level": 1,
                                                      "n_boot": 30}}))
    out, zpath = tmp_path / "r.html", tmp_path / "r.zip"
    assert main(["report", str(DATA), "--design", str(DESIGN), "--out", str(out), "--zip",
                 str(zpath), "--sections", "ecdf,subgroups", "--settings", str(settings),
                 "--ci", "bootstrap", "--n-boot", "40", "--seed", "7",
                 "--cluster", "template"]) == 0
    got = _zip_table(zpath, "_ecdf_ecdf_bootstrap.csv")
    want = bootstrap_ecdf(results, FACTORS, by="model", cluster="template", n_resamples=40,
                          seed=7)
    assert got[BOOT_CI_LOW].to_numpy() == pytest.approx(want[BOOT_CI_LOW].to_numpy())
    assert got[BOOT_CI_HIGH].to_numpy() == pytest.approx(want[BOOT_CI_HIGH].to_numpy())
    # the settings file's n_boot (30; saved before it was called n_resamples) wins over
    # --n-boot for its section
    sub = _zip_table(zpath, "_subgroups_subgroups.csv").set_index("subgroup")
    want = bootstrap_log_disparity(results, ["gender"], max_level=1, cluster="template",
                                   n_resamples=30, seed=7).set_index("subgroup")
    assert sub[BOOT_CI_LOW].to_numpy() == pytest.approx(
        want.loc[sub.index, BOOT_CI_LOW].to_numpy())
    text = out.read_text()
    assert "40 replicates resampling whole clusters of template, seed 7" in text
    assert "30 replicates resampling whole clusters of template, seed 7" in text


def test_cli_without_ci_has_no_intervals(tmp_path):
    out = tmp_path / "r.html"
    assert main(["report", str(DATA), "--design", str(DESIGN), "--out", str(out),
                 "--sections", "ecdf"]) == 0
    assert "ecdf_bootstrap" not in out.read_text()


@pytest.mark.parametrize("extra, message", [
    (["--ci", "bootstrap", "--n-boot", "5"], "n_resamples: must be at least 20, not 5"),
    (["--ci", "bootstrap", "--n-boot", "0"], "--n-boot"),
    (["--ci", "bootstrap", "--seed", "-3"], "--seed"),
    (["--ci", "bootstrap", "--confidence", "1.2"], "--confidence"),
    (["--ci", "sometimes"], "invalid choice: 'sometimes'"),
    (["--ci", "bootstrap", "--cluster", "nope"], "Cluster column 'nope' is not in the table"),
])
def test_cli_bad_ci_values_exit_2(tmp_path, capsys, extra, message):
    out = tmp_path / "r.html"
    assert main(["report", str(DATA), "--design", str(DESIGN), "--out", str(out),
                 "--sections", "ecdf", *extra]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
