"""Issue 37, item 3: an ``adjust`` option wherever p-values are adjusted. Compare's
per-pair subgroup tables (``subgroup_adjust``), the time capsules (cohorts' ``adjust``),
the group means of a continuous outcome (subgroups' ``adjust``) and the native scores'
paired deltas (``native_deltas(adjust=)``, ``--native-adjust``) each take every method
of :mod:`analysis.multiple_testing`: a non-default method gives exactly statsmodels'
``multipletests`` of the raw p-values, the default's numbers are those of before (BH,
BH, BH, Holm), and the headers and sentences name the method in use."""

from __future__ import annotations

import re
import shlex

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from analysis import api as bw
from analysis import report as R
from analysis.design import Design, apply_design
from analysis.errors import AnalysisError
from analysis.io import load_results
from analysis.multiple_testing import LABELS, METHODS, NAMES
from analysis.options import OptionError
from tests.analysis.cli_helpers import run_json, write_csv

SAMPLE = "sample_data/ssqa_simulated.csv.gz"
DESIGN = "sample_data/ssqa_simulated.design.yaml"
#: statsmodels' names of the kernel's methods.
STATSMODELS = {"bh": "fdr_bh", "by": "fdr_by", "holm": "holm", "bonferroni": "bonferroni",
               "hommel": "hommel"}
OTHERS = [m for m in METHODS if m != "bh"]


