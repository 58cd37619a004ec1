"""Packaging (issue 28 item 5): a core install without the app or the LLM SDKs, extras that
say themselves when missing, and a wheel that carries and starts the app.

Missing extras are simulated in a fresh process by a meta-path finder that refuses the
package (never by uninstalling). The wheel is built from a copy of the source tree, installed
with ``--no-deps --target`` into a temporary folder and run from there, with the
dependencies of the current environment.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest

from analysis.install import EXTRAS, has_module, install_command
from tests.blocked_imports import BLOCK

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
#: What a core install must not import: the app, the LLM SDKs, image export, torch.
NOT_CORE = ("streamlit", "openai", "anthropic", "aiohttp", "kaleido", "torch")

#: Runs ``module:function(argv)`` in a fresh process with some packages refused, then prints
#: the exit code and the top-level packages loaded (JSON on the last line of stderr).
RUNNER = BLOCK + r"""
import importlib
module, function = sys.argv[2].split(":")
try:
    code = getattr(importlib.import_module(module), function)(sys.argv[3:])
finally:
    sys.stderr.write("\nMODULES " + json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
sys.exit(code)
"""


def run_blocked(block: str, entry: str, *argv: str, cwd: Path = REPO,
                pythonpath: Path = REPO) -> tuple[int, str, set[str]]:
    """Exit code, stderr and top-level modules of ``entry(argv)`` with ``block`` refused."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", RUNNER, block, entry, *argv], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    err, _, modules = done.stderr.rpartition("\nMODULES ")
    return done.returncode, err, set(json.loads(modules))


# --- the metadata ----------------------------------------------------------------------
def _names(requirements: list[str]) -> set[str]:
    return {r.split(";")[0].split("[")[0].split(">")[0].split("<")[0].split("=")[0].strip()
            .lower() for r in requirements}


def test_core_has_no_app_sdk_or_image_export_and_the_extras_have_them():
    core = _names(PROJECT["dependencies"])
    assert core.isdisjoint({"streamlit", "openai", "anthropic", "aiohttp", "kaleido", "torch"})
    assert {"pandas", "scipy", "statsmodels", "plotly", "duckdb", "pyyaml"} <= core
    extras = PROJECT["optional-dependencies"]
    assert {"streamlit", "kaleido"} <= _names(extras["app"] + extras["figures"])
    assert _names(extras["judges"]) == {"openai", "anthropic", "aiohttp"}
    # [all] is every runtime extra; [dev] (the README's test command) pulls [all]
    runtime = sorted(set(extras) - {"all", "dev"})
    assert extras["all"] == [f"bias-workbench[{','.join(runtime)}]"]
    assert "bias-workbench[all]" in extras["dev"]
    assert set(EXTRAS) <= set(extras)  # every extra the code names exists
    assert set(PROJECT["scripts"]) == {"bias-workbench", "bias-judges", "bias-workbench-app"}


def test_import_analysis_and_the_cli_help_import_no_sdk_and_no_streamlit():
    script = ("import json, sys, analysis, analysis.cli, analysis.install, judges, judges.cli\n"
              "code = analysis.cli.main(['--help'])\n"
              "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules})]))")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    code, modules = json.loads(done.stdout.splitlines()[-1])
    assert code == 0 and "analysis" in modules
    assert set(modules).isdisjoint(NOT_CORE), sorted(set(modules) & set(NOT_CORE))


# --- a missing extra says which one ----------------------------------------------------
def test_serve_and_the_app_script_without_streamlit_name_the_app_extra():
    for entry, argv in [("analysis.cli:main", ["serve", "--print-command"]),
                        ("analysis.commands.serve:app_main", [])]:
        code, err, modules = run_blocked("streamlit", entry, *argv)
        assert code == 2, err
        assert f"needs the 'streamlit' package, which is not installed: " \
               f"{install_command('app')}" in err
        assert "pip install 'bias-workbench[app]'" in err and "Traceback" not in err
        assert "streamlit" not in modules


def test_a_judge_without_its_sdk_names_the_judges_extra(tmp_path):
    from judges.fourstage import sample_path

    code, err, modules = run_blocked(
        "openai", "judges.cli:main", "score", str(sample_path()), "--provider", "openai",
        "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--no-cache",
        "--out", str(tmp_path / "judged.csv"))
    assert code == 2, err
    assert "'openai' provider needs the 'openai' package" in err
    assert "pip install 'bias-workbench[judges]'" in err and "Traceback" not in err
    assert not (tmp_path / "judged.csv").exists()


