"""The app server the real-browser tests share (one per test session, see browsertools)."""

from __future__ import annotations

import os

import pytest

# An AppTest of ``pages/<page>.py`` puts ``pages/`` first on sys.path (Streamlit runs a
# script with its folder on the path), where ``pages/judges.py`` would shadow the
# ``judges`` package for a ui module that imports it lazily; the real app runs app.py
# from the project root. Import the package first so that it is the one in sys.modules.
import judges  # noqa: F401,E402

#: The app's tests expect a small table's suggested design on the run that loaded it: the
#: background inference (ui/pending_design.py) is waited for as long as it takes, except
#: in the tests of the "still working" path, which set the wait to 0 themselves.
os.environ.setdefault("BIAS_WORKBENCH_INFERENCE_WAIT", "300")


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """URL of ``streamlit run app.py`` on a free loopback port, with its own state folder;
    stopped by PID after the last test that used it."""
    from tests.app.browsertools import free_port, running_app

    state = str(tmp_path_factory.mktemp("sessions"))
    with running_app(free_port(), BIAS_WORKBENCH_STATE_DIR=state) as url:
        yield url
