"""``serve``: run the app for a team with production settings (``streamlit run``, exec'd).

Streamlit is started as its own program (``python -m streamlit run app.py``, this process
replaced by it so that a service manager's signals reach it); analysis/ never imports
Streamlit. What the flags set: README, *Serving a team*; sessions and sign-in:
``docs/sessions.md``. The app runs from the source tree or from the copy an installed wheel
carries (:func:`analysis.install.app_dir`); without the ``app`` extra both commands exit 2
naming it. :func:`app_main` is the ``bias-workbench-app`` console script (one person, the
project's ``.streamlit/config.toml``).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shlex
import stat
import sys
from pathlib import Path

from analysis.errors import AnalysisError
from analysis.install import MissingExtraError, app_dir, require

__all__ = ["APP", "PRODUCTION", "ServeError", "app_main", "command", "laptop_options", "register",
           "run"]

#: The app's entry point: in the source tree this package runs from, or in the wheel.
APP = app_dir() / "app.py"

#: Streamlit settings of a shared server (``--server.*`` etc. on the command line win over
#: ``.streamlit/config.toml``).
PRODUCTION: dict[str, str] = {
    "server.headless": "true",
    "server.fileWatcherType": "none",  # no watcher: no idle CPU, no reload of edited files
    "server.runOnSave": "false",
    "server.enableXsrfProtection": "true",  # also what tells one browser from another
    "client.showErrorDetails": "none",  # no tracebacks or messages to the browser
    "client.toolbarMode": "viewer",
    "client.showSidebarNavigation": "false",  # never Streamlit's own page list (ui/navigation.py)
    "browser.gatherUsageStats": "false",
    "global.developmentMode": "false",
}


class ServeError(AnalysisError):
    """A ``serve`` setting that cannot work (exit 2 with this message)."""


SUMMARY = ("serve", "run the app for a team (production settings)")


def register(sub: argparse._SubParsersAction) -> None:
    from analysis.cli import int_at_least

    p = sub.add_parser(SUMMARY[0], help=SUMMARY[1],
                       description="Start the Streamlit app with production settings.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; 0.0.0.0: every interface)")
    p.add_argument("--port", type=int_at_least(1), default=8501, help="port (default 8501)")
    p.add_argument("--state-dir", help="sessions folder, created 0700 "
                                       "(BIAS_WORKBENCH_STATE_DIR; default a per-user folder "
                                       "in the temporary directory)")
    p.add_argument("--data-dir", help="folder of large files offered on the Data page "
                                      "(BIAS_WORKBENCH_DATA_DIR)")
    p.add_argument("--judge-endpoints", action="append", metavar="URL[,URL...]",
                   help="judge endpoints visitors may use, repeatable or comma-separated "
                        "(BIAS_WORKBENCH_JUDGE_ENDPOINTS)")
    p.add_argument("--secrets", help="Streamlit secrets file; its [auth] section turns "
                                     "sign-in on (README, Serving a team)")
    p.add_argument("--max-upload-mb", type=int_at_least(1), default=200,
                   help="largest browser upload in MB (default 200)")
    p.add_argument("--print-command", action="store_true",
                   help="print the command and environment instead of starting")
    p.set_defaults(func=run)


def _folder(path: str, what: str, *, create: bool) -> Path:
    folder = Path(path).expanduser().resolve()
    if create:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise ServeError(f"the {what} {folder} cannot be created: {exc.strerror}") from exc
    if not folder.is_dir():
        raise ServeError(f"the {what} {folder} is not a folder")
    if create and folder.stat().st_uid != os.getuid():
        raise ServeError(f"the {what} {folder} belongs to another user (uid "
                         f"{folder.stat().st_uid}); choose a folder of this user")
    return folder


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def command(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The ``streamlit run`` command line and the environment additions of ``args``.

    Raises
    ------
    MissingExtraError
        Streamlit is not installed (the ``app`` extra).
    ServeError
        A setting that cannot work, or the app's files are missing.
    """
    argv = _streamlit_run("bias-workbench serve")
    env: dict[str, str] = {}
    if args.state_dir:
        env["BIAS_WORKBENCH_STATE_DIR"] = str(_folder(args.state_dir, "state folder",
                                                      create=True))
    if args.data_dir:
        env["BIAS_WORKBENCH_DATA_DIR"] = str(_folder(args.data_dir, "data folder",
                                                     create=False))
    if args.judge_endpoints:
        urls = [u.strip() for value in args.judge_endpoints for u in value.split(",")]
        env["BIAS_WORKBENCH_JUDGE_ENDPOINTS"] = ",".join(u for u in urls if u)
    settings = {**PRODUCTION, "server.address": args.host, "server.port": str(args.port),
                "server.maxUploadSize": str(args.max_upload_mb)}
    if args.secrets:
        secrets = Path(args.secrets).expanduser().resolve()
        if not secrets.is_file():
            raise ServeError(f"the secrets file {secrets} does not exist")
        if stat.S_IMODE(secrets.stat().st_mode) & 0o077:
            print(f"note: {secrets} is readable by other users; it holds the sign-in "
                  f"secrets: chmod 600 it", file=sys.stderr)
        settings["secrets.files"] = str(secrets)
    elif not _loopback(args.host):
        print("note: no --secrets with an [auth] section: no sign-in, so the app is for one "
              "person; anyone reaching it can open any session link", file=sys.stderr)
    argv += [f"--{key}={value}" for key, value in settings.items()]
    return argv, env


def _streamlit_run(what: str) -> list[str]:
    """``python -m streamlit run app.py``, once Streamlit and the app's files are there."""
    require("streamlit", "app", what)
    if not APP.is_file():
        raise ServeError(f"the app's entry point {APP} is missing: install the package "
                         "from a wheel or run from the source tree (git clone + pip "
                         "install -e '.[app]')")
    return [sys.executable, "-m", "streamlit", "run", str(APP)]


def run(args: argparse.Namespace) -> None:
    argv, env = command(args)
    if args.print_command:
        for key, value in env.items():
            print(f"{key}={shlex.quote(value)}")
        print(shlex.join(argv))
        return
    _exec(argv, env)


def _exec(argv: list[str], env: dict[str, str]) -> None:
    sys.stdout.flush()
    os.chdir(APP.parent)  # the app's .streamlit/config.toml applies
    os.execve(sys.executable, argv, {**os.environ, **env})


def app_main(argv: list[str] | None = None) -> int:
    """``bias-workbench-app [STREAMLIT OPTIONS]``: the app for one person.

    ``streamlit run`` on the app's files with the project's settings; options such as
    ``--server.port 8502`` or ``--server.headless true`` are passed on to Streamlit.
    Returns 2 with a message when the ``app`` extra is missing (otherwise this process
    becomes Streamlit and does not return).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        command_line = _streamlit_run("bias-workbench-app")
    except (MissingExtraError, ServeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _exec(command_line + laptop_options(argv) + argv, {})
    return 0  # not reached: the process is Streamlit now


def laptop_options(argv: list[str]) -> list[str]:
    """``--server.address 127.0.0.1`` unless ``argv`` names an address: the one-person app
    listens on loopback only (issue 42: it bound every interface and printed a "Network
    URL"); ``bias-workbench serve --host`` is for a team."""
    named = any(a == "--server.address" or a.startswith("--server.address=") for a in argv)
    return [] if named else ["--server.address", "127.0.0.1"]