def test_image_export_without_kaleido_names_the_figures_extra(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("model,y\n" + "".join(f"{'ab'[i % 2]},{i % 3 == 0:d}\n" for i in range(40)))
    code, err, _ = run_blocked("kaleido", "analysis.cli:main", "subgroups", str(path),
                               "--factors", "model", "--outcome", "y",
                               "--figure", str(tmp_path / "f.png"))
    assert code == 2, err
    assert "pip install 'bias-workbench[figures]'" in err and "Traceback" not in err
    # HTML needs no kaleido
    code, err, modules = run_blocked("kaleido", "analysis.cli:main", "subgroups", str(path),
                                     "--factors", "model", "--outcome", "y",
                                     "--figure", str(tmp_path / "f.html"))
    assert code == 0, err
    assert (tmp_path / "f.html").stat().st_size > 0 and "kaleido" not in modules


def test_the_pages_disable_image_downloads_without_kaleido(monkeypatch):
    from streamlit.testing.v1 import AppTest

    from analysis import export

    monkeypatch.setattr(export, "has_module", lambda module: module != "kaleido")

    def script():
        import plotly.graph_objects as go

        from ui.widgets import figure_downloads

        figure_downloads(go.Figure(go.Bar(x=[1], y=[2])), "f", key="f")

    at = AppTest.from_function(script).run()
    assert not at.exception
    buttons = {b.proto.label: b.proto for b in at.get("download_button")}
    assert {label for label, b in buttons.items() if b.disabled} == {"PNG", "SVG", "PDF"}
    assert buttons["PNG"].help == export.KALEIDO_HINT
    assert "pip install 'bias-workbench[figures]'" in export.KALEIDO_HINT
    assert [c.value for c in at.caption] == [export.KALEIDO_HINT]


# --- the wheel -------------------------------------------------------------------------
def _source_copy(dest: Path) -> Path:
    """The files a build reads (a copy: no build/ or egg-info in the working tree)."""
    skip = shutil.ignore_patterns(".git", ".venv", "tests", "benchmarks", "docs", "build",
                                  "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache",
                                  "*.judges_cache*")
    shutil.copytree(REPO, dest, ignore=skip)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, list[str], str]:
    """(the --target folder of the installed wheel, the wheel's file names, its
    entry_points.txt)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = _source_copy(tmp / "src")
    # offline with this environment's setuptools; without one, pip fetches it (>= 68)
    offline = ["--no-build-isolation", "--no-index"] if has_module("setuptools") else []
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *offline,
                    "-w", str(tmp / "dist"), str(source)], check=True,
                   capture_output=True, timeout=300)
    wheel, = (tmp / "dist").glob("bias_workbench-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = archive.read(next(n for n in names if n.endswith("entry_points.txt")))
    site = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                    "--target", str(site), str(wheel)], check=True, capture_output=True,
                   timeout=300)
    return site, names, entry_points.decode()


def test_the_wheel_carries_the_app_and_no_tests(installed):
    _, names, entry_points = installed
    app = "ui/app_files/"
    pages = {f"{app}pages/{p.name}" for p in (REPO / "pages").glob("*.py")}
    assert pages and pages <= set(names)
    samples = {f"{app}sample_data/{p.name}" for p in (REPO / "sample_data").iterdir()
               if p.suffix != ".py"}
    assert samples <= set(names) and f"{app}sample_data/LICENSE-BBQ" in names
    assert {f"{app}app.py", f"{app}.streamlit/config.toml", "ui/navigation.py",
            "analysis/install.py", "judges/rubrics/ics.yaml", "judges/prices.yaml"
            } <= set(names), names
    assert {n.split("/")[0] for n in names} == {"analysis", "judges", "ui",
                                                "bias_workbench-0.1.0.dist-info"}
    assert not any(n.endswith(("conftest.py", "build_samples.py")) for n in names)
    for line in ("bias-workbench = analysis.cli:run", "bias-judges = judges.cli:main",
                 "bias-workbench-app = analysis.commands.serve:app_main"):
        assert line in entry_points


def test_the_installed_app_opens_on_the_bundled_sample(installed, tmp_path):
    """AppTest on the installed app.py: the pages, ui/ and the sample come from the wheel."""
    site = installed[0]
    script = (
        "import json, sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        f"at = AppTest.from_file({str(site / 'ui/app_files/app.py')!r}, "
        "default_timeout=180).run()\n"
        "import analysis, ui.active, ui.common\n"
        "print(json.dumps([[str(e.value) for e in at.exception], "
        "at.session_state['results_name'], ui.common.__file__, analysis.__file__, "
        "str(ui.active.SAMPLE_DIR)]))")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr[-3000:]
    errors, sample, ui_file, analysis_file, sample_dir = json.loads(
        done.stdout.splitlines()[-1])
    assert errors == [] and sample == "bbq_unifiedqa.csv.gz"
    for path in (ui_file, analysis_file, sample_dir):
        assert Path(path).is_relative_to(site), path
    assert Path(sample_dir) == site / "ui" / "app_files" / "sample_data"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_console_script_starts_the_installed_app(installed, tmp_path):
    """``bias-workbench-app`` of the installed wheel: Streamlit answers on loopback, run
    from the wheel's app folder (its .streamlit/config.toml applies)."""
    site = installed[0]
    port = _free_port()
    script = site / "bin" / "bias-workbench-app"
    assert script.is_file()
    process = subprocess.Popen(
        [sys.executable, str(script), "--server.headless=true", f"--server.port={port}",
         "--server.address=127.0.0.1"], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(site)})
    try:
        deadline, health = time.monotonic() + 90, ""
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=2) as reply:
                    health = reply.read().decode()
                break
            except OSError:
                time.sleep(0.5)
        assert health == "ok", process.stdout.read() if process.poll() is not None else ""
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
            assert reply.status == 200 and "<div id=\"root\">" in reply.read().decode()
        # the exec'd Streamlit runs in the wheel's app folder, with its config
        cwd = Path(f"/proc/{process.pid}/cwd").resolve()
        assert cwd == site / "ui" / "app_files"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if process.stdout:
            process.stdout.close()
