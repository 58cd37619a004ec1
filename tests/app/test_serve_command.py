"""``bias-workbench serve`` (analysis/commands/serve.py): the command it runs, bad settings.
The real start is exercised by tests/app/test_team_server.py."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys

import pytest

from analysis.cli import main
from tests.app.browsertools import ROOT


def test_serve_runs_streamlit_with_production_settings(tmp_path, capsys):
    state = tmp_path / "state"
    assert main(["serve", "--host", "127.0.0.1", "--port", "8600", "--state-dir", str(state),
                 "--data-dir", str(tmp_path), "--judge-endpoints", "http://a:1/v1,http://b:2",
                 "--judge-endpoints", "http://c:3", "--max-upload-mb", "50",
                 "--print-command"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    env = dict(line.split("=", 1) for line in lines[:-1])
    argv = shlex.split(lines[-1])
    assert env == {"BIAS_WORKBENCH_STATE_DIR": str(state.resolve()),
                   "BIAS_WORKBENCH_DATA_DIR": str(tmp_path.resolve()),
                   "BIAS_WORKBENCH_JUDGE_ENDPOINTS": "http://a:1/v1,http://b:2,http://c:3"}
    assert argv[1:4] == ["-m", "streamlit", "run"] and argv[4] == str(ROOT / "app.py")
    for flag in ("--server.headless=true", "--server.fileWatcherType=none",
                 "--client.showErrorDetails=none", "--server.address=127.0.0.1",
                 "--server.port=8600", "--server.maxUploadSize=50",
                 "--server.enableXsrfProtection=true", "--browser.gatherUsageStats=false"):
        assert flag in argv, flag
    assert stat.S_IMODE(state.stat().st_mode) == 0o700


def test_serve_says_it_is_single_user_beyond_loopback_without_sign_in(tmp_path, capsys):
    assert main(["serve", "--host", "0.0.0.0", "--print-command"]) == 0
    assert "no sign-in, so the app is for one person" in capsys.readouterr().err
    secrets = tmp_path / "secrets.toml"
    secrets.write_text("[auth]\n")
    secrets.chmod(0o644)
    assert main(["serve", "--host", "0.0.0.0", "--secrets", str(secrets),
                 "--print-command"]) == 0
    out = capsys.readouterr()
    assert f"--secrets.files={secrets}" in out.out and "chmod 600" in out.err


@pytest.mark.parametrize("args, message", [
    (["--data-dir", "/nonexistent/folder"], "data folder /nonexistent/folder is not a folder"),
    (["--secrets", "/nonexistent/s.toml"], "secrets file /nonexistent/s.toml does not exist"),
    (["--port", "0"], "must be at least 1"),
])
def test_bad_serve_settings_exit_2_with_a_message(args, message, capsys):
    assert main(["serve", *args, "--print-command"]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder of another user needs root")
def test_a_state_folder_of_another_user_is_refused(tmp_path, capsys):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    assert main(["serve", "--state-dir", str(theirs), "--print-command"]) == 2
    assert "belongs to another user (uid 65534)" in capsys.readouterr().err


def test_serve_does_not_import_streamlit():
    code = ("import sys, analysis.commands.serve, analysis.cli; "
            "assert not [m for m in sys.modules if m.startswith('streamlit')]")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_the_laptop_command_listens_on_loopback_only(monkeypatch):
    """Issue 42: bias-workbench-app bound every interface (``*:8501``, a "Network URL");
    it passes --server.address 127.0.0.1 unless an address is given, and the repository's
    config sets the same for ``streamlit run app.py``."""
    import tomllib

    from analysis.commands import serve

    seen = []
    monkeypatch.setattr(serve, "_exec", lambda argv, env: seen.append(argv))
    assert serve.app_main([]) == 0
    assert seen[-1][-2:] == ["--server.address", "127.0.0.1"]
    assert serve.app_main(["--server.address", "0.0.0.0"]) == 0
    assert seen[-1].count("--server.address") == 1 and seen[-1][-1] == "0.0.0.0"
    config = tomllib.loads((serve.APP.parent / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
