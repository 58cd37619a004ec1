"""The commands are views of :mod:`analysis.api` (issue 37): each command's JSON is the
API's Result, the new API surface gives hand-checked numbers, and the same bad input
gives the same message through the API and the CLI."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import api as bw
from analysis.cli import main, write_json
from analysis.design import Design, Factor, Outcome
from analysis.errors import AnalysisError
from tests.analysis.cli_helpers import run_json, write_csv

# a: x, y, z (z seen only under model B); b: p, q; model: A, B; 2 rows per prompt of A.
ROWS = pd.DataFrame({
    "a": ["x", "x", "y", "y", "x", "y", "z", "z"],
    "b": ["p", "q", "p", "q", "p", "p", "p", "q"],
    "model": ["A", "A", "A", "A", "B", "B", "B", "B"],
    "correct": [1, 0, 1, 1, 0, 1, 1, 0],
})
DESIGN = Design(factors=(Factor("a", "domain", ("x", "y", "z"), "x"),
                         Factor("b", "prompt", ("p", "q"), "p"),
                         Factor("model", "model", ("A", "B"), "A")),
                outcome=Outcome("correct", "binary"))


@pytest.fixture
def files(tmp_path):
    path = write_csv(tmp_path, ROWS)
    DESIGN.save(tmp_path / "design.yaml")
    return path, tmp_path / "design.yaml"


def _records(obj) -> list[dict]:  # noqa: ANN001
    """``obj`` as the CLI writes it in its JSON (:func:`analysis.cli.write_json`)."""
    stream = io.StringIO()
    write_json(obj, stream)
    return json.loads(stream.getvalue())


def test_coverage_json_is_the_api_tables(files, capsys):
    """Per-factor rows and Gini, model coverage and its reading: the command's JSON is
    bw.coverage's tables and meta; the numbers are counted by hand."""
    path, design = files
    out = run_json(capsys, "coverage", path, "--design", design, "--factors", "a,b")
    got = bw.coverage(path, design, factors=["a", "b"])
    assert out["per_factor"] == _records(got.tables["per_factor"])
    assert out["model_coverage"] == _records(got.tables["models"])
    assert out["model_reading"] == got.meta["model_reading"]
    assert out["per_factor_gini"] == got.meta["per_factor_gini"] == {
        r["factors"]: r["gini_index"] for r in out["per_factor"]}
    # every value of a (x, y, z) holds 2 prompts, of b (p, q) 3: perfectly even
    assert out["per_factor_gini"] == pytest.approx({"a": 0.0, "b": 0.0}, abs=1e-12)
    # A answered 4 of the 6 a x b prompts, B 3 (x.p, y.p, z.p, z.q: 4)
    models = {r["model"]: r for r in out["model_coverage"]}
    assert models["A"]["n_observed_cells"] == 4 and models["B"]["n_observed_cells"] == 4
    assert models["A"]["coverage_percentage"] == pytest.approx(4 / 6)
    # the heatmap's counts: every declared a x b combination; one prompt each (the
    # prompt is the a x b combination), or the rows with count=responses
    assert list(got.tables["pairs"]["n"]) == [1, 1, 1, 1, 1, 1]
    pairs = bw.coverage(path, design, factors=["a", "b"], count="responses").tables["pairs"]
    counted = ROWS.groupby(["a", "b"]).size()
    assert len(pairs) == 6 and pairs["n"].sum() == len(ROWS)
    for r in pairs.itertuples():
        assert r.n == counted.get((r.a, r.b), 0)


def test_model_coverage_leaves_the_excluded_values_out_of_its_grid(files, capsys):
    """--exclude a=z takes z out of the grid: model A, which answered every prompt left,
    covers 4 of 4 (it read 4 of 6 before, z counted as missing)."""
    path, design = files
    out = run_json(capsys, "coverage", path, "--design", design, "--factors", "a,b",
                   "--exclude", "a=z")
    models = {r["model"]: r for r in out["model_coverage"]}
    assert models["A"]["coverage_percentage"] == 1.0
    assert models["B"]["coverage_percentage"] == pytest.approx(2 / 4)  # x.p, y.p
    assert out["coverage_percentage"] == 1.0
    got = bw.coverage(path, design, factors=["a", "b"], exclude={"a": ["z"]})
    assert out["model_coverage"] == _records(got.tables["models"])


def test_fractional_factorial_and_its_refusal(capsys):
    """plan --runs is bw.fractional_factorial: a 2^(4-1) half fraction (8 runs, every
    factor balanced); the same refusal through both."""
    argv = ["plan", "--new", "a=x,y", "--new", "b=x,y", "--new", "c=x,y", "--new", "d=p,q",
            "--runs", "8"]
    out = run_json(capsys, *argv)
    got = bw.fractional_factorial(runs=8, factors={"a": ["x", "y"], "b": ["x", "y"],
                                                   "c": ["x", "y"], "d": ["p", "q"]})
    assert out["runs"] == _records(got.table) and out["note"] == got.meta["note"] == ""
    assert out["resolution"] == got.raw.resolution == 4
    assert out["generators"] == {"d": "a*b*c"}  # the half fraction I = abcd
    assert len(got.table) == 8
    assert all((got.table[f].value_counts() == 4).all() for f in got.table.columns)
    uneven = {"a": ["x", "y"], "b": ["x", "y", "z"]}
    with pytest.raises(AnalysisError) as api_error:
        bw.fractional_factorial(runs=4, factors=uneven)
    assert main(["plan", "--new", "a=x,y", "--new", "b=x,y,z", "--runs", "4"]) == 2
    assert str(api_error.value) in capsys.readouterr().err


