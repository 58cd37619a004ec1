"""``python -m analysis coverage``: JSON keys and numbers, the readable table, --figure."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.cli import main
from analysis.design import Design, Factor
from analysis.export import browser_available
from tests.analysis.cli_helpers import run_json as cli_run_json
from tests.analysis.cli_helpers import write_csv
from tests.conftest import SAMPLE_DIR

# a: x, y (z declared in the design file, never seen); b: p, q; model: A, B.
ROWS = pd.DataFrame({
    "a": ["x", "x", "x", "x", "y", "y"] * 2,
    "b": ["p", "p", "p", "q", "p", "p"] * 2,
    "model": ["A"] * 6 + ["B"] * 6,
    "correct": [1, 0, 1, 1, 0, 1] * 2,
})


@pytest.fixture
def results_csv(tmp_path):
    return write_csv(tmp_path, ROWS)


@pytest.fixture
def design_file(tmp_path):
    design = Design(factors=(Factor("a", "domain", ("x", "y", "z"), "x"),
                             Factor("b", "prompt", ("p", "q"), "p"),
                             Factor("model", "model", ("A", "B"), "A")))
    path = tmp_path / "design.yaml"
    design.save(path)
    return path


def run_json(capsys, *argv) -> dict:
    return cli_run_json(capsys, "coverage", *argv)


def test_json_keys_and_numbers(capsys, results_csv):
    out = run_json(capsys, results_csv, "--factors", "a,b", "--count", "responses")
    for key in ("n_cells", "n_observed_cells", "coverage_percentage", "gini_index",
                "per_factor_gini"):
        assert key in out
    # without a design, a's values are the observed x, y: N = 4, M = 3, counts 0,2,4,6
    assert out["factors"] == ["a", "b"]
    assert (out["n_cells"], out["n_observed_cells"], out["n_empty_cells"]) == (4, 3, 1)
    assert out["coverage_percentage"] == pytest.approx(0.75)  # a fraction, not 75
    # 1 - 2/(12*4) * (2*2.5 + 4*1.5 + 6*0.5) = 1 - 28/48
    assert out["gini_index"] == pytest.approx(20 / 48)
    # a: 8 and 4 -> 1 - 2/(12*2)*(4*1.5 + 8*0.5) = 1/6; b: 10 and 2 -> 1/3
    assert out["per_factor_gini"] == pytest.approx({"a": 1 / 6, "b": 1 / 3})
    assert out["empty_cells"] == [{"a": "y", "b": "q"}]
    assert out["thinnest_cells"][0] == {"a": "x", "b": "q", "n": 2}
    assert out["reading"][0].startswith("25.0 % of the 4 combinations of a x b")
    assert out["count"] == "responses"


def test_default_counts_distinct_prompts(capsys, results_csv):
    # the 12 rows hold 3 distinct prompts (a, b): (x,p), (x,q), (y,p), one per cell
    out = run_json(capsys, results_csv, "--factors", "a,b")
    assert out["count"] == "prompts" and out["n_counted"] == 3
    assert out["n_rows"] == 12  # rows are rows (it printed the prompts, issue 42)
    assert out["gini_index"] == pytest.approx(0.25)  # counts 0,1,1,1: GI = 1 - CP
    # a: x 2 prompts, y 1 -> 1 - 2/(3*2)*(1*1.5 + 2*0.5) = 1/6; b: p 2, q 1 -> 1/6
    assert out["per_factor_gini"] == pytest.approx({"a": 1 / 6, "b": 1 / 6})


def test_design_file_counts_unseen_values_and_models(capsys, results_csv, design_file):
    out = run_json(capsys, results_csv, "--design", design_file)
    assert out["factors"] == ["a", "b"]  # domain + prompt factors by default
    assert (out["n_cells"], out["n_observed_cells"]) == (6, 3)
    assert out["coverage_percentage"] == pytest.approx(0.5)
    assert out["per_factor_gini"]["a"] == pytest.approx(8 / 18)
    assert [m["n_missing_prompt_cells"] for m in out["model_coverage"]] == [0, 0]
    assert [m["model"] for m in out["model_coverage"]] == ["A", "B"]
    # model in the grid: each model saw each observed prompt, so CP is unchanged
    with_model = run_json(capsys, results_csv, "--design", design_file, "--factors",
                          "a,b,model")
    assert with_model["n_cells"] == 12
    assert with_model["coverage_percentage"] == pytest.approx(0.5)
    assert with_model["model_coverage"][1]["n_observed_cells"] == 3


def test_where_restricts_the_grid(capsys, results_csv, design_file):
    out = run_json(capsys, results_csv, "--design", design_file, "--where", "a=x")
    assert (out["n_cells"], out["n_observed_cells"]) == (2, 2)
    assert out["n_counted"] == 2  # distinct prompts (x,p) and (x,q) of 8 responses:
    assert out["n_rows"] == 8
    rows = run_json(capsys, results_csv, "--design", design_file, "--where", "a=x",
                    "--count", "responses")
    assert rows["n_rows"] == 8


def test_nestings_are_reported(capsys, tmp_path):
    path = tmp_path / "nested.csv"
    pd.DataFrame({"stigma": ["s1", "s2", "s3", "s1"], "cluster": ["c1", "c1", "c2", "c1"]}
                 ).to_csv(path, index=False)
    out = run_json(capsys, path, "--factors", "stigma,cluster")
    assert len(out["nestings"]) == 1
    assert out["nestings"][0].startswith("cluster is nested in stigma")


def test_readable_table_and_out_file(capsys, results_csv, tmp_path):
    out_csv = tmp_path / "summary.csv"
    assert main(["coverage", str(results_csv), "--factors", "a,b", "--out", str(out_csv),
                 "--limit", "1"]) == 0
    text = capsys.readouterr().out
    assert ("Coverage 75.00 % (fraction 0.75), Gini index 0.2500 (cells count distinct "
            "prompts)") in text
    assert "First 1 empty cells:" in text and "1 thinnest cells:" in text
    written = pd.read_csv(out_csv)
    assert written["scope"].tolist() == ["joint", "marginal", "marginal"]
    assert written["coverage_percentage"].tolist() == pytest.approx([0.75, 1.0, 1.0])


def test_errors_exit_2(capsys, results_csv):
    assert main(["coverage", str(results_csv), "--factors", "a,nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["coverage", str(results_csv), "--factors", "a", "--limit", "-1"]) == 2


def test_html_figure_heatmap_or_bar(capsys, results_csv, tmp_path):
    heat = tmp_path / "heat.html"
    run_json(capsys, results_csv, "--factors", "a,b", "--figure", heat)
    html = heat.read_text(encoding="utf-8")
    assert "plotly" in html and '"type":"heatmap"' in html and "Rows per a x b" in html
    bar = tmp_path / "bar.html"
    run_json(capsys, results_csv, "--factors", "b", "--figure", bar)
    assert '"type":"bar"' in bar.read_text(encoding="utf-8")


@pytest.mark.browser
@pytest.mark.skipif(not browser_available(), reason="PNG export needs chromium for kaleido")
def test_png_figure(capsys, results_csv, tmp_path):
    png = tmp_path / "heat.png"
    run_json(capsys, results_csv, "--factors", "a,b", "--figure", png)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_bundled_ssqa_design(capsys):
    out = run_json(capsys, SAMPLE_DIR / "ssqa_design.csv.gz", "--factors",
                   "template,stigma,prompt_style,cot")
    assert (out["n_cells"], out["n_observed_cells"]) == (27824, 20720)
    assert out["gini_index"] == pytest.approx(7104 / 27824)
    assert out["per_factor_gini"]["prompt_style"] == pytest.approx(1 - 31228 / 41440)


def test_exclude_leaves_out_rows_and_values(capsys, results_csv, design_file):
    # a = y excluded: rows a = x only (8), and y leaves the grid (a: x, z; b: p, q)
    out = run_json(capsys, results_csv, "--design", str(design_file), "--factors", "a,b",
                   "--count", "responses", "--exclude", "a=y")
    assert (out["n_cells"], out["n_observed_cells"]) == (4, 2)
    # cells (x,p) 6, (x,q) 2, (z,p) 0, (z,q) 0: GI = 1 - 2/(8*4) * (2*1.5 + 6*0.5)
    assert out["coverage_percentage"] == pytest.approx(0.5)
    assert out["gini_index"] == pytest.approx(1 - 2 / 32 * 6)
    assert {"a": "y", "b": "q"} not in out["empty_cells"]
    # the JSON's settings are bw.coverage's: every option and input used
    assert out["settings"] == {"count": "responses", "limit": 20, "factors": ["a", "b"],
                               "where": {}, "exclude": {"a": ["y"]}}
    # a factor outside the grid: only its rows go (model B: 6 rows left)
    by_model = run_json(capsys, results_csv, "--factors", "a,b", "--count", "responses",
                        "--exclude", "model=B")
    assert by_model["n_rows"] == 6
    assert main(["coverage", str(results_csv), "--factors", "a,b",
                 "--exclude", "a=nope"]) == 2
    assert "nope" in capsys.readouterr().err