def multipletests_of(p, method: str) -> np.ndarray:
    """statsmodels' adjusted p-values of the finite ``p`` (NaN: a test not run, left out)."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method=STATSMODELS[method])[1]
    return out


def _headers(html: str) -> list[str]:
    return re.findall(r"<th>([^<]*)</th>", html)


@pytest.fixture(scope="module")
def ssqa():
    design = Design.load(DESIGN)
    return apply_design(load_results(SAMPLE), design), design


# --- Compare: the per-pair subgroup tables ------------------------------------------------
COMPARE = {"by": "model", "subgroups": ["cot", "gender"], "level": 2, "n_resamples": 50}


@pytest.fixture(scope="module")
def compared(ssqa):
    rows, design = ssqa
    return {m: bw.compare(rows, design, subgroup_adjust=m, **COMPARE) for m in METHODS}


@pytest.mark.parametrize("method", OTHERS)
def test_compare_subgroup_adjust_is_multipletests(compared, method):
    table = compared[method].tables["subgroups"]
    base = compared["bh"].tables["subgroups"]
    assert len(table) == 14 and table["p_value"].notna().all()
    for p, adj in (("p_value", "p_adjusted"), ("ld_p_value", "ld_p_adjusted")):
        np.testing.assert_allclose(table[adj], multipletests_of(table[p], method), rtol=1e-12,
                                   equal_nan=True)
        np.testing.assert_array_equal(table[p], base[p])  # the raw p-values do not move
    assert table["differs"].tolist() == (table["p_adjusted"] < 0.05).tolist()
    # the overall table keeps its own adjustment (Holm)
    pd.testing.assert_frame_equal(compared[method].table, compared["bh"].table)
    assert compared[method].settings["subgroup_adjust"] == method
    assert f"({LABELS[method]}-adjusted p < 0.05)" in " ".join(compared[method].notes)


def test_compare_subgroup_default_is_bh_as_before(ssqa, compared):
    rows, design = ssqa
    default = bw.compare(rows, design, **COMPARE)
    assert default.settings["subgroup_adjust"] == "bh"
    pd.testing.assert_frame_equal(default.tables["subgroups"], compared["bh"].tables["subgroups"])
    table = default.tables["subgroups"]
    np.testing.assert_allclose(table["p_adjusted"], multipletests_of(table["p_value"], "bh"),
                               rtol=1e-12)
    assert "(BH-adjusted p < 0.05)" in " ".join(default.notes)


def test_compare_subgroup_adjust_cli_report_and_copy(ssqa, compared, capsys):
    from analysis.reproduce import compare_view

    rows, design = ssqa
    api = compared["holm"].tables["subgroups"]
    out = run_json(capsys, "compare", SAMPLE, "--design", DESIGN, "--by", "model",
                   "--factors", "cot,gender", "--level", "2", "--n-boot", "50",
                   "--subgroup-adjust", "holm")
    assert out["settings"]["subgroup_adjust"] == "holm"
    np.testing.assert_allclose(pd.DataFrame(out["subgroups"])["p_adjusted"], api["p_adjusted"],
                               rtol=1e-12)
    settings = {"by": "model", "factors": ["cot", "gender"], "level": 2, "n_resamples": 50,
                "subgroup_adjust": "holm"}
    sec = R.build_section("compare", rows, design, settings)
    assert sec.adjustments == {"compare_overall": "holm", "compare_subgroups": "holm"}
    np.testing.assert_allclose(dict(sec.tables)["compare_subgroups"]["ld_p_adjusted"],
                               api["ld_p_adjusted"], rtol=1e-12)
    html = R._section_html(0, sec)
    subgroups = html.rsplit("<h3>Paired comparison per subgroup</h3>", 1)[1]
    assert {"p (Holm)", "LD p (Holm)"} <= set(_headers(subgroups))
    assert "p (BH)" not in _headers(subgroups)
    view = compare_view(settings, design_cluster=design.cluster)
    assert ("subgroup-adjust", "holm") in view.options
    assert "subgroup_adjust='holm'" in view.call


def test_compare_bad_subgroup_adjust_is_one_typed_error(ssqa, capsys):
    from analysis.compare import compare_subgroups, pair_units

    rows, design = ssqa
    with pytest.raises(OptionError, match="subgroup_adjust must be one of 'bh', 'by', "
                                          "'holm', 'bonferroni', 'hommel', not 'bogus'"):
        bw.compare(rows, design, subgroup_adjust="bogus", **COMPARE)
    pairing = pair_units(rows, design, "model", factors=["cot"])
    with pytest.raises(AnalysisError, match="Unknown p-value adjustment 'bogus': use one of "
                                            "bh, by, holm, bonferroni, hommel"):
        compare_subgroups(pairing, "sim-model-A", "sim-model-B", ["cot"], adjust="bogus")
    from analysis.cli import main

    capsys.readouterr()
    assert main(["compare", SAMPLE, "--design", DESIGN, "--by", "model", "--factors", "cot",
                 "--subgroup-adjust", "bogus"]) == 2
    assert "--subgroup-adjust: invalid choice: 'bogus'" in capsys.readouterr().err


# --- the time capsules (cohorts --demographics) --------------------------------------------
CAPSULES = {"category": "label", "cohort": "decade", "by": ["prompt"],
            "demographics": "gender=woman,man,non-binary;race=White,Asian,Black",
            "demographic_col": "demographic"}


@pytest.fixture(scope="module")
def capsule_rows():
    from tests.analysis.test_capsules import sample

    return sample()


@pytest.mark.parametrize("method", OTHERS)
def test_capsule_adjust_is_multipletests_per_test(capsule_rows, method):
    result = bw.time_capsules(capsule_rows, adjust=method, **CAPSULES)
    base = bw.time_capsules(capsule_rows, **CAPSULES).tables["tests"]
    tests = result.tables["tests"]
    assert result.settings["adjust"] == method
    assert tests["test"].value_counts().to_dict() == {
        "Kruskal-Wallis": 6, "Kruskal-Wallis among subcategories": 2, "chi-square": 2}
    for _, part in tests.groupby("test"):  # each test its own family
        np.testing.assert_allclose(part["p_adjusted"], multipletests_of(part["p_value"], method),
                                   rtol=1e-12)
    np.testing.assert_array_equal(tests["p_value"], base["p_value"])
    # the table's second mark follows the adjusted p (here: per subcategory, across cohorts)
    kw = tests[tests["test"] == "Kruskal-Wallis"]
    marked = {f"{r.demographic} / {r.prompt} / {r.label}": "*" + ("†" if r.p_adjusted < 0.05
                                                                   else "")
              for r in kw.itertuples() if r.p_value < 0.05}
    columns = [" / ".join(c) for c in result.tables["table"].columns]
    for key, mark in marked.items():
        assert key + mark in columns
    cohorts = bw.cohorts(capsule_rows, adjust=method, **CAPSULES)
    pd.testing.assert_frame_equal(cohorts.tables["capsule_tests"], tests)
    assert cohorts.settings["adjust"] == method


def test_capsule_default_is_bh_as_before(capsule_rows):
    result = bw.time_capsules(capsule_rows, **CAPSULES)
    assert result.settings["adjust"] == "bh"
    for _, part in result.tables["tests"].groupby("test"):
        np.testing.assert_allclose(part["p_adjusted"], multipletests_of(part["p_value"], "bh"),
                                   rtol=1e-12)


def test_capsule_adjust_cli_and_copied_code(capsule_rows, tmp_path, capsys):
    from analysis.cli import main
    from analysis.reproduce import api_snippet, cli_command, cohorts_view

    path = write_csv(tmp_path, capsule_rows)
    api = bw.cohorts(capsule_rows, adjust="bonferroni", **CAPSULES)
    argv = ["cohorts", str(path), "--category", "label", "--cohort", "decade", "--by",
            "prompt", "--demographics", CAPSULES["demographics"], "--demographic-col",
            "demographic", "--adjust", "bonferroni"]
    out = run_json(capsys, *argv)
    assert out["settings"]["adjust"] == "bonferroni"
    np.testing.assert_allclose(pd.DataFrame(out["capsule_tests"])["p_adjusted"],
                               api.tables["capsule_tests"]["p_adjusted"], rtol=1e-12)
    assert main(argv) == 0
    assert "also after Bonferroni)" in capsys.readouterr().out
    view = cohorts_view({"category": "label", "cohort": "decade", "by": ["prompt"],
                         "adjust": "bonferroni"}, demographics=CAPSULES["demographics"],
                        demographic_col="demographic")
    assert ("adjust", "bonferroni") in view.options and "adjust='bonferroni'" in view.call
    cli = shlex.split(cli_command(view.command, str(path), "", view.options))
    assert "--demographics" in cli
    assert run_json(capsys, *cli[3:-1]) == out  # the copied command: the same JSON
    namespace: dict = {}
    exec(api_snippet(view.function, str(path), None, view.call).replace(  # noqa: S102
        f"{str(path)!r}, None", f"{str(path)!r}"), namespace)
    np.testing.assert_allclose(namespace["result"].tables["capsule_tests"]["p_adjusted"],
                               api.tables["capsule_tests"]["p_adjusted"], rtol=1e-12)


def test_capsule_bad_adjust_is_one_typed_error(capsule_rows):
    with pytest.raises(OptionError, match="adjust must be one of 'bh', 'by', 'holm', "
                                          "'bonferroni', 'hommel', not 'fdr'"):
        bw.time_capsules(capsule_rows, adjust="fdr", **CAPSULES)


# --- group means of a continuous outcome (subgroups' adjust) -------------------------------
@pytest.fixture(scope="module")
def scores():
    """R's clubSandwich data (tests/reference): a score, a 4-value factor, a cluster."""
    from analysis.design import Factor, Outcome

    data = pd.read_csv("tests/reference/clubsandwich_data.csv")
    levels = ("ref", "one", "two", "three")
    design = Design(factors=(Factor("sub", "domain", levels, levels[0]),),
                    outcome=Outcome("score", "above", threshold=0, type="continuous"))
    return data, design


