"""``python -m analysis describe`` and ``cells``, the shared options, and error exits."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from analysis.cli import main
from analysis.design import Design, Factor, Outcome
from tests.analysis.cli_helpers import write_csv
from tests.conftest import REPO, SSQA_FACTORS, SSQA_TABLE, needs_shared


@pytest.fixture
def results_csv(tmp_path):
    rng = np.random.default_rng(7)
    n = 600
    frame = pd.DataFrame({
        "model": rng.choice(["m1", "m2"], n),
        "stigma": rng.choice(["no stigma", "autism", "obesity"], n),
        "cot": rng.choice(["no", "yes"], n),
        "answer": rng.choice(["Yes", "no", "can't tell"], n),
        "biased_answer": rng.choice(["yes", "no"], n),
        "score": rng.normal(3, 1, n).round(2),
        "biased": rng.integers(0, 2, n),
    })
    frame.loc[::17, "score"] = np.nan
    return write_csv(tmp_path, frame), frame


def _json(capsys, argv: list[str]):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _expected_cells(frame: pd.DataFrame, factors: list[str], dev: pd.Series) -> dict:
    rows = frame.assign(_dev=dev).dropna(subset=["_dev"])
    grouped = rows.groupby(factors)["_dev"]
    return {key if isinstance(key, tuple) else (key,): (int(size), int(total))
            for (key, size), total in zip(grouped.size().items(), grouped.sum(), strict=True)}


def _got_cells(records: list[dict], factors: list[str]) -> dict:
    out = {}
    for r in records:
        out[tuple(r[f] for f in factors)] = (r["n"], r["deviations"])
        assert r["deviation_rate"] == pytest.approx(r["deviations"] / r["n"])
    return out


def test_cells_binary(capsys, results_csv):
    path, frame = results_csv
    records = _json(capsys, ["cells", str(path), "--factors", "model,stigma",
                             "--outcome", "biased", "--json"])
    assert _got_cells(records, ["model", "stigma"]) == _expected_cells(
        frame, ["model", "stigma"], frame["biased"].astype(float))
    assert [r["stigma"] for r in records[:3]] == ["autism", "no stigma", "obesity"]


@pytest.mark.parametrize("options,expected", [
    (["--outcome", "answer", "--deviation-values", "Yes, can't tell"],
     lambda f: f["answer"].isin(["Yes", "can't tell"]).astype(float)),
    (["--outcome", "answer", "--deviation-equals", "biased_answer"],
     lambda f: (f["answer"].str.lower() == f["biased_answer"]).astype(float)),
    (["--outcome", "score", "--deviation-below", "2.5"],
     lambda f: (f["score"] < 2.5).astype(float).where(f["score"].notna())),
    (["--outcome", "score", "--deviation-above", "3.5"],
     lambda f: (f["score"] > 3.5).astype(float).where(f["score"].notna())),
], ids=["values", "equals", "below", "above"])
def test_cells_mappings(capsys, results_csv, options, expected):
    path, frame = results_csv
    records = _json(capsys, ["cells", str(path), "--factors", "cot,stigma", *options, "--json"])
    assert _got_cells(records, ["cot", "stigma"]) == _expected_cells(
        frame, ["cot", "stigma"], expected(frame))


def test_cells_where_reference_out_and_text(capsys, results_csv, tmp_path):
    path, frame = results_csv
    out = tmp_path / "cells.csv"
    records = _json(capsys, ["cells", str(path), "--factors", "stigma", "--outcome", "biased",
                             "--where", "model=m2", "--where", "cot=no,yes",
                             "--reference", "stigma=autism", "--out", str(out), "--json"])
    subset = frame[frame["model"] == "m2"]
    assert _got_cells(records, ["stigma"]) == _expected_cells(subset, ["stigma"],
                                                               subset["biased"].astype(float))
    written = pd.read_csv(out)
    assert written["n"].tolist() == [r["n"] for r in records]
    assert main(["cells", str(path), "--factors", "model"]) == 0  # no outcome: counts only
    text = capsys.readouterr().out
    assert text.split() == ["model", "n", "m1", str((frame["model"] == "m1").sum()),
                            "m2", str((frame["model"] == "m2").sum())]


def test_cells_with_a_design_file(capsys, results_csv, tmp_path):
    path, frame = results_csv
    design = Design(factors=(Factor("stigma", "domain", ("no stigma", "autism", "obesity",
                                                         "unseen"), "no stigma"),
                             Factor("model", "model", ("m1", "m2"), "m1")),
                    outcome=Outcome("answer", "values", values=("no",)))
    design.save(tmp_path / "design.yaml")
    records = _json(capsys, ["cells", str(path), "--design", str(tmp_path / "design.yaml"),
                             "--json"])
    assert [r["stigma"] for r in records[::2]] == ["no stigma", "autism", "obesity"]  # declared
    assert _got_cells(records, ["stigma", "model"]) == _expected_cells(
        frame, ["stigma", "model"], (frame["answer"] == "no").astype(float))
    # --factors picks a subset of the design; the options override its outcome
    records = _json(capsys, ["cells", str(path), "--design", str(tmp_path / "design.yaml"),
                             "--factors", "model", "--outcome", "biased", "--json"])
    assert _got_cells(records, ["model"]) == _expected_cells(frame, ["model"],
                                                             frame["biased"].astype(float))


@pytest.mark.parametrize("argv,message", [
    (["--factors", "model,nope", "--outcome", "biased"], "There is no column 'nope'"),
    (["--factors", "model", "--outcome", "nope"], "Outcome column 'nope' is not in the table"),
    (["--factors", "model", "--deviation-values", "x"], "--deviation-values needs --outcome"),
    (["--factors", "model", "--outcome", "answer"], "should be 0/1 or true/false"),
    (["--factors", "model", "--where", "model=m9"], "Filter model = m9: no row has that value"),
    (["--factors", "model", "--reference", "model"], "--reference takes FACTOR=VALUE"),
    (["--factors", "model", "--reference", "model=m9"], "reference 'm9' is not one of"),
    (["--factors", "model", "--outcome", "score", "--deviation-values", "x"],
     "none of the deviating values (x) occurs"),
])
def test_cells_errors_exit_2(capsys, results_csv, argv, message):
    path, _ = results_csv
    assert main(["cells", str(path), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: ")
    assert message in captured.err


def test_unreadable_file_exits_2(capsys, tmp_path):
    (tmp_path / "bad.csv").write_bytes(b"a,a\n1,2\n")
    assert main(["describe", str(tmp_path / "bad.csv")]) == 2
    assert "duplicate column names 'a'" in capsys.readouterr().err
    assert main(["cells", str(tmp_path / "missing.csv"), "--factors", "a"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_usage_errors_are_argparse_exits(capsys, results_csv):
    path, _ = results_csv
    # argparse's exit code is returned, not raised: main() always returns the code
    assert main(["cells", str(path), "--factors", "model", "--outcome", "score",
                 "--deviation-below", "1", "--deviation-above", "2"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert main([]) == 2


def test_describe_small_file(capsys, results_csv):
    path, frame = results_csv
    payload = _json(capsys, ["describe", str(path), "--json"])
    assert payload["file"] == "results.csv"
    assert payload["n_rows"] == len(frame)
    roles = {c["column"]: c["suggested_role"] for c in payload["columns"]}
    assert roles == {"model": "factor", "stigma": "factor", "cot": "factor", "answer": "factor",
                     "biased_answer": "factor", "score": "numeric", "biased": "outcome"}
    score = next(c for c in payload["columns"] if c["column"] == "score")
    assert score["n_missing"] == int(frame["score"].isna().sum())
    design = Design.from_dict(payload["suggested_design"])
    # `answer` is what the model said: a response, never a factor (issue 42.4)
    assert design.names == ["model", "stigma", "cot", "biased_answer"]
    assert design.outcome == Outcome("biased")
    assert payload["nestings"] == []
    assert main(["describe", str(path)]) == 0
    text = capsys.readouterr().out
    assert f"results.csv: {len(frame):,} rows, 7 columns" in text
    assert "Suggested outcome: biased = 1" in text
    assert "No nested factors among them." in text


@needs_shared
def test_describe_ssqa(capsys):
    payload = _json(capsys, ["describe", str(SSQA_TABLE), "--json"])
    assert payload["n_rows"] == 20720
    design = Design.from_dict(payload["suggested_design"])
    assert design.names == [f for f in SSQA_FACTORS if f != "template"]
    assert design.cluster == "template"  # nestings are read over the factors and the cluster
    assert design.factor("prompt_style").reference == "base"
    found = {(r["determinant"], r["dependent"], r["kind"]) for r in payload["nestings"]}
    assert found == {("template", "gender", "nested outside reference"),
                     ("template", "gender_careful", "nested outside reference"),
                     ("template", "biased_answer", "nested"),
                     ("stigma", "pachankis_cluster", "nested")}
    assert all(r["message"].startswith(f"{r['dependent']} is nested in {r['determinant']}")
               for r in payload["nestings"])


@needs_shared
def test_cells_ssqa_subprocess(ssqa_table):
    """One real process: the module entry point, JSON on stdout, exit codes."""
    cmd = [sys.executable, "-m", "analysis", "cells", str(SSQA_TABLE), "--factors",
           "cot,prompt_style", "--outcome", "biased_answer", "--deviation-values", "yes",
           "--json"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    dev = (ssqa_table["biased_answer"] == "yes").astype(float)
    assert _got_cells(records, ["cot", "prompt_style"]) == _expected_cells(
        ssqa_table, ["cot", "prompt_style"], dev)
    assert sum(r["n"] for r in records) == 20720

    bad = subprocess.run(cmd[:6] + ["cot,nope"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: There is no column 'nope' in the results table."
