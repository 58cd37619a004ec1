"""'Copy as CLI / Copy as Python': the generated command gives the page's numbers."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import numpy as np
import pytest

from analysis.reproduce import cli_command
from tests.app.apptools import ROOT, metric_values, page_test, sample_with_design


def _run(at):
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _blocks(at) -> tuple[str, str]:
    (cli,) = [c.value for c in at.code if c.language == "bash"]
    (code,) = [c.value for c in at.code if c.language == "python"]
    return cli, code


def _cli(command: str) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "analysis"]
    return subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)


def test_cli_command_quotes_and_repeats():
    cmd = cli_command("importance", "my file.csv", "design.yaml",
                      [("factors", ["a", "b"]), ("reference", "a=x y"), ("reference", "b=z"),
                       ("no-lr", True), ("skip", None), ("off", False), ("alpha", 0.05)],
                      where={"model": ["m1", "m2"], "cot": []})
    assert cmd == ("python -m analysis importance 'my file.csv' --design design.yaml "
                   "--factors a,b --reference 'a=x y' --reference b=z --no-lr --alpha 0.05 "
                   "--where model=m1,m2 --json")


def test_subgroups_cli_and_python_give_the_page_numbers():
    frame, design = sample_with_design("bbq_unifiedqa.csv.gz")
    at = page_test("subgroups.py", frame=frame, design=design, name="bbq_unifiedqa.csv.gz")
    at.session_state["subgroups_factors"] = ["category", "context_condition"]
    _run(at)
    at.multiselect(key="subgroups_where_input_format").select("arc")
    at.radio(key="subgroups_level").set_value(2)
    _run(at)
    cli, code = _blocks(at)
    assert cli == ("python -m analysis subgroups sample_data/bbq_unifiedqa.csv.gz --design "
                   "sample_data/bbq_unifiedqa.design.yaml --factors category,context_condition "
                   "--level 2 --power 0.8 --effect 0.3 "
                   "--where input_format=arc --json")  # the page's power columns
    page = at.dataframe[0].value
    done = _cli(cli)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["subgroups"]
    assert len(rows) == len(page) == int(metric_values(at)["Subgroups"])
    page_ld = sorted(page["log_disparity"].dropna().round(9))
    cli_ld = sorted(round(r["log_disparity"], 9) for r in rows if r["log_disparity"] is not None)
    assert page_ld == cli_ld
    assert sum(r["n"] for r in rows) == page["n"].sum()
    script = code.rstrip() + "\nprint(table['log_disparity'].abs().sum())\n"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.strip().splitlines()[-1]) == pytest.approx(
        page["log_disparity"].abs().sum(), rel=1e-12)


def test_coverage_cli_gives_the_page_numbers_with_a_downloaded_design():
    frame, design = sample_with_design("ssqa_simulated.csv.gz")
    design = design.with_reference("cot", design.factor("cot").values[-1])  # not the curated
    at = page_test("coverage.py", frame=frame, design=design, name="ssqa_simulated.csv.gz")
    at.session_state["coverage_factors"] = ["template", "gender", "cot"]
    _run(at)
    at.multiselect(key="coverage_where_model").select("sim-model-A")
    _run(at)
    cli, _ = _blocks(at)
    assert "--design design.yaml" in cli and "--where model=sim-model-A" in cli
    (button,) = [b for b in at.get("download_button") if b.proto.label == "design.yaml"]
    assert button
    tmp = ROOT / "design.yaml"
    assert not tmp.exists()
    try:
        tmp.write_text(design.to_yaml())
        done = _cli(cli)
    finally:
        tmp.unlink()
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    shown = metric_values(at)
    assert shown["Combinations"] == f"{payload['n_cells']:,}"
    assert shown["Empty combinations"] == f"{payload['n_empty_cells']:,}"
    assert shown["Gini index"] == f"{payload['gini_index']:.3f}"
    assert np.isclose(float(shown["Coverage"].split()[0]), 100 * payload["coverage_percentage"],
                      atol=0.05)


@pytest.mark.parametrize("page", ["ecdf.py", "importance.py", "bias_index.py", "cohorts.py",
                                  "disparity.py"])
def test_every_analysis_page_offers_a_command_and_a_script_that_run(page):
    name = "ssqa_simulated.csv.gz" if page != "disparity.py" else "bbq_unifiedqa.csv.gz"
    frame, design = sample_with_design(name)
    at = page_test(page, frame=frame, design=design, name=name)
    if page == "importance.py":  # the default set is refused as aliased (base prompts)
        at.session_state["importance_factors"] = ["model", "cot"]
    cli, code = _blocks(_run(at))
    assert cli.startswith(f"python -m analysis {page.split('.')[0].replace('bias_', '')} "
                          f"sample_data/{name} --design sample_data/")
    done = _cli(cli)
    assert done.returncode == 0, (cli, done.stderr)
    json.loads(done.stdout)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.strip(), (code, done.stderr[-2000:])
