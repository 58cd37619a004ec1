"""One build step beyond ``pyproject.toml``: the app's files go into the wheel.

``app.py``, ``pages/``, ``.streamlit/config.toml`` and ``sample_data/`` (without its build
script) are copied to ``ui/app_files/`` of the wheel (:data:`analysis.install.APP_FILES`),
where :func:`analysis.install.app_dir` finds them, so that an installed package starts the
app (``bias-workbench-app``, ``bias-workbench serve``). An editable install runs from the
source tree and copies nothing. docs/architecture.md, *Packaging*.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: Globs of the app's files, relative to the source tree.
APP_GLOBS = ("app.py", "pages/*.py", ".streamlit/config.toml", "sample_data/*.gz",
             "sample_data/*.csv", "sample_data/*.yaml", "sample_data/README.md",
             "sample_data/LICENSE-*")
TARGET = Path("ui", "app_files")


class BuildPyWithApp(build_py):
    """``build_py`` that also copies the app's files (see the module docstring)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        files = sorted({f for pattern in APP_GLOBS for f in ROOT.glob(pattern)})
        if not any(f.name == "app.py" for f in files):
            raise SystemExit(f"app.py is missing from {ROOT}: the wheel would not start the app")
        for source in files:
            target = Path(self.build_lib, TARGET, source.relative_to(ROOT))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


setup(cmdclass={"build_py": BuildPyWithApp})