def _non_reference(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["value"] != table["reference"]]


@pytest.mark.parametrize("cluster", [None, "cluster"])
@pytest.mark.parametrize("method", OTHERS)
def test_group_means_adjust_is_multipletests(scores, method, cluster):
    data, design = scores
    result = bw.group_means(data, design, cluster=cluster, adjust=method)
    base = bw.group_means(data, design, cluster=cluster).table
    table = _non_reference(result.table)
    assert len(table) == 3 and result.settings["adjust"] == method
    np.testing.assert_allclose(table["p_adjusted"], multipletests_of(table["p_value"], method),
                               rtol=1e-12)
    assert result.table.loc[result.table["value"] == "ref", "p_adjusted"].isna().all()
    pd.testing.assert_frame_equal(result.table.drop(columns="p_adjusted"),
                                  base.drop(columns="p_adjusted"))
    # bw.subgroups' group means follow its own adjust
    sub = bw.subgroups(data, design, factors=["sub"], cluster=cluster, adjust=method)
    pd.testing.assert_frame_equal(sub.tables["group_means"], result.table)


def test_group_means_default_is_bh_and_the_cli_follows_adjust(scores, tmp_path, capsys):
    from analysis.cli import main

    data, design = scores
    default = bw.group_means(data, design)
    assert default.settings["adjust"] == "bh"
    table = _non_reference(default.table)
    np.testing.assert_allclose(table["p_adjusted"], multipletests_of(table["p_value"], "bh"),
                               rtol=1e-12)
    path = write_csv(tmp_path, data)
    design.save(tmp_path / "d.yaml")
    argv = ["subgroups", str(path), "--design", str(tmp_path / "d.yaml"), "--factors", "sub",
            "--no-cluster", "--adjust", "hommel"]
    out = run_json(capsys, *argv)
    assert out["settings"]["adjust"] == "hommel"
    np.testing.assert_allclose(
        pd.DataFrame(out["group_means"])["p_adjusted"].to_numpy(float),
        bw.group_means(data, design, adjust="hommel").table["p_adjusted"].to_numpy(float),
        rtol=1e-12, equal_nan=True)
    assert main(argv) == 0
    assert "p (Hommel) over the non-reference values" in capsys.readouterr().out


