"""The README's CI recipe, run as written: its ``bias-workbench`` command lines are read
out of the README's "CI recipe" section (the GitHub Actions ``run:`` steps and the GitLab
``script:`` lines), so the recipe and this test cannot drift apart. Each line runs in a
folder staged like the CI job's workspace (``lm-eval-output/`` from the evaluation job,
``bias/design.yaml`` and ``bias/criteria.yaml`` from the repository), through
``analysis.cli.main`` (what the ``bias-workbench`` console script calls)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from analysis.cli import main
from tests.analysis.importers.harness_runs import LM_EVAL_BIAS_FIXTURE

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"


def _recipe_blocks() -> list[dict]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## CI recipe: a bias gate", 1)[1].split("\n## ", 1)[0]
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", section, re.S)]


def _commands(block: dict) -> list[str]:
    if "jobs" in block:  # GitHub Actions
        lines = [s["run"] for job in block["jobs"].values() for s in job["steps"] if "run" in s]
    else:  # GitLab
        lines = [line for job in block.values() for line in job["script"]]
    return [line for line in lines if line.startswith("bias-workbench ")]


RECIPES = _recipe_blocks()


def test_the_readme_has_both_recipes_with_import_and_check():
    assert len(RECIPES) == 2
    for block in RECIPES:
        cmds = _commands(block)
        assert [c.split()[1] for c in cmds] == ["import", "check"]
        assert "--junit" in cmds[1] and "--markdown" in cmds[1]
    gitlab = RECIPES[1]["bias-gate"]
    assert gitlab["artifacts"]["reports"]["junit"] in _commands(RECIPES[1])[1]
    assert any(s.get("run") == "pip install bias-workbench"
               for s in RECIPES[0]["jobs"]["bias-gate"]["steps"])


def _run(line: str) -> int:
    argv = shlex.split(line)
    assert argv[0] == "bias-workbench"
    return main(argv[1:])


def _stage(workspace: Path, design: Path | str, criteria: dict | Path) -> None:
    (workspace / "bias").mkdir(parents=True, exist_ok=True)
    shutil.copy(design, workspace / "bias" / "design.yaml")
    target = workspace / "bias" / "criteria.yaml"
    if isinstance(criteria, Path):
        shutil.copy(criteria, target)
    else:
        target.write_text(yaml.safe_dump(criteria, sort_keys=False), encoding="utf-8")


def _outputs(workspace: Path) -> list[str]:
    return sorted(p.name for p in workspace.glob("bias-checks.*"))


@pytest.fixture(scope="module")
def lm_eval_design(tmp_path_factory) -> Path:
    """The design a team would commit: the importer's suggestion for the run."""
    folder = tmp_path_factory.mktemp("design")
    assert main(["import", "lm-eval", str(LM_EVAL_BIAS_FIXTURE), "--out",
                 str(folder / "r.parquet"), "--design-out", str(folder / "design.yaml")]) == 0
    return folder / "design.yaml"


def _crows(threshold: float) -> dict:
    return {"version": 1, "n_resamples": 300, "criteria": [
        {"id": "crows-pct-stereotype", "metric": "pct_stereotype",
         "scope": {"task": "crows_pairs_english"}, "max": threshold},
        {"id": "bbq-s-dis", "metric": "s_DIS", "scope": {"task": "bbq"}, "max": 1.0}]}


# pass / fail / too uncertain / bad criteria file, on the lm-eval fixture (pct_stereotype of
# the 24 CrowS-Pairs pairs is 0.458, its 90 % interval about [0.30, 0.63])
LM_EVAL_CASES = [("pass", _crows(0.8), 0), ("fail", _crows(0.2), 1),
                 ("uncertain", _crows(0.5), 3),
                 ("bad", {"version": 1, "criteria": [{"metric": "pct_stereotype",
                                                      "maxx": 0.5}]}, 2)]


@pytest.mark.parametrize("recipe", [0, 1], ids=["github", "gitlab"])
@pytest.mark.parametrize("case, criteria, code", LM_EVAL_CASES,
                         ids=[c[0] for c in LM_EVAL_CASES])
def test_recipe_on_the_lm_eval_fixture(recipe, case, criteria, code, tmp_path, monkeypatch,
                                       lm_eval_design, capsys):
    shutil.copytree(LM_EVAL_BIAS_FIXTURE, tmp_path / "lm-eval-output")
    _stage(tmp_path, lm_eval_design, criteria)
    monkeypatch.chdir(tmp_path)
    imported, check = _commands(RECIPES[recipe])
    assert _run(imported) == 0
    assert _run(check) == code
    out = capsys.readouterr()
    if code == 2:
        assert "bias/criteria.yaml, line 4: unknown key 'maxx' in criterion 1; did you mean "\
               "'max'?" in out.err
        assert _outputs(tmp_path) == []  # nothing half-written
        return
    assert _outputs(tmp_path) == ["bias-checks.md", "bias-checks.xml"]
    verdict = {0: "PASS", 1: "FAIL", 3: "UNCERTAIN"}[code]
    assert f"## Bias checks: {verdict} (exit {code})" in (tmp_path / "bias-checks.md").read_text()
    import xml.etree.ElementTree as ET

    suite = ET.parse(tmp_path / "bias-checks.xml").getroot()
    assert [c.get("name") for c in suite] == ["crows-pct-stereotype", "bbq-s-dis"]
    assert int(suite.get("failures")) == (0 if code == 0 else 1)


# the bundled samples with the criteria files shipped beside their designs
SAMPLE_CASES = [("bbq_unifiedqa", 1), ("ssqa_simulated", 1), ("ssqa_design", 0)]


@pytest.mark.parametrize("sample, code", SAMPLE_CASES, ids=[c[0] for c in SAMPLE_CASES])
def test_recipe_check_line_on_the_bundled_samples(sample, code, tmp_path, monkeypatch, capsys):
    pd.read_csv(SAMPLES / f"{sample}.csv.gz").to_parquet(tmp_path / "results.parquet")
    _stage(tmp_path, SAMPLES / f"{sample}.design.yaml", SAMPLES / f"{sample}.criteria.yaml")
    monkeypatch.chdir(tmp_path)
    _, check = _commands(RECIPES[0])
    assert check == _commands(RECIPES[1])[1]  # the two recipes gate alike
    assert _run(check) == code
    assert _outputs(tmp_path) == ["bias-checks.md", "bias-checks.xml"]
    capsys.readouterr()