def test_nestings_and_power(tmp_path, capsys):
    """describe's nestings are bw.nesting (t fixes g: hand-made); power is bw.power."""
    rows = pd.DataFrame({"t": ["t1", "t1", "t2", "t2", "t3", "t3"],
                         "g": ["f", "f", "m", "m", "f", "f"], "y": [0, 1, 0, 1, 1, 0]})
    path = write_csv(tmp_path, rows)
    out = run_json(capsys, "describe", path)
    got = bw.nesting(rows, out["suggested_design"], applied=True)
    assert [m["message"] for m in out["nestings"]] == got.meta["messages"]
    assert any(r["determinant"] == "t" and r["dependent"] == "g" and r["kind"] == "nested"
               for r in got.table.to_dict(orient="records"))
    power = run_json(capsys, "power", "--rate", "0.3", "--ld", "0.4", "--share", "0.1")
    assert power == _records(bw.power(rate=0.3, ld=0.4, share=0.1).raw)


def test_group_means_are_over_the_rows_analysed(tmp_path, capsys):
    """A continuous outcome: the command's group means are bw.subgroups'
    tables["group_means"], over the rows left by --exclude (Welch, as scipy)."""
    rng = np.random.default_rng(3)
    rows = pd.DataFrame({"m": np.repeat(["a", "b"], 40), "k": np.tile(["u", "v"], 40),
                         "s": rng.normal(size=80).round(3)})
    rows.loc[rows["k"] == "v", "s"] += 5  # excluded: would move both means
    path = write_csv(tmp_path, rows)
    design = Design(factors=(Factor("m", "model", ("a", "b"), "a"),
                             Factor("k", "prompt", ("u", "v"), "u")),
                    outcome=Outcome("s", "below", threshold=0.0, type="continuous"))
    design.save(tmp_path / "d.yaml")
    out = run_json(capsys, "subgroups", path, "--design", tmp_path / "d.yaml", "--factors",
                   "m", "--exclude", "k=v", "--no-cluster")
    kept = rows[rows["k"] == "u"]
    means = {r["value"]: r for r in out["group_means"]}
    a, b = kept.loc[kept["m"] == "a", "s"], kept.loc[kept["m"] == "b", "s"]
    assert means["a"]["n"] == 20 and means["a"]["mean"] == pytest.approx(a.mean())
    assert means["b"]["difference"] == pytest.approx(b.mean() - a.mean())
    assert means["b"]["p_value"] == pytest.approx(stats.ttest_ind(b, a, equal_var=False).pvalue)
    got = bw.subgroups(path, tmp_path / "d.yaml", factors=["m"], exclude={"k": ["v"]},
                       cluster=None)
    assert out["group_means"] == _records(got.tables["group_means"])


def test_findings_by_hand():
    """bw.findings keeps |LD| >= 0.1, adjusted p <= 0.05, n >= min_n, strongest first."""
    table = pd.DataFrame({"subgroup": ["s1", "s2", "s3", "s4"], "level": 1,
                          "n": [100, 100, 5, 100], "deviations": [60, 20, 4, 52],
                          "deviation_rate": [0.6, 0.2, 0.8, 0.52],
                          "log_disparity": [0.3, -0.9, 1.2, 0.05],
                          "p_adjusted": [0.01, 0.001, 0.01, 0.001],
                          "same_rows_as": ""})
    got = bw.findings(table, min_n=10)
    assert list(got.table["subgroup"]) == ["s2", "s1"]
    assert len(got.meta["readings"]) == 2 and got.meta["readings"][0].startswith("s2")
    assert got.settings["min_abs_ld"] == 0.1 and got.settings["max_p_adjusted"] == 0.05


def test_scores_out_refuses_an_import_without_native_scores():
    with pytest.raises(AnalysisError, match="no native score"):
        bw.scores_out({})
    table = pd.DataFrame({"score": ["s"], "estimate": [0.1]})
    assert bw.scores_out({"native_scores": table}).table.equals(table)
    assert not bw.has_native_score(pd.DataFrame({"a": [1]}))


@pytest.mark.parametrize("factors", ["a,nope", "a,a"])
def test_coverage_refuses_the_same_way_through_api_and_cli(files, capsys, factors):
    path, design = files
    with pytest.raises(AnalysisError) as api_error:
        bw.coverage(path, design, factors=factors.split(","))
    assert main(["coverage", str(path), "--design", str(design), "--factors", factors]) == 2
    assert str(api_error.value).splitlines()[0] in capsys.readouterr().err