def test_group_means_bad_adjust_is_one_typed_error(scores):
    data, design = scores
    with pytest.raises(AnalysisError, match="Unknown p-value adjustment 'BH': use one of bh, "
                                            "by, holm, bonferroni, hommel"):
        bw.group_means(data, design, adjust="BH")


# --- the native scores' paired deltas ------------------------------------------------------
BBQ = "sample_data/bbq_unifiedqa.csv.gz"
BBQ_DESIGN = "sample_data/bbq_unifiedqa.design.yaml"
DELTAS = {"by": "input_format", "reference": "race", "n_resamples": 100}


@pytest.fixture(scope="module")
def bbq():
    return pd.read_csv(BBQ), Design.load(BBQ_DESIGN)


@pytest.fixture(scope="module")
def deltas(bbq):
    frame, design = bbq
    return {m: bw.native_deltas(frame, design, adjust=m, **DELTAS) for m in METHODS}


@pytest.mark.parametrize("method", [m for m in METHODS if m != "holm"])
def test_native_delta_adjust_is_multipletests_per_pair(deltas, method):
    result = deltas[method]
    table, base = result.table, deltas["holm"].table
    assert result.settings["adjust"] == method
    assert result.settings["test"] == f"bootstrap t (G - 1 df), {NAMES[method]} over a " \
                                      "pair's deltas"
    np.testing.assert_array_equal(table["p_value"], base["p_value"])
    pairs = table.groupby(["model_a", "model_b"], sort=False)
    assert len(pairs) == 2
    for _, part in pairs:  # each pair its own family
        assert part["p_value"].notna().sum() >= 10
        np.testing.assert_allclose(part["p_adjusted"], multipletests_of(part["p_value"], method),
                                   rtol=1e-12, equal_nan=True)


