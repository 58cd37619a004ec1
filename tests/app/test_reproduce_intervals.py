"""'Copy as CLI / Python' with the bootstrap intervals on: the copied command prints the
intervals (and every other number) the Subgroups, eCDF and Bias index pages show."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from analysis.columns import BOOT_CI_HIGH, BOOT_CI_LOW, BOOT_SE, MDE_LOG_DISPARITY
from analysis.options.common import BootstrapOptions
from analysis.reproduce import _boot_options
from tests.app.apptools import ROOT, page_test, sample_with_design

NAME = "ssqa_simulated.csv.gz"


def _blocks(at) -> tuple[str, str]:
    (cli,) = [c.value for c in at.code if c.language == "bash"]
    (code,) = [c.value for c in at.code if c.language == "python"]
    return cli, code


def _cli(command: str, cwd, design=None) -> dict:
    """Run the copied command in ``cwd`` (with the sample folder and, when the page
    offers it for download, the design saved as design.yaml); its JSON."""
    (cwd / "sample_data").symlink_to(ROOT / "sample_data")
    if design is not None:
        (cwd / "design.yaml").write_text(design.to_yaml())
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "analysis"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, *argv[1:]], cwd=cwd, capture_output=True,
                          text=True, timeout=600, check=False, env=env)
    assert done.returncode == 0, (command, done.stderr)
    return json.loads(done.stdout)


def _result_ci_sum(code: str, table: str) -> float:
    """Run the copied ``bw.<analysis>`` script; the sum of the interval bounds of its
    Result's ``tables[table]``."""
    script = code + (f"\nprint(float(result.tables[{table!r}][['boot_ci_low', "
                     "'boot_ci_high']].to_numpy().sum()))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return float(done.stdout.strip().splitlines()[-1])


def _intervals(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if BOOT_CI_LOW in d.value.columns)


def _keys(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if not pd.api.types.is_numeric_dtype(table[c])
            and not pd.api.types.is_bool_dtype(table[c])]


def _same(page: pd.DataFrame, cli: pd.DataFrame, keys: list[str]) -> None:
    """The interval columns of ``page`` and ``cli`` agree row by row (matched on ``keys``,
    a missing key value counted as one value)."""
    assert keys
    cols = [BOOT_SE, BOOT_CI_LOW, BOOT_CI_HIGH, "estimate"]
    page = page[keys + [c for c in cols if c in page.columns]]
    cli = cli[page.columns]
    page, cli = ((t.astype({k: object for k in keys}).fillna({k: "-" for k in keys})
                  .astype({k: str for k in keys})) for t in (page, cli))
    merged = page.merge(cli, on=keys, suffixes=("_page", "_cli"), validate="one_to_one")
    assert len(merged) == len(page) == len(cli)
    for c in cols:
        if c + "_page" in merged:
            np.testing.assert_allclose(merged[c + "_page"].astype(float),
                                       merged[c + "_cli"].astype(float), rtol=1e-12,
                                       atol=1e-12, err_msg=c)


def bootstrap_flags(boot, design_cluster=None):  # noqa: ANN001, ANN201
    """The CLI flags of a page's bootstrap settings (``--no-cluster`` when the page
    resamples rows although the design names a cluster), as the pages' views write them."""
    return BootstrapOptions.coerce(_boot_options(boot, design_cluster)).cli_options()


def test_flags():
    assert bootstrap_flags(None) == ()
    on = {"cluster": None, "n_resamples": 200, "seed": 0}
    # the flags that differ from the options' defaults (seed 0 and the design's cluster are)
    assert dict(bootstrap_flags(on, "template")) == {
        "ci": "bootstrap", "no-cluster": True, "n-boot": 200}
    assert dict(bootstrap_flags({**on, "cluster": "t"}, "template")) == {
        "ci": "bootstrap", "cluster": "t", "n-boot": 200}
    assert dict(bootstrap_flags({**on, "cluster": "template", "seed": 3}, "template")) == {
        "ci": "bootstrap", "n-boot": 200, "seed": 3}
    # a page's settings saved with the old name still give the flags
    assert bootstrap_flags({"cluster": None, "n_boot": 200, "seed": 0}, "template") == \
        bootstrap_flags(on, "template")


def test_subgroups_rows_bootstrap_although_the_design_has_a_cluster(tmp_path):
    """The design names a cluster, the page's toggle analyses independent rows (the
    bootstrap then resamples rows): --no-cluster; the power widgets' settings travel too
    (--power, --effect)."""
    frame, design = sample_with_design(NAME)
    design = design.with_cluster("template")
    at = page_test("subgroups.py", frame=frame, design=design, name=NAME)
    at.session_state["subgroups_factors"] = ["model", "cot"]
    at.run()
    at.toggle(key="subgroups_clustered").set_value(False)
    at.checkbox(key="subgroups_boot").check()
    at.select_slider(key="subgroups_boot_n").set_value(100)
    at.select_slider(key="subgroups_power").set_value(0.9)
    at.number_input(key="subgroups_target_ld").set_value(0.5).run()
    assert not at.exception and not at.error
    cli, code = _blocks(at)
    assert "--design " in cli
    assert "--ci bootstrap --no-cluster --n-boot 100 " in cli
    assert "--power 0.9 --effect 0.5" in cli
    assert "ci='bootstrap',\n    cluster=None,\n    n_resamples=100," in code  # bw.subgroups
    compile(code, "copied.py", "exec")
    out = _cli(cli, tmp_path, design)
    page = at.dataframe[0].value
    assert {BOOT_CI_LOW, BOOT_CI_HIGH, MDE_LOG_DISPARITY} <= set(page.columns)
    rows = pd.DataFrame(out["subgroups"])
    keys = ["model", "cot"]
    _same(page, rows, keys)
    page, rows = ((t.astype({k: object for k in keys}).fillna({k: "-" for k in keys})
                   .astype({k: str for k in keys})) for t in (page, rows))
    merged = page.merge(rows, on=keys, validate="one_to_one")
    assert len(merged) == len(page) == len(rows)
    np.testing.assert_allclose(merged[MDE_LOG_DISPARITY + "_x"],
                               merged[MDE_LOG_DISPARITY + "_y"], rtol=1e-12)
    assert (merged["detectable_x"] == merged["detectable_y"]).all()


def test_subgroups_cluster_robust_by_default(tmp_path):
    """The design names a cluster: the page's CIs and p-values are cluster-robust by
    default and say so, and "Copy as CLI" (no cluster flag: the design's) gives the same
    p-values and intervals."""
    frame, design = sample_with_design(NAME)
    design = design.with_cluster("template")
    at = page_test("subgroups.py", frame=frame, design=design, name=NAME)
    at.session_state["subgroups_factors"] = ["model", "cot"]
    at.run()
    assert not at.exception and not at.error
    assert any("CIs and p-values: cluster-robust over 37 values of template" in c.value
               for c in at.caption)
    cli, code = _blocks(at)
    assert "cluster" not in cli  # the design's cluster is the CLI's default too
    assert "cluster" not in code  # the design's: the API's default too
    compile(code, "copied.py", "exec")
    out = _cli(cli, tmp_path, design)
    assert out["settings"]["cluster"] == "template"
    page = at.dataframe[0].value
    assert (page["test"] == "cluster t").all()
    rows = pd.DataFrame(out["subgroups"])
    keys = ["model", "cot"]
    page, rows = ((t.astype({k: object for k in keys}).fillna({k: "-" for k in keys})
                   .astype({k: str for k in keys})) for t in (page, rows))
    merged = page.merge(rows, on=keys, validate="one_to_one")
    for c in ("p_value", "ci_low", "ci_high", "design_effect"):
        np.testing.assert_allclose(merged[c + "_x"], merged[c + "_y"], rtol=1e-12)


def test_ecdf_cluster_bootstrap(tmp_path):
    frame, design = sample_with_design(NAME)
    at = page_test("ecdf.py", frame=frame, design=design, name=NAME).run()
    at.checkbox(key="ecdf_boot").check()
    at.selectbox(key="ecdf_boot_cluster").select("template")
    at.select_slider(key="ecdf_boot_n").set_value(200).run()
    assert not at.exception and not at.error
    cli, code = _blocks(at)
    assert "--design sample_data/" in cli  # the curated design: nothing to download
    # the design's cluster (template) and seed 0 are the command's defaults
    assert "--ci bootstrap --n-boot 200 " in cli and "--cluster" not in cli
    assert "result = bw.ecdf(" in code and "ci='bootstrap'" in code
    out = _cli(cli, tmp_path)
    assert _result_ci_sum(code, "bootstrap") == pytest.approx(
        _intervals(at)[[BOOT_CI_LOW, BOOT_CI_HIGH]].to_numpy().sum(), rel=1e-12)
    assert out["bootstrap"]["settings"] == {"cluster": "template", "n_boot": 200, "seed": 0}
    cli_boot = pd.DataFrame(out["bootstrap"]["intervals"])
    page = _intervals(at)
    _same(page, cli_boot, _keys(page))
    summary = next(d.value for d in at.dataframe if "deviation_metric" in d.value.columns)
    for r in summary.to_dict(orient="records"):
        assert out["groups"][str(r["model"])]["deviation_metric"] == pytest.approx(
            r["deviation_metric"], rel=1e-12)


def test_bias_index_bootstrap_and_python(tmp_path):
    frame, design = sample_with_design(NAME)
    at = page_test("bias_index.py", frame=frame, design=design, name=NAME).run()
    at.checkbox(key="index_boot").check()
    at.select_slider(key="index_boot_n").set_value(100).run()
    assert not at.exception and not at.error
    cli, code = _blocks(at)
    # the bundled design declares its cluster (template): resampled by default
    assert "--ci bootstrap --n-boot 100 " in cli and "--cluster" not in cli
    out = _cli(cli, tmp_path)
    page = _intervals(at)
    cli_boot = pd.DataFrame(out["bootstrap"]["intervals"])
    _same(page, cli_boot, _keys(page))
    assert "bw.bias_index(" in code  # the copied script is the API's one composition
    assert _result_ci_sum(code, "bootstrap") == pytest.approx(
        page[[BOOT_CI_LOW, BOOT_CI_HIGH]].to_numpy().sum(), rel=1e-12)


def test_cohorts_renormalised_subset(tmp_path):
    """The page's renormalise switch changes every percentage: the command carries it."""
    frame, design = sample_with_design(NAME)
    at = page_test("cohorts.py", frame=frame, design=design, name=NAME).run()
    category = at.selectbox(key="cohorts_category").value
    keep = at.multiselect(key=f"cohorts_keep_{category}")
    keep.set_value(keep.value[:2])
    at.checkbox(key="cohorts_renormalise").check().run()
    assert not at.exception and not at.error
    cli, code = _blocks(at)
    assert "--renormalise" in cli and "renormalise=True" in code
    out = _cli(cli, tmp_path)
    assert out["settings"]["renormalise"] is True
    page = at.dataframe[0].value
    wide = pd.DataFrame(out["percentages"])
    assert list(wide.columns) == list(page.columns)
    sums = page.drop(columns=[*at.multiselect(key="cohorts_by").value,
                              at.selectbox(key="cohorts_cohort").value, "n"]).sum(axis=1)
    np.testing.assert_allclose(sums, 100.0)  # shares among the two kept categories
    np.testing.assert_allclose(page.select_dtypes("number").to_numpy(float),
                               wide[page.select_dtypes("number").columns].to_numpy(float),
                               rtol=1e-12)


def test_coverage_counting_responses(tmp_path):
    """The page's "Cells count" switch changes the Gini index: the command carries it."""
    from tests.app.apptools import metric_values

    frame, design = sample_with_design(NAME)
    at = page_test("coverage.py", frame=frame, design=design, name=NAME)
    at.session_state["coverage_factors"] = ["template", "gender", "model"]
    at.run()
    at.radio(key="coverage_count").set_value("responses").run()
    assert not at.exception and not at.error
    cli, code = _blocks(at)
    assert "--count responses" in cli and "count='responses'" in code  # bw.coverage's option
    out = _cli(cli, tmp_path)
    assert out["count"] == "responses"
    assert metric_values(at)["Gini index"] == f"{out['gini_index']:.3f}"


def test_importance_without_the_designs_cluster(tmp_path):
    """The design names a cluster, the page's cluster is set to none: --no-cluster, and the
    command's standard errors are the page's (plain, not cluster-robust)."""
    frame, design = sample_with_design(NAME)
    design = design.with_cluster("template")
    at = page_test("importance.py", frame=frame, design=design, name=NAME)
    at.session_state["importance_factors"] = ["model", "cot"]
    at.run()
    at.selectbox(key="importance_cluster").select_index(0).run()
    assert not at.exception and not at.error
    cli, _ = _blocks(at)
    assert "--no-cluster" in cli and "--gee" not in cli
    out = _cli(cli, tmp_path, design)
    terms = pd.DataFrame(out["terms"] if isinstance(out, dict) else out).set_index("term")
    page = next(d.value for d in at.dataframe if "std_err" in d.value.columns)
    page = page.set_index("term")
    np.testing.assert_allclose(terms.loc[page.index, "std_err"], page["std_err"], rtol=1e-9)


def test_cohorts_with_clashing_categories(tmp_path):
    """The clash table of tests/analysis/test_cohort_name_clashes.py on the page: the
    copied command (categories as a JSON list: "" and " A" survive) prints the page's
    wide table."""
    from analysis.design import Design, make_factor
    from tests.analysis.test_cohort_name_clashes import check_wide, clashing_frame

    frame = clashing_frame()
    frame.to_parquet(tmp_path / "clash.parquet")
    design = Design((make_factor(frame, "model", kind="model"),
                     make_factor(frame, "prompt", kind="domain")))
    at = page_test("cohorts.py", frame=frame, design=design, name="clash.parquet").run()
    assert not at.exception and not at.error
    cli, code = _blocks(at)
    assert "--categories '" + '["model", "n", "", "A", " A"' in cli
    out = _cli(cli, tmp_path, design)
    check_wide(pd.DataFrame(out["percentages"]), ["prompt"])
    check_wide(at.dataframe[0].value, ["prompt"])


def test_subgroups_bootstrap_at_the_pages_confidence(tmp_path):
    """Issue 37: "Other options -> confidence" 0.5 with bootstrap intervals. The page's
    intervals are at 50 % (narrower than at 95 %), and the API, the copied command, the
    copied script and the report section built from "Add to report" give the same ones."""
    from analysis import api as bw
    from analysis.design import apply_design
    from analysis.report import build_section

    frame, design = sample_with_design(NAME)
    at = page_test("subgroups.py", frame=frame, design=design, name=NAME)
    at.session_state["subgroups_factors"] = ["model", "cot"]
    at.run()
    at.number_input(key="subgroups_option_confidence").set_value(0.5)
    at.checkbox(key="subgroups_boot").check()
    at.select_slider(key="subgroups_boot_n").set_value(100).run()
    assert not at.exception and not at.error
    page = at.dataframe[0].value
    width = (page[BOOT_CI_HIGH] - page[BOOT_CI_LOW]).mean()
    result = bw.subgroups(frame, design, factors=["model", "cot"], level=2, confidence=0.5,
                          ci="bootstrap", n_resamples=100)
    wide = bw.subgroups(frame, design, factors=["model", "cot"], level=2,
                        ci="bootstrap", n_resamples=100).table
    assert width < 0.6 * (wide[BOOT_CI_HIGH] - wide[BOOT_CI_LOW]).mean()
    keys = ["model", "cot"]
    _same(page, result.table, keys)
    cli, code = _blocks(at)
    assert "--confidence 0.5" in cli and "confidence=0.5," in code
    _same(page, pd.DataFrame(_cli(cli, tmp_path)["subgroups"]), keys)
    # the script's Result: every subgroup (duplicates too) in tables["all"]
    script = code + ("\nprint(float(result.tables['all'][['boot_ci_low', 'boot_ci_high']]"
                     ".to_numpy().sum()))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) == pytest.approx(
        result.tables["all"][[BOOT_CI_LOW, BOOT_CI_HIGH]].to_numpy().sum(), rel=1e-12)
    at.button(key="report_add_subgroups").click().run()
    (item,) = at.session_state["report_sections"]
    assert item["settings"]["confidence"] == 0.5
    sec = build_section("subgroups", apply_design(frame, design), design, item["settings"])
    _same(page, dict(sec.tables)["subgroups"], keys)
