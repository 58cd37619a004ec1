"""The app server the real-browser tests share (one per test session, see browsertools)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """URL of ``streamlit run app.py`` on a free loopback port, with its own state folder;
    stopped by PID after the last test that used it."""
    from tests.app.browsertools import free_port, running_app

    state = str(tmp_path_factory.mktemp("sessions"))
    with running_app(free_port(), BIAS_WORKBENCH_STATE_DIR=state) as url:
        yield url