def test_native_delta_default_is_holm_as_before(bbq, deltas):
    frame, design = bbq
    default = bw.native_deltas(frame, design, **DELTAS)
    assert default.settings["adjust"] == "holm"
    assert default.settings["test"] == "bootstrap t (G - 1 df), Holm over a pair's deltas"
    pd.testing.assert_frame_equal(default.table, deltas["holm"].table)
    for _, part in default.table.groupby(["model_a", "model_b"]):
        np.testing.assert_allclose(part["p_adjusted"], multipletests_of(part["p_value"], "holm"),
                                   rtol=1e-12, equal_nan=True)


def test_native_delta_adjust_cli_report_and_copy(bbq, deltas, capsys):
    from analysis.cli import main
    from analysis.design import apply_design
    from analysis.reproduce import api_snippet, cli_command
    from ui.native_adjust import deltas_view

    frame, design = bbq
    api = deltas["bonferroni"]
    for argv in (["native-scores", BBQ, "--design", BBQ_DESIGN, "--by", "input_format"],
                 ["compare", BBQ, "--design", BBQ_DESIGN, "--by", "input_format",
                  "--native-scores"]):
        out = run_json(capsys, *argv, "--reference", "race", "--native-resamples", "100",
                       "--native-adjust", "bonferroni")
        assert out["settings"]["adjust"] == "bonferroni"
        np.testing.assert_allclose(pd.DataFrame(out["scores"])["p_adjusted"].to_numpy(float),
                                   api.table["p_adjusted"].to_numpy(float), rtol=1e-12,
                                   equal_nan=True)
    sec = R.build_section("native", apply_design(frame, design), design,
                          {"by": "input_format", "reference": "race", "n_resamples": 100,
                           "adjust": "bonferroni"})
    assert sec.adjustments["native_deltas"] == "bonferroni"
    shown = dict(sec.tables)["native_deltas"]
    np.testing.assert_allclose(shown["p_adjusted"].to_numpy(float),
                               api.table["p_adjusted"].to_numpy(float), rtol=1e-12,
                               equal_nan=True)
    html = R._section_html(0, sec)
    assert "p (Bonferroni)" in _headers(html) and "Bonferroni-adjusted p = " in html
    # the page's copied command and script (ui/native_adjust.py: NativeDeltasOptions from
    # the Result's settings, analysis.reproduce.api_view)
    view = deltas_view(api.settings)
    cli = cli_command(view.command, BBQ, BBQ_DESIGN, view.options)
    assert cli.startswith("python -m analysis native-scores ") and "--by input_format" in cli
    assert "--native-adjust bonferroni" in cli and "--native-resamples 100" in cli
    assert main(shlex.split(cli)[3:]) == 0  # the copied command runs
    namespace: dict = {}
    exec(api_snippet(view.function, BBQ, BBQ_DESIGN, view.call), namespace)  # noqa: S102
    copied = namespace["result"]  # the same options (NativeDeltasOptions): the same numbers
    assert copied.settings["adjust"] == "bonferroni"
    pd.testing.assert_frame_equal(copied.table, api.table)


def test_native_delta_bad_adjust_is_one_typed_error(bbq, capsys):
    from analysis.cli import main

    frame, design = bbq
    # the options' message (NativeDeltasOptions: the choices, the default first)
    with pytest.raises(OptionError, match=re.escape(
            "adjust must be one of 'holm', 'bh', 'by', 'bonferroni', 'hommel', not 'Holm'.")):
        bw.native_deltas(frame, design, adjust="Holm", **DELTAS)
    capsys.readouterr()
    assert main(["native-scores", BBQ, "--design", BBQ_DESIGN, "--by", "input_format",
                 "--native-adjust", "Holm"]) == 2
    assert "--native-adjust: invalid choice: 'Holm' (choose from 'holm', 'bh', 'by', " \
           "'bonferroni', 'hommel')" in capsys.readouterr().err
