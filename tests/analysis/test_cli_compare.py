"""``python -m analysis compare``: JSON shape and numbers on the BBQ sample, figures, exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest
from statsmodels.stats.contingency_tables import mcnemar

from analysis.cli import main
from tests.analysis.cli_helpers import run_json, write_csv
from tests.app.apptools import ROOT

BBQ = ROOT / "sample_data" / "bbq_unifiedqa.csv.gz"
BBQ_DESIGN = ROOT / "sample_data" / "bbq_unifiedqa.design.yaml"


@pytest.fixture(scope="module")
def bbq_payload():
    import io
    import json
    from contextlib import redirect_stdout

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["compare", str(BBQ), "--design", str(BBQ_DESIGN), "--by", "input_format",
                     "--reference", "race", "--factors", "category,context_condition",
                     "--level", "2", "--n-boot", "200", "--no-cluster", "--json"]) == 0
    return json.loads(out.getvalue())


def test_json_shape_on_bbq(bbq_payload):
    p = bbq_payload
    assert set(p) == {"overall", "subgroups", "pairing", "notes", "settings"}
    assert p["pairing"]["unit"] == ["example_id"] and p["pairing"]["outcome"] == "binary"
    assert [(r["model_a"], r["model_b"]) for r in p["overall"]] == [("race", "arc"),
                                                                    ("race", "qonly")]
    for r in p["overall"]:
        table = [[r["both_deviate"], r["only_a"]], [r["only_b"], r["neither_deviates"]]]
        ref = mcnemar(table, exact=False)
        assert r["test"] == "mcnemar_chi2" and r["p_value"] == pytest.approx(ref.pvalue)
        assert r["ci_low"] < r["difference"] < r["ci_high"]
    # 6 categories + 2 contexts + 12 pairs, for each of the two pairs
    assert len(p["subgroups"]) == 2 * 20
    first = p["subgroups"][0]
    assert first["category"] == "Age" and first["context_condition"] is None
    assert {"difference", "ci_low", "ci_high", "p_adjusted", "ld_difference", "ld_ci_low",
            "verdicts_differ", "differs"} <= set(first)
    s = p["settings"]
    assert (s["by"], s["reference"], s["level"], s["adjust"], s["resampled"]) == (
        "input_format", "race", 2, "holm", "prompt units")
    assert any("went from biased to not biased" in n for n in p["notes"])


def test_figures_written(tmp_path):
    html = tmp_path / "dumbbell.html"
    sun = tmp_path / "sunburst.html"
    base = ["compare", str(BBQ), "--design", str(BBQ_DESIGN), "--by", "input_format",
            "--factors", "category", "--n-boot", "50"]
    assert main([*base, "--figure", str(html), "--pair", "race,arc"]) == 0
    text = html.read_text()
    assert "arc vs race" in text and "category = Age" in text
    assert main([*base, "--figure", str(sun), "--figure-kind", "sunburst"]) == 0
    assert "LD difference" in sun.read_text()


def test_score_and_bad_pair(tmp_path, capsys):
    rows = [{"pid": i, "model": m,
             "score": i * 0.1 + (0.5 + (i % 4) * 0.05 if m == "b" else 0) + (i % 3) * 0.2}
            for i in range(12) for m in ("a", "b")]
    path = write_csv(tmp_path, rows)
    out = run_json(capsys, "compare", path, "--by", "model", "--score", "score",
                   "--unit", "pid")
    r = out["overall"][0]
    assert r["test"] == "paired_t" and r["difference"] == pytest.approx(0.575)
    assert out["pairing"]["unit_source"] == "given"
    assert main(["compare", str(path), "--by", "model", "--score", "score", "--unit", "pid",
                 "--reference", "c"]) == 2
    assert "The reference 'c' is not among the values of 'model'" in capsys.readouterr().err
    duck = run_json(capsys, "compare", path, "--by", "model", "--score", "score",
                    "--unit", "pid", "--engine", "duckdb")  # the rows, read by DuckDB
    assert duck["overall"] == out["overall"] and duck["pairing"]["unit"] == ["pid"]


def test_exit_2_in_a_real_process(tmp_path):
    path = write_csv(tmp_path, [{"item_id": 1, "model": "a", "biased": 1},
                                {"item_id": 2, "model": "b", "biased": 0}])
    run = subprocess.run([sys.executable, "-m", "analysis", "compare", str(path), "--by",
                          "model", "--outcome", "biased"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, env={"PYTHONPATH": str(ROOT),
                                                     "PATH": "/usr/bin:/bin"})
    assert run.returncode == 2 and "share no prompt" in run.stderr
    assert "Traceback" not in run.stderr
